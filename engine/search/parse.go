package search

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/summadev/summa/engine/analysis"
	"github.com/summadev/summa/engine/schema"
)

// MaxQueryBytes bounds the text of a string query.
const MaxQueryBytes = 16 << 10

// MaxClauses bounds the clauses of a string query and the dimensions of a
// sparse vector query.
const MaxClauses = 1024

// Parse reads a query as it arrives in a search request: a JSON string in
// the text query language, or a JSON object asking for a vector search
// ({"dense":{...}} or {"sparse":{...}}). Every refusal is a *QueryError.
func Parse(s *schema.Schema, q json.RawMessage) (Query, error) {
	q = bytes.TrimSpace(q)
	if len(q) == 0 || string(q) == "null" {
		return nil, queryErr("missing query")
	}
	switch q[0] {
	case '"':
		if len(q) > 6*MaxQueryBytes+2 { // the longest JSON escape of MaxQueryBytes
			return nil, queryErr("query longer than %d bytes", MaxQueryBytes)
		}
		var text string
		if err := json.Unmarshal(q, &text); err != nil {
			return nil, queryErr("malformed query string: %v", err)
		}
		return ParseString(s, text)
	case '{':
		return parseVector(s, q)
	}
	return nil, queryErr("a query is a string or a JSON object")
}

// ParseString parses the text query language: whitespace-separated clauses,
// each an optional '+' (must) or '-' (must not) followed by a term, a
// "quoted phrase", field:term or field:"quoted phrase". Bare terms and
// phrases search every indexed text field. Every refusal is a *QueryError.
func ParseString(s *schema.Schema, text string) (*TextQuery, error) {
	if len(text) > MaxQueryBytes {
		return nil, queryErr("query longer than %d bytes", MaxQueryBytes)
	}
	if !utf8.ValidString(text) {
		return nil, queryErr("query is not valid UTF-8")
	}
	p := parser{schema: s, text: text}
	q := &TextQuery{}
	n := 0
	for {
		p.skipSpace()
		if p.pos == len(p.text) {
			break
		}
		if n++; n > MaxClauses {
			return nil, queryErr("more than %d clauses", MaxClauses)
		}
		c, err := p.clause()
		if err != nil {
			return nil, err
		}
		if len(c.Terms) > 0 {
			q.Clauses = append(q.Clauses, c)
		}
	}
	if n == 0 {
		return nil, queryErr("empty query")
	}
	return q, nil
}

// parser walks the text of a string query.
type parser struct {
	// schema resolves field names.
	schema *schema.Schema
	// text is the whole query.
	text string
	// pos is the byte offset of the next unread character.
	pos int
}

func (p *parser) skipSpace() {
	for p.pos < len(p.text) {
		r, size := utf8.DecodeRuneInString(p.text[p.pos:])
		if !unicode.IsSpace(r) {
			return
		}
		p.pos += size
	}
}

// atClauseEnd reports whether the next character ends a clause.
func (p *parser) atClauseEnd() bool {
	if p.pos == len(p.text) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(p.text[p.pos:])
	return unicode.IsSpace(r)
}

// clause reads one clause; its Terms are empty when its text yields no
// index term.
func (p *parser) clause() (Clause, error) {
	start := p.pos
	c := Clause{Occur: Should}
	switch p.text[p.pos] {
	case '+':
		c.Occur = Must
		p.pos++
	case '-':
		c.Occur = MustNot
		p.pos++
	}
	if c.Occur != Should && p.atClauseEnd() {
		return c, queryErr("missing term after %q at byte %d", c.Occur.String(), start)
	}
	field, hasField := p.fieldPrefix()
	if hasField && p.atClauseEnd() {
		return c, queryErr("missing term after %q at byte %d", field+":", start)
	}
	value, err := p.value()
	if err != nil {
		return c, err
	}
	if hasField {
		return p.fieldClause(c, field, value)
	}
	return p.bareClause(c, value)
}

// fieldPrefix consumes "name:" when the clause starts with something shaped
// like a field name followed by a colon.
func (p *parser) fieldPrefix() (string, bool) {
	rest := p.text[p.pos:]
	rest = rest[:min(len(rest), 129)] // a field name has at most 128 bytes
	i := strings.IndexAny(rest, ":\"")
	if i <= 0 || rest[i] != ':' || !isFieldName(rest[:i]) {
		return "", false
	}
	p.pos += i + 1
	return rest[:i], true
}

// isFieldName reports whether s has the shape of a schema field name.
func isFieldName(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
		if !letter && (i == 0 || !(c == '.' || c == '-' || ('0' <= c && c <= '9'))) {
			return false
		}
	}
	return true
}

// value reads a bare term up to the next space, or a quoted phrase.
func (p *parser) value() (string, error) {
	start := p.pos
	if p.text[p.pos] == '"' {
		end := strings.IndexByte(p.text[p.pos+1:], '"')
		if end < 0 {
			return "", queryErr("unterminated quote at byte %d", start)
		}
		p.pos += end + 2
		if !p.atClauseEnd() {
			return "", queryErr("unexpected text after the closing quote at byte %d", p.pos-1)
		}
		v := p.text[start+1 : p.pos-1]
		if strings.TrimSpace(v) == "" {
			return "", queryErr("empty phrase at byte %d", start)
		}
		return v, nil
	}
	for !p.atClauseEnd() {
		if p.text[p.pos] == '"' {
			return "", queryErr("quote inside a term at byte %d; quote the whole value", p.pos)
		}
		_, size := utf8.DecodeRuneInString(p.text[p.pos:])
		p.pos += size
	}
	return p.text[start:p.pos], nil
}

// fieldClause resolves field:value against the schema.
func (p *parser) fieldClause(c Clause, name, value string) (Clause, error) {
	ord, ok := p.schema.Field(name)
	if !ok {
		return c, queryErr("unknown field %q", name)
	}
	f := &p.schema.Fields[ord]
	switch {
	case f.Type == schema.DenseVector || f.Type == schema.SparseVector:
		return c, queryErr("field %q is a vector field; use a vector query", name)
	case !f.IsIndexed():
		return c, queryErr("field %q is not indexed", name)
	}
	c.Fields = []int{ord}
	if f.IsTokenized() {
		c.Terms, c.Offsets = analyze(value)
		return c, nil
	}
	term, err := f.NormalizeExactTerm(value)
	if err != nil {
		return c, queryErr("%v", err)
	}
	c.Terms, c.Offsets = []string{term}, []uint32{0}
	return c, nil
}

// bareClause searches value in every indexed tokenized field.
func (p *parser) bareClause(c Clause, value string) (Clause, error) {
	for i := range p.schema.Fields {
		f := &p.schema.Fields[i]
		if f.IsTokenized() && f.IsIndexed() {
			c.Fields = append(c.Fields, i)
		}
	}
	if len(c.Fields) == 0 {
		return c, queryErr("the schema has no indexed text field for %q; name a field", value)
	}
	c.Terms, c.Offsets = analyze(value)
	return c, nil
}

// analyze splits text into index terms exactly as the index side does, with
// each term's position relative to the first.
func analyze(text string) (terms []string, offsets []uint32) {
	var first uint32
	analysis.Tokenize(text, func(t string, pos uint32) {
		if len(terms) == 0 {
			first = pos
		}
		terms = append(terms, t)
		offsets = append(offsets, pos-first)
	})
	return terms, offsets
}
