package segment

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

// TestTermKeyOrdersAsBytes: whenever two terms' keys differ, they order
// the terms as bytes.Compare does (zero bytes, prefixes and terms longer
// than the key included), so the heap may compare keys first.
func TestTermKeyOrdersAsBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := []byte{0, 1, 'a', 'b', 0x7f, 0x80, 0xff}
	term := func() []byte {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return b
	}
	for i := 0; i < 200000; i++ {
		a, b := term(), term()
		ka, kb := termKey(a), termKey(b)
		if ka == kb {
			continue
		}
		if (ka < kb) != (bytes.Compare(a, b) < 0) {
			t.Fatalf("%q (key %#x) and %q (key %#x) order differently", a, ka, b, kb)
		}
	}
}

// TestSplitDictsBalancesAllSources cuts the body dictionaries of
// real-text sources into ranges and checks each range's cost, counted term
// by term over every source (postings bytes plus termCost), against an
// even share. The largest source holds the words before "m" only, eight
// smaller ones the rest: splitting must weigh every source, not judge the
// vocabulary by the largest.
func TestSplitDictsBalancesAllSources(t *testing.T) {
	s := schema.MustNew(schema.Field{Name: "id", Type: schema.Text, Primary: true}, schema.Field{Name: "body", Type: schema.Text})
	fs := vfs.NewMem()
	ps := opticksParagraphs(t)
	source := func(id segid.ID, paras []string, keep func(w string) bool) *dict {
		var docs []*schema.Document
		for i, p := range paras {
			var words []string
			for _, w := range strings.Fields(strings.ToLower(p)) {
				if keep(w) {
					words = append(words, w)
				}
			}
			raw, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("%d-%d", id, i), "body": strings.Join(words, " ")})
			d, err := s.ParseDocument(raw)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, d)
		}
		r, err := Open(fs, "idx", s, buildSegment(t, fs, "idx", s, id, docs))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r.dicts[fieldOrd(s, "body")]
	}
	dicts := []*dict{source(1, ps, func(w string) bool { return w < "m" })}
	for k := 0; k < 8; k++ {
		dicts = append(dicts, source(segid.ID(2+k), ps[k*len(ps)/8:(k+1)*len(ps)/8], func(w string) bool { return w >= "m" }))
	}
	const n = 4
	keys := splitDicts(dicts, n)
	if len(keys) != n-1 {
		t.Fatalf("%d keys, want %d", len(keys), n-1)
	}
	costs := make([]uint64, n)
	var total uint64
	for _, d := range dicts {
		it := &TermIterator{d: d}
		for it.Next() {
			k := 0
			for k < len(keys) && bytes.Compare(it.TermBytes(), keys[k]) >= 0 {
				k++
			}
			c := termCost + it.c.e.docsLen + it.c.e.posLen
			costs[k] += c
			total += c
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	for k, c := range costs {
		// A cut falls on a dictionary block's first term: a range may be
		// off its share by a few blocks of each source.
		if c*n < total/2 || c*n > total*3/2 {
			t.Errorf("range %d costs %d of %d (keys %q), want about %d", k, c, total, keys, total/n)
		}
	}
}
