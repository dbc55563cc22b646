package replication

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/internal/corpus/corpustest"
)

var testSchema = schema.MustNew(
	schema.Field{Name: "id", Type: schema.Text, Primary: true},
	schema.Field{Name: "body", Type: schema.Text},
)

// leaderOf returns an in-memory index with two committed segments.
func leaderOf(t *testing.T) (vfs.FS, *index.Index) {
	t.Helper()
	fs := vfs.NewMem()
	idx, err := index.Create(fs, "books", testSchema, index.Options{IndexingWorkers: 1, CommitFlushTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = idx.Close(context.Background()) })
	ps := corpustest.Paragraphs(t)
	for batch := range 2 {
		var docs []*schema.Document
		for i := batch * 20; i < batch*20+20; i++ {
			d, err := testSchema.ParseDocument([]byte(fmt.Sprintf(`{"id":"p%d","body":%q}`, i, ps[i%len(ps)])))
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, d)
		}
		if err := idx.Add(docs); err != nil {
			t.Fatal(err)
		}
		if _, err := idx.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return fs, idx
}

// onDisk reports whether every file of meta is in the index directory.
func onDisk(fs vfs.FS, meta *metadata.Metadata) (all, none bool) {
	all, none = true, true
	for _, f := range index.CommittedFiles(meta) {
		if _, err := fs.Stat(fs.PathJoin("books", f.Name)); err == nil {
			none = false
		} else {
			all = false
		}
	}
	return all, none
}

// pin pins idx's committed generation in hs and returns its ID and
// metadata.
func pin(t *testing.T, hs *Holds, fs vfs.FS, idx *index.Index, deleting <-chan struct{}) (string, *metadata.Metadata) {
	t.Helper()
	snap, meta, err := idx.PinCommitted()
	if err != nil {
		t.Fatal(err)
	}
	return hs.Add("books", fs, "books", meta, deleting, snap.Close), meta
}

// waitGone polls until no file of meta is on disk.
func waitGone(t *testing.T, fs vfs.FS, idx *index.Index, meta *metadata.Metadata, why string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		idx.Manager().WaitDeletes()
		if _, none := onDisk(fs, meta); none {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the retired files are still on disk after %s", why)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestF01_HoldKeepsRetiredFilesUntilReleasedExpiredOrDeleting: the files
// of a held generation stay downloadable, whole, after a merge retires
// them; the release, the TTL or the index's deletion ends the hold, and
// the tracker then deletes them.
func TestF01_HoldKeepsRetiredFilesUntilReleasedExpiredOrDeleting(t *testing.T) {
	fs, idx := leaderOf(t)
	hs := NewHolds(time.Hour)
	t.Cleanup(hs.Close) // before the index closes: a failed check must not hang in Close
	id, meta := pin(t, hs, fs, idx, nil)
	if _, err := idx.ForceMerge(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	idx.Manager().WaitDeletes()
	if all, _ := onDisk(fs, meta); !all {
		t.Fatal("a merge deleted files of a held generation")
	}
	for _, f := range index.CommittedFiles(meta) {
		r, size, err := hs.Open("books", id, f.Name)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil || int64(len(b)) != size || size != f.Size {
			t.Fatalf("held file %s: %d bytes of %d (%v)", f.Name, len(b), f.Size, err)
		}
	}
	if _, _, err := hs.Open("books", id, "seg_ffff.cmp"); !errors.Is(err, ErrNotInHold) {
		t.Fatalf("a file outside the hold: %v, want ErrNotInHold", err)
	}
	if _, _, err := hs.Open("other", id, index.CommittedFiles(meta)[0].Name); !errors.Is(err, ErrNoHold) {
		t.Fatalf("the hold of another index: %v, want ErrNoHold", err)
	}
	if !hs.Release("books", id) || hs.Count() != 0 {
		t.Fatal("release of a live hold failed")
	}
	waitGone(t, fs, idx, meta, "the release")
	if _, _, err := hs.Open("books", id, index.CommittedFiles(meta)[0].Name); !errors.Is(err, ErrNoHold) {
		t.Fatalf("a released hold: %v, want ErrNoHold", err)
	}

	// Expiry: a short TTL ends the hold without a release.
	short := NewHolds(50 * time.Millisecond)
	t.Cleanup(short.Close)
	_, meta = pin(t, short, fs, idx, nil)
	addAndMerge(t, idx)
	waitGone(t, fs, idx, meta, "the hold's TTL")

	// Deletion: the index's deletion ends the hold at once.
	deleting := make(chan struct{})
	_, meta = pin(t, hs, fs, idx, deleting)
	addAndMerge(t, idx)
	close(deleting)
	waitGone(t, fs, idx, meta, "the index's deletion started")
}

// addAndMerge commits one more segment and merges everything, retiring
// every file of the previous generation.
func addAndMerge(t *testing.T, idx *index.Index) {
	t.Helper()
	d, err := testSchema.ParseDocument([]byte(fmt.Sprintf(`{"id":"x%d","body":"more light"}`, time.Now().UnixNano())))
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Add([]*schema.Document{d}); err != nil {
		t.Fatal(err)
	}
	if _, err := idx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := idx.ForceMerge(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
}
