package mmv_test

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The root package's files by layer (docs/design.md, "A map of the
// code"). The registry's files may use its fields and take its lock; the
// instruments reach it only through declare.go's door and hold its
// metrics and indoms as tokens; the others are below both.
var (
	registryFiles = []string{
		"mmv.go", "declare.go", "declarations.go", "transaction.go", "lifecycle.go", "configure.go",
		"metrics.go", "instances.go", "labels.go", "parts.go", "budget.go",
		"growth.go", "encode.go", "identity.go", "drops.go", "poll.go",
		"gather.go", "snapshot.go", "tombstone.go", "carry.go", "namespace.go",
	}
	instrumentFiles = []string{
		"instruments.go", "counter.go", "gauge.go", "intgauge.go", "timer.go",
		"histogram.go", "funcs.go", "vec.go", "expire.go",
	}
)

// rootPackage type-checks the root package's files, tests left out: once
// for the tests that read it (from source, imports included, it takes
// seconds under -race).
func rootPackage(t *testing.T) (*token.FileSet, *types.Package, *types.Info) {
	t.Helper()
	if _, err := os.Stat("declare.go"); err != nil {
		t.Skip("not run from the package's directory")
	}
	c := checkedRoot()
	require.NoError(t, c.err)
	return c.fset, c.pkg, c.info
}

type checked struct {
	fset  *token.FileSet
	files []*ast.File
	pkg   *types.Package
	info  *types.Info
	err   error
}

var checkedRoot = sync.OnceValue(func() (c checked) {
	c.fset = token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		return checked{err: err}
	}
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(c.fset, n, nil, 0)
		if err != nil {
			return checked{err: err}
		}
		files = append(files, f)
	}
	c.files = files
	conf := types.Config{Importer: importer.ForCompiler(c.fset, "source", nil)}
	// The imports' export data, as the go command builds it (cached), when
	// it is at hand: from source, go/types checks every import again,
	// seconds under -race.
	if exports, err := exportData(); err == nil {
		conf.Importer = importer.ForCompiler(c.fset, "gc", func(path string) (io.ReadCloser, error) {
			f, ok := exports[path]
			if !ok {
				return nil, fmt.Errorf("no export data for %s", path)
			}
			return os.Open(f)
		})
	}
	c.info = &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	c.pkg, c.err = conf.Check("github.com/gopcp/mmv", c.fset, files, c.info)
	return c
})

// exportData returns the files of export data of the root package's
// imports, by import path, from go list -export (of the imports alone: the
// root package itself need not be built again).
func exportData() (map[string]string, error) {
	imports, err := exec.Command("go", "list", "-f", "{{join .Imports \"\\n\"}}", ".").Output()
	if err != nil {
		return nil, err
	}
	args := append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, strings.Fields(string(imports))...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		return nil, err
	}
	exports := map[string]string{}
	for line := range strings.Lines(string(out)) {
		if path, file, ok := strings.Cut(strings.TrimSpace(line), "\t"); ok && file != "" {
			exports[path] = file
		}
	}
	return exports, nil
}

// TestOneDoor: nothing outside the registry's files takes the registry's
// lock or reads its fields, and the instruments select nothing of the
// registry, its metrics, indoms, parts or labels, nor the door's registry:
// what they ask of it goes through the door's methods (declare.go).
func TestOneDoor(t *testing.T) {
	fset, pkg, info := rootPackage(t)
	for _, f := range append(slices.Clone(registryFiles), instrumentFiles...) {
		_, err := os.Stat(f)
		require.NoError(t, err, "a file the layers list")
	}
	internal := map[string]bool{"Registry": true, "metric": true, "indom": true, "part": true, "label": true}
	door := map[string]bool{"door": true}
	named := func(typ types.Type) string {
		if p, ok := typ.(*types.Pointer); ok {
			typ = p.Elem()
		}
		if n, ok := typ.(*types.Named); ok && n.Obj().Pkg() == pkg {
			return n.Obj().Name()
		}
		return ""
	}
	for sel, s := range info.Selections {
		file := filepath.Base(fset.Position(sel.Pos()).Filename)
		recv := named(s.Recv())
		switch {
		case slices.Contains(instrumentFiles, file):
			if internal[recv] || door[recv] && s.Kind() == types.FieldVal {
				t.Errorf("%s: an instrument selects %s.%s: the registry's internals, past its door", fset.Position(sel.Pos()), recv, sel.Sel.Name)
			}
		case !slices.Contains(registryFiles, file):
			if recv == "Registry" && s.Kind() == types.FieldVal {
				t.Errorf("%s: %s.%s outside the registry's files", fset.Position(sel.Pos()), recv, sel.Sel.Name)
			}
		}
	}
}

