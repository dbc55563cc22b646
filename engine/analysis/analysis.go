// Package analysis turns text into index terms: Unicode letter/digit runs,
// lower-cased, with their positions. Index and query sides share it.
package analysis

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxTermBytes is the longest term kept; longer runs are skipped (they are
// almost always base64 or hashes, and would bloat the dictionary).
const MaxTermBytes = 64

// Tokenize calls fn for each term of text with its position (0-based, one
// per term, skipped terms still advance the position).
func Tokenize(text string, fn func(term string, pos uint32)) {
	var pos uint32
	start := -1
	for i := 0; i <= len(text); {
		r, size := rune(0), 0
		if i < len(text) {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		isWord := i < len(text) && (unicode.IsLetter(r) || unicode.IsDigit(r))
		if isWord {
			if start < 0 {
				start = i
			}
			i += size
			continue
		}
		if start >= 0 {
			if i-start <= MaxTermBytes {
				fn(lower(text[start:i]), pos)
			}
			pos++
			start = -1
		}
		if i == len(text) {
			break
		}
		i += size
	}
}

// Terms returns the terms of text in order.
func Terms(text string) []string {
	var out []string
	Tokenize(text, func(t string, _ uint32) { out = append(out, t) })
	return out
}

func lower(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			return strings.ToLower(s)
		}
	}
	return s
}
