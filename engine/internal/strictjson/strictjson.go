// Package strictjson decodes untrusted JSON into Go values without the
// silent coercions of encoding/json. Before decoding, it walks the text
// along the target type and refuses:
//
//   - null for a value that has no null (a number, a string, a bool, a
//     struct, an element of an array, a pointer field whose absence means
//     a default): encoding/json leaves the zero value or nil, so
//     "dims":null read as 0 and "indexed":null as the default;
//   - a member that appears twice in one object (encoding/json keeps the
//     last), also when the two spellings differ only in case;
//   - a member that matches a declared one only up to case ("Limit" for
//     "limit"), which encoding/json accepts, and an undeclared member
//     unless the caller allows them;
//   - anything after the value.
//
// Values of types that decode themselves (json.Unmarshaler, among them
// json.RawMessage) are left to those types. Type errors that encoding/json
// reports itself (a string for a number, a fraction or an out-of-range
// number for an integer) come back from Decode as its errors.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// Kind is what a refused text does wrong.
type Kind int

// The kinds of refusal.
const (
	// Malformed: the text is not one JSON value.
	Malformed Kind = iota
	// Null: null where the target has no null.
	Null
	// Duplicate: a member appears twice in one object.
	Duplicate
	// Unknown: a member the target does not declare (or declares with
	// another case).
	Unknown
)

// Error is a refused text. Path locates the offending value
// ("fields[2].dims"; empty for the whole value).
type Error struct {
	// Kind says what is wrong.
	Kind Kind
	// Path is the offending value's place in the text.
	Path string
	// Reason explains the refusal in words fit for the client.
	Reason string
}

// Error returns "<path>: <reason>", or the reason alone at the top.
func (e *Error) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return e.Path + ": " + e.Reason
}

// Options relax the checks for formats that need it.
type Options struct {
	// AllowUnknown skips members no field declares (forward compatibility
	// of an on-disk format). A member that matches a declared one only up
	// to case is refused all the same.
	AllowUnknown bool
	// NullSlices accepts null for a slice or a map (an empty one), as
	// encoding/json writes a nil slice.
	NullSlices bool
}

// Decode checks data against the type of v (a non-nil pointer) and then
// decodes it into v with encoding/json. A refusal of the checks is an
// *Error; encoding/json's own errors (such as *json.UnmarshalTypeError)
// are returned as they are.
func Decode(data []byte, v any, opts Options) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("strictjson: decode into %T: not a non-nil pointer", v)
	}
	if err := Check(data, rv.Type().Elem(), opts); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if !opts.AllowUnknown {
		dec.DisallowUnknownFields()
	}
	return dec.Decode(v)
}

// Check walks data along type t and returns an *Error for the first value
// encoding/json would coerce silently (see the package comment).
func Check(data []byte, t reflect.Type, opts Options) error {
	// Duplicates are found by the walker (which also folds case), and
	// invalid UTF-8 is left to encoding/json, which accepts it.
	w := walker{dec: jsontext.NewDecoder(bytes.NewReader(data),
		jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)), opts: opts}
	if err := w.value(t, nil); err != nil {
		return err
	}
	if _, err := w.dec.ReadToken(); err != io.EOF {
		return &Error{Kind: Malformed, Reason: "trailing data after the JSON value"}
	}
	return nil
}

// walker reads one text along its target type.
type walker struct {
	// dec reads the text token by token (a single-pass tokenizer that
	// validates the syntax as it goes).
	dec *jsontext.Decoder
	// opts are the caller's relaxations.
	opts Options
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decodesItself reports whether values of t are decoded by their own
// UnmarshalJSON, which does its own checking.
func decodesItself(t reflect.Type) bool {
	return t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType)
}

// value checks the next value of the text against t (nil: any type).
func (w *walker) value(t reflect.Type, path *pathNode) error {
	for t != nil && t.Kind() == reflect.Pointer && !decodesItself(t) {
		t = t.Elem()
	}
	if t != nil && decodesItself(t) {
		raw, err := w.dec.ReadValue()
		if err != nil {
			return malformed(path, err)
		}
		if t.Kind() == reflect.Pointer && string(raw) == "null" {
			// encoding/json sets the pointer to nil without asking the type.
			return w.null(t, path)
		}
		return nil
	}
	tok, err := w.dec.ReadToken()
	if err != nil {
		return malformed(path, err)
	}
	switch tok.Kind() {
	case 'n':
		return w.null(t, path)
	case '{':
		if t != nil && t.Kind() == reflect.Struct && !t.Implements(textUnmarshalerType) &&
			!reflect.PointerTo(t).Implements(textUnmarshalerType) {
			return w.object(t, path)
		}
		return w.mapValue(t, path)
	case '[':
		return w.array(t, path)
	}
	return nil // a scalar: encoding/json checks its type
}

// null accepts a null only where the target has one.
func (w *walker) null(t reflect.Type, path *pathNode) error {
	if t == nil || t.Kind() == reflect.Interface {
		return nil
	}
	if w.opts.NullSlices && (t.Kind() == reflect.Slice || t.Kind() == reflect.Map) {
		return nil
	}
	return &Error{Kind: Null, Path: path.String(),
		Reason: "null is not a value here; give a value of the member's type or leave the member out"}
}

