// Package client is a typed Go client of the summa-server HTTP API (the
// engine contract). Every method returns an *APIError for an error answer;
// use IsCode to branch on its code.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Client talks to one summa-server.
type Client struct {
	// base is the server's URL without a trailing slash.
	base string
	// hc sends the requests.
	hc *http.Client
}

// New returns a client of the server at baseURL ("http://host:port"). A
// nil hc means http.DefaultClient.
func New(baseURL string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), hc: hc}
}

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
		jsonBody: map[string]json.RawMessage{"schema": schema}})
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

// ListIndexes returns the STATUS of every index, sorted by name.
func (c *Client) ListIndexes(ctx context.Context) ([]IndexStatus, error) {
	var out struct {
		Indexes []IndexStatus `json:"indexes"`
	}
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
