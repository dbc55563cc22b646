package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	summav1 "github.com/summadev/summa/api/v1"
)

// doctorTestIndex is a SummaIndex for the doctor's unit tests.
func doctorTestIndex() *summav1.SummaIndex {
	return &summav1.SummaIndex{
		ObjectMeta: metav1.ObjectMeta{Name: "books", Namespace: "ns"},
		Spec: summav1.SummaIndexSpec{
			Schema:  summav1.Schema{Fields: []summav1.SchemaField{{Name: "id", Type: summav1.FieldTypeKeyword, Primary: true}}},
			Storage: summav1.StorageSpec{Size: resource.MustParse("1Gi")},
		},
	}
}

// TestDoctorRequestIDInHistoryNeverRunsAgain: A, B, then A again does not
// start a run; a new ID does; the history keeps the last
// MaxDoctorHistory runs, each once.
func TestDoctorRequestIDInHistoryNeverRunsAgain(t *testing.T) {
	x := doctorTestIndex()
	x.Spec.Doctor.RequestID = "a"
	if !doctorActive(x) {
		t.Fatal("a first requestId does not start a run")
	}
	for _, id := range []string{"a", "b"} {
		x.Status.Doctor = &summav1.DoctorStatus{RequestID: id, Phase: summav1.DoctorPhaseSucceeded,
			History: historyOf(x.Status.Doctor)}
		recordRun(x.Status.Doctor)
	}
	x.Spec.Doctor.RequestID = "a"
	if doctorActive(x) {
		t.Fatalf("A, B, A ran A again; status %+v", x.Status.Doctor)
	}
	x.Spec.Doctor.RequestID = "c"
	if !doctorActive(x) {
		t.Fatal("a new requestId does not start a run")
	}
	d := x.Status.Doctor
	for i := 0; i < 2*summav1.MaxDoctorHistory; i++ {
		d.RequestID = fmt.Sprintf("r%d", i)
		recordRun(d)
		recordRun(d) // once only
	}
	if len(d.History) != summav1.MaxDoctorHistory || d.History[len(d.History)-1].RequestID != d.RequestID ||
		d.History[0].RequestID != fmt.Sprintf("r%d", summav1.MaxDoctorHistory) {
		t.Fatalf("history %+v", d.History)
	}
}

// historyOf is d's history (none for nil).
func historyOf(d *summav1.DoctorStatus) []summav1.DoctorRun {
	if d == nil {
		return nil
	}
	return d.History
}

// TestDoctorJobsInheritPodTemplateScheduling: both Jobs take node
// selector, affinity, tolerations, pull secrets, priority class and
// service account from spec.podTemplate, are bounded by
// activeDeadlineSeconds, never retried, and removed after a TTL; the
// doctor keeps its report under the requestId.
func TestDoctorJobsInheritPodTemplateScheduling(t *testing.T) {
	x := doctorTestIndex()
	affinity := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}}}
	x.Spec.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		NodeSelector:       map[string]string{"disk": "ssd"},
		Affinity:           affinity,
		Tolerations:        []corev1.Toleration{{Key: "dedicated", Value: "search", Effect: corev1.TaintEffectNoSchedule}},
		ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "registry"}},
		PriorityClassName:  "search-critical",
		ServiceAccountName: "search",
		Containers:         []corev1.Container{{Name: "app", Image: "app:v1"}},
	}}
	x.Status.Doctor = &summav1.DoctorStatus{RequestID: "r1", BackupClaimName: x.BackupClaimName("r1")}
	r := &SummaIndexReconciler{Options: Options{DefaultImage: "summa-server:v1"}}
	for _, job := range []*batchv1.Job{r.doctorJob(x), r.backupJob(x)} {
		s := job.Spec.Template.Spec
		if s.NodeSelector["disk"] != "ssd" || s.Affinity == nil || s.Affinity.NodeAffinity == nil ||
			len(s.Tolerations) != 1 || s.Tolerations[0].Key != "dedicated" ||
			len(s.ImagePullSecrets) != 1 || s.ImagePullSecrets[0].Name != "registry" ||
			s.PriorityClassName != "search-critical" || s.ServiceAccountName != "search" {
			t.Errorf("job %s does not inherit the pod template's scheduling: %+v", job.Name, s)
		}
		if len(s.Containers) != 1 || *s.AutomountServiceAccountToken {
			t.Errorf("job %s: containers %d, token mounted %v", job.Name, len(s.Containers), *s.AutomountServiceAccountToken)
		}
		if ptr.Deref(job.Spec.ActiveDeadlineSeconds, 0) != summav1.DefaultDoctorActiveDeadlineSeconds ||
			ptr.Deref(job.Spec.BackoffLimit, -1) != 0 || ptr.Deref(job.Spec.TTLSecondsAfterFinished, 0) != jobTTLSeconds {
			t.Errorf("job %s bounds: deadline %v backoff %v ttl %v", job.Name, job.Spec.ActiveDeadlineSeconds,
				job.Spec.BackoffLimit, job.Spec.TTLSecondsAfterFinished)
		}
	}
	x.Spec.Doctor.ActiveDeadlineSeconds = ptr.To[int64](600)
	job := r.doctorJob(x)
	if *job.Spec.ActiveDeadlineSeconds != 600 {
		t.Errorf("activeDeadlineSeconds %d, want 600", *job.Spec.ActiveDeadlineSeconds)
	}
	env := job.Spec.Template.Spec.Containers[0].Env
	if !containsEnv(env, "SUMMA_REPORT_ID", "r1") || !containsEnv(env, "SUMMA_SUMMARY_FILE", terminationLog) {
		t.Errorf("doctor env %+v", env)
	}
	x.Spec.PodTemplate = nil
	if s := r.doctorJob(x).Spec.Template.Spec; s.NodeSelector != nil || s.ServiceAccountName != "" {
		t.Errorf("without a pod template: %+v", s)
	}
}

