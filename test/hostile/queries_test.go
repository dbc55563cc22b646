package hostile

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// find is a class that posts a raw search body to the baseline index with
// the read token.
func find(name, body string, want []answer) class {
	return class{name: name, want: want,
		req: get(request{method: http.MethodPost, path: indexPath(baseIndex, "search"), body: []byte(body), as: asRead})}
}

// queryText is a search body of query text q.
func queryText(q string) string {
	b, _ := json.Marshal(map[string]any{"query": q, "limit": 5})
	return string(b)
}

// text is a class of one query in the query language.
func text(name, q string, want []answer) class { return find(name, queryText(q), want) }

// badBody allows the codes of a search body the server cannot decode.
var badBody = either(badRequest, badQuery)

// maybe allows a query the contract does not forbid: answered or refused,
// never a 5xx.
var maybe = either(okay, badQuery)

// searchClasses are malformed and mistyped search bodies and vector
// queries. The contract: a refused query is InvalidQuery 400.
func searchClasses() []class {
	dense := func(v string) string { return `{"query":{"dense":{"field":"emb","vector":` + v + `}}}` }
	sparse := func(v string) string { return `{"query":{"sparse":{"field":"terms","vector":` + v + `}}}` }
	many := map[string]float64{}
	for i := 0; i < 2000; i++ {
		many[fmt.Sprintf("d%d", i)] = 1
	}
	manyJSON, _ := json.Marshal(many)
	return []class{
		find("search: truncated body", `{"query":"light","lim`, badBody),
		find("search: empty body", ``, badBody),
		find("search: body is an array", `["light"]`, badBody),
		find("search: body is null", `null`, badBody),
		find("search: JSON nested 100000 deep", `{"query":`+strings.Repeat(`{"a":`, 100000)+`1`+strings.Repeat("}", 100001), badBody),
		find("search: unknown member", `{"query":"light","explain":true}`, badBody),
		find("search: query missing", `{"limit":5}`, badQuery),
		find("search: query is null", `{"query":null}`, badQuery),
		find("search: query is a number", `{"query":42}`, badQuery),
		find("search: query is a boolean", `{"query":true}`, badQuery),
		find("search: query is an array", `{"query":["light"]}`, badQuery),
		find("search: limit as a string", `{"query":"light","limit":"10"}`, badQuery),
		find("search: limit is null", `{"query":"light","limit":null}`, maybe),
		find("search: offset is null", `{"query":"light","offset":null}`, maybe),
		find("search: negative limit", `{"query":"light","limit":-1}`, badQuery),
		find("search: negative offset", `{"query":"light","offset":-1}`, badQuery),
		find("search: fractional limit", `{"query":"light","limit":10.5}`, badQuery),
		find("search: limit past int64", `{"query":"light","limit":1e30}`, badQuery),
		find("search: limit of a billion", `{"query":"light","limit":1000000000}`, badQuery),
		find("search: offset of 2^63-1", `{"query":"light","offset":9223372036854775807}`, badQuery),
		find("search: offset of 2^64", `{"query":"light","offset":18446744073709551616}`, badQuery),
		find("search: limit and offset overflowing together", `{"query":"light","limit":9223372036854775807,"offset":9223372036854775807}`, badQuery),
		find("search: query on a missing index", `{"query":"light"}`, badQuery).at("nope", []answer{{404, "IndexNotFound"}}),
		// Dense vector queries (dims 4).
		find("dense query: 3 dimensions", dense(`[1,2,3]`), badQuery),
		find("dense query: 4096 dimensions", dense("["+strings.TrimSuffix(strings.Repeat("1,", 4096), ",")+"]"), badQuery),
		find("dense query: a null dimension", dense(`[null,0,0,0]`), badQuery),
		find("dense query: vector is null", dense(`null`), badQuery),
		find("dense query: vector of strings", dense(`["1","2","3","4"]`), badQuery),
		find("dense query: past float32", dense(`[1e39,0,0,0]`), badQuery),
		find("dense query: k of zero", `{"query":{"dense":{"field":"emb","vector":[1,0,0,0],"k":0}}}`, badQuery),
		find("dense query: k of a million", `{"query":{"dense":{"field":"emb","vector":[1,0,0,0],"k":1000000}}}`, badQuery),
		find("dense query: k as a string", `{"query":{"dense":{"field":"emb","vector":[1,0,0,0],"k":"5"}}}`, badQuery),
		find("dense query: on a text field", `{"query":{"dense":{"field":"body","vector":[1,0,0,0]}}}`, badQuery),
		find("dense query: on a missing field", `{"query":{"dense":{"field":"nope","vector":[1,0,0,0]}}}`, badQuery),
		find("dense query: field is null", `{"query":{"dense":{"field":null,"vector":[1,0,0,0]}}}`, badQuery),
		find("dense query: dense is null", `{"query":{"dense":null}}`, badQuery),
		// Sparse vector queries.
		find("sparse query: a null weight", sparse(`{"a":null}`), badQuery),
		find("sparse query: empty vector", sparse(`{}`), badQuery),
		find("sparse query: vector as an array", sparse(`[1,2]`), badQuery),
		find("sparse query: weight as a string", sparse(`{"a":"1"}`), badQuery),
		find("sparse query: weight past float32", sparse(`{"a":1e39}`), badQuery),
		find("sparse query: 2000 dimensions", sparse(string(manyJSON)), badQuery),
		find("sparse query: empty dimension name", sparse(`{"":1}`), badQuery),
		find("vector query: dense and sparse at once", `{"query":{"dense":{"field":"emb","vector":[1,0,0,0]},"sparse":{"field":"terms","vector":{"a":1}}}}`, badQuery),
		find("vector query: unknown kind", `{"query":{"knn":{"field":"emb","vector":[1,0,0,0]}}}`, badQuery),
		find("vector query: empty object", `{"query":{}}`, badQuery),
	}
}

