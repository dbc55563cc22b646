package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Lucene drives Lucene 8.8 through the Java driver of
// bench/lucene/LuceneDriver.java, a child JVM spoken to over a pipe with
// the Xapian driver's protocol. The driver times every operation itself
// (System.nanoTime around the Lucene calls), so neither the pipe nor the
// JVM's start is counted, and it warms the JIT up before the timed
// searches (see Warmup).
type Lucene struct {
	pipeDriver
	warmRounds int
	// WarmMax bounds Warmup's time (DefaultWarmMax when 0).
	WarmMax time.Duration
}

// DefaultWarmMax is Lucene's default warm-up budget.
const DefaultWarmMax = 30 * time.Second

// WarmRounds is the number of warm-up rounds the last Warmup took.
func (l *Lucene) WarmRounds() int { return l.warmRounds }

// NewLucene returns the Lucene engine run by the driver d (see
// BuildLuceneDriver).
func NewLucene(d *LuceneDriver) *Lucene {
	return &Lucene{pipeDriver: pipeDriver{name: "lucene", argv: d.Argv}}
}

// Name implements Engine.
func (l *Lucene) Name() string { return "lucene" }

// Create implements Engine.
func (l *Lucene) Create(dir string) error {
	_, err := l.call("create "+dir+"\n", nil)
	return err
}

// Open implements Engine: an IndexWriter and its near-real-time reader
// (as Xapian's WritableDatabase).
func (l *Lucene) Open(dir string) error {
	_, err := l.call("open "+dir+"\n", nil)
	return err
}

// Prepare implements Engine: our analysis's tokens, as for Xapian.
func (l *Lucene) Prepare(docs []Doc, _ [][]byte) (any, error) {
	return tokenBatch("lucene", docs)
}

// Search implements Engine (ModeTop10Count).
func (l *Lucene) Search(_ context.Context, q Query) (int, error) {
	n, _, err := l.searchTop(xapianQueryLine(q))
	return n, err
}

// Warmup runs every query of qs in every mode, in rounds, until three
// consecutive rounds take times within 3% (at least 10 rounds, at most
// 500 or WarmMax), as the search-benchmark-game warms the JIT up.
func (l *Lucene) Warmup(qs []Query) error {
	var b strings.Builder
	n := 0
	for _, m := range Modes {
		for _, q := range qs {
			b.WriteString(string(m) + " " + xapianQueryLine(q) + "\n")
			n++
		}
	}
	budget := l.WarmMax
	if budget <= 0 {
		budget = DefaultWarmMax
	}
	f, err := l.call(fmt.Sprintf("warm %d %d\n", n, budget.Milliseconds()), []byte(b.String()))
	if err != nil {
		return err
	}
	if len(f) == 1 {
		l.warmRounds, _ = strconv.Atoi(f[0])
	}
	return nil
}

// Segments implements Engine: the reader's segment count.
func (l *Lucene) Segments() int {
	f, err := l.call("segments\n", nil)
	if err != nil || len(f) != 1 {
		return -1
	}
	n, _ := strconv.Atoi(f[0])
	return n
}
