package optimizer

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
)

// ErrSkip classifies task errors that are neither success nor a failure to
// back off: nothing to do, sources claimed by another operation,
// cancellation, or a source the index just quarantined.
var ErrSkip = errors.New("optimizer: task skipped")

// ErrStorageFull classifies task errors of a full volume: the task is
// neither a failure of its sources (no backoff) nor retried at once;
// maintenance pauses while Config.StorageFull reports true.
var ErrStorageFull = errors.New("optimizer: storage full, maintenance paused")

// Target is one index as the optimizer sees it. Targets are acquired for
// one scan and released after it; running tasks keep their own.
type Target interface {
	// Name identifies the index.
	Name() string
	// Metadata returns the persisted generation (selection reads only it).
	Metadata() *metadata.Metadata
	// Quarantined reports whether a segment is quarantined.
	Quarantined(id segid.ID) bool
	// HasReorderFields reports whether the schema asks for BP.
	HasReorderFields() bool
	// Run executes a task; errors wrapping ErrSkip are not failures.
	Run(ctx context.Context, t Task) error
	// Sweep deletes orphan files (Q01).
	Sweep() error
	// Retain returns a copy that stays valid until its Release.
	Retain() (Target, error)
	// Release ends the target's use.
	Release()
}

// Config tunes background maintenance.
type Config struct {
	// Threads is the number of concurrent background tasks; 0 turns
	// background maintenance off (explicit operations still work).
	Threads int
	// ScanInterval is the time between scans.
	ScanInterval time.Duration
	// BackoffMin and BackoffMax bound the per-source failure backoff.
	BackoffMin, BackoffMax time.Duration
	// CompletionCooldown is how long an index gets no new automatic task
	// after one of its tasks completed (M05); 0 means
	// DefaultCompletionCooldown, a negative value none.
	CompletionCooldown time.Duration
	// Policy chooses tasks.
	Policy Policy
	// Logger receives maintenance events.
	Logger logr.Logger
	// OnTask observes each finished task (metrics): kind and outcome
	// ("success", "failure", "skipped", "cancelled", "storage_full").
	OnTask func(kind, outcome string)
	// Storage reads the volume: its free bytes and whether it refuses
	// writes. While it refuses them, or after a task stopped for space
	// until space returns (storage.go), scans start no task (nil: never).
	Storage func() (free int64, full bool)
}

// DefaultCompletionCooldown is the pause between an automatic task's
// completion and the next automatic task on the same index (M05).
const DefaultCompletionCooldown = 10 * time.Second

// Optimizer is the background maintenance supervisor of one process.
type Optimizer struct {
	cfg     Config
	permits *Permits
	log     logr.Logger
	// scans stops the scan loop; tasks cancels running tasks (BP
	// cancellation between bounded units).
	scansCtx    context.Context
	stopScans   context.CancelFunc
	tasksCtx    context.Context
	cancelTasks context.CancelFunc
	// wg joins the scan loop and every task.
	wg sync.WaitGroup
	// wake asks for an early scan.
	wake chan struct{}

	mu sync.Mutex
	// backoffs per index name.
	backoffs map[string]*Backoff
	// running holds the sources of running tasks per index.
	running map[string]map[segid.ID]bool
	// paused skips scans (drain).
	paused bool
	// reorders cancels running reorder tasks (drain brings BP to rest).
	reorders map[*Task]context.CancelFunc
	// cooldown holds, per index name, the time before which no new
	// automatic task is chosen: set when a task completes (M05).
	cooldown map[string]time.Time
	// space is the storage pause (storage.go).
	space spacePause
}

