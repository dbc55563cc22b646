package schema

import (
	"bytes"
	"strconv"
)

// maxNestingDepth bounds the nesting of one member's value, as
// encoding/json bounds a decoded value: 10000 levels counted from the
// value itself, not from the document object around it.
const maxNestingDepth = 10000

// member is where one known field's value lies in the document.
type member struct {
	start, end int
	present    bool
}

// memberScanner is the first pass of ParseDocument: it checks the JSON
// syntax of a whole document object once (RFC 8259, as encoding/json
// accepts it) and records where each known field's value lies. It refuses
// what encoding/json's Decoder refused when the document was read member
// by member: a malformed value is reported with its member's name, a
// repeated member with "field appears twice" once its value has been read,
// and any other malformation without a field. The input is valid UTF-8.
type memberScanner struct {
	s    *Schema
	data []byte
	pos  int
	// stack holds the closing byte of each array or object open in the
	// value being read.
	stack []byte
	// firstUnknown is the first member that names no field; unknown holds
	// the unknown names read so far (nil when there is none), to find
	// repeats among them.
	firstUnknown string
	unknown      map[string]struct{}
}

// scanError is a syntax error, worded as encoding/json words it.
type scanError struct {
	msg string
}

func (e *scanError) Error() string { return e.msg }

var errUnexpectedEOF = &scanError{msg: "unexpected EOF"}

// badChar is encoding/json's wording for an unexpected byte.
func badChar(c byte, context string) *scanError {
	return &scanError{msg: "invalid character " + quoteChar(c) + " " + context}
}

// quoteChar formats c the way encoding/json's syntax errors do.
func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	s := strconv.Quote(string(rune(c)))
	return "'" + s[1:len(s)-1] + "'"
}

