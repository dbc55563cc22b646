package segment

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// TestMatchTextRecordIsByteEquality checks matchTextRecord, which
// Validate uses instead of encoding a text record and comparing bytes,
// against that comparison: true for the encoder's record of random
// postings (tokenized or not, frequencies past one varint byte), false for
// every single-byte change, every truncation, an extra byte and an
// over-long varint.
func TestMatchTextRecordIsByteEquality(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	norms := make([]uint32, 1<<14)
	for d := range norms {
		norms[d] = rng.Uint32N(1 << uint(rng.IntN(16)))
	}
	col := normCol{width: 4, data: make([]byte, 4*len(norms))}
	for d, n := range norms {
		binary.LittleEndian.PutUint32(col.data[4*d:], n)
	}
	norm := col.at
	var e bmEncoder
	for trial := 0; trial < 300; trial++ {
		n := []int{1, 2, 5, 64, 300}[trial%5]
		docs := make([]uint32, 0, n)
		freqs := make([]uint32, 0, n)
		d := uint32(rng.IntN(200))
		for len(docs) < n && d < uint32(len(norms)) {
			docs = append(docs, d)
			freqs = append(freqs, 1+rng.Uint32N([]uint32{1, 3, 300}[rng.IntN(3)]))
			d += 1 + rng.Uint32N([]uint32{1, 10, 200}[trial%3])
		}
		for _, kind := range []byte{bmExact, bmTokenized, bmTokenized} {
			tok := kind == bmTokenized
			var mix mixRef // one tokenized round with mix codes, one without
			if tok && e.mix == (mixRef{}) {
				mix = mixRefOf(norms)
			}
			e.mix = mix
			rec := e.encodeText(nil, kind, docs, freqs, norm)
			l := bmLayout{kind: kind, mix: mix, supers: true}
			if !matchTextRecord(rec, l, docs, freqs, col) {
				t.Fatalf("trial %d kind %d: the encoder's own record does not match", trial, kind)
			}
			for i := range rec {
				bad := bytes.Clone(rec)
				bad[i] ^= byte(1 << uint(rng.IntN(8)))
				if matchTextRecord(bad, l, docs, freqs, col) {
					t.Fatalf("trial %d kind %d: byte %d changed and still matches", trial, kind, i)
				}
				if matchTextRecord(rec[:i], l, docs, freqs, col) {
					t.Fatalf("trial %d kind %d: cut to %d bytes and still matches", trial, kind, i)
				}
			}
			if matchTextRecord(append(bytes.Clone(rec), 0), l, docs, freqs, col) {
				t.Fatalf("trial %d kind %d: an extra byte still matches", trial, kind)
			}
			// The block count (first byte, below 0x80 here) written in
			// two bytes: the same value, other bytes.
			if rec[0] < 0x80 {
				long := append([]byte{rec[0] | 0x80, 0}, rec[1:]...)
				if matchTextRecord(long, l, docs, freqs, col) {
					t.Fatalf("trial %d kind %d: an over-long block count still matches", trial, kind)
				}
			}
		}
	}
}

// BenchmarkMatchTextRecord times Validate's block-max check of one
// tokenized term's record: 4,096 postings, norms two bytes wide (the
// bytes/s it reports are postings/s).
func BenchmarkMatchTextRecord(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	const numDocs = 1 << 16
	col := normCol{width: 2, data: make([]byte, 2*numDocs)}
	for d := range numDocs {
		binary.LittleEndian.PutUint16(col.data[2*d:], uint16(1+rng.IntN(5000)))
	}
	var docs, freqs []uint32
	for d := uint32(rng.IntN(10)); d < numDocs && len(docs) < 4096; d += 1 + rng.Uint32N(20) {
		docs = append(docs, d)
		freqs = append(freqs, 1+rng.Uint32N(4))
	}
	e := bmEncoder{mix: mixRef{a: 0.3, b: 0.9 / 2500}}
	rec := e.encodeText(nil, bmTokenized, docs, freqs, col.at)
	b.SetBytes(int64(len(docs)))
	for b.Loop() {
		if !matchTextRecord(rec, bmLayout{kind: bmTokenized, mix: e.mix, supers: true}, docs, freqs, col) {
			b.Fatal("the encoder's own record does not match")
		}
	}
}

