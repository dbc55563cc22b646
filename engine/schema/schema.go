// Package schema defines an index's fields and turns JSON documents into
// validated, typed documents. It is the single place where user input is
// checked before anything reaches a segment.
package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
)

// FieldType is the type of a field's values.
type FieldType string

// The field types of the engine contract.
const (
	Text         FieldType = "text"
	Keyword      FieldType = "keyword"
	U64          FieldType = "u64"
	I64          FieldType = "i64"
	F64          FieldType = "f64"
	DenseVector  FieldType = "dense_vector"
	SparseVector FieldType = "sparse_vector"
)

// MaxDenseDims bounds a dense vector's dimension count.
const MaxDenseDims = 4096

// MaxFields bounds the number of fields of one schema.
const MaxFields = 256

// Field is one field of a schema, as written in JSON.
type Field struct {
	// Name is the field's name, unique within the schema.
	Name string `json:"name"`
	// Type is the field's value type.
	Type FieldType `json:"type"`
	// Indexed makes the field searchable (default true).
	Indexed *bool `json:"indexed,omitempty"`
	// Stored keeps the value in stored documents (default true for scalars and text).
	Stored *bool `json:"stored,omitempty"`
	// Primary marks the primary key (at most one field).
	Primary bool `json:"primary,omitempty"`
	// Reorder asks BP reordering to use this text field.
	Reorder bool `json:"reorder,omitempty"`
	// Multi allows a JSON array of values.
	Multi bool `json:"multi,omitempty"`
	// Dims is the dimension count of a dense vector.
	Dims int `json:"dims,omitempty"`
	// Binary asks for binary quantisation of a dense vector.
	Binary bool `json:"binary,omitempty"`
}

// IsIndexed reports whether the field is searchable.
func (f *Field) IsIndexed() bool { return f.Indexed == nil || *f.Indexed }

// IsStored reports whether the field's values are kept in stored documents.
func (f *Field) IsStored() bool {
	if f.Stored != nil {
		return *f.Stored
	}
	switch f.Type {
	case DenseVector, SparseVector:
		return false
	}
	return true
}

// IsTokenized reports whether values are split into terms with positions
// (text fields other than the primary key).
func (f *Field) IsTokenized() bool { return f.Type == Text && !f.Primary }

// IsNumeric reports whether the field holds u64, i64 or f64 values.
func (f *Field) IsNumeric() bool { return f.Type == U64 || f.Type == I64 || f.Type == F64 }

// Schema is an index's ordered list of fields. Field ordinals are positions
// in Fields and are what segments store.
type Schema struct {
	// Fields in declaration order.
	Fields []Field `json:"fields"`

	byName  map[string]int
	primary int
}

var fieldNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,127}$`)

// ErrInvalidSchema matches (errors.Is) every refusal of Parse, New and
// UnmarshalJSON: malformed JSON, nulls, repeated or unknown members,
// mistyped values and schemas that break a rule.
var ErrInvalidSchema = errors.New("invalid schema")

// invalidSchema marks a refusal as ErrInvalidSchema and keeps its text.
type invalidSchema struct{ err error }

func (e *invalidSchema) Error() string        { return e.err.Error() }
func (e *invalidSchema) Unwrap() error        { return e.err }
func (e *invalidSchema) Is(target error) bool { return target == ErrInvalidSchema }

// invalid wraps err as an ErrInvalidSchema (nil stays nil).
func invalid(err error) error {
	if err == nil || errors.Is(err, ErrInvalidSchema) {
		return err
	}
	return &invalidSchema{err: err}
}

// Parse decodes and validates a schema from JSON. Every refusal matches
// ErrInvalidSchema.
func Parse(data []byte) (*Schema, error) {
	var s Schema
	if err := decodeStrict(data, &s); err != nil {
		return nil, invalid(fmt.Errorf("schema: %w", err))
	}
	if err := s.init(); err != nil {
		return nil, invalid(err)
	}
	return &s, nil
}

// New validates fields and returns a schema. Every refusal matches
// ErrInvalidSchema.
func New(fields []Field) (*Schema, error) {
	s := &Schema{Fields: append([]Field(nil), fields...)}
	if err := s.init(); err != nil {
		return nil, invalid(err)
	}
	return s, nil
}

// MustNew is New for tests and literals; it panics on an invalid schema.
func MustNew(fields ...Field) *Schema {
	s, err := New(fields)
	if err != nil {
		panic(err)
	}
	return s
}

func (s *Schema) init() error {
	if len(s.Fields) == 0 {
		return fmt.Errorf("schema: at least one field is required")
	}
	if len(s.Fields) > MaxFields {
		return fmt.Errorf("schema: %d fields, at most %d allowed", len(s.Fields), MaxFields)
	}
	s.byName = make(map[string]int, len(s.Fields))
	s.primary = -1
	for i := range s.Fields {
		f := &s.Fields[i]
		if err := validateField(f); err != nil {
			return err
		}
		if _, dup := s.byName[f.Name]; dup {
			return fmt.Errorf("schema: field %q declared twice", f.Name)
		}
		s.byName[f.Name] = i
		if f.Primary {
			if s.primary >= 0 {
				return fmt.Errorf("schema: fields %q and %q are both primary; at most one is allowed", s.Fields[s.primary].Name, f.Name)
			}
			s.primary = i
		}
	}
	return nil
}

func validateField(f *Field) error {
	if !fieldNameRE.MatchString(f.Name) {
		return fmt.Errorf("schema: invalid field name %q (letters, digits, '_', '.', '-', starting with a letter or '_', at most 128)", f.Name)
	}
	switch f.Type {
	case Text, Keyword, U64, I64, F64, DenseVector, SparseVector:
	case "":
		return fmt.Errorf("schema: field %q has no type", f.Name)
	default:
		return fmt.Errorf("schema: field %q has unknown type %q", f.Name, f.Type)
	}
	if f.Type == DenseVector {
		if f.Dims <= 0 || f.Dims > MaxDenseDims {
			return fmt.Errorf("schema: dense_vector field %q needs dims between 1 and %d, got %d", f.Name, MaxDenseDims, f.Dims)
		}
	} else if f.Dims != 0 || f.Binary {
		return fmt.Errorf("schema: field %q: dims and binary apply only to dense_vector", f.Name)
	}
	if f.Reorder && f.Type != Text {
		return fmt.Errorf("schema: field %q: reorder applies only to text fields", f.Name)
	}
	if f.Primary {
		switch f.Type {
		case Text, Keyword, U64, I64:
		default:
			return fmt.Errorf("schema: primary field %q must be text, keyword, u64 or i64", f.Name)
		}
		if f.Multi {
			return fmt.Errorf("schema: primary field %q cannot be multi-valued", f.Name)
		}
		if !f.IsIndexed() {
			return fmt.Errorf("schema: primary field %q must be indexed", f.Name)
		}
		if f.Reorder {
			return fmt.Errorf("schema: primary field %q cannot be a reorder field", f.Name)
		}
	}
	if f.Multi && (f.Type == DenseVector || f.Type == SparseVector) {
		return fmt.Errorf("schema: vector field %q cannot be multi-valued", f.Name)
	}
	return nil
}

// Field returns the ordinal of the named field.
func (s *Schema) Field(name string) (int, bool) {
	i, ok := s.byName[name]
	return i, ok
}

// Primary returns the ordinal of the primary-key field, or -1.
func (s *Schema) Primary() int { return s.primary }

// HasReorderFields reports whether any field asks for BP reordering.
func (s *Schema) HasReorderFields() bool {
	for i := range s.Fields {
		if s.Fields[i].Reorder {
			return true
		}
	}
	return false
}

// Equal reports whether two schemas declare the same fields with the same
// effective options.
func (s *Schema) Equal(o *Schema) bool {
	a, _ := json.Marshal(s.canonical())
	b, _ := json.Marshal(o.canonical())
	return string(a) == string(b)
}

// canonical returns the fields with defaults made explicit.
func (s *Schema) canonical() []Field {
	out := make([]Field, len(s.Fields))
	for i, f := range s.Fields {
		idx, st := f.IsIndexed(), f.IsStored()
		f.Indexed, f.Stored = &idx, &st
		out[i] = f
	}
	return out
}

// MarshalJSON writes the schema with defaults made explicit, so that the
// persisted form never depends on defaults of a later version.
func (s *Schema) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Fields []Field `json:"fields"`
	}{s.canonical()})
}

// UnmarshalJSON reads and validates a schema.
func (s *Schema) UnmarshalJSON(data []byte) error {
	var raw struct {
		Fields []Field `json:"fields"`
	}
	if err := decodeStrict(data, &raw); err != nil {
		return invalid(err)
	}
	s.Fields = raw.Fields
	return invalid(s.init())
}
