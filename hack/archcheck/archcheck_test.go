// Package archcheck holds the test that keeps ARCHITECTURE.md's import
// table true: every package of a row imports exactly the project packages
// the row names.
package archcheck

import (
	"go/build"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// module is the project's module path.
const module = "github.com/summadev/summa/"

// TestArchitectureImportTable compares each row of ARCHITECTURE.md's
// table ("| `pkg`, `pkg` | `import`, ... |" or "... | nothing of the
// project |") with the non-test imports of each package it names. The
// table writes an engine package without its "engine/" prefix, and
// engine/internal/x as internal/x.
func TestArchitectureImportTable(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| (`[^|]+) \\| ([^|]+) \\|$")
	name := regexp.MustCompile("`([^`]+)`")
	rows := row.FindAllStringSubmatch(string(doc), -1)
	if len(rows) < 10 {
		t.Fatalf("found %d rows of the import table in ARCHITECTURE.md, want the whole table", len(rows))
	}
	for _, r := range rows {
		var want []string
		if strings.TrimSpace(r[2]) != "nothing of the project" {
			for _, m := range name.FindAllStringSubmatch(r[2], -1) {
				want = append(want, m[1])
			}
		}
		slices.Sort(want)
		for _, m := range name.FindAllStringSubmatch(r[1], -1) {
			for _, dir := range expand(t, root, m[1]) {
				got := projectImports(t, root, dir)
				if !slices.Equal(got, want) {
					t.Errorf("ARCHITECTURE.md says %s imports %v; it imports %v", dir, want, got)
				}
			}
		}
	}
}

// expand returns the package directories a table entry names: itself, or
// for "dir/*" every package directory below dir.
func expand(t *testing.T, root, entry string) []string {
	t.Helper()
	parent, ok := strings.CutSuffix(entry, "/*")
	if !ok {
		return []string{entry}
	}
	ents, err := os.ReadDir(filepath.Join(root, parent))
	if err != nil {
		t.Fatalf("ARCHITECTURE.md names %s: %v", entry, err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, parent+"/"+e.Name())
		}
	}
	return out
}

// projectImports returns the project packages dir's non-test files
// import, written as the table writes them, sorted.
func projectImports(t *testing.T, root, dir string) []string {
	t.Helper()
	pkg, err := build.ImportDir(filepath.Join(root, dir), 0)
	if err != nil {
		t.Fatalf("ARCHITECTURE.md names %s: %v", dir, err)
	}
	var out []string
	for _, imp := range pkg.Imports {
		rel, ok := strings.CutPrefix(imp, module)
		if !ok {
			continue
		}
		out = append(out, strings.TrimPrefix(rel, "engine/"))
	}
	slices.Sort(out)
	return out
}