// containsEnv reports whether env sets name to value.
func containsEnv(env []corev1.EnvVar, name, value string) bool {
	for _, e := range env {
		if e.Name == name && e.Value == value {
			return true
		}
	}
	return false
}

// TestDoctorJobNotStarted: a Job pod waiting on an image pull or the
// scheduler is stuck once the start timeout passed; an invalid image name
// at once; a pod with a running (init) container never.
func TestDoctorJobNotStarted(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", CreationTimestamp: metav1.NewTime(created)}}
	pod := func(mutate func(*corev1.Pod)) []corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "j-x", CreationTimestamp: metav1.NewTime(created)},
			Status: corev1.PodStatus{Phase: corev1.PodPending}}
		mutate(&p)
		return []corev1.Pod{p}
	}
	waiting := func(reason string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "volume-permissions", Image: "bad:v1",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "no such host"}}}}
		}
	}
	timeout := time.Minute
	for _, tc := range []struct {
		name  string
		pods  []corev1.Pod
		after time.Duration
		stuck bool
		why   string
	}{
		{"pull failing, within the timeout", pod(waiting("ImagePullBackOff")), 30 * time.Second, false, ""},
		{"pull failing, past the timeout", pod(waiting("ImagePullBackOff")), 2 * time.Minute, true, "ImagePullBackOff: no such host"},
		{"invalid image", pod(waiting("InvalidImageName")), time.Second, true, "InvalidImageName"},
		{"unschedulable", pod(func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: "Unschedulable", Message: "0/3 nodes are available"}}
		}), 2 * time.Minute, true, "not scheduled: Unschedulable"},
		{"init container running", pod(func(p *corev1.Pod) {
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "volume-permissions",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}), time.Hour, false, ""},
		{"no pod", nil, 2 * time.Minute, true, "no pod was created"},
	} {
		why, stuck, _ := jobNotStarted(job, tc.pods, timeout, created.Add(tc.after))
		if stuck != tc.stuck || !strings.Contains(why, tc.why) {
			t.Errorf("%s: stuck %v (%q), want %v (%q)", tc.name, stuck, why, tc.stuck, tc.why)
		}
	}
}

