package segment

import (
	"bytes"
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
		for _, kind := range []byte{bmExact, bmTokenized} {
			tok := kind == bmTokenized
			rec := e.encodeText(nil, kind, docs, freqs, norm)
			if !matchTextRecord(rec, tok, docs, freqs, norm) {
				t.Fatalf("trial %d kind %d: the encoder's own record does not match", trial, kind)
			}
			for i := range rec {
				bad := bytes.Clone(rec)
				bad[i] ^= byte(1 << uint(rng.IntN(8)))
				if matchTextRecord(bad, tok, docs, freqs, norm) {
					t.Fatalf("trial %d kind %d: byte %d changed and still matches", trial, kind, i)
				}
				if matchTextRecord(rec[:i], tok, docs, freqs, norm) {
					t.Fatalf("trial %d kind %d: cut to %d bytes and still matches", trial, kind, i)
				}
			}
			if matchTextRecord(append(bytes.Clone(rec), 0), tok, docs, freqs, norm) {
				t.Fatalf("trial %d kind %d: an extra byte still matches", trial, kind)
			}
			// The block count (first byte, below 0x80 here) written in
			// two bytes: the same value, other bytes.
			if rec[0] < 0x80 {
				long := append([]byte{rec[0] | 0x80, 0}, rec[1:]...)
				if matchTextRecord(long, tok, docs, freqs, norm) {
					t.Fatalf("trial %d kind %d: an over-long block count still matches", trial, kind)
				}
			}
		}
	}
}
