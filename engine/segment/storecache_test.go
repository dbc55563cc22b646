package segment

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/segid"
)

// TestBlockCacheCopies reads every stored document twice, scribbling over
// the first copies: the cached blocks must hand out copies, and two readers
// of different segments (which number their blocks alike) must never see
// each other's cached blocks.
func TestBlockCacheCopies(t *testing.T) {
	s := testSchema()
	docs := opticksDocs(t, s, 200)
	fs := vfs.NewMem()
	var readers []*Reader
	for i, part := range [][]int{{0, 100}, {100, 200}} {
		info := buildSegment(t, fs, "idx", s, segid.ID(90+i), docs[part[0]:part[1]])
		r, err := Open(fs, "idx", s, info)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		readers = append(readers, r)
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
			}
		}
	}
}

// TestStoredCacheBounded fills a stored-JSON cache past its byte bound:
// it must keep its size under the bound by evicting the least recently
// used blocks, keep the recently used ones, and hand out the stored JSON
// of the right document.
func TestStoredCacheBounded(t *testing.T) {
	block := func(first uint32) *storedBlock {
		sb := &storedBlock{first: first}
		for d := range uint32(10) {
			sb.json = append(sb.json, fmt.Sprintf(`{"id":"doc-%05d"}`, first+d)...)
			sb.ends = append(sb.ends, uint32(len(sb.json)))
		}
		return sb
	}
	one := block(0).size()
	c := newSizedLRU(5 * one)
	for b := range uint32(20) {
		c.add(blockKey{reader: 1, block: b}, block(10*b))
		if c.bytes > c.max {
			t.Fatalf("after %d blocks the cache holds %d bytes, bound %d", b+1, c.bytes, c.max)
		}
		if b >= 2 {
			if _, ok := c.get(blockKey{reader: 1, block: 0}); !ok {
				t.Fatalf("block 0, used after every add, was evicted after %d blocks", b+1)
			}
		}
	}
	if len(c.items) != 5 || c.order.Len() != 5 {
		t.Fatalf("%d entries (%d in order), want 5", len(c.items), c.order.Len())
	}
	if _, ok := c.get(blockKey{reader: 1, block: 5}); ok {
		t.Fatal("block 5 should have been evicted")
	}
	sb, ok := c.get(blockKey{reader: 1, block: 19})
	if !ok {
		t.Fatal("the last block added was evicted")
	}
	got, ok := sb.doc(193)
	if !ok || string(got) != `{"id":"doc-00193"}` {
		t.Fatalf("doc 193: %q, %v", got, ok)
	}
	if _, ok := sb.doc(200); ok {
		t.Fatal("doc 200 is not in block 19")
	}
	c.add(blockKey{reader: 2}, &storedBlock{json: make([]byte, 6*one)})
	if _, ok := c.get(blockKey{reader: 2}); ok || c.bytes > c.max {
		t.Fatal("an entry larger than the bound was kept")
	}
}