// TestDoctorReportKeepsStatusBounded: a summary (counts exact, list cut)
// and a whole report both give exact counts and at most
// MaxRemovedSegments IDs; the message says where the rest is.
func TestDoctorReportKeepsStatusBounded(t *testing.T) {
	ids := make([]string, 150)
	for i := range ids {
		ids[i] = fmt.Sprintf("%x", 0x100+i)
	}
	whole, _ := json.Marshal(map[string]any{"indexes": []any{
		map[string]any{"name": "other", "checkedSegments": 1, "removedSegments": []string{"1"}, "removedDocuments": 9},
		map[string]any{"name": "books", "checkedSegments": 160, "removedSegments": ids, "removedDocuments": 1500},
	}})
	summary, _ := json.Marshal(map[string]any{"summary": true, "reportId": "r1", "indexes": []any{
		map[string]any{"name": "books", "checkedSegments": 160, "removedSegmentCount": 150, "removedSegments": ids[:20], "removedDocuments": 1500},
	}})
	for _, tc := range []struct {
		name   string
		report []byte
		listed int
		path   string
	}{{"whole", whole, 100, ""}, {"summary", summary, 20, "/v1/admin/doctor-reports/r1"}} {
		x := doctorTestIndex()
		x.Status.Doctor = &summav1.DoctorStatus{RequestID: "r1"}
		if err := applyDoctorReport(x, string(tc.report)); err != nil {
			t.Fatal(err)
		}
		d := x.Status.Doctor
		if d.RemovedSegmentCount != 150 || d.RemovedDocuments != 1500 || d.CheckedSegments != 160 ||
			len(d.RemovedSegments) != tc.listed || d.RemovedSegments[0] != ids[0] || d.ReportPath != tc.path {
			t.Errorf("%s: %+v", tc.name, d)
		}
		if !strings.Contains(d.Message, fmt.Sprintf("the first %d listed", tc.listed)) {
			t.Errorf("%s: message %q", tc.name, d.Message)
		}
		if got := reportIncomplete(d); got != (tc.listed < 100) {
			t.Errorf("%s: incomplete %v", tc.name, got)
		}
	}
	x := doctorTestIndex()
	x.Status.Doctor = &summav1.DoctorStatus{RequestID: "r1"}
	if err := applyDoctorReport(x, `{"indexes":[{"name":"books","checkedSegments":3,"removedSegments":["`); err == nil {
		t.Fatal("a cut report was accepted")
	}
}

// TestDoctorReportCompletedFromTheEngine: when the summary listed fewer
// removed segments than status keeps, the list is filled from the whole
// report the engine serves; an engine without it leaves the summary.
func TestDoctorReportCompletedFromTheEngine(t *testing.T) {
	ids := make([]string, 150)
	for i := range ids {
		ids[i] = fmt.Sprintf("%x", 0x100+i)
	}
	served := 0
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/admin/doctor-reports/r1" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"code":"NotFound","message":"no report","retryable":false}}`))
			return
		}
		served++
		_ = json.NewEncoder(w).Encode(map[string]any{"indexes": []any{map[string]any{
			"name": "books", "checkedSegments": 160, "removedSegments": ids, "removedDocuments": 1500}}})
	}))
	defer engine.Close()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, engine.Listener.Addr().String())
	}}}
	r := &SummaIndexReconciler{Options: Options{HTTPClient: hc, EngineTimeout: 5 * time.Second}}
	pod := &corev1.Pod{Status: corev1.PodStatus{PodIP: "10.0.0.9"}}
	summary, _ := json.Marshal(map[string]any{"summary": true, "reportId": "r1", "indexes": []any{
		map[string]any{"name": "books", "checkedSegments": 160, "removedSegmentCount": 150, "removedSegments": ids[:20], "removedDocuments": 1500},
	}})
	for _, id := range []string{"r1", "r2"} {
		x := doctorTestIndex()
		x.Status.Doctor = &summav1.DoctorStatus{RequestID: id}
		if err := applyDoctorReport(x, strings.Replace(string(summary), `"r1"`, `"`+id+`"`, 1)); err != nil {
			t.Fatal(err)
		}
		r.completeReport(context.Background(), x, pod)
		d := x.Status.Doctor
		want := 20 // r2: the engine has no such report
		if id == "r1" {
			want = summav1.MaxRemovedSegments
		}
		if len(d.RemovedSegments) != want || d.RemovedSegmentCount != 150 || d.RemovedSegments[0] != ids[0] {
			t.Errorf("%s: %d listed, count %d", id, len(d.RemovedSegments), d.RemovedSegmentCount)
		}
	}
	if served != 1 {
		t.Errorf("the engine served the report %d times, want 1", served)
	}
}
