package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"sort"
	"strconv"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	summav1 "github.com/summadev/summa/api/v1"
	"github.com/summadev/summa/client"
)

// engineFor returns a client of the engine in pod, reached at its pod IP
// (not the Service: the operator speaks to one precise pod, and the
// Service only routes to ready ones while a drain makes the pod unready).
// It speaks to the pod as the pod was made (see accessOf): over HTTPS,
// verifying the certificate with the ca.crt of the TLS Secret the pod
// mounts (the system roots without one), with the admin token of the
// credentials Secret the pod mounts.
func (r *SummaIndexReconciler) engineFor(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod) (*client.Client, error) {
	base, hc, token, err := r.engineConn(ctx, index, pod)
	if err != nil {
		return nil, err
	}
	return client.New(base, hc).WithToken(token), nil
}

// engineConn is engineFor's base URL, HTTP client and admin token.
func (r *SummaIndexReconciler) engineConn(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod) (string, *http.Client, string, error) {
	addr := net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(EnginePort))
	pa := accessOf(pod)
	token := ""
	if pa.credentialsSecret != "" {
		s, err := r.getSecret(ctx, pod.Namespace, pa.credentialsSecret)
		if err != nil {
			return "", nil, "", fmt.Errorf("read the admin token of engine pod %s from secret %s: %w", pod.Name, pa.credentialsSecret, err)
		}
		token = firstToken(s.Data[summav1.AdminTokenKey])
	}
	if !pa.https {
		return "http://" + addr, r.Options.HTTPClient, token, nil
	}
	var ca []byte
	if pa.tlsSecret != "" {
		s, err := r.getSecret(ctx, pod.Namespace, pa.tlsSecret)
		if err != nil {
			return "", nil, "", fmt.Errorf("read the CA of engine pod %s from secret %s: %w", pod.Name, pa.tlsSecret, err)
		}
		ca = s.Data[summav1.CACertKey]
	}
	hc, err := r.clients.get(ca, index.ServiceHost(), index.ServiceDNSNames(r.Options.ClusterDomain), r.Options.EngineTimeout, r.Options.Now)
	if err != nil {
		return "", nil, "", fmt.Errorf("engine pod %s: the ca.crt of secret %s: %w", pod.Name, pa.tlsSecret, err)
	}
	return "https://" + addr, hc, token, nil
}

// engineSchema is index's schema as the engine's JSON.
func engineSchema(index *summav1.SummaIndex) (json.RawMessage, error) {
	raw, err := json.Marshal(index.Spec.Schema)
	if err != nil {
		return nil, fmt.Errorf("encode schema: %w", err)
	}
	return raw, nil
}

// errSchemaConflict: the volume holds an index of this name with another
// schema (an adopted volume of a different index).
type errSchemaConflict struct{ msg string }

func (e *errSchemaConflict) Error() string { return e.msg }

// observeEngine creates index's index in the engine when missing and copies the
// engine's view into status: documents, segments, generation, quarantine,
// durability and the drain estimate.
func (r *SummaIndexReconciler) observeEngine(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod) error {
	ctx, cancel := context.WithTimeout(ctx, r.Options.EngineTimeout)
	defer cancel()
	base, hc, token, err := r.engineConn(ctx, index, pod)
	if err != nil {
		return err
	}
	c := client.New(base, hc).WithToken(token)
	st, err := c.GetIndex(ctx, index.Name)
	if client.IsCode(err, client.CodeIndexNotFound) {
		schema, serr := engineSchema(index)
		if serr != nil {
			return serr
		}
		created, cerr := c.CreateIndex(ctx, index.Name, schema)
		r.engineCalled(ctx, "create-index")
		if client.IsCode(cerr, client.CodeIndexExists) {
			return &errSchemaConflict{msg: "the engine holds index " + index.Name + " with another schema: " + cerr.Error()}
		}
		if cerr != nil {
			return fmt.Errorf("create index %s in the engine: %w", index.Name, cerr)
		}
		if created {
			r.event(index, pod, corev1.EventTypeNormal, "IndexCreated", "index %s created in the engine", index.Name)
		}
		st, err = c.GetIndex(ctx, index.Name)
	}
	if err != nil {
		return fmt.Errorf("read index %s from the engine: %w", index.Name, err)
	}
	lc, err := c.Lifecycle(ctx)
	if err != nil {
		return fmt.Errorf("read the engine's drain estimate: %w", err)
	}
	// Status follows the engine from now on through a long poll
	// (summaindex_statuswatch.go), not only at each resync.
	r.watches.ensure(types.NamespacedName{Namespace: index.Namespace, Name: index.Name},
		watchTarget{podUID: pod.UID, base: base, transport: transportOf(hc), token: token, index: index.Name},
		int64(st.Generation), int64(len(st.Quarantined)))
	before := engineFigures(index)
	defer func() {
		if engineFigures(index) != before {
			now := metav1.NewTime(r.Options.Now())
			index.Status.LastObservedTime = &now
		}
	}()
	s := &index.Status
	setEngineFigures(s, st)
	r.observeStorage(ctx, index, pod, st.Storage)
	// The estimate moves with every measurement: status follows it only
	// when it moved enough to matter, so a steady index is never rewritten.
	// While a drain runs it stays the one read before: the drain commits
	// the backlog it measured, and the next pod's grace is sized from it
	// (summaindex_grace.go).
	if est := lc.DrainEstimateSeconds; s.DrainStartTime == nil && (s.DrainEstimateSeconds == nil ||
		math.Abs(est-*s.DrainEstimateSeconds) > max(0.5, 0.2**s.DrainEstimateSeconds)) {
		est = math.Round(est*10) / 10
		s.DrainEstimateSeconds = &est
	}
	if n := s.QuarantinedSegmentCount; n > 0 {
		if !index.IsConditionTrue(summav1.ConditionDoctorRequired) {
			r.event(index, pod, corev1.EventTypeWarning, "DoctorRequired",
				"%d quarantined segment(s); set spec.doctor.requestId to run the doctor", n)
		}
		setCondition(index, summav1.ConditionDoctorRequired, true, "SegmentsQuarantined",
			fmt.Sprintf("%d segment(s) quarantined (first: %s: %s); set spec.doctor.requestId to repair",
				n, s.QuarantinedSegments[0].ID, s.QuarantinedSegments[0].Reason))
	} else {
		setCondition(index, summav1.ConditionDoctorRequired, false, "NoQuarantine", "every segment opens")
	}
	return nil
}

