package index

import (
	"sync"

	"github.com/summadev/summa/engine/lifecycle"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segment"
)

// generation is the set of operations accepted since the last commit.
type generation struct {
	// pending maps each primary key touched in this generation to its
	// latest operation; at commit it is both the upsert/delete set for
	// committed segments and the tie-breaker between new versions.
	// Guarded by writer.mu.
	pending map[string]pendingOp
	// ops counts accepted operations (documents and deletes). Guarded by
	// writer.mu.
	ops int
	// tasks are the generation's accepted documents as queued to the
	// workers, kept until the generation is published: if its flush fails,
	// they are queued again into the next generation, so a retried commit
	// publishes them and nothing accepted is lost. Guarded by writer.mu.
	tasks []task

	// mu guards prepared and err, which workers update.
	mu struct {
		sync.Mutex
		// prepared are outputs already flushed by workers (buffer full),
		// owned by their claims until publication or abandonment.
		prepared []*prepared
		// err is the first build error or panic of the generation (C05),
		// set once fail abandoned the prepared outputs.
		err error
		// failing is set as fail starts: outputs flushed from then on are
		// abandoned, not kept.
		failing bool
	}
}

// pendingOp is the latest operation on one primary key.
type pendingOp struct {
	// opstamp orders operations within the writer.
	opstamp uint64
	// deleted is true for a delete, false for an upsert.
	deleted bool
}

func newGeneration() *generation {
	return &generation{pending: make(map[string]pendingOp)}
}

// fail records the generation's first failure and abandons, through
// tracked cleanup, the outputs its workers already flushed when their
// buffers filled (C05): a failed generation is never published (the next
// commit rebuilds its operations), so they are given up at once rather
// than at the next commit or close: a generation that failed for want of
// disk space frees what it wrote. The failure is visible (failure, and
// so admission) only once they are gone; an output flushed after it is
// abandoned by addPrepared.
func (g *generation) fail(err error) {
	g.mu.Lock()
	if g.mu.err != nil || g.mu.failing {
		g.mu.Unlock()
		return
	}
	g.mu.failing = true
	out := g.mu.prepared
	g.mu.prepared = nil
	g.mu.Unlock()
	abandonAll(out)
	g.mu.Lock()
	g.mu.err = err
	g.mu.Unlock()
}

// failure returns the first failure, if any.
func (g *generation) failure() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mu.err
}

// addPrepared hands a buffer-full output to the generation, which owns it
// until publication; the output of a generation that already failed is
// abandoned at once (C05).
func (g *generation) addPrepared(p *prepared) {
	g.mu.Lock()
	if g.mu.failing {
		g.mu.Unlock()
		p.abandon()
		return
	}
	g.mu.prepared = append(g.mu.prepared, p)
	g.mu.Unlock()
}

// takePrepared removes and returns the prepared outputs.
func (g *generation) takePrepared() []*prepared {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.mu.prepared
	g.mu.prepared = nil
	return out
}

// prepared is a written, unpublished segment owned by its claim.
type prepared struct {
	// claim is the active-operation owner of the output (L07).
	claim *lifecycle.Claim
	// info describes the written files.
	info segment.Info
	// reader is the opened output.
	reader *segment.Reader
	// opstamps holds each document's operation stamp, by doc id.
	opstamps []uint64
	// pks holds each document's primary key, by doc id.
	pks []string
	// unsynced says the files were written without fsync: the commit that
	// publishes them syncs them before its commit point.
	unsynced bool
	// syncs are the fsyncs of the files its worker started as it
	// finished them (flushes for a commit), which the publishing save
	// waits for; nil when none was started.
	syncs []*metadata.FileSync
}

// abandon closes the reader and gives the output up through tracked
// cleanup (L05).
func (p *prepared) abandon() {
	for _, s := range p.syncs {
		s.Release() // closes the file before the claim deletes it
	}
	p.syncs = nil
	if p.reader != nil {
		_ = p.reader.Close()
		p.reader = nil
	}
	p.claim.Abandon()
}

func abandonAll(ps []*prepared) {
	for _, p := range ps {
		p.abandon()
	}
}
