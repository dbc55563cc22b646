package hostile

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
)

// ingest is a class that posts an NDJSON body to the baseline index with
// the write token.
func ingest(name string, body func(e *env) []byte, want []answer) class {
	return class{name: name, want: want, req: func(e *env) request {
		return request{method: http.MethodPost, path: indexPath(baseIndex, "documents"), body: body(e), as: asWrite}
	}}
}

// evilDoc is a body of one hostile document with the given members.
func evilDoc(members string) func(*env) []byte {
	return func(e *env) []byte { return e.doc(members) }
}

// raw is a fixed body.
func raw(s string) func(*env) []byte { return func(*env) []byte { return []byte(s) } }

// documentClasses are malformed, mistyped and null-laden documents. The
// contract: unknown fields, wrong types, a missing primary key, vectors of
// the wrong size, invalid UTF-8 or malformed JSON reject the whole request
// with InvalidDocument, and nothing of it is indexed.
func documentClasses() []class {
	return []class{
		// Malformed and truncated.
		ingest("document: truncated JSON", raw(`{"id":"evil","tag":"base","title":"li`), badDocument),
		ingest("document: truncated after a complete line", func(e *env) []byte {
			return append(e.doc(`"title":"fine"`), `{"id":"evil-2","tag":"ba`...)
		}, badDocument),
		ingest("document: array instead of an object", raw(`[{"id":"evil","tag":"base"}]`+"\n"), badDocument),
		ingest("document: a bare null line", raw("null\n"), badDocument),
		ingest("document: a bare string line", raw(`"evil"`+"\n"), badDocument),
		ingest("document: trailing garbage after the object", raw(`{"id":"evil","tag":"base"} xyz`+"\n"), badDocument),
		ingest("document: two objects on one line", raw(`{"id":"evil","tag":"base"}{"id":"evil-2"}`+"\n"), badDocument),
		ingest("document: duplicate member", raw(`{"id":"evil","tag":"base","id":"doc-001"}`+"\n"), badDocument),
		ingest("document: unknown field", evilDoc(`"colour":"red"`), badDocument),
		ingest("document: invalid UTF-8", evilDoc("\"title\":\"\xff\xfe light\""), badDocument),
		ingest("document: raw NUL byte in a string", evilDoc("\"title\":\"li\x00ght\""), badDocument),
		ingest("document: JSON nested 30000 deep", evilDoc(`"title":`+strings.Repeat("[", 30000)+strings.Repeat("]", 30000)), badDocument),
		// The primary key.
		ingest("document: missing primary key", raw(`{"tag":"base","title":"no key"}`+"\n"), badDocument),
		ingest("document: null primary key", raw(`{"id":null,"tag":"base"}`+"\n"), badDocument),
		ingest("document: empty primary key", raw(`{"id":"","tag":"base"}`+"\n"), badDocument),
		ingest("document: numeric primary key of a keyword", raw(`{"id":7,"tag":"base"}`+"\n"), badDocument),
		ingest("document: primary key as an array", raw(`{"id":["evil"],"tag":"base"}`+"\n"), badDocument),
		// Wrong types, field by field.
		ingest("document: text as a number", evilDoc(`"title":5`), badDocument),
		ingest("document: text as an object", evilDoc(`"body":{"text":"light"}`), badDocument),
		ingest("document: text as a boolean", evilDoc(`"title":true`), badDocument),
		ingest("document: keyword as an object", evilDoc(`"tags":{"a":1}`), badDocument),
		ingest("document: multi keyword with a null", evilDoc(`"tags":["opticks",null]`), badDocument),
		ingest("document: multi keyword of numbers", evilDoc(`"tags":[1,2]`), badDocument),
		ingest("document: array on a single-valued field", evilDoc(`"title":["light","rays"]`), badDocument),
		ingest("document: u64 as a string", evilDoc(`"year":"1704"`), badDocument),
		ingest("document: negative u64", evilDoc(`"year":-1`), badDocument),
		ingest("document: fractional u64", evilDoc(`"year":1.5`), badDocument),
		ingest("document: u64 of 2^64", evilDoc(`"year":18446744073709551616`), badDocument),
		ingest("document: u64 in exponent form", evilDoc(`"year":1e3`), badDocument),
		ingest("document: u64 of 400 digits", evilDoc(`"year":`+strings.Repeat("9", 400)), badDocument),
		ingest("document: i64 of 2^63", evilDoc(`"delta":9223372036854775808`), badDocument),
		ingest("document: fractional i64", evilDoc(`"delta":-0.5`), badDocument),
		ingest("document: i64 as a boolean", evilDoc(`"delta":false`), badDocument),
		ingest("document: f64 NaN literal", evilDoc(`"ratio":NaN`), badDocument),
		ingest("document: f64 Infinity literal", evilDoc(`"ratio":Infinity`), badDocument),
		ingest("document: f64 overflowing to infinity", evilDoc(`"ratio":1e400`), badDocument),
		ingest("document: f64 negative overflow", evilDoc(`"ratio":-1e309`), badDocument),
		ingest("document: f64 as a string", evilDoc(`"ratio":"0.5"`), badDocument),
		ingest("document: f64 hexadecimal", evilDoc(`"ratio":0x10`), badDocument),
		// Dense vectors (dims 4).
		ingest("document: dense vector of 3 dimensions", evilDoc(`"emb":[1,2,3]`), badDocument),
		ingest("document: dense vector of 5 dimensions", evilDoc(`"emb":[1,2,3,4,5]`), badDocument),
		ingest("document: empty dense vector", evilDoc(`"emb":[]`), badDocument),
		ingest("document: dense vector with a null", evilDoc(`"emb":[null,0,0,0]`), badDocument),
		ingest("document: dense vector of nulls", evilDoc(`"emb":[null,null,null,null]`), badDocument),
		ingest("document: dense vector of strings", evilDoc(`"emb":["1","2","3","4"]`), badDocument),
		ingest("document: dense vector past float32", evilDoc(`"emb":[1e39,0,0,0]`), badDocument),
		ingest("document: dense vector as an object", evilDoc(`"emb":{"0":1,"1":2,"2":3,"3":4}`), badDocument),
		ingest("document: dense vector of nested arrays", evilDoc(`"emb":[[1],[2],[3],[4]]`), badDocument),
		ingest("document: dense vector as a number", evilDoc(`"emb":4`), badDocument),
		// Sparse vectors.
		ingest("document: sparse vector with a null weight", evilDoc(`"terms":{"a":null}`), badDocument),
		ingest("document: sparse vector as an array", evilDoc(`"terms":[1,2]`), badDocument),
		ingest("document: sparse weight as a string", evilDoc(`"terms":{"a":"1"}`), badDocument),
		ingest("document: sparse weight past float32", evilDoc(`"terms":{"a":1e39}`), badDocument),
		ingest("document: sparse dimension with an empty name", evilDoc(`"terms":{"":1}`), badDocument),
		ingest("document: sparse weight as an object", evilDoc(`"terms":{"a":{"b":1}}`), badDocument),
		ingest("document: sparse dimension name of 1025 bytes", evilDoc(`"terms":{"`+strings.Repeat("d", 1025)+`":1}`), badDocument),
		// All or nothing.
		ingest("document: 20 good lines, then a bad one", func(e *env) []byte {
			var b bytes.Buffer
			for i := 0; i < 20; i++ {
				b.Write(e.docKey(fmt.Sprintf("evil-%d", i), `"title":"fine"`))
			}
			b.Write(e.doc(`"year":"bad"`))
			return b.Bytes()
		}, badDocument),
		{name: "document: upsert of a baseline key, a bad line, then a commit", run: upsertThenBadLine},
		ingest("document: chunked body with a bad last line", nil, badDocument).chunked(func(e *env) []byte {
			return append(e.docKey("evil-1", `"title":"fine"`), e.doc(`"emb":[1,2]`)...)
		}),
		// Empty and degenerate bodies change nothing.
		ingest("document: empty body", raw(""), either(okay, badRequest, badDocument)),
		ingest("document: only blank lines", raw("\n\n  \n\t\n"), either(okay, badRequest, badDocument)),
		ingest("document: a million newlines", raw(strings.Repeat("\n", 1<<20)), either(okay, badRequest, badDocument)),
		ingest("document: CRLF line ends with a bad line", func(e *env) []byte {
			return []byte(`{"id":"evil","tag":"base"}` + "\r\n" + `{"id":"evil-2","year":-5}` + "\r\n")
		}, badDocument),
		// Wrong index and wrong form of deletion.
		{name: "document: ingestion into a missing index", want: []answer{{404, "IndexNotFound"}}, req: func(e *env) request {
			return request{method: http.MethodPost, path: indexPath("nope", "documents"), body: e.doc(""), as: asWrite}
		}},
		{name: "document: deletion in a missing index", want: []answer{{404, "IndexNotFound"}},
			req: get(request{method: http.MethodDelete, path: indexPath("nope", "documents/doc-001"), as: asWrite})},
		{name: "document: deletion of an empty primary key", want: either([]answer{{404, ""}, {405, ""}}, badRequest),
			req: get(request{method: http.MethodDelete, path: indexPath(baseIndex, "documents/"), as: asWrite})},
		{name: "document: deletion of a 2 KiB primary key", want: either(okay, badRequest, badDocument),
			req: get(request{method: http.MethodDelete, path: indexPath(scratchIndex, "documents/"+strings.Repeat("k", 2048)), as: asWrite})},
		{name: "document: deletion of a key with an encoded slash and dots", want: either(okay, badRequest, []answer{{404, "NotFound"}}),
			req: get(request{method: http.MethodDelete, path: indexPath(scratchIndex, "documents/..%2F..%2Fbase"), as: asWrite})},
		{name: "document: deletion of a 1 MiB primary key", want: []answer{{431, ""}, {414, ""}},
			req: get(request{method: http.MethodDelete, path: indexPath(baseIndex, "documents/"+strings.Repeat("k", 1<<20)), as: asWrite})},
	}
}

