package serverproc

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// TestStartFilled builds the real summa-server, starts it filled to 1 MiB
// and checks the size and document count it reports against the server's
// own; then a fill whose context has ended stops before its first batch.
func TestStartFilled(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	bin, err := Build(ctx, filepath.Join("..", ".."), dir)
	if err != nil {
		t.Fatal(err)
	}
	p, size, docs, err := StartFilled(ctx, bin, filepath.Join(dir, "data"), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if size < 1<<20 || docs == 0 {
		t.Fatalf("filled to %d bytes, %d documents; want at least 1 MiB", size, docs)
	}
	if got, err := p.IndexSize(BenchIndex); err != nil || got != size {
		t.Fatalf("index size %d (%v), StartFilled said %d", got, err, size)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := p.Fill(cancelled, 2*size); !errors.Is(err, context.Canceled) {
		t.Fatalf("fill with an ended context: %v, want context.Canceled", err)
	}
	var st struct {
		Documents int `json:"documents"`
	}
	if err := p.Call("GET", "/v1/indexes/"+BenchIndex, nil, &st); err != nil {
		t.Fatal(err)
	}
	if st.Documents != docs {
		t.Fatalf("%d documents after the cancelled fill, want %d", st.Documents, docs)
	}
}
