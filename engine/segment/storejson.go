package segment

import (
	"bytes"
	"unicode/utf8"

	"github.com/summadev/summa/engine/internal/jsonvalid"
	"github.com/summadev/summa/engine/schema"
)

// scanStoredStrings is the fast path of stringsFromJSON: it checks stored
// is valid JSON, then walks the members of its top-level object and
// returns, per field of kind recStoredStrings, the raw value of its last
// member (nil when absent), as decoding into a map[string]json.RawMessage
// would. ok is false, and the caller decodes with encoding/json, when
// stored is not valid JSON, not an object, or has a key whose decoding
// could differ from its bytes (an escape or a non-ASCII byte).
func scanStoredStrings(stored []byte, s *schema.Schema, kinds []byte) (raws [][]byte, ok bool) {
	if !jsonvalid.Valid(stored) {
		return nil, false
	}
	b := stored
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	raws = make([][]byte, len(kinds))
	i = skipSpace(b, i+1)
	if b[i] == '}' {
		return raws, true
	}
	for {
		// b[i] is the opening quote of a key: the JSON is valid.
		end := i + 1
		for b[end] != '"' {
			if b[end] == '\\' || b[end] >= utf8.RuneSelf {
				return nil, false
			}
			end++
		}
		key := b[i+1 : end]
		i = skipSpace(b, end+1) + 1 // past the colon
		i = skipSpace(b, i)
		vEnd := skipValue(b, i)
		for f, k := range kinds {
			if k == recStoredStrings && s.Fields[f].Name == string(key) {
				raws[f] = b[i:vEnd:vEnd]
			}
		}
		i = skipSpace(b, vEnd)
		if b[i] == '}' {
			return raws, true
		}
		i = skipSpace(b, i+1) // past the comma
	}
}

// skipSpace returns the index of the first non-space byte of b at or
// after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value starting at b[i], in a
// document known to be valid.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r', ',', '}', ']':
			return i
		}
		i++
	}
	return i
}

// skipString returns the end of the JSON string starting at b[i], in a
// document known to be valid: the first quote after b[i] not preceded by
// an odd run of backslashes (in valid JSON a backslash always opens an
// escape, and `\\` is one).
func skipString(b []byte, i int) int {
	for i++; ; {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return len(b)
		}
		q += i
		run := 0
		for q-run-1 >= i && b[q-run-1] == '\\' {
			run++
		}
		if run%2 == 0 {
			return q + 1
		}
		i = q + 1
	}
}

// plainJSONString returns the value of a JSON string without escapes whose
// bytes are valid UTF-8: the bytes between the quotes, what decoding it
// would give. ok is false for anything else.
func plainJSONString(raw []byte) (string, bool) {
	if !isPlainJSONString(raw) {
		return "", false
	}
	return string(raw[1 : len(raw)-1]), true
}

// isPlainJSONString reports whether plainJSONString accepts raw.
func isPlainJSONString(raw []byte) bool {
	if len(raw) < 2 || raw[0] != '"' {
		return false
	}
	in := raw[1 : len(raw)-1]
	return bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in)
}
