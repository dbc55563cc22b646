package segment

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// DefaultCacheBytes is the bound of the Cache an index makes for itself
// when its options name none, and of the one summa-server shares between
// all its indexes: 48 MiB (the 32 MiB of decompressed blocks and 16 MiB
// of stored JSON the two process-wide caches it replaces kept).
const DefaultCacheBytes = 48 << 20

const (
	// maxCachedBlock is the largest raw block whose records are cached:
	// larger blocks (one huge document) are decompressed on every
	// Document or merge read.
	maxCachedBlock = 64 << 10
	// entryOverhead is what the cache counts for an entry beyond its
	// slices' capacity: its key, list element, map slot and value header.
	entryOverhead = 128
)

// entryKind says what an entry of a Cache holds.
type entryKind uint8

const (
	// kindRecords is a *cachedBlock: a whole decompressed block, for
	// Reader.Document and merges that read records out of order.
	kindRecords entryKind = iota
	// kindStored is a *storedBlock: the stored JSON of a block's
	// documents, for Reader.StoredDocument (a page of search hits).
	kindStored
)

// cacheKey names one entry: one kind of one block of one store reader.
// Readers are numbered by their Cache (Cache.nextReader) rather than by
// segment ID, so two opens of the same files never share entries, and a
// closed reader's entries are never hit again: they age out.
type cacheKey struct {
	reader uint64
	block  uint32
	kind   entryKind
}

// cacheEntry is a value of a Cache; it is read-only once added.
type cacheEntry interface {
	// cost is the memory the entry takes, as the cache counts it.
	cost() int64
}

// Cache keeps recently read store blocks of segment readers, decompressed,
// so that fetching the stored fields of a page of hits does not decompress
// the same blocks again (the way Tantivy's doc store cache does). It is
// bounded by the bytes its entries take and evicts the least recently
// used ones past the bound; an entry larger than the whole bound is not
// kept. One Cache may be shared by the readers of many segments and
// indexes (summa-server has one per process), as Pebble's block cache is
// passed in through its options. It is safe for concurrent use.
type Cache struct {
	// max is the bound in bytes.
	max int64
	// readers numbers the store readers that use the cache (cacheKey).
	readers atomic.Uint64

	// mu guards bytes, hits, misses and lru.
	mu sync.Mutex
	// bytes is the summed cost of the entries.
	bytes int64
	// hits and misses count the lookups of readers.
	hits, misses uint64
	// lru orders the entries, most recently used first; its own count
	// bound is unused (the byte bound evicts).
	lru *simplelru.LRU[cacheKey, cacheEntry]
}

// NewCache returns an empty Cache bounded to the given number of bytes; a
// bound of zero or less keeps nothing.
func NewCache(bytes int64) *Cache {
	l, err := simplelru.NewLRU[cacheKey, cacheEntry](math.MaxInt, nil)
	if err != nil {
		panic(err) // only for a non-positive count
	}
	return &Cache{max: bytes, lru: l}
}

// CacheStats describe a Cache at one moment.
type CacheStats struct {
	// Entries is the number of blocks cached.
	Entries int
	// Bytes is the memory they take, as the cache counts it; MaxBytes is
	// the bound.
	Bytes, MaxBytes int64
	// Hits and Misses count the lookups of the readers using the cache
	// since it was made.
	Hits, Misses uint64
}

// Stats returns the cache's figures now.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Entries: c.lru.Len(), Bytes: c.bytes, MaxBytes: c.max, Hits: c.hits, Misses: c.misses}
}

// nextReader returns a number for a new store reader, never returned
// before by c.
func (c *Cache) nextReader() uint64 { return c.readers.Add(1) }

// get returns the entry of key and marks it used.
func (c *Cache) get(key cacheKey) (cacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(key)
	if ok {
		c.hits++
	} else {
		c.misses++
	}
	return e, ok
}

// add inserts val under key, evicting the least recently used entries
// beyond the bound; an entry larger than the whole bound is not kept.
func (c *Cache) add(key cacheKey, val cacheEntry) {
	n := val.cost()
	if n > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.lru.Peek(key); ok {
		c.bytes -= old.cost()
	}
	c.lru.Add(key, val)
	c.bytes += n
	for c.bytes > c.max {
		_, old, ok := c.lru.RemoveOldest()
		if !ok {
			break
		}
		c.bytes -= old.cost()
	}
}

// cachedBlock is a decompressed, checked store block: its raw bytes, its
// first document and its record boundaries (a kindRecords entry).
type cachedBlock struct {
	raw    []byte
	first  uint32
	bounds []int
}

