package segment

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// ratioCodeByLog is ratioCode as first written, from a logarithm
// corrected both ways: the reference the tabulated search must equal.
func ratioCodeByLog(dl, tf uint32) uint8 {
	if tf == 0 || dl < tf {
		return 0
	}
	r := float64(dl) / float64(tf)
	c := min(math.Floor(16*math.Log2(r))+1, 255)
	code := uint8(max(c, 1))
	for code > 0 && RatioBound(code) > r {
		code--
	}
	for code < 255 && RatioBound(code+1) <= r {
		code++
	}
	return code
}

// mixCodeByLog is the mix code of one posting by its definition: the
// largest code whose bound is at most (A0 + B0·dl)/tf, 0 for tf 0.
func mixCodeByLog(mix mixRef, dl, tf uint32) uint8 {
	if tf == 0 {
		return 0
	}
	v := (mix.a + mix.b*float64(dl)) / float64(tf)
	c := uint8(0)
	for c < 255 && MixBound(c+1, mix.b) <= v {
		c++
	}
	return c
}

// TestRatioCodeMatchesLogFormula compares the tabulated ratioCode with the
// logarithm formula on every small ratio and on random large ones.
func TestRatioCodeMatchesLogFormula(t *testing.T) {
	check := func(dl, tf uint32) {
		if got, want := ratioCode(dl, tf), ratioCodeByLog(dl, tf); got != want {
			t.Fatalf("ratio %d/%d: code %d, want %d", dl, tf, got, want)
		}
	}
	for tf := uint32(0); tf < 64; tf++ {
		for dl := uint32(0); dl < 1<<14; dl++ {
			check(dl, tf)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 1_000_000; i++ {
		check(rng.Uint32(), rng.Uint32N(1<<uint(rng.IntN(32)))+1)
	}
	check(math.MaxUint32, 1)
	check(math.MaxUint32, math.MaxUint32)
}

// TestBlockRatioCodeIsBlockMinimum encodes random text postings and checks
// every block's ratio code is the smallest of its postings' codes, its
// frequency code that of the largest frequency, and its mix code the
// smallest of its postings' mix codes by their definition (mixCodeByLog).
func TestBlockRatioCodeIsBlockMinimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const numDocs = 5000
	norms := make([]uint32, numDocs)
	for d := range norms {
		norms[d] = rng.Uint32N(1 << uint(rng.IntN(20)))
	}
	norm := func(d uint32) uint32 { return norms[d] }
	for round := 0; round < 200; round++ {
		var ps []bmPosting
		for d := uint32(0); d < numDocs; d++ {
			if rng.IntN(1+round%7) == 0 {
				ps = append(ps, bmPosting{doc: d, tf: rng.Uint32N(1 << uint(rng.IntN(12)))})
			}
		}
		if len(ps) == 0 {
			continue
		}
		mix := mixRefOf(norms)
		rec := encodeBlockRecord(nil, bmTokenized, ps, norm, mix)
		bt, err := parseBlockTerm(rec, bmLayout{kind: bmTokenized, mix: mix, supers: true}, uint32(len(ps)), numDocs, 0)
		if err != nil {
			t.Fatal(err)
		}
		es, err := bt.Entries(nil)
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		for _, e := range es {
			rc, maxTF, mc := uint8(255), uint32(0), uint8(255)
			for _, p := range ps[k : k+e.Count] {
				rc = min(rc, ratioCodeByLog(norms[p.doc], p.tf))
				maxTF = max(maxTF, p.tf)
				mc = min(mc, mixCodeByLog(mix, norms[p.doc], p.tf))
			}
			k += e.Count
			if e.Lo != rc || e.Hi != tfCode(maxTF) || e.Mix != mc {
				t.Fatalf("round %d block %d: codes %d/%d/%d, want %d/%d/%d", round, e.Block, e.Hi, e.Lo, e.Mix, tfCode(maxTF), rc, mc)
			}
		}
	}
}

// TestOnePostingRecordMatchesBlocks: the one-posting fast path writes the
// bytes the general encoder writes, for text and exact fields, over doc
// ids, frequencies and lengths of every varint width.
func TestOnePostingRecordMatchesBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	e := bmEncoder{mix: mixRef{a: 0.3, b: 0.011}}
	for i := 0; i < 300000; i++ {
		p := bmPosting{doc: rng.Uint32N(1 << uint(rng.IntN(32))), tf: rng.Uint32N(1 << uint(rng.IntN(32)))}
		dl := rng.Uint32N(1 << uint(rng.IntN(32)))
		norm := func(uint32) uint32 { return dl }
		for _, kind := range []byte{bmExact, bmTokenized} {
			got := e.encode(nil, kind, []bmPosting{p}, norm)
			want := e.encodeBlocks(nil, kind, []bmPosting{p}, norm)
			if string(got) != string(want) {
				t.Fatalf("kind %d doc %d tf %d dl %d: % x, want % x", kind, p.doc, p.tf, dl, got, want)
			}
		}
	}
}

// BenchmarkBlockRecordEncode encodes the block-max records of every body
// term of real-text segments (what a merge and a validation both do).
func BenchmarkBlockRecordEncode(b *testing.B) {
	s := testSchema()
	srcs := mergeSources(b, vfs.NewMem(), s)
	f := fieldOrd(s, "body")
	type term struct {
		ps   []bmPosting
		norm func(uint32) uint32
	}
	var terms []term
	for _, r := range srcs {
		col := r.norms[f]
		norm := func(d uint32) uint32 { return col.at(d) }
		it := &TermIterator{d: r.dicts[f]}
		for it.Next() {
			p := new(Postings)
			p.init(it.d, it.c.e)
			var ps []bmPosting
			for p.Next() {
				ps = append(ps, bmPosting{doc: p.Doc(), tf: p.Freq()})
			}
			terms = append(terms, term{ps, norm})
		}
	}
	var e bmEncoder
	var rec []byte
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, t := range terms {
			rec = e.encode(rec[:0], bmTokenized, t.ps, t.norm)
		}
	}
}

// TestTextBlocksMatchAnyBlocks: the text fields' encoder writes the bytes
// the general one writes, over block layouts, frequencies of every varint
// width (zero included) and field lengths.
func TestTextBlocksMatchAnyBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var e bmEncoder
	for round := 0; round < 3000; round++ {
		e.mix = []mixRef{{}, {a: 0.3, b: 0.9 / float64(1+round)}}[round%2]
		numDocs := 1 + rng.Uint32N(1<<uint(rng.IntN(14)))
		norms := make([]uint32, numDocs)
		for d := range norms {
			norms[d] = uint32(rng.Uint64N(1 << uint(rng.IntN(33))))
		}
		norm := func(d uint32) uint32 { return norms[d] }
		var ps []bmPosting
		for d := uint32(0); d < numDocs; d++ {
			if rng.IntN(1+round%9) == 0 {
				ps = append(ps, bmPosting{doc: d, tf: uint32(rng.Uint64N(1 << uint(rng.IntN(33))))})
			}
		}
		for _, kind := range []byte{bmExact, bmTokenized} {
			got := e.encodeTextBlocks([]byte{7}, kind == bmTokenized, ps, norm)
			want := e.encodeAnyBlocks([]byte{7}, kind, ps, norm)
			if string(got) != string(want) {
				t.Fatalf("round %d kind %d: % x, want % x", round, kind, got, want)
			}
		}
	}
}
