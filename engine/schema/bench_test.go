package schema

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// benchSchema is bench's schema: a primary path id, a stored title and an
// indexed, unstored body.
const benchSchema = `{"fields":[
 {"name":"id","type":"text","primary":true},
 {"name":"title","type":"text"},
 {"name":"body","type":"text","stored":false,"reorder":true}
]}`

// BenchmarkParseDocument parses 8 MB of real text (linux-doc sections, or
// the Go distribution's sources), encoded as bench and clients do; MB/s
// is of JSON input.
func BenchmarkParseDocument(b *testing.B) {
	benchmarkParse(b, (*Schema).ParseDocument)
}

// BenchmarkParseDocumentReference is BenchmarkParseDocument with the
// encoding/json reader ParseDocument replaced, for comparison in one run.
func BenchmarkParseDocumentReference(b *testing.B) {
	benchmarkParse(b, refParseDocument)
}

func benchmarkParse(b *testing.B, parse func(*Schema, []byte) (*Document, error)) {
	s := mustParse(b, benchSchema)
	lines := ndjson(b, realCorpus(b, 8<<20))
	size := 0
	for _, l := range lines {
		size += len(l)
	}
	b.SetBytes(int64(size))
	b.ResetTimer()
	for b.Loop() {
		for _, l := range lines {
			if _, err := parse(s, l); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkParseDocumentVectors parses documents of a 384-dimension dense
// vector and a 64-entry sparse vector (pseudo-random weights, written by
// encoding/json as clients write them) next to a real-text title.
func BenchmarkParseDocumentVectors(b *testing.B) {
	benchmarkVectors(b, (*Schema).ParseDocument)
}

// BenchmarkParseDocumentVectorsReference is the same with the old reader.
func BenchmarkParseDocumentVectorsReference(b *testing.B) {
	benchmarkVectors(b, refParseDocument)
}

func benchmarkVectors(b *testing.B, parse func(*Schema, []byte) (*Document, error)) {
	s := mustParse(b, `{"fields":[{"name":"id","type":"keyword","primary":true},{"name":"title","type":"text"},
	 {"name":"emb","type":"dense_vector","dims":384},{"name":"terms","type":"sparse_vector"}]}`)
	r := rand.New(rand.NewPCG(1, 2))
	var lines [][]byte
	size := 0
	for i, d := range realCorpus(b, 1<<20) {
		if i == 1000 {
			break
		}
		emb := make([]float32, 384)
		for k := range emb {
			emb[k] = float32(r.NormFloat64())
		}
		terms := map[string]float32{}
		words := strings.Fields(d.Body)
		for k := 0; k < 64 && len(words) > 0; k++ {
			terms[words[r.IntN(len(words))]] = r.Float32()
		}
		line, err := json.Marshal(map[string]any{"id": d.ID, "title": d.Title, "emb": emb, "terms": terms})
		if err != nil {
			b.Fatal(err)
		}
		lines = append(lines, line)
		size += len(line)
	}
	b.SetBytes(int64(size))
	b.ResetTimer()
	for b.Loop() {
		for _, l := range lines {
			if _, err := parse(s, l); err != nil {
				b.Fatal(err)
			}
		}
	}
}
