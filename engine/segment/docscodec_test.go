package segment

import (
	"math/rand/v2"
	"testing"
)

// decodeSection iterates a docs section of df documents of a segment of
// numDocs documents through Postings.
func decodeSection(sec []byte, df, numDocs uint32) (docs, freqs []uint32, err error) {
	return decodeSectionAs(sec, df, numDocs, false)
}

// decodeSectionAs is decodeSection for a version 1 section when legacy.
func decodeSectionAs(sec []byte, df, numDocs uint32, legacy bool) (docs, freqs []uint32, err error) {
	p := &Postings{docs: sec, df: df, numDocs: numDocs, posCur: -1, legacy: legacy}
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
	var enc docsEncoder
	for _, df := range []int{1, 2, 127, 128, 129, 255, 256, 257, 1000, 5000} {
		for rep := 0; rep < 5; rep++ {
			const numDocs = 1 << 30
			docs, freqs := randomPostings(rng, df, numDocs)
			enc.reset(nil)
			for i := range docs {
				enc.add(docs[i], freqs[i])
			}
			sec := enc.finish()
			if uint64(len(sec)) < minDocsLen(uint64(len(docs))) {
				t.Fatalf("df %d: section of %d bytes is below the minimum %d", len(docs), len(sec), minDocsLen(uint64(len(docs))))
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
			ids, fr, ok := docsSectionSizes(sec, uint32(len(docs)))
			if !ok || ids+fr != uint64(len(sec)) {
				t.Fatalf("df %d: sizes %d+%d of %d bytes (ok=%v)", len(docs), ids, fr, len(sec), ok)
			}
			// A doc id past the segment is corruption, never a panic.
			if _, _, err := decodeSection(sec, uint32(len(docs)), docs[len(docs)-1]); err == nil {
				t.Fatalf("df %d: doc %d accepted in a segment of %d documents", len(docs), docs[len(docs)-1], docs[len(docs)-1])
			}
		}
	}
}

// TestDocsSectionDenseIsSmall checks that the codec pays off on dense
// postings: consecutive documents with frequency 1 take about two bits each.
func TestDocsSectionDenseIsSmall(t *testing.T) {
	var enc docsEncoder
	enc.reset(nil)
	for d := uint32(0); d < 128*100; d++ {
		enc.add(2*d, 1)
	}
	sec := enc.finish()
	if len(sec) > 100*(4+16) {
		t.Fatalf("12800 postings of gap 2 take %d bytes, want at most %d", len(sec), 100*(4+16))
	}
}

// FuzzDocsSection decodes arbitrary bytes as a docs section: no panic, and
// a section that decodes has increasing doc ids below numDocs.
func FuzzDocsSection(f *testing.F) {
	var enc docsEncoder
	rng := rand.New(rand.NewPCG(3, 4))
	for _, df := range []int{3, 130, 300} {
		docs, freqs := randomPostings(rng, df, 1<<22)
		enc.reset(nil)
		for i := range docs {
			enc.add(docs[i], freqs[i])
		}
		f.Add(append([]byte(nil), enc.finish()...), uint32(len(docs)), uint32(1<<22), false)
		var t termPostings
		for i := range docs {
			t.freq = freqs[i]
			t.addDoc(docs[i])
		}
		f.Add(t.docs, uint32(len(docs)), uint32(1<<22), true)
	}
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
		docsSectionSizes(sec, df)
		legacySectionSizes(sec, df)
	})
}
