package segment

import (
	"math/rand/v2"
	"testing"

	"github.com/summadev/summa/engine/segment/codec"
)

// decodeSection iterates a docs section of df documents of a segment of
// numDocs documents through Postings.
func decodeSection(sec []byte, df, numDocs uint32) (docs, freqs []uint32, err error) {
	return decodeSectionAs(sec, df, numDocs, false)
}

// decodeSectionAs is decodeSection for a version 1 section when legacy.
func decodeSectionAs(sec []byte, df, numDocs uint32, legacy bool) (docs, freqs []uint32, err error) {
	p := &Postings{}
	p.start(sec, nil, df, numDocs, false, legacy)
	for p.Next() {
		docs = append(docs, p.Doc())
		freqs = append(freqs, p.Freq())
	}
	if err := p.checkEnd(); err != nil {
		return docs, freqs, err
	}
	return docs, freqs, nil
}

// randomPostings returns df increasing doc ids below numDocs with a mix of
// small and huge gaps (exceptions) and frequencies.
func randomPostings(rng *rand.Rand, df int, numDocs uint32) (docs, freqs []uint32) {
	doc := int64(-1)
	for len(docs) < df {
		gap := int64(1 + rng.IntN(4))
		switch rng.IntN(50) {
		case 0:
			gap += int64(rng.IntN(1 << 20))
		case 1:
			gap += int64(rng.IntN(300))
		}
		doc += gap
		if doc >= int64(numDocs) {
			break
		}
		f := uint32(1)
		if rng.IntN(5) == 0 {
			f = 1 + uint32(rng.IntN(40))
		}
		if rng.IntN(500) == 0 {
			f = 1 << 31
		}
		docs, freqs = append(docs, uint32(doc)), append(freqs, f)
	}
	return docs, freqs
}

func TestDocsSectionRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var enc codec.DocsEncoder
	for _, df := range []int{1, 2, 127, 128, 129, 255, 256, 257, 1000, 5000} {
		for rep := 0; rep < 5; rep++ {
			const numDocs = 1 << 30
			docs, freqs := randomPostings(rng, df, numDocs)
			enc.Reset(nil, numDocs, false)
			for i := range docs {
				enc.Add(docs[i], freqs[i])
			}
			sec := enc.Finish()
			if uint64(len(sec)) < codec.MinDocsLen(uint64(len(docs))) {
				t.Fatalf("df %d: section of %d bytes is below the minimum %d", len(docs), len(sec), codec.MinDocsLen(uint64(len(docs))))
			}
			gotD, gotF, err := decodeSection(sec, uint32(len(docs)), numDocs)
			if err != nil {
				t.Fatalf("df %d: %v", len(docs), err)
			}
			for i := range docs {
				if gotD[i] != docs[i] || gotF[i] != freqs[i] {
					t.Fatalf("df %d: posting %d is (%d,%d), want (%d,%d)", len(docs), i, gotD[i], gotF[i], docs[i], freqs[i])
				}
			}
			ids, fr, ok := docsSectionSizes(sec, uint32(len(docs)), numDocs)
			if !ok || ids+fr != uint64(len(sec)) {
				t.Fatalf("df %d: sizes %d+%d of %d bytes (ok=%v)", len(docs), ids, fr, len(sec), ok)
			}
			// A doc id past the segment is corruption, never a panic (a
			// tail's doc ids are coded for the range up to numDocs, so a
			// smaller one may decode other ids, but never past it).
			got, _, err := decodeSection(sec, uint32(len(docs)), docs[len(docs)-1])
			if err == nil && len(docs)%codec.BlockSize == 0 {
				t.Fatalf("df %d: doc %d accepted in a segment of %d documents", len(docs), docs[len(docs)-1], docs[len(docs)-1])
			}
			for _, d := range got {
				if d >= docs[len(docs)-1] {
					t.Fatalf("df %d: doc %d decoded in a segment of %d documents", len(docs), d, docs[len(docs)-1])
				}
			}
			checkAdvance(t, rng, sec, docs, freqs, numDocs)
		}
	}
}

