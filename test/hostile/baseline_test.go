package hostile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/internal/corpus"
	"github.com/summadev/summa/internal/corpus/corpustest"
)

// baseDocs is the number of baseline documents.
const baseDocs = 50

// baseSchema covers every field type of the contract: text, keyword (one
// multi-valued), u64, i64, f64, a dense vector of 4 dimensions and a
// sparse vector, both stored so that their values are compared too, and a
// keyword primary key.
const baseSchema = `{"fields":[
  {"name":"id","type":"keyword","primary":true},
  {"name":"title","type":"text"},
  {"name":"body","type":"text","reorder":true},
  {"name":"tag","type":"keyword"},
  {"name":"tags","type":"keyword","multi":true},
  {"name":"year","type":"u64"},
  {"name":"delta","type":"i64"},
  {"name":"ratio","type":"f64"},
  {"name":"emb","type":"dense_vector","dims":4,"stored":true},
  {"name":"terms","type":"sparse_vector","stored":true}
]}`

// matchAll finds every baseline document: each one carries tag "base".
const matchAll = "tag:base"

// baselineDoc is baseline document i, built from a paragraph of real text.
func baselineDoc(i int, paragraph string) map[string]any {
	words := strings.Fields(strings.ToLower(paragraph))
	terms := map[string]float64{}
	for j, w := range words {
		w = strings.Trim(w, ".,;:()'\"")
		if w != "" && len(terms) < 5 {
			terms[w] = float64(j%7) + 0.5
		}
	}
	if len(paragraph) > 4000 {
		paragraph = paragraph[:4000]
	}
	return map[string]any{
		"id":    fmt.Sprintf("doc-%03d", i),
		"title": corpus.Title(paragraph),
		"body":  paragraph,
		"tag":   "base",
		"tags":  []string{"opticks", fmt.Sprintf("p%d", i%5)},
		"year":  uint64(1704 + i),
		"delta": int64(-1000 * i),
		"ratio": float64(i)*0.25 + 0.125,
		"emb":   []float64{float64(i%3) + 0.5, -0.25 * float64(i%4), 1, float64(i) / 8},
		"terms": terms,
	}
}

// createBaseline creates the baseline index, commits baseDocs documents of
// Newton's Opticks and records their stored fields; it also creates the
// scratch index. The stored fields must round-trip what was sent.
func (e *env) createBaseline() {
	e.t.Helper()
	ctx := context.Background()
	paragraphs := corpustest.Paragraphs(e.t)
	if len(paragraphs) < baseDocs {
		e.t.Fatalf("corpus has %d paragraphs, need %d", len(paragraphs), baseDocs)
	}
	for _, name := range []string{baseIndex, scratchIndex} {
		if created, err := e.admin.CreateIndex(ctx, name, json.RawMessage(baseSchema)); err != nil || !created {
			e.t.Fatalf("create %s: created=%v, %v", name, created, err)
		}
	}
	sent := map[string]map[string]any{}
	var body bytes.Buffer
	for i := 0; i < baseDocs; i++ {
		d := baselineDoc(i, paragraphs[i])
		line, err := json.Marshal(d)
		if err != nil {
			e.t.Fatal(err)
		}
		e.baseLines = append(e.baseLines, line)
		body.Write(line)
		body.WriteByte('\n')
		sent[d["id"].(string)] = d
	}
	w := e.writer
	if n, err := w.AddNDJSON(ctx, baseIndex, &body); err != nil || n != baseDocs {
		e.t.Fatalf("ingest the baseline: accepted %d, %v", n, err)
	}
	if res, err := w.Commit(ctx, baseIndex); err != nil || res.Documents != baseDocs {
		e.t.Fatalf("commit the baseline: %+v, %v", res, err)
	}
	got, err := e.liveDocs()
	if err != nil {
		e.t.Fatal(err)
	}
	for pk, fields := range got {
		var back, want any
		json.Unmarshal(fields, &back)
		orig, _ := json.Marshal(sent[pk])
		json.Unmarshal(orig, &want)
		if !jsonEqual(back, want) {
			e.t.Fatalf("baseline document %s stored as %s, sent %s", pk, fields, orig)
		}
	}
	e.baseline = got
}

