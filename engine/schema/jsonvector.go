package schema

import (
	"fmt"
	"math"
	"sort"
	"strconv"
)

// denseFromJSON is ParseDenseVector for a value memberScanner has
// checked: the same vector or the same *VectorError, in one pass and
// without encoding/json.
func denseFromJSON(val []byte) ([]float32, error) {
	if val[0] != '[' {
		return nil, vecErr("expected an array of numbers")
	}
	out := []float32{}
	for i, pos := 0, 1; ; i++ {
		for isSpace(val[pos]) {
			pos++
		}
		if val[pos] == ']' {
			return out, nil
		}
		end := skipValue(val, pos)
		x, err := rawVectorNumber(val[pos:end])
		if err != nil {
			return nil, vecErr("dimension %d of the vector %v", i, err)
		}
		out = append(out, x)
		for pos = end; isSpace(val[pos]); pos++ {
		}
		if val[pos] == ',' {
			pos++
		}
	}
}

// sparseFromJSON is ParseSparseVector for a value memberScanner has
// checked: the same entries or the same *VectorError.
func sparseFromJSON(val []byte, maxEntries int) ([]SparseEntry, error) {
	if val[0] != '{' {
		return nil, vecErr("expected an object of dimension to weight")
	}
	var out []SparseEntry
	var seen map[string]bool
	for pos := 1; ; {
		for isSpace(val[pos]) {
			pos++
		}
		if val[pos] == '}' {
			break
		}
		end := skipValue(val, pos)
		dim := unquote(val[pos:end])
		var err error
		if seen, err = addDim(seen, dim, maxEntries); err != nil {
			return nil, err
		}
		for pos = end; val[pos] != ':'; pos++ {
		}
		for pos++; isSpace(val[pos]); pos++ {
		}
		end = skipValue(val, pos)
		w, err := rawVectorNumber(val[pos:end])
		if err != nil {
			return nil, vecErr("weight of %q %v", dim, err)
		}
		out = append(out, SparseEntry{Dim: dim, Weight: w})
		for pos = end; isSpace(val[pos]); pos++ {
		}
		if val[pos] == ',' {
			pos++
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dim < out[j].Dim })
	return out, nil
}

// rawVectorNumber is vectorNumber for one checked value's text.
func rawVectorNumber(v []byte) (float32, error) {
	switch v[0] {
	case 'n':
		return 0, fmt.Errorf("is null, not a number")
	case '"':
		return 0, fmt.Errorf("is a string, not a number")
	case 't', 'f':
		return 0, fmt.Errorf("is %s, not a number", v)
	case '[', '{':
		return 0, fmt.Errorf("is a nested value, not a number")
	}
	x, err := strconv.ParseFloat(string(v), 64)
	if err != nil || math.IsNaN(x) || math.Abs(x) > math.MaxFloat32 {
		return 0, fmt.Errorf("is not a finite float32 (%s)", clip(v))
	}
	return float32(x), nil
}
