package segment

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"

	"github.com/summadev/summa/engine/ivf"
	"github.com/summadev/summa/engine/schema"
)

// SuffixIVF names the binary IVF file: the encoded runs of every dense
// vector field declared "binary": true. Segments of schemas without such
// a field have no ivf file.
const SuffixIVF = "ivf"

// IVFInfo records one binary field's IVF payload in the segment's
// metadata entry: how many encoded runs it has, the models they were
// encoded with, and the fragmentation debt that maintenance pays by
// coalescing the runs (M08, M10). Open checks it against the ivf file.
type IVFInfo struct {
	// Field is the field's name.
	Field string `json:"field"`
	// Runs is the number of encoded runs.
	Runs int `json:"runs"`
	// Vectors is the number of encoded vectors over all runs.
	Vectors uint32 `json:"vectors"`
	// Models holds each run's model hash, 16 hex digits.
	Models []string `json:"models"`
	// Fragmented is the persisted debt: more than one run, set by merges
	// that concatenate runs and cleared by a coalesced output.
	Fragmented bool `json:"fragmented,omitempty"`
}

// IsBinaryIVF reports whether field f carries an IVF payload.
func IsBinaryIVF(f *schema.Field) bool {
	return f.Type == schema.DenseVector && f.Binary && f.IsIndexed()
}

func hasIVFFields(s *schema.Schema) bool {
	for i := range s.Fields {
		if IsBinaryIVF(&s.Fields[i]) {
			return true
		}
	}
	return false
}

// modelName is a model hash as written in IVFInfo.Models.
func modelName(h uint64) string { return fmt.Sprintf("%016x", h) }

// parseModelName is modelName's inverse.
func parseModelName(s string) (uint64, bool) {
	if len(s) != 16 {
		return 0, false
	}
	h, err := strconv.ParseUint(s, 16, 64)
	return h, err == nil
}

// SetIVFConfig replaces the encoding configuration of fresh runs (tests
// and benchmarks lower TrainMin).
func (b *Builder) SetIVFConfig(cfg ivf.Config) { b.ivfCfg = &cfg }

// IVFSource is one source segment of a rewrite, for ConcatIVFRuns: its
// reader and the mapping of its doc IDs to the output's (ok false drops
// the document).
type IVFSource struct {
	// Reader is the source segment.
	Reader *Reader
	// Remap maps a source doc ID to the output's.
	Remap func(doc uint32) (uint32, bool)
}

// ConcatIVFRuns makes the output's IVF payload the concatenation of the
// sources' encoded runs, their doc IDs rebased through each source's
// Remap, instead of encoding the added vectors again (M08: merges
// preserve encoded runs). The caller adds the same documents (Add) so
// that the float vectors agree; Write checks the counts and Validate
// every code. A field for which some source has no IVF payload (a
// segment written before the ivf file) is encoded afresh.
func (b *Builder) ConcatIVFRuns(srcs []IVFSource) {
	for i := range b.schema.Fields {
		if !IsBinaryIVF(&b.schema.Fields[i]) {
			continue
		}
		var runs []*ivf.Run
		ok := true
		for _, s := range srcs {
			src, has := s.Reader.IVFRuns(i)
			if !has {
				ok = false
				break
			}
			for _, r := range src {
				if out := r.Remap(s.Remap); out.Len() > 0 {
					runs = append(runs, out)
				}
			}
		}
		if ok {
			if b.ivfAdopted == nil {
				b.ivfAdopted = map[int][]*ivf.Run{}
			}
			b.ivfAdopted[i] = runs
		}
	}
}

// ivfRuns returns the runs to write for binary field i: the adopted ones,
// or one fresh run encoding the field's vectors.
func (b *Builder) ivfRuns(ctx context.Context, i int) ([]*ivf.Run, error) {
	db := b.fields[i].dense
	if runs, ok := b.ivfAdopted[i]; ok {
		var n uint32
		for _, r := range runs {
			n += uint32(r.Len())
		}
		if n != db.count {
			return nil, fmt.Errorf("segment: field %q: adopted runs hold %d vectors, the segment %d", b.fields[i].field.Name, n, db.count)
		}
		return runs, nil
	}
	if db.count == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("segment: encode ivf: %w", err)
	}
	docs := make([]uint32, 0, db.count)
	for w, word := range db.present {
		for ; word != 0; word &= word - 1 {
			docs = append(docs, uint32(w*64+bits.TrailingZeros64(word)))
		}
	}
	cfg := ivf.DefaultConfig()
	if b.ivfCfg != nil {
		cfg = *b.ivfCfg
	}
	codes := ivf.EncodeAll(db.vals, db.dims)
	r, err := ivf.Build(ctx, codes, docs, ivf.Words(db.dims), cfg)
	if err != nil {
		return nil, fmt.Errorf("segment: encode ivf: %w", err)
	}
	return []*ivf.Run{r}, nil
}

