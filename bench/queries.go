package bench

import (
	"math"
	"sort"
	"strings"

	"github.com/summadev/summa/engine/analysis"
)

// QuerySet returns the fixed query set of the corpus. For linux-doc it
// was chosen from the full corpus (24,650 sections), with total hits:
// the 17,070 (high), kernel 6,395 (high), interrupt 1,615 (medium), futex
// 29 (low), mutex OR spinlock 306, dma AND buffer 161, "page table" 107,
// "the kernel" 2,371. For the fallback corpus it is derived from
// document frequencies.
func QuerySet(c *Corpus) []Query {
	if c.LinuxDoc {
		return []Query{
			{Name: "high: the", Kind: KindTerm, Terms: []string{"the"}},
			{Name: "high: kernel", Kind: KindTerm, Terms: []string{"kernel"}},
			{Name: "medium: interrupt", Kind: KindTerm, Terms: []string{"interrupt"}},
			{Name: "low: futex", Kind: KindTerm, Terms: []string{"futex"}},
			{Name: "or: mutex spinlock", Kind: KindOr, Terms: []string{"mutex", "spinlock"}},
			{Name: "and: +dma +buffer", Kind: KindAnd, Terms: []string{"dma", "buffer"}},
			{Name: `phrase: "page table"`, Kind: KindPhrase, Terms: []string{"page", "table"}},
			{Name: `phrase: "the kernel"`, Kind: KindPhrase, Terms: []string{"the", "kernel"}},
		}
	}
	return derivedQueries(c)
}

// derivedQueries picks terms by document frequency: the most frequent,
// one near 5% and one near 0.1% of documents, an OR and an AND of terms
// near 5%, and the most frequent adjacent pair of terms near 1-20%.
func derivedQueries(c *Corpus) []Query {
	df := map[string]int{}
	for i := range c.Docs {
		seen := map[string]bool{}
		analysis.Tokenize(c.Docs[i].Title+"\n"+c.Docs[i].Body, func(t string, _ uint32) {
			if !seen[t] {
				seen[t] = true
				df[t]++
			}
		})
	}
	type tf struct {
		t  string
		df int
	}
	var terms []tf
	for t, n := range df {
		terms = append(terms, tf{t, n})
	}
	sort.Slice(terms, func(i, j int) bool {
		if terms[i].df != terms[j].df {
			return terms[i].df > terms[j].df
		}
		return terms[i].t < terms[j].t
	})
	n := float64(len(c.Docs))
	alpha := func(s string) bool {
		if len(s) < 4 {
			return false
		}
		for _, r := range s {
			if r < 'a' || r > 'z' {
				return false
			}
		}
		return true
	}
	near := func(target float64, skip map[string]bool) string {
		best, bestD := "", math.Inf(1)
		for _, x := range terms {
			if !alpha(x.t) || skip[x.t] {
				continue
			}
			if d := math.Abs(float64(x.df) - target); d < bestD {
				best, bestD = x.t, d
			}
		}
		return best
	}
	high := terms[0].t
	used := map[string]bool{high: true}
	medium := near(0.05*n, used)
	used[medium] = true
	low := near(max(2, 0.001*n), used)
	used[low] = true
	orA := near(0.03*n, used)
	used[orA] = true
	orB := near(0.03*n, used)
	used[orB] = true
	andA := near(0.08*n, used)
	used[andA] = true
	andB := near(0.08*n, used)
	// Most frequent adjacent pair of mid-frequency terms.
	mid := func(t string) bool { d := float64(df[t]); return alpha(t) && d >= 0.01*n && d <= 0.2*n }
	pairs := map[[2]string]int{}
	for i := range c.Docs {
		prev := ""
		var prevPos uint32
		analysis.Tokenize(c.Docs[i].Body, func(t string, pos uint32) {
			if prev != "" && pos == prevPos+1 && mid(prev) && mid(t) && prev != t {
				pairs[[2]string{prev, t}]++
			}
			prev, prevPos = t, pos
		})
	}
	var phrase [2]string
	bestN := 0
	for p, k := range pairs {
		if k > bestN || (k == bestN && p[0]+" "+p[1] < phrase[0]+" "+phrase[1]) {
			phrase, bestN = p, k
		}
	}
	if high == "" || medium == "" || low == "" || orA == "" || orB == "" || andA == "" || andB == "" {
		return []Query{{Name: "high: " + high, Kind: KindTerm, Terms: []string{high}}}
	}
	qs := []Query{
		{Name: "high: " + high, Kind: KindTerm, Terms: []string{high}},
		{Name: "medium: " + medium, Kind: KindTerm, Terms: []string{medium}},
		{Name: "low: " + low, Kind: KindTerm, Terms: []string{low}},
		{Name: "or: " + orA + " " + orB, Kind: KindOr, Terms: []string{orA, orB}},
		{Name: "and: +" + andA + " +" + andB, Kind: KindAnd, Terms: []string{andA, andB}},
	}
	if bestN > 0 {
		qs = append(qs, Query{Name: `phrase: "` + phrase[0] + " " + phrase[1] + `"`, Kind: KindPhrase, Terms: phrase[:]})
	}
	return qs
}

// The classes of the held-out heading queries (each fixed query is a class
// of its own, named by its Name).
const (
	ClassHeadingOr     = "headings: or"
	ClassHeadingAnd    = "headings: and"
	ClassHeadingPhrase = "headings: phrase"
)

// ClassOf is q's class: q.Class, or its name for the fixed queries.
func ClassOf(q Query) string {
	if q.Class != "" {
		return q.Class
	}
	return q.Name
}

// headingTerms are the analyzed terms of a heading usable as a query (2
// to 6 terms), or nil.
func headingTerms(title string) []string {
	var ts []string
	analysis.Tokenize(title, func(t string, _ uint32) { ts = append(ts, t) })
	if len(ts) < 2 || len(ts) > 6 {
		return nil
	}
	return ts
}

// holdOut removes about n documents whose headings make distinct queries,
// evenly spread over docs, and returns the rest and the removed ones.
func holdOut(docs []Doc, n int) (kept, held []Doc) {
	if n <= 0 {
		return docs, nil
	}
	seen := map[string]bool{}
	var cand []int
	for i := range docs {
		ts := headingTerms(docs[i].Title)
		if ts == nil {
			continue
		}
		k := strings.Join(ts, " ")
		if !seen[k] {
			seen[k] = true
			cand = append(cand, i)
		}
	}
	n = min(n, len(cand))
	pick := make(map[int]bool, n)
	for j := 0; j < n; j++ {
		pick[cand[j*len(cand)/n]] = true
	}
	kept = make([]Doc, 0, len(docs)-n)
	for i := range docs {
		if pick[i] {
			held = append(held, docs[i])
		} else {
			kept = append(kept, docs[i])
		}
	}
	return kept, held
}

// HeadingQueries turns the headings of the held-out sections (which are
// not indexed) into queries of their terms, rotating OR, AND and phrase.
func HeadingQueries(c *Corpus) []Query {
	var qs []Query
	for i := range c.HeldOut {
		ts := headingTerms(c.HeldOut[i].Title)
		if ts == nil {
			continue
		}
		q := Query{Terms: ts}
		switch len(qs) % 3 {
		case 0:
			q.Kind, q.Class = KindOr, ClassHeadingOr
		case 1:
			q.Kind, q.Class = KindAnd, ClassHeadingAnd
		default:
			q.Kind, q.Class = KindPhrase, ClassHeadingPhrase
		}
		q.Name = "heading " + string(q.Kind) + ": " + strings.Join(ts, " ")
		qs = append(qs, q)
	}
	return qs
}
