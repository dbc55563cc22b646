package search

import (
	"encoding/json"
	"fmt"
	"math"
)

// Seismic query defaults, chosen with make bench-vectors (section
// "seismic"): recall@10 against the exact top-10 and speedup.
const (
	// DefaultCut is the number of query dimensions whose lists are visited.
	DefaultCut = 5
	// DefaultHeapFactor divides the heap minimum a block summary must beat.
	DefaultHeapFactor = 1.2
	// MaxCut bounds cut.
	MaxCut = MaxClauses
)

// sparseQueryJSON is the "sparse" member of a JSON query.
type sparseQueryJSON struct {
	Field      string          `json:"field"`
	Vector     json.RawMessage `json:"vector"`
	K          *int            `json:"k"`
	Cut        *int            `json:"cut"`
	HeapFactor *float64        `json:"heap_factor"`
	Exact      *bool           `json:"exact"`
}

// options copies the optional members into q, refusing out-of-range values.
func (js *sparseQueryJSON) options(q *SparseQuery) error {
	if js.K != nil {
		if *js.K < 1 || *js.K > MaxK {
			return fmt.Errorf("k must be between 1 and %d, got %d", MaxK, *js.K)
		}
		q.K = *js.K
	}
	if js.Cut != nil {
		if *js.Cut < 1 || *js.Cut > MaxCut {
			return fmt.Errorf("cut must be between 1 and %d, got %d", MaxCut, *js.Cut)
		}
		q.Cut = *js.Cut
	}
	if js.HeapFactor != nil {
		f := *js.HeapFactor
		if math.IsNaN(f) || f <= 0 || f > 100 {
			return fmt.Errorf("heap_factor must be in (0, 100], got %v", f)
		}
		q.HeapFactor = f
	}
	if js.Exact != nil {
		q.Exact = *js.Exact
	}
	return nil
}
