package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/server"
)

// wireCase calls one route of a real server and decodes its answer into
// the client's type with unknown members refused.
type wireCase struct {
	// route is "METHOD PATTERN" as in the server's route table.
	route string
	// run calls the route (and whatever it needs first) and checks the
	// decoded answer.
	run func(t *testing.T, e *env)
}

// TestWireRoundTrip: every route of the server's table answers JSON that
// decodes into its client type with DisallowUnknownFields and no trailing
// data (so client is the definition the server really encodes), with the
// values the request implies. A route without a case fails the test.
func TestWireRoundTrip(t *testing.T) {
	e := newEnv(t, server.Limits{})
	const ix = "/v1/indexes/wire"
	docs := paragraphDocs(t, 300)
	var firstGen uint64
	var repl client.ReplicationState
	cases := []wireCase{
		{"GET /healthz", func(t *testing.T, e *env) {
			var h client.Health
			wireCall(t, e, "GET", "/healthz", nil, 200, &h)
			if h.Status != "ok" {
				t.Fatalf("healthz: %+v", h)
			}
		}},
		{"GET /readyz", func(t *testing.T, e *env) {
			var h client.Health
			wireCall(t, e, "GET", "/readyz", nil, 200, &h)
			if h.Status != "ready" {
				t.Fatalf("readyz: %+v", h)
			}
		}},
		{"PUT /v1/indexes/{index}", func(t *testing.T, e *env) {
			var st client.IndexStatus
			wireCall(t, e, "PUT", ix, client.CreateIndexRequest{Schema: json.RawMessage(testSchema)}, 201, &st)
			if st.Name != "wire" || st.State != "open" || st.Documents != 0 || st.Segments == nil || st.Quarantined == nil {
				t.Fatalf("create: %+v", st)
			}
		}},
		{"POST /v1/indexes/{index}/documents", func(t *testing.T, e *env) {
			var res client.AddDocumentsResult
			wireCall(t, e, "POST", ix+"/documents", ndjson(t, docs[:150]), 200, &res)
			if res.Accepted != 150 {
				t.Fatalf("add: %+v", res)
			}
		}},
		{"POST /v1/indexes/{index}/commit", func(t *testing.T, e *env) {
			var res client.CommitResult
			wireCall(t, e, "POST", ix+"/commit", nil, 200, &res)
			if res.Generation == 0 || res.Documents != 150 || res.DurabilityDegraded {
				t.Fatalf("commit: %+v", res)
			}
			firstGen = res.Generation
			// A second segment, for the merge below.
			e.mustAdd("wire", docs[150:]...)
			if res := e.mustCommit("wire"); res.Documents != uint64(len(docs)) || res.Generation <= firstGen {
				t.Fatalf("second commit: %+v", res)
			}
		}},
		{"GET /v1/indexes/{index}", func(t *testing.T, e *env) {
			var st client.IndexStatus
			wireCall(t, e, "GET", ix, nil, 200, &st)
			if st.Name != "wire" || st.State != "open" || st.Documents != uint64(len(docs)) || len(st.Segments) < 2 ||
				st.Segments[0].ID == "" || st.Segments[0].SizeBytes == 0 || st.HeldPublication != nil {
				t.Fatalf("status: %+v", st)
			}
		}},
		{"GET /v1/indexes", func(t *testing.T, e *env) {
			var list client.IndexList
			wireCall(t, e, "GET", "/v1/indexes", nil, 200, &list)
			if len(list.Indexes) != 1 || list.Indexes[0].Name != "wire" || list.Indexes[0].Documents != uint64(len(docs)) {
				t.Fatalf("list: %+v", list)
			}
		}},
		{"POST /v1/indexes/{index}/search", func(t *testing.T, e *env) {
			var res client.SearchResult
			wireCall(t, e, "POST", ix+"/search", client.SearchRequest{Query: "light", Limit: 3, TotalHitsThreshold: 1}, 200, &res)
			if res.TotalHits == 0 || len(res.Hits) != 3 || res.Hits[0].Score <= 0 || !bytes.HasPrefix(res.Hits[0].Fields, []byte(`{"`)) {
				t.Fatalf("search: %+v", res)
			}
			if res.TotalHitsRelation != "" && res.TotalHitsRelation != "gte" {
				t.Fatalf("totalHitsRelation %q", res.TotalHitsRelation)
			}
			var exact client.SearchResult
			wireCall(t, e, "POST", ix+"/search", client.SearchRequest{
				Query: client.VectorQuery{Dense: &client.DenseQuery{Field: "emb", Vector: []float32{1, 0, 0, 0}, K: 4}}}, 200, &exact)
			if len(exact.Hits) != 4 || exact.TotalHitsRelation != "" {
				t.Fatalf("dense search: %+v", exact)
			}
			var sparse client.SearchResult
			wireCall(t, e, "POST", ix+"/search", client.SearchRequest{Query: client.VectorQuery{Sparse: &client.SparseQuery{
				Field: "terms", Vector: map[string]float32{"t1": 1}, K: 5, Cut: 3, HeapFactor: 1.5, Exact: true}}, Limit: 1000}, 200, &sparse)
			if sparse.TotalHits != len(docs)/5 || len(sparse.Hits) != len(docs)/5 { // "t1": every fifth document
				t.Fatalf("sparse search: %d hits, %d total", len(sparse.Hits), sparse.TotalHits)
			}
		}},
		{"DELETE /v1/indexes/{index}/documents/{primaryKey}", func(t *testing.T, e *env) {
			var res client.DeleteDocumentResult
			wireCall(t, e, "DELETE", ix+"/documents/p0001", nil, 200, &res)
			if res.Deleted != 1 {
				t.Fatalf("delete p0001: %+v", res)
			}
			wireCall(t, e, "DELETE", ix+"/documents/no-such-key", nil, 200, &res)
			if res.Deleted != 0 {
				t.Fatalf("delete of a missing key: %+v", res)
			}
			e.mustCommit("wire")
		}},
		{"POST /v1/indexes/{index}/compact", func(t *testing.T, e *env) {
			var res client.MaintenanceResult
			wireCall(t, e, "POST", ix+"/compact", nil, 200, &res)
			if !res.Published || len(res.Sources) != 1 || res.Output == "" || res.Documents != uint64(len(docs)-1) ||
				res.BPConverged != nil || res.PostingsBytesBefore != 0 {
				t.Fatalf("compact: %+v", res)
			}
			// Nothing left to compact: published false, no output.
			var none client.MaintenanceResult
			raw := wireCall(t, e, "POST", ix+"/compact", nil, 200, &none)
			if none.Published || none.Output != "" || none.Sources == nil || len(none.Sources) != 0 || none.Generation != res.Generation {
				t.Fatalf("compact with nothing to do: %s", raw)
			}
		}},
		{"POST /v1/indexes/{index}/merge", func(t *testing.T, e *env) {
			var res client.MaintenanceResult
			wireCall(t, e, "POST", ix+"/merge", client.MergeDownTo(1), 200, &res)
			if !res.Published || len(res.Sources) < 2 || res.Output == "" || res.Documents != uint64(len(docs)-1) {
				t.Fatalf("merge: %+v", res)
			}
			if st := e.status("wire"); len(st.Segments) != 1 || st.Segments[0].ID != res.Output {
				t.Fatalf("after the merge: %+v", st.Segments)
			}
		}},
		{"POST /v1/indexes/{index}/reorder", func(t *testing.T, e *env) {
			var res client.MaintenanceResult
			wireCall(t, e, "POST", ix+"/reorder", nil, 200, &res)
			if !res.Published || len(res.Sources) != 1 || res.Output == "" || res.BPConverged == nil ||
				res.PostingsBytesBefore == 0 || res.PostingsBytesAfter == 0 {
				t.Fatalf("reorder: %+v", res)
			}
		}},
		{"GET /v1/admin/lifecycle", func(t *testing.T, e *env) {
			e.mustAdd("wire", map[string]any{"id": "pending", "title": "t", "body": "uncommitted"})
			var lc client.Lifecycle
			wireCall(t, e, "GET", "/v1/admin/lifecycle", nil, 200, &lc)
			if lc.UncommittedDocuments != 1 || lc.IndexesWithPendingWrites != 1 || lc.DrainEstimateSeconds <= 0 ||
				lc.FlushDocumentsPerSecond <= 0 || lc.HeldPublications != nil {
				t.Fatalf("lifecycle: %+v", lc)
			}
		}},
		{"GET /v1/admin/drain", func(t *testing.T, e *env) {
			var st client.DrainStatus
			wireCall(t, e, "GET", "/v1/admin/drain", nil, 200, &st)
			if st.Draining || st.Drained || st.UncommittedDocuments != 1 {
				t.Fatalf("drain status before a drain: %+v", st)
			}
		}},
		{"POST /v1/admin/drain", func(t *testing.T, e *env) {
			var st client.DrainStatus
			wireCall(t, e, "POST", "/v1/admin/drain", nil, 202, &st)
			if !st.Draining {
				t.Fatalf("drain: %+v", st)
			}
			if err := e.r.Drain(e.ctx); err != nil {
				t.Fatal(err)
			}
			wireCall(t, e, "GET", "/v1/admin/drain", nil, 200, &st)
			if !st.Draining || !st.Drained || st.UncommittedDocuments != 0 || st.LastError != "" {
				t.Fatalf("drained: %+v", st)
			}
		}},
		{"POST /v1/admin/resume", func(t *testing.T, e *env) {
			var st client.DrainStatus
			wireCall(t, e, "POST", "/v1/admin/resume", nil, 200, &st)
			if st.Draining || st.Drained {
				t.Fatalf("resume: %+v", st)
			}
		}},
		{"GET /v1/admin/doctor-reports/{id}", func(t *testing.T, e *env) {
			// The report as summa-server --doctor writes and keeps it.
			rep := registry.DoctorReport{Indexes: []registry.IndexDoctorReport{
				{Name: "articles", DoctorReport: index.DoctorReport{CheckedSegments: 3, RemovedSegments: []segid.ID{0x1a},
					RemovedDocuments: 120, Reasons: map[string]string{"1a": "segment: checksum mismatch"}}},
				{Name: "broken", DoctorReport: index.DoctorReport{RemovedSegments: []segid.ID{}}, Error: "cannot repair"},
			}}
			data, err := json.Marshal(server.DoctorReport(rep, "registry: doctor could not repair 1 index(es)"))
			if err != nil {
				t.Fatal(err)
			}
			if err := registry.SaveDoctorReport(vfs.Default, e.dir, "r1", data); err != nil {
				t.Fatal(err)
			}
			var got client.DoctorReport
			wireCall(t, e, "GET", "/v1/admin/doctor-reports/r1", nil, 200, &got)
			want := `{Indexes:[{Name:articles CheckedSegments:3 RemovedSegments:[1a] RemovedDocuments:120 ` +
				`Reasons:map[1a:segment: checksum mismatch] Error:} {Name:broken CheckedSegments:0 RemovedSegments:[] ` +
				`RemovedDocuments:0 Reasons:map[] Error:cannot repair}] Error:registry: doctor could not repair 1 index(es)}`
			if fmt.Sprintf("%+v", got) != want {
				t.Fatalf("doctor report:\n got %+v\nwant %s", got, want)
			}
		}},
		{"GET /metrics", func(t *testing.T, e *env) {
			resp, err := http.Get(e.ts.URL + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") ||
				!strings.Contains(string(body), `summa_documents_accepted_total{index="wire"}`) {
				t.Fatalf("metrics: %d %s\n%.500s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
		}},
		// Without an object store the backup routes answer 409
		// BackupNotConfigured; their success bodies are decoded into the
		// client types by the S3 black-box tests (test/blackbox), which
		// run against a real S3 server.
		{"POST /v1/indexes/{index}/backups", func(t *testing.T, e *env) {
			wireNotConfigured(t, e, "POST", ix+"/backups")
		}},
		{"GET /v1/indexes/{index}/backups", func(t *testing.T, e *env) {
			wireNotConfigured(t, e, "GET", ix+"/backups")
		}},
		{"GET /v1/indexes/{index}/backups/{id}", func(t *testing.T, e *env) {
			wireNotConfigured(t, e, "GET", ix+"/backups/20261205T000000.000Z-0000abcd")
		}},
		{"GET /v1/indexes/{index}/replication", func(t *testing.T, e *env) {
			wireCall(t, e, "GET", ix+"/replication", nil, 200, &repl)
			if repl.Index != "wire" || repl.Generation == 0 || repl.Hold == "" || repl.HoldSeconds <= 0 ||
				len(repl.Files) == 0 || !bytes.HasPrefix(repl.Metadata, []byte(`{"`)) {
				t.Fatalf("replication: %+v", repl)
			}
			var idle client.ReplicationState
			wireCall(t, e, "GET", fmt.Sprintf("%s/replication?after=%d&wait=0.05", ix, repl.Generation), nil, 200, &idle)
			if idle.Generation != repl.Generation || idle.Hold != "" || idle.Files != nil || idle.Metadata != nil {
				t.Fatalf("replication without a newer generation: %+v", idle)
			}
		}},
		{"GET /v1/indexes/{index}/replication/holds/{hold}/files/{file}", func(t *testing.T, e *env) {
			f := repl.Files[0]
			status, ctype, body := rawCall(t, e, "GET", ix+"/replication/holds/"+repl.Hold+"/files/"+f.Name)
			if status != 200 || ctype != "application/octet-stream" || int64(len(body)) != f.Size {
				t.Fatalf("file %s: %d %s, %d bytes of %d", f.Name, status, ctype, len(body), f.Size)
			}
		}},
		{"DELETE /v1/indexes/{index}/replication/holds/{hold}", func(t *testing.T, e *env) {
			if status, _, _ := rawCall(t, e, "DELETE", ix+"/replication/holds/"+repl.Hold); status != 204 {
				t.Fatalf("release hold: %d", status)
			}
			var body client.ErrorBody
			wireCall(t, e, "DELETE", ix+"/replication/holds/"+repl.Hold, nil, 404, &body)
			if body.Error == nil || body.Error.Code != client.CodeHoldNotFound {
				t.Fatalf("release of a released hold: %+v", body.Error)
			}
		}},
		{"DELETE /v1/indexes/{index}", func(t *testing.T, e *env) {
			var res client.DeleteIndexResult
			wireCall(t, e, "DELETE", ix, nil, 202, &res)
			if res.Name != "wire" || res.State != "deleting" {
				t.Fatalf("delete index: %+v", res)
			}
			waitGone(t, e, "wire")
		}},
	}

	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.route] = true
	}
	served := map[string]bool{}
	for _, r := range server.Routes(e.srv) {
		served[r] = true
		if !covered[r] {
			t.Errorf("route %s has no round-trip case", r)
		}
	}
	for _, c := range cases {
		if !served[c.route] {
			t.Errorf("round-trip case %s names no route of the server", c.route)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	for _, c := range cases {
		if !t.Run(c.route, func(t *testing.T) { c.run(t, e) }) {
			t.FailNow() // the cases build on each other
		}
	}
}

// wireNotConfigured checks a backup route of a server without an object
// store: 409 with code BackupNotConfigured, in client.ErrorBody.
func wireNotConfigured(t *testing.T, e *env, method, path string) {
	t.Helper()
	var body client.ErrorBody
	wireCall(t, e, method, path, nil, 409, &body)
	if body.Error == nil || body.Error.Code != client.CodeBackupNotConfigured || body.Error.Message == "" {
		t.Fatalf("%s %s: %+v", method, path, body.Error)
	}
}

// TestWireErrorBody: error answers, those of the route table's fallbacks
// and of the starting server included, decode into client.ErrorBody.
func TestWireErrorBody(t *testing.T) {
	e := newEnv(t, server.Limits{})
	e.create("errs")
	for _, tc := range []struct {
		method, path string
		body         any
		status       int
		code         string
		line         int
		field        string
	}{
		{"GET", "/v1/indexes/missing", nil, 404, client.CodeIndexNotFound, 0, ""},
		{"GET", "/no/such/route", nil, 404, client.CodeNotFound, 0, ""},
		{"PATCH", "/v1/indexes/errs", nil, 405, client.CodeMethodNotAllowed, 0, ""},
		{"POST", "/v1/indexes/errs/documents", "{\"id\":\"a\"}\n{\"id\":\"b\",\"year\":\"x\"}\n", 400, client.CodeInvalidDocument, 2, "year"},
		{"POST", "/v1/indexes/errs/merge", json.RawMessage(`{"maxSegments":0}`), 400, client.CodeBadRequest, 0, ""},
	} {
		var body client.ErrorBody
		wireCall(t, e, tc.method, tc.path, tc.body, tc.status, &body)
		if d := body.Error; d == nil || d.Code != tc.code || d.Message == "" || d.Line != tc.line || d.Field != tc.field {
			t.Errorf("%s %s: %+v", tc.method, tc.path, d)
		}
	}
	var body client.ErrorBody
	decodeStrict(t, serveStarting(t, "/v1/indexes"), &body)
	if body.Error == nil || body.Error.Code != client.CodeStarting || !body.Error.Retryable {
		t.Fatalf("starting: %+v", body.Error)
	}
	var h client.Health
	decodeStrict(t, serveStarting(t, "/healthz"), &h)
	if h.Status != "ok" {
		t.Fatalf("starting healthz: %+v", h)
	}
}

// serveStarting returns the body StartingHandler answers for path.
func serveStarting(t *testing.T, path string) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	server.StartingHandler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec.Body.Bytes()
}

// wireCall sends body (a string is sent as is, anything else as its JSON)
// to the server, requires the status and a JSON answer, decodes it into
// out with unknown members refused, and returns the raw answer.
func wireCall(t *testing.T, e *env, method, path string, body any, status int, out any) []byte {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(e.ctx, method, e.ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%s %s: %d %s, want %d application/json: %s", method, path, resp.StatusCode,
			resp.Header.Get("Content-Type"), status, raw)
	}
	decodeStrict(t, raw, out)
	return raw
}

// decodeStrict decodes raw into out, refusing unknown members and
// anything after the value.
func decodeStrict(t *testing.T, raw []byte, out any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("decode into %T: %v: %s", out, err, raw)
	}
	if dec.More() {
		t.Fatalf("data after the answer: %s", raw)
	}
}

// ndjson is docs as an NDJSON body.
func ndjson(t *testing.T, docs []any) string {
	t.Helper()
	var b strings.Builder
	for _, d := range docs {
		data, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.String()
}

// rawCall sends a request without a body and returns the status, the
// Content-Type and the body, whatever they are.
func rawCall(t *testing.T, e *env, method, path string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(e.ctx, method, e.ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), body
}