// ivfRunEntry is one run's directory entry.
type ivfRunEntry struct {
	k, count, hash                 uint64
	centOff, offsOff, codeOff, doc uint64
}

// writeIVF writes the ivf file: per binary field, per run, its centroids
// (K × words uint64), cluster offsets ((K+1) uint32), codes (count ×
// words uint64) and doc IDs (count uint32), each 8-byte aligned; then the
// directory: numDocs, nFields, per field: ord, words, nRuns, per run:
// quantizer, K, count, model hash (uint64 LE), the four offsets. It
// records the payload in info.IVF.
func (b *Builder) writeIVF(ctx context.Context, w *fileWriter, info *Info) error {
	type fieldEntry struct {
		ord, words int
		runs       []ivfRunEntry
	}
	var entries []fieldEntry
	info.IVF = nil
	for i := range b.fields {
		f := b.fields[i].field
		if !IsBinaryIVF(f) {
			continue
		}
		runs, err := b.ivfRuns(ctx, i)
		if err != nil {
			return err
		}
		words := ivf.Words(f.Dims)
		fe := fieldEntry{ord: i, words: words}
		rec := IVFInfo{Field: f.Name, Runs: len(runs), Models: []string{}, Fragmented: len(runs) > 1}
		for _, r := range runs {
			if r.Model.Words != words {
				return fmt.Errorf("segment: field %q: run of %d-word codes, the field has %d", f.Name, r.Model.Words, words)
			}
			e := ivfRunEntry{k: uint64(r.Model.K), count: uint64(r.Len()), hash: r.Model.Hash()}
			e.centOff = w.offset()
			writeU64s(w, r.Model.Centroids)
			e.offsOff = w.offset()
			writeU32s(w, r.Offsets)
			e.codeOff = w.offset()
			writeU64s(w, r.Codes)
			e.doc = w.offset()
			writeU32s(w, r.Docs)
			fe.runs = append(fe.runs, e)
			rec.Vectors += uint32(r.Len())
			rec.Models = append(rec.Models, modelName(e.hash))
		}
		entries = append(entries, fe)
		info.IVF = append(info.IVF, rec)
	}
	w.beginDirectory()
	w.uvarint(uint64(b.numDocs))
	w.uvarint(uint64(len(entries)))
	for _, fe := range entries {
		w.uvarints(uint64(fe.ord), uint64(fe.words), uint64(len(fe.runs)))
		for _, e := range fe.runs {
			w.uvarints(ivf.QuantizerSign, e.k, e.count)
			w.u64(e.hash)
			w.uvarints(e.centOff, e.offsOff, e.codeOff, e.doc)
		}
	}
	return w.err
}

// writeLE writes xs with put (a little-endian append), 4 KiB at a time.
func writeLE[T uint32 | uint64](w *fileWriter, xs []T, put func([]byte, T) []byte) {
	buf := make([]byte, 0, 4096)
	for _, x := range xs {
		buf = put(buf, x)
		if len(buf) == cap(buf) {
			w.write(buf)
			buf = buf[:0]
		}
	}
	w.write(buf)
}

// writeU64s writes xs little-endian.
func writeU64s(w *fileWriter, xs []uint64) { writeLE(w, xs, binary.LittleEndian.AppendUint64) }

// writeU32s writes xs little-endian, then zero padding to a multiple of 8
// bytes.
func writeU32s(w *fileWriter, xs []uint32) {
	writeLE(w, xs, binary.LittleEndian.AppendUint32)
	if len(xs)%2 == 1 {
		w.write([]byte{0, 0, 0, 0})
	}
}
