package blackbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/summadev/summa/internal/corpus"
)

// testSchema is the schema of every test index. Every document carries
// tag "everydoc", so allQuery lists the whole index.
var testSchema = json.RawMessage(`{"fields":[
 {"name":"id","type":"text","primary":true},
 {"name":"title","type":"text"},
 {"name":"body","type":"text","reorder":true},
 {"name":"tag","type":"text"},
 {"name":"n","type":"u64"},
 {"name":"sp","type":"sparse_vector"}
]}`)

// allQuery matches every test document.
const allQuery = "tag:everydoc"

// Doc is one test document.
type Doc struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Body  string `json:"body"`
	Tag   string `json:"tag"`
	N     uint64 `json:"n"`
	// Sp is a sparse vector: the primary key's own dimension (weight 1)
	// and the title's tokens, so the Seismic files take part in every
	// crash trial and a sparse query can find each document.
	Sp map[string]float64 `json:"sp,omitempty"`
}

// NDJSON encodes docs one per line.
func NDJSON(docs []Doc) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i := range docs {
		enc.Encode(&docs[i]) // cannot fail
	}
	return b.Bytes()
}

// hitDoc reads the stored id and n of a hit.
func hitDoc(h SearchHit) (Doc, error) {
	var d Doc
	raw, ok := h.Fields["id"]
	if !ok {
		return d, fmt.Errorf("no stored id field in %v", keys(h.Fields))
	}
	if err := json.Unmarshal(raw, &d.ID); err != nil {
		return d, fmt.Errorf("id %s: %v", raw, err)
	}
	if raw, ok := h.Fields["n"]; ok {
		if err := json.Unmarshal(raw, &d.N); err != nil {
			return d, fmt.Errorf("n %s: %v", raw, err)
		}
	}
	if raw, ok := h.Fields["body"]; ok {
		json.Unmarshal(raw, &d.Body)
	}
	if raw, ok := h.Fields["title"]; ok {
		json.Unmarshal(raw, &d.Title)
	}
	d.Tag = "everydoc"
	return d, nil
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// paragraphs returns the Opticks paragraphs or fails the test.
func paragraphs(t testing.TB) []string {
	t.Helper()
	ps, err := corpus.Paragraphs()
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) < 100 {
		t.Fatalf("corpus: only %d paragraphs", len(ps))
	}
	return ps
}

// pk returns the primary key of document number i: one token under the
// engine's tokenizer (letters and digits only), so "+id:<pk>" finds it.
func pk(prefix string, i int) string { return fmt.Sprintf("%s%06x", prefix, i) }

// makeDoc builds document i: paragraph i (cyclically) of Opticks with
// version n.
func makeDoc(ps []string, prefix string, i int, n uint64) Doc {
	p := ps[i%len(ps)]
	id := pk(prefix, i)
	sp := map[string]float64{id: 1}
	for _, w := range tokens(corpus.Title(p)) {
		sp[w] = 0.25
	}
	return Doc{ID: id, Title: corpus.Title(p), Body: p, Tag: "everydoc", N: n, Sp: sp}
}

// setID gives d another primary key, moving its own sparse dimension.
func (d *Doc) setID(id string) {
	if d.Sp != nil {
		delete(d.Sp, d.ID)
		d.Sp[id] = 1
	}
	d.ID = id
}

// makeDocs builds documents [from, to).
func makeDocs(ps []string, prefix string, from, to int) []Doc {
	docs := make([]Doc, 0, to-from)
	for i := from; i < to; i++ {
		docs = append(docs, makeDoc(ps, prefix, i, uint64(i)))
	}
	return docs
}

// tokens splits text like the engine's tokenizer: runs of Unicode letters
// and digits, lower-cased; runs longer than 64 bytes are skipped.
func tokens(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len(w) <= 64 {
			out = append(out, strings.ToLower(w))
		}
	}
	return out
}

// ---- the acknowledged-commit model ----

// state is an index's logical content: primary key -> version n.
type state map[string]uint64

func (s state) clone() state {
	c := make(state, len(s))
	for k, v := range s {
		c[k] = v
	}
	return c
}

// op is one acknowledged write: an upsert (n set) or a delete.
type op struct {
	pk     string
	n      uint64
	delete bool
}

func (s state) apply(ops []op) state {
	c := s.clone()
	for _, o := range ops {
		if o.delete {
			delete(c, o.pk)
		} else {
			c[o.pk] = o.n
		}
	}
	return c
}

// diff describes how got differs from want (for failure messages).
func (s state) diff(got state) string {
	var missing, extra, changed []string
	for k, v := range s {
		g, ok := got[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case g != v:
			changed = append(changed, fmt.Sprintf("%s(n=%d want %d)", k, g, v))
		}
	}
	for k := range got {
		if _, ok := s[k]; !ok {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	sort.Strings(changed)
	return fmt.Sprintf("%d missing %s, %d unexpected %s, %d wrong version %s",
		len(missing), head(missing), len(extra), head(extra), len(changed), head(changed))
}

func head(s []string) string {
	if len(s) > 8 {
		return fmt.Sprint(s[:8]) + "..."
	}
	return fmt.Sprint(s)
}

func (s state) equal(o state) bool {
	if len(s) != len(o) {
		return false
	}
	for k, v := range s {
		if w, ok := o[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// indexModel is what a client knows about one index: the content of the
// last acknowledged commit, the writes acknowledged since, and which
// requests were in flight when the server died.
type indexModel struct {
	name string
	// created: PUT answered 201/200. createSent: PUT was sent.
	created, createSent bool
	// acked is the content of the last commit answered 200.
	acked state
	// pending are writes answered 200 since that commit, in order.
	pending []op
	// commitInFlight: a commit was sent and not answered (or answered
	// with a retryable error); it may have published acked+pending.
	commitInFlight bool
	// deleteSent: DELETE was sent; deleteAcked: it answered 202.
	deleteSent, deleteAcked bool
}

func newIndexModel(name string) *indexModel {
	return &indexModel{name: name, acked: state{}}
}

// candidates returns the contents the index may show after a crash: the
// last acknowledged commit, or that plus the writes of an in-flight commit.
func (m *indexModel) candidates() []state {
	c := []state{m.acked}
	if m.commitInFlight && len(m.pending) > 0 {
		c = append(c, m.acked.apply(m.pending))
	}
	return c
}

// settle records that the recovered index shows content got (which must
// be one of the candidates): it becomes the new acknowledged state.
func (m *indexModel) settle(got state) {
	m.acked = got.clone()
	m.pending = nil
	m.commitInFlight = false
}

// stateOf converts listed documents to a state.
func stateOf(docs map[string]Doc) state {
	s := make(state, len(docs))
	for k, d := range docs {
		s[k] = d.N
	}
	return s
}

// workloadRand returns a deterministic generator for a trial.
func workloadRand(seed uint64, trial int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(trial)*0x9e3779b97f4a7c15+1))
}
