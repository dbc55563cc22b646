package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
)

// VectorError is a refused vector value, in a document or a query. The
// caller names the field.
type VectorError struct {
	// Reason says what is wrong.
	Reason string
}

// Error returns the reason.
func (e *VectorError) Error() string { return e.Reason }

func vecErr(format string, args ...any) error {
	return &VectorError{Reason: fmt.Sprintf(format, args...)}
}

// ParseDenseVector reads a JSON array of numbers, each a finite float32;
// the caller checks the length against the field's dims. A null, a
// string, a nested value or a number beyond float32 anywhere in the array
// refuses the whole vector with a *VectorError: nothing is read as 0.
func ParseDenseVector(raw json.RawMessage) ([]float32, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, vecErr("expected an array of numbers")
	}
	out := []float32{}
	for i := 0; dec.More(); i++ {
		tok, err := dec.Token()
		if err != nil {
			return nil, vecErr("malformed array: %v", err)
		}
		x, err := vectorNumber(tok)
		if err != nil {
			return nil, vecErr("dimension %d of the vector %v", i, err)
		}
		out = append(out, x)
	}
	if err := closeValue(dec); err != nil {
		return nil, err
	}
	return out, nil
}

// ParseSparseVector reads a JSON object of dimension name to weight: at
// most maxEntries dimensions, names of 1 to MaxTermBytes bytes, each once,
// each weight a finite float32. The entries come back sorted by name. A
// null or non-number weight, a repeated name or an out-of-range number
// refuses the whole vector with a *VectorError.
func ParseSparseVector(raw json.RawMessage, maxEntries int) ([]SparseEntry, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, vecErr("expected an object of dimension to weight")
	}
	var out []SparseEntry
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, vecErr("malformed object: %v", err)
		}
		dim, ok := tok.(string)
		if !ok {
			return nil, vecErr("malformed object: a dimension name must be a string")
		}
		if seen, err = addDim(seen, dim, maxEntries); err != nil {
			return nil, err
		}
		if tok, err = dec.Token(); err != nil {
			return nil, vecErr("malformed object: %v", err)
		}
		w, err := vectorNumber(tok)
		if err != nil {
			return nil, vecErr("weight of %q %v", dim, err)
		}
		out = append(out, SparseEntry{Dim: dim, Weight: w})
	}
	if err := closeValue(dec); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dim < out[j].Dim })
	return out, nil
}

// vectorNumber reads one vector component from a token; its error
// completes "dimension 3 of the vector ..." or "weight of "a" ...".
func vectorNumber(tok json.Token) (float32, error) {
	switch v := tok.(type) {
	case json.Number:
		x, err := strconv.ParseFloat(string(v), 64)
		if err != nil || math.IsNaN(x) || math.Abs(x) > math.MaxFloat32 {
			return 0, fmt.Errorf("is not a finite float32 (%s)", clip([]byte(v)))
		}
		return float32(x), nil
	case nil:
		return 0, fmt.Errorf("is null, not a number")
	case string:
		return 0, fmt.Errorf("is a string, not a number")
	case bool:
		return 0, fmt.Errorf("is %v, not a number", v)
	}
	return 0, fmt.Errorf("is a nested value, not a number")
}

// closeValue reads the closing delimiter and requires the end of the text.
func closeValue(dec *json.Decoder) error {
	if _, err := dec.Token(); err != nil {
		return vecErr("malformed vector: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return vecErr("trailing data after the vector")
	}
	return nil
}

// addDim checks a sparse vector's dimension name (1 to MaxTermBytes
// bytes, not seen before, at most maxEntries in all) and adds it to seen,
// which it makes when nil.
func addDim(seen map[string]bool, dim string, maxEntries int) (map[string]bool, error) {
	if dim == "" || len(dim) > MaxTermBytes {
		return seen, vecErr("dimension names must have 1 to %d bytes", MaxTermBytes)
	}
	if seen[dim] {
		return seen, vecErr("dimension %q appears twice", dim)
	}
	if len(seen) == maxEntries {
		return seen, vecErr("more than %d dimensions; at most %d allowed", maxEntries, maxEntries)
	}
	if seen == nil {
		seen = make(map[string]bool)
	}
	seen[dim] = true
	return seen, nil
}
