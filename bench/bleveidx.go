package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/registry"
	"github.com/blevesearch/bleve/v2/search/query"
	bleveindex "github.com/blevesearch/bleve_index_api"
	summaanalysis "github.com/summadev/summa/engine/analysis"
)

// BleveTokenizerName is the Bleve tokenizer that splits text exactly as
// our engine does: runs of Unicode letters and digits, a run longer than
// analysis.MaxTermBytes skipped but still counted as a position. (Bleve's
// "unicode" tokenizer follows UAX#29 word boundaries, which keep
// "pci_register_driver", "don't" and "3.14" whole; on kernel
// documentation that changes the hit counts of most queries, and the
// sanity check compares hit counts.)
const BleveTokenizerName = "summa_letter_digit"

// BleveAnalyzerName is the analyzer of every Bleve text field: the
// tokenizer above and Bleve's lowercase filter; no stemming, no stop words.
const BleveAnalyzerName = "summa_text"

var registerOnce sync.Once

func registerBleveAnalysis() {
	registerOnce.Do(func() {
		err := registry.RegisterTokenizer(BleveTokenizerName, func(map[string]interface{}, *registry.Cache) (analysis.Tokenizer, error) {
			return letterDigitTokenizer{}, nil
		})
		if err != nil {
			panic(err)
		}
	})
}

// letterDigitTokenizer mirrors engine/analysis.Tokenize, with byte offsets.
type letterDigitTokenizer struct{}

func (letterDigitTokenizer) Tokenize(input []byte) analysis.TokenStream {
	rv := make(analysis.TokenStream, 0, len(input)/6+1)
	pos := 0
	start := -1
	for i := 0; i <= len(input); {
		r, size := rune(0), 0
		if i < len(input) {
			r, size = utf8.DecodeRune(input[i:])
		}
		if i < len(input) && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			if start < 0 {
				start = i
			}
			i += size
			continue
		}
		if start >= 0 {
			pos++
			if i-start <= summaanalysis.MaxTermBytes {
				rv = append(rv, &analysis.Token{Term: input[start:i], Start: start, End: i, Position: pos, Type: analysis.AlphaNumeric})
			}
			start = -1
		}
		if i == len(input) {
			break
		}
		i += size
	}
	return rv
}

// BleveMapping returns the index mapping comparable to SchemaJSON: BM25,
// the title stored and not indexed, the text (title and body, two array
// values) indexed with term vectors (positions, needed for phrases) and
// not stored, no _all field, no doc values, nothing dynamic.
func BleveMapping() (*mapping.IndexMappingImpl, error) {
	registerBleveAnalysis()
	im := bleve.NewIndexMapping()
	if err := im.AddCustomAnalyzer(BleveAnalyzerName, map[string]interface{}{
		"type":          custom.Name,
		"tokenizer":     BleveTokenizerName,
		"token_filters": []string{lowercase.Name},
	}); err != nil {
		return nil, err
	}
	im.ScoringModel = bleveindex.BM25Scoring
	im.DefaultAnalyzer = BleveAnalyzerName
	im.IndexDynamic = false
	im.StoreDynamic = false
	im.DocValuesDynamic = false
	field := func(index bool) *mapping.FieldMapping {
		f := bleve.NewTextFieldMapping()
		f.Analyzer = BleveAnalyzerName
		f.Index = index
		f.Store = !index
		f.IncludeTermVectors = index
		f.IncludeInAll = false
		f.DocValues = false
		return f
	}
	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt("title", field(false))
	dm.AddFieldMappingsAt("text", field(true))
	im.DefaultMapping = dm
	return im, nil
}

// Bleve drives Bleve v2 with the scorch index as a library.
type Bleve struct {
	mapping *mapping.IndexMappingImpl
	idx     bleve.Index
}

// NewBleve returns the Bleve engine.
func NewBleve() (*Bleve, error) {
	m, err := BleveMapping()
	if err != nil {
		return nil, err
	}
	return &Bleve{mapping: m}, nil
}

// bleveConfig turns scorch's background file merging off (no segment is
// small enough to be eligible), so that the index keeps one segment per
// batch like ours; ForceMerge passes its own plan and still merges.
// Batches are "safe" (the default): Batch returns once the segment is
// persisted (written, fsynced, and the root bolt file synced).
func bleveConfig() map[string]interface{} {
	return map[string]interface{}{
		"scorchMergePlanOptions": map[string]interface{}{"MaxSegmentSize": 1},
	}
}

// Name implements Engine.
func (b *Bleve) Name() string { return "bleve" }

// Create implements Engine.
func (b *Bleve) Create(dir string) error {
	idx, err := bleve.NewUsing(dir, b.mapping, scorch.Name, scorch.Name, bleveConfig())
	if err != nil {
		return err
	}
	b.idx = idx
	return nil
}

