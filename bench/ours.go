package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/search"
)

// SchemaJSON is the benchmark schema: a primary path id, a stored title
// that is not searched, and one searched, unstored text field that BP
// may reorder on, holding the title and the body as two values (no
// phrase spans them). Every engine of the benchmark indexes the same
// layout, as in the search-benchmark-game: one "text" field.
const SchemaJSON = `{"fields":[
 {"name":"id","type":"text","primary":true},
 {"name":"title","type":"text","indexed":false},
 {"name":"text","type":"text","multi":true,"stored":false,"reorder":true}
]}`

// Ours drives the Summa engine as a library.
type Ours struct {
	schema *schema.Schema
	idx    *index.Index
	opts   index.Options
}

// NewOurs returns the Summa engine with default index options.
func NewOurs() (*Ours, error) {
	s, err := schema.Parse([]byte(SchemaJSON))
	if err != nil {
		return nil, err
	}
	return &Ours{schema: s}, nil
}

// Name implements Engine.
func (o *Ours) Name() string { return "ours" }

// Create implements Engine.
func (o *Ours) Create(dir string) error {
	idx, err := index.Create(vfs.Default, dir, o.schema, o.opts)
	if err != nil {
		return err
	}
	o.idx = idx
	return nil
}

// Open implements Engine.
func (o *Ours) Open(dir string) error {
	idx, err := index.Open(vfs.Default, dir, o.opts)
	if err != nil {
		return err
	}
	o.idx = idx
	return nil
}

// Close implements Engine.
func (o *Ours) Close(ctx context.Context) error {
	if o.idx == nil {
		return nil
	}
	err := o.idx.Close(ctx)
	o.idx = nil
	return err
}

// Prepare implements Engine: it validates the JSON documents against the
// schema (what the server does with every NDJSON line).
func (o *Ours) Prepare(docs []Doc, raw [][]byte) (any, error) {
	out := make([]*schema.Document, len(raw))
	for i, r := range raw {
		d, err := o.schema.ParseDocument(r)
		if err != nil {
			return nil, fmt.Errorf("document %s: %w", docs[i].ID, err)
		}
		out[i] = d
	}
	return out, nil
}

// Commit implements Engine: Add then Commit (durable and searchable).
func (o *Ours) Commit(ctx context.Context, batch any) error {
	if err := o.idx.Add(batch.([]*schema.Document)); err != nil {
		return err
	}
	_, err := o.idx.Commit(ctx)
	return err
}

// QueryString writes q in our query language.
func QueryString(q Query) string {
	switch q.Kind {
	case KindAnd:
		return "+" + strings.Join(q.Terms, " +")
	case KindPhrase:
		return `"` + strings.Join(q.Terms, " ") + `"`
	}
	return strings.Join(q.Terms, " ")
}

// Search implements Engine: a fresh snapshot per query, the top 10 hits
// with their stored fields.
func (o *Ours) Search(ctx context.Context, q Query) (int, error) {
	raw, _ := json.Marshal(QueryString(q))
	snap, err := o.idx.Snapshot()
	if err != nil {
		return 0, err
	}
	defer snap.Close()
	res, err := snap.Search(ctx, search.Request{Query: raw, Limit: 10})
	if err != nil {
		return 0, err
	}
	return res.TotalHits, nil
}

// SearchTop implements Engine: Search, and the ids of the top 10 read
// from their stored fields.
func (o *Ours) SearchTop(ctx context.Context, q Query) (int, []string, error) {
	raw, _ := json.Marshal(QueryString(q))
	snap, err := o.idx.Snapshot()
	if err != nil {
		return 0, nil, err
	}
	defer snap.Close()
	res, err := snap.Search(ctx, search.Request{Query: raw, Limit: 10})
	if err != nil {
		return 0, nil, err
	}
	ids := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		var f struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(h.Fields, &f); err != nil {
			return 0, nil, fmt.Errorf("hit %d: stored fields: %w", i, err)
		}
		ids[i] = f.ID
	}
	return res.TotalHits, ids, nil
}

// ForceMerge implements Engine.
func (o *Ours) ForceMerge(ctx context.Context) error {
	_, err := o.idx.ForceMerge(ctx, 1)
	if errors.Is(err, index.ErrNothingToDo) {
		return nil
	}
	return err
}

// Segments implements Engine.
func (o *Ours) Segments() int { return len(o.idx.Status().Segments) }

// PostingsBytes sums, over the current snapshot's segments, the postings
// file payload and the doc-id bytes of the postings (doc-id gaps only,
// without frequencies or positions: segment.Reader.DocSectionBytes).
func (o *Ours) PostingsBytes() (postings, docIDs int64, err error) {
	snap, err := o.idx.Snapshot()
	if err != nil {
		return 0, 0, err
	}
	defer snap.Close()
	for _, s := range snap.Segments {
		postings += s.Reader.PostingsBytes()
		d, _, err := s.Reader.DocSectionBytes()
		if err != nil {
			return 0, 0, fmt.Errorf("doc-id bytes: %w", err)
		}
		docIDs += d
	}
	return postings, docIDs, nil
}

// errNoReorder says the index has no BP reorder yet.
var errNoReorder = errors.New("bp: not available yet")

// BPResult is what a reorder reports.
type BPResult struct {
	// Time is the reorder's duration.
	Time time.Duration
	// Converged is false when any pass was budget-truncated.
	Converged bool
}

// Reorder runs the index's manual BP reorder when the engine has one. It
// is looked up by reflection so that this package builds whatever its
// signature: every parameter after the context gets its zero value
// (default options), and the results' BPConverged fields are read by
// name.
func (o *Ours) Reorder(ctx context.Context) (BPResult, error) {
	res := BPResult{Converged: true}
	m := reflect.ValueOf(o.idx).MethodByName("Reorder")
	if !m.IsValid() {
		return res, errNoReorder
	}
	t := m.Type()
	ctxType := reflect.TypeFor[context.Context]()
	args := make([]reflect.Value, t.NumIn())
	for i := range args {
		if in := t.In(i); in == ctxType {
			args[i] = reflect.ValueOf(ctx)
		} else {
			args[i] = reflect.Zero(in)
		}
	}
	start := time.Now()
	outs := m.Call(args)
	res.Time = time.Since(start)
	if n := len(outs); n > 0 {
		if err, ok := outs[n-1].Interface().(error); ok && err != nil {
			return res, err
		}
	}
	if len(outs) > 1 && outs[0].Kind() == reflect.Slice {
		for i := 0; i < outs[0].Len(); i++ {
			r := reflect.Indirect(outs[0].Index(i))
			if r.Kind() != reflect.Struct {
				continue
			}
			if c := r.FieldByName("BPConverged"); c.IsValid() && c.Kind() == reflect.Bool && !c.Bool() {
				res.Converged = false
			}
		}
	}
	return res, nil
}
