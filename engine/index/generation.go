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
		// err is the first build error or panic of the generation (C05).
		err error
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

// fail records the generation's first failure.
func (g *generation) fail(err error) {
	g.mu.Lock()
	if g.mu.err == nil {
		g.mu.err = err
	}
	g.mu.Unlock()
}

// failure returns the first failure, if any.
func (g *generation) failure() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mu.err
}

func (g *generation) addPrepared(p *prepared) {
	g.mu.Lock()
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
