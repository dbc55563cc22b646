package hostile

import (
	"fmt"
	"net/http"
	"strings"
)

// protocolClasses are malformed HTTP/1.1 framing on raw connections:
// request smuggling shapes, broken chunking and forbidden header bytes.
// Each must end refused (400, or a closed connection) and index nothing;
// a body the server admits anyway must be the one its framing names.
func protocolClasses() []class {
	const head = "POST /v1/indexes/base/documents HTTP/1.1\r\nHost: hostile\r\nAuthorization: Bearer %s\r\n" +
		"Content-Type: application/x-ndjson\r\n"
	refused := func(s int) bool { return s == 0 || s == http.StatusBadRequest }
	raw := func(name string, build func(e *env) string, ok func(int) bool) class {
		return class{name: name, run: func(e *env) error {
			return e.slowClient(slowSpec{head: build(e), ok: ok})
		}}
	}
	doc := func(e *env) string { return string(e.doc(`"title":"smuggled"`)) }
	return []class{
		// RFC 9112 lets a server refuse this or frame it by Transfer-Encoding
		// alone; sent to the scratch index, where either is harmless.
		raw("http: Content-Length and chunked together", func(e *env) string {
			d := `{"id":"smuggled"}` + "\n"
			return fmt.Sprintf(strings.Replace(head, baseIndex, scratchIndex, 1)+
				"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", e.tok[asWrite], len(d), d)
		}, func(s int) bool { return s == 0 || s == 200 || s == 400 }),
		raw("http: two different Content-Lengths", func(e *env) string {
			d := doc(e)
			return fmt.Sprintf(head+"Content-Length: %d\r\nContent-Length: 5\r\n\r\n%s", e.tok[asWrite], len(d), d)
		}, refused),
		raw("http: chunk size past 64 bits", func(e *env) string {
			return fmt.Sprintf(head+"Transfer-Encoding: chunked\r\n\r\nfffffffffffffffffffff\r\n%s\r\n0\r\n\r\n", e.tok[asWrite], doc(e))
		}, refused),
		raw("http: negative Content-Length", func(e *env) string {
			return fmt.Sprintf(head+"Content-Length: -5\r\n\r\n%s", e.tok[asWrite], doc(e))
		}, refused),
		raw("http: NUL byte in a header value", func(e *env) string {
			return fmt.Sprintf(head+"X-Evil: a\x00b\r\nContent-Length: 2\r\n\r\n{}", e.tok[asWrite])
		}, refused),
		// A folded header is refused or unfolded (RFC 9112): the write
		// token it carries may not drain either way.
		raw("http: obsolete line folding of a write token", func(e *env) string {
			return fmt.Sprintf("POST /v1/admin/drain HTTP/1.1\r\nHost: hostile\r\nAuthorization: Bearer\r\n %s\r\nContent-Length: 0\r\n\r\n",
				e.tok[asWrite])
		}, func(s int) bool { return s == 0 || s == 400 || s == 401 || s == 403 }),
		raw("http: space before the header colon", func(e *env) string {
			return fmt.Sprintf("POST /v1/admin/drain HTTP/1.1\r\nHost: hostile\r\nAuthorization : Bearer %s\r\nContent-Length: 0\r\n\r\n",
				e.tok[asAdmin])
		}, func(s int) bool { return s == 0 || s == 400 || s == 401 }),
		raw("http: bare LF line ends with a smuggled second request", func(e *env) string {
			return fmt.Sprintf("GET /healthz HTTP/1.1\nHost: hostile\nContent-Length: 0\n\nPOST /v1/admin/drain HTTP/1.1\nHost: hostile\n"+
				"Authorization: Bearer %s\nX: ", e.tok[asWrite])
		}, func(s int) bool { return s == 0 || s == 200 || s == 400 }),
		raw("http: 100-continue with a 10 GiB body", func(e *env) string {
			return fmt.Sprintf(head+"Expect: 100-continue\r\nContent-Length: 10737418240\r\n\r\n", e.tok[asWrite])
		}, func(s int) bool { return s == 0 || s == 413 || s == 417 }),
		raw("http: request target of 70 KiB", func(e *env) string {
			return "GET /v1/indexes/" + strings.Repeat("a", 70<<10) + " HTTP/1.1\r\nHost: hostile\r\n\r\n"
		}, func(s int) bool { return s == 0 || s == 400 || s == 414 || s == 431 }),
		raw("http: 2000 headers", func(e *env) string {
			return "GET /healthz HTTP/1.1\r\nHost: hostile\r\n" + strings.Repeat("X-A: b\r\n", 2000) + "\r\n"
		}, func(s int) bool { return s == 0 || s == 200 || s == 400 || s == 431 }),
	}
}
