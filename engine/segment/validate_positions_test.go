package segment

import (
	"context"
	"strings"
	"testing"

	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment/codec"
)

// TestValidateChecksPositionsBehindTheCRC edits the positions of a body
// term in the postings file, fixes the CRC, and expects Validate to report
// the positions: a gap of 0 (positions not increasing), and a two-byte
// position varint cut to one byte, which leaves the section one byte
// longer than the term's positions (trailing bytes).
func TestValidateChecksPositionsBehindTheCRC(t *testing.T) {
	r, fs, s, info := blockMaxSegment(t)
	body := fieldOrd(s, "body")
	d := r.dicts[body]
	path := "idx/" + segid.FileName(corruptID, SuffixPostings)
	orig := readFile(t, fs, path)
	base := headerSize + uintptrOffset(r.file(SuffixPostings).payload, d.post)
	found := map[string]bool{}
	it := &TermIterator{d: d}
	for it.Next() && len(found) < 2 {
		e := it.c.e
		p := d.postings(e)
		pos := d.post[e.postOff+e.docsLen : e.postOff+e.docsLen+e.posLen]
		posBase := base + int(e.postOff+e.docsLen)
		off := 0
		for p.Next() {
			freq := p.Freq()
			for i := uint32(0); i < freq; i++ {
				_, next, _ := codec.UvarintAt(pos, off)
				edit := ""
				switch {
				case i == 1 && next == off+1 && !found["increasing"]:
					edit = "increasing"
				case e.df == 1 && next == off+2 && pos[off+1] != 0 && !found["trailing"]:
					edit = "trailing"
				}
				if edit != "" {
					data := append([]byte(nil), orig...)
					if edit == "increasing" {
						data[posBase+off] = 0
					} else {
						data[posBase+off] &^= 0x80
					}
					writeFile(t, fs, path, fixFrame(data))
					err := Validate(context.Background(), fs, "idx", s, info)
					wantCorruption(t, err, edit)
					want := map[string]string{"increasing": "not increasing", "trailing": "trailing bytes"}[edit]
					if !strings.Contains(err.Error(), want) {
						t.Fatalf("%s edit of term %q (doc %d, position %d): %v, want %q", edit, it.Term(), p.Doc(), i, err, want)
					}
					found[edit] = true
				}
				off = next
			}
		}
	}
	writeFile(t, fs, path, orig)
	if len(found) < 2 {
		t.Fatalf("found only the edits %v", found)
	}
	if err := Validate(context.Background(), fs, "idx", s, info); err != nil {
		t.Fatal(err)
	}
}
