//go:build !unix

package mmvfile

const openFlags = 0
