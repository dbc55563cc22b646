package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/server"
)

// coercionCase is a request that encoding/json would have read with a
// silent default (null as 0 or as absent, the last of two members, a
// member of another case): it must be refused with the code and a
// message naming the offending member.
type coercionCase struct {
	name         string
	method, path string
	body         string
	status       int
	code         string
	// names is a substring the message must contain (the field).
	names string
}

func coercionCases() []coercionCase {
	const docs, search, merge = "/v1/indexes/t/documents", "/v1/indexes/t/search", "/v1/indexes/t/merge"
	const put = "/v1/indexes/new"
	q := func(query string) string { return `{"query":` + query + `}` }
	return []coercionCase{
		// Documents: nothing of the request is indexed.
		{"null in a dense vector", "POST", docs, doc(`,"emb":[null,0,0,0]`), 400, client.CodeInvalidDocument, `"emb"`},
		{"null last in a dense vector", "POST", docs, doc(`,"emb":[1,2,3,null]`), 400, client.CodeInvalidDocument, `"emb"`},
		{"null weight in a sparse vector", "POST", docs, doc(`,"terms":{"a":null}`), 400, client.CodeInvalidDocument, `"terms"`},
		{"repeated sparse dimension", "POST", docs, doc(`,"terms":{"a":1,"a":2}`), 400, client.CodeInvalidDocument, `"terms"`},
		{"string in a dense vector", "POST", docs, doc(`,"emb":["1",0,0,0]`), 400, client.CodeInvalidDocument, `"emb"`},
		{"nested array in a dense vector", "POST", docs, doc(`,"emb":[[1],0,0,0]`), 400, client.CodeInvalidDocument, `"emb"`},
		{"bool weight in a sparse vector", "POST", docs, doc(`,"terms":{"a":true}`), 400, client.CodeInvalidDocument, `"terms"`},
		{"dense component beyond float32", "POST", docs, doc(`,"emb":[1e39,0,0,0]`), 400, client.CodeInvalidDocument, `"emb"`},
		{"null in a multi-valued field", "POST", docs, doc(`,"tags":["a",null]`), 400, client.CodeInvalidDocument, `"tags"`},
		{"u64 beyond 2^64", "POST", docs, doc(`,"year":18446744073709551616`), 400, client.CodeInvalidDocument, `"year"`},
		{"u64 with an exponent", "POST", docs, doc(`,"year":1e3`), 400, client.CodeInvalidDocument, `"year"`},
		{"u64 as a numeric string", "POST", docs, doc(`,"year":"1704"`), 400, client.CodeInvalidDocument, `"year"`},
		{"good line then a null vector", "POST", docs, doc(`,"emb":[1,2,3,4]`) + doc(`,"emb":[1,null,3,4]`), 400, client.CodeInvalidDocument, `"emb"`},
		// Vector queries.
		{"null in a dense query", "POST", search, q(`{"dense":{"field":"emb","vector":[null,0,0,0]}}`), 400, client.CodeInvalidQuery, "dimension 0"},
		{"null weight in a sparse query", "POST", search, q(`{"sparse":{"field":"terms","vector":{"a":null}}}`), 400, client.CodeInvalidQuery, `"a"`},
		{"repeated dimension in a sparse query", "POST", search, q(`{"sparse":{"field":"terms","vector":{"a":1,"a":1}}}`), 400, client.CodeInvalidQuery, `"a"`},
		{"null k", "POST", search, q(`{"dense":{"field":"emb","vector":[1,0,0,0],"k":null}}`), 400, client.CodeInvalidQuery, "dense.k"},
		{"fractional k", "POST", search, q(`{"dense":{"field":"emb","vector":[1,0,0,0],"k":2.5}}`), 400, client.CodeInvalidQuery, "k"},
		{"null field", "POST", search, q(`{"dense":{"field":null,"vector":[1,0,0,0]}}`), 400, client.CodeInvalidQuery, "dense.field"},
		{"null dense beside a sparse", "POST", search, q(`{"dense":null,"sparse":{"field":"terms","vector":{"a":1}}}`), 400, client.CodeInvalidQuery, "dense"},
		{"null vector", "POST", search, q(`{"dense":{"field":"emb","vector":null}}`), 400, client.CodeInvalidQuery, `"emb"`},
		{"dense member twice", "POST", search, q(`{"dense":{"field":"emb","vector":[1,0,0,0],"field":"emb"}}`), 400, client.CodeInvalidQuery, "field"},
		{"case-mismatched member", "POST", search, q(`{"Dense":{"field":"emb","vector":[1,0,0,0]}}`), 400, client.CodeInvalidQuery, "Dense"},
		// The search body.
		{"limit null", "POST", search, `{"query":"light","limit":null}`, 400, client.CodeInvalidQuery, "limit"},
		{"offset null", "POST", search, `{"query":"light","offset":null}`, 400, client.CodeInvalidQuery, "offset"},
		{"limit fractional", "POST", search, `{"query":"light","limit":2.5}`, 400, client.CodeInvalidQuery, "limit"},
		{"limit beyond int64", "POST", search, `{"query":"light","limit":1e19}`, 400, client.CodeInvalidQuery, "limit"},
		{"limit huge", "POST", search, `{"query":"light","limit":9223372036854775807}`, 400, client.CodeInvalidQuery, "limit"},
		{"offset huge", "POST", search, `{"query":"light","offset":9223372036854775807}`, 400, client.CodeInvalidQuery, "offset"},
		{"offset negative", "POST", search, `{"query":"light","offset":-1}`, 400, client.CodeInvalidQuery, "offset"},
		{"limit as a string", "POST", search, `{"query":"light","limit":"5"}`, 400, client.CodeInvalidQuery, "limit"},
		{"query twice", "POST", search, `{"query":"light","query":"red"}`, 400, client.CodeInvalidQuery, "query"},
		{"limit twice", "POST", search, `{"query":"light","limit":1,"limit":2}`, 400, client.CodeInvalidQuery, "limit"},
		{"member of another case", "POST", search, `{"query":"light","Limit":5}`, 400, client.CodeBadRequest, "Limit"},
		{"trailing garbage", "POST", search, `{"query":"light"}garbage`, 400, client.CodeBadRequest, "trailing"},
		// Schemas.
		{"indexed null", "PUT", put, schemaBody(`{"name":"a","type":"text","indexed":null}`), 400, client.CodeInvalidSchema, "indexed"},
		{"dims null", "PUT", put, schemaBody(`{"name":"v","type":"dense_vector","dims":null}`), 400, client.CodeInvalidSchema, "dims"},
		{"dims fractional", "PUT", put, schemaBody(`{"name":"v","type":"dense_vector","dims":4.5}`), 400, client.CodeInvalidSchema, "dims"},
		{"dims as a string", "PUT", put, schemaBody(`{"name":"v","type":"dense_vector","dims":"4"}`), 400, client.CodeInvalidSchema, "dims"},
		{"dims beyond int", "PUT", put, schemaBody(`{"name":"v","type":"dense_vector","dims":1e30}`), 400, client.CodeInvalidSchema, "dims"},
		{"primary null", "PUT", put, schemaBody(`{"name":"a","type":"text","primary":null}`), 400, client.CodeInvalidSchema, "primary"},
		{"field option twice", "PUT", put, schemaBody(`{"name":"a","type":"text","type":"u64"}`), 400, client.CodeInvalidSchema, "type"},
		{"field option of another case", "PUT", put, schemaBody(`{"Name":"a","type":"text"}`), 400, client.CodeInvalidSchema, "Name"},
		{"null field", "PUT", put, schemaBody(`null`), 400, client.CodeInvalidSchema, "fields[0]"},
		{"fields null", "PUT", put, `{"schema":{"fields":null}}`, 400, client.CodeInvalidSchema, "fields"},
		{"schema twice", "PUT", put, `{"schema":{"fields":[{"name":"a","type":"text"}]},"schema":{"fields":[{"name":"b","type":"text"}]}}`, 400, client.CodeInvalidSchema, "schema"},
		{"schema trailing garbage", "PUT", put, schemaBody(`{"name":"a","type":"text"}`) + "x", 400, client.CodeBadRequest, "trailing"},
		// Admin bodies.
		{"maxSegments null", "POST", merge, `{"maxSegments":null}`, 400, client.CodeBadRequest, "maxSegments"},
		{"maxSegments zero", "POST", merge, `{"maxSegments":0}`, 400, client.CodeBadRequest, "maxSegments"},
		{"maxSegments fractional", "POST", merge, `{"maxSegments":1.5}`, 400, client.CodeBadRequest, "maxSegments"},
		{"maxSegments as a string", "POST", merge, `{"maxSegments":"1"}`, 400, client.CodeBadRequest, "maxSegments"},
		{"maxSegments twice", "POST", merge, `{"maxSegments":5,"maxSegments":1}`, 400, client.CodeBadRequest, "maxSegments"},
		{"maxSegments beyond int64", "POST", merge, `{"maxSegments":1e19}`, 400, client.CodeBadRequest, "maxSegments"},
		{"merge body null", "POST", merge, `null`, 400, client.CodeBadRequest, "null"},
	}
}

