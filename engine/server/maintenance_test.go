package server_test

import (
	"testing"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/server"
)

// TestMergeAndCompact merges three committed segments into one and
// compacts the deleted rows away; documents and search are unchanged.
func TestMergeAndCompact(t *testing.T) {
	e := newEnv(t, server.Limits{})
	e.create("mc")
	docs := paragraphDocs(t, 90)
	for i := 0; i < 90; i += 30 {
		e.mustAdd("mc", docs[i:i+30]...)
		e.mustCommit("mc")
	}
	if st := e.status("mc"); len(st.Segments) < 2 {
		t.Fatalf("want several segments, got %+v", st.Segments)
	}
	light := e.hits("mc", "light")
	res, err := e.c.Merge(e.ctx, "mc", client.MergeDownTo(1))
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	st := e.status("mc")
	if !res.Published || len(st.Segments) != 1 || st.Documents != 90 || res.Generation != st.Generation {
		t.Fatalf("merge %+v status %+v", res, st)
	}
	if n := e.hits("mc", "light"); n != light {
		t.Fatalf("light: %d hits after merge, %d before", n, light)
	}
	if res, err := e.c.Merge(e.ctx, "mc", client.MergeOptions{}); err != nil || res.Published {
		t.Fatalf("merge of one segment: %+v %v", res, err)
	}
	for _, id := range []string{"p0001", "p0002", "p0003"} {
		if ok, err := e.c.DeleteDocument(e.ctx, "mc", id); err != nil || !ok {
			t.Fatalf("delete %s: %v %v", id, ok, err)
		}
	}
	e.mustCommit("mc")
	if st := e.status("mc"); st.Segments[0].DeletedDocuments != 3 {
		t.Fatalf("status after deletes: %+v", st)
	}
	res, err = e.c.Compact(e.ctx, "mc")
	if err != nil {
		t.Fatalf("compact: %v", err)
	}
	st = e.status("mc")
	if !res.Published || st.Documents != 87 || st.Segments[0].DeletedDocuments != 0 || st.Segments[0].Documents != 87 {
		t.Fatalf("compact %+v status %+v", res, st)
	}
	light = e.hits("mc", "light")
	rres, err := e.c.Reorder(e.ctx, "mc")
	if err != nil {
		t.Fatalf("reorder: %v", err)
	}
	st = e.status("mc")
	if !rres.Published || st.Documents != 87 || len(st.Segments) != 1 {
		t.Fatalf("reorder %+v status %+v", rres, st)
	}
	if n := e.hits("mc", "light"); n != light {
		t.Fatalf("light: %d hits after reorder, %d before", n, light)
	}
}
