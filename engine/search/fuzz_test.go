package search

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzParse checks that no query text makes the parser panic, that every
// refusal is a *QueryError, and that accepted text queries are well formed.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"light", `+title:"rays of light" -red year:1704`, `"unterminated`, "+", "a:b:c",
		`{"dense":{"field":"emb","vector":[1,2,3,4],"k":2}}`, `{"sparse":{"field":"sp","vector":{"a":1}}}`,
	} {
		f.Add(seed)
	}
	s := parseSchema(f)
	f.Fuzz(func(t *testing.T, in string) {
		q, err := ParseString(s, in)
		checkParsed(t, q, err)
		jq, err := Parse(s, json.RawMessage(in))
		if err == nil {
			if tq, ok := jq.(*TextQuery); ok {
				checkParsed(t, tq, nil)
			}
		} else {
			checkParsed(t, nil, err)
		}
		quoted, _ := json.Marshal(in)
		jq, err = Parse(s, quoted)
		tq, _ := jq.(*TextQuery)
		checkParsed(t, tq, err)
	})
}

func checkParsed(t *testing.T, q *TextQuery, err error) {
	t.Helper()
	if err != nil {
		var qe *QueryError
		if !errors.As(err, &qe) {
			t.Fatalf("error %v is not a *QueryError", err)
		}
		return
	}
	if q == nil {
		t.Fatal("nil query without an error")
	}
	for _, c := range q.Clauses {
		if len(c.Fields) == 0 || len(c.Terms) == 0 || len(c.Terms) != len(c.Offsets) || c.Offsets[0] != 0 {
			t.Fatalf("malformed clause %+v", c)
		}
		for i := 1; i < len(c.Offsets); i++ {
			if c.Offsets[i] <= c.Offsets[i-1] {
				t.Fatalf("offsets not increasing: %+v", c)
			}
		}
	}
}

// FuzzSearch runs arbitrary query text over real segments: a query the
// parser accepts must run without error, and its hits must be ordered and
// no more than its total.
func FuzzSearch(f *testing.F) {
	for _, q := range textQueries {
		f.Add(q, 3, 2)
	}
	f.Add(`{"dense":{"field":"emb","vector":[1,2,3,4],"k":5}}`, 10, 0)
	f.Add(`{"sparse":{"field":"sp","vector":{"thex":1}}}`, 4, 1)
	c := newtonCorpus(f)
	views := c.views(f, split{sizes: c.thirds(), deleted: map[int]bool{2: true, 300: true}})
	f.Fuzz(func(t *testing.T, q string, limit, offset int) {
		raw := json.RawMessage(q)
		if _, err := Parse(c.schema, raw); err != nil {
			raw, _ = json.Marshal(q)
		}
		res, err := Search(context.Background(), c.schema, views, Request{Query: raw, Limit: limit, Offset: offset})
		if err != nil {
			var qe *QueryError
			if !errors.As(err, &qe) {
				t.Fatalf("%s: %v", q, err)
			}
			return
		}
		if len(res.Hits) > res.TotalHits {
			t.Fatalf("%s: %d hits of %d", q, len(res.Hits), res.TotalHits)
		}
		for i := 1; i < len(res.Hits); i++ {
			checkOrder(t, q, res.Hits[i-1], res.Hits[i])
		}
	})
}