// TestDocsSectionDenseIsSmall checks that the codec pays off on dense
// postings: consecutive documents with frequency 1 take about two bits
// each, plus at most 4 bytes of skip entry per block.
func TestDocsSectionDenseIsSmall(t *testing.T) {
	var enc codec.DocsEncoder
	enc.Reset(nil, 1<<20, false)
	for d := uint32(0); d < 128*100; d++ {
		enc.Add(2*d, 1)
	}
	sec := enc.Finish()
	if len(sec) > 100*(4+16+4) {
		t.Fatalf("12800 postings of gap 2 take %d bytes, want at most %d", len(sec), 100*(4+16+4))
	}
}

// TestTailIsBitCoded checks that short lists cost bits, not bytes, per
// posting: 100 consecutive documents with frequency 1 take the gamma bit
// of each frequency and nothing for the doc ids.
func TestTailIsBitCoded(t *testing.T) {
	var enc codec.DocsEncoder
	enc.Reset(nil, 1<<20, false)
	for d := uint32(0); d < 100; d++ {
		enc.Add(5000+d, 1)
	}
	sec := enc.Finish()
	// The interpolative code's outer levels pay for the 2^20 range (about
	// 7×20 bits), the inner documents cost nothing; 100 bits of
	// frequencies: 38 bytes, where varints took 100.
	if len(sec) > 40 {
		t.Fatalf("100 consecutive postings take %d bytes", len(sec))
	}
	docs, _, err := decodeSection(sec, 100, 1<<20)
	if err != nil || len(docs) != 100 || docs[99] != 5099 {
		t.Fatalf("decoded %v, %v", docs, err)
	}
}

// clusteredPostings returns df doc ids of a dense region, as BP leaves a
// frequent term's documents.
func clusteredPostings(rng *rand.Rand, df int) (docs, freqs []uint32) {
	d := uint32(rng.IntN(100))
	for len(docs) < df {
		// Each document of a dense region holds the term with
		// probability 3/4: geometric gaps, which packed blocks code with
		// exceptions, interpolation shorter.
		d++
		if rng.IntN(4) == 0 {
			continue
		}
		docs, freqs = append(docs, d), append(freqs, 1+uint32(rng.IntN(3)/2))
	}
	return docs, freqs
}

// TestInterpBlocks checks that clustered full blocks are coded by
// interpolation when that is a quarter shorter, and still decode and
// advance exactly.
func TestInterpBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	docs, freqs := clusteredPostings(rng, 1000)
	const numDocs = 1 << 20
	sections := map[bool][]byte{}
	for _, packed := range []bool{false, true} {
		enc := codec.DocsEncoder{PackedOnly: packed}
		enc.Reset(nil, numDocs, false)
		for i := range docs {
			enc.Add(docs[i], freqs[i])
		}
		sec := append([]byte(nil), enc.Finish()...)
		sections[packed] = sec
		gotD, gotF, err := decodeSection(sec, uint32(len(docs)), numDocs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range docs {
			if gotD[i] != docs[i] || gotF[i] != freqs[i] {
				t.Fatalf("packedOnly=%v: posting %d is (%d,%d), want (%d,%d)", packed, i, gotD[i], gotF[i], docs[i], freqs[i])
			}
		}
		checkAdvance(t, rng, sec, docs, freqs, numDocs)
		ids, fr, ok := docsSectionSizes(sec, uint32(len(docs)), numDocs)
		if !ok || ids+fr != uint64(len(sec)) {
			t.Fatalf("packedOnly=%v: sizes %d+%d of %d bytes (ok=%v)", packed, ids, fr, len(sec), ok)
		}
	}
	if len(sections[false]) >= len(sections[true]) {
		t.Fatalf("clustered list: %d bytes, packed only %d: interpolation not chosen", len(sections[false]), len(sections[true]))
	}
}

