package server_test

import (
	"testing"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/server"
)

// TestTotalHitsThreshold checks the HTTP form of block-max pruning: without
// totalHitsThreshold the count is exact and no relation is sent; with one
// below the count, the page is the same and totalHits is a lower bound
// flagged "gte"; a negative threshold is InvalidQuery.
func TestTotalHitsThreshold(t *testing.T) {
	e := newEnv(t, server.Limits{})
	e.create("opticks")
	e.mustAdd("opticks", paragraphDocs(t, 1000)...)
	e.mustCommit("opticks")
	exact, err := e.c.Search(e.ctx, "opticks", client.SearchRequest{Query: "the of and to in that is which light", Limit: 10})
	if err != nil || exact.TotalHitsRelation != "" || exact.TotalHits < 100 {
		t.Fatalf("exact: %d hits, relation %q, %v", exact.TotalHits, exact.TotalHitsRelation, err)
	}
	bmp, err := e.c.Search(e.ctx, "opticks", client.SearchRequest{Query: "the of and to in that is which light", Limit: 10, TotalHitsThreshold: 50})
	if err != nil || bmp.TotalHitsRelation != "gte" || bmp.TotalHits < 50 || bmp.TotalHits > exact.TotalHits {
		t.Fatalf("threshold 50: %d hits, relation %q, %v (exact %d)", bmp.TotalHits, bmp.TotalHitsRelation, err, exact.TotalHits)
	}
	if len(bmp.Hits) != len(exact.Hits) {
		t.Fatalf("%d hits with a threshold, %d without", len(bmp.Hits), len(exact.Hits))
	}
	for i := range exact.Hits {
		if exact.Hits[i].Score != bmp.Hits[i].Score || string(exact.Hits[i].Fields) != string(bmp.Hits[i].Fields) {
			t.Fatalf("hit %d differs: %v %s vs %v %s", i, exact.Hits[i].Score, exact.Hits[i].Fields, bmp.Hits[i].Score, bmp.Hits[i].Fields)
		}
	}
	_, err = e.c.Search(e.ctx, "opticks", client.SearchRequest{Query: "light", TotalHitsThreshold: -1})
	wantAPIError(t, err, 400, client.CodeInvalidQuery)
}
