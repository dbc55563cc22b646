package seismic

import (
	"math"
	"math/rand/v2"
	"slices"
)

// singleBlock is the list length up to which a list is one block.
const singleBlock = 16

// Params are the clustering parameters (see engine/segment's
// SeismicLambda, SeismicCentroidFraction and SeismicAlpha).
type Params struct {
	// Lambda is λ: the postings kept per dimension, by impact.
	Lambda int
	// CentroidFraction sets the blocks of a list: one k-means centroid
	// per this fraction of its kept postings.
	CentroidFraction float64
	// Alpha is α: a block summary keeps its largest coordinates until
	// they hold this share of the summary's mass.
	Alpha float64
}

// Block is one block of a dimension's list.
type Block struct {
	Docs    []uint32 // increasing
	SumDims []uint32 // increasing dimension ordinals
	SumVals []uint8  // quantized summary values
	Scale   float32  // summary value = q * Scale
}

// Posting is one document of a dimension's list, with its weight.
type Posting struct {
	Doc uint32
	W   float32
}

// Forward is a field's forward index: document doc's vector is
// Dims[Off[doc]:Off[doc+1]] (increasing dimension ordinals) with weights
// Vals at the same indexes.
type Forward struct {
	Off  []uint32
	Dims []uint32
	Vals []float32
}

// Clusterer places dimensions: top-λ postings, shallow k-means over the
// documents' vectors, block summaries. It keeps scratch space between
// calls of Place and is not safe for concurrent use.
type Clusterer struct {
	fwd    Forward
	p      Params
	inv    [][]centW // per dimension: centroids having it
	touch  []uint32
	scores []float32
	maxv   []float32 // summary scratch, per dimension
	used   []uint32
}

// centW is a centroid having a dimension, with its weight there.
type centW struct {
	c uint32
	w float32
}

// NewClusterer returns a Clusterer of the lists of a field of numDims
// dimensions whose documents' vectors are fwd.
func NewClusterer(fwd Forward, numDims int, p Params) *Clusterer {
	return &Clusterer{fwd: fwd, p: p, inv: make([][]centW, numDims), maxv: make([]float32, numDims)}
}

// vec returns doc's vector: its dimension ordinals and weights.
func (c *Clusterer) vec(doc uint32) ([]uint32, []float32) {
	s, e := c.fwd.Off[doc], c.fwd.Off[doc+1]
	return c.fwd.Dims[s:e], c.fwd.Vals[s:e]
}

// Place clusters one dimension's list into blocks.
func (c *Clusterer) Place(dim uint32, list []Posting) []Block {
	if len(list) == 0 {
		return nil
	}
	list = slices.Clone(list)
	slices.SortStableFunc(list, func(a, b Posting) int {
		if a.W != b.W {
			if a.W > b.W {
				return -1
			}
			return 1
		}
		return int(a.Doc) - int(b.Doc)
	})
	list = list[:min(len(list), c.p.Lambda)]
	nc := 1
	if len(list) > singleBlock {
		nc = max(1, int(math.Ceil(float64(len(list))*c.p.CentroidFraction)))
	}
	groups := make([][]uint32, nc)
	if nc == 1 {
		for _, p := range list {
			groups[0] = append(groups[0], p.Doc)
		}
	} else {
		rng := rand.New(rand.NewPCG(uint64(dim), uint64(len(list))))
		perm := rng.Perm(len(list))[:nc]
		for ci, pi := range perm {
			dims, vals := c.vec(list[pi].Doc)
			for k, d := range dims {
				if len(c.inv[d]) == 0 {
					c.touch = append(c.touch, d)
				}
				c.inv[d] = append(c.inv[d], centW{uint32(ci), vals[k]})
			}
		}
		if cap(c.scores) < nc {
			c.scores = make([]float32, nc)
		}
		scores := c.scores[:nc]
		for _, p := range list {
			clear(scores)
			dims, vals := c.vec(p.Doc)
			for k, d := range dims {
				for _, cw := range c.inv[d] {
					scores[cw.c] += vals[k] * cw.w
				}
			}
			best := 0
			for ci := 1; ci < nc; ci++ {
				if scores[ci] > scores[best] {
					best = ci
				}
			}
			groups[best] = append(groups[best], p.Doc)
		}
		for _, d := range c.touch {
			c.inv[d] = c.inv[d][:0]
		}
		c.touch = c.touch[:0]
	}
	var out []Block
	for _, g := range groups {
		if len(g) == 0 {
			continue
		}
		slices.Sort(g)
		out = append(out, c.summarize(dim, g))
	}
	return out
}

// summarize builds a block's summary: the coordinate-wise maximum of its
// documents' vectors, cropped to α of its mass, quantized to u8 (rounded
// up, so a kept coordinate never underestimates). The list's own
// dimension is always kept: every document of the block has it.
func (c *Clusterer) summarize(dim uint32, docs []uint32) Block {
	for _, doc := range docs {
		dims, vals := c.vec(doc)
		for k, d := range dims {
			v := max(vals[k], 0)
			if v == 0 {
				continue
			}
			if c.maxv[d] == 0 {
				c.used = append(c.used, d)
			}
			c.maxv[d] = max(c.maxv[d], v)
		}
	}
	used := c.used
	slices.SortFunc(used, func(a, b uint32) int {
		if c.maxv[a] != c.maxv[b] {
			if c.maxv[a] > c.maxv[b] {
				return -1
			}
			return 1
		}
		return int(a) - int(b)
	})
	var mass, top float64
	for _, d := range used {
		mass += float64(c.maxv[d])
	}
	keep := 0
	for keep < len(used) && (keep == 0 || top < c.p.Alpha*mass) {
		top += float64(c.maxv[used[keep]])
		keep++
	}
	blk := Block{Docs: docs}
	if keep > 0 {
		kept := slices.Clone(used[:keep])
		if c.maxv[dim] > 0 && !slices.Contains(kept, dim) {
			kept = append(kept, dim)
		}
		slices.Sort(kept)
		hi := c.maxv[used[0]]
		blk.Scale = hi / 255
		blk.SumDims = kept
		blk.SumVals = make([]uint8, len(kept))
		for k, d := range kept {
			q := math.Ceil(float64(c.maxv[d]) / float64(blk.Scale))
			blk.SumVals[k] = uint8(min(q, 255))
		}
	}
	for _, d := range used {
		c.maxv[d] = 0
	}
	c.used = used[:0]
	return blk
}
