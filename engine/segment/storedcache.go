package segment

import (
	"container/list"
	"sync"
)

// storedCacheBytes bounds the memory of the stored-JSON cache of all
// readers of the process (see storedCache).
const storedCacheBytes = 16 << 20

// storedBlock is the stored JSON of every document of one store block,
// without the rest of the records (the values Document rebuilds, never
// returned by a search; in a version 1 store, also the strings of
// unstored fields, most of a block). It is read-only once cached.
type storedBlock struct {
	// first is the block's first document.
	first uint32
	// json holds the stored JSON objects of the block's documents, one
	// after the other.
	json []byte
	// ends holds, per document, the end of its object in json.
	ends []uint32
}

// size is the memory an entry takes, as the cache counts it.
func (sb *storedBlock) size() int { return len(sb.json) + 4*len(sb.ends) + 64 }

// doc returns a copy of doc's stored JSON, ok false when the block does
// not hold doc.
func (sb *storedBlock) doc(doc uint32) ([]byte, bool) {
	if doc < sb.first || uint64(doc-sb.first) >= uint64(len(sb.ends)) {
		return nil, false
	}
	i := doc - sb.first
	start := uint32(0)
	if i > 0 {
		start = sb.ends[i-1]
	}
	return append([]byte(nil), sb.json[start:sb.ends[i]]...), true
}

// sizedLRU is a least-recently-used cache of storedBlocks bounded by
// their summed size; safe for concurrent use.
type sizedLRU struct {
	mu    sync.Mutex
	max   int
	bytes int
	order *list.List // of *sizedEntry, most recent first
	items map[blockKey]*list.Element
}

// sizedEntry is one entry of a sizedLRU.
type sizedEntry struct {
	key blockKey
	val *storedBlock
}

func newSizedLRU(max int) *sizedLRU {
	return &sizedLRU{max: max, order: list.New(), items: map[blockKey]*list.Element{}}
}

// get returns the entry of key and marks it used.
func (c *sizedLRU) get(key blockKey) (*storedBlock, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*sizedEntry).val, true
}

// add inserts val under key, evicting the least recently used entries
// beyond the bound; an entry larger than the whole bound is not kept.
func (c *sizedLRU) add(key blockKey, val *storedBlock) {
	n := val.size()
	if n > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.bytes -= e.Value.(*sizedEntry).val.size()
		e.Value.(*sizedEntry).val = val
		c.order.MoveToFront(e)
	} else {
		c.items[key] = c.order.PushFront(&sizedEntry{key: key, val: val})
	}
	c.bytes += n
	for c.bytes > c.max {
		e := c.order.Back()
		old := e.Value.(*sizedEntry)
		c.order.Remove(e)
		delete(c.items, old.key)
		c.bytes -= old.val.size()
	}
}

// storedCache keeps the stored JSON of recently read store blocks, the
// only part of a block a page of search hits needs: a hit in a cached
// block costs a copy of its JSON instead of decompressing the whole
// block. Entries of closed readers are never hit again and age out.
var storedCache = newSizedLRU(storedCacheBytes)

// stored returns a copy of doc's stored JSON (Reader.StoredDocument).
func (sr *storeReader) stored(doc uint32) ([]byte, error) {
	b, err := sr.blockAfter(doc)
	if err != nil {
		return nil, err
	}
	b--
	key := blockKey{reader: sr.seq, block: b}
	sb, ok := storedCache.get(key)
	if !ok {
		if sb, err = sr.storedBlock(b); err != nil {
			return nil, err
		}
		storedCache.add(key, sb)
	}
	out, ok := sb.doc(doc)
	if !ok {
		return nil, corruptf(sr.id, SuffixStore, "block %d does not hold doc %d", b, doc)
	}
	return out, nil
}

// storedBlock decompresses block b and extracts its documents' stored
// JSON, checking every record's header as parseRecord does.
func (sr *storeReader) storedBlock(b uint32) (*storedBlock, error) {
	var boundsBuf [64]int
	buf, first, bounds, err := sr.decodeBlock(b, boundsBuf[:0])
	if err != nil {
		return nil, err
	}
	defer rawPool.Put(buf)
	raw := *buf
	sb := &storedBlock{first: first, ends: make([]uint32, 0, len(bounds)-1)}
	total := 0
	stored := make([][]byte, 0, len(bounds)-1)
	for i := 0; i+1 < len(bounds); i++ {
		js, err := sr.parseRecord(raw[bounds[i]:bounds[i+1]], nil, nil)
		if err != nil {
			return nil, err
		}
		stored = append(stored, js)
		total += len(js)
	}
	sb.json = make([]byte, 0, total)
	for _, js := range stored {
		sb.json = append(sb.json, js...)
		sb.ends = append(sb.ends, uint32(len(sb.json)))
	}
	return sb, nil
}
