// Package client is a typed Go client of the summa-server HTTP API (the
// engine contract). Every method returns an *APIError for an error answer;
// use IsCode to branch on its code.
//
// Its types are the one definition of the API's JSON: the server encodes
// its answers with them (engine/server translates the engine's plain
// structs), and a test decodes every route's answer into them with
// unknown members refused. The package imports nothing of the engine.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client talks to one summa-server.
type Client struct {
	// base is the server's URL without a trailing slash.
	base string
	// hc sends the requests.
	hc *http.Client
	// token is sent as "Authorization: Bearer <token>" when not empty.
	token string
}

// New returns a client of the server at baseURL ("http://host:port" or
// "https://host:port"). A nil hc means http.DefaultClient. For a server
// with access control, see NewWithOptions or WithToken.
func New(baseURL string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), hc: hc}
}

// Options configure NewWithOptions.
type Options struct {
	// HTTPClient sends the requests. When nil, a client is built from
	// CACert, ServerName and Timeout (http.DefaultTransport's settings
	// otherwise).
	HTTPClient *http.Client
	// Token is the bearer token of every request (admin, write or read
	// scope; see the engine contract's access control).
	Token string
	// CACert is PEM: the certificate authorities that verify the server's
	// certificate over HTTPS. Empty means the system roots.
	CACert []byte
	// ServerName is the name verified in the server's certificate when it
	// differs from the URL's host (a pod reached by IP whose certificate
	// names its Service).
	ServerName string
	// Timeout bounds each request (0: none beyond the context).
	Timeout time.Duration
}

// NewWithOptions returns a client of the server at baseURL with a bearer
// token and, for HTTPS, the CA that verifies the server.
func NewWithOptions(baseURL string, opts Options) (*Client, error) {
	hc := opts.HTTPClient
	if hc == nil {
		var err error
		if hc, err = NewHTTPClient(opts.CACert, opts.ServerName, opts.Timeout); err != nil {
			return nil, err
		}
	}
	c := New(baseURL, hc)
	c.token = opts.Token
	return c, nil
}

// BaseURL is the server's URL ("https://host:port").
func (c *Client) BaseURL() string { return c.base }

// HTTPClient is the HTTP client that sends c's requests.
func (c *Client) HTTPClient() *http.Client { return c.hc }

// WithToken returns a copy of c that sends token as its bearer token.
func (c *Client) WithToken(token string) *Client {
	cp := *c
	cp.token = token
	return &cp
}