// Open implements Engine.
func (b *Bleve) Open(dir string) error {
	registerBleveAnalysis()
	idx, err := bleve.OpenUsing(dir, bleveConfig())
	if err != nil {
		return err
	}
	b.idx = idx
	return nil
}

// Close implements Engine.
func (b *Bleve) Close(context.Context) error {
	if b.idx == nil {
		return nil
	}
	err := b.idx.Close()
	b.idx = nil
	return err
}

// Prepare implements Engine: it maps the documents into a batch (Bleve's
// counterpart of our JSON validation; analysis happens in Batch).
func (b *Bleve) Prepare(docs []Doc, _ [][]byte) (any, error) {
	batch := b.idx.NewBatch()
	for i := range docs {
		if err := batch.Index(docs[i].ID, map[string]interface{}{"title": docs[i].Title, "text": []string{docs[i].Title, docs[i].Body}}); err != nil {
			return nil, err
		}
	}
	return batch, nil
}

// Commit implements Engine: one safe Batch (durable and searchable).
func (b *Bleve) Commit(_ context.Context, batch any) error {
	return b.idx.Batch(batch.(*bleve.Batch))
}

// BleveQuery builds the query of q with our semantics in the text field:
// a term query per term, AND a conjunction of them, OR a disjunction, a
// phrase a phrase query (within one array value). Terms are already
// analyzed.
func BleveQuery(q Query) query.Query {
	term := func(t string) query.Query {
		tq := bleve.NewTermQuery(t)
		tq.SetField("text")
		return tq
	}
	switch q.Kind {
	case KindPhrase:
		return bleve.NewPhraseQuery(q.Terms, "text")
	case KindAnd:
		var cs []query.Query
		for _, t := range q.Terms {
			cs = append(cs, term(t))
		}
		return bleve.NewConjunctionQuery(cs...)
	}
	if len(q.Terms) == 1 {
		return term(q.Terms[0])
	}
	var ds []query.Query
	for _, t := range q.Terms {
		ds = append(ds, term(t))
	}
	return bleve.NewDisjunctionQuery(ds...)
}

// Search implements Engine: the top 10 hits with the stored title.
func (b *Bleve) Search(ctx context.Context, q Query) (int, error) {
	req := bleve.NewSearchRequestOptions(BleveQuery(q), 10, 0, false)
	req.Fields = []string{"title"}
	res, err := b.idx.SearchInContext(ctx, req)
	if err != nil {
		return 0, err
	}
	return int(res.Total), nil
}

// SearchTop implements Engine.
func (b *Bleve) SearchTop(ctx context.Context, q Query) (int, []string, error) {
	req := bleve.NewSearchRequestOptions(BleveQuery(q), 10, 0, false)
	req.Fields = []string{"title"}
	res, err := b.idx.SearchInContext(ctx, req)
	if err != nil {
		return 0, nil, err
	}
	ids := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		ids[i] = h.ID
	}
	return int(res.Total), ids, nil
}

func (b *Bleve) scorch() (*scorch.Scorch, error) {
	adv, err := b.idx.Advanced()
	if err != nil {
		return nil, err
	}
	s, ok := adv.(*scorch.Scorch)
	if !ok {
		return nil, fmt.Errorf("bleve: index is %T, not scorch", adv)
	}
	return s, nil
}

// ForceMerge implements Engine with scorch's ForceMerge and the
// single-segment merge plan; scorch merges SegmentsPerMergeTask segments
// per task, so it is asked again until one segment remains.
func (b *Bleve) ForceMerge(ctx context.Context) error {
	s, err := b.scorch()
	if err != nil {
		return err
	}
	for i := 0; i < 20 && b.Segments() > 1; i++ {
		opts := mergeplan.SingleSegmentMergePlanOptions
		if err := s.ForceMerge(ctx, &opts); err != nil {
			return err
		}
	}
	if n := b.Segments(); n > 1 {
		return fmt.Errorf("bleve: %d segments left after ForceMerge", n)
	}
	return nil
}

// Segments implements Engine: file and memory segments at the root.
func (b *Bleve) Segments() int {
	s, err := b.scorch()
	if err != nil {
		return -1
	}
	m := s.StatsMap()
	n := 0
	for _, k := range []string{"num_root_filesegments", "num_root_memorysegments"} {
		if v, ok := m[k].(uint64); ok {
			n += int(v)
		}
	}
	return n
}

// bleveVersion is the module version used, for the report.
func bleveVersion() string {
	v := moduleVersion("github.com/blevesearch/bleve/v2")
	return strings.TrimSpace("bleve " + v)
}
