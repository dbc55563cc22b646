// Command summa-demo runs the engine end to end on real text with no
// cluster and no server: it indexes the paragraphs of Newton's Opticks into
// a data directory, commits, upserts and deletes, reopens the index from
// disk and answers queries.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/search"
	"github.com/summadev/summa/internal/corpus"
)

func main() {
	dataDir := flag.String("data-dir", "", "directory for the index (default: a new temporary directory)")
	flag.Parse()
	if err := run(*dataDir, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "summa-demo:", err)
		os.Exit(1)
	}
}

func run(dataDir string, queries []string) error {
	if dataDir == "" {
		tmp, err := os.MkdirTemp("", "summa-demo-")
		if err != nil {
			return err
		}
		dataDir = tmp
	}
	if len(queries) == 0 {
		queries = []string{`light`, `+prism +colours`, `"angle of incidence"`, `refraction -reflexion`, `title:experiment`}
	}
	s, err := schema.Parse([]byte(corpus.Schema(false)))
	if err != nil {
		return err
	}
	ps, err := corpus.Paragraphs()
	if err != nil {
		return err
	}
	dir := filepath.Join(dataDir, "opticks")
	ctx := context.Background()
	idx, err := index.Create(vfs.Default, dir, s, index.Options{})
	if err != nil {
		return err
	}
	start := time.Now()
	var batch []*schema.Document
	for i, p := range ps {
		d, err := s.ParseDocument(corpus.Document(i, p))
		if err != nil {
			return err
		}
		batch = append(batch, d)
	}
	if err := idx.Add(batch); err != nil {
		return err
	}
	res, err := idx.Commit(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("indexed %d paragraphs of Opticks in %v: generation %d, %d documents\n", len(ps), time.Since(start).Round(time.Millisecond), res.Generation, res.Documents)
	if _, err := idx.Delete("p0000"); err != nil {
		return err
	}
	upsert, _ := s.ParseDocument([]byte(`{"id":"p0001","title":"Replaced paragraph","body":"an upserted version of the second paragraph about light","paragraph":1}`))
	if err := idx.Add([]*schema.Document{upsert}); err != nil {
		return err
	}
	if res, err = idx.Commit(ctx); err != nil {
		return err
	}
	fmt.Printf("deleted p0000 and upserted p0001: generation %d, %d documents\n", res.Generation, res.Documents)
	if err := idx.Close(ctx); err != nil {
		return err
	}
	if idx, err = index.Open(vfs.Default, dir, index.Options{}); err != nil {
		return err
	}
	defer idx.Close(ctx)
	st := idx.Status()
	fmt.Printf("reopened %s: %d documents in %d segments, %d quarantined\n", dir, st.Documents, len(st.Segments), len(st.Quarantined))
	snap, err := idx.Snapshot()
	if err != nil {
		return err
	}
	defer snap.Close()
	for _, q := range queries {
		raw, _ := json.Marshal(q)
		r, err := snap.Search(ctx, search.Request{Query: raw, Limit: 3})
		if err != nil {
			return fmt.Errorf("query %q: %w", q, err)
		}
		fmt.Printf("\nquery %-28s %d hits\n", q, r.TotalHits)
		for _, h := range r.Hits {
			fmt.Printf("  %6.3f  %s\n", h.Score, strings.TrimSpace(string(h.Fields)))
		}
	}
	return nil
}
