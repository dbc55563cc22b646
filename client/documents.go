package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// AddDocuments sends documents as one NDJSON request, all or nothing. A
// document is any value that marshals to a JSON object; json.RawMessage
// and []byte are sent as they are (compacted onto one line). It returns
// the number accepted.
func (c *Client) AddDocuments(ctx context.Context, name string, docs ...any) (int, error) {
	var buf bytes.Buffer
	for i, d := range docs {
		var raw []byte
		switch v := d.(type) {
		case json.RawMessage:
			raw = v
		case []byte:
			raw = v
		default:
			var err error
			if raw, err = json.Marshal(d); err != nil {
				return 0, fmt.Errorf("summa: add documents: encode document %d: %w", i, err)
			}
		}
		if err := json.Compact(&buf, raw); err != nil {
			return 0, fmt.Errorf("summa: add documents: document %d is not JSON: %w", i, err)
		}
		buf.WriteByte('\n')
	}
	return c.AddNDJSON(ctx, name, &buf)
}

// AddNDJSON streams an NDJSON body (one JSON document per line), all or
// nothing, and returns the number accepted.
func (c *Client) AddNDJSON(ctx context.Context, name string, body io.Reader) (int, error) {
	var out AddDocumentsResult
	_, err := c.do(ctx, request{method: http.MethodPost, path: indexPath(name, "documents"),
		body: body, contentType: "application/x-ndjson", out: &out})
	return out.Accepted, err
}

// DeleteDocument deletes a document by primary key at the next commit; it
// reports whether such a document existed.
func (c *Client) DeleteDocument(ctx context.Context, name, primaryKey string) (bool, error) {
	var out DeleteDocumentResult
	_, err := c.do(ctx, request{method: http.MethodDelete,
		path: indexPath(name, "documents", url.PathEscape(primaryKey)), out: &out})
	return out.Deleted == 1, err
}

// Commit flushes and publishes one generation. A CommitFlushTimeout error
// is retryable: the commit goes on and a retried Commit joins it.
func (c *Client) Commit(ctx context.Context, name string) (*CommitResult, error) {
	var out CommitResult
	if _, err := c.do(ctx, request{method: http.MethodPost, path: indexPath(name, "commit"), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Search runs a query.
func (c *Client) Search(ctx context.Context, name string, req SearchRequest) (*SearchResult, error) {
	var out SearchResult
	if _, err := c.do(ctx, request{method: http.MethodPost, path: indexPath(name, "search"),
		jsonBody: req, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Merge force-merges an index; it returns when the result is published.
func (c *Client) Merge(ctx context.Context, name string, opts MergeOptions) (*MaintenanceResult, error) {
	return c.maintain(ctx, name, "merge", opts)
}

// Reorder runs a manual BP reorder; it returns when the result is published.
func (c *Client) Reorder(ctx context.Context, name string) (*MaintenanceResult, error) {
	return c.maintain(ctx, name, "reorder", struct{}{})
}

// Compact drops deleted rows; it returns when the result is published.
func (c *Client) Compact(ctx context.Context, name string) (*MaintenanceResult, error) {
	return c.maintain(ctx, name, "compact", struct{}{})
}

// maintain sends one maintenance request.
func (c *Client) maintain(ctx context.Context, name, op string, body any) (*MaintenanceResult, error) {
	var raw []byte
	if _, err := c.do(ctx, request{method: http.MethodPost, path: indexPath(name, op),
		jsonBody: body, out: &raw}); err != nil {
		return nil, err
	}
	out := &MaintenanceResult{Raw: raw}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, fmt.Errorf("summa: %s %s: decode answer: %w", op, name, err)
		}
	}
	return out, nil
}