// setEngineFigures copies the engine's figures of st into s: documents,
// segments, generation, uncommitted documents, durability and quarantine
// (what the status watch writes too, summaindex_statuspublish.go).
func setEngineFigures(s *summav1.SummaIndexStatus, st *client.IndexStatus) {
	s.Documents = int64(st.Documents)
	s.Segments = int64(len(st.Segments))
	s.Generation = int64(st.Generation)
	s.UncommittedDocuments = int64(st.UncommittedDocuments)
	s.DurabilityDegraded = st.DurabilityDegraded
	s.QuarantinedSegments, s.QuarantinedSegmentCount = quarantinedSegments(st.Quarantined)
}

// figures are the parts of status read from the engine, compared to
// tell whether an observation changed them (status.lastObservedTime).
type figures struct {
	documents, segments, generation, uncommitted, quarantined int64
	degraded                                                  bool
	firstQuarantined                                          string
}

// engineFigures returns index's engine figures.
func engineFigures(index *summav1.SummaIndex) figures {
	s := &index.Status
	f := figures{documents: s.Documents, segments: s.Segments, generation: s.Generation,
		uncommitted: s.UncommittedDocuments, quarantined: s.QuarantinedSegmentCount, degraded: s.DurabilityDegraded}
	if len(s.QuarantinedSegments) > 0 {
		f.firstQuarantined = s.QuarantinedSegments[0].ID
	}
	return f
}

// transportOf is hc's transport (the default one when unset).
func transportOf(hc *http.Client) http.RoundTripper {
	if hc == nil || hc.Transport == nil {
		return http.DefaultTransport
	}
	return hc.Transport
}

// engineCalled marks the moment after an engine call that changed the
// engine and before any record of it (Options.afterEngineCall).
func (r *SummaIndexReconciler) engineCalled(ctx context.Context, call string) {
	if h := r.Options.afterEngineCall; h != nil {
		h(ctx, call)
	}
}

// quarantinedSegments is the engine's quarantine list as status carries it:
// sorted by ID, the first MaxQuarantinedSegments, each reason cut to
// MaxQuarantineReasonLength bytes; and the exact count.
func quarantinedSegments(q []client.QuarantinedSegment) ([]summav1.QuarantinedSegment, int64) {
	if len(q) == 0 {
		return nil, 0
	}
	out := make([]summav1.QuarantinedSegment, 0, len(q))
	for _, s := range q {
		out = append(out, summav1.QuarantinedSegment{ID: s.Segment, Reason: truncateUTF8(s.Reason, summav1.MaxQuarantineReasonLength)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	if len(out) > summav1.MaxQuarantinedSegments {
		out = out[:summav1.MaxQuarantinedSegments:summav1.MaxQuarantinedSegments]
	}
	return out, int64(len(q))
}

// truncateUTF8 cuts s to at most n bytes without splitting a rune.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
