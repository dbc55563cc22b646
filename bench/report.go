package bench

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// metric is one reported number of an engine run.
type metric struct {
	// key names the metric in ratio lines.
	key string
	// unit and fmt print it.
	unit string
	prec int
	// ratio prints a "ratio KEY ours/bleve" line.
	ratio bool
	// get extracts it; ok is false when the run has no value.
	get func(r *EngineRun) (v float64, ok bool)
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func always(f func(r *EngineRun) float64) func(r *EngineRun) (float64, bool) {
	return func(r *EngineRun) (float64, bool) { return f(r), true }
}

var metrics = []metric{
	{"ingest_docs_per_s", "docs/s", 0, true, always(func(r *EngineRun) float64 { return r.IngestDocsPerS })},
	{"ingest_mb_per_s", "MB/s", 2, true, always(func(r *EngineRun) float64 { return r.IngestMBPerS })},
	{"commit_p50", "ms", 2, true, always(func(r *EngineRun) float64 { return ms(r.Commit.P50) })},
	{"commit_p99", "ms", 2, true, always(func(r *EngineRun) float64 { return ms(r.Commit.P99) })},
	{"small_commit_p50", "ms", 2, true, always(func(r *EngineRun) float64 { return ms(r.SmallCommit.P50) })},
	{"search_p50", "ms", 3, true, always(func(r *EngineRun) float64 { return ms(r.Search.P50) })},
	{"search_p99", "ms", 3, true, always(func(r *EngineRun) float64 { return ms(r.Search.P99) })},
	{"qps", "q/s", 0, true, always(func(r *EngineRun) float64 { return r.QPS })},
	{"index_bytes", "MB", 2, true, always(func(r *EngineRun) float64 { return float64(r.IndexBytes) / 1e6 })},
	{"index_bytes_merged", "MB", 2, true, always(func(r *EngineRun) float64 { return float64(r.MergedBytes) / 1e6 })},
	{"open_ms", "ms", 2, true, always(func(r *EngineRun) float64 { return ms(r.Open) })},
	{"open_ms_many", "ms", 2, false, func(r *EngineRun) (float64, bool) { return ms(r.OpenMany), r.OpenMany > 0 }},
	{"merge_ms", "ms", 1, true, func(r *EngineRun) (float64, bool) { return ms(r.Merge), r.MergeErr == "" }},
	{"ingest_prepare_s", "s", 2, false, always(func(r *EngineRun) float64 { return r.Prepare.Seconds() })},
	{"ingest_cpu_s", "s", 2, true, always(func(r *EngineRun) float64 { return r.IngestCPU.Seconds() })},
	{"merge_cpu_s", "s", 2, true, func(r *EngineRun) (float64, bool) { return r.MergeCPU.Seconds(), r.MergeErr == "" }},
	{"search_cpu_ms", "ms/q", 3, true, always(func(r *EngineRun) float64 { return ms(r.SearchCPU) })},
	{"ingest_alloc_mb", "MB", 0, false, always(func(r *EngineRun) float64 { return r.AllocMB })},
	{"segments_after_ingest", "", 0, false, always(func(r *EngineRun) float64 { return float64(r.IngestSegments) })},
	{"segments_at_open", "", 0, false, always(func(r *EngineRun) float64 { return float64(r.OpenSegments) })},
}

func metricByKey(key string) metric {
	for _, m := range metrics {
		if m.key == key {
			return m
		}
	}
	panic("bench: no metric " + key)
}

// spread is the median and range of one metric over the repetitions.
type spread struct {
	med, lo, hi float64
	n           int
}

func newSpread(vs []float64) spread {
	if len(vs) == 0 {
		return spread{}
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{med: med, lo: s[0], hi: s[len(s)-1], n: len(s)}
}

func (s spread) format(prec int) string {
	if s.n == 0 {
		return "n/a"
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	if s.n == 1 {
		return f(s.med)
	}
	return fmt.Sprintf("%s (%s–%s)", f(s.med), f(s.lo), f(s.hi))
}

func (res *Result) engineSpread(engine string, m metric) spread {
	var vs []float64
	for _, rep := range res.Reps {
		if r := rep.Engines[engine]; r != nil {
			if v, ok := m.get(r); ok {
				vs = append(vs, v)
			}
		}
	}
	return newSpread(vs)
}

func (res *Result) floorSpread(get func(Floor) float64) spread {
	var vs []float64
	for _, rep := range res.Reps {
		vs = append(vs, get(rep.Floor))
	}
	return newSpread(vs)
}

func (res *Result) httpSpread(get func(*HTTPRun) float64) spread {
	var vs []float64
	for _, rep := range res.Reps {
		if rep.HTTP != nil && rep.HTTP.Err == "" {
			vs = append(vs, get(rep.HTTP))
		}
	}
	return newSpread(vs)
}

func ratioString(a, b spread) string {
	if a.n == 0 || b.n == 0 || b.med == 0 {
		return "n/a"
	}
	return strconv.FormatFloat(a.med/b.med, 'f', 2, 64)
}

// Machine describes the host.
func Machine() string {
	mem := "unknown memory"
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) >= 2 && fs[0] == "MemTotal:" {
				if kb, err := strconv.ParseFloat(fs[1], 64); err == nil {
					mem = fmt.Sprintf("%.1f GiB memory", kb/(1<<20))
				}
			}
		}
		f.Close()
	}
	cpu := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				if i := strings.IndexByte(l, ':'); i >= 0 {
					cpu = ", " + strings.TrimSpace(l[i+1:])
				}
				break
			}
		}
	}
	return fmt.Sprintf("%d cores (GOMAXPROCS %d)%s, %s, %s %s/%s", runtime.NumCPU(), runtime.GOMAXPROCS(0), cpu, mem, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// moduleVersion returns the version of a dependency of this binary.
func moduleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown version)"
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "(unknown version)"
}

