package segment

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

// reindex writes the rows of order the way merges did before Merge: every
// row rebuilt as a Document and added to a Builder (re-tokenized). The
// store does not keep the fields that are not stored: their values come
// from the input documents (opticksDocs), found by primary key.
func reindex(t testing.TB, fs vfs.FS, dir string, s *schema.Schema, id segid.ID, srcs []*Reader, order []DocRef) Info {
	t.Helper()
	inputs := byPrimaryKey(opticksDocs(t, s, 0))
	b := NewBuilder(s)
	for _, ref := range order {
		d, err := srcs[ref.Source].Document(ref.Doc)
		if err != nil {
			t.Fatal(err)
		}
		full, ok := withUnstored(s, d, inputs)
		if !ok {
			t.Fatalf("source %d doc %d: no input document of key %q", ref.Source, ref.Doc, d.PrimaryKey)
		}
		b.Add(full)
	}
	// A merge copies the sources' Seismic runs: so does the re-index.
	newID := make([]map[uint32]uint32, len(srcs))
	for i := range newID {
		newID[i] = map[uint32]uint32{}
	}
	for n, ref := range order {
		newID[ref.Source][ref.Doc] = uint32(n)
	}
	o := SeismicOptions{Budget: -1}
	for i, r := range srcs {
		ids := newID[i]
		o.Carry = append(o.Carry, SeismicCarry{Source: r, Remap: func(d uint32) (uint32, bool) { n, ok := ids[d]; return n, ok }})
	}
	b.SetSeismic(o)
	info, err := b.Write(context.Background(), fs, dir, id)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// mergeSources writes three segments of real text (the Opticks
// paragraphs, every field kind of testSchema) and opens them.
func mergeSources(t testing.TB, fs vfs.FS, s *schema.Schema) []*Reader {
	docs := opticksDocs(t, s, 0)
	cuts := []int{0, len(docs) / 5, len(docs) / 2, len(docs)}
	var srcs []*Reader
	for i := 0; i+1 < len(cuts); i++ {
		info := buildSegment(t, fs, "idx", s, segid.ID(100+i), docs[cuts[i]:cuts[i+1]])
		r, err := Open(fs, "idx", s, info)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		srcs = append(srcs, r)
	}
	return srcs
}

// TestMergeEqualsReindex merges real-text segments both ways — the old
// re-indexing path and Merge — for a plain merge, a merge with deletions
// (compaction) and a permutation (reorder), and checks that every file
// but the store has the same payload byte for byte, that every stored
// row reads back the same, and that the output validates.
func TestMergeEqualsReindex(t *testing.T) { checkMergeEqualsReindex(t) }

// TestMergeEqualsReindexInChunks is TestMergeEqualsReindex with every
// field's terms cut into as many ranges as the merge allows, merged
// concurrently: the output must not change.
func TestMergeEqualsReindexInChunks(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	defer func(b int) { chunkBytes = b }(chunkBytes)
	chunkBytes = 1
	checkMergeEqualsReindex(t)
	// Ranges adding atomically to the shared lengths (a field too large
	// for private slots) write the same output.
	defer func(m uint64) { privateCountsMax = m }(privateCountsMax)
	privateCountsMax = 0
	checkMergeEqualsReindex(t)
}

func checkMergeEqualsReindex(t *testing.T) {
	s := testSchema()
	fs := vfs.NewMem()
	srcs := mergeSources(t, fs, s)
	rng := rand.New(rand.NewPCG(7, 8))
	perm := Concat(srcs, func(src int, doc uint32) bool { return doc%5 != 2 })
	rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	plans := map[string]struct {
		srcs  []*Reader
		order []DocRef
	}{
		"merge":         {srcs, Concat(srcs, nil)},
		"merge-deletes": {srcs, Concat(srcs, func(src int, doc uint32) bool { return (doc+uint32(src))%7 != 3 })},
		// Sources keeping every row (their positions sections copied
		// whole) beside one that drops rows (copied document by document).
		"merge-deletes-in-one": {srcs, Concat(srcs, func(src int, doc uint32) bool { return src != 1 || doc%4 != 1 })},
		"compact":              {srcs[1:2], Concat(srcs[1:2], func(_ int, doc uint32) bool { return doc%3 != 0 })},
		"permute":              {srcs, perm},
		"single-in-order":      {srcs[2:], Concat(srcs[2:], nil)},
	}
	next := segid.ID(200)
	for name, p := range plans {
		t.Run(name, func(t *testing.T) {
			want := reindex(t, fs, "idx", s, next, p.srcs, p.order)
			got, err := Merge(context.Background(), fs, "idx", next+1, s, p.srcs, p.order)
			if err != nil {
				t.Fatal(err)
			}
			next += 2
			if got.Documents != want.Documents || got.Documents != uint32(len(p.order)) {
				t.Fatalf("merged %d documents, re-index %d, want %d", got.Documents, want.Documents, len(p.order))
			}
			if err := Validate(context.Background(), fs, "idx", s, got); err != nil {
				t.Fatalf("merged output does not validate: %v", err)
			}
			for _, suffix := range dataSuffixes {
				if suffix == SuffixStore {
					continue
				}
				a := partBytes(t, fs, "idx", want, suffix)
				b := partBytes(t, fs, "idx", got, suffix)
				if len(a) != len(b) || !reflect.DeepEqual(a[headerSize:len(a)-footerSize], b[headerSize:len(b)-footerSize]) {
					t.Errorf("%s: merged payload (%d bytes) differs from the re-indexed one (%d bytes)", suffix, len(b), len(a))
				}
			}
			compareRows(t, fs, s, want, got)
		})
	}
}

// compareRows checks that two segments return the same documents.
func compareRows(t *testing.T, fs vfs.FS, s *schema.Schema, want, got Info) {
	t.Helper()
	ra, err := Open(fs, "idx", s, want)
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rb, err := Open(fs, "idx", s, got)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	for d := uint32(0); d < ra.NumDocs(); d++ {
		da, err1 := ra.Document(d)
		db, err2 := rb.Document(d)
		if err1 != nil || err2 != nil {
			t.Fatalf("doc %d: %v, %v", d, err1, err2)
		}
		if !reflect.DeepEqual(da, db) {
			t.Fatalf("doc %d differs:\nmerged   %+v\nre-index %+v", d, db, da)
		}
	}
}

// BenchmarkMerge merges 40 segments of real text (the Opticks paragraphs,
// every field kind) into one on disk, by Merge and by the re-indexing path
// merges used before it.
func BenchmarkMerge(b *testing.B) {
	s := testSchema()
	fs := vfs.Default
	dir := b.TempDir()
	srcs := opticksSources(b, fs, dir, s, 40)
	order := Concat(srcs, nil)
	next := segid.ID(1000)
	run := func(b *testing.B, write func(id segid.ID) Info) {
		b.ReportAllocs()
		for b.Loop() {
			next++
			info := write(next)
			for _, fi := range info.Files {
				_ = fs.Remove(fs.PathJoin(dir, segid.FileName(info.ID, fi.Suffix)))
			}
		}
	}
	b.Run("merge", func(b *testing.B) {
		run(b, func(id segid.ID) Info {
			info, err := Merge(context.Background(), fs, dir, id, s, srcs, order)
			if err != nil {
				b.Fatal(err)
			}
			return info
		})
	})
	b.Run("reindex", func(b *testing.B) {
		run(b, func(id segid.ID) Info { return reindex(b, fs, dir, s, id, srcs, order) })
	})
}

// TestMergeCoversEveryFileKind fails when a data file kind has no merge
// step: Merge would write it from empty accumulators and lose its data. A
// kind that Write derives from other kinds (say, from the merged
// postings) still lists itself with a step that documents it.
func TestMergeCoversEveryFileKind(t *testing.T) {
	covered := map[string]int{}
	for _, fm := range fileMerges {
		for _, s := range fm.suffixes {
			covered[s]++
		}
	}
	for _, s := range append(append([]string(nil), dataSuffixes...), SuffixIVF) {
		if covered[s] != 1 {
			t.Errorf("file kind %q is filled by %d merge steps, want 1 (add it to fileMerges)", s, covered[s])
		}
		delete(covered, s)
	}
	for s := range covered {
		t.Errorf("merge step for %q, which is not a data file kind", s)
	}
}

// TestMergeRefusesBadOrders: a row of no source, or listed twice, is an
// error before any file is written.
func TestMergeRefusesBadOrders(t *testing.T) {
	s := testSchema()
	fs := vfs.NewMem()
	srcs := mergeSources(t, fs, s)
	for name, order := range map[string][]DocRef{
		"no such source": {{Source: 3, Doc: 0}},
		"no such doc":    {{Source: 0, Doc: srcs[0].NumDocs()}},
		"listed twice":   {{Source: 1, Doc: 4}, {Source: 0, Doc: 1}, {Source: 1, Doc: 4}},
	} {
		if _, err := Merge(context.Background(), fs, "idx", 999, s, srcs, order); err == nil {
			t.Errorf("%s: Merge accepted %v", name, order)
		}
		if _, err := fs.Stat("idx/" + segid.FileName(999, SuffixPostings)); err == nil {
			t.Fatalf("%s: Merge wrote a file", name)
		}
	}
}

// TestMergeReportsDamagedForwardLists damages a source's forward term
// lists (checksum recomputed, so that Open accepts the file) at offsets
// across the part: the merge step that maps them runs while Write writes
// the parts before theirs, and its error must still fail the merge, as a
// *CorruptionError.
func TestMergeReportsDamagedForwardLists(t *testing.T) {
	fs, s, info := smallSegment(t, 200)
	path := "idx/" + segid.FileName(corruptID, SuffixForward)
	orig := readFile(t, fs, path)
	size := int64(len(orig))
	failed := 0
	for k := int64(1); k < 64; k++ {
		bad := append([]byte(nil), orig...)
		bad[headerSize+(size-frameSize)*k/64] ^= 0xff
		writeFile(t, fs, path, fixFrame(bad))
		r, err := Open(fs, "idx", s, info)
		if err != nil {
			continue // the cheap checks caught it
		}
		_, err = Merge(context.Background(), fs, "idx", segid.ID(500+k), s, []*Reader{r}, Concat([]*Reader{r}, nil))
		r.Close()
		if err != nil {
			wantCorruption(t, err, fmt.Sprintf("fwd byte %d", k))
			failed++
		}
	}
	if failed == 0 {
		t.Fatal("no damaged forward list failed the merge")
	}
}

// opticksSources writes the Opticks paragraphs (every field kind) as
// parts segments in dir and opens them (closed when b ends) with one
// cache, as an index's readers have.
func opticksSources(b *testing.B, fs vfs.FS, dir string, s *schema.Schema, parts int) []*Reader {
	b.Helper()
	docs := opticksDocs(b, s, 0)
	var srcs []*Reader
	cache := NewCache(DefaultCacheBytes)
	for i := 0; i < parts; i++ {
		info := buildSegment(b, fs, dir, s, segid.ID(1+i), docs[i*len(docs)/parts:(i+1)*len(docs)/parts])
		r, err := Open(fs, dir, s, info, ReaderOptions{Cache: cache})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { r.Close() })
		srcs = append(srcs, r)
	}
	return srcs
}
