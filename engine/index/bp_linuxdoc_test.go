package index_test

import (
	"context"
	"encoding/binary"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/bench"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segment"
)

// TestMeasureBPLinuxDoc measures, on the benchmark's linux-doc corpus, the
// merge of an index committed in batches, then one BP pass over the merged
// segment: doc-id bytes and bits per posting before and after. It is a
// measurement, not a check, and runs only when SUMMA_BP_MEASURE=1
// (SUMMA_BP_DOCS documents, default 5000 like summa-bench -quick; 0 for
// all; SUMMA_BP_SHUFFLE=1 ingests them in the bench's shuffled order).
// SUMMA_BP_DUMP=path writes every term's postings before and after BP to
// path.before and path.after (dumpPostings), the input of the codec
// estimates in engine/segment (TestEstimateDocIDCodecs):
//
//	SUMMA_BP_MEASURE=1 go test ./engine/index -run TestMeasureBPLinuxDoc -v
func TestMeasureBPLinuxDoc(t *testing.T) {
	if os.Getenv("SUMMA_BP_MEASURE") != "1" {
		t.Skip("set SUMMA_BP_MEASURE=1 to measure")
	}
	maxDocs := 5000
	if v := os.Getenv("SUMMA_BP_DOCS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatal(err)
		}
		maxDocs = n
	}
	c, err := bench.PrepareCorpus(bench.CorpusOptions{PrepareOptions: bench.PrepareOptions{MaxDocs: maxDocs, NoInstall: true},
		Shuffle: os.Getenv("SUMMA_BP_SHUFFLE") == "1"})
	if err != nil {
		t.Skip(err)
	}
	s, err := schema.Parse([]byte(bench.SchemaJSON))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	idx, err := index.Create(vfs.Default, t.TempDir(), s, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close(ctx)
	raw := bench.NDJSON(c.Docs)
	const batch = 500
	for i := 0; i < len(raw); i += batch {
		var docs []*schema.Document
		for _, r := range raw[i:min(i+batch, len(raw))] {
			d, err := s.ParseDocument(r)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, d)
		}
		if err := idx.Add(docs); err != nil {
			t.Fatal(err)
		}
		if _, err := idx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	segs := len(idx.Metadata().Segments)
	start := time.Now()
	if _, err := idx.ForceMerge(ctx, 1); err != nil {
		t.Fatal(err)
	}
	t.Logf("corpus %s: %d documents, %.1f MB; merge of %d segments: %s", c.Name, len(c.Docs), c.MB(), segs, time.Since(start))
	before := docStats(t, idx)
	dump := os.Getenv("SUMMA_BP_DUMP")
	if dump != "" {
		dumpPostings(t, idx, dump+".before")
	}
	start = time.Now()
	res, err := idx.Reorder(ctx, index.ReorderOptions{})
	if err != nil || len(res) != 1 {
		t.Fatalf("reorder: %v (%d results)", err, len(res))
	}
	t.Logf("Index.Reorder of the merged segment: %s", time.Since(start))
	after := docStats(t, idx)
	if dump != "" {
		dumpPostings(t, idx, dump+".after")
	}
	t.Logf("postings %d; doc-id bytes before %d after %d (%.1f%% smaller); doc-id bits per posting before %.2f after %.2f",
		before.postings, before.ids, after.ids, 100*(1-float64(after.ids)/float64(before.ids)),
		8*float64(before.ids)/float64(before.postings), 8*float64(after.ids)/float64(after.postings))
	t.Logf("doc-id bytes per field (id, title, text) before %v after %v", before.fieldIDs, after.fieldIDs)
	logClasses(t, before, after)
	t.Logf("freq bytes before %d after %d; doc-id+freq before %d after %d (%.1f%% smaller); post payload before %d after %d (%.1f%% smaller)",
		before.freqs, after.freqs, res[0].DocPostingsBytesBefore, res[0].DocPostingsBytesAfter,
		100*(1-float64(res[0].DocPostingsBytesAfter)/float64(res[0].DocPostingsBytesBefore)),
		res[0].PostingsBytesBefore, res[0].PostingsBytesAfter,
		100*(1-float64(res[0].PostingsBytesAfter)/float64(res[0].PostingsBytesBefore)))
}

