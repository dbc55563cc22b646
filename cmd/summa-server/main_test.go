package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/internal/corpus"
	"github.com/summadev/summa/internal/corpus/corpustest"
)

// binary is the summa-server built by TestMain.
var binary string

func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "summa-server-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(tmp, "summa-server")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build summa-server:", err)
		os.RemoveAll(tmp)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}

// proc is a running summa-server.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	addr   string
	stderr *logBuffer
	done   chan error
	c      *client.Client
}

// logBuffer collects a process's log lines for failure messages.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(line + "\n")
}

// String returns the lines so far.
func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start runs summa-server on a loopback port picked by the kernel and
// waits for its "Serving" log line.
func start(t *testing.T, dataDir string, extra ...string) *proc {
	t.Helper()
	args := append([]string{"--data-dir", dataDir, "--listen", "127.0.0.1:0"}, extra...)
	cmd := exec.Command(binary, args...)
	pr, pw := io.Pipe()
	p := &proc{t: t, cmd: cmd, stderr: &logBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			p.stderr.add(line)
			var m struct {
				Msg     string `json:"msg"`
				Address string `json:"address"`
			}
			if !sent && json.Unmarshal([]byte(line), &m) == nil && m.Msg == "Serving" {
				addr <- m.Address
				sent = true
			}
		}
	}()
	go func() { err := cmd.Wait(); pw.Close(); p.done <- err }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	select {
	case p.addr = <-addr:
	case err := <-p.done:
		t.Fatalf("summa-server exited before serving: %v\n%s", err, p.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("summa-server did not start:\n%s", p.stderr)
	}
	p.c = client.New("http://"+p.addr, nil)
	return p
}

// stop sends SIGTERM and returns the exit code.
func (p *proc) stop() int {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		p.t.Fatalf("summa-server did not stop after SIGTERM:\n%s", p.stderr)
	}
	return p.cmd.ProcessState.ExitCode()
}

