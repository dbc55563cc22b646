package connlimit

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// deadline bounds every wait of these tests (generous: the machine may be
// loaded).
const deadline = 30 * time.Second

// acceptAll accepts from l into a channel until Accept fails.
func acceptAll(l net.Listener) (<-chan net.Conn, <-chan error) {
	conns, errc := make(chan net.Conn, 16), make(chan error, 1)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				errc <- err
				return
			}
			conns <- c
		}
	}()
	return conns, errc
}

// next waits for the next accepted connection.
func next(t *testing.T, conns <-chan net.Conn) net.Conn {
	t.Helper()
	select {
	case c := <-conns:
		return c
	case <-time.After(deadline):
		t.Fatal("no connection accepted")
		return nil
	}
}

// dial connects to l.
func dial(t *testing.T, l net.Listener) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestAtMostNOpen: with two places, two connections are accepted and
// hold both; closing one (twice) frees exactly one place, which the
// waiting third connection takes; closing the listener ends Accept.
func TestAtMostNOpen(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Listen(tcp, 2).(*listener)
	conns, errc := acceptAll(l)
	for range 3 {
		dial(t, l)
	}
	a, b := next(t, conns), next(t, conns)
	if len(l.sem) != 2 {
		t.Fatalf("%d places taken by two connections", len(l.sem))
	}
	_ = a.Close()
	_ = a.Close()
	c := next(t, conns)
	if len(l.sem) != 2 {
		t.Fatalf("%d places taken after one of two closed twice and a third accepted, want 2", len(l.sem))
	}
	_ = b.Close()
	_ = c.Close()
	if len(l.sem) > 1 { // the accepting goroutine may hold one, waiting
		t.Fatalf("%d places taken with every connection closed, want at most 1", len(l.sem))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-errc:
	case <-time.After(deadline):
		t.Fatal("Accept did not end with the listener closed")
	}
}

// TestCloseWakesAWaitingAccept: an Accept waiting for a place returns an
// error once the listener is closed.
func TestCloseWakesAWaitingAccept(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Listen(tcp, 1)
	conns, errc := acceptAll(l)
	dial(t, l)
	defer next(t, conns).Close() // holds the only place
	_ = l.Close()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("Accept after Close returned no error")
		}
	case <-time.After(deadline):
		t.Fatal("a waiting Accept did not end with the listener closed")
	}
}

// spyConn is a connection whose ReadFrom records its calls.
type spyConn struct {
	net.Conn
	froms int
}

// ReadFrom records the call and copies.
func (s *spyConn) ReadFrom(r io.Reader) (int64, error) {
	s.froms++
	return io.Copy(s.Conn, r)
}

// TestReadFromIsTheWrappedConnections: a limited connection hands
// ReadFrom to the connection it wraps (net.TCPConn's is sendfile), and a
// file sent through it over TCP arrives whole.
func TestReadFromIsTheWrappedConnections(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Listen(tcp, 4)
	defer l.Close()
	conns, _ := acceptAll(l)
	client := dial(t, l)
	server := next(t, conns)
	defer server.Close()
	spy := &spyConn{Conn: server.(*conn).Conn}
	server.(*conn).Conn = spy
	data := bytes.Repeat([]byte("summa "), 200000)
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := make(chan []byte)
	go func() { b, _ := io.ReadAll(client); got <- b }()
	rf, ok := server.(io.ReaderFrom)
	if !ok {
		t.Fatal("a limited connection has no ReadFrom")
	}
	if n, err := rf.ReadFrom(io.LimitReader(f, int64(len(data)))); err != nil || n != int64(len(data)) {
		t.Fatalf("ReadFrom: %d, %v", n, err)
	}
	_ = server.Close()
	if spy.froms != 1 {
		t.Fatalf("the wrapped connection's ReadFrom was called %d times, want 1", spy.froms)
	}
	select {
	case b := <-got:
		if !bytes.Equal(b, data) {
			t.Fatalf("received %d bytes, want the file's %d", len(b), len(data))
		}
	case <-time.After(deadline):
		t.Fatal("the client got nothing")
	}
}
