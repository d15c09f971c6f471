//go:build unix

package mmvfile

import "syscall"

// openFlags open a file to read without blocking: a FIFO with no writer
// would block the open until one came.
const openFlags = syscall.O_NONBLOCK