// object checks the members of an object decoded into struct type t; the
// opening brace was read.
func (w *walker) object(t reflect.Type, path *pathNode) error {
	fields := fieldsOf(t)
	seen := make(map[string]string) // folded name -> name as written
	for w.dec.PeekKind() != '}' {
		key, err := w.key(path)
		if err != nil {
			return err
		}
		mpath := &pathNode{parent: path, key: key}
		folded := strings.ToLower(key)
		if prev, dup := seen[folded]; dup {
			return duplicate(mpath, prev, key)
		}
		seen[folded] = key
		ft, ok := fields[key]
		if !ok {
			if name, near := nearField(fields, key); near {
				return &Error{Kind: Unknown, Path: mpath.String(),
					Reason: fmt.Sprintf("unknown member %q (member names are case-sensitive: %q)", key, name)}
			}
			if !w.opts.AllowUnknown {
				return &Error{Kind: Unknown, Path: mpath.String(), Reason: fmt.Sprintf("unknown member %q", key)}
			}
			ft = nil
		}
		if err := w.value(ft, mpath); err != nil {
			return err
		}
	}
	return w.end(path)
}

// mapValue checks an object decoded into a map (or into something that is
// not a struct, which encoding/json refuses itself); the opening brace was
// read.
func (w *walker) mapValue(t reflect.Type, path *pathNode) error {
	var elem reflect.Type
	if t != nil && t.Kind() == reflect.Map {
		elem = t.Elem()
	}
	seen := make(map[string]bool)
	for w.dec.PeekKind() != '}' {
		key, err := w.key(path)
		if err != nil {
			return err
		}
		mpath := &pathNode{parent: path, key: key}
		if seen[key] {
			return duplicate(mpath, key, key)
		}
		seen[key] = true
		if err := w.value(elem, mpath); err != nil {
			return err
		}
	}
	return w.end(path)
}

// array checks the elements of an array; the opening bracket was read.
func (w *walker) array(t reflect.Type, path *pathNode) error {
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	for i := 0; w.dec.PeekKind() != ']'; i++ {
		// An element is checked as a value of its own type: [null] is not
		// an empty element.
		if err := w.value(elem, &pathNode{parent: path, index: i, isIndex: true}); err != nil {
			return err
		}
	}
	return w.end(path)
}

// key reads a member name.
func (w *walker) key(path *pathNode) (string, error) {
	tok, err := w.dec.ReadToken()
	if err != nil {
		return "", malformed(path, err)
	}
	if tok.Kind() != '"' {
		return "", &Error{Kind: Malformed, Path: path.String(), Reason: "malformed object member name"}
	}
	return tok.String(), nil
}

// end reads the closing delimiter of an object or array.
func (w *walker) end(path *pathNode) error {
	if _, err := w.dec.ReadToken(); err != nil {
		return malformed(path, err)
	}
	return nil
}

func malformed(path *pathNode, err error) error {
	return &Error{Kind: Malformed, Path: path.String(), Reason: "malformed JSON: " + err.Error()}
}

func duplicate(node *pathNode, first, again string) error {
	path := node.String()
	if first == again {
		return &Error{Kind: Duplicate, Path: path, Reason: fmt.Sprintf("member %q appears twice", again)}
	}
	return &Error{Kind: Duplicate, Path: path,
		Reason: fmt.Sprintf("members %q and %q name the same member", first, again)}
}

// pathNode is the place of a value in the text, as a chain to the top
// (nil); its String ("fields[2].dims") is built only for an error, so that
// walking a valid text allocates no path strings.
type pathNode struct {
	parent  *pathNode
	key     string
	index   int
	isIndex bool
}

// String returns the path in the form of Error.Path ("" at the top).
func (p *pathNode) String() string {
	if p == nil {
		return ""
	}
	parent := p.parent.String()
	if p.isIndex {
		return fmt.Sprintf("%s[%d]", parent, p.index)
	}
	if parent == "" {
		return p.key
	}
	return parent + "." + p.key
}

// nearField returns the declared name equal to key up to case.
func nearField(fields map[string]reflect.Type, key string) (string, bool) {
	for name := range fields {
		if strings.EqualFold(name, key) {
			return name, true
		}
	}
	return "", false
}

// fieldCache maps a struct type to its members by JSON name.
var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// fieldsOf returns the JSON members of struct type t, embedded structs
// flattened, as encoding/json sees them (of two members with one name, the
// first declared wins; the types decoded here have no such conflicts).
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	out := make(map[string]reflect.Type)
	collectFields(t, out)
	fieldCache.Store(t, out)
	return out
}

func collectFields(t reflect.Type, out map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				collectFields(ft, out)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, taken := out[name]; !taken {
			out[name] = f.Type
		}
	}
}

// IsKind reports whether err is an *Error of kind k.
func IsKind(err error, k Kind) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == k
}
