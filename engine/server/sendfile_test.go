package server_test

import (
	"bytes"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/server"
)

// readFromSpy is a response writer with a ReadFrom, as net/http's own
// is on a plain TCP connection; it records what it is handed.
type readFromSpy struct {
	*httptest.ResponseRecorder
	froms []io.Reader
}

// ReadFrom records its source and copies it.
func (s *readFromSpy) ReadFrom(r io.Reader) (int64, error) {
	s.froms = append(s.froms, r)
	return io.Copy(struct{ io.Writer }{s.ResponseRecorder}, r)
}

// TestReplicationFileReachesSendfile: the leader's file route hands the
// held file to the connection's ReadFrom, through every middleware, as an
// *io.LimitedReader of a file with a descriptor (a syscall.Conn), which is
// what net/http passes to sendfile on a plain TCP connection; the bytes
// are the file's, over the real TCP server too.
func TestReplicationFileReachesSendfile(t *testing.T) {
	e := newEnvWith(t, server.Limits{}, index.Options{IndexingWorkers: 1})
	t.Cleanup(e.srv.StopHolds) // runs before the registry closes
	e.create("books")
	e.mustAdd("books", paragraphDocs(t, 300)...)
	e.mustCommit("books")
	var repl client.ReplicationState
	wireCall(t, e, "GET", "/v1/indexes/books/replication", nil, 200, &repl)
	f := repl.Files[0]
	for _, g := range repl.Files {
		if g.Size > f.Size {
			f = g
		}
	}
	want := heldFile(t, e.dir, f.Name)
	path := "/v1/indexes/books/replication/holds/" + repl.Hold + "/files/" + f.Name
	spy := &readFromSpy{ResponseRecorder: httptest.NewRecorder()}
	e.srv.ServeHTTP(spy, httptest.NewRequest("GET", path, nil))
	if spy.Code != 200 || !bytes.Equal(spy.Body.Bytes(), want) {
		t.Fatalf("file %s: status %d, %d bytes, want 200 and the file's %d", f.Name, spy.Code, spy.Body.Len(), len(want))
	}
	if len(spy.froms) == 0 {
		t.Fatal("the file was written with Write: the connection's ReadFrom (sendfile) is never reached")
	}
	for i, r := range spy.froms {
		lr, ok := r.(*io.LimitedReader)
		if !ok {
			t.Fatalf("ReadFrom %d got a %T, want an *io.LimitedReader", i, r)
		}
		if _, ok := lr.R.(syscall.Conn); !ok {
			t.Fatalf("ReadFrom %d reads a %T, which has no descriptor for sendfile", i, lr.R)
		}
	}
	status, _, body := rawCall(t, e, "GET", path)
	if status != 200 || !bytes.Equal(body, want) {
		t.Fatalf("over TCP: status %d, %d bytes, want 200 and the file's %d", status, len(body), len(want))
	}
}

// heldFile reads the one file called name under dir.
func heldFile(t *testing.T, dir, name string) []byte {
	t.Helper()
	var found []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == name {
			found = append(found, p)
		}
		return nil
	})
	if len(found) != 1 {
		t.Fatalf("files called %s under %s: %v", name, dir, found)
	}
	b, err := os.ReadFile(found[0])
	if err != nil {
		t.Fatal(err)
	}
	return b
}
