package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/summadev/summa/engine/auth"
	"github.com/summadev/summa/engine/diskspace"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/lifecycle"
	"github.com/summadev/summa/engine/registry"
)

// Metrics are the server's Prometheus metrics, in a registry of their own
// (never the global one, so that several servers can live in one test
// process). Per-index state is collected at scrape time from the registry.
type Metrics struct {
	// reg is the Prometheus registry served on /metrics.
	reg *prometheus.Registry
	// DocumentsAccepted counts documents accepted by ingestion, by index.
	DocumentsAccepted *prometheus.CounterVec
	// DocumentsDeleted counts accepted deletions by primary key, by index.
	DocumentsDeleted *prometheus.CounterVec
	// Commits counts commit requests by index and outcome.
	Commits *prometheus.CounterVec
	// CommitDuration is the latency of commit requests, by index.
	CommitDuration *prometheus.HistogramVec
	// HTTPRequests counts answered requests by route and status code.
	HTTPRequests *prometheus.CounterVec
	// HTTPDuration is the latency of requests, by route.
	HTTPDuration *prometheus.HistogramVec
	// MaintenanceOperations counts maintenance operations (merge, reorder,
	// compact, background passes) by index, kind and outcome. Background
	// maintenance reports through ObserveMaintenance.
	MaintenanceOperations *prometheus.CounterVec
	// MaintenanceDuration is the latency of maintenance operations by kind
	// and outcome.
	MaintenanceDuration *prometheus.HistogramVec
	// AuthFailures counts refused requests of access control by reason:
	// missing, malformed or unknown token, too low a scope, cross-origin.
	AuthFailures *prometheus.CounterVec
}

// Outcomes of commits and maintenance operations, as metric labels.
const (
	// OutcomeSuccess: published.
	OutcomeSuccess = "success"
	// OutcomeFlushTimeout: the flush timed out; the commit goes on.
	OutcomeFlushTimeout = "flush_timeout"
	// OutcomeStorageFull: refused or failed for lack of space (507).
	OutcomeStorageFull = "storage_full"
	// OutcomeGenerationFailed: the generation was abandoned.
	OutcomeGenerationFailed = "generation_failed"
	// OutcomeWaitAbandoned: the requester stopped waiting; the operation goes on.
	OutcomeWaitAbandoned = "wait_abandoned"
	// OutcomeRefused: refused before it started (draining, deleting, closed).
	OutcomeRefused = "refused"
	// OutcomeError: failed.
	OutcomeError = "error"
)

