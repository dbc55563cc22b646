package codec

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
)

// sortedDocs returns n strictly increasing doc ids from lo with gaps up
// to spread.
func sortedDocs(rng *rand.Rand, n int, lo, spread uint32) []uint32 {
	docs := make([]uint32, n)
	d := lo
	for i := range docs {
		if i > 0 {
			d += 1 + uint32(rng.IntN(int(spread)))
		}
		docs[i] = d
	}
	return docs
}

// TestPForRoundTrip checks that UnpackPFor and PForSize read back what
// AppendPFor wrote, exceptions included, and reject a truncated block.
func TestPForRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 500; trial++ {
		vals := make([]uint32, 1+rng.IntN(BlockSize))
		for i := range vals {
			vals[i] = uint32(rng.IntN(16))
			if rng.IntN(20) == 0 {
				vals[i] = rng.Uint32()
			}
		}
		blk := AppendPFor([]byte{7}, vals)
		out := make([]uint32, len(vals))
		end, err := UnpackPFor(blk, 1, out)
		if err != nil || end != len(blk) || !slices.Equal(out, vals) {
			t.Fatalf("trial %d: end %d of %d, err %v, equal %v", trial, end, len(blk), err, slices.Equal(out, vals))
		}
		if n, ok := PForSize(blk, 1, len(vals)); !ok || n != len(blk)-1 {
			t.Fatalf("trial %d: PForSize %d %v, want %d", trial, n, ok, len(blk)-1)
		}
		if _, err := UnpackPFor(blk[:len(blk)-1], 1, out); err == nil {
			t.Fatalf("trial %d: truncated block decoded", trial)
		}
	}
}

// TestInterpBlockRoundTrip checks ReadInterpBlock against
// AppendInterpBlock and its doc-id range check.
func TestInterpBlockRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 200; trial++ {
		prev := int64(rng.IntN(1000)) - 1
		docs := sortedDocs(rng, BlockSize, uint32(prev+1), 1+uint32(trial%7))
		blk := AppendInterpBlock(nil, docs, prev)
		out := make([]uint32, BlockSize)
		end, ok := ReadInterpBlock(blk, 0, prev, docs[BlockSize-1]+1, out)
		if !ok || end != len(blk) || !slices.Equal(out, docs) {
			t.Fatalf("trial %d: end %d of %d, ok %v", trial, end, len(blk), ok)
		}
		if _, ok := ReadInterpBlock(blk, 0, prev, docs[BlockSize-1], out); ok {
			t.Fatalf("trial %d: a doc id at numDocs decoded", trial)
		}
	}
}

// TestTailDocsRoundTrip checks ReadTailDocs against AppendTailDocs with
// gamma frequencies after the doc ids, as a docs section's tail has them.
func TestTailDocsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 1000; trial++ {
		lo := uint32(rng.IntN(100))
		docs := sortedDocs(rng, 1+rng.IntN(BlockSize-1), lo, []uint32{1, 3, 500}[trial%3])
		hi := docs[len(docs)-1] + uint32(rng.IntN(10))
		var w BitWriter
		AppendTailDocs(&w, docs, lo, hi)
		w.Gamma(uint32(1 + trial))
		w.Align()
		r := NewBitReader(w.buf)
		out := make([]uint32, len(docs))
		if !ReadTailDocs(&r, out, int64(lo), int64(hi)) || !slices.Equal(out, docs) {
			t.Fatalf("trial %d: docs %v, read %v", trial, docs, out)
		}
		if f, ok := r.Gamma(); !ok || f != uint32(1+trial) || (r.Pos()+7)/8 != uint64(len(w.buf)) {
			t.Fatalf("trial %d: frequency %d %v at bit %d of %d bytes", trial, f, ok, r.Pos(), len(w.buf))
		}
	}
}

// TestUvarintAt checks UvarintAt against binary.Uvarint, with its fast
// one-byte path, and its failures past the end and on a truncated value.
func TestUvarintAt(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 300, 1 << 40, 1<<64 - 1} {
		b := binary.AppendUvarint([]byte{0}, v)
		got, next, ok := UvarintAt(b, 1)
		if !ok || got != v || next != len(b) {
			t.Fatalf("%d: got %d, next %d, ok %v", v, got, next, ok)
		}
		if _, _, ok := UvarintAt(b[:len(b)-1], 1); ok {
			t.Fatalf("%d: truncated value read", v)
		}
	}
}