// Text renders the report: header, table, ratio lines, per-query table,
// hit-count check, HTTP and BP lines.
func (res *Result) Text(command string) string {
	var b strings.Builder
	hasOurs := slices.Contains(res.Config.Engines, "ours")
	res.writeHeader(&b, command)
	cf := res.writeFloor(&b)
	res.writeMetricTable(&b)
	res.writeRatios(&b, cf)
	if hasOurs {
		b.WriteString(res.labelLines(res.goalLines()))
	}
	b.WriteString("\n")
	b.WriteString(res.queryTables())
	b.WriteString(res.labelLines(res.checkLines()))
	res.writeHTTP(&b)
	if hasOurs {
		b.WriteString(res.bpLine())
		b.WriteString("\n")
	}
	b.WriteString(res.labelLines(res.sizeLines()))
	fmt.Fprintf(&b, "elapsed: %s\n", res.Elapsed.Round(time.Second))
	return b.String()
}

// writeHeader writes the run's mode, command, machine, engines, corpus
// and cadence.
func (res *Result) writeHeader(b *strings.Builder, command string) {
	cfg := res.Config
	mode := "full"
	if cfg.Quick {
		mode = "quick"
	}
	fmt.Fprintf(b, "summa-bench (%s mode, %d repetitions; %s)\n", mode, len(res.Reps), res.Started.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(b, "command: %s\n", command)
	fmt.Fprintf(b, "machine: %s\n", Machine())
	fmt.Fprintf(b, "engines: ours (%s), %s (scorch, BM25)", "this tree", bleveVersion())
	if slices.Contains(cfg.Engines, "xapian") {
		fmt.Fprintf(b, ", xapian (%s, glass, BM25 k1=1.2 b=0.75; a C++ driver process timing itself)", XapianVersion())
	}
	if slices.Contains(cfg.Engines, "lucene") {
		fmt.Fprintf(b, ", lucene (%s, BM25Similarity k1=1.2 b=0.75; a Java 17 driver process timing itself after a JIT warm-up of %s rounds)", LuceneVersion(), res.warmRounds())
	}
	b.WriteString("\n")
	if res.XapianSkipped != "" {
		fmt.Fprintf(b, "xapian: skipped: %s\n", res.XapianSkipped)
	}
	if res.LuceneSkipped != "" {
		fmt.Fprintf(b, "lucene: skipped: %s\n", res.LuceneSkipped)
	}
	fmt.Fprintf(b, "corpus: %s: %d documents, %.2f MB text, %d files; %d sections held out (not indexed) for the heading queries\n",
		res.Corpus.Name, len(res.Corpus.Docs), res.Corpus.MB(), res.Corpus.Files, len(res.Corpus.HeldOut))
	fmt.Fprintf(b, "cadence: a commit every %d documents; many-segment index: %d commits; %d search rounds of the %d fixed queries, %d of the %d heading queries; %d one-document commits; %d open cycles; open at many segments: %d one-document commits\n",
		cfg.CommitEvery, cfg.OpenCommits, cfg.SearchRounds, res.Fixed, cfg.HeadingRounds, len(res.Queries)-res.Fixed, cfg.SmallCommits, max(1, cfg.OpenRounds), cfg.ManyCommits)
	fmt.Fprintf(b, "disk: %s\n", cfg.WorkDir)
	fmt.Fprintf(b, "\nvalues: median (min–max) over the repetitions\n\n")

}

// writeFloor writes the disk's physical floor and returns the commit floor.
func (res *Result) writeFloor(b *strings.Builder) spread {
	cfg := res.Config
	seq := res.floorSpread(func(f Floor) float64 { return f.SeqWriteMBps })
	fs := res.floorSpread(func(f Floor) float64 { return ms(f.FsyncSmall.P50) })
	fs99 := res.floorSpread(func(f Floor) float64 { return ms(f.FsyncSmall.P99) })
	rn := res.floorSpread(func(f Floor) float64 { return ms(f.RenameDirSync.P50) })
	cf := res.floorSpread(func(f Floor) float64 { return ms(f.CommitFloor()) })
	fmt.Fprintf(b, "physical floor (%d MiB sequential write; %d small fsyncs)\n", cfg.FloorSeqMB, cfg.FloorSyncs)
	fmt.Fprintf(b, "  %-34s %s\n", "sequential write+fsync MB/s", seq.format(0))
	fmt.Fprintf(b, "  %-34s %s\n", "fsync 4 KiB new file p50 ms", fs.format(3))
	fmt.Fprintf(b, "  %-34s %s\n", "fsync 4 KiB new file p99 ms", fs99.format(3))
	fmt.Fprintf(b, "  %-34s %s\n", "rename + dir fsync p50 ms", rn.format(3))
	fmt.Fprintf(b, "  %-34s %s\n", "fsync_floor (fsync + rename) ms", cf.format(3))
	b.WriteString("\n")

	return cf
}

// writeMetricTable writes every metric per engine with ours' ratios.
func (res *Result) writeMetricTable(b *strings.Builder) {
	cfg := res.Config
	engines := cfg.Engines
	fmt.Fprintf(b, "%-22s %-7s", "metric", "unit")
	for _, e := range engines {
		fmt.Fprintf(b, " %-30s", e)
	}
	for _, e := range engines[1:] {
		fmt.Fprintf(b, " %-11s", engines[0]+"/"+e)
	}
	b.WriteString("\n")
	for _, m := range metrics {
		fmt.Fprintf(b, "%-22s %-7s", m.key, m.unit)
		var sp []spread
		for _, e := range engines {
			s := res.engineSpread(e, m)
			sp = append(sp, s)
			fmt.Fprintf(b, " %-30s", s.format(m.prec))
		}
		for _, o := range sp[1:] {
			fmt.Fprintf(b, " %-11s", ratioString(sp[0], o))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")

}

// writeRatios writes the ratio lines against Bleve and the fsync floor.
func (res *Result) writeRatios(b *strings.Builder, cf spread) {
	engines := res.Config.Engines
	ours, hasOurs, hasBleve := "ours", slices.Contains(engines, "ours"), slices.Contains(engines, "bleve")
	if hasOurs && hasBleve {
		for _, m := range metrics {
			if !m.ratio {
				continue
			}
			a, c := res.engineSpread(ours, m), res.engineSpread("bleve", m)
			r := ratioString(a, c)
			if r == "n/a" && m.key == "merge_ms" {
				r = "n/a (" + res.mergeErr() + ")"
			}
			fmt.Fprintf(b, "ratio %s ours/bleve: %s\n", m.key, r)
		}
	}
	if hasOurs {
		c50 := res.engineSpread(ours, metricByKey("commit_p50"))
		sc50 := res.engineSpread(ours, metricByKey("small_commit_p50"))
		fmt.Fprintf(b, "ratio commit_p50 ours/fsync_floor: %s\n", ratioString(c50, cf))
		fmt.Fprintf(b, "ratio small_commit_p50 ours/fsync_floor: %s\n", ratioString(sc50, cf))
	}
	b.WriteString("\n")

}

// writeHTTP writes the summa-server HTTP figures, or why they were skipped.
func (res *Result) writeHTTP(b *strings.Builder) {
	cfg := res.Config
	hasOurs, ours := slices.Contains(cfg.Engines, "ours"), "ours"
	// HTTP.
	if res.HTTPSkipped != "" {
		fmt.Fprintf(b, "http: skipped (%s)\n", res.HTTPSkipped)
	} else {
		var errs []string
		for i, rep := range res.Reps {
			if rep.HTTP != nil && rep.HTTP.Err != "" {
				errs = append(errs, fmt.Sprintf("rep %d: %s", i+1, rep.HTTP.Err))
			}
		}
		hd := res.httpSpread(func(h *HTTPRun) float64 { return h.IngestDocsPerS })
		hm := res.httpSpread(func(h *HTTPRun) float64 { return h.IngestMBPerS })
		hc := res.httpSpread(func(h *HTTPRun) float64 { return ms(h.Commit.P50) })
		hp := res.httpSpread(func(h *HTTPRun) float64 { return ms(h.Post.P50) })
		hs := res.httpSpread(func(h *HTTPRun) float64 { return ms(h.Search.P50) })
		nd := res.httpSpread(func(h *HTTPRun) float64 { return h.NDJSONMB })
		fmt.Fprintf(b, "http (summa-server, NDJSON POST /v1/indexes/%s/documents + POST commit every %d docs, %s MB of NDJSON):\n", IndexName, cfg.CommitEvery, nd.format(2))
		fmt.Fprintf(b, "  %-22s %s\n", "ingest docs/s", hd.format(0))
		fmt.Fprintf(b, "  %-22s %s\n", "ingest MB/s", hm.format(2))
		fmt.Fprintf(b, "  %-22s %s\n", "POST documents p50 ms", hp.format(2))
		fmt.Fprintf(b, "  %-22s %s\n", "commit p50 ms", hc.format(2))
		fmt.Fprintf(b, "  %-22s %s\n", "search p50 ms", hs.format(3))
		if hasOurs {
			fmt.Fprintf(b, "ratio ingest_docs_per_s http/ours: %s\n", ratioString(hd, res.engineSpread(ours, metricByKey("ingest_docs_per_s"))))
		}
		for _, e := range errs {
			fmt.Fprintf(b, "http error: %s\n", e)
		}
	}

}

func (res *Result) mergeErr() string {
	for _, rep := range res.Reps {
		if r := rep.Engines["bleve"]; r != nil && r.MergeErr != "" {
			return "bleve: " + r.MergeErr
		}
		if r := rep.Engines["ours"]; r != nil && r.MergeErr != "" {
			return "ours: " + r.MergeErr
		}
	}
	return "no value"
}

func (res *Result) bpLine() string {
	var before, after, docBefore, docAfter, secs []float64
	converged := true
	for _, rep := range res.Reps {
		r := rep.Engines["ours"]
		if r == nil {
			continue
		}
		if r.BPErr != "" {
			if strings.HasPrefix(r.BPErr, "bp: not available") {
				return "bp: not available yet"
			}
			return "bp: failed: " + strings.TrimPrefix(r.BPErr, "bp: ")
		}
		before = append(before, float64(r.BPBefore))
		after = append(after, float64(r.BPAfter))
		if r.BPDocBefore >= 0 {
			docBefore = append(docBefore, float64(r.BPDocBefore))
			docAfter = append(docAfter, float64(r.BPDocAfter))
		}
		converged = converged && r.BPConverged
		secs = append(secs, r.BPTime.Seconds())
	}
	if len(before) == 0 {
		return "bp: not available yet"
	}
	bb, aa := newSpread(before), newSpread(after)
	line := fmt.Sprintf("bp postings bytes: before=%.0f after=%.0f\nbp details: %.1f%% smaller; Index.Reorder of the merged index took %s s",
		bb.med, aa.med, 100*(1-aa.med/math.Max(1, bb.med)), newSpread(secs).format(1))
	if len(docBefore) > 0 {
		db, da := newSpread(docBefore), newSpread(docAfter)
		line += fmt.Sprintf("; doc-id sections before=%.0f after=%.0f, %.1f%% smaller", db.med, da.med, 100*(1-da.med/math.Max(1, db.med)))
	}
	if !converged {
		line += "; budget-truncated"
	}
	return line
}

// KeepMarker starts the hand-written part of docs/performance.md that
// WriteMarkdown keeps when it regenerates the file.
const KeepMarker = "<!-- summa-bench: everything below this line is kept when the file is regenerated -->"

// WriteMarkdown writes the report to path, keeping whatever follows
// KeepMarker in the existing file (and the other corpus's section: see
// WriteReport).
func (res *Result) WriteMarkdown(path, command string) error {
	if res.Label == LargeLabel {
		return WriteReport(path, command, nil, res)
	}
	return WriteReport(path, command, res, nil)
}

const methodology = `## What is measured

The four engines run one after the other (the order rotates between
repetitions), on the same documents, in fresh directories under the same
temporary directory, so on the same disk. Ours and Bleve run in this
process as libraries. Xapian runs in a child process, the C++ driver
bench/xapian/driver.cc compiled against Debian's libxapian-dev into bin/;
it times every operation itself (steady_clock around the Xapian calls),
so the pipe round trip is not counted, and its CPU time is added to the
*_cpu figures. Lucene runs the same way: the Java driver
bench/lucene/LuceneDriver.java, compiled with javac against Debian's
liblucene8-java (Lucene 8.8.1; the jars are named 8.7.0) into bin/ and
run by OpenJDK 17 (-XX:+UseParallelGC -Xms1g), timing itself with
System.nanoTime. Before the timed searches it warms the JIT up as the
search-benchmark-game does: rounds of every query in every mode until
three consecutive rounds' times are within 3% (at least 10 rounds, at
most 500 or 30 s). The bench installs liblucene8-java and
openjdk-17-jdk-headless with apt-get when they are missing (and says so);
without them Lucene is skipped with the reason in the report. Ratio columns are ours/peer of the medians: above 1 is
better for throughputs (docs/s, MB/s, q/s), below 1 is better for
latencies, times and bytes. "best_peer" lines divide ours by the faster
(smaller) of the peers (Bleve, Xapian, Lucene) on that measure in the same
run; "best peers" names it.

- **Corpus**: Debian's linux-doc-6.1 (.rst and .txt files under
  /usr/share/doc/linux-doc-6.1/Documentation, gzipped as shipped; the
  html/ tree is rendered copies and is skipped), one document per RST
  section (a text line underlined by a repeated punctuation character):
  id = path#n, title = the heading, body = the section text. MB = bytes of
  id + title + body. 600 sections whose headings have 2 to 6 distinct
  terms, spread evenly over the corpus, are held out (never indexed) and
  their headings become the heading queries; -quick then takes an evenly
  strided sample of the rest. Without the package: comment blocks and
  testdata text of the Go distribution.
- **Schema and analysis**: every engine indexes one searched field of
  the title and the body, as in the search-benchmark-game. Ours: id
  (primary key), title (text, stored, not indexed), text (text, multi:
  the title and the body as two values, 100 positions apart, not
  stored, reorder). Bleve: the same fields (text an array of the two,
  so no phrase spans them) with a custom
  analyzer (a tokenizer of Unicode letter/digit runs, exactly ours, plus
  Bleve's lowercase filter; no stemming, no stop words), term vectors on
  (Bleve needs them for phrases), no _all field, no doc values, BM25.
  Xapian: the Go side tokenizes with engine/analysis.Tokenize and sends
  the terms with positions (title tokens first, then the body's after a
  gap so that no phrase spans the two fields), added with
  Document::add_posting; the id is the unique term Q+id (upserts are
  replace_document), the document data is id and title. Lucene: the
  same tokens and positions, fed to one indexed field "text" (DOCS,
  FREQS, POSITIONS, norms) by a TokenStream that emits them (so its
  analysis is ours exactly), the id a stored StringField (upserts are
  updateDocument), the title a StoredField; no compound files; its
  merge policy is TieredMergePolicy for forceMerge only (no natural
  merges, as for Bleve and ours). The token-stream
  hash lines check it: each driver reads every document's terms and
  positions back from its index (Lucene: from the postings of "text")
  and hashes them; the Go side hashes our analysis of the same
  documents.
- **Ingest**: documents in batches of the commit cadence; ours:
  schema.ParseDocument of each JSON line (what the server does), Add,
  Commit; Bleve: Batch.Index of a map per document, then Index.Batch,
  which is "safe" by default (returns once persisted: segment file and
  root bolt fsynced); Xapian: tokenizing in Go (the prepare part), then
  replace_document of each document and WritableDatabase::commit (which
  fsyncs). docs/s and MB/s include everything. commit = the latency from
  handing a prepared batch over until it is durable and searchable; it
  includes the indexing work. small_commit = the same for a one-document
  upsert on the ingested index: that is the number to compare with the
  fsync floor. Bleve's background file merging is off (no segment is
  eligible), as ours has none at the library level, so both keep one
  segment per commit; a Xapian glass database is always one set of
  B-trees (segments = 1).
- **index_bytes**: the closed index directory after the ingest;
  index_bytes_merged: after the force merge, broken down by the
  "index bytes by section (merged)" lines (ours by section of the
  segment format, a peer by kind of file). ingest_alloc_mb: Go heap
  bytes allocated during the ingest (process-wide).
- **\*_cpu**: CPU time (user + system, getrusage) of the ingest, of the
  merge, and per query of the sequential search rounds (for Xapian, this
  process's plus the driver's).
- **open_ms**: a new index built with the many-segment cadence (40
  commits) is closed; one cycle is Open plus the first answered query
  (warm page cache), and open_ms is the median of the cycles of a
  repetition (5; 3 with -quick), each after Close of the previous: one
  open of a few milliseconds is too short to measure once. For Xapian the many-segment index is that commit-heavy
  database (40 commits into one glass database), opened as a
  WritableDatabase. **open_ms at N segments**: ours only, an index of
  1,000 one-document commits (no merging), built once per run; Open alone,
  timed in every repetition; N is its segment count at open.
- **merge_ms**: ours ForceMerge(ctx, 1); Bleve scorch ForceMerge with
  mergeplan.SingleSegmentMergePlanOptions, repeated until one segment
  remains (scorch merges at most 10 segments per task); Xapian
  Database::compact of the commit-heavy database into a new directory,
  every file and the directory fsynced, swapped in place of the old one
  and reopened.
- **search**: on the merged index; the top 10 hits with stored fields
  (ours: id and title; Bleve: title and _id; Xapian: the document data),
  a fresh snapshot per query for ours, exact totalHits for all three
  (Xapian: check_at_least = the document count, and the driver fails if
  the match count's bounds differ). Terms are matched in the one text
  field (title and body).
  Xapian's BM25Weight is set to k1 = 1.2, b = 0.75 (its defaults for the
  rest). Latency: queries one at a time after warm-up rounds; the fixed
  queries (each its own class) SearchRounds times, the heading queries
  (classes "headings: or/and/phrase", rotating) HeadingRounds times;
  "all" is every timed query. Lucene: IndexSearcher with
  BM25Similarity(1.2, 0.75); TermQuery, BooleanQuery of SHOULD or MUST
  TermQuerys, PhraseQuery; TopScoreDocCollector, the top 10's stored id
  and title read. **Modes**, as in the search-benchmark-game: TOP_10 (no
  exact count: Lucene's default totalHitsThreshold of 1000, so block-max
  WAND on its impacts; ours with TotalHitsThreshold 1000, so block-max
  pruning; Xapian get_mset(0, 10) with its default check_at_least, an
  estimated count; Bleve has no such mode and counts), TOP_10_COUNT (top
  10 and the exact count: the mode of every other search figure) and
  COUNT (Lucene IndexSearcher.count; Xapian get_mset(0, 0, doccount);
  Bleve a request of size 0; ours has no count-only path and asks for one
  hit without stored fields). Each mode is timed over the same rounds;
  the TOP_10 and COUNT tables give each class's p50/p99. QPS: the fixed queries from GOMAXPROCS
  concurrent clients (Xapian: driver threads, each with its own
  read-only Database). totalHits of every query must agree between the
  engines. top10 overlap with P: the mean over queries of
  |top10(ours) ∩ top10(P)| / max(|top10|), median over repetitions
  (rankings differ by BM25 details and tie order; reported, not a goal).
- **Floor**: write+fsync of one large file (MB/s); a new 4 KiB file
  written and fsynced; a rename plus an fsync of the directory.
  fsync_floor = fsync p50 + rename p50, the least an atomic durable
  publication costs.
- **bp**: postings bytes (segment.Reader.PostingsBytes) and doc-id
  bytes (segment.Reader.DocSectionBytes: the doc-id gaps alone, no
  frequencies or positions) of the merged index before and after
  Index.Reorder, when the engine has it.
- **bp (shuffled)**: the corpus in a fixed pseudo-random order (PCG
  seeded 1, 2: how documents reach a real index, not grouped by topic as
  in path order) is ingested into a new index of ours with the
  many-segment cadence and force-merged; doc-id bytes before and after
  Index.Reorder, and search time before and after: the sum, over every
  query in every mode, of the fastest of 3 runs; speedup = before/after.
- **http**: summa-server built from ./cmd/summa-server on a fresh data
  directory, the same batches as NDJSON to POST /v1/indexes/bench/documents
  then POST /commit; its default background maintenance runs; the fixed
  queries.
- **Profiles**: -profile-dir DIR writes CPU profiles of the first
  repetition's phases of the Go engines to DIR/profile-ENGINE-PHASE.pprof
  (go tool pprof) and, when perf is installed, a perf record of the
  Xapian driver to DIR/profile-xapian-PHASE.perf.data (perf report -i).
`

// warmRounds is Lucene's warm-up rounds over the repetitions.
func (res *Result) warmRounds() string {
	var vs []float64
	for _, rep := range res.Reps {
		if r := rep.Engines["lucene"]; r != nil {
			vs = append(vs, float64(r.WarmRounds))
		}
	}
	return newSpread(vs).format(0)
}
