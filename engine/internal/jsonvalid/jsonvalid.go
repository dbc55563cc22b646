// Package jsonvalid tells whether bytes are one JSON value, with exactly
// the answers of encoding/json.Valid, several times faster: the full
// validation of a segment checks every stored document, and json.Valid's
// byte-at-a-time state machine was the largest share of a follower's
// catch-up. The rules are those of json.Valid's scanner:
//
//   - one value, with only space, tab, CR and LF around it;
//   - strings may hold any byte from 0x20 up (invalid UTF-8 included),
//     but no control byte, and only the escapes \" \\ \/ \b \f \n \r \t
//     and \u with four hex digits (any code unit, lone surrogates too);
//   - numbers as RFC 8259 spells them, literals true, false and null;
//   - at most 10,000 arrays and objects open at once.
//
// FuzzValid checks the answers against json.Valid's on arbitrary bytes.
package jsonvalid

import "encoding/binary"

// maxDepth is json.Valid's nesting limit (encoding/json's maxNestingDepth).
const maxDepth = 10000

// stack records whether each open container is an object (bit set) or an
// array, as a bit per level: the first 256 levels in place, deeper ones
// in words allocated when first reached.
type stack struct {
	small [4]uint64
	big   []uint64
	depth int
}

// word returns the word holding level d's bit.
func (s *stack) word(d int) *uint64 {
	w := d / 64
	if w < len(s.small) {
		return &s.small[w]
	}
	w -= len(s.small)
	for len(s.big) <= w {
		s.big = append(s.big, 0)
	}
	return &s.big[w]
}

// push opens a container; false past maxDepth.
func (s *stack) push(object bool) bool {
	if s.depth == maxDepth {
		return false
	}
	w, b := s.word(s.depth), uint(s.depth%64)
	if object {
		*w |= 1 << b
	} else {
		*w &^= 1 << b
	}
	s.depth++
	return true
}

// inObject tells whether the innermost open container is an object.
func (s *stack) inObject() bool {
	d := s.depth - 1
	return *s.word(d)&(1<<uint(d%64)) != 0
}

// Valid reports whether data is one valid JSON value, exactly as
// encoding/json.Valid does.
func Valid(data []byte) bool {
	var st stack
	i := skipSpace(data, 0)
	for {
		// A value starts at i.
		if i >= len(data) {
			return false
		}
		switch c := data[i]; {
		case c == '{' || c == '[':
			object := c == '{'
			if !st.push(object) {
				return false
			}
			i = skipSpace(data, i+1)
			if i < len(data) && data[i] == c+2 { // '}' or ']': empty
				st.depth--
				i++
				break
			}
			if object {
				if i = member(data, i); i < 0 {
					return false
				}
			}
			continue
		case c == '"':
			i = stringEnd(data, i+1)
		case c == 't':
			i = literal(data, i, "true")
		case c == 'f':
			i = literal(data, i, "false")
		case c == 'n':
			i = literal(data, i, "null")
		case c == '-' || (c >= '0' && c <= '9'):
			i = number(data, i)
		default:
			return false
		}
		if i < 0 {
			return false
		}
		// After a value: close containers, or go on to the next value.
		if i = next(data, i, &st); i < 0 {
			return false
		}
		if st.depth == 0 {
			return i == len(data)
		}
	}
}

// next skips what follows a value ending at i: closing brackets, then
// either a comma and, in an object, the next member's key and colon, or
// the end of the text at depth 0. It returns the index of the next value
// (or of the end), or -1 when the text is not valid.
func next(data []byte, i int, st *stack) int {
	for {
		i = skipSpace(data, i)
		if st.depth == 0 {
			return i
		}
		if i >= len(data) {
			return -1
		}
		c := data[i]
		if st.inObject() {
			switch c {
			case ',':
				return member(data, skipSpace(data, i+1))
			case '}':
				st.depth--
				i++
				continue
			}
			return -1
		}
		switch c {
		case ',':
			return skipSpace(data, i+1)
		case ']':
			st.depth--
			i++
			continue
		}
		return -1
	}
}

// member reads an object member's key and colon starting at i and returns
// the index of its value, or -1.
func member(data []byte, i int) int {
	if i >= len(data) || data[i] != '"' {
		return -1
	}
	if i = stringEnd(data, i+1); i < 0 {
		return -1
	}
	i = skipSpace(data, i)
	if i >= len(data) || data[i] != ':' {
		return -1
	}
	return skipSpace(data, i+1)
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// literal checks that data holds lit at i and returns its end, or -1.
func literal(data []byte, i int, lit string) int {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// number returns the end of the number starting at i (a '-' or a digit),
// or -1 when it is malformed. What follows it is checked by the caller.
func number(data []byte, i int) int {
	if data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data):
		return -1
	case data[i] == '0':
		i++
	case data[i] >= '1' && data[i] <= '9':
		i = digits(data, i+1)
	default:
		return -1
	}
	if i < len(data) && data[i] == '.' {
		i++
		if i >= len(data) || !isDigit(data[i]) {
			return -1
		}
		i = digits(data, i+1)
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || !isDigit(data[i]) {
			return -1
		}
		i = digits(data, i+1)
	}
	return i
}

// digits returns the index of the first byte at or after i that is not a
// decimal digit.
func digits(data []byte, i int) int {
	for i < len(data) && isDigit(data[i]) {
		i++
	}
	return i
}

// isDigit tells whether c is a decimal digit.
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// SWAR constants: a byte's high bit, and bytes of 0x01, 0x20, '"' and '\\'.
const (
	highs  = 0x8080808080808080
	ones   = 0x0101010101010101
	spaces = 0x2020202020202020
	quotes = 0x2222222222222222
	slashs = 0x5c5c5c5c5c5c5c5c
)

// plain8 tells whether none of the 8 bytes of x is a control byte, a quote
// or a backslash (exact: the tests are the classic "has a byte less than
// n" ones, exact for presence).
func plain8(x uint64) bool {
	ctl := (x - spaces) &^ x
	q := x ^ quotes
	q = (q - ones) &^ q
	b := x ^ slashs
	b = (b - ones) &^ b
	return (ctl|q|b)&highs == 0
}

// stringEnd returns the index after the closing quote of the string whose
// contents start at i, or -1 when it is not a valid JSON string.
func stringEnd(data []byte, i int) int {
	for {
		for i+8 <= len(data) && plain8(binary.LittleEndian.Uint64(data[i:])) {
			i += 8
		}
		if i >= len(data) {
			return -1
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			if i = escapeEnd(data, i+1); i < 0 {
				return -1
			}
		case c < 0x20:
			return -1
		default:
			i++
		}
	}
}

// escapeEnd returns the end of the escape whose letter is at i, or -1.
func escapeEnd(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 1
	case 'u':
		if len(data)-i < 5 {
			return -1
		}
		for _, h := range data[i+1 : i+5] {
			if !isHex(h) {
				return -1
			}
		}
		return i + 5
	}
	return -1
}

// isHex tells whether c is a hexadecimal digit.
func isHex(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
