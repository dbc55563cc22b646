package search

import (
	"math"
	"sort"

	"github.com/summadev/summa/engine/analysis"
	"github.com/summadev/summa/engine/schema"
)

// bruteDoc is one corpus document as the brute-force evaluator sees it:
// per field, its index terms in position order (tokenized fields) or its
// exact terms.
type bruteDoc struct {
	// terms holds, per field ordinal, the document's terms.
	terms [][]string
	// positions holds, per field ordinal, each term's position.
	positions [][]uint32
}

// brute evaluates text queries by scanning every document, written
// independently of the executor to check it.
type brute struct {
	// schema is the corpus schema.
	schema *schema.Schema
	// docs holds every document, deleted ones included.
	docs []bruteDoc
	// deleted holds the global indices of deleted documents.
	deleted map[int]bool
	// dfs caches document frequencies by field and term.
	dfs map[bruteKey]uint64
}

// bruteKey names one term of one field.
type bruteKey struct {
	field int
	term  string
}

func newBrute(c *corpus, deleted map[int]bool) *brute {
	b := &brute{schema: c.schema, deleted: deleted, dfs: map[bruteKey]uint64{}}
	for _, d := range c.docs {
		bd := bruteDoc{terms: make([][]string, len(c.schema.Fields)), positions: make([][]uint32, len(c.schema.Fields))}
		for f := range c.schema.Fields {
			fld := &c.schema.Fields[f]
			if fld.IsTokenized() {
				for _, s := range d.Fields[f].Strings {
					analysis.Tokenize(s, func(t string, pos uint32) {
						bd.terms[f] = append(bd.terms[f], t)
						bd.positions[f] = append(bd.positions[f], pos)
					})
				}
			} else {
				bd.terms[f] = fld.ExactTerms(&d.Fields[f])
			}
		}
		b.docs = append(b.docs, bd)
	}
	return b
}

// freq counts the occurrences of a clause's term or phrase in one field.
func (d *bruteDoc) freq(f int, c *Clause) uint32 {
	var n uint32
	terms, pos := d.terms[f], d.positions[f]
	for i := range terms {
		if terms[i] != c.Terms[0] {
			continue
		}
		ok := true
		for k := 1; k < len(c.Terms) && ok; k++ {
			ok = false
			for j := range terms {
				if pos[j] == pos[i]+c.Offsets[k] && terms[j] == c.Terms[k] {
					ok = true
				}
			}
		}
		if ok {
			n++
		}
	}
	return n
}

// eval returns the score of every matching live document by global index.
func (b *brute) eval(q *TextQuery) map[int]float64 {
	live := uint64(len(b.docs) - len(b.deleted))
	out := map[int]float64{}
	musts := 0
	for _, c := range q.Clauses {
		if c.Occur == Must {
			musts++
		}
	}
	for i := range b.docs {
		if b.deleted[i] {
			continue
		}
		score, mustHit, shouldHit, notHit := 0.0, 0, false, false
		for ci := range q.Clauses {
			c := &q.Clauses[ci]
			matched := false
			for _, f := range c.Fields {
				tf := b.docs[i].freq(f, c)
				if tf == 0 {
					continue
				}
				matched = true
				score += b.score(c, f, tf, len(b.docs[i].terms[f]), live)
			}
			switch {
			case matched && c.Occur == Must:
				mustHit++
			case matched && c.Occur == Should:
				shouldHit = true
			case matched && c.Occur == MustNot:
				notHit = true
			}
		}
		if !notHit && mustHit == musts && (musts > 0 || shouldHit) {
			out[i] = score
		}
	}
	return out
}

// score is the textbook BM25 of tf occurrences in a field of length dl.
func (b *brute) score(c *Clause, f int, tf uint32, dl int, live uint64) float64 {
	var idfSum float64
	for k := range c.Terms {
		df := min(b.df(f, c.Terms[k]), live)
		idfSum += math.Log(1 + (float64(live)-float64(df)+0.5)/(float64(df)+0.5))
	}
	const k1, bb = 1.2, 0.75
	x := float64(tf)
	if !b.schema.Fields[f].IsTokenized() {
		return idfSum * x * (k1 + 1) / (x + k1)
	}
	var total, with float64
	for i := range b.docs {
		if n := len(b.docs[i].terms[f]); n > 0 {
			total += float64(n)
			with++
		}
	}
	avg := total / with
	return idfSum * x * (k1 + 1) / (x + k1*(1-bb+bb*float64(dl)/avg))
}

// df counts the documents holding term in field f; deleted documents
// count, as they do in postings.
func (b *brute) df(f int, term string) uint64 {
	key := bruteKey{f, term}
	if df, ok := b.dfs[key]; ok {
		return df
	}
	var df uint64
	for i := range b.docs {
		for _, t := range b.docs[i].terms[f] {
			if t == term {
				df++
				break
			}
		}
	}
	b.dfs[key] = df
	return df
}

// ranked orders brute-force results like the executor: score descending,
// then corpus index (the executor's view then doc order).
func ranked(m map[int]float64) []int {
	out := make([]int, 0, len(m))
	for i := range m {
		out = append(out, i)
	}
	sort.Slice(out, func(a, b int) bool {
		if m[out[a]] != m[out[b]] {
			return m[out[a]] > m[out[b]]
		}
		return out[a] < out[b]
	})
	return out
}
