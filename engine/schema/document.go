package schema

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/summadev/summa/engine/internal/strictjson"
)

// MaxTermBytes bounds a keyword value, a primary key and a sparse dimension name.
const MaxTermBytes = 1024

// MaxSparseEntries bounds the entries of one sparse vector.
const MaxSparseEntries = 65536

// MaxMultiValues bounds the number of values of one multi-valued field.
const MaxMultiValues = 65536

// Document is a validated document: typed values per field ordinal, its
// primary key and the JSON of its stored fields.
type Document struct {
	// PrimaryKey is the canonical text of the primary-key value; empty when
	// the schema has no primary field.
	PrimaryKey string
	// Fields holds each field's values by ordinal; a zero Values when absent.
	Fields []Values
	// Stored is the compact JSON object of the stored fields, in schema order.
	Stored []byte
}

// Values holds the values of one field of one document; only the slice
// matching the field's type is used.
type Values struct {
	// Strings holds text and keyword values.
	Strings []string
	// U64 holds u64 values.
	U64 []uint64
	// I64 holds i64 values.
	I64 []int64
	// F64 holds f64 values.
	F64 []float64
	// Dense holds a dense vector (len == Dims) or nil.
	Dense []float32
	// Sparse holds a sparse vector sorted by dimension, or nil.
	Sparse []SparseEntry
}

// Len returns the number of values held.
func (v *Values) Len() int {
	n := len(v.Strings) + len(v.U64) + len(v.I64) + len(v.F64) + len(v.Sparse)
	if v.Dense != nil {
		n++
	}
	return n
}

// SparseEntry is one dimension of a sparse vector.
type SparseEntry struct {
	// Dim names the dimension.
	Dim string
	// Weight is the dimension's value.
	Weight float32
}

// DocumentError is a rejected document; Field names the offending field when
// there is one.
type DocumentError struct {
	// Field is the offending field, or empty for whole-document errors.
	Field string
	// Reason says what is wrong.
	Reason string
}

func (e *DocumentError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return fmt.Sprintf("field %q: %s", e.Field, e.Reason)
}

