package search

import "sort"

// scored is one matching document.
type scored struct {
	// view is the index of the document's segment view.
	view int
	// doc is the document's id in its segment.
	doc uint32
	// score is the document's score.
	score float64
}

// better orders hits: higher score first, then lower view index, then lower
// doc id, so equal scores come out in a deterministic order.
func better(a, b scored) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	if a.view != b.view {
		return a.view < b.view
	}
	return a.doc < b.doc
}

// topK keeps the k best hits offered to it.
type topK struct {
	// k is the number of hits kept.
	k int
	// heap holds at most k hits, the worst at the root.
	// INVARIANT: no child is worse than its parent.
	heap []scored
}

func newTopK(k int) *topK { return &topK{k: k, heap: make([]scored, 0, min(k, 1024))} }

// offer keeps s when it is among the k best seen so far.
func (t *topK) offer(s scored) {
	if len(t.heap) < t.k {
		t.heap = append(t.heap, s)
		t.up(len(t.heap) - 1)
		return
	}
	if t.k == 0 || !better(s, t.heap[0]) {
		return
	}
	t.heap[0] = s
	t.down(0)
}

// len returns the number of hits kept.
func (t *topK) len() int { return len(t.heap) }

// sorted returns the kept hits, best first; the topK is spent afterwards.
func (t *topK) sorted() []scored {
	h := t.heap
	sort.Slice(h, func(i, j int) bool { return better(h[i], h[j]) })
	t.heap = nil
	return h
}

func (t *topK) up(i int) {
	h := t.heap
	for i > 0 {
		p := (i - 1) / 2
		if !better(h[p], h[i]) {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (t *topK) down(i int) {
	h := t.heap
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && better(h[c], h[c+1]) {
			c++
		}
		if !better(h[i], h[c]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}
