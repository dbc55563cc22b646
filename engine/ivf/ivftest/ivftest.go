// Package ivftest derives dense vectors from real text for the tests of
// the binary IVF: a hashed random projection of a text's words, so that
// texts sharing words get nearby vectors (and sign codes).
package ivftest

import (
	"hash/fnv"
	"strings"
)

// TextVector returns a dims-vector for text: every lower-cased word adds a
// pseudo-random ±1 vector seeded by the word's hash.
func TextVector(text string, dims int) []float32 {
	v := make([]float32, dims)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	}) {
		h := fnv.New64a()
		h.Write([]byte(w))
		x := h.Sum64()
		for i := range v {
			// xorshift64 stream seeded by the word
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			if x&1 == 1 {
				v[i]++
			} else {
				v[i]--
			}
		}
	}
	// Break exact zeros deterministically so that signs are defined.
	for i := range v {
		if v[i] == 0 {
			v[i] = 0.5 - float32(i%2)
		}
	}
	return v
}
