package client

import (
	"context"
	"net/http"
	"net/url"
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
