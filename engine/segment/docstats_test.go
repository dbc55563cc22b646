package segment

import (
	"math/rand/v2"
	"testing"

	"github.com/summadev/summa/engine/segment/codec"
)

// TestDocIDParts checks that a docs section's parts add up to its length,
// agree with docsSectionSizes, and name how its doc ids are coded: a skip
// table from two blocks on, packed or interpolated full blocks, a tail
// when df is not a multiple of the block size.
func TestDocIDParts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const numDocs = 1 << 24
	type tc struct {
		name      string
		docs      []uint32
		freqs     []uint32
		wantInter bool // full blocks by interpolation (clustered)
	}
	var cases []tc
	for _, df := range []int{1, 2, 127, 128, 129, 255, 256, 257, 700} {
		d, f := randomPostings(rng, df, numDocs)
		cases = append(cases, tc{name: "random", docs: d, freqs: f})
	}
	d, f := clusteredPostings(rng, 1000)
	cases = append(cases, tc{name: "clustered", docs: d, freqs: f, wantInter: true})
	var enc codec.DocsEncoder
	for _, c := range cases {
		df := uint32(len(c.docs))
		enc.Reset(nil, numDocs, true)
		for i := range c.docs {
			enc.Add(c.docs[i], c.freqs[i])
		}
		sec := enc.Finish()
		p, ok := docsSectionParts(sec, df, numDocs)
		if !ok {
			t.Fatalf("%s df %d: section does not parse", c.name, df)
		}
		if got := p.IDs() + p.Freqs; got != uint64(len(sec)) {
			t.Fatalf("%s df %d: parts %+v add up to %d of %d bytes", c.name, df, p, got, len(sec))
		}
		ids, fr, _ := docsSectionSizes(sec, df, numDocs)
		if ids != p.IDs() || fr != p.Freqs {
			t.Fatalf("%s df %d: sizes %d+%d, parts %+v", c.name, df, ids, fr, p)
		}
		if (p.Skip > 0) != (codec.DocsBlocks(uint64(df)) >= 2) || p.Legacy != 0 {
			t.Fatalf("%s df %d: parts %+v: skip table or legacy bytes wrong", c.name, df, p)
		}
		if (p.Tail > 0) != (df%codec.BlockSize != 0) || (p.Packed+p.Interp > 0) != (df >= codec.BlockSize) {
			t.Fatalf("%s df %d: parts %+v: blocks and tail wrong", c.name, df, p)
		}
		if c.wantInter && p.Interp == 0 || !c.wantInter && p.Interp != 0 {
			t.Fatalf("%s df %d: parts %+v: interpolated blocks wrong", c.name, df, p)
		}
		if _, ok := docsSectionParts(sec[:len(sec)-1], df, numDocs); ok {
			t.Fatalf("%s df %d: a truncated section parses", c.name, df)
		}
	}
}

// checkDocIDParts checks, on every term of r, that DocIDParts agrees with
// DocSectionBytes and that only a version 1 segment has Legacy bytes.
func checkDocIDParts(t *testing.T, r *Reader, legacy bool) {
	t.Helper()
	wantIDs, wantFreqs, err := r.DocSectionBytes()
	if err != nil {
		t.Fatal(err)
	}
	var ids, freqs, leg uint64
	for f := range r.dicts {
		if r.dicts[f] == nil {
			continue
		}
		it, err := r.Terms(f)
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			p, err := it.DocIDParts()
			if err != nil {
				t.Fatal(err)
			}
			ids, freqs, leg = ids+p.IDs(), freqs+p.Freqs, leg+p.Legacy
			if p.Legacy != 0 && p.Skip+p.Packed+p.Interp+p.Tail != 0 {
				t.Fatalf("term %q: parts %+v mix version 1 and 2", it.Term(), p)
			}
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if int64(ids) != wantIDs || int64(freqs) != wantFreqs {
		t.Fatalf("parts sum to %d+%d, DocSectionBytes %d+%d", ids, freqs, wantIDs, wantFreqs)
	}
	if (leg == ids) != legacy || ids == 0 {
		t.Fatalf("legacy=%v: %d of %d doc-id bytes are version 1 varints", legacy, leg, ids)
	}
}
