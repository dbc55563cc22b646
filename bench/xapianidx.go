package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/summadev/summa/engine/analysis"
)

// Xapian drives Xapian 1.4 (glass backend) through the C++ driver of
// bench/xapian/driver.cc, a child process spoken to over a pipe. The
// driver times every operation itself, so the pipe round trip is not
// counted (see LastOpTime).
type Xapian struct {
	bin  string
	cmd  *exec.Cmd
	in   *bufio.Writer
	out  *bufio.Reader
	dir  string
	last time.Duration
}

// NewXapian returns the Xapian engine run by the driver binary bin (see
// BuildXapianDriver).
func NewXapian(bin string) *Xapian { return &Xapian{bin: bin} }

// Name implements Engine.
func (x *Xapian) Name() string { return "xapian" }

func (x *Xapian) start() error {
	if x.cmd != nil {
		return nil
	}
	cmd := exec.Command(x.bin)
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("xapian: start driver: %w", err)
	}
	x.cmd, x.in, x.out = cmd, bufio.NewWriterSize(in, 1<<20), bufio.NewReaderSize(out, 1<<16)
	return nil
}

// Shutdown ends the driver process.
func (x *Xapian) Shutdown() error {
	if x.cmd == nil {
		return nil
	}
	_, _ = x.call("quit\n", nil)
	err := x.cmd.Wait()
	x.cmd = nil
	return err
}

// call sends a request (and payload) and returns the reply's fields after
// "ok NS", recording NS as the last operation's time.
func (x *Xapian) call(req string, payload []byte) ([]string, error) {
	if err := x.start(); err != nil {
		return nil, err
	}
	if _, err := x.in.WriteString(req); err != nil {
		return nil, fmt.Errorf("xapian: write: %w", err)
	}
	if _, err := x.in.Write(payload); err != nil {
		return nil, fmt.Errorf("xapian: write: %w", err)
	}
	if err := x.in.Flush(); err != nil {
		return nil, fmt.Errorf("xapian: write: %w", err)
	}
	line, err := x.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("xapian: driver died: %w", err)
	}
	line = strings.TrimSuffix(line, "\n")
	if rest, ok := strings.CutPrefix(line, "err "); ok {
		return nil, fmt.Errorf("xapian: %s", rest)
	}
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "ok" {
		return nil, fmt.Errorf("xapian: bad reply %q", line)
	}
	ns, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("xapian: bad reply %q", line)
	}
	x.last = time.Duration(ns)
	return f[2:], nil
}

// PID is the driver process's id (0 when it is not running).
func (x *Xapian) PID() int {
	if x.cmd == nil || x.cmd.Process == nil {
		return 0
	}
	return x.cmd.Process.Pid
}

// LastOpTime is the driver-measured time of the last operation.
func (x *Xapian) LastOpTime() time.Duration { return x.last }

// ExtraCPU is the driver process's CPU time so far.
func (x *Xapian) ExtraCPU() time.Duration {
	if x.cmd == nil {
		return 0
	}
	f, err := x.call("cpu\n", nil)
	if err != nil || len(f) != 1 {
		return 0
	}
	ns, _ := strconv.ParseInt(f[0], 10, 64)
	return time.Duration(ns)
}

// Create implements Engine.
func (x *Xapian) Create(dir string) error {
	x.dir = dir
	_, err := x.call("create "+dir+"\n", nil)
	return err
}

// Open implements Engine.
func (x *Xapian) Open(dir string) error {
	x.dir = dir
	_, err := x.call("open "+dir+"\n", nil)
	return err
}

// Close implements Engine.
func (x *Xapian) Close(context.Context) error {
	if x.cmd == nil {
		return nil
	}
	_, err := x.call("close\n", nil)
	return err
}

// XapianTermPositions calls fn with every term of d and its Xapian
// position: the title's tokens at their analysis positions + 1, the
// body's after them with a gap, so that no phrase spans the two fields
// (ours and Bleve match a phrase within one field).
func XapianTermPositions(d *Doc, fn func(term string, pos uint32)) {
	var last uint32
	analysis.Tokenize(d.Title, func(t string, p uint32) {
		fn(t, p+1)
		last = p + 1
	})
	base := last + 2
	analysis.Tokenize(d.Body, func(t string, p uint32) { fn(t, base+p) })
}

