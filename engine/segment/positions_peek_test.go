package segment

import (
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestHasPositionInLeavesPositionsUnread checks HasPositionIn against the
// model on a frequent term, mixed with full reads, documents passed
// without reading and Advance jumps: a peek must answer right and leave
// the iterator's position accounting as if the document were unread.
func TestHasPositionInLeavesPositionsUnread(t *testing.T) {
	s := testSchema()
	docs := opticksDocs(t, s, 400)
	fs := vfs.NewMem()
	r, err := Open(fs, "idx", s, buildSegment(t, fs, "idx", s, 7, docs))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	body, _ := s.Field("body")
	want := buildModel(s, docs).terms[body]["the"]
	if len(want) < 200 {
		t.Fatalf("only %d docs hold the", len(want))
	}
	p, _ := r.Postings(body, "the")
	for k := 0; k < len(want); k++ {
		w := want[k]
		if k%7 == 6 && k+3 < len(want) {
			k += 3 // jump over a few documents, then Advance
			w = want[k]
			if !p.Advance(w.doc) || p.Doc() != w.doc {
				t.Fatalf("Advance(%d) at %d", w.doc, p.Doc())
			}
		} else if !p.Next() || p.Doc() != w.doc {
			t.Fatalf("Next at %d, want %d", p.Doc(), w.doc)
		}
		pos := w.positions
		switch k % 4 {
		case 0: // peek a present and an absent position, then read in full
			checkPeek(t, p, []uint32{pos[len(pos)/2]}, true)
			checkPeek(t, p, absentPositions(pos), false)
			checkFull(t, p, pos)
		case 1: // read in full, then peek
			checkFull(t, p, pos)
			checkPeek(t, p, []uint32{pos[0], pos[len(pos)-1] + 1}, true)
		case 2: // peek only: the next document's positions must still line up
			checkPeek(t, p, []uint32{pos[len(pos)-1]}, true)
		}
	}
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
}

// absentPositions returns ascending positions, none of them in pos.
func absentPositions(pos []uint32) []uint32 {
	var out []uint32
	for _, q := range pos {
		if !slices.Contains(pos, q+1) {
			out = append(out, q+1)
		}
	}
	return out
}

func checkPeek(t *testing.T, p *Postings, want []uint32, found bool) {
	t.Helper()
	got, err := p.HasPositionIn(want)
	if err != nil || got != found {
		t.Fatalf("doc %d: HasPositionIn(%v) = %v, %v; want %v", p.Doc(), want, got, err, found)
	}
}

func checkFull(t *testing.T, p *Postings, want []uint32) {
	t.Helper()
	got, err := p.AppendPositions(nil)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("doc %d: positions %v, want %v (%v)", p.Doc(), got, want, err)
	}
}