// TestFileLayers: one pair of root files alone uses each other, and
// no set of files uses itself round a loop longer than a pair, as
// docs/design.md's code map says (measured as ../shared/tools/filedeps
// measures: references to another file's package-level declarations,
// methods and fields).
func TestFileLayers(t *testing.T) {
	fset, pkg, info := rootPackage(t)
	uses := map[string]map[string]bool{}
	for id, obj := range info.Uses {
		if obj == nil || obj.Pkg() != pkg || !obj.Pos().IsValid() {
			continue
		}
		_, isFunc := obj.(*types.Func)
		v, isVar := obj.(*types.Var)
		if obj.Parent() != pkg.Scope() && !isFunc && !(isVar && v.IsField()) {
			continue
		}
		from, to := filepath.Base(fset.Position(id.Pos()).Filename), filepath.Base(fset.Position(obj.Pos()).Filename)
		if from != to {
			if uses[from] == nil {
				uses[from] = map[string]bool{}
			}
			uses[from][to] = true
		}
	}
	var pairs []string
	for a, bs := range uses {
		for b := range bs {
			if a < b && uses[b][a] {
				pairs = append(pairs, a+"<->"+b)
			}
		}
	}
	slices.Sort(pairs)
	assert.Equal(t, []string{"metrics.go<->parts.go"}, pairs, "files that use each other")
	// Files that reach each other: a loop longer than a pair is a set of
	// three or more files each reaching every other.
	reach := func(from string) map[string]bool {
		seen := map[string]bool{}
		next := []string{from}
		for len(next) > 0 {
			f := next[len(next)-1]
			next = next[:len(next)-1]
			for g := range uses[f] {
				if !seen[g] {
					seen[g] = true
					next = append(next, g)
				}
			}
		}
		return seen
	}
	reached := map[string]map[string]bool{}
	for f := range uses {
		reached[f] = reach(f)
	}
	for f := range uses {
		var loop []string
		for g := range reached[f] {
			if reached[g][f] {
				loop = append(loop, g)
			}
		}
		slices.Sort(loop)
		assert.LessOrEqual(t, len(loop), 2, "%s is on a loop through %v", f, loop)
	}
}

// TestNilRegistryEveryMethod: every exported method of *Registry takes
// a nil receiver as Default (its first statement is r = registry(r)), as
// doc.go says, so that a method added later cannot panic on nil
// (TestNilRegistryIsDefault calls each of today's).
func TestNilRegistryEveryMethod(t *testing.T) {
	fset, _, _ := rootPackage(t)
	methods := 0
	for _, f := range checkedRoot().files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || !fn.Name.IsExported() || types.ExprString(fn.Recv.List[0].Type) != "*Registry" {
				continue
			}
			methods++
			first := ""
			if len(fn.Body.List) > 0 {
				if a, ok := fn.Body.List[0].(*ast.AssignStmt); ok && len(a.Lhs) == 1 && len(a.Rhs) == 1 {
					first = types.ExprString(a.Lhs[0]) + " " + a.Tok.String() + " " + types.ExprString(a.Rhs[0])
				}
			}
			assert.Equal(t, "r = registry(r)", first, "%s: Registry.%s's first statement", fset.Position(fn.Pos()), fn.Name.Name)
		}
	}
	assert.Greater(t, methods, 10, "the Registry's exported methods found")
}
