package search

import (
	"context"
	"fmt"

	"github.com/summadev/summa/engine/schema"
)

// A query of one term in one field asks for the documents of one postings
// list, so its exact total needs no scoring: it is the term's document
// frequency in each view, less the deleted documents of the view that hold
// the term. searchTermExact takes that total from the dictionary (and,
// where a view has deletions, from the deleted documents looked up in the
// postings), and ranks with block-max pruning, which returns the
// exhaustive top-k. An exact request (no totalHitsThreshold) of one
// frequent term then costs what a pruned one costs. Lucene 8 scores every
// match in that case; its count() API takes the same shortcut.

// pruneExact turns on the pruned evaluation of exact requests
// (searchTermExact, and searchPrunedPhrase with threshold 0); tests turn
// it off to compute their exhaustive references.
var pruneExact = true

// searchTermExact ranks q with block-max pruning and an exact total when
// q is one term in one field, every view has block maxima and the term has
// at least bmpMinPostings postings. It returns a nil topK otherwise.
func searchTermExact(ctx context.Context, s *schema.Schema, views []SegmentView, q Query, window int) (*topK, int, Relation, error) {
	tq, ok := q.(*TextQuery)
	if !pruneExact || !ok || len(tq.Clauses) != 1 || len(tq.Clauses[0].Fields) != 1 ||
		tq.Clauses[0].Occur == MustNot || tq.Clauses[0].IsPhrase() {
		return nil, 0, EqualTo, nil
	}
	c := tq.Clauses[0]
	c.Occur = Should // one clause: must and should match and score alike
	live, _ := viewSizes(views)
	if live == 0 {
		return nil, 0, EqualTo, nil
	}
	one := &TextQuery{Clauses: []Clause{c}}
	bq, err := planBMPText(views, one, live, func(f int) bool { return s.Fields[f].IsTokenized() })
	if err != nil || bq == nil || bq.postings() < bmpMinPostings {
		return nil, 0, EqualTo, err
	}
	top, found, complete, err := bq.run(ctx, views, window)
	if err != nil || complete {
		return top, found, EqualTo, err
	}
	total, err := liveTermDocs(ctx, views, c.Fields[0], c.Terms[0], bq.terms[0].docFreqs())
	if err != nil {
		return nil, 0, EqualTo, err
	}
	return top, total, EqualTo, nil
}

// docFreqs returns the term's document frequency in each view (0 where
// the view lacks it).
func (t *bmpTerm) docFreqs() []uint32 {
	df := make([]uint32, len(t.recs))
	for vi, rec := range t.recs {
		if rec != nil {
			df[vi] = rec.DocFreq()
		}
	}
	return df
}

// liveTermDocs returns the number of live documents of views that hold
// term in field, given the term's document frequency in each view: the
// frequency where nothing is deleted, and otherwise the frequency less the
// deleted documents found in the term's postings.
func liveTermDocs(ctx context.Context, views []SegmentView, field int, term string, df []uint32) (int, error) {
	t := &ticker{ctx: ctx}
	total := 0
	for vi := range views {
		v := &views[vi]
		if df[vi] == 0 {
			continue
		}
		if v.liveDocs() == uint64(v.Segment.NumDocs()) {
			total += int(df[vi])
			continue
		}
		gone, err := deletedTermDocs(t, v, field, term)
		if err != nil {
			return 0, fmt.Errorf("search: segment view %d: %w", vi, err)
		}
		total += int(df[vi]) - gone
	}
	return total, nil
}

// deletedTermDocs counts the deleted documents of v that hold term in
// field, advancing the term's postings to each deleted document in turn.
func deletedTermDocs(t *ticker, v *SegmentView, field int, term string) (int, error) {
	pl, err := v.Segment.Postings(field, term)
	if err != nil || pl == nil {
		return 0, err
	}
	defer pl.Release()
	n := 0
	it := v.Deleted.Iterator()
	for it.HasNext() {
		if err := t.check(); err != nil {
			return 0, err
		}
		d := it.Next()
		if !pl.Advance(d) {
			break
		}
		if pl.Doc() == d {
			n++
		}
	}
	return n, pl.Err()
}
