package main

import (
	"os"
	"strings"
	"testing"
)

// TestDocsTableIsCurrent fails when the mutation table of docs/engine.md
// is not what `go run ./hack/rulemut -table` prints: a mutation added,
// moved to another file or described anew must be copied there.
func TestDocsTableIsCurrent(t *testing.T) {
	var b strings.Builder
	writeTable(&b)
	want := strings.TrimSuffix(b.String(), "\n")
	doc, err := os.ReadFile("../../docs/engine.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(doc), "\n")
	header := strings.SplitN(want, "\n", 2)[0]
	for i, l := range lines {
		if l != header {
			continue
		}
		j := i
		for j < len(lines) && strings.HasPrefix(lines[j], "|") {
			j++
		}
		if got := strings.Join(lines[i:j], "\n"); got != want {
			t.Fatalf("docs/engine.md's mutation table differs from `go run ./hack/rulemut -table`; paste its output there.\ngot:\n%s\nwant:\n%s", got, want)
		}
		return
	}
	t.Fatalf("docs/engine.md has no mutation table (header %q)", header)
}