// newMetrics creates the metrics of a server of r.
func newMetrics(r *registry.Registry, tokens *auth.Tokens, cert *auth.Certificate) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		DocumentsAccepted: newCounterVec("summa_documents_accepted_total",
			"Documents accepted by ingestion (visible after a commit).", "index"),
		DocumentsDeleted: newCounterVec("summa_documents_deleted_total",
			"Deletions by primary key accepted (visible after a commit).", "index"),
		Commits: newCounterVec("summa_commits_total",
			"Commits by index and outcome.", "index", "outcome"),
		CommitDuration: newHistogramVec("summa_commit_duration_seconds",
			"Latency of commits.", prometheus.ExponentialBuckets(0.005, 2.5, 12), "index"),
		HTTPRequests: newCounterVec("summa_http_requests_total",
			"HTTP requests by route and status code.", "route", "code"),
		HTTPDuration: newHistogramVec("summa_http_request_duration_seconds",
			"Latency of HTTP requests by route.", prometheus.DefBuckets, "route"),
		MaintenanceOperations: newCounterVec("summa_maintenance_operations_total",
			"Maintenance operations by index, kind and outcome.", "index", "kind", "outcome"),
		MaintenanceDuration: newHistogramVec("summa_maintenance_duration_seconds",
			"Latency of maintenance operations by kind and outcome.", prometheus.ExponentialBuckets(0.01, 3, 12), "kind", "outcome"),
		AuthFailures: newCounterVec("summa_http_auth_failures_total",
			"Requests refused by access control, by reason.", "reason"),
	}
	for _, reason := range []string{"missing", "malformed", "unknown", "scope", "cross-origin"} {
		m.AuthFailures.WithLabelValues(reason)
	}
	m.reg.MustRegister(m.AuthFailures, &accessCollector{tokens: tokens, cert: cert})
	m.reg.MustRegister(m.DocumentsAccepted, m.DocumentsDeleted, m.Commits, m.CommitDuration,
		m.HTTPRequests, m.HTTPDuration, m.MaintenanceOperations, m.MaintenanceDuration,
		&stateCollector{r: r}, &storageCollector{r: r},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the Prometheus registry, for components that add
// metrics of their own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// handler serves the Prometheus text format.
func (m *Metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// observeRequest counts one answered request.
func (m *Metrics) observeRequest(route, code string, d time.Duration) {
	m.HTTPRequests.WithLabelValues(route, code).Inc()
	m.HTTPDuration.WithLabelValues(route).Observe(d.Seconds())
}

// observeCommit counts one commit request.
func (m *Metrics) observeCommit(name string, err error, d time.Duration) {
	m.Commits.WithLabelValues(name, Outcome(err)).Inc()
	if err == nil {
		m.CommitDuration.WithLabelValues(name).Observe(d.Seconds())
	}
}

// ObserveMaintenance records one maintenance operation of kind ("merge",
// "reorder", "compact", "optimize", ...) on an index.
func (m *Metrics) ObserveMaintenance(name, kind string, err error, d time.Duration) {
	outcome := Outcome(err)
	m.MaintenanceOperations.WithLabelValues(name, kind, outcome).Inc()
	m.MaintenanceDuration.WithLabelValues(kind, outcome).Observe(d.Seconds())
}

// RecordMaintenance counts one maintenance operation whose outcome is
// already classified (for hooks that report kind and outcome strings, like
// the optimizer's). An empty index labels process-wide work.
func (m *Metrics) RecordMaintenance(name, kind, outcome string) {
	m.MaintenanceOperations.WithLabelValues(name, kind, outcome).Inc()
}

// forgetIndex drops the series of a deleted index.
func (m *Metrics) forgetIndex(name string) {
	l := prometheus.Labels{"index": name}
	m.DocumentsAccepted.DeletePartialMatch(l)
	m.DocumentsDeleted.DeletePartialMatch(l)
	m.Commits.DeletePartialMatch(l)
	m.CommitDuration.DeletePartialMatch(l)
	m.MaintenanceOperations.DeletePartialMatch(l)
}

// Outcome classifies the error of a commit or maintenance operation as a
// metric label.
func Outcome(err error) string {
	switch {
	case err == nil:
		return OutcomeSuccess
	case diskspace.IsNoSpace(err):
		return OutcomeStorageFull
	case errors.Is(err, index.ErrCommitFlushTimeout):
		return OutcomeFlushTimeout
	case errors.Is(err, index.ErrGenerationFailed):
		return OutcomeGenerationFailed
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return OutcomeWaitAbandoned
	case errors.Is(err, registry.ErrDraining), errors.Is(err, registry.ErrIndexDeleting),
		errors.Is(err, registry.ErrShuttingDown), errors.Is(err, registry.ErrIndexNotFound),
		errors.Is(err, index.ErrClosed):
		return OutcomeRefused
	}
	return OutcomeError
}

// gauge is a gauge collected at scrape time from a state of type S: its
// description and how its value is read from the state.
type gauge[S any] struct {
	desc  *prometheus.Desc
	value func(S) float64
}

// describeGauges sends the description of each gauge.
func describeGauges[S any](ch chan<- *prometheus.Desc, gauges []gauge[S]) {
	for _, g := range gauges {
		ch <- g.desc
	}
}

// collectGauges sends each gauge's value in st, with the given label
// values.
func collectGauges[S any](ch chan<- prometheus.Metric, gauges []gauge[S], st S, labels ...string) {
	for _, g := range gauges {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, g.value(st), labels...)
	}
}

// indexGauges are the per-index gauges, labelled by index.
var indexGauges = []gauge[registry.Status]{
	{newDesc("summa_index_documents", "Live, committed, searchable documents.", "index"),
		func(st registry.Status) float64 { return float64(st.Documents) }},
	{newDesc("summa_index_segments", "Metadata-live segments.", "index"),
		func(st registry.Status) float64 { return float64(len(st.Segments)) }},
	{newDesc("summa_index_quarantined_segments", "Metadata-live segments excluded from search because they failed to open.", "index"),
		func(st registry.Status) float64 { return float64(len(st.Quarantined)) }},
	{newDesc("summa_index_durability_degraded", "1 when a directory fsync after a commit failed: crash durability is degraded.", "index"),
		func(st registry.Status) float64 { return boolValue(st.DurabilityDegraded) }},
	{newDesc("summa_index_uncommitted_documents", "Accepted operations not yet committed.", "index"),
		func(st registry.Status) float64 { return float64(st.UncommittedDocuments) }},
	{newDesc("summa_index_generation", "Published metadata generation.", "index"),
		func(st registry.Status) float64 { return float64(st.Generation) }},
	{newDesc("summa_index_size_bytes", "Bytes of the live segments and their deletion masks.", "index"),
		liveBytes},
	{newDesc("summa_index_deleting", "1 while the index is being deleted.", "index"),
		func(st registry.Status) float64 { return boolValue(st.Deleting) }},
	{newDesc("summa_index_held_publication", "1 while a generation whose publication failed before the commit point is held for its retry (ingestion answers Backpressure).", "index"),
		func(st registry.Status) float64 { return boolValue(st.HeldPublication != nil) }},
	{newDesc("summa_index_held_publication_attempts", "Failed publication attempts of the held generation (0 when none is held).", "index"),
		heldAttempts},
}

// liveBytes is the size of an index's live segments and their masks.
func liveBytes(st registry.Status) float64 {
	var size int64
	for _, seg := range st.Segments {
		size += seg.SizeBytes
	}
	return float64(size)
}

// heldAttempts is the number of failed publication attempts of an index's
// held generation, 0 when none is held.
func heldAttempts(st registry.Status) float64 {
	if st.HeldPublication == nil {
		return 0
	}
	return float64(st.HeldPublication.Attempts)
}

// serverState is the server-wide state the server gauges read, taken
// once per scrape.
type serverState struct {
	drain registry.DrainStatus
	est   registry.Estimate
}

// serverGauges are the server-wide gauges.
var serverGauges = []gauge[serverState]{
	{newDesc("summa_draining", "1 while writes are refused for a drain."),
		func(st serverState) float64 { return boolValue(st.drain.Draining) }},
	{newDesc("summa_drained", "1 once a drain committed everything accepted."),
		func(st serverState) float64 { return boolValue(st.drain.Drained) }},
	{newDesc("summa_drain_estimate_seconds", "How long a drain would take now."),
		func(st serverState) float64 { return st.est.DrainEstimateSeconds }},
	{newDesc("summa_active_operations", "Segment IDs held by active operations plus running commits."),
		func(st serverState) float64 { return float64(st.est.ActiveOperations) }},
}

// Descriptions of the other state collected at scrape time.
var (
	descHeldRetries = newDesc("summa_held_publication_retries_total",
		"Background retries of held publications by outcome (success: published; error: failed before the commit point again).", "index", "outcome")
	descVectorRuns = newDesc("summa_index_vector_runs",
		"Binary IVF encoded runs over the live segments, by binary dense_vector field.", "index", "field")
	descVectorFragmented = newDesc("summa_index_vector_fragmented_segments",
		"Live segments whose binary IVF field holds more than one run (debt that maintenance coalesces).", "index", "field")
	descSwept = newDesc("summa_orphan_segments_swept_total",
		"Orphan segment IDs deleted by sweeps (exclusive open and optimizer).")
)

// newCounterVec is a counter of the given variable labels.
func newCounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// newHistogramVec is a histogram of the given buckets and variable labels.
func newHistogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
}

