package segment

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/summadev/summa/engine/segment/codec"
)

// checkPositionsSimple is checkPositions without its eight-gap fast path,
// one varint at a time: the fast path must agree with it on every input.
func checkPositionsSimple(p *Postings, off int, doc, freq uint32) int {
	if uint64(freq) > uint64(len(p.pos)-off) {
		p.corrupt("positions section too short for %d positions of doc %d", freq, doc)
		return -1
	}
	var last uint64
	for i := uint32(0); i < freq; i++ {
		v, next, ok := codec.UvarintAt(p.pos, off)
		if !ok {
			p.corrupt("bad position varint of doc %d", doc)
			return -1
		}
		off = next
		if i > 0 {
			if v == 0 {
				p.corrupt("positions of doc %d not increasing", doc)
				return -1
			}
			v += last
		}
		if v > 1<<32-1 {
			p.corrupt("position %d of doc %d overflows", v, doc)
			return -1
		}
		last = v
	}
	return off
}

// agreePositions runs both checks of freq positions at pos[off:] and
// fails unless they return the same offset and the same error.
func agreePositions(t *testing.T, pos []byte, off int, freq uint32) {
	t.Helper()
	fast, simple := &Postings{pos: pos}, &Postings{pos: pos}
	gotOff, wantOff := fast.checkPositions(off, 7, freq), checkPositionsSimple(simple, off, 7, freq)
	if gotOff != wantOff || fmt.Sprint(fast.Err()) != fmt.Sprint(simple.Err()) {
		t.Fatalf("positions %x from %d, freq %d: fast %d %v, simple %d %v", pos, off, freq, gotOff, fast.Err(), wantOff, simple.Err())
	}
}

// TestCheckPositionsFastPathAgrees checks checkPositions against the
// one-varint-at-a-time check on valid runs of one-byte gaps and on runs
// with a zero gap, a long varint, an overflowing sum or a short section
// at every place, so that the eight-gap path meets each at every lane.
func TestCheckPositionsFastPathAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 1; n < 40; n++ {
		base := make([]byte, n)
		for i := range base {
			base[i] = byte(1 + rng.IntN(127))
		}
		for freq := uint32(0); freq <= uint32(n)+1; freq++ {
			agreePositions(t, base, 0, freq)
			if n > 1 {
				agreePositions(t, base, 1, freq)
			}
		}
		for at := range n {
			for _, b := range []byte{0, 0x80, 0x7f, 0xff} {
				pos := append([]byte(nil), base...)
				pos[at] = b
				agreePositions(t, pos, 0, uint32(n))
				agreePositions(t, pos, 0, uint32(n)-1)
			}
			// A first position just below 2^32: the gaps overflow it
			// inside an eight-gap word.
			big := append([]byte{0xfa, 0xff, 0xff, 0xff, 0x0f}, base...)
			agreePositions(t, big, 0, uint32(n)+1)
			big[0] = byte(0x80 | (0xff - at))
			agreePositions(t, big, 0, uint32(n)+1)
		}
	}
}

// TestShortPositionsPathAgrees checks checkPositions against the
// one-varint-at-a-time check on runs of one- and two-byte varints (what
// shortPositionsEnd reads a word at a time) with a zero byte, a 0x80 0x00
// gap, a three-byte varint or a cut at every place, from every offset.
func TestShortPositionsPathAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := 0; round < 300; round++ {
		n := 2 + rng.IntN(40)
		var base []byte
		for range n {
			if rng.IntN(2) == 0 {
				base = append(base, byte(1+rng.IntN(127)))
			} else {
				base = append(base, byte(0x80|rng.IntN(128)), byte(1+rng.IntN(127)))
			}
		}
		for freq := uint32(1); freq <= uint32(n)+1; freq++ {
			agreePositions(t, base, 0, freq)
		}
		for at := range base {
			for _, b := range []byte{0, 0x80, 0x81, 0x7f} {
				pos := append([]byte(nil), base...)
				pos[at] = b
				agreePositions(t, pos, 0, uint32(n))
				agreePositions(t, pos, 0, uint32(n)-1)
			}
			three := append(append(append([]byte(nil), base[:at]...), 0x81, 0x81), base[at:]...)
			agreePositions(t, three, 0, uint32(n))
			// Two gaps near 2^32 each: the sum overflows.
			huge := append(append(append([]byte(nil), base[:at]...), 0xff, 0xff, 0xff, 0xff, 0x0f, 0xff, 0xff, 0xff, 0xff, 0x0f), base[at:]...)
			agreePositions(t, huge, 0, uint32(n)+2)
			agreePositions(t, base[:at], 0, uint32(n))
			if at > 0 {
				agreePositions(t, base, at, uint32(n-at/2))
			}
		}
	}
}

