package index

import (
	"context"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/segment"
)

// TestSharedCacheBounded gives two indexes the same segment.Cache, much
// smaller than their stored blocks: the readers of both (flushed, merged,
// and reopened segments) cache their blocks in it, and its bytes stay
// within its bound while both indexes read every stored document.
func TestSharedCacheBounded(t *testing.T) {
	c := segment.NewCache(128 << 10)
	opts := testOptions()
	opts.Cache = c
	fs := vfs.NewMem()
	idxs := make([]*Index, 0, 2)
	defer func() {
		for _, idx := range idxs {
			mustClose(t, idx)
		}
	}()
	for i := range 2 {
		idx, err := Create(fs, fmt.Sprintf("data/shared%d", i), testSchema, opts)
		if err != nil {
			t.Fatal(err)
		}
		if idx.opts.Cache != c {
			t.Fatalf("index %d does not use the cache it was given", i)
		}
		for part := range 3 {
			if err := idx.Add(docs(t, 100*i+40*part, 100*i+40*(part+1), 1)); err != nil {
				t.Fatal(err)
			}
			mustCommit(t, idx)
		}
		idxs = append(idxs, idx)
	}
	for i, idx := range idxs {
		checkReadsCache(t, fmt.Sprintf("index %d, flushed", i), idx, c)
	}
	if _, err := idxs[0].ForceMerge(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	checkReadsCache(t, "index 0, merged", idxs[0], c)
	mustClose(t, idxs[1])
	idxs = idxs[:1]
	idx, err := Open(fs, "data/shared1", opts)
	if err != nil {
		t.Fatal(err)
	}
	idxs = append(idxs, idx)
	checkReadsCache(t, "index 1, reopened", idx, c)
	if st := c.Stats(); st.Bytes < st.MaxBytes/2 {
		t.Fatalf("the cache holds %d bytes of its %d: the reads never came near the bound", st.Bytes, st.MaxBytes)
	}
	t.Logf("cache: %+v", c.Stats())
}

// checkReadsCache reads the last stored document of every segment of
// idx, each of which must count one miss in c (its block is not cached
// yet; a reader that does not use c would count none), then every live
// stored document, checking that c stays within its bound.
func checkReadsCache(t *testing.T, what string, idx *Index, c *segment.Cache) {
	t.Helper()
	snap, err := idx.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	for _, seg := range snap.Segments {
		before := c.Stats()
		if _, err := seg.Reader.StoredDocument(seg.Reader.NumDocs() - 1); err != nil {
			t.Fatal(err)
		}
		if after := c.Stats(); after.Misses != before.Misses+1 || after.Hits != before.Hits {
			t.Fatalf("%s: segment %s's first read counted %d misses and %d hits in the cache, want 1 and 0: its reader does not use it",
				what, seg.Reader.ID(), after.Misses-before.Misses, after.Hits-before.Hits)
		}
	}
	hits := c.Stats().Hits
	if n := len(visible(t, idx)); n == 0 {
		t.Fatalf("%s: no live document", what)
	}
	if st := c.Stats(); st.Entries == 0 || st.Bytes > st.MaxBytes || st.Hits == hits {
		t.Fatalf("%s: the cache holds %d entries of %d bytes, bound %d, after %d hits", what, st.Entries, st.Bytes, st.MaxBytes, st.Hits-hits)
	}
}

// TestDefaultCachePerIndex checks that an index given no cache makes its
// own of segment.DefaultCacheBytes, as Pebble does.
func TestDefaultCachePerIndex(t *testing.T) {
	_, a := createMem(t)
	defer mustClose(t, a)
	_, b := createMem(t)
	defer mustClose(t, b)
	if a.opts.Cache == nil || a.opts.Cache == b.opts.Cache {
		t.Fatal("two indexes given no cache do not have one each")
	}
	if got := a.opts.Cache.Stats().MaxBytes; got != segment.DefaultCacheBytes {
		t.Fatalf("default cache of %d bytes, want %d", got, segment.DefaultCacheBytes)
	}
}
