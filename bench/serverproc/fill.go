package serverproc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/summadev/summa/internal/corpus"
)

// BenchIndex is the index the benchmarks create and fill.
const BenchIndex = "bench"

// benchSchema is BenchIndex's schema: a keyword primary key and a text
// body.
const benchSchema = `{"fields":[{"name":"id","type":"keyword","primary":true},{"name":"body","type":"text"}]}`

// DocBody is the body of document id: eight of the corpus's paragraphs ps
// and a term per paragraph that few documents share.
func DocBody(ps []string, id int) string {
	var s strings.Builder
	for k := range 8 {
		s.WriteString(ps[(id*7+k*13)%len(ps)])
		s.WriteString(fmt.Sprintf(" w%dx%d ", id%5000, k))
	}
	return s.String()
}

// Fill puts BenchIndex (PUT with its schema) and ingests documents into
// it after those it holds (ids d<N>, bodies DocBody), committing every
// 16 MiB batch, until its live segments hold target bytes or ctx ends;
// it returns their size and the document count.
func (p *Proc) Fill(ctx context.Context, target int64) (size int64, docs int, err error) {
	if err := p.Call("PUT", "/v1/indexes/"+BenchIndex, map[string]any{"schema": json.RawMessage(benchSchema)}, nil); err != nil {
		return 0, 0, err
	}
	ps, err := corpus.Paragraphs()
	if err != nil {
		return 0, 0, fmt.Errorf("fill: %w", err)
	}
	if size, err = p.IndexSize(BenchIndex); err != nil {
		return 0, 0, err
	}
	var st struct {
		Documents int `json:"documents"`
	}
	if err := p.Call("GET", "/v1/indexes/"+BenchIndex, nil, &st); err != nil {
		return 0, 0, err
	}
	path := "/v1/indexes/" + BenchIndex
	id := st.Documents
	for batch := 0; size < target; batch++ {
		if err := ctx.Err(); err != nil {
			return 0, 0, fmt.Errorf("fill: %w", err)
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		for b.Len() < 16<<20 {
			_ = enc.Encode(map[string]string{"id": fmt.Sprintf("d%d", id), "body": DocBody(ps, id)})
			id++
		}
		if err := p.Call("POST", path+"/documents", b.String(), nil); err != nil {
			return 0, 0, err
		}
		if err := p.Call("POST", path+"/commit", nil, nil); err != nil {
			return 0, 0, err
		}
		if size, err = p.IndexSize(BenchIndex); err != nil {
			return 0, 0, err
		}
		if batch%10 == 0 {
			fmt.Fprintf(os.Stderr, "ingested %d documents, index %.0f MiB\n", id, float64(size)/(1<<20))
		}
	}
	return size, id, nil
}

// StartFilled runs bin on dataDir (Start) and fills its BenchIndex to
// target bytes (Fill): the first steps of a benchmark on a server holding
// an index of a given size. When the fill fails the process is stopped.
func StartFilled(ctx context.Context, bin, dataDir string, target int64, extra ...string) (p *Proc, size int64, docs int, err error) {
	p, err = Start(bin, dataDir, extra...)
	if err != nil {
		return nil, 0, 0, err
	}
	if size, docs, err = p.Fill(ctx, target); err != nil {
		p.Stop()
		return nil, 0, 0, err
	}
	return p, size, docs, nil
}