// Prepare implements Engine: it tokenizes the documents with our analysis
// into the driver's batch payload (the counterpart of our JSON parsing).
func (x *Xapian) Prepare(docs []Doc, _ [][]byte) (any, error) {
	var b []byte
	var toks []byte
	for i := range docs {
		d := &docs[i]
		if strings.ContainsRune(d.ID, '\n') {
			return nil, fmt.Errorf("xapian: document id %q has a newline", d.ID)
		}
		toks = toks[:0]
		n := 0
		XapianTermPositions(d, func(t string, p uint32) {
			toks = strconv.AppendUint(toks, uint64(p), 10)
			toks = append(toks, ' ')
			toks = append(toks, t...)
			toks = append(toks, '\n')
			n++
		})
		b = fmt.Appendf(b, "D %d %d %d\n", len(d.ID), len(d.Title), n)
		b = append(b, d.ID...)
		b = append(b, d.Title...)
		b = append(b, toks...)
	}
	return b, nil
}

// Commit implements Engine: replace_document of each document (an upsert
// by the id term) and a commit.
func (x *Xapian) Commit(_ context.Context, batch any) error {
	p := batch.([]byte)
	_, err := x.call("batch "+strconv.Itoa(len(p))+"\n", p)
	return err
}

func xapianQueryLine(q Query) string {
	return string(q.Kind) + " " + strings.Join(q.Terms, " ")
}

// Search implements Engine.
func (x *Xapian) Search(ctx context.Context, q Query) (int, error) {
	n, _, err := x.SearchTop(ctx, q)
	return n, err
}

// SearchTop implements Engine.
func (x *Xapian) SearchTop(_ context.Context, q Query) (int, []string, error) {
	f, err := x.call("search "+xapianQueryLine(q)+"\n", nil)
	if err != nil {
		return 0, nil, err
	}
	if len(f) != 2 {
		return 0, nil, fmt.Errorf("xapian: bad search reply %q", f)
	}
	total, err1 := strconv.Atoi(f[0])
	k, err2 := strconv.Atoi(f[1])
	if err := errors.Join(err1, err2); err != nil || k < 0 || k > 10 {
		return 0, nil, fmt.Errorf("xapian: bad search reply %q", f)
	}
	ids := make([]string, k)
	for i := range ids {
		l, err := x.out.ReadString('\n')
		if err != nil {
			return 0, nil, fmt.Errorf("xapian: driver died: %w", err)
		}
		ids[i] = strings.TrimSuffix(l, "\n")
	}
	return total, ids, nil
}

// RunQPS runs total queries of qs from clients threads of the driver, each
// with its own read-only Database, and returns the elapsed time.
func (x *Xapian) RunQPS(qs []Query, total, clients int) (time.Duration, error) {
	var b strings.Builder
	for _, q := range qs {
		b.WriteString(xapianQueryLine(q) + "\n")
	}
	_, err := x.call(fmt.Sprintf("qps %d %d %d\n", clients, total, len(qs)), []byte(b.String()))
	return x.last, err
}

// ForceMerge implements Engine: Database::compact into a new directory
// (fsynced), which replaces the old one, and a reopen.
func (x *Xapian) ForceMerge(context.Context) error {
	_, err := x.call("merge\n", nil)
	return err
}

// Segments implements Engine: a glass database is one set of B-trees.
func (x *Xapian) Segments() int { return 1 }

// TokenHash is the FNV-1a 64 hash of the open database's token streams
// (see TokenStreamHash) and its document count.
func (x *Xapian) TokenHash() (string, int, error) {
	f, err := x.call("hash\n", nil)
	if err != nil {
		return "", 0, err
	}
	if len(f) != 2 {
		return "", 0, fmt.Errorf("xapian: bad hash reply %q", f)
	}
	n, err := strconv.Atoi(f[1])
	return f[0], n, err
}

// TokenStreamHash is what the driver's hash computes, from our analysis:
// for each document in order, its id, a 0x01 byte, then each token (in
// position order) as term, 0x00, decimal position, newline.
func TokenStreamHash(docs []Doc) string {
	h := fnv.New64a()
	var buf []byte
	for i := range docs {
		io.WriteString(h, docs[i].ID)
		h.Write([]byte{1})
		XapianTermPositions(&docs[i], func(t string, p uint32) {
			buf = append(buf[:0], t...)
			buf = append(buf, 0)
			buf = strconv.AppendUint(buf, uint64(p), 10)
			buf = append(buf, '\n')
			h.Write(buf)
		})
	}
	return fmt.Sprintf("%016x", h.Sum64())
}