// at sends a search class to another index with other allowed answers.
func (c class) at(index string, want []answer) class {
	inner := c.req
	c.req = func(e *env) request {
		r := inner(e)
		r.path = indexPath(index, "search")
		return r
	}
	c.want = want
	return c
}

// queryClasses abuse the query language: bad syntax, unknown fields,
// lengths and clause counts at and past the bounds (16 KiB of text, 1024
// clauses), deep nesting and huge phrases.
func queryClasses() []class {
	words := func(n int, w string) string { return strings.TrimSpace(strings.Repeat(w+" ", n)) }
	return []class{
		text("query: unbalanced quote", `"light and colours`, badQuery),
		text("query: unbalanced quote in a field phrase", `title:"light`, badQuery),
		text("query: unknown field", `nope:light`, badQuery),
		text("query: u64 field with a word", `year:light`, badQuery),
		text("query: i64 field with a fraction", `delta:-0.5`, badQuery),
		text("query: vector field as a term", `emb:light`, badQuery),
		text("query: a lone plus", `+`, badQuery),
		text("query: a lone minus", `-`, badQuery),
		text("query: field without a term", `title:`, badQuery),
		text("query: empty string", ``, badQuery),
		text("query: only whitespace", " \t\n ", badQuery),
		text("query: only operators and quotes", `+ - : " +"`, badQuery),
		text("query: 1 byte past 16 KiB", strings.Repeat("x", maxQueryBytes+1), badQuery),
		text("query: 512 KiB of text", strings.Repeat("light ", 512<<10/6), badQuery),
		text("query: one term of exactly 16 KiB", strings.Repeat("x", maxQueryBytes), okay),
		text("query: 1024 clauses", words(1024, "light"), okay),
		text("query: 1025 clauses", words(1025, "light"), badQuery),
		text("query: 2000 distinct terms", distinctTerms(2000), badQuery),
		text("query: 1024 must clauses", words(1024, "+light"), okay),
		text("query: 1024 must-not clauses only", words(1024, "-light"), maybe),
		text("query: 1024 field clauses on every type", fieldClauses(1024), maybe),
		text("query: parentheses nested 8000 deep", strings.Repeat("(", 8000)+"light"+strings.Repeat(")", 8000), maybe),
		text("query: plus signs nested 8000 deep", strings.Repeat("+", 8000)+"light", maybe),
		text("query: phrase of 10000 words", `"`+words(10000, "w")+`"`, badQuery),
		text("query: phrase of one term 2700 times", `"`+words(2700, "light")+`"`, maybe),
		text("query: phrase of 4000 one-letter words", `"`+words(4000, "a")+`"`, maybe),
		text("query: 5000 combining marks", "l"+strings.Repeat("\u0301", 5000), maybe),
		text("query: NUL characters", "li\x00ght \x00", maybe),
		text("query: lone surrogate escape", "\xed\xa0\x80light", maybe),
		find("query: invalid UTF-8 in the body", "{\"query\":\"\xff\xfe light\"}", either(badBody, okay)),
		text("query: a colon after 10000 letters (no field name is that long)", strings.Repeat("f", 10000)+":light", maybe),
		text("query: 1000 colons", strings.Repeat(":", 1000), maybe),
	}
}

// distinctTerms is n different terms.
func distinctTerms(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "t%d ", i)
	}
	return b.String()
}

// fieldClauses is n field:term clauses over the baseline's scalar fields.
func fieldClauses(n int) string {
	forms := []string{"title:light", "tag:base", "tags:opticks", "year:1710", "delta:-3000", "ratio:0.375", "id:doc-001", `body:"the light"`}
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(forms[i%len(forms)] + " ")
	}
	return b.String()
}
