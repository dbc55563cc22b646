package schema

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"unicode/utf8"
)

// refParseDocument is ParseDocument as it was before the single-pass
// scanner: the reference the differential tests compare against. It
// validates one JSON object against the schema. Unknown
// fields, duplicate fields, wrong types, a missing primary key, vectors of
// the wrong size, invalid UTF-8 and malformed JSON are rejected with a
// *DocumentError.
func refParseDocument(s *Schema, data []byte) (*Document, error) {
	if !utf8.Valid(data) {
		return nil, docErr("", "invalid UTF-8")
	}
	raw, err := refSplitObject(data)
	if err != nil {
		return nil, err
	}
	doc := &Document{Fields: make([]Values, len(s.Fields))}
	for name := range raw {
		if _, ok := s.byName[name]; !ok {
			return nil, docErr(name, "unknown field")
		}
	}
	var stored bytes.Buffer
	stored.WriteByte('{')
	for i := range s.Fields {
		f := &s.Fields[i]
		val, present := raw[f.Name]
		if !present || string(val) == "null" {
			if f.Primary {
				return nil, docErr(f.Name, "missing primary key")
			}
			continue
		}
		if err := refParseValues(f, val, &doc.Fields[i]); err != nil {
			return nil, err
		}
		if f.Primary {
			doc.PrimaryKey = primaryKeyText(f, &doc.Fields[i])
			if doc.PrimaryKey == "" {
				return nil, docErr(f.Name, "primary key is empty")
			}
		}
		if f.IsStored() {
			if stored.Len() > 1 {
				stored.WriteByte(',')
			}
			name, _ := json.Marshal(f.Name)
			stored.Write(name)
			stored.WriteByte(':')
			if err := json.Compact(&stored, val); err != nil {
				return nil, docErr(f.Name, "malformed JSON value")
			}
		}
	}
	stored.WriteByte('}')
	doc.Stored = stored.Bytes()
	return doc, nil
}

// refSplitObject reads one JSON object into raw values by key, rejecting
// duplicates, trailing data and anything that is not an object.
func refSplitObject(data []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, docErr("", "malformed JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, docErr("", "a document must be a JSON object")
	}
	out := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, docErr("", "malformed JSON: %v", err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, docErr("", "malformed JSON object key")
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, docErr(key, "malformed JSON: %v", err)
		}
		if _, dup := out[key]; dup {
			return nil, docErr(key, "field appears twice")
		}
		out[key] = val
	}
	if _, err := dec.Token(); err != nil {
		return nil, docErr("", "malformed JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, docErr("", "trailing data after the JSON object")
	}
	return out, nil
}

func refParseValues(f *Field, val json.RawMessage, out *Values) error {
	switch f.Type {
	case DenseVector:
		return refParseDense(f, val, out)
	case SparseVector:
		return refParseSparse(f, val, out)
	}
	items := []json.RawMessage{val}
	if len(val) > 0 && val[0] == '[' {
		if !f.Multi {
			return docErr(f.Name, "an array is accepted only for a field declared \"multi\": true")
		}
		items = nil
		if err := json.Unmarshal(val, &items); err != nil {
			return docErr(f.Name, "malformed array")
		}
		if len(items) > MaxMultiValues {
			return docErr(f.Name, "%d values, at most %d allowed", len(items), MaxMultiValues)
		}
	}
	for _, it := range items {
		if err := refParseScalar(f, it, out); err != nil {
			return err
		}
	}
	return nil
}

func refParseScalar(f *Field, it json.RawMessage, out *Values) error {
	switch f.Type {
	case Text, Keyword:
		var s string
		if len(it) == 0 || it[0] != '"' || json.Unmarshal(it, &s) != nil {
			return docErr(f.Name, "expected a string")
		}
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
		if len(it) == 0 || (it[0] != '-' && (it[0] < '0' || it[0] > '9')) {
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

// refParseDense reads a dense vector value; any null, non-number or
// out-of-range component refuses the document (nothing is read as 0).
func refParseDense(f *Field, val json.RawMessage, out *Values) error {
	vec, err := ParseDenseVector(val)
	if err != nil {
		return docErr(f.Name, "%v", err)
	}
	if len(vec) != f.Dims {
		return docErr(f.Name, "vector has %d dimensions, the schema says %d", len(vec), f.Dims)
	}
	out.Dense = vec
	return nil
}

// refParseSparse reads a sparse vector value; a null or non-number weight or
// a repeated dimension refuses the document.
func refParseSparse(f *Field, val json.RawMessage, out *Values) error {
	vec, err := ParseSparseVector(val, MaxSparseEntries)
	if err != nil {
		return docErr(f.Name, "%v", err)
	}
	out.Sparse = vec
	return nil
}
