package mmv

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/gopcp/mmv/internal/pcpname"
)

// Default is the registry the package-level convenience uses: the New
// functions declare on it when given a nil registry. Its file is named after
// the program: the base name of os.Args[0], with every character PCP does
// not accept in a file name turned into '_' (and "go_" put before a name
// that does not start with a letter), so a program built as "my-server"
// writes $PCP_TMP_DIR/mmv/my_server, read as mmv.my_server.* in PCP.
// It has the Process flag, so PCP stops showing the metrics of a program
// that has died, however it died, and the cluster derived from its name
// (see Options.Cluster), so its PMIDs are the same on every restart and
// every host and cluster labels work. Registry.Configure changes the name
// or options before Start, instruments already declared included.
// The program calls Default.Start once its instruments are declared, and
// Default.Close on exit.
var Default = NewRegistry(programName(os.Args), &Options{Flags: Process})

// programName turns a program's path into a valid file name.
func programName(args []string) string {
	name := "go"
	if len(args) > 0 && args[0] != "" {
		name = filepath.Base(args[0])
	}
	name = pcpname.Part(strings.TrimSuffix(name, ".exe"), "go_")
	return name[:min(len(name), 64)]
}

func metricOf(name, help string, t Type, sem Semantics, units Units, indom uint32) Metric {
	short, long := splitHelp(help)
	return Metric{Name: name, Type: t, Semantics: sem, Units: units, Indom: indom, ShortHelp: short, LongHelp: long}
}

// registry is r, or Default when r is nil.
func registry(r *Registry) *Registry {
	if r == nil {
		return Default
	}
	return r
}

// splitHelp makes a help text the short help (first line) and long help.
func splitHelp(help string) (short, long string) {
	short, long, _ = strings.Cut(help, "\n")
	return short, strings.TrimSpace(long)
}