// jsonEqual compares two decoded JSON values.
func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// liveDocs returns the stored fields of every document matchAll finds, by
// primary key.
func (e *env) liveDocs() (map[string]json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	res, err := e.reader.Search(ctx, baseIndex, client.SearchRequest{Query: matchAll, Limit: 1000})
	if err != nil {
		return nil, fmt.Errorf("search %q: %v", matchAll, err)
	}
	if len(res.Hits) != res.TotalHits {
		return nil, fmt.Errorf("search %q: totalHits %d, %d hits", matchAll, res.TotalHits, len(res.Hits))
	}
	out := map[string]json.RawMessage{}
	for _, h := range res.Hits {
		var id struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(h.Fields, &id); err != nil || id.ID == "" {
			return nil, fmt.Errorf("search %q: hit without a primary key: %s", matchAll, h.Fields)
		}
		if _, dup := out[id.ID]; dup {
			return nil, fmt.Errorf("search %q: primary key %s appears twice", matchAll, id.ID)
		}
		out[id.ID] = h.Fields
	}
	return out, nil
}

// dataChanged compares the baseline index with the baseline: its STATUS
// counts exactly baseDocs live documents and nothing uncommitted, and
// every document's stored fields are byte for byte the same. It returns
// what differs, or "".
func (e *env) dataChanged() string {
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	st, err := e.reader.GetIndex(ctx, baseIndex)
	if err != nil {
		return fmt.Sprintf("GET /v1/indexes/%s: %v", baseIndex, err)
	}
	var diffs []string
	if st.Documents != baseDocs || st.UncommittedDocuments != 0 || st.State != "open" {
		diffs = append(diffs, fmt.Sprintf("STATUS says %d documents, %d uncommitted, state %q (want %d, 0, open)",
			st.Documents, st.UncommittedDocuments, st.State, baseDocs))
	}
	got, err := e.liveDocs()
	if err != nil {
		return strings.Join(append(diffs, err.Error()), "; ")
	}
	var keys []string
	for pk := range e.baseline {
		keys = append(keys, pk)
	}
	for pk := range got {
		if _, ok := e.baseline[pk]; !ok {
			keys = append(keys, pk)
		}
	}
	sort.Strings(keys)
	for _, pk := range keys {
		want, had := e.baseline[pk]
		have, has := got[pk]
		switch {
		case !has:
			diffs = append(diffs, pk+" is gone")
		case !had:
			diffs = append(diffs, fmt.Sprintf("%s appeared: %s", pk, clip(string(have), 200)))
		case !bytes.Equal(want, have):
			diffs = append(diffs, fmt.Sprintf("%s changed: %s, was %s", pk, clip(string(have), 200), clip(string(want), 200)))
		}
	}
	return strings.Join(diffs, "; ")
}

// repair puts the baseline back after a class changed it: it makes sure
// the server is not draining, deletes every hostile key, upserts every
// baseline document again and commits. The suite stops if that fails.
func (e *env) repair() error {
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	if _, err := e.admin.Resume(ctx); err != nil {
		return fmt.Errorf("repair: resume: %v", err)
	}
	w := e.writer
	for pk := range e.evil {
		if _, err := w.DeleteDocument(ctx, baseIndex, pk); err != nil {
			return fmt.Errorf("repair: delete %s: %v", pk, err)
		}
	}
	var body bytes.Buffer
	for _, line := range e.baseLines {
		body.Write(line)
		body.WriteByte('\n')
	}
	if _, err := w.AddNDJSON(ctx, baseIndex, &body); err != nil {
		return fmt.Errorf("repair: upsert the baseline: %v", err)
	}
	if _, err := w.Commit(ctx, baseIndex); err != nil {
		return fmt.Errorf("repair: commit: %v", err)
	}
	if d := e.dataChanged(); d != "" {
		return fmt.Errorf("repair: the baseline could not be restored: %s", d)
	}
	return nil
}

// doc is a hostile document for the baseline index: primary key "evil"
// (remembered for repair), tag "base" (so that the match-all query finds
// it should it be accepted) and the given members, raw JSON after a comma.
func (e *env) doc(members string) []byte {
	return e.docKey("evil", members)
}

// docKey is a hostile document with primary key pk.
func (e *env) docKey(pk, members string) []byte {
	e.evil[pk] = true
	k, _ := json.Marshal(pk)
	if members != "" {
		members = "," + members
	}
	return []byte(`{"id":` + string(k) + `,"tag":"base"` + members + "}\n")
}

// indexPath is /v1/indexes/{name}/suffix with the name escaped.
func indexPath(name, suffix string) string {
	p := "/v1/indexes/" + url.PathEscape(name)
	if suffix != "" {
		p += "/" + suffix
	}
	return p
}
