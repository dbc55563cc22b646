package server_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/server"
)

// TestIngestAllOrNothing sends 100 lines whose line 57 is invalid: the
// answer names line 57 and the field, and nothing of the request is
// indexed, as a commit proves.
func TestIngestAllOrNothing(t *testing.T) {
	e := newEnv(t, server.Limits{})
	e.create("a")
	docs := paragraphDocs(t, 100)
	var body bytes.Buffer
	for i, d := range docs {
		m := d.(map[string]any)
		if i == 56 {
			m["year"] = "seventeen-four"
		}
		line, _ := json.Marshal(m)
		body.Write(line)
		body.WriteByte('\n')
	}
	_, err := e.c.AddNDJSON(e.ctx, "a", &body)
	ae := wantAPIError(t, err, 400, client.CodeInvalidDocument)
	if !strings.HasPrefix(ae.Message, `line 57: field "year": expected an unsigned 64-bit integer`) || ae.Line != 57 || ae.Field != "year" {
		t.Fatalf("message %q line %d field %q", ae.Message, ae.Line, ae.Field)
	}
	if st := e.status("a"); st.UncommittedDocuments != 0 {
		t.Fatalf("refused request left %d uncommitted operations", st.UncommittedDocuments)
	}
	if res := e.mustCommit("a"); res.Documents != 0 {
		t.Fatalf("refused request indexed %d documents", res.Documents)
	}
	if n := e.hits("a", "light"); n != 0 {
		t.Fatalf("refused request is searchable: %d hits", n)
	}

	// Blank lines are skipped but counted; CRLF is accepted.
	nd := "\n" + `{"id":"x1","body":"first"}` + "\r\n\n   \n" + `{"id":"x2","year":"bad"}` + "\n"
	_, err = e.c.AddNDJSON(e.ctx, "a", strings.NewReader(nd))
	if ae := wantAPIError(t, err, 400, client.CodeInvalidDocument); ae.Line != 5 {
		t.Fatalf("line %d, want 5: %s", ae.Line, ae.Message)
	}
	nd = "\n" + `{"id":"x1","body":"first"}` + "\r\n\n" + `{"id":"x2","year":1}` // no final newline
	if n, err := e.c.AddNDJSON(e.ctx, "a", strings.NewReader(nd)); err != nil || n != 2 {
		t.Fatalf("blank lines: %d %v", n, err)
	}
	if n, err := e.c.AddNDJSON(e.ctx, "a", strings.NewReader("")); err != nil || n != 0 {
		t.Fatalf("empty body: %d %v", n, err)
	}
}

// TestDocumentTooLarge refuses a line over MaxDocumentBytes with 413
// naming the line.
func TestDocumentTooLarge(t *testing.T) {
	e := newEnv(t, server.Limits{MaxDocumentBytes: 1000})
	e.create("big")
	small := `{"id":"s","body":"small"}`
	large := fmt.Sprintf(`{"id":"l","body":%q}`, strings.Repeat("x", 2000))
	_, err := e.c.AddNDJSON(e.ctx, "big", strings.NewReader(small+"\n"+large+"\n"))
	ae := wantAPIError(t, err, 413, client.CodePayloadTooLarge)
	if ae.Line != 2 || !strings.Contains(ae.Message, "line 2") {
		t.Fatalf("message %q line %d", ae.Message, ae.Line)
	}
	if st := e.status("big"); st.UncommittedDocuments != 0 {
		t.Fatalf("refused request left %d operations", st.UncommittedDocuments)
	}
}

// endlessNDJSON is a body that never ends: valid documents forever. It
// fails the test when more than limit bytes are read.
type endlessNDJSON struct {
	t     *testing.T
	limit int64
	read  atomic.Int64
	n     int
	buf   []byte
}

func (r *endlessNDJSON) Read(p []byte) (int, error) {
	if r.read.Load() > r.limit {
		r.t.Errorf("the server read %d bytes of an oversized body, more than %d", r.read.Load(), r.limit)
		return 0, errors.New("read too much")
	}
	if len(r.buf) == 0 {
		r.n++
		r.buf = fmt.Appendf(nil, `{"id":"d%d","body":"the light of the sun %d"}`+"\n", r.n, r.n)
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	r.read.Add(int64(n))
	return n, nil
}

// TestOversizedBodyNotRead checks that a body over MaxRequestBytes gets
// 413 without being read whole: in the handler, over a real connection
// with the client, and with a declared Content-Length (nothing read).
func TestOversizedBodyNotRead(t *testing.T) {
	const limit = 256 << 10
	e := newEnv(t, server.Limits{MaxRequestBytes: limit})
	e.create("o")

	// In the handler: at most the limit plus one read buffer.
	body := &endlessNDJSON{t: t, limit: limit + 128<<10}
	req := httptest.NewRequest(http.MethodPost, "/v1/indexes/o/documents", body)
	req.ContentLength = -1
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, req)
	if rec.Code != 413 || !strings.Contains(rec.Body.String(), `"code":"PayloadTooLarge"`) {
		t.Fatalf("handler: %d %s", rec.Code, rec.Body)
	}

	// A declared length over the limit: not one byte read.
	req = httptest.NewRequest(http.MethodPost, "/v1/indexes/o/documents", &endlessNDJSON{t: t, limit: 0})
	req.ContentLength = 1 << 40
	rec = httptest.NewRecorder()
	e.srv.ServeHTTP(rec, req)
	if rec.Code != 413 || rec.Header().Get("Connection") != "close" {
		t.Fatalf("declared length: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}

	// Over a connection, through the client: socket buffers absorb some
	// more, never the whole body.
	body = &endlessNDJSON{t: t, limit: limit + 64<<20}
	_, err := e.c.AddNDJSON(e.ctx, "o", io.LimitReader(body, 1<<30))
	if ae, ok := err.(*client.APIError); ok {
		if ae.StatusCode != 413 || ae.Code != client.CodePayloadTooLarge {
			t.Fatalf("client: %v", ae)
		}
	} else if err == nil {
		t.Fatalf("client: an oversized body was accepted")
	} // else: the connection was cut while sending, also a refusal
	if st := e.status("o"); st.UncommittedDocuments != 0 {
		t.Fatalf("oversized request left %d operations", st.UncommittedDocuments)
	}
	t.Logf("client sent %d bytes of an endless body before the refusal", body.read.Load())
}
