package schema

import "testing"

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
