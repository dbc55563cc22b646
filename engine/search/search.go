package search

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/summadev/summa/engine/schema"
)

// MaxResultWindow bounds limit+offset: deeper pages are refused.
const MaxResultWindow = 10000

// DefaultLimit is the page size of a request that does not give one.
const DefaultLimit = 10

// Request is one search: a query (see Parse) and the page wanted.
type Request struct {
	// Query is a JSON string in the text query language or a JSON object
	// asking for a vector search.
	Query json.RawMessage
	// Limit is the page size; 0 means DefaultLimit.
	Limit int
	// Offset is the number of best hits skipped before the page.
	Offset int
}

// Hit is one returned document.
type Hit struct {
	// Segment is the index of the document's view in the views searched.
	Segment int
	// Doc is the document's id within its segment.
	Doc uint32
	// Score is the document's score: BM25 for text queries, the dot
	// product for vector queries.
	Score float64
	// Fields is the JSON object of the document's stored fields.
	Fields json.RawMessage
}

// Result is the answer to a search.
type Result struct {
	// TotalHits is the exact number of live documents that match; for a
	// dense query, at most its k.
	TotalHits int
	// Hits is the requested page, best first.
	Hits []Hit
}

// Search runs req over views. A refused request (bad query, limit or
// offset) fails with a *QueryError; a segment read failure or a cancelled
// ctx fails with a wrapped error. Deleted documents are neither returned
// nor counted; stored fields are read for the returned page only.
func Search(ctx context.Context, s *schema.Schema, views []SegmentView, req Request) (Result, error) {
	limit, err := checkWindow(req.Limit, req.Offset)
	if err != nil {
		return Result{}, err
	}
	best, total, err := rank(ctx, s, views, req, limit)
	if err != nil {
		return Result{}, err
	}
	hits, err := page(views, best, req.Offset, limit)
	if err != nil {
		return Result{}, err
	}
	return Result{TotalHits: total, Hits: hits}, nil
}

// rank parses req's query and returns the best limit+offset hits, best
// first, with the total.
func rank(ctx context.Context, s *schema.Schema, views []SegmentView, req Request, limit int) ([]scored, int, error) {
	q, err := Parse(s, req.Query)
	if err != nil {
		return nil, 0, err
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, fmt.Errorf("search: %w", err)
	}
	window := limit + req.Offset
	var top *topK
	var total int
	switch q := q.(type) {
	case *TextQuery:
		top, total, err = searchText(ctx, s, views, q, window)
	case *DenseQuery:
		top, total, err = searchDense(ctx, views, q)
	case *SparseQuery:
		if useSeismic(q) {
			top, total, err = searchSeismic(ctx, views, q, window)
		} else {
			top, total, err = searchSparse(ctx, views, q, window)
		}
	}
	if err != nil {
		return nil, 0, err
	}
	return top.sorted(), total, nil
}

// checkWindow validates limit and offset and returns the effective limit.
func checkWindow(limit, offset int) (int, error) {
	switch {
	case limit < 0:
		return 0, queryErr("limit must not be negative, got %d", limit)
	case offset < 0:
		return 0, queryErr("offset must not be negative, got %d", offset)
	case limit == 0:
		limit = DefaultLimit
	}
	if limit > MaxResultWindow || offset > MaxResultWindow-limit {
		return 0, queryErr("limit+offset must be at most %d, got %d+%d", MaxResultWindow, limit, offset)
	}
	return limit, nil
}

// page returns hits[offset:offset+limit] with their stored fields.
func page(views []SegmentView, best []scored, offset, limit int) ([]Hit, error) {
	if offset >= len(best) {
		return []Hit{}, nil
	}
	best = best[offset:min(len(best), offset+limit)]
	hits := make([]Hit, len(best))
	for i, b := range best {
		fields, err := views[b.view].Segment.StoredDocument(b.doc)
		if err != nil {
			return nil, fmt.Errorf("search: segment view %d: stored document %d: %w", b.view, b.doc, err)
		}
		hits[i] = Hit{Segment: b.view, Doc: b.doc, Score: b.score, Fields: fields}
	}
	return hits, nil
}