// runCmd runs summa-server to completion.
func runCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// tree lists every file under dir with its size, mode and mtime. A running
// server changes two things on its own, at any moment: its writer refills
// the spare.<N> files in the background (engine/index/spares.go), which
// also moves the index directory's mtime. Those are left out (directories
// are listed without their mtime), so that tree shows only what another
// process did; a file created, removed or rewritten still shows.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), "spare.") {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			fmt.Fprintf(&b, "%s %v\n", path, info.Mode())
			return nil
		}
		fmt.Fprintf(&b, "%s %v %d %d\n", path, info.Mode(), info.Size(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

const testSchema = `{"fields":[{"name":"id","type":"keyword","primary":true},{"name":"title","type":"text"},{"name":"body","type":"text"}]}`

// opticks returns n documents of Opticks paragraphs.
func opticks(t *testing.T, n int) []any {
	t.Helper()
	ps := corpustest.Paragraphs(t)
	docs := make([]any, 0, n)
	for i := 0; i < n && i < len(ps); i++ {
		docs = append(docs, map[string]any{"id": fmt.Sprintf("p%d", i), "title": corpus.Title(ps[i]), "body": ps[i]})
	}
	return docs
}

func TestVersion(t *testing.T) {
	out, _, code := runCmd(t, "version")
	if code != 0 || !strings.HasPrefix(out, "summa-server ") {
		t.Fatalf("version: %d %q", code, out)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"--bogus"}, {"--data-dir", t.TempDir(), "--shutdown-deadline", "-1s"}, {"--data-dir", t.TempDir(), "extra"}} {
		if _, stderr, code := runCmd(t, args...); code != exitUsage || stderr == "" {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
		}
	}
}

// TestServeLockDoctorAndSIGTERM runs the server: /readyz answers 200; a
// second server and a doctor on the same directory fail fast with a clear
// message and touch nothing; SIGTERM with uncommitted documents exits 0
// and a restarted server has them; the doctor on the clean directory
// prints its report and exits 0.
func TestServeLockDoctorAndSIGTERM(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx := context.Background()
	p := start(t, dir)
	if err := p.c.Readyz(ctx); err != nil {
		t.Fatalf("readyz: %v", err)
	}
	if created, err := p.c.CreateIndex(ctx, "opticks", json.RawMessage(testSchema)); err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	docs := opticks(t, 200)
	if n, err := p.c.AddDocuments(ctx, "opticks", docs[:100]...); err != nil || n != 100 {
		t.Fatalf("add: %d %v", n, err)
	}
	if _, err := p.c.Commit(ctx, "opticks"); err != nil {
		t.Fatal(err)
	}
	if n, err := p.c.AddDocuments(ctx, "opticks", docs[100:]...); err != nil || n != 100 {
		t.Fatalf("add: %d %v", n, err)
	}

	before := tree(t, dir)
	_, stderr, code := runCmd(t, "--data-dir", dir, "--listen", "127.0.0.1:0")
	if code == 0 || !strings.Contains(stderr, "in use by another summa-server") {
		t.Fatalf("second server: exit %d, stderr %q", code, stderr)
	}
	stdout, stderr, code := runCmd(t, "--data-dir", dir, "--doctor")
	if code == 0 || !strings.Contains(stderr, "in use by another summa-server") || !json.Valid([]byte(stdout)) {
		t.Fatalf("doctor beside a server: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if after := tree(t, dir); after != before {
		t.Fatalf("a refused process touched the directory:\nbefore\n%s\nafter\n%s", before, after)
	}

	if st, err := p.c.GetIndex(ctx, "opticks"); err != nil || st.UncommittedDocuments != 100 {
		t.Fatalf("status before SIGTERM: %+v %v", st, err)
	}
	if code := p.stop(); code != 0 {
		t.Fatalf("SIGTERM: exit %d\n%s", code, p.stderr)
	}

	report := filepath.Join(t.TempDir(), "report.json")
	stdout, stderr, code = runCmd(t, "--data-dir", dir, "--doctor", "--report-file", report)
	if code != 0 {
		t.Fatalf("doctor: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var rep struct {
		Indexes []struct {
			Name             string   `json:"name"`
			CheckedSegments  int      `json:"checkedSegments"`
			RemovedSegments  []string `json:"removedSegments"`
			RemovedDocuments *int     `json:"removedDocuments"`
		} `json:"indexes"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || len(rep.Indexes) != 1 {
		t.Fatalf("doctor report %q: %v", stdout, err)
	}
	ir := rep.Indexes[0]
	if ir.Name != "opticks" || ir.CheckedSegments < 2 || ir.RemovedSegments == nil || len(ir.RemovedSegments) != 0 ||
		ir.RemovedDocuments == nil || *ir.RemovedDocuments != 0 {
		t.Fatalf("doctor report %s", stdout)
	}
	if data, err := os.ReadFile(report); err != nil || string(data) != stdout {
		t.Fatalf("report file %q: %v", data, err)
	}

	p = start(t, dir)
	st, err := p.c.GetIndex(ctx, "opticks")
	if err != nil || st.Documents != 200 || st.UncommittedDocuments != 0 {
		t.Fatalf("after restart: %+v %v", st, err)
	}
	res, err := p.c.Search(ctx, "opticks", client.SearchRequest{Query: "light"})
	if err != nil || res.TotalHits == 0 {
		t.Fatalf("search after restart: %+v %v", res, err)
	}
	if code := p.stop(); code != 0 {
		t.Fatalf("second SIGTERM: exit %d\n%s", code, p.stderr)
	}
}

// TestDoctorMissingDirectory: nothing to repair is consistent.
func TestDoctorMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "absent")
	stdout, _, code := runCmd(t, "--data-dir", dir, "--doctor")
	if code != 0 || strings.TrimSpace(stdout) != `{"indexes":[]}` {
		t.Fatalf("exit %d stdout %q", code, stdout)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("doctor created the directory")
	}
}

// TestAutocommitAndEnv sets the autocommit interval from the environment:
// documents become searchable without a commit request.
func TestAutocommitAndEnv(t *testing.T) {
	t.Setenv("SUMMA_AUTOCOMMIT_INTERVAL", "100ms")
	dir := t.TempDir()
	p := start(t, dir)
	ctx := context.Background()
	if _, err := p.c.CreateIndex(ctx, "auto", json.RawMessage(testSchema)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.AddDocuments(ctx, "auto", opticks(t, 20)...); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := p.c.GetIndex(ctx, "auto")
		if err != nil {
			t.Fatal(err)
		}
		if st.Documents == 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("autocommit did not commit: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code := p.stop(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
}

// TestBackupRefusals: `backup` without --to, on a missing data directory,
// or into a non-empty destination exits 2, says why, and creates nothing;
// the refusal is also a JSON report with an error.
func TestBackupRefusals(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dst, "earlier"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	absent := filepath.Join(t.TempDir(), "absent")
	for _, tc := range []struct {
		args   []string
		want   string
		report bool // flags were valid: a JSON report with an error
	}{
		{[]string{"backup", "--data-dir", src}, "--to", false},
		{[]string{"backup", "--data-dir", absent, "--to", filepath.Join(t.TempDir(), "b")}, "data directory", true},
		{[]string{"backup", "--data-dir=" + src, "--to=" + dst}, "not an empty directory", true},
	} {
		stdout, stderr, code := runCmd(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
		var rep struct {
			Indexes []any  `json:"indexes"`
			Error   string `json:"error"`
		}
		if err := json.Unmarshal([]byte(stdout), &rep); tc.report && (err != nil || rep.Error == "" || rep.Indexes == nil) {
			t.Errorf("%q: stdout %q is not a JSON report with an error (%v)", tc.args, stdout, err)
		}
	}
	if _, err := os.Stat(absent); !os.IsNotExist(err) {
		t.Errorf("backup created the missing data directory")
	}
	if ents, _ := os.ReadDir(src); len(ents) != 0 {
		t.Errorf("a refused backup wrote into the data directory: %v", ents)
	}
	if ents, _ := os.ReadDir(dst); len(ents) != 1 {
		t.Errorf("a refused backup wrote into the destination: %v", ents)
	}
}

func TestPrepareVolumeHandsTheTreeToTheEngineUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "idx"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "idx", "metadata.json"), []byte("{}"), 0o400); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"prepare-volume", "--data-dir", dir, "--uid", "65532", "--gid", "65532"}, func(string) string { return "" }, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, p := range []string{dir, filepath.Join(dir, "idx"), filepath.Join(dir, "idx", "metadata.json")} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := info.Sys().(*syscall.Stat_t)
		if st.Uid != 65532 || st.Gid != 65532 || info.Mode().Perm()&0o600 != 0o600 {
			t.Fatalf("%s: owner %d:%d mode %v", p, st.Uid, st.Gid, info.Mode())
		}
	}
	out.Reset()
	run([]string{"prepare-volume", "--data-dir", dir, "--uid", "65532", "--gid", "65532"}, func(string) string { return "" }, &out, &errOut)
	if !strings.Contains(out.String(), `"changed":0`) {
		t.Fatalf("a second run changed something: %s", out.String())
	}
	if code := run([]string{"prepare-volume", "--data-dir", dir}, func(string) string { return "" }, &out, &errOut); code != exitUsage {
		t.Fatalf("missing --uid: exit %d", code)
	}
}

// TestClientDropsIdleConnectionsBeforeTheServer: the client package keeps
// an idle connection for less time than the server's default
// --idle-timeout, so a POST never goes out on a connection the server is
// closing (it would fail with EOF and is not retried).
func TestClientDropsIdleConnectionsBeforeTheServer(t *testing.T) {
	cfg, err := parseFlags([]string{"--data-dir", t.TempDir()}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if client.IdleConnTimeout >= cfg.Access.IdleTimeout {
		t.Fatalf("client keeps idle connections %v, the server closes them after %v", client.IdleConnTimeout, cfg.Access.IdleTimeout)
	}
	hc, err := client.NewHTTPClient(nil, "", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := hc.Transport.(*http.Transport).IdleConnTimeout; got != client.IdleConnTimeout {
		t.Fatalf("transport keeps idle connections %v", got)
	}
}