// New returns an optimizer that shares permits with explicit operations.
func New(cfg Config, permits *Permits) *Optimizer {
	if cfg.ScanInterval <= 0 {
		cfg.ScanInterval = 30 * time.Second
	}
	if cfg.BackoffMin <= 0 {
		cfg.BackoffMin = 30 * time.Second
	}
	if cfg.BackoffMax < cfg.BackoffMin {
		cfg.BackoffMax = max(30*time.Minute, cfg.BackoffMin)
	}
	if cfg.CompletionCooldown == 0 {
		cfg.CompletionCooldown = DefaultCompletionCooldown
	}
	if cfg.Policy.SegmentsPerTier == 0 {
		p := DefaultPolicy()
		if cfg.Policy.MaxUnconvergedPasses > 0 {
			p.MaxUnconvergedPasses = cfg.Policy.MaxUnconvergedPasses
		}
		cfg.Policy = p
	}
	o := &Optimizer{cfg: cfg, permits: permits, log: cfg.Logger, wake: make(chan struct{}, 1),
		backoffs: map[string]*Backoff{}, running: map[string]map[segid.ID]bool{}, reorders: map[*Task]context.CancelFunc{},
		cooldown: map[string]time.Time{}}
	if o.log.GetSink() == nil {
		o.log = logr.Discard()
	}
	o.scansCtx, o.stopScans = context.WithCancel(context.Background())
	o.tasksCtx, o.cancelTasks = context.WithCancel(context.Background())
	return o
}

// Policy returns the policy in use, defaults filled in.
func (o *Optimizer) Policy() Policy { return o.cfg.Policy }

// Start runs the scan loop over the targets returned by list; it does
// nothing when Threads is 0.
func (o *Optimizer) Start(list func() []Target) {
	if o.cfg.Threads <= 0 {
		return
	}
	o.wg.Add(1)
	go o.loop(list)
}

// Wake asks for a scan now.
func (o *Optimizer) Wake() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Pause stops choosing new tasks and cancels running BP reorders between
// bounded units (drain); merges and compactions run to completion.
func (o *Optimizer) Pause() {
	o.mu.Lock()
	o.paused = true
	for _, cancel := range o.reorders {
		cancel()
	}
	o.mu.Unlock()
}

// Resume chooses tasks again.
func (o *Optimizer) Resume() { o.mu.Lock(); o.paused = false; o.mu.Unlock(); o.Wake() }

// Paused reports whether scans are paused (a drain runs).
func (o *Optimizer) Paused() bool { o.mu.Lock(); defer o.mu.Unlock(); return o.paused }

// Running returns the number of running background tasks.
func (o *Optimizer) Running() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, m := range o.running {
		if len(m) > 0 {
			n++
		}
	}
	return n
}

// StopScans stops the scan loop (first step of shutdown, S02).
func (o *Optimizer) StopScans() { o.stopScans() }

// ScansStopped reports whether StopScans or Shutdown was called.
func (o *Optimizer) ScansStopped() bool { return o.scansCtx.Err() != nil }

// Shutdown stops scans, signals cancellation to running tasks (BP stops
// between bounded units) and then joins them: blocking work is drained,
// never abandoned (S01, S02).
func (o *Optimizer) Shutdown() {
	o.stopScans()
	o.cancelTasks()
	o.wg.Wait()
}

// Backoff returns the backoff state of an index.
func (o *Optimizer) Backoff(index string) *Backoff {
	o.mu.Lock()
	defer o.mu.Unlock()
	b := o.backoffs[index]
	if b == nil {
		b = &Backoff{Min: o.cfg.BackoffMin, Max: o.cfg.BackoffMax}
		o.backoffs[index] = b
	}
	return b
}

func (o *Optimizer) loop(list func() []Target) {
	defer o.wg.Done()
	timer := time.NewTimer(o.cfg.ScanInterval)
	defer timer.Stop()
	for {
		select {
		case <-o.scansCtx.Done():
			return
		case <-timer.C:
		case <-o.wake:
		}
		o.Scan(list())
		timer.Reset(o.nextScan(time.Now()))
	}
}

// nextScan returns the delay to the next scan: the interval, or earlier
// when a backed-off source becomes eligible (its own wake-up, Q07) or an
// index's completion cooldown ends (M05).
func (o *Optimizer) nextScan(now time.Time) time.Duration {
	d := o.cfg.ScanInterval
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, b := range o.backoffs {
		if t, ok := b.NextWake(now); ok && t.Sub(now) < d {
			d = max(t.Sub(now), time.Millisecond)
		}
	}
	for _, until := range o.cooldown {
		if until.After(now) && until.Sub(now) < d {
			d = max(until.Sub(now), time.Millisecond)
		}
	}
	return d
}

