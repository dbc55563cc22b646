package server

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/s3backup"
)

// Error codes of the backup routes.
const (
	// CodeBackupNotConfigured (409): no object store is configured.
	CodeBackupNotConfigured = client.CodeBackupNotConfigured
	// CodeBackupNotFound (404): no such backup.
	CodeBackupNotFound = client.CodeBackupNotFound
	// CodeBackupStoreUnavailable (503, retryable): the object store could
	// not be read.
	CodeBackupStoreUnavailable = client.CodeBackupStoreUnavailable
)

// BackupOptions configure online backups.
type BackupOptions struct {
	// Store is the object store; nil turns the backup routes into 409
	// BackupNotConfigured.
	Store *s3backup.Store
	// EngineVersion goes into every manifest.
	EngineVersion string
	// BeforeFile, if set, is called before each file of a backup is read
	// (tests: hold an upload at a known point).
	BeforeFile func(index, id, name string)
	// BeforeManifest, if set, is called before a backup writes its
	// manifest (tests).
	BeforeManifest func(index, id string)
	// KeepFinished is how many finished (completed or failed) backups the
	// engine remembers in memory for GET .../backups/{id} (default 100);
	// completed ones are found in the bucket after that too.
	KeepFinished int
}

// backupJob is one backup this process started.
type backupJob struct {
	id, index  string
	generation uint64
	documents  uint64
	startedAt  time.Time
	progress   s3backup.Progress

	mu          sync.Mutex
	state       string
	err         string
	completedAt time.Time
	manifest    *s3backup.Manifest
}

// view is the job as the API shows it.
func (j *backupJob) view() client.Backup {
	j.mu.Lock()
	defer j.mu.Unlock()
	b := client.Backup{ID: j.id, Index: j.index, Generation: j.generation, State: j.state, Documents: j.documents,
		Bytes: j.progress.Bytes.Load(), ReusedBytes: j.progress.ReusedBytes.Load(),
		Files: int(j.progress.TotalFiles.Load()), FilesDone: int(j.progress.Files.Load()),
		Error: j.err, StartedAt: j.startedAt}
	b.TotalBytes = b.Bytes + b.ReusedBytes
	if j.manifest != nil {
		b = manifestView(j.manifest)
	}
	if !j.completedAt.IsZero() {
		t := j.completedAt
		b.CompletedAt = &t
	}
	return b
}

// manifestView is a completed backup as the API shows it.
func manifestView(m *s3backup.Manifest) client.Backup {
	t := m.CompletedAt
	return client.Backup{ID: m.ID, Index: m.Index, Generation: m.Generation, State: client.BackupCompleted,
		Documents: m.Documents, Bytes: m.Bytes, ReusedBytes: m.ReusedBytes, TotalBytes: m.TotalBytes(),
		Files: len(m.Files), FilesDone: len(m.Files), EngineVersion: m.EngineVersion,
		StartedAt: m.StartedAt, CompletedAt: &t}
}

// backups runs the online backups of a server.
type backups struct {
	opts BackupOptions
	// ctx is cancelled by StopBackups: running uploads end, unfinished.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	jobs     map[string]*backupJob
	finished []string // IDs of finished jobs, oldest first

	started, completed, failed *prometheus.CounterVec
	uploaded, reused           *prometheus.CounterVec
	lastSuccess                *prometheus.GaugeVec
}

func newBackups(opts BackupOptions, reg *prometheus.Registry) *backups {
	if opts.KeepFinished <= 0 {
		opts.KeepFinished = 100
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &backups{opts: opts, ctx: ctx, cancel: cancel, jobs: map[string]*backupJob{},
		started: indexCounter("summa_backups_started_total",
			"Online backups to object storage started, by index."),
		completed: indexCounter("summa_backups_completed_total",
			"Online backups completed (manifest written), by index."),
		failed: indexCounter("summa_backups_failed_total",
			"Online backups failed or cut short (no manifest written), by index."),
		uploaded: indexCounter("summa_backup_uploaded_bytes_total",
			"Bytes of segment files uploaded by backups, by index."),
		reused: indexCounter("summa_backup_reused_bytes_total",
			"Bytes of segment files found in the bucket already and not uploaded again, by index."),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "summa_backup_last_success_timestamp_seconds",
			Help: "Unix time of the last completed backup, by index."}, []string{"index"}),
	}
	reg.MustRegister(b.started, b.completed, b.failed, b.uploaded, b.reused, b.lastSuccess)
	return b
}

// indexCounter is a counter vector by index.
func indexCounter(name, help string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"index"})
}

// store returns the object store or the 409 answer.
func (b *backups) store() (*s3backup.Store, error) {
	if b.opts.Store == nil {
		return nil, newError(http.StatusConflict, CodeBackupNotConfigured,
			"no object store is configured: start the engine with --s3-endpoint, --s3-bucket and --s3-credentials-file")
	}
	return b.opts.Store, nil
}

