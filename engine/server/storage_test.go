package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/diskspace"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/server"
)

// TestStorageFullAnswer: every error of a full volume, however deep in a
// wrapped chain (the generation failure of a flush, a held publication,
// a registry refusal), answers 507 StorageFull, retryable; other I/O
// errors keep their answers.
func TestStorageFullAnswer(t *testing.T) {
	enospc := &fs.PathError{Op: "write", Path: "seg_7.cmp", Err: syscall.ENOSPC}
	edquot := &fs.PathError{Op: "sync", Path: "metadata.json.tmp", Err: syscall.EDQUOT}
	for _, err := range []error{
		fmt.Errorf("%w: %w", index.ErrGenerationFailed, fmt.Errorf("index: write segment 7: %w", enospc)),
		fmt.Errorf("%w: %w", index.ErrPublication, errors.Join(errors.New("metadata: before rename"), edquot)),
		fmt.Errorf("%w: held (%w)", index.ErrBackpressure, enospc),
		fmt.Errorf("registry: write refused: %w", diskspace.ErrFull),
	} {
		status, code, retryable := server.Answer(err)
		if status != http.StatusInsufficientStorage || code != client.CodeStorageFull || !retryable {
			t.Errorf("%v: answered %d %s retryable=%v, want 507 StorageFull retryable", err, status, code, retryable)
		}
	}
	eio := fmt.Errorf("%w: %w", index.ErrGenerationFailed, &fs.PathError{Op: "write", Err: syscall.EIO})
	if status, code, _ := server.Answer(eio); status != http.StatusInternalServerError || code != client.CodeGenerationFailed {
		t.Errorf("EIO: answered %d %s, want 500 GenerationFailed", status, code)
	}
	if got := server.Outcome(fmt.Errorf("%w: %w", index.ErrGenerationFailed, enospc)); got != server.OutcomeStorageFull {
		t.Errorf("outcome of a commit that met ENOSPC: %q", got)
	}
}

// TestStorageReserveRefusesWrites: a reserve larger than the volume's
// free space refuses ingestion, deletions, commits and explicit
// maintenance with 507 StorageFull (Retry-After set), changes nothing,
// and shows in STATUS and /metrics; search keeps working.
func TestStorageReserveRefusesWrites(t *testing.T) {
	dir := t.TempDir()
	free, err := diskspace.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Open with no reserve, write, then reopen with an impossible one.
	r, err := registry.Open(vfs.Default, dir, registry.Options{Index: index.Options{IndexingWorkers: 1}})
	if err != nil {
		t.Fatal(err)
	}
	e := serve(t, r)
	e.create("full")
	e.mustAdd("full", paragraphDocs(t, 20)...)
	e.mustCommit("full")
	if st := e.status("full").Storage; st == nil || st.Full || st.FreeBytes <= 0 || st.UsedBytes <= 0 {
		t.Fatalf("storage with no reserve: %+v", st)
	}
	e.close(r)

	r, err = registry.Open(vfs.Default, dir, registry.Options{Index: index.Options{IndexingWorkers: 1},
		MinFreeBytes: free.TotalBytes + 1})
	if err != nil {
		t.Fatal(err)
	}
	e = serve(t, r)
	before := e.status("full")
	_, err = e.c.AddDocuments(e.ctx, "full", paragraphDocs(t, 1)...)
	wantStorageFull(t, "ingest", err)
	_, err = e.c.DeleteDocument(e.ctx, "full", "p0001")
	wantStorageFull(t, "delete", err)
	_, err = e.c.Commit(e.ctx, "full")
	wantStorageFull(t, "commit", err)
	_, err = e.c.Merge(e.ctx, "full", client.MergeOptions{})
	wantStorageFull(t, "merge", err)
	after := e.status("full")
	if after.Storage == nil || !after.Storage.Full || after.Generation != before.Generation || after.UncommittedDocuments != 0 {
		t.Fatalf("after the refusals: %+v", after)
	}
	if n := e.hits("full", "opticks"); n == 0 {
		t.Fatal("search while full found nothing")
	}
	resp, err := e.ts.Client().Get(e.ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"\nsumma_storage_full 1\n", "\nsumma_storage_free_bytes ", "\nsumma_storage_used_bytes ",
		fmt.Sprintf("\nsumma_storage_reserve_bytes %g\n", float64(free.TotalBytes+1))} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", strings.TrimSpace(want))
		}
	}
	e.close(r)
}

// storageEnv is a served registry.
type storageEnv struct {
	*env
}

// serve serves r like newEnv does.
func serve(t *testing.T, r *registry.Registry) storageEnv {
	srv := server.New(r, server.Options{Logger: testLogger(t)})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return storageEnv{&env{t: t, r: r, srv: srv, ts: ts, c: client.New(ts.URL, ts.Client()), ctx: context.Background()}}
}

// close closes the registry.
func (e storageEnv) close(r *registry.Registry) {
	e.ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Close(ctx); err != nil {
		e.t.Fatal(err)
	}
}

// wantStorageFull requires a 507 StorageFull with Retry-After.
func wantStorageFull(t *testing.T, what string, err error) {
	t.Helper()
	ae := wantAPIError(t, err, http.StatusInsufficientStorage, client.CodeStorageFull)
	if !ae.Retryable || ae.RetryAfter <= 0 {
		t.Fatalf("%s: 507 without retryable and Retry-After: %+v", what, ae)
	}
}
