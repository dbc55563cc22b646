package bench

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// pipeDriver is a peer engine's driver process (Xapian's C++ driver,
// Lucene's Java driver) spoken to over a pipe, one request at a time.
// Every reply is "ok NS ..." with NS the time the driver measured for the
// operation, or "err MESSAGE".
type pipeDriver struct {
	name string
	argv []string
	cmd  *exec.Cmd
	in   *bufio.Writer
	out  *bufio.Reader
	last time.Duration
}

func (x *pipeDriver) start() error {
	if x.cmd != nil {
		return nil
	}
	cmd := exec.Command(x.argv[0], x.argv[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: start driver: %w", x.name, err)
	}
	x.cmd, x.in, x.out = cmd, bufio.NewWriterSize(in, 1<<20), bufio.NewReaderSize(out, 1<<16)
	return nil
}

// Shutdown ends the driver process.
func (x *pipeDriver) Shutdown() error {
	if x.cmd == nil {
		return nil
	}
	_, _ = x.call("quit\n", nil)
	err := x.cmd.Wait()
	x.cmd = nil
	return err
}

// Close implements Engine: the driver closes its index (Xapian's
// WritableDatabase, Lucene's IndexWriter and reader).
func (x *pipeDriver) Close(context.Context) error {
	if x.cmd == nil {
		return nil
	}
	_, err := x.call("close\n", nil)
	return err
}

// Commit implements Engine: the batch of tokenBatch, each document
// upserted by its id term (Xapian's replace_document, Lucene's
// updateDocument), then a commit (and, for Lucene, a reader reopen).
func (x *pipeDriver) Commit(_ context.Context, batch any) error {
	p := batch.([]byte)
	_, err := x.call("batch "+strconv.Itoa(len(p))+"\n", p)
	return err
}

// SearchTop implements Engine.
func (x *pipeDriver) SearchTop(_ context.Context, q Query) (int, []string, error) {
	return x.searchTop(xapianQueryLine(q))
}

// SearchMode implements ModeSearcher. For Xapian top10 is get_mset(0, 10)
// with its default check_at_least (an estimated count) and count is
// get_mset(0, 0, doccount) (exact, no ranking).
func (x *pipeDriver) SearchMode(_ context.Context, q Query, mode Mode) (int, error) {
	return x.searchMode(mode, xapianQueryLine(q))
}

// TokenHash is the FNV-1a 64 hash of the open index's token streams read
// back from it (see TokenStreamHash), in arrival order, and its live
// document count.
func (x *pipeDriver) TokenHash() (string, int, error) {
	f, err := x.call("hash\n", nil)
	if err != nil {
		return "", 0, err
	}
	if len(f) != 2 {
		return "", 0, fmt.Errorf("%s: bad hash reply %q", x.name, f)
	}
	n, err := strconv.Atoi(f[1])
	return f[0], n, err
}

// call sends a request (and payload) and returns the reply's fields after
// "ok NS", recording NS as the last operation's time.
func (x *pipeDriver) call(req string, payload []byte) ([]string, error) {
	if err := x.start(); err != nil {
		return nil, err
	}
	if _, err := x.in.WriteString(req); err != nil {
		return nil, fmt.Errorf("%s: write: %w", x.name, err)
	}
	if _, err := x.in.Write(payload); err != nil {
		return nil, fmt.Errorf("%s: write: %w", x.name, err)
	}
	if err := x.in.Flush(); err != nil {
		return nil, fmt.Errorf("%s: write: %w", x.name, err)
	}
	line, err := x.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("%s: driver died: %w", x.name, err)
	}
	line = strings.TrimSuffix(line, "\n")
	if rest, ok := strings.CutPrefix(line, "err "); ok {
		return nil, fmt.Errorf("%s: %s", x.name, rest)
	}
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "ok" {
		return nil, fmt.Errorf("%s: bad reply %q", x.name, line)
	}
	ns, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: bad reply %q", x.name, line)
	}
	x.last = time.Duration(ns)
	return f[2:], nil
}

// PID is the driver process's id (0 when it is not running).
func (x *pipeDriver) PID() int {
	if x.cmd == nil || x.cmd.Process == nil {
		return 0
	}
	return x.cmd.Process.Pid
}

// LastOpTime is the driver-measured time of the last operation.
func (x *pipeDriver) LastOpTime() time.Duration { return x.last }

// ExtraCPU is the driver process's CPU time so far.
func (x *pipeDriver) ExtraCPU() time.Duration {
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

// searchTop runs a "search KIND T..." request: TOTAL K and K id lines.
func (x *pipeDriver) searchTop(line string) (int, []string, error) {
	f, err := x.call("search "+line+"\n", nil)
	if err != nil {
		return 0, nil, err
	}
	if len(f) != 2 {
		return 0, nil, fmt.Errorf("%s: bad search reply %q", x.name, f)
	}
	total, err1 := strconv.Atoi(f[0])
	k, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || k < 0 || k > 10 {
		return 0, nil, fmt.Errorf("%s: bad search reply %q", x.name, f)
	}
	ids := make([]string, k)
	for i := range ids {
		l, err := x.out.ReadString('\n')
		if err != nil {
			return 0, nil, fmt.Errorf("%s: driver died: %w", x.name, err)
		}
		ids[i] = strings.TrimSuffix(l, "\n")
	}
	return total, ids, nil
}

// searchMode runs one "searchm MODE KIND T..." request: TOTAL.
func (x *pipeDriver) searchMode(mode Mode, line string) (int, error) {
	f, err := x.call("searchm "+string(mode)+" "+line+"\n", nil)
	if err != nil {
		return 0, err
	}
	if len(f) != 1 {
		return 0, fmt.Errorf("%s: bad searchm reply %q", x.name, f)
	}
	return strconv.Atoi(f[0])
}

// RunQPS runs total queries of qs from clients threads of the driver
// (Lucene's share one IndexSearcher, Xapian's each open a read-only
// Database), and returns the elapsed time the driver measured.
func (x *pipeDriver) RunQPS(qs []Query, total, clients int) (time.Duration, error) {
	var b strings.Builder
	for _, q := range qs {
		b.WriteString(xapianQueryLine(q) + "\n")
	}
	_, err := x.call(fmt.Sprintf("qps %d %d %d\n", clients, total, len(qs)), []byte(b.String()))
	return x.last, err
}

// ForceMerge implements Engine: Lucene's IndexWriter.forceMerge(1) and
// commit, Xapian's Database::compact into a new directory (fsynced) that
// replaces the old one; then a reopen.
func (x *pipeDriver) ForceMerge(context.Context) error {
	_, err := x.call("merge\n", nil)
	return err
}