// StopBackups cancels every running backup and waits for them to end
// (their manifests are not written; their tracker references are
// released). Shutdown calls it before closing the registry.
func (s *Server) StopBackups(ctx context.Context) error {
	s.backups.cancel()
	done := make(chan struct{})
	go func() { s.backups.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startBackup pins the committed generation (a tracker reference on every
// file it names), answers 202 {"id","generation",...} at once, and
// uploads in the background while the index keeps serving reads, writes
// and maintenance.
func (s *Server) startBackup(w http.ResponseWriter, r *http.Request) error {
	store, err := s.backups.store()
	if err != nil {
		return err
	}
	name := r.PathValue("index")
	h, idx, err := opened(s.r.Acquire(name))
	if err != nil {
		return err
	}
	snap, meta, err := pinCommitted(h, idx, "run the doctor before backing up")
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	job := &backupJob{id: s3backup.NewID(now), index: name, generation: meta.Generation,
		documents: snap.Documents(), startedAt: now, state: client.BackupRunning}
	b := s.backups
	b.mu.Lock()
	b.jobs[job.id] = job
	b.wg.Add(1)
	b.mu.Unlock()
	b.started.WithLabelValues(name).Inc()
	s.log.Info("Backup started", "index", name, "backup", job.id, "generation", job.generation)
	// The handle and the snapshot move into the upload: the handle lets an
	// index deletion cancel it (D01 step 2, through h.Context) and waits
	// for its release (step 3); the snapshot's tracker references keep
	// every file of the generation on disk until the upload ends (L01,
	// L02: a merge may retire them meanwhile, never delete them).
	go func() {
		defer b.wg.Done()
		defer h.Release()
		defer snap.Close()
		ctx, cancel := h.Context(b.ctx)
		defer cancel()
		req := s3backup.UploadRequest{Index: name, ID: job.id, FS: idx.FS(), Dir: idx.Dir(), Meta: meta,
			Documents: job.documents, EngineVersion: b.opts.EngineVersion, StartedAt: now, Progress: &job.progress}
		if f := b.opts.BeforeFile; f != nil {
			req.BeforeFile = func(file string) { f(name, job.id, file) }
		}
		if f := b.opts.BeforeManifest; f != nil {
			req.BeforeManifest = func() { f(name, job.id) }
		}
		m, err := store.Upload(ctx, req)
		s.finishBackup(job, m, err)
	}()
	writeJSON(w, http.StatusAccepted, job.view())
	return nil
}

// finishBackup records a backup's end.
func (s *Server) finishBackup(job *backupJob, m *s3backup.Manifest, err error) {
	b := s.backups
	job.mu.Lock()
	job.completedAt = time.Now().UTC()
	if err != nil {
		job.state, job.err = client.BackupFailed, err.Error()
	} else {
		job.state, job.manifest = client.BackupCompleted, m
		job.completedAt = m.CompletedAt
	}
	job.mu.Unlock()
	b.uploaded.WithLabelValues(job.index).Add(float64(job.progress.Bytes.Load()))
	b.reused.WithLabelValues(job.index).Add(float64(job.progress.ReusedBytes.Load()))
	if err != nil {
		b.failed.WithLabelValues(job.index).Inc()
		s.log.Error(err, "Backup failed; no manifest was written", "index", job.index, "backup", job.id)
	} else {
		b.completed.WithLabelValues(job.index).Inc()
		b.lastSuccess.WithLabelValues(job.index).Set(float64(m.CompletedAt.UnixNano()) / 1e9)
		s.log.Info("Backup completed", "index", job.index, "backup", job.id, "generation", m.Generation,
			"files", len(m.Files), "bytes", m.Bytes, "reusedBytes", m.ReusedBytes)
	}
	b.mu.Lock()
	b.finished = append(b.finished, job.id)
	for len(b.finished) > b.opts.KeepFinished {
		delete(b.jobs, b.finished[0])
		b.finished = b.finished[1:]
	}
	b.mu.Unlock()
}

// getBackup answers a backup's progress (running here) or result: a job
// of this process, else the manifest in the bucket.
func (s *Server) getBackup(w http.ResponseWriter, r *http.Request) error {
	store, err := s.backups.store()
	if err != nil {
		return err
	}
	name, id := r.PathValue("index"), r.PathValue("id")
	if !registry.ValidIndexName(name) {
		return newError(http.StatusBadRequest, CodeInvalidIndexName, "%v: %q", registry.ErrInvalidIndexName, name)
	}
	if !s3backup.ValidID(id) {
		return newError(http.StatusNotFound, CodeBackupNotFound, "%v", s3backup.ErrInvalidID)
	}
	s.backups.mu.Lock()
	job := s.backups.jobs[id]
	s.backups.mu.Unlock()
	if job != nil && job.index == name {
		writeJSON(w, http.StatusOK, job.view())
		return nil
	}
	m, err := store.Get(r.Context(), name, id)
	switch {
	case errors.Is(err, s3backup.ErrNotFound):
		return newError(http.StatusNotFound, CodeBackupNotFound, "index %s has no backup %s", name, id)
	case err != nil:
		return storeUnavailable(err)
	}
	writeJSON(w, http.StatusOK, manifestView(m))
	return nil
}

// listBackups answers the completed backups of an index in the bucket,
// newest first: {"backups":[BACKUP...]}. The index need not exist here
// (its backups outlive it).
func (s *Server) listBackups(w http.ResponseWriter, r *http.Request) error {
	store, err := s.backups.store()
	if err != nil {
		return err
	}
	name := r.PathValue("index")
	if !registry.ValidIndexName(name) {
		return newError(http.StatusBadRequest, CodeInvalidIndexName, "%v: %q", registry.ErrInvalidIndexName, name)
	}
	ms, skipped, err := store.List(r.Context(), name)
	if err != nil {
		return storeUnavailable(err)
	}
	for _, e := range skipped {
		s.log.Error(e, "Unreadable backup manifest skipped in the listing", "index", name)
	}
	out := client.BackupList{Backups: make([]client.Backup, 0, len(ms))}
	for _, m := range ms {
		out.Backups = append(out.Backups, manifestView(m))
	}
	sort.SliceStable(out.Backups, func(i, j int) bool { return out.Backups[i].ID > out.Backups[j].ID })
	writeJSON(w, http.StatusOK, out)
	return nil
}

// storeUnavailable is the answer when the object store cannot be read.
func storeUnavailable(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	e := unavailable(CodeBackupStoreUnavailable, retryDefault, "object store: %v", err)
	e.cause = err
	return e
}