// TestShortPositionsOverflowAtMaxFreq checks that two-byte gaps can
// overflow 2^32 only past maxShortFreq positions, where the word path
// stops taking them: 16,383 a gap, 2^18+64 gaps pass 2^32-1.
func TestShortPositionsOverflowAtMaxFreq(t *testing.T) {
	const freq = maxShortFreq + 64
	pos := make([]byte, 0, 2*freq)
	for range freq {
		pos = append(pos, 0xff, 0x7f)
	}
	p := &Postings{pos: pos}
	if off := p.checkPositions(0, 7, freq); off >= 0 {
		t.Fatalf("positions summing past 2^32 passed (offset %d)", off)
	}
	agreePositions(t, pos, 0, maxShortFreq-1)
}

// FuzzCheckPositions compares checkPositions with the one-varint-at-a-time
// check on arbitrary bytes.
func FuzzCheckPositions(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, uint8(0), uint16(12))
	f.Add([]byte{0xfa, 0xff, 0xff, 0xff, 0x0f, 9, 9, 9, 9, 9, 9, 9, 9, 9}, uint8(0), uint16(10))
	f.Add([]byte{5, 1, 1, 1, 0, 1, 1, 1, 1, 1}, uint8(1), uint16(9))
	f.Add([]byte{0x81, 0x01, 0x80, 0x00, 0xff, 0x7f, 0x80, 0x80, 0x01, 2}, uint8(0), uint16(5))
	f.Fuzz(func(t *testing.T, pos []byte, off uint8, freq uint16) {
		if int(off) > len(pos) {
			return
		}
		agreePositions(t, pos, int(off), uint32(freq))
	})
}

// TestEndBitsAndNthEnd checks endBits against the bytes of random words
// (one byte at a time) and nthEnd against clearing the lowest set bits.
func TestEndBitsAndNthEnd(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 100000 {
		w := rng.Uint64() & (rng.Uint64() | 0x7f7f7f7f7f7f7f7f)
		var want uint8
		for i := range 8 {
			if byte(w>>(8*i)) < 0x80 {
				want |= 1 << i
			}
		}
		if got := endBits(w); got != want {
			t.Fatalf("endBits(%#x) = %08b, want %08b", w, got, want)
		}
	}
	for m := range 256 {
		e := uint(m)
		for k := range 8 {
			want := uint8(8)
			if e != 0 {
				want = uint8(bits.TrailingZeros(e))
				e &= e - 1
			}
			if got := nthEnd[m][k]; got != want {
				t.Fatalf("nthEnd[%08b][%d] = %d, want %d", m, k, got, want)
			}
		}
	}
}

// TestBlockPositionsEndAgrees checks that whenever blockPositionsEnd
// accepts a block's positions as one run, checkPositions accepts each
// document's in turn and ends at the same offset, on runs of one- and
// two-byte varints with zero bytes, 0x80 0x00 gaps, three-byte varints
// and cuts, and frequencies of 0 to 40; and that it accepts valid blocks
// without zero positions.
func TestBlockPositionsEndAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	accepted := 0
	for round := 0; round < 20000; round++ {
		freqs := make([]uint32, 1+rng.IntN(8))
		var pos []byte
		for k := range freqs {
			freqs[k] = []uint32{0, 1, 1, 2, 3, uint32(rng.IntN(40))}[rng.IntN(6)]
			for range freqs[k] {
				if rng.IntN(3) == 0 {
					pos = append(pos, byte(0x80|rng.IntN(128)), byte(1+rng.IntN(127)))
				} else {
					pos = append(pos, byte(1+rng.IntN(127)))
				}
			}
		}
		if len(pos) > 0 && rng.IntN(2) == 0 {
			switch at := rng.IntN(len(pos)); rng.IntN(4) {
			case 0:
				pos[at] = 0
			case 1:
				pos[at] = 0x80
			case 2:
				pos = pos[:at]
			default:
				pos = append(append(append([]byte(nil), pos[:at]...), 0x81, 0x81), pos[at:]...)
			}
		}
		end, ok := blockPositionsEnd(pos, 0, freqs)
		if !ok {
			continue
		}
		accepted++
		p, off := &Postings{pos: pos}, 0
		for k, f := range freqs {
			if off = p.checkPositions(off, uint32(k), f); off < 0 {
				t.Fatalf("positions %x, freqs %v: the block passes, doc %d does not: %v", pos, freqs, k, p.Err())
			}
		}
		if off != end {
			t.Fatalf("positions %x, freqs %v: the block ends at %d, its documents at %d", pos, freqs, end, off)
		}
	}
	if accepted < 5000 {
		t.Fatalf("only %d blocks of 20000 took the block path", accepted)
	}
}
