package harness

import (
	"os"
	"path/filepath"
	"testing"
)

func TestModuleRootFindsTheProjectsGoMod(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "summa-server")); err != nil {
		t.Fatalf("root %s holds no cmd/summa-server: %v", root, err)
	}
}

func TestFreePortsAreDistinct(t *testing.T) {
	ports, err := FreePorts(5)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || seen[p] {
			t.Fatalf("ports %v: not five distinct ports", ports)
		}
		seen[p] = true
	}
}

func TestTailCountsTheLinesItLeavesOut(t *testing.T) {
	if got, want := Tail("a\nb\nc\n", 2), "... (1 earlier lines)\nb\nc"; got != want {
		t.Fatalf("Tail = %q, want %q", got, want)
	}
	if got := Tail("a\nb", 5); got != "a\nb" {
		t.Fatalf("Tail = %q, want the whole text", got)
	}
}

func TestOutputCollectsConcurrentWrites(t *testing.T) {
	var o Output
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 100 {
				_, _ = o.Write([]byte("x"))
			}
		}()
	}
	for range 4 {
		<-done
	}
	if n := len(o.String()); n != 400 {
		t.Fatalf("%d bytes collected, want 400", n)
	}
}
