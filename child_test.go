package mmv_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Tests that need another process re-run the test binary on themselves:
// childEnv names the part to play, and the test function plays it when the
// variable is set, instead of testing.

const childEnv = "MMV_TEST_CHILD"

// childRole returns the part this process plays, "" in the test itself.
func childRole() string { return os.Getenv(childEnv) }

// childCmd returns a command running test in a copy of the test binary as
// role, with env added. With cred, the child runs as that user, from a copy
// of the binary it can read (the go tool's build directory is private).
func childCmd(t *testing.T, test, role string, cred *syscall.Credential, env ...string) *exec.Cmd {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if cred != nil {
		dir := t.TempDir()
		os.Chmod(filepath.Dir(dir), 0o755)
		os.Chmod(dir, 0o755)
		copyTo := filepath.Join(dir, "mmv.test")
		if err := copyFile(bin, copyTo); err != nil {
			t.Fatal(err)
		}
		bin = copyTo
	}
	cmd := exec.Command(bin, "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), append(env, childEnv+"="+role)...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	return cmd
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
