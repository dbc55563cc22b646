package segment

import (
	"context"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/internal/par"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

// DocRef names one row of a merge source.
type DocRef struct {
	// Source is the row's source, an index into Merge's sources.
	Source uint32
	// Doc is the row's doc id in that source.
	Doc uint32
}

// noDoc marks a source row that the merge output does not keep.
const noDoc = math.MaxUint32

// Concat returns the merge order that concatenates the sources' rows that
// keep accepts (every row when keep is nil), in source and doc id order:
// a merge, or with one source and its deleted rows refused, a compaction.
func Concat(sources []*Reader, keep func(src int, doc uint32) bool) []DocRef {
	var n int
	for _, r := range sources {
		n += int(r.NumDocs())
	}
	order := make([]DocRef, 0, n)
	for i, r := range sources {
		for d := uint32(0); d < r.NumDocs(); d++ {
			if keep == nil || keep(i, d) {
				order = append(order, DocRef{Source: uint32(i), Doc: d})
			}
		}
	}
	return order
}

// Merge writes segment id to dir from rows of open source segments of
// schema s: output document n is the source row order[n]. Rows listed
// nowhere are dropped (deletions applied); a row may be listed once at
// most. Nothing is re-tokenized: term dictionaries are merged, postings are
// re-encoded with rebased doc ids and positions copied, store blocks whose
// rows are all kept in order are copied compressed, and columns, forward
// lists and vectors are copied row by row. The output is the segment a
// Builder fed the same rows' Documents would write, up to the store's block
// boundaries. Write's contract applies: ctx is checked in long loops and
// partial files are left for the caller's owner-based cleanup.
//
// The Seismic index (seis) is not rebuilt: the sources' placed blocks are
// copied as encoded runs with rebased doc ids and nothing new is placed
// (MergeSeismic with budget -1).
func Merge(ctx context.Context, fs vfs.FS, dir string, id segid.ID, s *schema.Schema, sources []*Reader, order []DocRef) (Info, error) {
	return MergeSeismic(ctx, fs, dir, id, s, sources, order, -1)
}

// MergeSeismic is Merge that may also place up to seismicBudget postings
// of dimensions pending in the sources (SeismicOptions.Budget: 0 no bound,
// negative none): a Seismic maintenance pass.
func MergeSeismic(ctx context.Context, fs vfs.FS, dir string, id segid.ID, s *schema.Schema, sources []*Reader, order []DocRef,
	seismicBudget int64) (Info, error) {
	return MergeWith(ctx, fs, dir, id, s, sources, order, MergeOptions{SeismicBudget: seismicBudget})
}

// run fills the builder through every merge step and writes the output.
// The steps of the two lanes run concurrently, each lane's in order; an
// error of the terms lane is reported before one of the columns lane. The
// steps of the write lane start after both and run while Write writes the
// parts before theirs: Write waits for them before writing their file
// kinds (Builder.awaitPart).
func (m *merger) run(fs vfs.FS, dir string, id segid.ID) (Info, error) {
	ctx := m.ctx
	var errs [2]error
	par.Do(len(errs), func(lane int) {
		errs[lane] = m.runLane(lane)
	})
	for _, err := range errs {
		if err != nil {
			return Info{}, fmt.Errorf("segment: merge into %s: %w", id, err)
		}
	}
	done := make(chan struct{})
	var lateErr error
	go func() {
		defer close(done)
		lateErr = m.runLane(writeLane)
	}()
	late := map[string]bool{}
	for _, fm := range fileMerges {
		if fm.lane == writeLane {
			for _, suffix := range fm.suffixes {
				late[suffix] = true
			}
		}
	}
	m.b.awaitPart = func(suffix string) error {
		if !late[suffix] {
			return nil
		}
		<-done
		if lateErr != nil {
			return fmt.Errorf("segment: merge into %s: %w", id, lateErr)
		}
		return nil
	}
	info, err := m.b.write(ctx, fs, dir, id, !m.opts.Unsynced)
	<-done // the builder is the write lane's until it ends
	m.b.awaitPart = nil
	if lateErr != nil {
		return Info{}, fmt.Errorf("segment: merge into %s: %w", id, lateErr)
	}
	return info, err
}

// runLane runs the steps of one lane in order.
func (m *merger) runLane(lane int) error {
	for _, fm := range fileMerges {
		if fm.lane != lane {
			continue
		}
		if err := m.ctx.Err(); err != nil {
			return err
		}
		if err := fm.fill(m); err != nil {
			return err
		}
	}
	return nil
}

// The lanes of the merge steps: the terms lane fills the index builders
// (and the ordinal maps, which mergeForward needs after mergeTerms); the
// columns lane fills everything else but the write lane's steps, which
// run once both are done, concurrently with Write.
const (
	termsLane = iota
	columnsLane
	writeLane
)

// fileMerge fills the output builder's accumulators behind some file kinds
// from the sources. A new file kind adds its entry here: kinds whose data
// is per-row (columns) copy rows in output order; kinds holding encoded
// runs (ANN indexes) may append their runs with doc ids rebased through
// merger.newID instead of re-encoding them. A step touches only the
// builder parts of its file kinds: the steps of the two lanes run
// concurrently.
type fileMerge struct {
	// suffixes are the file kinds this step fills.
	suffixes []string
	// lane is the step's lane (termsLane, columnsLane or writeLane).
	lane int
	// fill copies the sources' data into the builder.
	fill func(m *merger) error
}

// fileMerges lists the merge steps in order; mergeForward needs the
// ordinal maps of mergeTerms, mergeSeismic the sparse postings of
// mergeVectors.
var fileMerges = []fileMerge{
	{[]string{SuffixPostings, SuffixTerms, SuffixNorms, SuffixRowStats}, termsLane, (*merger).mergeTerms},
	{[]string{SuffixForward}, writeLane, (*merger).mergeForward},
	{[]string{SuffixStore}, columnsLane, (*merger).mergeStore},
	{[]string{SuffixPrimaryKey}, columnsLane, (*merger).mergePK},
	{[]string{SuffixNumbers}, columnsLane, (*merger).mergeNumbers},
	{[]string{SuffixVectors}, columnsLane, (*merger).mergeVectors},
	{[]string{SuffixIVF}, columnsLane, (*merger).mergeIVF},
	{[]string{SuffixSeismic}, columnsLane, (*merger).mergeSeismic},
	// Block maxima are derived: mergeTerms encodes the text fields'
	// records, the output builder's Write rebuilds the others from the
	// merged postings, norms and sparse vectors.
	{[]string{SuffixBlockMax}, columnsLane, func(*merger) error { return nil }},
}

// merger is the state of one Merge.
type merger struct {
	ctx   context.Context
	s     *schema.Schema
	srcs  []*Reader
	order []DocRef
	// newID maps each source row to its output doc id, or noDoc.
	newID [][]uint32
	// inOrder is set when order lists rows in (source, doc) order: per
	// term, postings come out already sorted.
	inOrder bool
	// keepsAll is set, per source, when order lists every row of the
	// source.
	keepsAll []bool
	// ordMaps maps, per source and reorder field, a source term ordinal
	// to the output's (noDoc for a dropped term); filled by mergeTerms.
	ordMaps [][][]uint32
	// b receives the output's data; its Write writes the files.
	b *Builder
	// opts are the MergeWith options.
	opts MergeOptions
	// seismicBudget is the Seismic placement budget (see MergeSeismic).
	seismicBudget int64
}

func newMerger(ctx context.Context, s *schema.Schema, srcs []*Reader, order []DocRef) (*merger, error) {
	if len(order) >= math.MaxUint32-1 {
		return nil, fmt.Errorf("segment: merge of %d rows: too many documents in one segment", len(order))
	}
	m := &merger{ctx: ctx, s: s, srcs: srcs, order: order, inOrder: true, b: NewBuilder(s)}
	m.newID = make([][]uint32, len(srcs))
	for i, r := range srcs {
		if r.schema != s && !sameFields(r.schema, s) {
			return nil, fmt.Errorf("segment: merge source %s has another schema", r.id)
		}
		ids := make([]uint32, r.NumDocs())
		for d := range ids {
			ids[d] = noDoc
		}
		m.newID[i] = ids
	}
	for n, ref := range order {
		if int(ref.Source) >= len(srcs) || ref.Doc >= srcs[ref.Source].NumDocs() {
			return nil, fmt.Errorf("segment: merge row %d names source %d doc %d, which does not exist", n, ref.Source, ref.Doc)
		}
		if m.newID[ref.Source][ref.Doc] != noDoc {
			return nil, fmt.Errorf("segment: merge lists source %d doc %d twice", ref.Source, ref.Doc)
		}
		m.newID[ref.Source][ref.Doc] = uint32(n)
		if n > 0 {
			prev := order[n-1]
			m.inOrder = m.inOrder && (prev.Source < ref.Source || (prev.Source == ref.Source && prev.Doc < ref.Doc))
		}
	}
	m.keepsAll = make([]bool, len(srcs))
	kept := make([]uint32, len(srcs))
	for _, ref := range order {
		kept[ref.Source]++
	}
	for i, r := range srcs {
		m.keepsAll[i] = kept[i] == r.NumDocs()
	}
	m.b.numDocs = uint32(len(order))
	m.ordMaps = make([][][]uint32, len(srcs))
	return m, nil
}

// sameFields reports whether two schemas have the same fields.
func sameFields(a, b *schema.Schema) bool {
	if len(a.Fields) != len(b.Fields) {
		return false
	}
	for i := range a.Fields {
		x, y := &a.Fields[i], &b.Fields[i]
		if x.Name != y.Name || x.Type != y.Type || x.IsIndexed() != y.IsIndexed() || x.IsTokenized() != y.IsTokenized() ||
			x.IsStored() != y.IsStored() || x.Reorder != y.Reorder || x.Dims != y.Dims {
			return false
		}
	}
	return a.Primary() == b.Primary()
}

// check returns ctx's error every ctxCheckEvery calls.
func (m *merger) check(i int) error {
	if i%ctxCheckEvery == ctxCheckEvery-1 {
		return m.ctx.Err()
	}
	return nil
}
