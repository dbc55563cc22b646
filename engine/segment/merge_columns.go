package segment

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"
	"slices"

	"github.com/summadev/summa/engine/schema"
)

// mergeStore copies the stored records. In a merge in source order a
// source block whose rows are all kept is copied compressed; other rows are
// copied record by record (the records of one schema and store version are
// portable). A source of another store version (legacy) has its records
// rewritten in the output's layout (convertRecord).
func (m *merger) mergeStore() error {
	sb := &m.b.store
	var conv []byte
	addRecord := func(sr *storeReader, rec []byte) error {
		if bytes.Equal(sr.kinds, sb.kinds) {
			sb.addRecord(rec)
			return nil
		}
		var err error
		if conv, err = sr.convertRecord(conv[:0], rec, sb.kinds); err != nil {
			return err
		}
		sb.addRecord(conv)
		return nil
	}
	if !m.inOrder {
		for n, ref := range m.order {
			if err := m.check(n); err != nil {
				return err
			}
			sr := m.srcs[ref.Source].store
			rec, err := sr.record(ref.Doc)
			if err != nil {
				return err
			}
			if err := addRecord(sr, rec); err != nil {
				return err
			}
		}
		return sb.err
	}
	// Most blocks are copied whole: size the output's for all of them.
	var comp, blocks int
	for _, r := range m.srcs {
		comp += len(r.store.payload)
		blocks += int(r.store.numBlocks)
	}
	sb.comp = slices.Grow(sb.comp, comp)
	sb.blocks = slices.Grow(sb.blocks, blocks)
	var bounds []int
	for i, r := range m.srcs {
		sr, ids := r.store, m.newID[i]
		same := bytes.Equal(sr.kinds, sb.kinds)
		for b := uint32(0); b < sr.numBlocks; b++ {
			if err := m.ctx.Err(); err != nil {
				return err
			}
			blk, end, err := sr.blockInfo(b)
			if err != nil {
				return err
			}
			kept := 0
			for d := blk.firstDoc; d < end; d++ {
				if ids[d] != noDoc {
					kept++
				}
			}
			switch {
			case kept == 0:
			case same && kept == int(end-blk.firstDoc):
				sb.appendBlock(sr.payload[blk.off:blk.off+uint64(blk.compLen)], uint32(kept), blk.rawLen)
			default:
				buf, first, bs, err := sr.decodeBlock(b, bounds)
				if err != nil {
					return err
				}
				bounds = bs
				for k := 0; k+1 < len(bounds) && err == nil; k++ {
					if ids[first+uint32(k)] != noDoc {
						err = addRecord(sr, (*buf)[bounds[k]:bounds[k+1]])
					}
				}
				rawPool.Put(buf)
				if err != nil {
					return err
				}
			}
		}
	}
	return sb.err
}

// mergePK copies the primary keys in output order.
func (m *merger) mergePK() error {
	if m.b.pk == nil {
		return nil
	}
	for n, ref := range m.order {
		if err := m.check(n); err != nil {
			return err
		}
		pk, err := m.srcs[ref.Source].PrimaryKey(ref.Doc)
		if err != nil {
			return err
		}
		m.b.pk.add(pk)
	}
	return nil
}

// mergeNumbers copies the numeric columns' raw values in output order.
func (m *merger) mergeNumbers() error {
	for f := range m.b.fields {
		nb := m.b.fields[f].num
		if nb == nil {
			continue
		}
		for n, ref := range m.order {
			if err := m.check(n); err != nil {
				return err
			}
			r := m.srcs[ref.Source]
			c := &r.nums[f]
			s, e, ok := c.span(ref.Doc)
			if !ok || e > uint64(len(c.vals))/8 {
				return corruptf(r.id, SuffixNumbers, "field %d doc %d: bad value bounds", f, ref.Doc)
			}
			for k := s; k < e; k++ {
				nb.vals = append(nb.vals, binary.LittleEndian.Uint64(c.vals[8*k:]))
			}
			nb.counts = append(nb.counts, uint64(len(nb.vals)))
		}
	}
	return nil
}

// mergeVectors copies dense vectors in output order and merges the sparse
// fields' dimension dictionaries, rebasing their postings.
func (m *merger) mergeVectors() error {
	for f := range m.b.fields {
		fb := &m.b.fields[f]
		switch {
		case fb.dense != nil:
			if err := m.mergeDense(f, fb.dense); err != nil {
				return err
			}
		case fb.sparse != nil:
			if err := m.mergeSparse(f, fb.sparse); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *merger) mergeDense(f int, db *denseBuilder) error {
	var v schema.Values
	for n, ref := range m.order {
		if err := m.check(n); err != nil {
			return err
		}
		vec, ok, err := m.srcs[ref.Source].DenseVector(f, ref.Doc)
		if err != nil {
			return err
		}
		v.Dense = nil
		if ok {
			v.Dense = vec
		}
		db.add(uint32(n), &v)
	}
	return nil
}

// sparseHit is one rebased sparse posting.
type sparseHit struct {
	doc    uint32
	weight float32
}

func (m *merger) mergeSparse(f int, sb *sparseBuilder) error {
	dicts := make([]*dict, len(m.srcs))
	for i, r := range m.srcs {
		dicts[i] = r.sparse[f]
	}
	var out []sparseHit
	count := 0
	return mergeDicts(dicts, func(dim []byte, hits []dictHit) error {
		count++
		if err := m.check(count); err != nil {
			return err
		}
		out = out[:0]
		for _, h := range hits {
			p := newSparsePostings(h.it.d, h.e)
			ids := m.newID[h.src]
			for p.Next() {
				if nd := ids[p.Doc()]; nd != noDoc {
					out = append(out, sparseHit{doc: nd, weight: p.Weight()})
				}
			}
			if err := p.Err(); err != nil {
				return err
			}
		}
		if !m.inOrder {
			slices.SortFunc(out, func(a, b sparseHit) int { return cmp.Compare(a.doc, b.doc) })
		}
		if len(out) == 0 {
			return nil
		}
		var sp sparsePosting
		for _, o := range out {
			delta := o.doc
			if sp.df > 0 {
				delta = o.doc - sp.lastDoc
			}
			sp.data = binary.AppendUvarint(sp.data, uint64(delta))
			sp.data = binary.LittleEndian.AppendUint32(sp.data, math.Float32bits(o.weight))
			sp.lastDoc = o.doc
			sp.df++
		}
		sb.dims = append(sb.dims, string(dim))
		sb.posts = append(sb.posts, sp)
		return nil
	})
}