// FuzzDocsSection decodes arbitrary bytes as a docs section: no panic, and
// a section that decodes has increasing doc ids below numDocs.
func FuzzDocsSection(f *testing.F) {
	var enc codec.DocsEncoder
	rng := rand.New(rand.NewPCG(3, 4))
	for _, df := range []int{3, 130, 300} {
		docs, freqs := randomPostings(rng, df, 1<<22)
		enc.Reset(nil, 1<<22, false)
		for i := range docs {
			enc.Add(docs[i], freqs[i])
		}
		f.Add(append([]byte(nil), enc.Finish()...), uint32(len(docs)), uint32(1<<22), false)
		var t termPostings
		for i := range docs {
			t.freq = freqs[i]
			t.addDoc(docs[i])
		}
		f.Add(t.docs, uint32(len(docs)), uint32(1<<22), true)
	}
	docs, freqs := clusteredPostings(rng, 300)
	enc.Reset(nil, 1<<22, false)
	for i := range docs {
		enc.Add(docs[i], freqs[i])
	}
	f.Add(append([]byte(nil), enc.Finish()...), uint32(len(docs)), uint32(1<<22), false)
	f.Fuzz(func(t *testing.T, sec []byte, df, numDocs uint32, legacy bool) {
		df %= 1024
		if df == 0 {
			return
		}
		docs, _, err := decodeSectionAs(sec, df, numDocs, legacy)
		if err != nil {
			mustBeCorruption(t, err)
			return
		}
		for i := range docs {
			if docs[i] >= numDocs || (i > 0 && docs[i] <= docs[i-1]) {
				t.Fatalf("decoded doc %d = %d after %v in %d documents", i, docs[i], docs[max(i-1, 0)], numDocs)
			}
		}
		docsSectionSizes(sec, df, numDocs)
		legacySectionSizes(sec, df, numDocs)
		// Advance through the skip table: still increasing, in range.
		p := &Postings{}
		p.start(sec, nil, df, numDocs, false, legacy)
		last := int64(-1)
		for target := uint32(0); p.Advance(target); target = p.Doc() + 1 + p.Doc()%300 {
			if int64(p.Doc()) <= last || p.Doc() >= numDocs || p.Doc() < target {
				t.Fatalf("Advance(%d) gave doc %d after %d in %d documents", target, p.Doc(), last, numDocs)
			}
			last = int64(p.Doc())
		}
		if p.Err() != nil {
			mustBeCorruption(t, p.Err())
		}
	})
}

// checkAdvance checks Advance against the decoded postings for random
// targets, skipping whole blocks through the skip table; every other
// repetition runs after SkipPositions and asks for the frequency of half
// the documents only (blocks whose frequencies stay undecoded).
func checkAdvance(t *testing.T, rng *rand.Rand, sec []byte, docs, freqs []uint32, numDocs uint32) {
	t.Helper()
	for rep := 0; rep < 20; rep++ {
		p := &Postings{}
		p.start(sec, nil, uint32(len(docs)), numDocs, false, false)
		lazy := rep%2 == 1
		if lazy {
			p.SkipPositions()
		}
		i := 0
		for {
			var target uint32
			switch rng.IntN(3) {
			case 0:
				target = docs[min(i, len(docs)-1)] + uint32(rng.IntN(3))
			case 1:
				target = docs[min(i+rng.IntN(400), len(docs)-1)]
			default:
				target = docs[min(i, len(docs)-1)] + uint32(rng.IntN(1<<21))
			}
			for i < len(docs) && docs[i] < target {
				i++
			}
			ok := p.Advance(target)
			if ok != (i < len(docs)) {
				t.Fatalf("df %d: Advance(%d) = %v, want %v", len(docs), target, ok, i < len(docs))
			}
			if !ok {
				break
			}
			if p.Doc() != docs[i] {
				t.Fatalf("df %d: Advance(%d) at doc %d, want %d", len(docs), target, p.Doc(), docs[i])
			}
			if lazy && rng.IntN(2) == 0 {
				continue
			}
			if p.Freq() != freqs[i] {
				t.Fatalf("df %d: Advance(%d) at (%d,%d), want (%d,%d)", len(docs), target, p.Doc(), p.Freq(), docs[i], freqs[i])
			}
		}
		if p.Err() != nil {
			t.Fatalf("df %d: %v", len(docs), p.Err())
		}
	}
}

