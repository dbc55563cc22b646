package search

import (
	"github.com/RoaringBitmap/roaring/v2"
	"github.com/summadev/summa/engine/segment"
)

// Segment is the part of a segment reader that search uses; *segment.Reader
// satisfies it.
type Segment interface {
	// NumDocs returns the number of documents, deleted ones included.
	NumDocs() uint32
	// FieldStats returns the summed term count of a tokenized field and the
	// number of documents that have it.
	FieldStats(field int) (totalLength uint64, docsWithField uint32)
	// FieldLength returns a document's term count in a tokenized field.
	FieldLength(field int, doc uint32) uint32
	// Postings returns the documents of a term in a field, nil when absent.
	Postings(field int, term string) (*segment.Postings, error)
	// StoredDocument returns the JSON object of a document's stored fields.
	StoredDocument(doc uint32) ([]byte, error)
	// DenseVector returns a document's dense vector, ok false when it has none.
	DenseVector(field int, doc uint32) (vec []float32, ok bool, err error)
	// SparsePostings returns the documents of a sparse dimension, nil when absent.
	SparsePostings(field int, dim string) (*segment.SparsePostings, error)
}

// The segment reader must keep satisfying Segment.
var _ Segment = (*segment.Reader)(nil)

// postings iterates the documents of one term in increasing doc id order.
// Search uses the concrete iterator, not an interface, to keep its hot
// loops free of dynamic calls; phrases use its AppendPositions to reuse
// position buffers.
type postings = *segment.Postings

// SegmentView is one segment as a search sees it: the segment and the
// deletion mask of the snapshot being searched.
type SegmentView struct {
	// Segment is the segment's reader.
	Segment Segment
	// Deleted holds the deleted doc ids; nil when none are.
	Deleted *roaring.Bitmap
}

// isDeleted reports whether doc is deleted in the view.
func (v *SegmentView) isDeleted(doc uint32) bool {
	return v.Deleted != nil && v.Deleted.Contains(doc)
}

// liveDocs returns the number of documents not deleted in the view.
func (v *SegmentView) liveDocs() uint64 {
	n := v.Segment.NumDocs()
	if n == 0 || v.Deleted == nil {
		return uint64(n)
	}
	return uint64(n) - v.Deleted.Rank(n-1)
}

// viewSizes returns the live documents of all views and the largest
// segment's document count (the accumulator's size).
func viewSizes(views []SegmentView) (live uint64, maxDocs uint32) {
	for i := range views {
		live += views[i].liveDocs()
		maxDocs = max(maxDocs, views[i].Segment.NumDocs())
	}
	return live, maxDocs
}
