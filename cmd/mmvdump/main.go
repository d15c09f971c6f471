// Command mmvdump prints the contents of an MMV file, the memory-mapped
// metric file of Performance Co-Pilot (mmv(5)).
//
// Usage:
//
//	mmvdump [-json] file
//
// It prints the file line for line as PCP's own mmvdump (PCP 6.0.3) does,
// so either tool can be used, with two corrections: instance records of
// version 2 and 3 files are shown at their real offsets (PCP's steps them
// by 80 bytes, the size of a version 1 record), and an empty section is
// shown with its 0 entries (PCP's prints "Bad TOC[n]: invalid entry count
// 0").
//
// The file is checked first, more strictly than PCP's reader checks it
// (see package mmvfile). When it is not a valid MMV file, mmvdump says what
// is wrong on standard error and exits with status 1.
//
// With -json it prints the same content as one JSON object.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gopcp/mmv/mmvfile"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, time.Now))
}

// run is mmvdump with its arguments, output and clock given, and returns
// the exit status: 0, 1 for a file that cannot be read or is not valid, 2
// for bad usage. The clock tells the length of open elapsed intervals.
func run(args []string, stdout, stderr io.Writer, now func() time.Time) int {
	fs := flag.NewFlagSet("mmvdump", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the file as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: mmvdump [-json] file")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	path := fs.Arg(0)
	f, err := mmvfile.Open(path)
	if err != nil {
		fmt.Fprintf(stderr, "mmvdump: %s: %v\n", path, err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		err = enc.Encode(toJSON(path, f, now()))
	} else {
		err = dump(stdout, path, f, now())
	}
	if err != nil {
		fmt.Fprintf(stderr, "mmvdump: %v\n", err)
		return 1
	}
	return 0
}
