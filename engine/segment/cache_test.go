package segment

import (
	"bytes"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/segid"
)

// TestBlockCacheCopies reads every stored document twice through readers
// of two segments sharing one Cache, scribbling over the first copies: the
// cached blocks must hand out copies, and two readers of different
// segments (which number their blocks alike) must never see each other's
// cached blocks. Document, which reads whole records through the cache,
// must give what a reader without a cache gives.
func TestBlockCacheCopies(t *testing.T) {
	s := testSchema()
	docs := opticksDocs(t, s, 200)
	fs := vfs.NewMem()
	c := NewCache(DefaultCacheBytes)
	var readers, plain []*Reader
	for i, part := range [][]int{{0, 100}, {100, 200}} {
		info := buildSegment(t, fs, "idx", s, segid.ID(90+i), docs[part[0]:part[1]])
		readers = append(readers, openTestReader(t, fs, info, ReaderOptions{Cache: c}))
		plain = append(plain, openTestReader(t, fs, info))
	}
	for round := range 2 {
		for ri, r := range readers {
			for doc := range uint32(100) {
				want := docs[ri*100+int(doc)].Stored
				got, err := r.StoredDocument(doc)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("round %d, segment %d, doc %d: got %.40q, want %.40q", round, ri, doc, got, want)
				}
				for i := range got {
					got[i] = 'x'
				}
				checkDocument(t, r, plain[ri], doc)
			}
		}
	}
	if c.Stats().Entries == 0 || c.Stats().Bytes <= 0 || c.Stats().Bytes > c.Stats().MaxBytes {
		t.Fatalf("cache holds %d entries of %d bytes, bound %d", c.Stats().Entries, c.Stats().Bytes, c.Stats().MaxBytes)
	}
}

