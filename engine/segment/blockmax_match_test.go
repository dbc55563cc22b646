package segment

import (
	"bytes"
	"encoding/binary"
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
	norm := func(d uint32) uint32 { return norms[d] }
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
			if !matchTextRecord(rec, l, docs, freqs, norm) {
				t.Fatalf("trial %d kind %d: the encoder's own record does not match", trial, kind)
			}
			for i := range rec {
				bad := bytes.Clone(rec)
				bad[i] ^= byte(1 << uint(rng.IntN(8)))
				if matchTextRecord(bad, l, docs, freqs, norm) {
					t.Fatalf("trial %d kind %d: byte %d changed and still matches", trial, kind, i)
				}
				if matchTextRecord(rec[:i], l, docs, freqs, norm) {
					t.Fatalf("trial %d kind %d: cut to %d bytes and still matches", trial, kind, i)
				}
			}
			if matchTextRecord(append(bytes.Clone(rec), 0), l, docs, freqs, norm) {
				t.Fatalf("trial %d kind %d: an extra byte still matches", trial, kind)
			}
			// The block count (first byte, below 0x80 here) written in
			// two bytes: the same value, other bytes.
			if rec[0] < 0x80 {
				long := append([]byte{rec[0] | 0x80, 0}, rec[1:]...)
				if matchTextRecord(long, l, docs, freqs, norm) {
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
		if !matchTextRecord(rec, bmLayout{kind: bmTokenized, mix: e.mix, supers: true}, docs, freqs, col.at) {
			b.Fatal("the encoder's own record does not match")
		}
	}
}
