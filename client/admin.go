package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Drain stops the server admitting writes and starts committing everything
// accepted; poll DrainStatus until Drained.
func (c *Client) Drain(ctx context.Context) (*DrainStatus, error) {
	return c.drainCall(ctx, http.MethodPost, "/v1/admin/drain")
}

// DrainStatus reports drain progress.
func (c *Client) DrainStatus(ctx context.Context) (*DrainStatus, error) {
	return c.drainCall(ctx, http.MethodGet, "/v1/admin/drain")
}

// Resume admits writes again.
func (c *Client) Resume(ctx context.Context) (*DrainStatus, error) {
	return c.drainCall(ctx, http.MethodPost, "/v1/admin/resume")
}

func (c *Client) drainCall(ctx context.Context, method, path string) (*DrainStatus, error) {
	var out DrainStatus
	if _, err := c.do(ctx, request{method: method, path: path, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Lifecycle returns the drain estimate and its inputs.
func (c *Client) Lifecycle(ctx context.Context) (*Lifecycle, error) {
	var out Lifecycle
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/admin/lifecycle", out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Healthz checks liveness; nil means 200.
func (c *Client) Healthz(ctx context.Context) error {
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/healthz"})
	return err
}

// Readyz checks readiness; nil means 200, an *APIError (503) means not
// ready (starting, draining or shutting down).
func (c *Client) Readyz(ctx context.Context) error {
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/readyz"})
	return err
}

// Metrics returns the Prometheus text exposition.
func (c *Client) Metrics(ctx context.Context) (string, error) {
	var raw []byte
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/metrics", out: &raw}); err != nil {
		return "", err
	}
	return string(raw), nil
}

// DoctorReport returns the whole report of the doctor run kept under id
// (summa-server --doctor --report-id id); an *APIError with CodeNotFound
// when the engine keeps none.
func (c *Client) DoctorReport(ctx context.Context, id string) (*DoctorReport, error) {
	var out DoctorReport
	path := "/v1/admin/doctor-reports/" + url.PathEscape(id)
	if _, err := c.do(ctx, request{method: http.MethodGet, path: path, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// StartBackup starts an online backup of an index's committed generation
// to the engine's object store; it answers at once (202) with the
// backup's ID and generation. Without an object store configured the
// error has CodeBackupNotConfigured.
func (c *Client) StartBackup(ctx context.Context, index string) (*Backup, error) {
	var out Backup
	if _, err := c.do(ctx, request{method: http.MethodPost, path: indexPath(index, "backups"), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetBackup returns a backup's progress or result; CodeBackupNotFound
// when the engine does not run it and the bucket has no manifest of it.
func (c *Client) GetBackup(ctx context.Context, index, id string) (*Backup, error) {
	var out Backup
	if _, err := c.do(ctx, request{method: http.MethodGet, path: indexPath(index, "backups", url.PathEscape(id)), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListBackups returns the completed backups of an index in the bucket,
// newest first.
func (c *Client) ListBackups(ctx context.Context, index string) ([]Backup, error) {
	var out BackupList
	if _, err := c.do(ctx, request{method: http.MethodGet, path: indexPath(index, "backups"), out: &out}); err != nil {
		return nil, err
	}
	return out.Backups, nil
}

// WaitBackup polls a backup every interval until it is no longer running
// and returns it; a failed backup is returned with its Error, not as an
// error.
func (c *Client) WaitBackup(ctx context.Context, index, id string, interval time.Duration) (*Backup, error) {
	for {
		b, err := c.GetBackup(ctx, index, id)
		if err != nil {
			return nil, err
		}
		if b.State != BackupRunning {
			return b, nil
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return b, ctx.Err()
		case <-t.C:
		}
	}
}
