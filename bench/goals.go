package bench

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// peers are the engines ours is compared with, in report order.
var peers = []string{"bleve", "xapian", "lucene"}

// bestPeer returns the peer with the lowest median of get over the
// repetitions (a latency, time or size) and that median.
func (res *Result) bestPeer(get func(r *EngineRun) (float64, bool)) (string, spread) {
	return res.bestPeerBy(get, false)
}

// bestPeerBy is bestPeer, or with higher the peer with the highest
// median (a throughput).
func (res *Result) bestPeerBy(get func(r *EngineRun) (float64, bool), higher bool) (string, spread) {
	best, bs := "", spread{}
	for _, p := range peers {
		if !slices.Contains(res.Config.Engines, p) {
			continue
		}
		var vs []float64
		for _, rep := range res.Reps {
			if r := rep.Engines[p]; r != nil {
				if v, ok := get(r); ok {
					vs = append(vs, v)
				}
			}
		}
		s := newSpread(vs)
		if s.n > 0 && (best == "" || (!higher && s.med < bs.med) || (higher && s.med > bs.med)) {
			best, bs = p, s
		}
	}
	return best, bs
}

func (res *Result) oursSpread(get func(r *EngineRun) (float64, bool)) spread {
	var vs []float64
	for _, rep := range res.Reps {
		if r := rep.Engines["ours"]; r != nil {
			if v, ok := get(r); ok {
				vs = append(vs, v)
			}
		}
	}
	return newSpread(vs)
}

// classP50 reads one class's p50 in ms.
func classP50(class string) func(r *EngineRun) (float64, bool) {
	return func(r *EngineRun) (float64, bool) {
		d, ok := r.PerClass[class]
		return ms(d.P50), ok && d.N > 0
	}
}

