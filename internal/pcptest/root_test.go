package pcptest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRootLayout: under MMV_PCP_ROOT, Config reads the root's pcp.conf
// (the environment first), commands are found in the root's bin
// directories, and what is missing is named by its path inside the root.
func TestRootLayout(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "usr", "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "etc", "pcp.conf"),
		[]byte("PCP_VERSION=7.2.2\nPCP_PMDAS_DIR=/var/lib/pcp/pmdas\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "usr", "bin", "pminfo"), []byte("#!/bin/sh\n"), 0o755))
	t.Setenv(RootEnv, root+"/")
	t.Setenv("PCP_PMDAS_DIR", "")
	t.Setenv("PCP_VERSION", "")

	assert.Equal(t, root, Root())
	assert.Equal(t, "/var/lib/pcp/pmdas", Config("PCP_PMDAS_DIR"))
	assert.Equal(t, "7.2.2", Version())
	assert.True(t, AtLeast(7, 2) && AtLeast(6, 9) && !AtLeast(7, 3) && !AtLeast(8, 0))
	p, err := lookPath("pminfo")
	require.NoError(t, err)
	assert.Equal(t, "/usr/bin/pminfo", p)
	_, err = lookPath("pmstore")
	assert.ErrorContains(t, err, root)
	assert.ErrorContains(t, HasPCP(), "/var/lib/pcp/pmdas/mmv/pmda_mmv.so", "the agent is looked for inside the root")

	t.Setenv("PCP_PMDAS_DIR", "/env")
	assert.Equal(t, "/env", Config("PCP_PMDAS_DIR"), "the environment first, as pmGetConfig")
	t.Setenv(RootEnv, "")
	t.Setenv("PCP_VERSION", "not.a.version")
	assert.False(t, AtLeast(0, 0), "an unknown version is none")
}

// TestRootCommand runs a command inside the root MMV_PCP_ROOT names: it
// sees the host's temporary directory at the same path, starts in the
// working directory it was given, and leaves nothing mounted.
func TestRootCommand(t *testing.T) {
	if Root() == "" {
		t.Skipf("%s is not set", RootEnv)
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "seen"), []byte("from the host\n"), 0o644))
	cmd := Command(context.Background(), "/bin/sh", "-c", `pwd; cat seen; echo x >written; test -f /etc/pcp.conf && grep '^PCP_VERSION=' /etc/pcp.conf`)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, dir+"\nfrom the host\nPCP_VERSION="+Version()+"\n", string(out))
	b, err := os.ReadFile(filepath.Join(dir, "written"))
	require.NoError(t, err)
	assert.Equal(t, "x\n", string(b))
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	assert.NotContains(t, string(mounts), Root()+"/", "a mount left behind")

	// A file outside the temporary directory is copied where the root sees it.
	seen := Visible(t, "root_test.go")
	assert.True(t, strings.HasPrefix(seen, os.TempDir()), seen)
	out, err = Command(context.Background(), "head", "-n", "1", seen).Output()
	require.NoError(t, err)
	assert.Equal(t, "package pcptest\n", string(out))
}
