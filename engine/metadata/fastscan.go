package metadata

import "unicode/utf8"

// The byte-level reading of decodeFast: whitespace, literals, integers,
// strings without escapes, and skipping a value whole.

// ws skips JSON whitespace.
func (d *fastDecoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// eat consumes c if it is the next byte.
func (d *fastDecoder) eat(c byte) bool {
	if d.pos < len(d.data) && d.data[d.pos] == c {
		d.pos++
		return true
	}
	return false
}

// literal consumes the literal lit (true, false, null) if it is next.
func (d *fastDecoder) literal(lit string) bool {
	if len(d.data)-d.pos < len(lit) || string(d.data[d.pos:d.pos+len(lit)]) != lit {
		return false
	}
	d.pos += len(lit)
	return true
}

// uint reads a non-negative integer of at most max, written in plain
// decimal digits.
func (d *fastDecoder) uint(max uint64) (uint64, bool) {
	start := d.pos
	var v uint64
	for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
		next := v*10 + uint64(d.data[d.pos]-'0')
		if next/10 != v {
			return 0, false // overflow
		}
		v = next
		d.pos++
	}
	n := d.pos - start
	if n == 0 || (d.data[start] == '0' && n > 1) {
		return 0, false
	}
	if d.pos < len(d.data) {
		// A fraction or an exponent: the reference decides.
		if c := d.data[d.pos]; c == '.' || c == 'e' || c == 'E' {
			return 0, false
		}
	}
	return v, v <= max
}

// str reads a string without escapes or control characters, in valid
// UTF-8; the bytes alias the text.
func (d *fastDecoder) str() ([]byte, bool) {
	if !d.eat('"') {
		return nil, false
	}
	start, ascii := d.pos, true
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			s := d.data[start:d.pos]
			d.pos++
			return s, ascii || utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
		d.pos++
	}
	return nil, false
}

// skipValue skips one JSON value (objects and arrays nested at most 64
// deep), checking the delimiters only: the schema's decoder checks the
// rest.
func (d *fastDecoder) skipValue(depth int) bool {
	d.ws()
	if d.pos >= len(d.data) || depth > 64 {
		return false
	}
	switch c := d.data[d.pos]; c {
	case '{', '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		d.pos++
		for n := 0; ; n++ {
			d.ws()
			if d.eat(closing) {
				return true
			}
			if n > 0 && !d.eat(',') {
				return false
			}
			if c == '{' {
				d.ws()
				if !d.skipString() {
					return false
				}
				d.ws()
				if !d.eat(':') {
					return false
				}
			}
			if !d.skipValue(depth + 1) {
				return false
			}
		}
	case '"':
		return d.skipString()
	default:
		start := d.pos
		for d.pos < len(d.data) && !isDelimiter(d.data[d.pos]) {
			d.pos++
		}
		return d.pos > start
	}
}

// isDelimiter reports whether c ends a number or a literal.
func isDelimiter(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ']', '}', ':', '[', '{', '"':
		return true
	}
	return false
}

// skipString skips a string, escapes included.
func (d *fastDecoder) skipString() bool {
	if !d.eat('"') {
		return false
	}
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case '"':
			d.pos++
			return true
		case '\\':
			d.pos++
		}
		d.pos++
	}
	return false
}
