package segment

import (
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
)

const (
	// blockCacheEntries bounds the number of decompressed store blocks
	// kept in memory by all readers of the process.
	blockCacheEntries = 512
	// maxCachedBlock is the largest raw block the cache keeps: with
	// blockCacheEntries it bounds the cache to 32 MiB (about 8 MiB with
	// the usual 16 KiB blocks). Larger blocks (one huge document) are
	// decompressed on every read.
	maxCachedBlock = 64 << 10
)

// blockKey names one block of one store reader. Readers are numbered by
// the process (storeReaderSeq) rather than by segment ID, so two opens of
// the same files never share entries.
type blockKey struct {
	reader uint64
	block  uint32
}

// cachedBlock is a decompressed, checked store block: its raw bytes, its
// first document and its record boundaries. It is read-only once cached.
type cachedBlock struct {
	raw    []byte
	first  uint32
	bounds []int
}

// storeReaderSeq numbers store readers for blockKey.
var storeReaderSeq atomic.Uint64

// blockCache keeps recently read store blocks so that fetching the stored
// fields of a page of hits does not decompress the same blocks again (the
// way Tantivy's doc store cache does). Entries of closed readers are never
// hit again and age out.
var blockCache = func() *lru.Cache[blockKey, *cachedBlock] {
	c, err := lru.New[blockKey, *cachedBlock](blockCacheEntries)
	if err != nil {
		panic(err) // only for a non-positive size
	}
	return c
}()

// cachedRecord returns a copy of doc's record from block b, decompressing
// and caching the block when it is not cached.
func (sr *storeReader) cachedRecord(b, doc uint32) ([]byte, error) {
	key := blockKey{reader: sr.seq, block: b}
	cb, ok := blockCache.Get(key)
	if !ok {
		buf, first, bounds, err := sr.decodeBlock(b, nil)
		if err != nil {
			return nil, err
		}
		cb = &cachedBlock{raw: append([]byte(nil), (*buf)...), first: first, bounds: bounds}
		rawPool.Put(buf)
		blockCache.Add(key, cb)
	}
	i := doc - cb.first
	if doc < cb.first || int(i)+1 >= len(cb.bounds) {
		return nil, corruptf(sr.id, SuffixStore, "block %d does not hold doc %d", b, doc)
	}
	return append([]byte(nil), cb.raw[cb.bounds[i]:cb.bounds[i+1]]...), nil
}