// TestCoercionsAreRefused sends every coercion case: each gets its exact
// status and code and a message naming the member, and index "t" is
// unchanged (nothing indexed, nothing merged).
func TestCoercionsAreRefused(t *testing.T) {
	e := newEnv(t, server.Limits{})
	e.create("t")
	e.mustAdd("t", paragraphDocs(t, 10)...)
	e.mustCommit("t")
	before := e.status("t")
	for _, tc := range coercionCases() {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, e.ts.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := e.ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var body struct {
				Error *struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(data, &body); err != nil || body.Error == nil {
				t.Fatalf("not an error body: %d %s", resp.StatusCode, data)
			}
			if resp.StatusCode != tc.status || body.Error.Code != tc.code {
				t.Fatalf("got %d %s (%s), want %d %s", resp.StatusCode, body.Error.Code, body.Error.Message, tc.status, tc.code)
			}
			if !strings.Contains(body.Error.Message, tc.names) {
				t.Fatalf("message %q does not name %s", body.Error.Message, tc.names)
			}
			after := e.status("t")
			if after.Generation != before.Generation || after.Documents != before.Documents || after.UncommittedDocuments != 0 {
				t.Fatalf("index changed: before %+v after %+v", before, after)
			}
		})
	}
	if list, err := e.c.ListIndexes(e.ctx); err != nil || len(list) != 1 {
		t.Fatalf("a refused request created an index: %+v %v", list, err)
	}
}

