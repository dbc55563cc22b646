package codec

import (
	"math/rand/v2"
	"testing"
)

// TestCodeLengthsMatchEncoders checks that interpBits, gapsGammaBits and
// interpBlockLen, which choose a code without writing it, count exactly
// what AppendInterp, appendGapsGamma and AppendInterpBlock write, on
// sparse, dense and clustered doc-id lists.
func TestCodeLengthsMatchEncoders(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	for trial := 0; trial < 2000; trial++ {
		n := 1 + rng.IntN(300)
		lo := uint32(rng.IntN(1000))
		spread := []uint32{1, 2, 8, 200, 1 << 16}[trial%5]
		docs := make([]uint32, n)
		d := lo
		for i := range docs {
			if i > 0 || rng.IntN(2) == 0 {
				d += 1 + uint32(rng.IntN(int(spread)))*uint32(rng.IntN(2))
			}
			docs[i] = d
		}
		hi := docs[n-1] + uint32(rng.IntN(50))
		var w BitWriter
		AppendInterp(&w, docs, lo, hi)
		if got := interpBits(docs, lo, hi); got != w.len {
			t.Fatalf("trial %d: interpBits %d, AppendInterp wrote %d bits", trial, got, w.len)
		}
		w = BitWriter{}
		appendGapsGamma(&w, docs, lo, hi)
		if got := gapsGammaBits(docs, lo, hi); got != w.len {
			t.Fatalf("trial %d: gapsGammaBits %d, appendGapsGamma wrote %d bits", trial, got, w.len)
		}
		if n >= BlockSize {
			prev := int64(docs[0]) - 1 - int64(rng.IntN(2))
			if prev < -1 {
				prev = -1
			}
			block := docs[n-BlockSize:]
			prev = min(prev, int64(block[0])-1)
			if got, want := interpBlockLen(block, prev), len(AppendInterpBlock(nil, block, prev)); got != want {
				t.Fatalf("trial %d: interpBlockLen %d, AppendInterpBlock wrote %d bytes", trial, got, want)
			}
		}
	}
}
