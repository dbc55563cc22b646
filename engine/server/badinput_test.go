package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/server"
)

// badCase is one hostile request and the exact answer it must get.
type badCase struct {
	name         string
	method, path string
	body         string
	status       int
	code         string
}

func doc(fields string) string { return `{"id":"x"` + fields + `}` + "\n" }

func schemaBody(fields string) string { return `{"schema":{"fields":[` + fields + `]}}` }

// badCases are at least 30 kinds of bad input against index "t".
func badCases() []badCase {
	const docs, search = "/v1/indexes/t/documents", "/v1/indexes/t/search"
	const put = "/v1/indexes/new"
	longQuery, _ := json.Marshal(strings.Repeat("light ", 3000))
	return []badCase{
		// Documents.
		{"malformed JSON", "POST", docs, `{"id":"x",` + "\n", 400, client.CodeInvalidDocument},
		{"not an object", "POST", docs, "[1,2]\n", 400, client.CodeInvalidDocument},
		{"bare string", "POST", docs, "\"text\"\n", 400, client.CodeInvalidDocument},
		{"unknown field", "POST", docs, doc(`,"nope":1`), 400, client.CodeInvalidDocument},
		{"missing primary key", "POST", docs, `{"title":"x"}` + "\n", 400, client.CodeInvalidDocument},
		{"null primary key", "POST", docs, `{"id":null}` + "\n", 400, client.CodeInvalidDocument},
		{"empty primary key", "POST", docs, `{"id":""}` + "\n", 400, client.CodeInvalidDocument},
		{"u64 as string", "POST", docs, doc(`,"year":"abc"`), 400, client.CodeInvalidDocument},
		{"negative u64", "POST", docs, doc(`,"year":-1`), 400, client.CodeInvalidDocument},
		{"fractional u64", "POST", docs, doc(`,"year":1.5`), 400, client.CodeInvalidDocument},
		{"text as number", "POST", docs, doc(`,"title":5`), 400, client.CodeInvalidDocument},
		{"wrong vector size", "POST", docs, doc(`,"emb":[1,2,3]`), 400, client.CodeInvalidDocument},
		{"vector of strings", "POST", docs, doc(`,"emb":["a","b","c","d"]`), 400, client.CodeInvalidDocument},
		{"sparse as array", "POST", docs, doc(`,"terms":[1,2]`), 400, client.CodeInvalidDocument},
		{"invalid UTF-8", "POST", docs, "{\"id\":\"x\",\"title\":\"\xff\xfe\"}\n", 400, client.CodeInvalidDocument},
		{"array on a non-multi field", "POST", docs, doc(`,"title":["a","b"]`), 400, client.CodeInvalidDocument},
		{"duplicate field", "POST", docs, `{"id":"x","id":"y"}` + "\n", 400, client.CodeInvalidDocument},
		{"two objects on a line", "POST", docs, `{"id":"x"} {"id":"y"}` + "\n", 400, client.CodeInvalidDocument},
		{"bad line after good ones", "POST", docs, doc("") + doc(`,"year":true`), 400, client.CodeInvalidDocument},
		{"oversized document", "POST", docs, doc(`,"body":"` + strings.Repeat("x", 5000) + `"`), 413, client.CodePayloadTooLarge},
		{"oversized body", "POST", docs, strings.Repeat(doc(`,"body":"`+strings.Repeat("y", 900)+`"`), 40), 413, client.CodePayloadTooLarge},
		// Schemas.
		{"empty schema", "PUT", put, schemaBody(""), 400, client.CodeInvalidSchema},
		{"two primaries", "PUT", put, schemaBody(`{"name":"a","type":"text","primary":true},{"name":"b","type":"keyword","primary":true}`), 400, client.CodeInvalidSchema},
		{"unknown type", "PUT", put, schemaBody(`{"name":"a","type":"blob"}`), 400, client.CodeInvalidSchema},
		{"dims missing", "PUT", put, schemaBody(`{"name":"v","type":"dense_vector"}`), 400, client.CodeInvalidSchema},
		{"duplicate field names", "PUT", put, schemaBody(`{"name":"a","type":"text"},{"name":"a","type":"u64"}`), 400, client.CodeInvalidSchema},
		{"unknown field option", "PUT", put, schemaBody(`{"name":"a","type":"text","bogus":true}`), 400, client.CodeInvalidSchema},
		{"schema not an object", "PUT", put, `{"schema":"text"}`, 400, client.CodeInvalidSchema},
		{"no schema member", "PUT", put, `{}`, 400, client.CodeInvalidSchema},
		{"schema body malformed", "PUT", put, `{"schema":`, 400, client.CodeBadRequest},
		{"schema body empty", "PUT", put, ``, 400, client.CodeBadRequest},
		{"schema body an array", "PUT", put, `[]`, 400, client.CodeBadRequest},
		{"schema body oversized", "PUT", put, schemaBody(strings.Repeat(`{"name":"a","type":"text"},`, 3000)), 413, client.CodePayloadTooLarge},
		// Index names.
		{"name ../x", "PUT", "/v1/indexes/..%2Fx", schemaBody(`{"name":"a","type":"text"}`), 400, client.CodeInvalidIndexName},
		{"name A", "PUT", "/v1/indexes/A", schemaBody(`{"name":"a","type":"text"}`), 400, client.CodeInvalidIndexName},
		{"name a..b", "PUT", "/v1/indexes/a..b", schemaBody(`{"name":"a","type":"text"}`), 400, client.CodeInvalidIndexName},
		{"name of 254 chars", "PUT", "/v1/indexes/" + strings.Repeat("a", 254), schemaBody(`{"name":"a","type":"text"}`), 400, client.CodeInvalidIndexName},
		{"name -a", "PUT", "/v1/indexes/-a", schemaBody(`{"name":"a","type":"text"}`), 400, client.CodeInvalidIndexName},
		{"name a_b", "GET", "/v1/indexes/a_b", "", 400, client.CodeInvalidIndexName},
		{"name trailing dot", "DELETE", "/v1/indexes/a.", "", 400, client.CodeInvalidIndexName},
		{"name with space", "POST", "/v1/indexes/a%20b/documents", doc(""), 400, client.CodeInvalidIndexName},
		{"name .summa.lock", "GET", "/v1/indexes/.summa.lock", "", 400, client.CodeInvalidIndexName},
		// Queries.
		{"unterminated quote", "POST", search, `{"query":"\"light"}`, 400, client.CodeInvalidQuery},
		{"unknown query field", "POST", search, `{"query":"nope:x"}`, 400, client.CodeInvalidQuery},
		{"limit -1", "POST", search, `{"query":"light","limit":-1}`, 400, client.CodeInvalidQuery},
		{"offset+limit over 10000", "POST", search, `{"query":"light","limit":100,"offset":9950}`, 400, client.CodeInvalidQuery},
		{"query over 16 KiB", "POST", search, `{"query":` + string(longQuery) + `}`, 400, client.CodeInvalidQuery},
		{"missing query", "POST", search, `{}`, 400, client.CodeInvalidQuery},
		{"empty query", "POST", search, `{"query":""}`, 400, client.CodeInvalidQuery},
		{"query a number", "POST", search, `{"query":5}`, 400, client.CodeInvalidQuery},
		{"limit a string", "POST", search, `{"query":"light","limit":"ten"}`, 400, client.CodeInvalidQuery},
		{"dense wrong dims", "POST", search, `{"query":{"dense":{"field":"emb","vector":[1,2]}}}`, 400, client.CodeInvalidQuery},
		{"dense on a text field", "POST", search, `{"query":{"dense":{"field":"title","vector":[1,2,3,4]}}}`, 400, client.CodeInvalidQuery},
		{"search body malformed", "POST", search, `{"query":`, 400, client.CodeBadRequest},
		{"search body unknown member", "POST", search, `{"query":"light","bogus":1}`, 400, client.CodeBadRequest},
		{"search body empty", "POST", search, ``, 400, client.CodeBadRequest},
		// Methods and routes.
		{"PATCH an index", "PATCH", "/v1/indexes/t", "", 405, client.CodeMethodNotAllowed},
		{"GET documents", "GET", docs, "", 405, client.CodeMethodNotAllowed},
		{"POST healthz", "POST", "/healthz", "", 405, client.CodeMethodNotAllowed},
		{"DELETE drain", "DELETE", "/v1/admin/drain", "", 405, client.CodeMethodNotAllowed},
		{"GET commit", "GET", "/v1/indexes/t/commit", "", 405, client.CodeMethodNotAllowed},
		{"unknown route", "GET", "/v1/nope", "", 404, client.CodeNotFound},
		// Missing indexes and other refusals.
		{"status of a missing index", "GET", "/v1/indexes/missing", "", 404, client.CodeIndexNotFound},
		{"ingest into a missing index", "POST", "/v1/indexes/missing/documents", doc(""), 404, client.CodeIndexNotFound},
		{"commit a missing index", "POST", "/v1/indexes/missing/commit", "", 404, client.CodeIndexNotFound},
		{"delete a missing index", "DELETE", "/v1/indexes/missing", "", 404, client.CodeIndexNotFound},
		{"delete a document of a missing index", "DELETE", "/v1/indexes/missing/documents/x", "", 404, client.CodeIndexNotFound},
		{"merge body malformed", "POST", "/v1/indexes/t/merge", `{"maxSegments":`, 400, client.CodeBadRequest},
		{"merge body unknown member", "POST", "/v1/indexes/t/merge", `{"segments":1}`, 400, client.CodeBadRequest},
		{"merge negative maxSegments", "POST", "/v1/indexes/t/merge", `{"maxSegments":-2}`, 400, client.CodeBadRequest},
		{"reorder body unknown member", "POST", "/v1/indexes/t/reorder", `{"passes":3}`, 400, client.CodeBadRequest},
	}
}

