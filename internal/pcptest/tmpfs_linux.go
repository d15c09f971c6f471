package pcptest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// SmallTmpfs mounts a tmpfs of the given size ("256k") on a temporary
// directory, unmounted when the test ends, for tests of a full disk. It
// needs root: elsewhere the test is skipped, or fails as MustHave says
// (CI runs as root).
func SmallTmpfs(t testing.TB, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		MustHave(t, errors.New("mounting a tmpfs needs root"))
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		MustHave(t, fmt.Errorf("mount -t tmpfs -o size=%s tmpfs %s: %w", size, dir, err))
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("umount %s: %v", dir, err)
		}
	})
	return dir
}

// Fill writes a file in dir until its file system is full, the last
// partial block too, and returns the file's path.
func Fill(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			break
		}
	}
	for {
		if _, err := f.Write(buf[:1]); err != nil {
			break
		}
	}
	return path
}
