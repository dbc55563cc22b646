package server_test

import (
	"strings"
	"testing"

	"github.com/summadev/summa/engine/server"
)

// TestMetrics scrapes /metrics after some traffic and checks the per-index
// gauges (collected at scrape time), the counters and the drain gauge.
func TestMetrics(t *testing.T) {
	e := newEnv(t, server.Limits{})
	e.create("m")
	e.mustAdd("m", paragraphDocs(t, 30)...)
	e.mustCommit("m")
	e.mustAdd("m", map[string]any{"id": "u1"}, map[string]any{"id": "u2"})
	e.hits("m", "light")
	e.srv.Metrics().ObserveMaintenance("m", "merge", nil, 0)
	out, err := e.c.Metrics(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`summa_index_documents{index="m"} 30`,
		`summa_index_uncommitted_documents{index="m"} 2`,
		`summa_index_quarantined_segments{index="m"} 0`,
		`summa_index_durability_degraded{index="m"} 0`,
		`summa_index_segments{index="m"} `,
		`summa_documents_accepted_total{index="m"} 32`,
		`summa_commits_total{index="m",outcome="success"} 1`,
		`summa_commit_duration_seconds_count{index="m"} 1`,
		`summa_draining 0`,
		`summa_drained 0`,
		`summa_http_requests_total{code="200",route="POST /v1/indexes/{index}/search"} 1`,
		`summa_http_requests_total{code="201",route="PUT /v1/indexes/{index}"} 1`,
		`summa_maintenance_operations_total{index="m",kind="merge",outcome="success"} 1`,
		`go_goroutines `,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if _, err := e.c.Drain(e.ctx); err != nil {
		t.Fatal(err)
	}
	out, _ = e.c.Metrics(e.ctx)
	if !strings.Contains(out, "summa_draining 1") {
		t.Errorf("drain gauge not set")
	}
	if t.Failed() {
		t.Log(out)
	}
}
