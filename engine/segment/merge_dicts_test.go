package segment

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestTermKeyOrdersAsBytes: whenever two terms' keys differ, they order
// the terms as bytes.Compare does (zero bytes, prefixes and terms longer
// than the key included), so the heap may compare keys first.
func TestTermKeyOrdersAsBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := []byte{0, 1, 'a', 'b', 0x7f, 0x80, 0xff}
	term := func() []byte {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return b
	}
	for i := 0; i < 200000; i++ {
		a, b := term(), term()
		ka, kb := termKey(a), termKey(b)
		if ka == kb {
			continue
		}
		if (ka < kb) != (bytes.Compare(a, b) < 0) {
			t.Fatalf("%q (key %#x) and %q (key %#x) order differently", a, ka, b, kb)
		}
	}
}
