package segment

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment/codec"
)

// FileInfo is one file of a segment as recorded in metadata.json.
type FileInfo struct {
	Suffix string `json:"suffix"`
	Size   int64  `json:"size"`
}

// Info describes a written segment; the index persists it in metadata.json.
type Info struct {
	ID        segid.ID   `json:"id"`
	Documents uint32     `json:"documents"`
	Files     []FileInfo `json:"files"`
	// Parts lists, for a compound segment (Files is the one cmp file), the
	// parts of that file in order; empty for a segment of separate files.
	Parts []FileInfo `json:"parts,omitempty"`
	// IVF records each binary dense field's encoded runs (ivf file).
	IVF []IVFInfo `json:"ivf,omitempty"`
}

// ctxCheckEvery is the number of loop iterations between context checks.
const ctxCheckEvery = 4096

// sortedTerms is one indexed field's terms in dictionary order.
type sortedTerms struct {
	order []uint32 // local ids in sorted term order
	ordOf []uint32 // local id -> ordinal
	// identity is set when the local ids are in term order already (a
	// merge's): order[k] = ordOf[k] = k.
	identity bool
}

// postRegion is one field's span of the post payload.
type postRegion struct{ off, len uint64 }

// hasDict reports whether field f has a term dictionary and postings.
func hasDict(f *schema.Field) bool {
	return f.IsIndexed() && f.Type != schema.DenseVector && f.Type != schema.SparseVector
}

// Write writes every file of the segment to dir and returns its Info. It
// checks ctx between files and in long loops. On error it returns the error
// and leaves any partial files in place for the caller's owner-based
// cleanup. The builder must not receive more documents afterwards; calling
// Write again (for example after an error) writes the same segment.
func (b *Builder) Write(ctx context.Context, fs vfs.FS, dir string, id segid.ID) (Info, error) {
	return b.write(ctx, fs, dir, id, true)
}

// WriteUnsynced is Write without the fsyncs: the files are written and
// closed, and the caller must sync every file of the returned Info before
// any metadata references it (metadata.SaveSyncing does, in the one round
// of concurrent fsyncs that precedes the commit point).
func (b *Builder) WriteUnsynced(ctx context.Context, fs vfs.FS, dir string, id segid.ID) (Info, error) {
	return b.write(ctx, fs, dir, id, false)
}

func (b *Builder) write(ctx context.Context, fs vfs.FS, dir string, id segid.ID, sync bool) (Info, error) {
	b.store.flush()
	if b.store.err != nil {
		return Info{}, b.store.err
	}
	sorted, err := b.sortTerms(ctx)
	if err != nil {
		return Info{}, err
	}
	regions := make([]postRegion, len(b.fields))
	steps := map[string]func(w *fileWriter) error{
		SuffixPostings:   func(w *fileWriter) error { return b.writePostings(ctx, w, sorted, regions) },
		SuffixTerms:      func(w *fileWriter) error { return b.writeTerms(ctx, w, sorted, regions) },
		SuffixNorms:      func(w *fileWriter) error { b.writeNorms(w); return nil },
		SuffixStore:      func(w *fileWriter) error { b.store.write(w); return nil },
		SuffixPrimaryKey: func(w *fileWriter) error { b.writePK(w); return nil },
		SuffixNumbers:    func(w *fileWriter) error { b.writeNumbers(w); return nil },
		SuffixForward:    func(w *fileWriter) error { return b.writeForward(ctx, w, sorted) },
		SuffixVectors:    func(w *fileWriter) error { b.writeVectors(w); return nil },
		SuffixSeismic:    func(w *fileWriter) error { return b.writeSeismic(ctx, w) },
		SuffixRowStats:   func(w *fileWriter) error { b.writeRowStats(w); return nil },
		SuffixBlockMax:   func(w *fileWriter) error { return b.writeBlockMax(ctx, w, sorted) },
	}
	info := Info{ID: id, Documents: b.numDocs}
	steps[SuffixIVF] = func(w *fileWriter) error { return b.writeIVF(ctx, w, &info) }
	if await := b.awaitPart; await != nil {
		for suffix, step := range steps {
			steps[suffix] = func(w *fileWriter) error {
				if err := await(suffix); err != nil {
					return err
				}
				return step(w)
			}
		}
	}
	suffixes := segmentSuffixes(b.schema)
	if b.separate {
		return b.writeSeparate(ctx, fs, dir, &info, suffixes, steps, sync)
	}
	c, err := createCompound(fs, dir, id)
	if err != nil {
		return Info{}, err
	}
	for _, suffix := range suffixes {
		if err := ctx.Err(); err != nil {
			c.abort()
			return Info{}, fmt.Errorf("segment: write segment %s: %w", id, err)
		}
		w, err := c.part(suffix)
		if err != nil {
			c.abort()
			return Info{}, err
		}
		if err := steps[suffix](w); err != nil {
			w.abort()
			c.abort()
			return Info{}, err
		}
		fi, err := w.seal()
		if err != nil {
			w.abort()
			c.abort()
			return Info{}, err
		}
		c.sealed(w, fi)
		info.Parts = append(info.Parts, fi)
	}
	fi, err := c.finish(sync)
	if err != nil {
		return Info{}, err
	}
	// No directory sync here: the new entry becomes durable with the
	// directory sync that metadata.Save performs before the rename that
	// could reference it; an entry lost before that is an orphan anyway.
	info.Files = []FileInfo{fi}
	return info, nil
}