// Scan chooses and starts tasks on the targets, then releases them. Tasks
// run with non-blocking permit admission (M05).
func (o *Optimizer) Scan(targets []Target) {
	defer func() {
		for _, t := range targets {
			t.Release()
		}
	}()
	o.mu.Lock()
	paused := o.paused
	o.mu.Unlock()
	if paused || o.scansCtx.Err() != nil || o.pausedForStorage() {
		return
	}
	for _, t := range targets {
		if err := t.Sweep(); err != nil {
			o.log.Error(err, "Orphan sweep failed", "index", t.Name())
		}
		task, ok := o.choose(t)
		if !ok {
			continue
		}
		if !o.permits.TryAcquire() {
			return
		}
		held, err := t.Retain()
		if err != nil {
			o.permits.Release()
			continue
		}
		o.start(held, task)
	}
}

func (o *Optimizer) choose(t Target) (Task, bool) {
	now := time.Now()
	b := o.Backoff(t.Name())
	o.mu.Lock()
	if until, ok := o.cooldown[t.Name()]; ok {
		if now.Before(until) {
			o.mu.Unlock()
			return Task{}, false // M05: completion cooldown
		}
		delete(o.cooldown, t.Name())
	}
	busy := o.running[t.Name()]
	eligible := func(id segid.ID) bool {
		return !busy[id] && !t.Quarantined(id) && b.Eligible(id, now)
	}
	meta := t.Metadata()
	task, ok := o.cfg.Policy.Choose(meta.Segments, eligible, t.HasReorderFields())
	o.mu.Unlock()
	return task, ok
}

// start runs a task holding a permit and the target until it drains.
func (o *Optimizer) start(t Target, task Task) {
	o.mu.Lock()
	if o.running[t.Name()] == nil {
		o.running[t.Name()] = map[segid.ID]bool{}
	}
	for _, id := range task.Sources {
		o.running[t.Name()][id] = true
	}
	ctx, cancel := context.WithCancel(o.tasksCtx)
	if task.Kind == "reorder" {
		o.reorders[&task] = cancel
	}
	o.mu.Unlock()
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		defer o.permits.Release()
		defer t.Release()
		err := t.Run(ctx, task)
		o.mu.Lock()
		delete(o.reorders, &task)
		o.mu.Unlock()
		cancel()
		o.finish(t.Name(), task, err)
	}()
}

// finish records a task's outcome; failures back off from now, the pass
// completion (Q09). A completed task starts the index's completion
// cooldown (M05): the next automatic task on it waits for the scan after
// the cooldown instead of starting at once.
func (o *Optimizer) finish(name string, task Task, err error) {
	now := time.Now()
	o.mu.Lock()
	for _, id := range task.Sources {
		delete(o.running[name], id)
	}
	if err == nil && o.cfg.CompletionCooldown > 0 {
		o.cooldown[name] = now.Add(o.cfg.CompletionCooldown)
	}
	o.mu.Unlock()
	b := o.Backoff(name)
	outcome := "success"
	switch {
	case err == nil:
		b.Succeeded(task.Sources)
	case errors.Is(err, context.Canceled):
		outcome = "cancelled"
	case errors.Is(err, ErrSkip):
		outcome = "skipped"
	case errors.Is(err, ErrStorageFull):
		// Not the sources' failure: no backoff; scans pause until space
		// returns (pausedForStorage).
		outcome = "storage_full"
		o.stoppedForSpace(now)
		o.log.Info("Maintenance stopped: the volume is full", "index", name, "kind", task.Kind, "error", err.Error())
	default:
		outcome = "failure"
		delay := b.Failed(task.Sources, now)
		o.log.Error(err, "Maintenance failed; backing off", "index", name, "kind", task.Kind, "delay", delay.String())
	}
	if o.cfg.OnTask != nil {
		o.cfg.OnTask(task.Kind, outcome)
	}
	if err == nil {
		// More may be due: on other indexes now, on this one when its
		// cooldown ends (the scan schedules that wake-up, nextScan).
		o.Wake()
	}
}