// classes are the query classes in query order.
func (res *Result) classes() []string {
	var out []string
	seen := map[string]bool{}
	for _, q := range res.Queries {
		if c := ClassOf(q); !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// goalLines prints the ratio lines (ours against the faster peer
// of the same run, medians over the repetitions) with the peer named on a
// line of its own.
func (res *Result) goalLines() string {
	var b strings.Builder
	var best []string
	line := func(key string, get func(r *EngineRun) (float64, bool)) {
		p, ps := res.bestPeer(get)
		r := "n/a"
		if p != "" {
			r = ratioString(res.oursSpread(get), ps)
			best = append(best, key+"="+p)
		}
		fmt.Fprintf(&b, "ratio %s ours/best_peer: %s\n", key, r)
	}
	worstLine := func(key string, get func(class string) func(r *EngineRun) (float64, bool)) {
		// The worst class: the highest ours/best-peer ratio of class p50s.
		worst, worstClass, worstPeer := math.Inf(-1), "", ""
		for _, c := range res.classes() {
			p, ps := res.bestPeer(get(c))
			o := res.oursSpread(get(c))
			if p == "" || o.n == 0 || ps.med == 0 {
				continue
			}
			if r := o.med / ps.med; r > worst {
				worst, worstClass, worstPeer = r, c, p
			}
		}
		if worstClass == "" {
			fmt.Fprintf(&b, "ratio %s ours/best_peer: n/a\n", key)
			return
		}
		fmt.Fprintf(&b, "ratio %s ours/best_peer: %s\n", key, strconv.FormatFloat(worst, 'f', 2, 64))
		best = append(best, fmt.Sprintf("%s=%s on %q", key, worstPeer, worstClass))
	}
	line("search_p50", metricByKey("search_p50").get)
	worstLine("search_p50_worst_class", classP50)
	line("top10_p50", modeP50(ModeTop10))
	worstLine("top10_worst_class", func(c string) func(r *EngineRun) (float64, bool) { return modeClassP50(ModeTop10, c) })
	line("count_p50", modeP50(ModeCount))
	p, ps := res.bestPeerBy(metricByKey("ingest_docs_per_s").get, true)
	if p == "" {
		b.WriteString("ratio ingest_docs_per_s ours/best_peer: n/a\n")
	} else {
		fmt.Fprintf(&b, "ratio ingest_docs_per_s ours/best_peer: %s\n", ratioString(res.oursSpread(metricByKey("ingest_docs_per_s").get), ps))
		best = append(best, "ingest_docs_per_s="+p)
	}
	line("index_bytes_merged", metricByKey("index_bytes_merged").get)
	line("open_ms", metricByKey("open_ms").get)
	line("small_commit_p50", metricByKey("small_commit_p50").get)
	line("merge_ms", metricByKey("merge_ms").get)
	fmt.Fprintf(&b, "open_ms at %d segments: %s\n", res.manySegments(), res.oursSpread(metricByKey("open_ms_many").get).format(2))
	if len(best) > 0 {
		fmt.Fprintf(&b, "best peers: %s\n", strings.Join(best, ", "))
	}
	var before, after []float64
	for _, rep := range res.Reps {
		if r := rep.Engines["ours"]; r != nil && r.BPErr == "" && r.BPDocBefore > 0 {
			before = append(before, float64(r.BPDocBefore))
			after = append(after, float64(r.BPDocAfter))
		}
	}
	if len(before) == 0 {
		b.WriteString("bp doc-id bytes smaller: n/a\n")
	} else {
		bb, aa := newSpread(before), newSpread(after)
		fmt.Fprintf(&b, "bp doc-id bytes smaller: %.1f%%\n", 100*(1-aa.med/bb.med))
	}
	b.WriteString(res.bpShuffledLines())
	for _, p := range []string{"xapian", "bleve", "lucene"} {
		if o, ok := res.overlap(p); ok {
			fmt.Fprintf(&b, "top10 overlap with %s: %.2f\n", p, o)
		} else {
			fmt.Fprintf(&b, "top10 overlap with %s: n/a\n", p)
		}
	}
	return b.String()
}

// manySegments is the segment count of ours' many-commit index at open
// (the commit count when it was not measured).
func (res *Result) manySegments() int {
	for _, rep := range res.Reps {
		if r := rep.Engines["ours"]; r != nil && r.OpenManySegments > 0 {
			return r.OpenManySegments
		}
	}
	return res.Config.ManyCommits
}

// overlap is the median over the repetitions of the mean, over the queries
// either engine answers, of |top10(ours) ∩ top10(peer)| / max(|top10|).
func (res *Result) overlap(peer string) (float64, bool) {
	var vs []float64
	for _, rep := range res.Reps {
		o, p := rep.Engines["ours"], rep.Engines[peer]
		if o == nil || p == nil {
			continue
		}
		sum, n := 0.0, 0
		for _, q := range res.Queries {
			a, c := o.Top[q.Name], p.Top[q.Name]
			if len(a) == 0 && len(c) == 0 {
				continue
			}
			in := map[string]bool{}
			for _, id := range a {
				in[id] = true
			}
			common := 0
			for _, id := range c {
				if in[id] {
					common++
				}
			}
			sum += float64(common) / float64(max(len(a), len(c)))
			n++
		}
		if n > 0 {
			vs = append(vs, sum/float64(n))
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	return newSpread(vs).med, true
}

// queryTables prints the fixed queries' p50 and hit counts, then every
// class's p50/p99 and the overall figures.
func (res *Result) queryTables() string {
	var b strings.Builder
	engines := res.Config.Engines
	fmt.Fprintf(&b, "%-26s", "query (p50 ms; totalHits)")
	for _, e := range engines {
		fmt.Fprintf(&b, " %-26s", e)
	}
	b.WriteString("\n")
	for _, q := range res.Queries[:res.Fixed] {
		fmt.Fprintf(&b, "%-26s", q.Name)
		for _, e := range engines {
			var vs []float64
			hits := -1
			for _, rep := range res.Reps {
				if r := rep.Engines[e]; r != nil {
					vs = append(vs, ms(r.PerQuery[q.Name].P50))
					hits = r.Hits[q.Name]
				}
			}
			fmt.Fprintf(&b, " %-26s", fmt.Sprintf("%s; %d", newSpread(vs).format(3), hits))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	for _, m := range Modes {
		b.WriteString(res.classTable(m))
	}
	return b.String()
}

// modeNames are the modes' names in the search-benchmark-game.
var modeNames = map[Mode]string{ModeTop10: "TOP_10", ModeTop10Count: "TOP_10_COUNT", ModeCount: "COUNT"}

// classTable prints every class's p50/p99 in mode m and the overall
// figures.
func (res *Result) classTable(m Mode) string {
	var b strings.Builder
	engines := res.Config.Engines
	count := map[string]int{}
	for _, q := range res.Queries {
		count[ClassOf(q)]++
	}
	fmt.Fprintf(&b, "%-26s", modeNames[m]+": class (queries)")
	for _, e := range engines {
		fmt.Fprintf(&b, " %-26s", e+" p50 / p99 ms")
	}
	b.WriteString("\n")
	row := func(label string, get func(r *EngineRun) Dist) {
		fmt.Fprintf(&b, "%-26s", label)
		for _, e := range engines {
			var p50, p99 []float64
			for _, rep := range res.Reps {
				if r := rep.Engines[e]; r != nil {
					if d := get(r); d.N > 0 {
						p50 = append(p50, ms(d.P50))
						p99 = append(p99, ms(d.P99))
					}
				}
			}
			cell := "n/a"
			if len(p50) > 0 {
				cell = fmt.Sprintf("%.3f / %.3f", newSpread(p50).med, newSpread(p99).med)
			}
			fmt.Fprintf(&b, " %-26s", cell)
		}
		b.WriteString("\n")
	}
	classes := res.classes()
	sort.SliceStable(classes, func(i, j int) bool { return count[classes[i]] < count[classes[j]] })
	for _, c := range classes {
		row(fmt.Sprintf("%s (%d)", c, count[c]), func(r *EngineRun) Dist { return r.ModeClass[m][c] })
	}
	row(fmt.Sprintf("all (%d)", len(res.Queries)), func(r *EngineRun) Dist { return r.ModeSearch[m] })
	b.WriteString("\n")
	return b.String()
}

// checkLines prints the hit-count check over every engine and query, and
// the token-stream hash check.
func (res *Result) checkLines() string {
	var b strings.Builder
	engines := res.Config.Engines
	if len(engines) > 1 {
		if len(res.Mismatches) == 0 {
			fmt.Fprintf(&b, "totalHits check: %s agree on all %d queries in every repetition\n", strings.Join(engines, ", "), len(res.Queries))
		} else {
			for i, m := range res.Mismatches {
				if i == 20 {
					fmt.Fprintf(&b, "totalHits MISMATCH: ... %d more\n", len(res.Mismatches)-i)
					break
				}
				fmt.Fprintf(&b, "totalHits MISMATCH: %s\n", m)
			}
		}
	}
	for _, p := range []string{"xapian", "lucene"} {
		if res.TokenHash == "" {
			break
		}
		for _, rep := range res.Reps {
			r := rep.Engines[p]
			if r == nil || r.TokenHash == "" {
				continue
			}
			verdict := "match"
			if r.TokenHash != res.TokenHash || r.TokenDocs != len(res.Corpus.Docs) {
				verdict = "MISMATCH"
			}
			fmt.Fprintf(&b, "token-stream hash: ours (engine/analysis) %s over %d documents, %s (read back from its index) %s over %d documents: %s\n",
				res.TokenHash, len(res.Corpus.Docs), p, r.TokenHash, r.TokenDocs, verdict)
			break
		}
	}
	return b.String()
}

// modeP50 reads the overall p50 in ms of one mode.
func modeP50(m Mode) func(r *EngineRun) (float64, bool) {
	return func(r *EngineRun) (float64, bool) {
		d, ok := r.ModeSearch[m]
		return ms(d.P50), ok && d.N > 0
	}
}

// modeClassP50 reads one class's p50 in ms in one mode.
func modeClassP50(m Mode, class string) func(r *EngineRun) (float64, bool) {
	return func(r *EngineRun) (float64, bool) {
		d, ok := r.ModeClass[m][class]
		return ms(d.P50), ok && d.N > 0
	}
}