// BenchmarkDocsDecode decodes a long clustered list (clusteredPostings)
// with full blocks coded as the encoder chooses (by interpolation where
// it is a quarter shorter), or packed only.
func BenchmarkDocsDecode(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	docs, _ := clusteredPostings(rng, 100000)
	d := docs[len(docs)-1]
	for _, packed := range []bool{false, true} {
		enc := codec.DocsEncoder{PackedOnly: packed}
		enc.Reset(nil, d+1, false)
		for _, doc := range docs {
			enc.Add(doc, 1+uint32(rng.IntN(2)))
		}
		sec := append([]byte(nil), enc.Finish()...)
		name := "chosen"
		if packed {
			name = "packed"
		}
		b.Run(name, func(b *testing.B) {
			p := &Postings{}
			for b.Loop() {
				p.start(sec, nil, uint32(len(docs)), d+1, false, false)
				for p.Next() {
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(docs)), "ns/posting")
			b.ReportMetric(float64(8*len(sec))/float64(len(docs)), "bits/posting")
		})
	}
}

// TestSkipTableChecked checks that reading a section in order verifies
// every skip entry (Validate's path): a flipped bit in any column of the
// table is corruption.
func TestSkipTableChecked(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	docs, freqs := randomPostings(rng, 500, 1<<30)
	var enc codec.DocsEncoder
	enc.Reset(nil, 1<<30, true)
	for i := range docs {
		enc.Add(docs[i], freqs[i])
	}
	sec := append([]byte(nil), enc.Finish()...)
	n, bd, bo, bc, ok := codec.SkipTableLen(sec, uint64(len(docs)))
	if !ok || n == 0 || bc == 0 {
		t.Fatalf("no skip table with positions: %d bytes, widths %d %d %d", n, bd, bo, bc)
	}
	entries := uint(codec.DocsBlocks(uint64(len(docs))) - 1)
	for _, bit := range []uint{0, entries * bd, entries * (bd + bo)} { // a bit of each column
		bad := append([]byte(nil), sec...)
		bad[codec.SkipHeader+bit/8] ^= 1 << (bit % 8)
		p := &Postings{}
		p.start(bad, nil, uint32(len(docs)), 1<<30, true, false)
		for p.Next() {
		}
		mustBeCorruption(t, p.Err())
	}
}

// TestLazyFreqsCorrupt flips bytes of docs sections with several blocks
// and reads them after SkipPositions, asking for some frequencies only:
// a damaged section must end the iteration (or read other values), never
// panic or read outside the section.
func TestLazyFreqsCorrupt(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var enc codec.DocsEncoder
	visited, failed := 0, 0
	for _, df := range []int{129, 300, 1000} {
		const numDocs = 1 << 30
		docs, freqs := randomPostings(rng, df, numDocs)
		enc.Reset(nil, numDocs, false)
		for i := range docs {
			enc.Add(docs[i], freqs[i])
		}
		clean := append([]byte(nil), enc.Finish()...)
		for rep := 0; rep < 1000; rep++ {
			sec := append([]byte(nil), clean...)
			for range 1 + rng.IntN(3) {
				at := rng.IntN(len(sec))
				if rng.IntN(2) == 0 {
					at = rng.IntN(min(len(sec), 48)) // the skip table
				}
				sec[at] ^= byte(1 + rng.IntN(255))
			}
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("df %d, rep %d: panic %v", df, rep, r)
					}
				}()
				p := &Postings{}
				p.start(sec, nil, uint32(len(docs)), numDocs, false, false)
				p.SkipPositions()
				for target := uint32(0); p.Advance(target); target = p.Doc() + 1 + uint32(rng.IntN(8)) {
					visited++
					if rng.IntN(3) == 0 {
						p.Freq()
					}
				}
				if p.Err() != nil {
					failed++
				}
			}()
		}
	}
	t.Logf("%d documents visited, %d damaged sections detected", visited, failed)
	if failed == 0 || visited < 5000 {
		t.Fatalf("%d documents visited, %d damaged sections detected: the test does not reach the lazy frequencies", visited, failed)
	}
}
