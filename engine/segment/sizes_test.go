package segment

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestSectionSizesAddUp checks SectionSizes on a compound segment of every
// field type: each part's sections add up to the part's size, framing
// included; the post sections cover exactly the postings regions; the
// dictionary entries' sections add up to the blocks; the docs sections
// agree with DocSectionBytes and the positions with the dictionary's
// section lengths.
func TestSectionSizesAddUp(t *testing.T) {
	s := testSchema()
	fs := vfs.NewMem()
	if err := fs.MkdirAll("idx", 0o755); err != nil {
		t.Fatal(err)
	}
	b := NewBuilder(s)
	for _, d := range opticksDocs(t, s, 300) {
		b.Add(d)
	}
	info, err := b.Write(context.Background(), fs, "idx", 0x77)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(fs, "idx", s, info)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	secs, err := r.SectionSizes()
	if err != nil {
		t.Fatal(err)
	}
	byPart := map[string]int64{}
	type key struct{ part, field, section string }
	got := map[key]int64{}
	for _, x := range secs {
		if x.Bytes < 0 {
			t.Fatalf("%+v: negative size", x)
		}
		byPart[x.Part] += x.Bytes
		got[key{x.Part, x.Field, x.Section}] += x.Bytes
		if x.Section == "framing" && x.Bytes < frameSize+8 {
			t.Fatalf("%+v: smaller than a part's header, footer and directory offset", x)
		}
	}
	for _, p := range info.PartSizes() {
		if byPart[p.Suffix] != p.Size {
			t.Errorf("part %s: sections add up to %d, part has %d bytes", p.Suffix, byPart[p.Suffix], p.Size)
		}
	}
	var postSum, ids, freqs int64
	for f, d := range r.dicts {
		if d == nil {
			continue
		}
		name := s.Fields[f].Name
		docs := got[key{SuffixPostings, name, "doc ids"}] + got[key{SuffixPostings, name, "skip"}]
		pos := got[key{SuffixPostings, name, "positions"}]
		ids += docs
		freqs += got[key{SuffixPostings, name, "freqs"}]
		postSum += docs + got[key{SuffixPostings, name, "freqs"}] + pos
		if d.hasPos != (pos > 0) {
			t.Errorf("field %s: %d position bytes, positions flag %v", name, pos, d.hasPos)
		}
		entries := got[key{SuffixTerms, name, "term suffixes"}] + got[key{SuffixTerms, name, "prefix and suffix lengths"}] +
			got[key{SuffixTerms, name, "docFreq and section lengths"}]
		if entries != int64(len(d.blocks)) {
			t.Errorf("field %s: dictionary entries add up to %d bytes, blocks hold %d", name, entries, len(d.blocks))
		}
		if bm := got[key{SuffixBlockMax, name, "block postings"}]; bm == 0 {
			t.Errorf("field %s: no block-max postings", name)
		}
	}
	if postSum != int64(len(r.post)) {
		t.Errorf("post sections add up to %d bytes, the postings regions hold %d", postSum, len(r.post))
	}
	wantIDs, wantFreqs, err := r.DocSectionBytes()
	if err != nil {
		t.Fatal(err)
	}
	if ids != wantIDs || freqs != wantFreqs {
		t.Errorf("doc ids and freqs %d+%d, DocSectionBytes %d+%d", ids, freqs, wantIDs, wantFreqs)
	}
	for _, k := range []key{{SuffixStore, "", "compressed blocks"}, {SuffixPrimaryKey, "", "keys"},
		{SuffixNorms, "body", "lengths"}, {SuffixForward, "body", "term lists"}, {SuffixNumbers, "year", "values"}} {
		if got[k] == 0 {
			t.Errorf("%+v: no bytes", k)
		}
	}
}
