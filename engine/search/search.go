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
	// TotalHitsThreshold lets TotalHits be a lower bound once it reaches
	// the threshold, as Lucene's totalHitsThreshold does: 0 (the default)
	// keeps it exact. Above 0, a disjunctive text query or an exact sparse
	// query whose match count provably reaches the threshold runs with
	// block-max pruning (same hits, same scores) and reports TotalHits as a
	// lower bound (TotalHitsRelation AtLeast, TotalHits >= the threshold).
	TotalHitsThreshold int
	// SkipFields leaves Hit.Fields nil instead of reading the stored
	// fields (callers that want ids and scores only, e.g. benchmarks of the
	// evaluators).
	SkipFields bool
	// CountOnly asks for TotalHits alone, always exact: no hit is
	// returned and no document is scored. Limit and Offset are checked
	// but select nothing; TotalHitsThreshold is ignored.
	CountOnly bool
}

// Relation says how Result.TotalHits relates to the number of matches.
type Relation uint8

const (
	// EqualTo means TotalHits is exact.
	EqualTo Relation = iota
	// AtLeast means TotalHits is a lower bound.
	AtLeast
)

// String returns "eq" or "gte", the names the HTTP API uses.
func (r Relation) String() string {
	if r == AtLeast {
		return "gte"
	}
	return "eq"
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
	// TotalHitsRelation says whether TotalHits is exact (see
	// Request.TotalHitsThreshold).
	TotalHitsRelation Relation
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
	if req.TotalHitsThreshold < 0 {
		return Result{}, queryErr("totalHitsThreshold must not be negative, got %d", req.TotalHitsThreshold)
	}
	if req.CountOnly {
		total, err := count(ctx, s, views, req)
		if err != nil {
			return Result{}, err
		}
		return Result{TotalHits: total, Hits: []Hit{}}, nil
	}
	best, total, rel, err := rank(ctx, s, views, req, limit)
	if err != nil {
		return Result{}, err
	}
	hits, err := page(views, best, req.Offset, limit, !req.SkipFields)
	if err != nil {
		return Result{}, err
	}
	return Result{TotalHits: total, TotalHitsRelation: rel, Hits: hits}, nil
}

// rank parses req's query and returns the best limit+offset hits, best
// first, with the total and how exact it is.
func rank(ctx context.Context, s *schema.Schema, views []SegmentView, req Request, limit int) ([]scored, int, Relation, error) {
	q, err := Parse(s, req.Query)
	if err != nil {
		return nil, 0, EqualTo, err
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, EqualTo, fmt.Errorf("search: %w", err)
	}
	window := limit + req.Offset
	var top *topK
	var total int
	rel := EqualTo
	// Block-max pruning replaces exact evaluation only (not Seismic).
	if sq, ok := q.(*SparseQuery); !ok || !useSeismic(sq) {
		top, total, rel, err = searchPruned(ctx, s, views, q, window, req.TotalHitsThreshold)
	}
	if top == nil && err == nil && req.TotalHitsThreshold == 0 {
		top, total, rel, err = searchTermExact(ctx, s, views, q, window)
	}
	if top == nil && err == nil && req.TotalHitsThreshold == 0 {
		top, total, rel, err = searchPrunedCounted(ctx, s, views, q, window)
	}
	if top == nil && err == nil {
		top, total, rel, err = searchPrunedPhrase(ctx, s, views, q, window, req.TotalHitsThreshold)
	}
	if top != nil || err != nil {
		return rankDone(top, total, rel, err)
	}
	switch q := q.(type) {
	case *TextQuery:
		top, total, err = searchText(ctx, s, views, q, window)
	case *DenseQuery:
		top, total, err = searchDense(ctx, s, views, q)
	case *SparseQuery:
		if useSeismic(q) {
			top, total, err = searchSeismic(ctx, views, q, window)
		} else {
			top, total, err = searchSparse(ctx, views, q, window)
		}
	}
	return rankDone(top, total, EqualTo, err)
}

// rankDone returns rank's results.
func rankDone(top *topK, total int, rel Relation, err error) ([]scored, int, Relation, error) {
	if err != nil {
		return nil, 0, EqualTo, err
	}
	return top.sorted(), total, rel, nil
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

// page returns hits[offset:offset+limit], with their stored fields when
// fields is true.
func page(views []SegmentView, best []scored, offset, limit int, fields bool) ([]Hit, error) {
	if offset >= len(best) {
		return []Hit{}, nil
	}
	best = best[offset:min(len(best), offset+limit)]
	hits := make([]Hit, len(best))
	for i, b := range best {
		if !fields {
			hits[i] = Hit{Segment: b.view, Doc: b.doc, Score: b.score}
			continue
		}
		fields, err := views[b.view].Segment.StoredDocument(b.doc)
		if err != nil {
			return nil, fmt.Errorf("search: segment view %d: stored document %d: %w", b.view, b.doc, err)
		}
		hits[i] = Hit{Segment: b.view, Doc: b.doc, Score: b.score, Fields: fields}
	}
	return hits, nil
}