// TestStrictBodiesStillAccept sends the legitimate forms next to the
// refused ones: absent members keep their defaults, an explicit
// maxSegments is honoured, and empty bodies are still allowed where they
// were.
func TestStrictBodiesStillAccept(t *testing.T) {
	e := newEnv(t, server.Limits{})
	e.create("t")
	e.mustAdd("t", paragraphDocs(t, 10)...)
	e.mustCommit("t")
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/indexes/t/search", `{"query":"light"}`},
		{"POST", "/v1/indexes/t/search", `{"query":"light","limit":0,"offset":0}`},
		{"POST", "/v1/indexes/t/search", `{"query":{"dense":{"field":"emb","vector":[1,0,0,-0.0],"k":3}}}`},
		{"POST", "/v1/indexes/t/search", `{"query":{"sparse":{"field":"terms","vector":{"t1":1,"T1":2}}}}`},
		{"POST", "/v1/indexes/t/merge", `{"maxSegments":2}`},
		{"POST", "/v1/indexes/t/merge", `{}`},
		{"POST", "/v1/indexes/t/merge", ``},
		{"POST", "/v1/indexes/t/documents", doc(`,"emb":[0,0,0,1e-50],"terms":{},"year":null`)},
	} {
		req, _ := http.NewRequest(c.method, e.ts.URL+c.path, strings.NewReader(c.body))
		resp, err := e.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s %s %s: %d %s", c.method, c.path, c.body, resp.StatusCode, data)
		}
	}
}