type postStats struct {
	ids, freqs, postings int64
	fieldIDs             [3]int64
	// classes[c] sums the docs sections of the terms of df class c
	// (dfClasses), all fields.
	classes [len(dfClasses)]segment.DocIDParts
}

// dfClasses are the lower bounds of the document frequency classes of the
// breakdown (df = 1 is one doc id no order changes; 128 = a full block).
var dfClasses = [...]uint32{1, 2, 4, 16, 128, 1024}

// dfClass returns the class of a term of document frequency df.
func dfClass(df uint32) int {
	c := 0
	for c+1 < len(dfClasses) && df >= dfClasses[c+1] {
		c++
	}
	return c
}

// logClasses logs, per df class, the doc-id bytes before and after by how
// they are coded.
func logClasses(t *testing.T, before, after postStats) {
	for c := range dfClasses {
		b, a := before.classes[c], after.classes[c]
		hi := "+"
		if c+1 < len(dfClasses) {
			hi = "-" + strconv.Itoa(int(dfClasses[c+1]-1))
		}
		t.Logf("df %d%s: doc-id bytes %d -> %d (%.1f%% smaller): skip %d -> %d, packed blocks %d -> %d, interpolated blocks %d -> %d, tails %d -> %d",
			dfClasses[c], hi, b.IDs(), a.IDs(), 100*(1-float64(a.IDs())/float64(max(b.IDs(), 1))),
			b.Skip, a.Skip, b.Packed, a.Packed, b.Interp, a.Interp, b.Tail+b.Legacy, a.Tail+a.Legacy)
	}
}

// docStats sums the docs sections of the index's single segment.
func docStats(t *testing.T, idx *index.Index) postStats {
	snap, err := idx.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if len(snap.Segments) != 1 {
		t.Fatalf("%d segments, want 1", len(snap.Segments))
	}
	r := snap.Segments[0].Reader
	var st postStats
	if st.ids, st.freqs, err = r.DocSectionBytes(); err != nil {
		t.Fatal(err)
	}
	st.postings = countPostings(t, r, &st)
	for f := range st.fieldIDs {
		if st.fieldIDs[f], _, err = r.FieldDocSectionBytes(f); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// countPostings returns the number of postings of every term dictionary
// and sums the docs sections by df class into st.classes.
func countPostings(t *testing.T, r *segment.Reader, st *postStats) int64 {
	var n int64
	for f := 0; f < 3; f++ {
		if r.NumTerms(f) == 0 {
			continue // the bench's title is stored only
		}
		it, err := r.Terms(f)
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			n += int64(it.DocFreq())
			p, err := it.DocIDParts()
			if err != nil {
				t.Fatal(err)
			}
			c := &st.classes[dfClass(it.DocFreq())]
			c.Skip, c.Packed, c.Interp = c.Skip+p.Skip, c.Packed+p.Packed, c.Interp+p.Interp
			c.Tail, c.Legacy, c.Freqs = c.Tail+p.Tail, c.Legacy+p.Legacy, c.Freqs+p.Freqs
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// dumpPostings writes the postings of the index's single segment to name:
// uvarint(numDocs), then per term of every field in order uvarint(field),
// uvarint(df), then df times uvarint(doc), uvarint(freq).
func dumpPostings(t *testing.T, idx *index.Index, name string) {
	snap, err := idx.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	r := snap.Segments[0].Reader
	out := binary.AppendUvarint(nil, uint64(r.NumDocs()))
	for f := 0; f < 3; f++ {
		if r.NumTerms(f) == 0 {
			continue // the bench's title is stored only
		}
		it, err := r.Terms(f)
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			out = binary.AppendUvarint(out, uint64(f))
			out = binary.AppendUvarint(out, uint64(it.DocFreq()))
			p := it.Postings()
			for p.Next() {
				out = binary.AppendUvarint(out, uint64(p.Doc()))
				out = binary.AppendUvarint(out, uint64(p.Freq()))
			}
			if err := p.Err(); err != nil {
				t.Fatal(err)
			}
			p.Release()
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(name, out, 0o644); err != nil {
		t.Fatal(err)
	}
}