// chunked makes an ingestion class send body with chunked encoding.
func (c class) chunked(body func(e *env) []byte) class {
	c.req = func(e *env) request {
		return request{method: http.MethodPost, path: indexPath(baseIndex, "documents"), body: body(e), as: asWrite, chunked: true}
	}
	return c
}

// upsertThenBadLine sends a good upsert of baseline document doc-007 with
// a changed title followed by an invalid line, then commits: the refused
// request must leave doc-007 as it was.
func upsertThenBadLine(e *env) error {
	body := append(e.docKey("doc-007", `"title":"replaced by a hostile request"`), e.doc(`"ratio":"x"`)...)
	r, err := e.send(request{method: http.MethodPost, path: indexPath(baseIndex, "documents"), body: body, as: asWrite})
	if err != nil {
		return err
	}
	if !matches(r, badDocument) {
		return fmt.Errorf("POST documents (upsert of doc-007, then a bad line): got %s, want 400 InvalidDocument", r)
	}
	c, err := e.send(request{method: http.MethodPost, path: indexPath(baseIndex, "commit"), as: asWrite})
	if err != nil {
		return err
	}
	if c.Status != http.StatusOK {
		return fmt.Errorf("POST commit after the refused request: got %s, want 200", c)
	}
	return nil
}

// sizeClasses are bodies at and past every size limit.
func sizeClasses() []class {
	return []class{
		ingest("size: document 1 byte past --max-document-bytes", func(e *env) []byte {
			return padded(e.doc(`"body":""`), maxDocumentBytes+1)
		}, tooLarge),
		{name: "size: document exactly at --max-document-bytes", want: okay, req: func(e *env) request {
			body := padded([]byte(`{"id":"at-limit","body":""}`+"\n"), maxDocumentBytes)
			return request{method: http.MethodPost, path: indexPath(scratchIndex, "documents"), body: body, as: asWrite}
		}},
		ingest("size: primary key of 1 MiB", func(e *env) []byte {
			return []byte(`{"id":"evil` + strings.Repeat("k", 1<<20) + `","tag":"base"}` + "\n")
		}, tooLarge),
		ingest("size: keyword of 1 MiB", evilDoc(`"tags":["`+strings.Repeat("k", 1<<20)+`"]`), tooLarge),
		ingest("size: sparse dimension name of 1 MiB", evilDoc(`"terms":{"`+strings.Repeat("d", 1<<20)+`":1}`), tooLarge),
		{name: "size: primary key of 1025 bytes", want: either(okay, badDocument), req: func(e *env) request {
			body := []byte(`{"id":"` + strings.Repeat("k", 1025) + `"}` + "\n")
			return request{method: http.MethodPost, path: indexPath(scratchIndex, "documents"), body: body, as: asWrite}
		}},
		ingest("size: body past --max-request-bytes", func(e *env) []byte { return manyDocs(e, maxRequestBytes+1024) }, tooLarge),
		ingest("size: chunked body past --max-request-bytes", nil, tooLarge).chunked(func(e *env) []byte {
			return manyDocs(e, maxRequestBytes+1024)
		}),
		{name: "size: body exactly at --max-request-bytes", want: okay, req: func(e *env) request {
			var b bytes.Buffer
			line := `{"id":"big-%d","body":"` + strings.Repeat("light and colours ", 1700) + `"}` + "\n"
			for i := 0; maxRequestBytes-b.Len() > 60000; i++ {
				fmt.Fprintf(&b, line, i)
			}
			b.Write(padded([]byte(`{"id":"big-last","body":""}`+"\n"), maxRequestBytes-b.Len()-1))
			return request{method: http.MethodPost, path: indexPath(scratchIndex, "documents"), body: b.Bytes(), as: asWrite}
		}},
		{name: "size: schema body past 1 MiB", want: tooLarge, req: func(e *env) request {
			return request{method: http.MethodPut, path: indexPath("hx-big-schema", ""),
				body: []byte(`{"schema":{"fields":[{"name":"id","type":"keyword","primary":true}]},"pad":"` + strings.Repeat("p", 1<<20) + `"}`)}
		}, then: notFound("hx-big-schema")},
		{name: "size: search body past 1 MiB", want: tooLarge, req: func(e *env) request {
			return request{method: http.MethodPost, path: indexPath(baseIndex, "search"), as: asRead,
				body: []byte(`{"query":"light","pad":"` + strings.Repeat("p", 1<<20) + `"}`)}
		}},
		{name: "size: merge body past 64 KiB", want: tooLarge, req: func(e *env) request {
			return request{method: http.MethodPost, path: indexPath(baseIndex, "merge"),
				body: []byte(`{"maxSegments":1,"pad":"` + strings.Repeat("p", 70<<10) + `"}`)}
		}},
		{name: "size: resume body past 64 KiB", want: either(tooLarge, okay, []answer{{202, ""}}), req: func(e *env) request {
			return request{method: http.MethodPost, path: "/v1/admin/resume", body: bytes.Repeat([]byte(" "), 70<<10)}
		}, then: notDraining},
	}
}

// padded pads doc's "body" (or the last string member) so that the line
// without its newline is exactly n bytes.
func padded(doc []byte, n int) []byte {
	doc = bytes.TrimRight(doc, "\n")
	i := bytes.LastIndex(doc, []byte(`""`))
	pad := n - len(doc)
	out := append(append(append([]byte{}, doc[:i+1]...), bytes.Repeat([]byte("x"), pad)...), doc[i+1:]...)
	return append(out, '\n')
}

// manyDocs is valid hostile documents for the baseline index totalling at
// least n bytes.
func manyDocs(e *env, n int) []byte {
	var b bytes.Buffer
	text := strings.Repeat("light ", 1000)
	for i := 0; b.Len() < n; i++ {
		b.Write(e.docKey(fmt.Sprintf("evil-%d", i), `"body":"`+text+`"`))
	}
	return b.Bytes()
}