func docErr(field, format string, args ...any) error {
	return &DocumentError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// ParseDocument validates one JSON object against the schema. Unknown
// fields, duplicate fields, wrong types, a missing primary key, vectors of
// the wrong size, invalid UTF-8 and malformed JSON are rejected with a
// *DocumentError.
//
// It reads the text in one pass that checks the syntax and finds each
// field's value (memberScanner), then reads the values of the schema's
// fields in schema order. Refusals come in the order of that reading:
// invalid UTF-8; the first malformation or repeated field in the text; an
// unknown field; then each field's own error, in schema order.
func (s *Schema) ParseDocument(data []byte) (*Document, error) {
	if !utf8.Valid(data) {
		return nil, docErr("", "invalid UTF-8")
	}
	var small [16]member
	spans := small[:0]
	if len(s.Fields) <= len(small) {
		spans = small[:len(s.Fields)]
	} else {
		spans = make([]member, len(s.Fields))
	}
	m := memberScanner{s: s, data: data}
	if err := m.scan(spans); err != nil {
		return nil, err
	}
	if m.unknown != nil {
		return nil, docErr(m.firstUnknown, "unknown field")
	}
	doc := &Document{Fields: make([]Values, len(s.Fields))}
	storedLen, nStrings := 2, 0
	for i := range s.Fields {
		f := &s.Fields[i]
		if sp := spans[i]; sp.present && f.IsStored() {
			storedLen += len(f.Name) + 4 + sp.end - sp.start
		}
		if spans[i].present && (f.Type == Text || f.Type == Keyword) {
			nStrings++
		}
	}
	// One value of each string field shares one allocation; a field's
	// slice has room for one, so more values move it elsewhere.
	strs := make([]string, nStrings)
	stored := make([]byte, 1, storedLen)
	stored[0] = '{'
	var items [][]byte
	for i := range s.Fields {
		f := &s.Fields[i]
		sp := spans[i]
		val := data[sp.start:sp.end]
		if !sp.present || string(val) == "null" {
			if f.Primary {
				return nil, docErr(f.Name, "missing primary key")
			}
			continue
		}
		out := &doc.Fields[i]
		if f.Type == Text || f.Type == Keyword {
			out.Strings, strs = strs[:0:1], strs[1:]
		}
		var err error
		if items, err = parseValues(f, val, out, items[:0]); err != nil {
			return nil, err
		}
		if out.Strings != nil && len(out.Strings) == 0 {
			out.Strings = nil // an empty array holds no value, as before
		}
		if f.Primary {
			doc.PrimaryKey = primaryKeyText(f, &doc.Fields[i])
			if doc.PrimaryKey == "" {
				return nil, docErr(f.Name, "primary key is empty")
			}
		}
		if f.IsStored() {
			if len(stored) > 1 {
				stored = append(stored, ',')
			}
			stored = appendName(stored, f.Name)
			stored = append(stored, ':')
			stored = appendCompact(stored, val)
		}
	}
	doc.Stored = append(stored, '}')
	return doc, nil
}

// parseValues reads one field's checked, non-null value into out; items
// is scratch space for the elements of an array, returned for reuse.
func parseValues(f *Field, val []byte, out *Values, items [][]byte) ([][]byte, error) {
	switch f.Type {
	case DenseVector:
		return items, parseDense(f, val, out)
	case SparseVector:
		return items, parseSparse(f, val, out)
	}
	if val[0] != '[' {
		return items, parseScalar(f, val, out)
	}
	if !f.Multi {
		return items, docErr(f.Name, "an array is accepted only for a field declared \"multi\": true")
	}
	items = arrayItems(val, items)
	if len(items) > MaxMultiValues {
		return items, docErr(f.Name, "%d values, at most %d allowed", len(items), MaxMultiValues)
	}
	for _, it := range items {
		if err := parseScalar(f, it, out); err != nil {
			return items, err
		}
	}
	return items, nil
}

// parseScalar reads one checked value of a text, keyword or numeric field.
func parseScalar(f *Field, it []byte, out *Values) error {
	switch f.Type {
	case Text, Keyword:
		if it[0] != '"' {
			return docErr(f.Name, "expected a string")
		}
		s := unquote(it)
		if (f.Type == Keyword || f.Primary) && len(s) > MaxTermBytes {
			return docErr(f.Name, "value of %d bytes, at most %d allowed", len(s), MaxTermBytes)
		}
		out.Strings = append(out.Strings, s)
	case U64:
		v, err := strconv.ParseUint(string(it), 10, 64)
		if err != nil {
			return docErr(f.Name, "expected an unsigned 64-bit integer, got %s", clip(it))
		}
		out.U64 = append(out.U64, v)
	case I64:
		v, err := strconv.ParseInt(string(it), 10, 64)
		if err != nil {
			return docErr(f.Name, "expected a signed 64-bit integer, got %s", clip(it))
		}
		out.I64 = append(out.I64, v)
	case F64:
		if it[0] != '-' && (it[0] < '0' || it[0] > '9') {
			return docErr(f.Name, "expected a number, got %s", clip(it))
		}
		v, err := strconv.ParseFloat(string(it), 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return docErr(f.Name, "expected a finite number, got %s", clip(it))
		}
		out.F64 = append(out.F64, v)
	}
	return nil
}

// parseDense reads a dense vector value; any null, non-number or
// out-of-range component refuses the document (nothing is read as 0).
func parseDense(f *Field, val []byte, out *Values) error {
	vec, err := denseFromJSON(val)
	if err != nil {
		return docErr(f.Name, "%v", err)
	}
	if len(vec) != f.Dims {
		return docErr(f.Name, "vector has %d dimensions, the schema says %d", len(vec), f.Dims)
	}
	out.Dense = vec
	return nil
}

// parseSparse reads a sparse vector value; a null or non-number weight or
// a repeated dimension refuses the document.
func parseSparse(f *Field, val []byte, out *Values) error {
	vec, err := sparseFromJSON(val, MaxSparseEntries)
	if err != nil {
		return docErr(f.Name, "%v", err)
	}
	out.Sparse = vec
	return nil
}

func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

func primaryKeyText(f *Field, v *Values) string {
	switch f.Type {
	case U64:
		return strconv.FormatUint(v.U64[0], 10)
	case I64:
		return strconv.FormatInt(v.I64[0], 10)
	}
	return v.Strings[0]
}

// ExactTerms returns the exact (untokenized) index terms of a non-tokenized,
// non-vector field's values: keywords, primary keys and numbers in their
// canonical text.
func (f *Field) ExactTerms(v *Values) []string {
	var out []string
	switch f.Type {
	case Text, Keyword:
		out = append(out, v.Strings...)
	case U64:
		for _, x := range v.U64 {
			out = append(out, strconv.FormatUint(x, 10))
		}
	case I64:
		for _, x := range v.I64 {
			out = append(out, strconv.FormatInt(x, 10))
		}
	case F64:
		for _, x := range v.F64 {
			out = append(out, strconv.FormatFloat(x, 'g', -1, 64))
		}
	}
	return out
}

// NormalizeExactTerm turns query text for a non-tokenized field into the
// canonical term that ExactTerms indexes.
func (f *Field) NormalizeExactTerm(s string) (string, error) {
	switch f.Type {
	case U64:
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return "", fmt.Errorf("field %q expects an unsigned integer, got %q", f.Name, s)
		}
		return strconv.FormatUint(v, 10), nil
	case I64:
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return "", fmt.Errorf("field %q expects an integer, got %q", f.Name, s)
		}
		return strconv.FormatInt(v, 10), nil
	case F64:
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return "", fmt.Errorf("field %q expects a number, got %q", f.Name, s)
		}
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	case DenseVector, SparseVector:
		return "", fmt.Errorf("field %q is a vector field; use a vector query", f.Name)
	}
	return s, nil
}

// ErrNoPrimaryKey is returned when an operation needs a primary key and the
// schema has none.
var ErrNoPrimaryKey = errors.New("schema has no primary field")

// decodeStrict decodes a schema's JSON into v, refusing nulls, repeated
// or case-mismatched members, unknown members and trailing data (see
// strictjson): "indexed":null must not read as the default, nor
// "dims":null as 0.
func decodeStrict(data []byte, v any) error {
	return strictjson.Decode(data, v, strictjson.Options{})
}
