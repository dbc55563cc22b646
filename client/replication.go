package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// ReplicationState long-polls the committed generation of an index: the
// server answers once it is above after, or when wait ran out (then with
// no hold); after < 0 asks for the committed generation at once, whatever
// it is. A newer generation comes with a hold on its files, to be
// downloaded with DownloadReplicationFile and released with ReleaseHold.
// uid, when not empty, is the UID of the caller's copy: the server answers
// at once, with a hold, when its index has another one.
func (c *Client) ReplicationState(ctx context.Context, name string, after int64, uid string, wait time.Duration) (*ReplicationState, error) {
	q := url.Values{"wait": {strconv.FormatFloat(wait.Seconds(), 'f', -1, 64)}}
	if after >= 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	if uid != "" {
		q.Set("uid", uid)
	}
	var out ReplicationState
	if _, err := c.do(ctx, request{method: http.MethodGet, path: indexPath(name, "replication") + "?" + q.Encode(), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// DownloadReplicationFile copies file of hold into w and returns the bytes
// copied; a body shorter than its Content-Length is an error.
func (c *Client) DownloadReplicationFile(ctx context.Context, name, hold, file string, w io.Writer) (int64, error) {
	path := indexPath(name, "replication", "holds", url.PathEscape(hold), "files", url.PathEscape(file))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return 0, fmt.Errorf("summa: GET %s: %w", path, err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("summa: GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, readAPIError(resp)
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("summa: GET %s: read: %w", path, err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return n, fmt.Errorf("summa: GET %s: %d bytes of %d", path, n, resp.ContentLength)
	}
	return n, nil
}

// ReleaseHold ends a replication hold before its time to live.
func (c *Client) ReleaseHold(ctx context.Context, name, hold string) error {
	path := indexPath(name, "replication", "holds", url.PathEscape(hold))
	_, err := c.do(ctx, request{method: http.MethodDelete, path: path})
	return err
}
