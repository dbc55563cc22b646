package replication_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/replication"
	"github.com/summadev/summa/engine/server"
	"github.com/summadev/summa/internal/corpus"
)

// BenchmarkCatchUp times a new follower's copy of a leader's index (the
// real path: downloads over HTTP, full validation, fsyncs, publication),
// leader and follower in one process. The leader is the data directory
// named by SUMMA_BENCH_LEADER_DIR (a stopped summa-server's --data-dir,
// opened with background maintenance off), or else a fresh index of
// about 8 MiB of the Opticks paragraphs. It reports the copy's MB/s.
func BenchmarkCatchUp(b *testing.B) {
	dir := os.Getenv("SUMMA_BENCH_LEADER_DIR")
	fill := dir == ""
	if fill {
		dir = b.TempDir()
	}
	lr, err := registry.Open(vfs.Default, dir, registry.Options{Index: index.Options{CommitFlushTimeout: time.Minute}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = lr.Close(context.Background()) }()
	ts := httptest.NewServer(server.New(lr, server.Options{}))
	defer ts.Close()
	lc := client.New(ts.URL, nil)
	ctx := context.Background()
	if fill {
		fillLeader(b, lc, 8<<20)
	}
	list, err := lc.ListIndexes(ctx)
	if err != nil || len(list) != 1 {
		b.Fatalf("the leader must hold one index: %v %v", list, err)
	}
	name := list[0].Name
	want, err := lc.GetIndex(ctx, name)
	if err != nil {
		b.Fatal(err)
	}
	var copied int64
	var cpu time.Duration
	b.ResetTimer()
	for range b.N {
		n, c := catchUp(b, ts.URL, name, want.Generation)
		copied += n
		cpu += c
	}
	mb := float64(copied) / (1 << 20)
	b.ReportMetric(mb/b.Elapsed().Seconds(), "MB/s")
	b.ReportMetric(cpu.Seconds()*1000/mb, "cpu-ms/MB")
}

// cpuTime returns the CPU time (user and system) the process used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// catchUp runs a new follower until it serves generation gen of name and
// returns the bytes it copied and the CPU time the process (leader and
// follower) used meanwhile.
func catchUp(b *testing.B, leader, name string, gen uint64) (int64, time.Duration) {
	b.StopTimer()
	fr, err := registry.Open(vfs.Default, b.TempDir(), registry.Options{Index: index.Options{CommitFlushTimeout: time.Minute}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = fr.Close(context.Background()) }()
	f, err := replication.New(replication.Config{Leader: leader, PollWait: time.Second, ListInterval: 10 * time.Millisecond}, fr)
	if err != nil {
		b.Fatal(err)
	}
	fctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	b.StartTimer()
	cpu0 := cpuTime(b)
	go func() { defer close(done); f.Run(fctx) }()
	for {
		if h, err := fr.Acquire(name); err == nil {
			g := h.Status().Generation
			h.Release()
			if g >= gen {
				break
			}
		}
		time.Sleep(time.Millisecond)
	}
	cpu := cpuTime(b) - cpu0
	b.StopTimer()
	stop()
	<-done
	return f.BytesCopied(), cpu
}

// fillLeader creates index "bench" on the leader and ingests documents of
// the corpus's paragraphs, one commit per 2 MiB, until about size bytes
// of JSON are in.
func fillLeader(b *testing.B, lc *client.Client, size int) {
	ctx := context.Background()
	if _, err := lc.CreateIndex(ctx, "bench", json.RawMessage(`{"fields":[{"name":"id","type":"keyword","primary":true},{"name":"body","type":"text"}]}`)); err != nil {
		b.Fatal(err)
	}
	ps, err := corpus.Paragraphs()
	if err != nil {
		b.Fatal(err)
	}
	id := 0
	for total := 0; total < size; {
		var sb strings.Builder
		for sb.Len() < 2<<20 {
			var body strings.Builder
			for k := range 8 {
				body.WriteString(ps[(id*7+k*13)%len(ps)])
				fmt.Fprintf(&body, " w%dx%d ", id%5000, k)
			}
			line, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("d%d", id), "body": body.String()})
			sb.Write(line)
			sb.WriteByte('\n')
			id++
		}
		total += sb.Len()
		if _, err := lc.AddNDJSON(ctx, "bench", strings.NewReader(sb.String())); err != nil {
			b.Fatal(err)
		}
		if _, err := lc.Commit(ctx, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}
