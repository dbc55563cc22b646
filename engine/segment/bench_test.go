package segment

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/analysis"
)

func BenchmarkBuilderAdd(b *testing.B) {
	s := testSchema()
	docs := opticksDocs(b, s, 0)
	var bytes int64
	for _, d := range docs {
		bytes += int64(len(d.Stored))
	}
	b.SetBytes(bytes)
	b.ReportAllocs()
	for b.Loop() {
		bd := NewBuilder(s)
		for _, d := range docs {
			bd.Add(d)
		}
	}
}

func BenchmarkBuilderWrite(b *testing.B) {
	s := testSchema()
	docs := opticksDocs(b, s, 0)
	bd := NewBuilder(s)
	for _, d := range docs {
		bd.Add(d)
	}
	fs := vfs.NewMem()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bd.Write(context.Background(), fs, "", 1); err != nil {
			b.Fatal(err)
		}
	}
}

func benchReader(b *testing.B) (*Reader, []string) {
	s := testSchema()
	docs := opticksDocs(b, s, 0)
	fs := vfs.NewMem()
	info := buildSegment(b, fs, "idx", s, 1, docs)
	// A cache as an index has one (StoredDocument reads through it).
	r, err := Open(fs, "idx", s, info, ReaderOptions{Cache: NewCache(DefaultCacheBytes)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r, analysis.Terms(docs[100].Fields[2].Strings[0])
}

func BenchmarkPostingsLookup(b *testing.B) {
	r, words := benchReader(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if p, err := r.Postings(2, words[i%len(words)]); err != nil || p == nil {
			b.Fatal("missing term")
		}
		i++
	}
}

func BenchmarkPostingsNext(b *testing.B) {
	r, _ := benchReader(b)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		p, _ := r.Postings(2, "the")
		for p.Next() {
			n++
		}
	}
	b.ReportMetric(float64(n)/float64(b.N), "docs/op")
}

func BenchmarkPostingsPositions(b *testing.B) {
	r, _ := benchReader(b)
	b.ReportAllocs()
	var buf []uint32
	for b.Loop() {
		p, _ := r.Postings(2, "the")
		for p.Next() {
			buf, _ = p.AppendPositions(buf[:0])
		}
	}
}

func BenchmarkStoredDocument(b *testing.B) {
	r, _ := benchReader(b)
	b.ReportAllocs()
	i := uint32(0)
	for b.Loop() {
		if _, err := r.StoredDocument(i % r.NumDocs()); err != nil {
			b.Fatal(err)
		}
		i += 37
	}
}

// BenchmarkPostingsDecodeAll iterates every postings list of the body
// field: the decoding cost of the docs codec over a real vocabulary.
func BenchmarkPostingsDecodeAll(b *testing.B) {
	r, _ := benchReader(b)
	var terms []string
	it, err := r.Terms(2)
	if err != nil {
		b.Fatal(err)
	}
	for it.Next() {
		terms = append(terms, string(it.Term()))
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n = 0
		for _, t := range terms {
			p, _ := r.Postings(2, t)
			for p.Next() {
				n++
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/posting")
}

// BenchmarkBuilderWriteOneDoc builds and writes a one-document segment,
// the worker's share of a one-document commit.
func BenchmarkBuilderWriteOneDoc(b *testing.B) {
	s := testSchema()
	docs := opticksDocs(b, s, 1)
	fs := vfs.NewMem()
	b.ReportAllocs()
	for b.Loop() {
		bd := NewBuilder(s)
		bd.Add(docs[0])
		if _, err := bd.WriteUnsynced(context.Background(), fs, "", 1); err != nil {
			b.Fatal(err)
		}
	}
}
