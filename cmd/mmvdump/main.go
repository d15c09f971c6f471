// Command mmvdump prints the contents of an MMV file, the memory-mapped
// metric file of Performance Co-Pilot (mmv(5)), or the hazards of MMV
// files and directories.
//
// Usage:
//
//	mmvdump [-pcp version] file
//	mmvdump -json file
//	mmvdump -lint [-json] [file|dir ...]
//
// With a file alone it prints what PCP's own mmvdump prints, byte for
// byte, whatever the file holds: its warnings ("Bad TOC[n]: invalid entry
// count 0", "Bad file size: ..."), its misprints (version 2 and 3 instance
// records shown 80 bytes apart), and its exit status (1 when it stops at a
// bad header, record or offset). That is PCP 6.0.3's mmvdump, or with -pcp
// 7.2 PCP 7.2's, which prints empty instance and value sections, says
// more of a string slot past the end and shows 7.2's units. See
// mmvfile.DumpAs.
//
// With -json it prints the file as one JSON object, at the real offsets,
// its values as -pcp's reader shows them, once package mmvfile has
// checked that PCP's reader reads it; a file it
// refuses is named on standard error with the rule it breaks, exit
// status 1.
//
// With -lint it reports the hazards of the files and directories named
// ($PCP_TMP_DIR/mmv when none is), one a line, "FILE: RECORD: RULE:
// MESSAGE", or as a JSON array with -json: what PCP's reader refuses,
// skips, renumbers or merges, files on one cluster, colliding PMIDs and
// indoms, names that empty PCP's namespace, values that cost it seconds,
// files of dead processes, leftover temporaries, files in flux (see
// mmvfile.LintDir and docs/reader.md). The exit status is 0 when there is
// nothing to report, 1 when there is, 2 when a path cannot be read or is
// neither a regular file nor a directory (a FIFO, a device), named on
// standard error with why.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gopcp/mmv"
	"github.com/gopcp/mmv/mmvfile"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, time.Now))
}

// run is mmvdump with its arguments, output and clock given, and returns
// the exit status: 0, as for -h; 1 for a file that cannot be read or that
// PCP's mmvdump stops at, a file the reader refuses (-json) or hazards
// found (-lint); 2 for bad usage or a path -lint cannot read, or that is
// neither a regular file nor a directory. The clock
// tells the length of open elapsed intervals.
func run(args []string, stdout, stderr io.Writer, now func() time.Time) int {
	fs := flag.NewFlagSet("mmvdump", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the file, or the hazards found, as JSON")
	lint := fs.Bool("lint", false, "report the hazards of files and directories ($PCP_TMP_DIR/mmv by default)")
	pcpVersion := fs.String("pcp", mmvfile.PCP603.String(), "print as the mmvdump of this PCP version: 6.0.3 or 7.2")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: mmvdump [-pcp version] [-json] file\n       mmvdump -lint [-json] [file|dir ...]")
		fs.PrintDefaults()
	}
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		return 0 // asked for: the usage printed, as flag.ExitOnError exits
	case err != nil:
		return 2
	}
	pcp, err := mmvfile.ParsePCP(*pcpVersion)
	if err != nil {
		fmt.Fprintf(stderr, "mmvdump: -pcp: %v\n", err)
		return 2
	}
	if *lint {
		return runLint(fs.Args(), *asJSON, stdout, stderr)
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	path := fs.Arg(0)
	if *asJSON {
		f, err := mmvfile.Open(path)
		if err != nil {
			fmt.Fprintf(stderr, "mmvdump: %s: %v\n", path, err)
			return 1
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(toJSON(path, f, now(), pcp)); err != nil {
			fmt.Fprintf(stderr, "mmvdump: %v\n", err)
			return 1
		}
		return 0
	}
	b, err := mmvfile.ReadFile(path)
	if err != nil {
		// PCP's mmvdump says so with perror.
		fmt.Fprintf(stderr, "mmvdump: %v\n", err)
		return 1
	}
	if len(b) == 0 {
		// PCP's mmvdump cannot map an empty file.
		fmt.Fprintf(stderr, "mmvdump: %s: empty file\n", path)
		return 1
	}
	ok, err := mmvfile.DumpAs(stdout, path, b, now(), pcp)
	if err != nil {
		fmt.Fprintf(stderr, "mmvdump: %v\n", err)
		return 1
	}
	if !ok {
		return 1
	}
	return 0
}

func runLint(paths []string, asJSON bool, stdout, stderr io.Writer) int {
	if len(paths) == 0 {
		paths = []string{mmv.Dir()}
	}
	fds, err := mmvfile.LintDir(paths...)
	if err != nil {
		fmt.Fprintf(stderr, "mmvdump: %v\n", err)
		return 2
	}
	if asJSON {
		if fds == nil {
			fds = []mmvfile.Finding{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(fds); err != nil {
			fmt.Fprintf(stderr, "mmvdump: %v\n", err)
			return 2
		}
	} else {
		for _, f := range fds {
			fmt.Fprintln(stdout, f)
		}
	}
	if len(fds) > 0 {
		return 1
	}
	return 0
}
