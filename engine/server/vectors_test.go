package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/ivf/ivftest"
	"github.com/summadev/summa/engine/optimizer"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/server"
	"github.com/summadev/summa/internal/corpus/corpustest"
)

const vectorSchema = `{"fields":[
 {"name":"id","type":"keyword","primary":true},
 {"name":"body","type":"text"},
 {"name":"emb","type":"dense_vector","dims":64,"binary":true}
]}`

// vectorDocs returns paragraphs from..to with vectors derived from their text.
func vectorDocs(t *testing.T, from, to int) []any {
	ps := corpustest.Paragraphs(t)
	var out []any
	for i := from; i < to; i++ {
		p := ps[i%len(ps)]
		out = append(out, map[string]any{"id": fmt.Sprintf("v%05d", i), "body": p, "emb": ivftest.TextVector(p, 64)})
	}
	return out
}

// vecRuns returns the runs and fragmentation of the emb field over the
// segments of a STATUS.
func vecRuns(st *client.IndexStatus) (runs, fragmented int) {
	for _, s := range st.Segments {
		for _, v := range s.Vectors {
			runs += v.Runs
			if v.Fragmented {
				fragmented++
			}
		}
	}
	return runs, fragmented
}

// TestM08_StatusAndMetricsShowRunsUntilMaintenanceCoalesces: after a
// merge, STATUS and /metrics show the concatenated runs and the
// fragmentation; background maintenance then coalesces them (no reorder
// field in the schema) and both show one run, no debt.
func TestM08_StatusAndMetricsShowRunsUntilMaintenanceCoalesces(t *testing.T) {
	dir := t.TempDir()
	e := openVectorEnv(t, dir, optimizer.Config{}) // no background maintenance
	if created, err := e.c.CreateIndex(e.ctx, "vec", json.RawMessage(vectorSchema)); err != nil || !created {
		t.Fatal(created, err)
	}
	for g := 0; g < 3; g++ {
		e.mustAdd("vec", vectorDocs(t, g*50, g*50+50)...)
		e.mustCommit("vec")
	}
	if runs, frag := vecRuns(e.status("vec")); runs != 3 || frag != 0 {
		t.Fatalf("three fresh segments: %d runs, %d fragmented", runs, frag)
	}
	if _, err := e.c.Merge(e.ctx, "vec", client.MergeDownTo(1)); err != nil {
		t.Fatal(err)
	}
	st := e.status("vec")
	if runs, frag := vecRuns(st); runs != 3 || frag != 1 || len(st.Segments) != 1 {
		t.Fatalf("after the merge: %d runs, %d fragmented, %d segments", runs, frag, len(st.Segments))
	}
	m, err := e.c.Metrics(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`summa_index_vector_runs{field="emb",index="vec"} 3`, `summa_index_vector_fragmented_segments{field="emb",index="vec"} 1`} {
		if !strings.Contains(m, want) {
			t.Fatalf("metrics lack %s", want)
		}
	}
	e.close()
	// Reopened with background maintenance: the persisted debt alone
	// schedules the coalescing (the schema has no reorder field).
	e = openVectorEnv(t, dir, optimizer.Config{Threads: 1, ScanInterval: 50 * time.Millisecond, CompletionCooldown: -1, Policy: optimizer.DefaultPolicy()})
	defer e.close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if runs, frag := vecRuns(e.status("vec")); runs == 1 && frag == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("maintenance did not coalesce: %+v", e.status("vec").Segments)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if m, _ = e.c.Metrics(e.ctx); !strings.Contains(m, `summa_index_vector_fragmented_segments{field="emb",index="vec"} 0`) {
		t.Fatal("metrics still show fragmentation")
	}
}

// openVectorEnv opens a registry on dir with the given optimizer.
func openVectorEnv(t *testing.T, dir string, opt optimizer.Config) *env {
	r, err := registry.Open(vfs.Default, dir, registry.Options{Logger: testLogger(t), Index: index.Options{IndexingWorkers: 1}, Optimizer: opt})
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(r, server.Options{Logger: testLogger(t)})
	ts := httptest.NewServer(srv)
	return &env{t: t, dir: dir, r: r, srv: srv, ts: ts, c: client.New(ts.URL, ts.Client()), ctx: context.Background()}
}

// close stops the server and closes the registry.
func (e *env) close() {
	e.ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.r.Close(ctx); err != nil {
		e.t.Errorf("close registry: %v", err)
	}
}