// writeSeparate writes each part as its own file, the layout of segments
// written before the compound file (kept for tests that damage one file).
func (b *Builder) writeSeparate(ctx context.Context, fs vfs.FS, dir string, info *Info, suffixes []string,
	steps map[string]func(w *fileWriter) error, sync bool) (Info, error) {
	id := info.ID
	var sealed []*fileWriter
	abort := func() {
		for _, w := range sealed {
			w.abort()
		}
	}
	for _, suffix := range suffixes {
		if err := ctx.Err(); err != nil {
			abort()
			return Info{}, fmt.Errorf("segment: write segment %s: %w", id, err)
		}
		w, err := createFile(fs, dir, id, suffix)
		if err != nil {
			abort()
			return Info{}, err
		}
		if err := steps[suffix](w); err != nil {
			w.abort()
			abort()
			return Info{}, err
		}
		fi, err := w.seal()
		if err != nil {
			w.abort()
			abort()
			return Info{}, err
		}
		sealed = append(sealed, w)
		info.Files = append(info.Files, fi)
	}
	if !sync {
		return *info, closeAll(sealed)
	}
	if err := syncCloseAll(sealed); err != nil {
		return Info{}, err
	}
	return *info, nil
}

// sortTerms sorts every indexed field's terms.
func (b *Builder) sortTerms(ctx context.Context) ([]sortedTerms, error) {
	sorted := make([]sortedTerms, len(b.fields))
	for i := range b.fields {
		ix := b.fields[i].index
		if ix == nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("segment: sort terms: %w", err)
		}
		order := make([]uint32, len(ix.names))
		for k := range order {
			order[k] = uint32(k)
		}
		st := sortedTerms{order: order}
		// A merge adds its terms in order: checking costs less than sorting.
		if st.identity = slices.IsSorted(ix.names); !st.identity {
			slices.SortFunc(order, func(x, y uint32) int { return strings.Compare(ix.names[x], ix.names[y]) })
		}
		if ix.reorder {
			st.ordOf = make([]uint32, len(order))
			for ord, local := range order {
				st.ordOf[local] = uint32(ord)
			}
		}
		sorted[i] = st
	}
	return sorted, nil
}

// writePostings writes the post file: per indexed field, per term in
// dictionary order, the docs section then the positions section; then the
// directory: numDocs, nFields, nFields × (ord, offset, length).
func (b *Builder) writePostings(ctx context.Context, w *fileWriter, sorted []sortedTerms, regions []postRegion) error {
	var ords []int
	var enc codec.DocsEncoder
	var scratch []byte
	for i := range b.fields {
		ix := b.fields[i].index
		if ix == nil {
			continue
		}
		ords = append(ords, i)
		start := w.offset()
		for k, local := range sorted[i].order {
			if k%ctxCheckEvery == ctxCheckEvery-1 {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("segment: write postings: %w", err)
				}
			}
			t := &ix.terms[local]
			docs := t.docs // a merge's final docs section, written as it is
			if !t.encoded {
				scratch = encodeBuilderDocs(&enc, scratch, t, b.numDocs, ix.tokenized)
				docs = scratch
			}
			t.docsLen = uint64(len(docs))
			w.write(docs)
			w.write(t.pos)
		}
		regions[i] = postRegion{off: start, len: w.offset() - start}
	}
	w.beginDirectory()
	w.uvarint(uint64(b.numDocs))
	w.uvarint(uint64(len(ords)))
	for _, i := range ords {
		w.uvarint(uint64(i))
		w.uvarint(regions[i].off)
		w.uvarint(regions[i].len)
	}
	return w.err
}

// writeTerms writes the terms file: per indexed field its dictionary blocks
// and block index (see terms.go); then the directory: numDocs, nFields,
// nFields × (ord, dictMeta).
func (b *Builder) writeTerms(ctx context.Context, w *fileWriter, sorted []sortedTerms, regions []postRegion) error {
	type entry struct {
		ord  int
		meta dictMeta
	}
	var entries []entry
	for i := range b.fields {
		ix := b.fields[i].index
		if ix == nil {
			continue
		}
		dw := newDictWriter(w, ix.tokenized, regions[i].off)
		for k, local := range sorted[i].order {
			if k%ctxCheckEvery == ctxCheckEvery-1 {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("segment: write terms: %w", err)
				}
			}
			t := &ix.terms[local]
			dw.add(ix.names[local], t.df, t.docsLen, uint64(len(t.pos)))
		}
		m := dw.finish()
		if m.postLen != regions[i].len {
			return fmt.Errorf("segment: field %q: dictionary covers %d postings bytes, wrote %d", b.fields[i].field.Name, m.postLen, regions[i].len)
		}
		entries = append(entries, entry{i, m})
	}
	w.beginDirectory()
	w.uvarint(uint64(b.numDocs))
	w.uvarint(uint64(len(entries)))
	for _, e := range entries {
		w.uvarint(uint64(e.ord))
		e.meta.encode(w)
	}
	return w.err
}
