// Package pcpconf reads PCP's configuration variables as libpcp does.
package pcpconf

import (
	"os"
	"path/filepath"
	"strings"
)

// Files are the pcp.conf paths libpcp tries after $PCP_CONF and
// $PCP_DIR/etc/pcp.conf.
var Files = []string{"/etc/pcp.conf", "/usr/local/etc/pcp.conf"}

// Get returns the value of a PCP variable, such as PCP_TMP_DIR: from the
// environment (getenv) first, else from the first pcp.conf found, trying
// $PCP_CONF, $PCP_DIR/etc/pcp.conf, then files. It returns "" when neither
// has it.
func Get(getenv func(string) string, name string, files []string) string {
	if v := getenv(name); v != "" {
		return v
	}
	var confs []string
	if c := getenv("PCP_CONF"); c != "" {
		confs = append(confs, c)
	}
	if d := getenv("PCP_DIR"); d != "" {
		confs = append(confs, filepath.Join(d, "etc", "pcp.conf"))
	}
	for _, c := range append(confs, files...) {
		if b, err := os.ReadFile(c); err == nil {
			return Value(string(b), name)
		}
	}
	return ""
}

// Value returns the value of name in pcp.conf text: NAME=value lines, '#'
// comments, one pair of quotes stripped.
func Value(conf, name string) string {
	for line := range strings.Lines(conf) {
		line = strings.TrimSpace(line)
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") || strings.TrimSpace(k) != name {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		return v
	}
	return ""
}
