package index

import (
	"context"
	"fmt"
	"sync"

	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// worker is one indexing goroutine with its own in-memory segment builder.
type worker struct {
	// id is the worker's index in writer.workers.
	id int
	// idx is the owning index.
	idx *Index
	// queue carries documents and flush requests in acceptance order.
	queue chan task
	// builder accumulates the current generation's documents.
	builder *segment.Builder
	// gen is the generation the builder's documents belong to.
	gen *generation
	// opstamps and pks parallel the builder's doc ids.
	opstamps []uint64
	pks      []string
}

// task is one unit of worker input: documents or a flush request.
type task struct {
	// docs and ops are documents with their opstamps.
	docs []*schema.Document
	ops  []uint64
	// gen is the generation the documents belong to.
	gen *generation
	// flush, when set, asks the worker to flush its buffer into job slot id.
	flush *flushJob
}

// flushJob collects the workers' final flush of one generation. It
// belongs to that generation only: a late worker can report only into it,
// never into the next commit (C06).
type flushJob struct {
	// gen is the generation being committed.
	gen *generation
	// done[i] is closed when worker i reported.
	done []chan struct{}
	// mu guards results.
	mu sync.Mutex
	// results[i] is worker i's output (nil when its buffer was empty).
	results []*prepared
	// published is set once the job's outputs are in metadata.
	published bool
}

func newFlushJob(gen *generation, workers int) *flushJob {
	j := &flushJob{gen: gen, done: make([]chan struct{}, workers), results: make([]*prepared, workers)}
	for i := range j.done {
		j.done[i] = make(chan struct{})
	}
	return j
}

func (w *worker) run(ctx context.Context, wg *sync.WaitGroup) {
	defer wg.Done()
	for t := range w.queue {
		if t.flush != nil {
			w.flush(ctx, t.flush)
			continue
		}
		w.add(ctx, t)
	}
}

// add indexes documents into the builder; a full buffer is flushed into a
// prepared segment owned by the generation.
func (w *worker) add(ctx context.Context, t task) {
	if w.gen != t.gen {
		w.reset(t.gen)
	}
	if t.gen.failure() != nil {
		return // the generation is abandoned; drain the queue (C05)
	}
	if err := w.addDocs(t); err != nil {
		t.gen.fail(err)
		w.reset(t.gen)
		return
	}
	if w.builder.MemBytes() >= w.idx.opts.WorkerBufferBytes {
		p, err := w.writeSegment(ctx, false)
		if err != nil {
			t.gen.fail(err)
			return
		}
		t.gen.addPrepared(p)
		w.reset(t.gen)
	}
}

func (w *worker) addDocs(t task) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("index: indexing worker %d panicked: %v", w.id, r)
		}
	}()
	for i, d := range t.docs {
		w.builder.Add(d)
		w.opstamps = append(w.opstamps, t.ops[i])
		w.pks = append(w.pks, d.PrimaryKey)
	}
	return nil
}

// flush writes the buffered documents of the job's generation and reports
// into the job's slot. The builder for the next documents is made after
// the report, off the commit's critical path.
func (w *worker) flush(ctx context.Context, job *flushJob) {
	reported := false
	report := func() {
		if !reported {
			reported = true
			close(job.done[w.id])
		}
	}
	defer report()
	if w.gen != job.gen {
		w.reset(job.gen)
	}
	if job.gen.failure() != nil {
		w.reset(job.gen)
		return
	}
	p, err := w.hookedWrite(ctx)
	if err != nil {
		job.gen.fail(err)
		return
	}
	job.mu.Lock()
	job.results[w.id] = p
	job.mu.Unlock()
	report()
	if p != nil {
		w.reset(w.gen)
	}
}

// hookedWrite runs the test hook and writes the buffer, turning a panic of
// either into an error (L06: the claim was abandoned by writeSegment).
func (w *worker) hookedWrite(ctx context.Context) (p *prepared, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("index: indexing worker %d panicked during flush: %v", w.id, r)
			w.reset(w.gen)
		}
	}()
	if h := w.idx.opts.Hooks.BeforeWorkerFlush; h != nil {
		h(w.id)
	}
	if w.builder.NumDocs() == 0 {
		return nil, nil
	}
	return w.writeSegment(ctx, true)
}

// writeSegment claims an output ID before the first file is written (L07),
// writes and opens the segment, and returns it still owned by the claim.
// With syncNow (a flush for a commit, which publishes the output next) the
// file's fsync starts as soon as it is written, so that it runs while the
// commit plans its masks and writes its metadata; the outputs of a full
// buffer, published by a later commit, are synced by that commit's save
// (holding an asynchronous fsync until then would hold its context).
// The caller resets the builder once it handed the output on.
// On error or panic the claim is abandoned through tracked cleanup (L05,
// L06).
func (w *worker) writeSegment(ctx context.Context, syncNow bool) (p *prepared, err error) {
	claim, err := w.idx.mgr.Claim("indexing")
	if err != nil {
		return nil, fmt.Errorf("index: claim flush output: %w", err)
	}
	defer func() {
		if r := recover(); r != nil {
			claim.Abandon()
			panic(r)
		}
		if err != nil {
			claim.Abandon()
		}
	}()
	// Unsynced: the publishing commit syncs the files together with its
	// metadata file, in one round of fsyncs (publish, C02).
	info, err := w.builder.WriteUnsynced(ctx, w.idx.commitFS(), w.idx.dir, claim.ID)
	if err != nil {
		return nil, fmt.Errorf("index: write segment %s: %w", claim.ID, err)
	}
	r, err := segment.Open(w.idx.fs, w.idx.dir, w.idx.schema, info, w.idx.readerOptions())
	if err != nil {
		return nil, fmt.Errorf("index: open written segment %s: %w", claim.ID, err)
	}
	p = &prepared{claim: claim, info: info, reader: r, opstamps: w.opstamps, pks: w.pks, unsynced: true}
	if syncNow {
		// The files are written: their fsyncs may start (C02 needs them
		// done before the metadata rename, which waits for them).
		for _, f := range info.Files {
			p.syncs = append(p.syncs, metadata.StartFileSync(w.idx.commitFS(), w.idx.dir, segid.FileName(claim.ID, f.Suffix)))
		}
	}
	return p, nil
}

// reset empties the builder for generation gen.
func (w *worker) reset(gen *generation) {
	w.gen = gen
	prev := w.builder
	w.builder = segment.NewBuilder(w.idx.schema)
	if prev != nil {
		// Flushes at one cadence are alike: start at the last one's size.
		w.builder.Reserve(prev)
	}
	w.builder.SetSeismic(segment.SeismicOptions{Budget: w.idx.opts.SeismicBudget})
	w.opstamps = nil
	w.pks = nil
}
