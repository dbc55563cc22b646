package schema

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The functions of this file read JSON values that memberScanner has
// already checked: they trust the syntax and never fail.

// unquote returns the text of a checked string literal (quotes included)
// exactly as encoding/json decodes it: an escaped lone or reversed UTF-16
// surrogate becomes U+FFFD.
func unquote(lit []byte) string {
	s := lit[1 : len(lit)-1]
	i := bytes.IndexByte(s, '\\')
	if i < 0 {
		return string(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		b.Write(s[:i])
		s = s[i:]
		switch e := s[1]; e {
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r := hex4(s[2:6])
			s = s[6:]
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
					r2 = hex4(s[2:6])
				}
				if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
					b.WriteRune(dec)
					s = s[6:]
				} else {
					b.WriteRune(unicode.ReplacementChar)
				}
			} else {
				b.WriteRune(r)
			}
			i = bytes.IndexByte(s, '\\')
			if i < 0 {
				b.Write(s)
				return b.String()
			}
			continue
		default: // '"', '\\', '/'
			b.WriteByte(e)
		}
		s = s[2:]
		i = bytes.IndexByte(s, '\\')
		if i < 0 {
			b.Write(s)
			return b.String()
		}
	}
}

// hex4 reads four checked hex digits.
func hex4(h []byte) rune {
	return unhex(h[0])<<12 | unhex(h[1])<<8 | unhex(h[2])<<4 | unhex(h[3])
}

// skipValue returns the end of the checked value starting at data[i].
func skipValue(data []byte, i int) int {
	depth := 0
	for {
		switch data[i] {
		case '"':
			i++
			for data[i] != '"' {
				if data[i] == '\\' {
					i++
				}
				i++
			}
			i++
		case '{', '[':
			depth++
			i++
			continue
		case '}', ']':
			depth--
			i++
		case ',', ':', ' ', '\t', '\r', '\n':
			i++
			continue
		default: // a number or a literal
			for i < len(data) && !isDelim(data[i]) {
				i++
			}
		}
		if depth == 0 {
			return i
		}
	}
}

func isDelim(c byte) bool {
	return c == ',' || c == ']' || c == '}' || c == ':' || isSpace(c)
}

// arrayItems appends the elements of a checked array to items.
func arrayItems(arr []byte, items [][]byte) [][]byte {
	i := 1
	for {
		for isSpace(arr[i]) {
			i++
		}
		if arr[i] == ']' {
			return items
		}
		end := skipValue(arr, i)
		items = append(items, arr[i:end])
		i = end
		for isSpace(arr[i]) {
			i++
		}
		if arr[i] == ']' {
			return items
		}
		i++ // ','
	}
}

// appendCompact appends a checked value without the whitespace outside
// its strings, as json.Compact does.
func appendCompact(dst, val []byte) []byte {
	if val[0] != '{' && val[0] != '[' {
		return append(dst, val...)
	}
	start := 0
	for i := 0; i < len(val); i++ {
		switch c := val[i]; {
		case c == '"':
			for i++; val[i] != '"'; i++ {
				if val[i] == '\\' {
					i++
				}
			}
		case isSpace(c):
			dst = append(dst, val[start:i]...)
			start = i + 1
		}
	}
	return append(dst, val[start:]...)
}

// appendName appends a field name as json.Marshal writes it.
func appendName(dst []byte, name string) []byte {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(name)
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, name...)
	return append(dst, '"')
}
