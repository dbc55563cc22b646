package server

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// deadlineSpy is a response writer that counts write-deadline renewals
// and the ReadFrom calls it is handed.
type deadlineSpy struct {
	*httptest.ResponseRecorder
	deadlines int
	froms     []io.Reader
}

// SetWriteDeadline counts a renewal (http.ResponseController finds it).
func (d *deadlineSpy) SetWriteDeadline(time.Time) error { d.deadlines++; return nil }

// ReadFrom records its source and copies it.
func (d *deadlineSpy) ReadFrom(r io.Reader) (int64, error) {
	d.froms = append(d.froms, r)
	return io.Copy(writerOnly{d.ResponseRecorder}, r)
}

// plainWriter has no ReadFrom.
type plainWriter struct{ *httptest.ResponseRecorder }

// TestSendFileRenewsTheDeadlinePerChunk: a file is sent in sendChunk
// pieces, each under a renewed write deadline and through the writer's
// ReadFrom as an *io.LimitedReader (what net/http needs for sendfile);
// a file shorter than announced is an error.
func TestSendFileRenewsTheDeadlinePerChunk(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), (5*sendChunk/2)/16)
	spy := &deadlineSpy{ResponseRecorder: httptest.NewRecorder()}
	n, err := sendFile(spy, bytes.NewReader(data), int64(len(data)), time.Minute)
	if err != nil || n != int64(len(data)) {
		t.Fatalf("sendFile: %d bytes, %v", n, err)
	}
	if spy.deadlines != 3 || len(spy.froms) != 3 {
		t.Fatalf("%d deadlines and %d ReadFrom calls for 2.5 chunks, want 3 and 3", spy.deadlines, len(spy.froms))
	}
	for i, r := range spy.froms {
		if _, ok := r.(*io.LimitedReader); !ok {
			t.Fatalf("ReadFrom %d got a %T, want an *io.LimitedReader", i, r)
		}
	}
	if !bytes.Equal(spy.Body.Bytes(), data) {
		t.Fatal("the body differs from the file")
	}
	spy = &deadlineSpy{ResponseRecorder: httptest.NewRecorder()}
	if _, err := sendFile(spy, bytes.NewReader(data), int64(len(data)), 0); err != nil || spy.deadlines != 0 {
		t.Fatalf("without a timeout: %v, %d deadlines", err, spy.deadlines)
	}
	spy = &deadlineSpy{ResponseRecorder: httptest.NewRecorder()}
	n, err = sendFile(spy, bytes.NewReader(data[:100]), int64(len(data)), time.Minute)
	if !errors.Is(err, io.ErrUnexpectedEOF) || n != 100 {
		t.Fatalf("a short file: %d bytes, %v; want 100 and io.ErrUnexpectedEOF", n, err)
	}
}

// TestRecorderForwardsReadFrom: the middleware's recorder passes a
// ReadFrom on to the writer it wraps (so that net/http may use sendfile)
// and still records the status and the bytes; over a writer without
// ReadFrom it copies.
func TestRecorderForwardsReadFrom(t *testing.T) {
	data := bytes.Repeat([]byte("x"), 70000)
	spy := &deadlineSpy{ResponseRecorder: httptest.NewRecorder()}
	rec := &recorder{ResponseWriter: spy, writeTimeout: time.Minute}
	n, err := io.Copy(rec, io.LimitReader(bytes.NewReader(data), 50000))
	if err != nil || n != 50000 {
		t.Fatalf("copy: %d, %v", n, err)
	}
	if len(spy.froms) != 1 || rec.bytes != 50000 || rec.status != http.StatusOK || spy.deadlines != 1 {
		t.Fatalf("ReadFrom calls %d, bytes %d, status %d, deadlines %d; want 1, 50000, 200, 1",
			len(spy.froms), rec.bytes, rec.status, spy.deadlines)
	}
	plain := plainWriter{httptest.NewRecorder()}
	rec = &recorder{ResponseWriter: plain}
	if n, err := rec.ReadFrom(bytes.NewReader(data)); err != nil || n != int64(len(data)) || rec.bytes != n {
		t.Fatalf("over a writer without ReadFrom: %d, %v, recorded %d", n, err, rec.bytes)
	}
	if !bytes.Equal(plain.Body.Bytes(), data) {
		t.Fatal("the body differs")
	}
}