// TestBadInput sends every bad case and checks the exact status and code,
// the error body, that no answer is a 500 and that index "t" is unchanged.
func TestBadInput(t *testing.T) {
	e := newEnv(t, server.Limits{MaxDocumentBytes: 4096, MaxRequestBytes: 32 << 10, MaxSchemaBytes: 16 << 10})
	e.create("t")
	e.mustAdd("t", paragraphDocs(t, 10)...)
	e.mustCommit("t")
	before := e.status("t")
	cases := badCases()
	if len(cases) < 30 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, tc := range cases {
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
					Code      string `json:"code"`
					Message   string `json:"message"`
					Retryable *bool  `json:"retryable"`
				} `json:"error"`
			}
			if err := json.Unmarshal(data, &body); err != nil || body.Error == nil || body.Error.Retryable == nil || body.Error.Message == "" {
				t.Fatalf("not an error body: %d %s", resp.StatusCode, data)
			}
			if resp.StatusCode != tc.status || body.Error.Code != tc.code {
				t.Fatalf("got %d %s (%s), want %d %s", resp.StatusCode, body.Error.Code, body.Error.Message, tc.status, tc.code)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
			if tc.status == 405 && resp.Header.Get("Allow") == "" {
				t.Fatalf("405 without Allow")
			}
			after := e.status("t")
			if after.Generation != before.Generation || after.Documents != before.Documents || after.UncommittedDocuments != 0 {
				t.Fatalf("index changed: before %+v after %+v", before, after)
			}
		})
	}
	list, err := e.c.ListIndexes(e.ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("a bad request created an index: %+v %v", list, err)
	}
	out, _ := e.c.Metrics(e.ctx)
	if strings.Contains(out, `code="500"`) {
		t.Fatalf("a bad request got a 500:\n%s", grepLines(out, `code="500"`))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return fmt.Sprint(out)
}
