package segment

import (
	"bytes"
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
