package registry

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/segment"
)

// TestIndexesShareOneCache checks that every index of a registry, created
// or opened at start, reads through the one block cache the registry made
// (segment.DefaultCacheBytes), or through the one its options name.
func TestIndexesShareOneCache(t *testing.T) {
	fs := vfs.NewMem()
	r := openTest(t, fs, Options{})
	c := r.opts.Index.Cache
	if c == nil || c.Stats().MaxBytes != segment.DefaultCacheBytes {
		t.Fatalf("the registry made no cache of %d bytes: %v", segment.DefaultCacheBytes, c)
	}
	for _, name := range []string{"a", "b"} {
		h := mustCreate(t, r, name)
		checkIndexCache(t, h, c)
		h.Release()
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []Options{{}, optionsWithCache(segment.NewCache(1 << 20))} {
		given := opts.Index.Cache
		r = openTest(t, fs, opts)
		if given != nil && r.opts.Index.Cache != given {
			t.Fatal("the registry replaced the cache its options name")
		}
		for _, name := range []string{"a", "b"} {
			h, err := r.Acquire(name)
			if err != nil {
				t.Fatal(err)
			}
			checkIndexCache(t, h, r.opts.Index.Cache)
			h.Release()
		}
		if err := r.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// optionsWithCache returns registry options whose indexes use c.
func optionsWithCache(c *segment.Cache) Options {
	var opts Options
	opts.Index.Cache = c
	return opts
}

// checkIndexCache fails unless h's index reads through c.
func checkIndexCache(t *testing.T, h *Handle, c *segment.Cache) {
	t.Helper()
	idx, err := h.Index()
	if err != nil {
		t.Fatal(err)
	}
	if idx.Cache() != c {
		t.Fatalf("index %s has a cache of its own", idx.Dir())
	}
}
