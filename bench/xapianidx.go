package bench

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"strconv"
	"strings"

	"github.com/summadev/summa/engine/analysis"
)

// Xapian drives Xapian 1.4 (glass backend) through the C++ driver of
// bench/xapian/driver.cc, a child process spoken to over a pipe. The
// driver times every operation itself, so the pipe round trip is not
// counted (see LastOpTime).
type Xapian struct {
	pipeDriver
	dir string
}

// NewXapian returns the Xapian engine run by the driver binary bin (see
// BuildXapianDriver).
func NewXapian(bin string) *Xapian {
	return &Xapian{pipeDriver: pipeDriver{name: "xapian", argv: []string{bin}}}
}

// Name implements Engine.
func (x *Xapian) Name() string { return "xapian" }

// Create implements Engine.
func (x *Xapian) Create(dir string) error {
	x.dir = dir
	_, err := x.call("create "+dir+"\n", nil)
	return err
}

// Open implements Engine.
func (x *Xapian) Open(dir string) error {
	x.dir = dir
	_, err := x.call("open "+dir+"\n", nil)
	return err
}

// XapianTermPositions calls fn with every term of d and its Xapian
// position: the title's tokens at their analysis positions + 1, the
// body's after them with a gap, so that no phrase spans the two fields
// (ours and Bleve match a phrase within one field).
func XapianTermPositions(d *Doc, fn func(term string, pos uint32)) {
	var last uint32
	analysis.Tokenize(d.Title, func(t string, p uint32) {
		fn(t, p+1)
		last = p + 1
	})
	base := last + 2
	analysis.Tokenize(d.Body, func(t string, p uint32) { fn(t, base+p) })
}

// Prepare implements Engine: it tokenizes the documents with our analysis
// into the driver's batch payload (the counterpart of our JSON parsing).
func (x *Xapian) Prepare(docs []Doc, _ [][]byte) (any, error) {
	return tokenBatch("xapian", docs)
}

// tokenBatch is the batch payload of the Xapian and Lucene drivers: per
// document "D IDLEN TITLELEN NTOK\n", the id, the title, then NTOK lines
// "POS TERM\n" of XapianTermPositions.
func tokenBatch(who string, docs []Doc) ([]byte, error) {
	var b []byte
	var toks []byte
	for i := range docs {
		d := &docs[i]
		if strings.ContainsRune(d.ID, '\n') {
			return nil, fmt.Errorf("%s: document id %q has a newline", who, d.ID)
		}
		toks = toks[:0]
		n := 0
		XapianTermPositions(d, func(t string, p uint32) {
			toks = strconv.AppendUint(toks, uint64(p), 10)
			toks = append(toks, ' ')
			toks = append(toks, t...)
			toks = append(toks, '\n')
			n++
		})
		b = fmt.Appendf(b, "D %d %d %d\n", len(d.ID), len(d.Title), n)
		b = append(b, d.ID...)
		b = append(b, d.Title...)
		b = append(b, toks...)
	}
	return b, nil
}

func xapianQueryLine(q Query) string {
	return string(q.Kind) + " " + strings.Join(q.Terms, " ")
}

// Search implements Engine.
func (x *Xapian) Search(ctx context.Context, q Query) (int, error) {
	n, _, err := x.SearchTop(ctx, q)
	return n, err
}

// Segments implements Engine: a glass database is one set of B-trees.
func (x *Xapian) Segments() int { return 1 }

// TokenStreamHash is what the driver's hash computes, from our analysis:
// for each document in order, its id, a 0x01 byte, then each token (in
// position order) as term, 0x00, decimal position, newline.
func TokenStreamHash(docs []Doc) string {
	h := fnv.New64a()
	var buf []byte
	for i := range docs {
		io.WriteString(h, docs[i].ID)
		h.Write([]byte{1})
		XapianTermPositions(&docs[i], func(t string, p uint32) {
			buf = append(buf[:0], t...)
			buf = append(buf, 0)
			buf = strconv.AppendUint(buf, uint64(p), 10)
			buf = append(buf, '\n')
			h.Write(buf)
		})
	}
	return fmt.Sprintf("%016x", h.Sum64())
}