// newDesc is the description of a metric collected at scrape time, with
// the given variable labels.
func newDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// stateCollector reads the registry's state at scrape time.
type stateCollector struct {
	// r is the observed registry.
	r *registry.Registry
}

// Describe sends every description.
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	describeGauges(ch, indexGauges)
	describeGauges(ch, serverGauges)
	for _, d := range []*prometheus.Desc{descSwept, descHeldRetries, descVectorRuns, descVectorFragmented} {
		ch <- d
	}
}

// Collect sends the current per-index and drain state.
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.r.Statuses() {
		collectGauges(ch, indexGauges, st, st.Name)
		collectVectorRuns(ch, st)
		ch <- prometheus.MustNewConstMetric(descHeldRetries, prometheus.CounterValue,
			float64(st.PublicationRetries.Succeeded), st.Name, OutcomeSuccess)
		ch <- prometheus.MustNewConstMetric(descHeldRetries, prometheus.CounterValue,
			float64(st.PublicationRetries.Failed), st.Name, OutcomeError)
	}
	collectGauges(ch, serverGauges, serverState{drain: c.r.DrainStatus(), est: c.r.Lifecycle()})
	ch <- prometheus.MustNewConstMetric(descSwept, prometheus.CounterValue, float64(lifecycle.SweptTotal()))
}

// collectVectorRuns sends per-field binary IVF run and fragmentation
// gauges of one index.
func collectVectorRuns(ch chan<- prometheus.Metric, st registry.Status) {
	runs, frag := map[string]int{}, map[string]int{}
	var fields []string
	for _, seg := range st.Segments {
		for _, v := range seg.Vectors {
			if _, ok := runs[v.Field]; !ok {
				fields = append(fields, v.Field)
			}
			runs[v.Field] += v.Runs
			if v.Fragmented {
				frag[v.Field]++
			}
		}
	}
	for _, f := range fields {
		ch <- prometheus.MustNewConstMetric(descVectorRuns, prometheus.GaugeValue, float64(runs[f]), st.Name, f)
		ch <- prometheus.MustNewConstMetric(descVectorFragmented, prometheus.GaugeValue, float64(frag[f]), st.Name, f)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// accessCollector exposes how many tokens each scope has (never a token)
// and when the served TLS certificate expires.
type accessCollector struct {
	tokens *auth.Tokens
	cert   *auth.Certificate
}

var (
	descTokens = newDesc("summa_auth_tokens",
		"Bearer tokens known per scope (0 for every scope: access control is off).", "scope")
	descCertExpiry = newDesc("summa_tls_certificate_expiry_timestamp_seconds",
		"Expiry (NotAfter, Unix time) of the TLS certificate served now.")
)

// Describe sends the descriptors.
func (c *accessCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descTokens
	ch <- descCertExpiry
}

// Collect reads the current tokens and certificate.
func (c *accessCollector) Collect(ch chan<- prometheus.Metric) {
	for scope, n := range c.tokens.Counts() {
		ch <- prometheus.MustNewConstMetric(descTokens, prometheus.GaugeValue, float64(n), scope.String())
	}
	if c.cert != nil {
		ch <- prometheus.MustNewConstMetric(descCertExpiry, prometheus.GaugeValue, float64(c.cert.NotAfter().Unix()))
	}
}
