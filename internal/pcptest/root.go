package pcptest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// RootEnv names the environment variable that chooses the PCP the tests
// use as their oracle. Unset, it is the host's PCP (Debian 12's 6.0.3 in
// CI). Set to a directory, it is the PCP installed in that directory, a
// chroot made by .ci/pcp7-chroot (Debian unstable's PCP 7.2 in CI, at
// /var/cache/mmv-pcp7): every PCP command the package runs (pminfo with
// the MMV agent, mmvdump, pmcd, pmstore, gcc against libpcp_mmv) then
// runs inside it, through Command.
const RootEnv = "MMV_PCP_ROOT"

// Root returns the directory of the PCP in use, "" for the host's.
func Root() string {
	if r := os.Getenv(RootEnv); r != "" {
		return filepath.Clean(r)
	}
	return ""
}

// hostPath returns where a path of the PCP in use is on the host.
func hostPath(p string) string { return filepath.Join(Root(), p) }

// lookPath finds a command of the PCP in use: on the host's PATH, or in
// the chroot's /usr/bin, /usr/sbin, /bin and /sbin. It returns the path as
// the command sees it (inside the chroot, for a root).
func lookPath(name string) (string, error) {
	if Root() == "" {
		return exec.LookPath(name)
	}
	for _, d := range []string{"/usr/bin", "/usr/sbin", "/bin", "/sbin"} {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(hostPath(p)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not in %s's /usr/bin, /usr/sbin, /bin or /sbin", name, Root())
}

// rootConf returns the text of the chroot's pcp.conf, read once.
func rootConf() string {
	root := Root()
	if v, ok := rootConfs.Load(root); ok {
		return v.(string)
	}
	b, _ := os.ReadFile(filepath.Join(root, "etc", "pcp.conf"))
	rootConfs.Store(root, string(b))
	return string(b)
}

var rootConfs sync.Map // root -> its pcp.conf's text

// Version returns the version of the PCP in use, as its pcp.conf gives it
// (PCP_VERSION, such as "6.0.3" or "7.2.2"), or "" when there is none.
func Version() string { return Config("PCP_VERSION") }

// AtLeast reports whether the PCP in use is of version major.minor or
// later, for tests whose oracle changed between PCP versions. An unknown
// version is none of them.
func AtLeast(major, minor int) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(Version(), "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// Command returns the command that runs name (a path as Config gives it,
// or a name on PATH) with args, under the PCP in use: as it is on the
// host, or inside the chroot RootEnv names, in a mount namespace of its
// own (unshare -m: nothing stays mounted when it exits) where the host's
// temporary directory (os.TempDir, where t.TempDir makes directories), /dev
// and /proc are bind-mounted at the same paths. Files the command reads or
// writes must therefore be under os.TempDir (see Visible); its working
// directory, when the caller sets cmd.Dir there, is kept inside the
// chroot. The process is the command itself (every step execs), so
// signalling it signals the command. It needs root when RootEnv is set.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	root := Root()
	if root == "" {
		return exec.CommandContext(ctx, name, args...)
	}
	tmp := filepath.Clean(os.TempDir())
	// sh $0=root $1=tmp, then the command: each step execs the next.
	const script = `set -e
mkdir -p "$0$1" "$0/dev" "$0/proc"
mount --rbind "$1" "$0$1"
mount --rbind /dev "$0/dev"
mount --rbind /proc "$0/proc"
shift
exec chroot "$0" /bin/sh -c 'cd "$0" 2>/dev/null || cd /; exec "$@"' "$PWD" "$@"`
	return exec.CommandContext(ctx, "unshare", append([]string{"--mount", "--propagation", "private", "--", "/bin/sh", "-c", script, root, tmp, name}, args...)...)
}

// Visible returns a path at which the commands Command runs can read file:
// file itself when no root is in use, its absolute path when it is under
// os.TempDir (which the root sees at the same path), else a copy
// of it in a temporary directory of the test. It fails the test when the
// copy fails.
func Visible(t testing.TB, file string) string {
	t.Helper()
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatalf("pcptest: %v", err)
	}
	if Root() == "" {
		return file
	}
	if strings.HasPrefix(abs, filepath.Clean(os.TempDir())+string(filepath.Separator)) {
		return abs // the root sees the temporary directory at its own path, not the working directory
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		t.Fatalf("pcptest: %v", err)
	}
	dst := filepath.Join(t.TempDir(), filepath.Base(abs))
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatalf("pcptest: %v", err)
	}
	return dst
}

// BuildC compiles the C program src into out (a path under os.TempDir when
// a root is in use) with the PCP in use's gcc and libraries, linking libs
// (such as "-lpcp_mmv", "-lpcp"); run it with Command, so that it loads the
// same libraries. It calls MustHaveLibPCPMMV first, and fails the test
// when gcc does.
func BuildC(t testing.TB, src, out string, libs ...string) {
	t.Helper()
	MustHaveLibPCPMMV(t)
	gcc, err := lookPath("gcc")
	if err != nil {
		t.Fatalf("pcptest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*Timeout)
	defer cancel()
	if msg, err := Command(ctx, gcc, append([]string{"-o", out, Visible(t, src)}, libs...)...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", src, err, msg)
	}
}