// TestRatioCodeIsRatioCode checks ratioCodeIs, which matchTextRecord uses
// instead of computing ratioCode, against ratioCode for every code, at
// random ratios and at the ratios nearest every bound.
func TestRatioCodeIsRatioCode(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	check := func(dl, tf uint32) {
		want := ratioCode(dl, tf)
		for c := 0; c < 256; c++ {
			if got := ratioCodeIs(uint8(c), dl, tf); got != (uint8(c) == want) {
				t.Fatalf("ratioCodeIs(%d, %d, %d) = %v, ratioCode is %d", c, dl, tf, got, want)
			}
		}
	}
	for range 20000 {
		tf := []uint32{0, 1, 2, 3, 1 + rng.Uint32N(1000), rng.Uint32()}[rng.IntN(6)]
		check(rng.Uint32()>>uint(rng.IntN(33)), tf)
	}
	for c := 1; c < 256; c++ { // the lengths around each bound, at a few frequencies
		for _, tf := range []uint32{1, 3, 7, 1000} {
			dl := uint32(min(ratioBounds[c]*float64(tf), math.MaxUint32))
			for d := dl - min(dl, 2); d <= dl+2 && d >= dl-min(dl, 2); d++ {
				check(d, tf)
			}
		}
	}
	check(math.MaxUint32, 1)
	check(math.MaxUint32, math.MaxUint32)
}

// TestMixCodeIsCode checks mixRef.codeIs, which matchTextRecord uses
// instead of computing mixRef.code, against code for every code, at
// random values, at every bound and its neighbours, and at 0, a negative
// value, NaN and infinity.
func TestMixCodeIsCode(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, mix := range []mixRef{{a: 0.3, b: 0.9 / 2500}, {a: 0.3, b: 1e-300}, {a: 0, b: 1e300}, {a: 1, b: math.Inf(1)}} {
		vs := []float64{0, -1, math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64}
		for c := range 256 {
			bound := mix.b * ratioBounds[c]
			vs = append(vs, bound, math.Nextafter(bound, 0), math.Nextafter(bound, math.Inf(1)))
		}
		for range 5000 {
			vs = append(vs, mix.value(rng.Uint32()>>uint(rng.IntN(33)), 1+rng.Uint32N(50)))
		}
		for _, v := range vs {
			want := mix.code(v)
			for c := 0; c < 256; c++ {
				if got := mix.codeIs(uint8(c), v); got != (uint8(c) == want) {
					t.Fatalf("mix %v: codeIs(%d, %v) = %v, code is %d", mix, c, v, got, want)
				}
			}
		}
	}
}

// TestBlockMinimaPerPosting checks blockMinima, which takes one mix value
// for a block's postings of frequency 1, against the minima taken
// posting by posting, with valid and invalid references, lengths of
// every width and frequencies mostly 1.
func TestBlockMinimaPerPosting(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	col := normCol{width: 4, data: make([]byte, 4*4096)}
	for d := range 4096 {
		binary.LittleEndian.PutUint32(col.data[4*d:], []uint32{0, 1, rng.Uint32N(5000), rng.Uint32()}[rng.IntN(4)])
	}
	mixes := []mixRef{{a: 0.3, b: 0.9 / 2500}, {a: 0, b: 1e300}, {a: 1, b: math.Inf(1)}, {a: math.NaN(), b: 1}, {a: -1, b: 2}}
	for trial := range 3000 {
		mix := mixes[trial%len(mixes)]
		n := 1 + rng.IntN(128)
		docs, freqs := make([]uint32, n), make([]uint32, n)
		for k := range docs {
			docs[k] = rng.Uint32N(4096)
			freqs[k] = []uint32{1, 1, 1, 2 + rng.Uint32N(10), rng.Uint32(), 0}[rng.IntN(6)]
		}
		want := textMinima{minDL: math.MaxUint32, minTF: 1, minMix: math.Inf(1)}
		for k, doc := range docs {
			tf, dl := freqs[k], col.at(doc)
			want.maxTF = max(want.maxTF, tf)
			want.minDL, want.minTF = minRatio(want.minDL, want.minTF, dl, tf)
			want.minMix = min(want.minMix, mix.value(dl, tf))
		}
		got := blockMinima(docs, freqs, col, true, true, mix)
		same := got.maxTF == want.maxTF && got.minDL == want.minDL && got.minTF == want.minTF &&
			math.Float64bits(got.minMix) == math.Float64bits(want.minMix)
		if !same {
			t.Fatalf("trial %d mix %v: blockMinima %+v, per posting %+v", trial, mix, got, want)
		}
	}
}