// NewHTTPClient returns an HTTP client whose TLS verifies servers against
// the PEM certificates caPEM (the system roots when empty) and, when
// serverName is not empty, verifies that name instead of the URL's host.
// TLS 1.2 is the minimum.
func NewHTTPClient(caPEM []byte, serverName string, timeout time.Duration) (*http.Client, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if len(caPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, errors.New("summa: the CA bundle holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	tr.IdleConnTimeout = IdleConnTimeout
	return &http.Client{Transport: tr, Timeout: timeout}, nil
}

// IdleConnTimeout is how long a client of NewHTTPClient keeps an idle
// connection for reuse: shorter than the engine's default --idle-timeout
// (1 minute), so that the client drops a kept-alive connection before the
// server closes it. Otherwise a request sent as the server closes fails
// with EOF, and Go retries only idempotent ones: a POST (documents, commit,
// drain) would fail although the engine is up.
const IdleConnTimeout = 30 * time.Second

// indexPath returns /v1/indexes/{name}[/suffix] with the name escaped.
func indexPath(name string, suffix ...string) string {
	p := "/v1/indexes/" + url.PathEscape(name)
	for _, s := range suffix {
		p += "/" + s
	}
	return p
}

// request is one call.
type request struct {
	method, path string
	// body is sent as is; jsonBody is marshalled when body is nil.
	body     io.Reader
	jsonBody any
	// contentType of body.
	contentType string
	// out receives the decoded answer when non-nil.
	out any
}

// do sends req and decodes a 2xx answer into req.out; it returns the
// status, or an *APIError for any other answer.
func (c *Client) do(ctx context.Context, req request) (int, error) {
	body := req.body
	ctype := req.contentType
	if body == nil && req.jsonBody != nil {
		data, err := json.Marshal(req.jsonBody)
		if err != nil {
			return 0, fmt.Errorf("summa: %s %s: encode body: %w", req.method, req.path, err)
		}
		body, ctype = bytes.NewReader(data), "application/json"
	}
	hreq, err := http.NewRequestWithContext(ctx, req.method, c.base+req.path, body)
	if err != nil {
		return 0, fmt.Errorf("summa: %s %s: %w", req.method, req.path, err)
	}
	if ctype != "" {
		hreq.Header.Set("Content-Type", ctype)
	}
	hreq.Header.Set("Accept", "application/json")
	if c.token != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(hreq)
	if err != nil {
		return 0, fmt.Errorf("summa: %s %s: %w", req.method, req.path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, readAPIError(resp)
	}
	if req.out != nil {
		if raw, ok := req.out.(*[]byte); ok {
			if *raw, err = io.ReadAll(resp.Body); err != nil {
				return resp.StatusCode, fmt.Errorf("summa: %s %s: read answer: %w", req.method, req.path, err)
			}
			return resp.StatusCode, nil
		}
		if err := json.NewDecoder(resp.Body).Decode(req.out); err != nil {
			return resp.StatusCode, fmt.Errorf("summa: %s %s: decode answer: %w", req.method, req.path, err)
		}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // reuse the connection
	return resp.StatusCode, nil
}

// CreateIndex creates an index with a schema ({"fields":[...]}). created
// is false when it existed with the same schema; another schema is an
// IndexExists error.
func (c *Client) CreateIndex(ctx context.Context, name string, schema json.RawMessage) (created bool, err error) {
	status, err := c.do(ctx, request{method: http.MethodPut, path: indexPath(name),
		jsonBody: CreateIndexRequest{Schema: schema}})
	return status == http.StatusCreated, err
}

// GetIndex returns an index's STATUS.
func (c *Client) GetIndex(ctx context.Context, name string) (*IndexStatus, error) {
	var st IndexStatus
	if _, err := c.do(ctx, request{method: http.MethodGet, path: indexPath(name), out: &st}); err != nil {
		return nil, err
	}
	return &st, nil
}

// WaitIndex long-polls an index's STATUS: the server answers once the
// index's generation is no longer generation or its number of quarantined
// segments is no longer quarantined, its deletion starts, the server shuts
// down, or wait (at most 30 s) ran out; the STATUS answered is the one of
// that moment. A negative generation or quarantined is not waited on.
func (c *Client) WaitIndex(ctx context.Context, name string, generation, quarantined int64, wait time.Duration) (*IndexStatus, error) {
	q := url.Values{"wait": {strconv.FormatFloat(wait.Seconds(), 'f', -1, 64)}}
	if generation >= 0 {
		q.Set("waitGeneration", strconv.FormatInt(generation, 10))
	}
	if quarantined >= 0 {
		q.Set("waitQuarantined", strconv.FormatInt(quarantined, 10))
	}
	var st IndexStatus
	if _, err := c.do(ctx, request{method: http.MethodGet, path: indexPath(name) + "?" + q.Encode(), out: &st}); err != nil {
		return nil, err
	}
	return &st, nil
}

// ListIndexes returns the STATUS of every index, sorted by name.
func (c *Client) ListIndexes(ctx context.Context) ([]IndexStatus, error) {
	var out IndexList
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/indexes", out: &out}); err != nil {
		return nil, err
	}
	return out.Indexes, nil
}

// DeleteIndex starts an index's deletion; it goes on after the call.
func (c *Client) DeleteIndex(ctx context.Context, name string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: indexPath(name)})
	return err
}