func malformed(field string, err *scanError) error {
	return docErr(field, "malformed JSON: %s", err.msg)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func (m *memberScanner) skipSpace() {
	for m.pos < len(m.data) && isSpace(m.data[m.pos]) {
		m.pos++
	}
}

// scan reads the document object into spans (one per schema field).
func (m *memberScanner) scan(spans []member) error {
	m.skipSpace()
	if m.pos == len(m.data) {
		return docErr("", "malformed JSON: EOF")
	}
	switch c := m.data[m.pos]; c {
	case '{':
	case '[':
		return docErr("", "a document must be a JSON object")
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 't', 'f', 'n':
		if err := m.value(); err != nil {
			return malformed("", err)
		}
		return docErr("", "a document must be a JSON object")
	default:
		return malformed("", badChar(c, "looking for beginning of value"))
	}
	m.pos++
	m.skipSpace()
	if m.pos < len(m.data) && m.data[m.pos] == '}' {
		m.pos++
		return m.end()
	}
	for {
		if m.pos == len(m.data) {
			return docErr("", "malformed JSON: EOF")
		}
		if c := m.data[m.pos]; c != '"' {
			return malformed("", badChar(c, "looking for beginning of object key string"))
		}
		keyStart := m.pos
		if err := m.str(); err != nil {
			return malformed("", err)
		}
		key := m.data[keyStart:m.pos]
		name := ""
		ord, known := -1, false
		if bytes.IndexByte(key, '\\') < 0 {
			ord, known = m.s.byName[string(key[1:len(key)-1])]
			if !known {
				name = string(key[1 : len(key)-1])
			}
		} else {
			name = unquote(key)
			ord, known = m.s.byName[name]
		}
		if known {
			name = m.s.Fields[ord].Name
		}
		m.skipSpace()
		if m.pos == len(m.data) {
			return docErr(name, "malformed JSON: EOF")
		}
		if m.data[m.pos] != ':' {
			return docErr(name, "malformed JSON: expected colon after object key")
		}
		m.pos++
		m.skipSpace()
		start := m.pos
		if err := m.value(); err != nil {
			return malformed(name, err)
		}
		if known {
			if spans[ord].present {
				return docErr(name, "field appears twice")
			}
			spans[ord] = member{start: start, end: m.pos, present: true}
		} else {
			if _, dup := m.unknown[name]; dup {
				return docErr(name, "field appears twice")
			}
			if m.unknown == nil {
				m.unknown = make(map[string]struct{})
				m.firstUnknown = name
			}
			m.unknown[name] = struct{}{}
		}
		m.skipSpace()
		if m.pos == len(m.data) {
			return docErr("", "malformed JSON: EOF")
		}
		switch c := m.data[m.pos]; c {
		case ',':
			m.pos++
			m.skipSpace()
		case '}':
			m.pos++
			return m.end()
		default:
			return malformed("", badChar(c, "after object key:value pair"))
		}
	}
}

// end requires nothing but whitespace after the document object.
func (m *memberScanner) end() error {
	m.skipSpace()
	if m.pos != len(m.data) {
		return docErr("", "trailing data after the JSON object")
	}
	return nil
}

// value reads one JSON value at m.pos (whitespace skipped), nested
// arrays and objects included, at most maxNestingDepth levels deep.
func (m *memberScanner) value() *scanError {
	d := m.data
	m.stack = m.stack[:0]
	for {
		// A value starts at m.pos.
		if m.pos == len(d) {
			return errUnexpectedEOF
		}
		switch c := d[m.pos]; c {
		case '{', '[':
			close := byte('}')
			if c == '[' {
				close = ']'
			}
			m.stack = append(m.stack, close)
			if len(m.stack) > maxNestingDepth {
				return badChar(c, "exceeded max depth")
			}
			m.pos++
			m.skipSpace()
			if m.pos == len(d) {
				return errUnexpectedEOF
			}
			if d[m.pos] == close {
				m.pos++
				m.stack = m.stack[:len(m.stack)-1]
				break
			}
			if close == '}' {
				if err := m.objectKey(); err != nil {
					return err
				}
			}
			continue
		case '"':
			if err := m.str(); err != nil {
				return err
			}
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			if err := m.number(); err != nil {
				return err
			}
		case 't':
			if err := m.literal("true"); err != nil {
				return err
			}
		case 'f':
			if err := m.literal("false"); err != nil {
				return err
			}
		case 'n':
			if err := m.literal("null"); err != nil {
				return err
			}
		default:
			return badChar(c, "looking for beginning of value")
		}
		// A value ended: close containers or move to the next element.
		for next := false; !next; {
			if len(m.stack) == 0 {
				return nil
			}
			m.skipSpace()
			if m.pos == len(d) {
				return errUnexpectedEOF
			}
			top := m.stack[len(m.stack)-1]
			switch c := d[m.pos]; {
			case c == ',':
				m.pos++
				m.skipSpace()
				if top == '}' {
					if err := m.objectKey(); err != nil {
						return err
					}
				}
				next = true
			case c == top:
				m.pos++
				m.stack = m.stack[:len(m.stack)-1]
			case top == '}':
				return badChar(c, "after object key:value pair")
			default:
				return badChar(c, "after array element")
			}
		}
	}
}

// objectKey reads a member name and its colon inside a value, leaving
// m.pos at the member's value.
func (m *memberScanner) objectKey() *scanError {
	if m.pos == len(m.data) {
		return errUnexpectedEOF
	}
	if c := m.data[m.pos]; c != '"' {
		return badChar(c, "looking for beginning of object key string")
	}
	if err := m.str(); err != nil {
		return err
	}
	m.skipSpace()
	if m.pos == len(m.data) {
		return errUnexpectedEOF
	}
	if c := m.data[m.pos]; c != ':' {
		return badChar(c, "after object key")
	}
	m.pos++
	m.skipSpace()
	return nil
}

// strPlain marks the bytes that a string copies as they are.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str reads a string literal: no control characters, only JSON escapes.
func (m *memberScanner) str() *scanError {
	d := m.data
	i := m.pos + 1
	for {
		for i < len(d) && strPlain[d[i]] {
			i++
		}
		if i >= len(d) {
			return errUnexpectedEOF
		}
		switch c := d[i]; c {
		case '"':
			m.pos = i + 1
			return nil
		case '\\':
			if i+1 >= len(d) {
				return errUnexpectedEOF
			}
			switch e := d[i+1]; e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				i += 2
				for k := 0; k < 4; k++ {
					if i >= len(d) {
						return errUnexpectedEOF
					}
					if unhex(d[i]) < 0 {
						return badChar(d[i], `in \u hexadecimal character escape`)
					}
					i++
				}
			default:
				return badChar(e, "in string escape code")
			}
		default:
			return badChar(c, "in string literal")
		}
	}
}

func unhex(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// number reads a number literal: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
// Whatever follows the longest such literal is the caller's to judge.
func (m *memberScanner) number() *scanError {
	d := m.data
	i := m.pos
	if d[i] == '-' {
		i++
		if i == len(d) {
			return errUnexpectedEOF
		}
		if !isDigit(d[i]) {
			return badChar(d[i], "in numeric literal")
		}
	}
	if d[i] == '0' {
		i++
	} else {
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	var err *scanError
	if i < len(d) && d[i] == '.' {
		if i, err = digits(d, i+1, "after decimal point in numeric literal"); err != nil {
			return err
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i, err = digits(d, i, "in exponent of numeric literal"); err != nil {
			return err
		}
	}
	m.pos = i
	return nil
}

// digits reads the one or more digits of a number's fraction or exponent
// at d[i:] and returns the index after them; where says where they are in
// the error for a byte that is not a digit.
func digits(d []byte, i int, where string) (int, *scanError) {
	if i == len(d) {
		return i, errUnexpectedEOF
	}
	if !isDigit(d[i]) {
		return i, badChar(d[i], where)
	}
	for i < len(d) && isDigit(d[i]) {
		i++
	}
	return i, nil
}

// literal reads true, false or null.
func (m *memberScanner) literal(lit string) *scanError {
	d := m.data
	for k := 0; k < len(lit); k++ {
		i := m.pos + k
		if i == len(d) {
			return errUnexpectedEOF
		}
		if d[i] != lit[k] {
			return badChar(d[i], "in literal "+lit+" (expecting "+quoteChar(lit[k])+")")
		}
	}
	m.pos += len(lit)
	return nil
}