// openTestReader opens info from fs/idx, closed when the test ends.
func openTestReader(t *testing.T, fs vfs.FS, info Info, opts ...ReaderOptions) *Reader {
	t.Helper()
	r, err := Open(fs, "idx", testSchema(), info, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// checkDocument compares doc's Document read through r with the one read
// through plain, and scribbles over the first.
func checkDocument(t *testing.T, r, plain *Reader, doc uint32) {
	t.Helper()
	got, err := r.Document(doc)
	if err != nil {
		t.Fatal(err)
	}
	want, err := plain.Document(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("doc %d: Document through the cache differs from the one without", doc)
	}
	for i := range got.Stored {
		got.Stored[i] = 'y'
	}
}

// TestCacheClosedReaderNeverHits reopens a segment on the same Cache after
// closing its first reader: the new reader, numbered anew, must miss the
// first one's entries and cache its own, which age out like any other.
func TestCacheClosedReaderNeverHits(t *testing.T) {
	s := testSchema()
	docs := opticksDocs(t, s, 50)
	fs := vfs.NewMem()
	info := buildSegment(t, fs, "idx", s, 7, docs)
	c := NewCache(DefaultCacheBytes)
	first, err := Open(fs, "idx", s, info, ReaderOptions{Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.StoredDocument(3); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Document(3); err != nil {
		t.Fatal(err)
	}
	if c.Stats().Entries != 2 {
		t.Fatalf("%d entries after one stored and one whole read of a block, want 2", c.Stats().Entries)
	}
	first.Close()
	second := openTestReader(t, fs, info, ReaderOptions{Cache: c})
	got, err := second.StoredDocument(3)
	if err != nil || !bytes.Equal(got, docs[3].Stored) {
		t.Fatalf("doc 3: %.40q, %v", got, err)
	}
	if c.Stats().Entries != 3 {
		t.Fatalf("%d entries after the reopened segment's first read, want 3: it hit the closed reader's", c.Stats().Entries)
	}
	if _, err := second.StoredDocument(3); err != nil || c.Stats().Entries != 3 {
		t.Fatalf("a second read of the same block added an entry (%d) or failed (%v)", c.Stats().Entries, err)
	}
}

// TestCacheBounded fills a Cache past its byte bound with both kinds of
// entries: it must keep its size under the bound by evicting the least
// recently used blocks, keep the recently used ones, and hand out the
// stored JSON of the right document.
func TestCacheBounded(t *testing.T) {
	block := func(first uint32) *storedBlock {
		sb := &storedBlock{first: first}
		for d := range uint32(10) {
			sb.json = append(sb.json, fmt.Sprintf(`{"id":"doc-%05d"}`, first+d)...)
			sb.ends = append(sb.ends, uint32(len(sb.json)))
		}
		return sb
	}
	one := block(0).cost()
	c := NewCache(5 * one)
	for b := range uint32(20) {
		c.add(cacheKey{reader: 1, block: b, kind: kindStored}, block(10*b))
		if c.Stats().Bytes > c.Stats().MaxBytes {
			t.Fatalf("after %d blocks the cache holds %d bytes, bound %d", b+1, c.Stats().Bytes, c.Stats().MaxBytes)
		}
		if b >= 2 {
			if _, ok := c.get(cacheKey{reader: 1, block: 0, kind: kindStored}); !ok {
				t.Fatalf("block 0, used after every add, was evicted after %d blocks", b+1)
			}
		}
	}
	if c.Stats().Entries != 5 || c.Stats().Bytes != 5*one {
		t.Fatalf("%d entries of %d bytes, want 5 of %d", c.Stats().Entries, c.Stats().Bytes, 5*one)
	}
	if _, ok := c.get(cacheKey{reader: 1, block: 5, kind: kindStored}); ok {
		t.Fatal("block 5 should have been evicted")
	}
	if _, ok := c.get(cacheKey{reader: 1, block: 19, kind: kindRecords}); ok {
		t.Fatal("a stored block hit as a whole block")
	}
	e, ok := c.get(cacheKey{reader: 1, block: 19, kind: kindStored})
	if !ok {
		t.Fatal("the last block added was evicted")
	}
	got, ok := e.(*storedBlock).doc(193)
	if !ok || string(got) != `{"id":"doc-00193"}` {
		t.Fatalf("doc 193: %q, %v", got, ok)
	}
	if _, ok := e.(*storedBlock).doc(200); ok {
		t.Fatal("doc 200 is not in block 19")
	}
	whole := &cachedBlock{raw: make([]byte, 2*one), bounds: []int{0, int(2 * one)}}
	c.add(cacheKey{reader: 2, kind: kindRecords}, whole)
	if _, ok := c.get(cacheKey{reader: 2, kind: kindRecords}); !ok || c.Stats().Bytes > c.Stats().MaxBytes || c.Stats().Entries != 3 {
		t.Fatalf("a whole block of %d bytes: %d entries of %d bytes, bound %d", whole.cost(), c.Stats().Entries, c.Stats().Bytes, c.Stats().MaxBytes)
	}
	c.add(cacheKey{reader: 2, kind: kindRecords}, block(0))
	if c.Stats().Bytes != 3*one || c.Stats().Entries != 3 {
		t.Fatalf("replacing an entry: %d entries of %d bytes, want 3 of %d", c.Stats().Entries, c.Stats().Bytes, 3*one)
	}
	c.add(cacheKey{reader: 3}, &storedBlock{json: make([]byte, 6*one)})
	if _, ok := c.get(cacheKey{reader: 3}); ok || c.Stats().Bytes > c.Stats().MaxBytes {
		t.Fatal("an entry larger than the bound was kept")
	}
}

// TestCacheConcurrentBounded reads the stored documents of several
// segments from several goroutines through a Cache much smaller than
// their blocks: every read must be right and the cache must stay within
// its bound.
func TestCacheConcurrentBounded(t *testing.T) {
	s := testSchema()
	docs := opticksDocs(t, s, 300)
	fs := vfs.NewMem()
	c := NewCache(64 << 10)
	var readers []*Reader
	for i := range 3 {
		info := buildSegment(t, fs, "idx", s, segid.ID(40+i), docs[100*i:100*(i+1)])
		readers = append(readers, openTestReader(t, fs, info, ReaderOptions{Cache: c}))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			for n := range 600 {
				ri, doc := (n+g)%3, uint32((n*37+g*11)%100)
				got, err := readers[ri].StoredDocument(doc)
				if err == nil && !bytes.Equal(got, docs[100*ri+int(doc)].Stored) {
					err = fmt.Errorf("segment %d doc %d: wrong stored document", ri, doc)
				}
				if err == nil && c.Stats().Bytes > c.Stats().MaxBytes {
					err = fmt.Errorf("cache holds %d bytes, bound %d", c.Stats().Bytes, c.Stats().MaxBytes)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