// cost is the memory the block takes in a Cache.
func (cb *cachedBlock) cost() int64 {
	return int64(cap(cb.raw)) + 8*int64(cap(cb.bounds)) + entryOverhead
}

// storedBlock is the stored JSON of every document of one store block,
// without the rest of the records (the values Document rebuilds, never
// returned by a search; in a version 1 store, also the strings of
// unstored fields, most of a block): a kindStored entry.
type storedBlock struct {
	// first is the block's first document.
	first uint32
	// json holds the stored JSON objects of the block's documents, one
	// after the other.
	json []byte
	// ends holds, per document, the end of its object in json.
	ends []uint32
}

// cost is the memory the block takes in a Cache.
func (sb *storedBlock) cost() int64 {
	return int64(cap(sb.json)) + 4*int64(cap(sb.ends)) + entryOverhead
}

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

// cachedRecord returns a copy of doc's record from block b through the
// reader's cache, decompressing and caching the block when it is not
// cached.
func (sr *storeReader) cachedRecord(b, doc uint32) ([]byte, error) {
	key := cacheKey{reader: sr.seq, block: b, kind: kindRecords}
	e, ok := sr.cache.get(key)
	cb, _ := e.(*cachedBlock)
	if !ok || cb == nil {
		buf, first, bounds, err := sr.decodeBlock(b, nil)
		if err != nil {
			return nil, err
		}
		cb = &cachedBlock{raw: append([]byte(nil), (*buf)...), first: first, bounds: bounds}
		rawPool.Put(buf)
		sr.cache.add(key, cb)
	}
	i := doc - cb.first
	if doc < cb.first || int(i)+1 >= len(cb.bounds) {
		return nil, corruptf(sr.id, SuffixStore, "block %d does not hold doc %d", b, doc)
	}
	return append([]byte(nil), cb.raw[cb.bounds[i]:cb.bounds[i+1]]...), nil
}

// stored returns a copy of doc's stored JSON (Reader.StoredDocument): a
// hit in a cached block costs a copy of its JSON instead of decompressing
// the whole block.
func (sr *storeReader) stored(doc uint32) ([]byte, error) {
	b, err := sr.blockAfter(doc)
	if err != nil {
		return nil, err
	}
	b--
	if sr.cache == nil {
		return sr.storedUncached(b, doc)
	}
	key := cacheKey{reader: sr.seq, block: b, kind: kindStored}
	e, ok := sr.cache.get(key)
	sb, _ := e.(*storedBlock)
	if !ok || sb == nil {
		if sb, err = sr.storedBlock(b); err != nil {
			return nil, err
		}
		sr.cache.add(key, sb)
	}
	out, ok := sb.doc(doc)
	if !ok {
		return nil, corruptf(sr.id, SuffixStore, "block %d does not hold doc %d", b, doc)
	}
	return out, nil
}

// storedUncached is stored without a cache: it decompresses block b and
// parses doc's record alone.
func (sr *storeReader) storedUncached(b, doc uint32) ([]byte, error) {
	var boundsBuf [64]int
	buf, first, bounds, err := sr.decodeBlock(b, boundsBuf[:0])
	if err != nil {
		return nil, err
	}
	defer rawPool.Put(buf)
	i := doc - first
	if doc < first || int(i)+1 >= len(bounds) {
		return nil, corruptf(sr.id, SuffixStore, "block %d does not hold doc %d", b, doc)
	}
	js, err := sr.parseRecord((*buf)[bounds[i]:bounds[i+1]], nil, nil)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), js...), nil
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

// ReaderOptions tune a Reader opened by Open or OpenValidated. The zero
// value is usable.
type ReaderOptions struct {
	// Cache keeps the reader's decompressed store blocks for
	// StoredDocument, Document and out-of-order merges; readers of many
	// segments and indexes may share one. Nil caches nothing: every read
	// decompresses its block.
	Cache *Cache
	// DroppedPages tells that the segment's pages were just dropped from
	// the page cache (a follower's large copy, engine/index dropbehind.go):
	// Open's checks then fault in only the pages they read, instead of
	// the device's read-ahead (megabytes a fault: the whole file read back
	// into the cache the copy just left). The mappings go back to the
	// kernel's default read-ahead before Open returns.
	DroppedPages bool
}

// oneOption returns the only element of opts, or the zero ReaderOptions
// when opts is empty; more than one is a programming error.
func oneOption(opts []ReaderOptions) ReaderOptions {
	switch len(opts) {
	case 0:
		return ReaderOptions{}
	case 1:
		return opts[0]
	}
	panic("segment: more than one ReaderOptions")
}
