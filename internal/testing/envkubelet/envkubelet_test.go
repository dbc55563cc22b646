package envkubelet_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	summa "github.com/summadev/summa/client"
	"github.com/summadev/summa/internal/testing/envkubelet"
)

// requireEnvtestVar makes missing envtest binaries a failure.
const requireEnvtestVar = "SUMMA_REQUIRE_ENVTEST"

// ns is the test namespace.
const ns = "envkubelet"

// envtestAssets returns the directory of the envtest binaries and whether
// both are there.
func envtestAssets() (string, bool) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join("..", "..", "bin", "envtest")
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return dir, false
		}
	}
	return dir, true
}

// fixture is the running control plane and Kubelet.
type fixture struct {
	c client.Client
	k *envkubelet.Kubelet
}

// TestKubelet runs the Kubelet on envtest with real summa-server
// processes. The subtests run in order and share the control plane.
func TestKubelet(t *testing.T) {
	dir, ok := envtestAssets()
	if !ok {
		msg := "envtest binaries (kube-apiserver, etcd) not found in " + dir + ": run `make envtest`"
		if os.Getenv(requireEnvtestVar) != "" {
			t.Fatal(msg + " (" + requireEnvtestVar + " is set, so this is a failure)")
		}
		t.Skip(msg + " (set " + requireEnvtestVar + "=1 to fail instead of skipping)")
	}
	bin := filepath.Join(t.TempDir(), "summa-server")
	build := exec.Command("go", "build", "-o", bin, "github.com/summadev/summa/cmd/summa-server")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build summa-server: %v\n%s", err, out)
	}

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	logf.SetLogger(logr.Discard()) // global: it would outlive t
	env := &envtest.Environment{BinaryAssetsDirectory: dir,
		ControlPlaneStartTimeout: 2 * time.Minute, ControlPlaneStopTimeout: time.Minute}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	k := envkubelet.New(c, envkubelet.Options{
		Binaries: map[string]string{"summa-server": bin, "sh": "/bin/sh", "tls-helper": self},
		Root:     t.TempDir(),
		// Long: a Secret's change reaches its volumes only when the pod is
		// updated (testSecrets), as on a kubelet between two syncs.
		SecretSyncPeriod: time.Hour,
		// Away from 127.0.0.2: other test binaries on this machine may run
		// pods there, and not all of them skip addresses in use.
		FirstIP: "127.0.0.100",
		Log:     testr.NewWithOptions(t, testr.Options{Verbosity: 1}),
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	f := &fixture{c: c, k: k}
	for _, tc := range []struct {
		name string
		run  func(*testing.T, *fixture)
	}{
		{"ServerPods", testServerPods},
		{"Jobs", testJobs},
		{"NativeSidecar", testNativeSidecar},
		{"SimulatedReadiness", testSimulatedReadiness},
		{"GraceExpiry", testGraceExpiry},
		{"ClaimProtection", testClaimProtection},
		{"GarbageCollector", testGarbageCollector},
		{"RestartPolicies", testRestartPolicies},
		{"JobPodDeleted", testJobPodDeleted},
		{"MissingClaim", testMissingClaim},
		{"Secrets", testSecrets},
		{"ImagePullFailures", testImagePullFailures},
	} {
		if !t.Run(tc.name, func(t *testing.T) { tc.run(t, f) }) {
			return
		}
	}
}

// eventually polls check every 200ms until it returns nil, failing after
// 60s with its last error.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// claim returns a 1Gi claim.
func claim(name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

// engine is a summa-server container on the volume "data" at /data.
func engine(name string) corev1.Container {
	return corev1.Container{
		Name: name, Image: "summa-server:test",
		Command: []string{"summa-server"},
		Args:    []string{"--data-dir", "/data", "--listen", "0.0.0.0:8082"},
		Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: 8082}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/readyz", Port: intstr.FromInt32(8082)}}},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
	}
}

// dataVolume is the volume "data" on the claim.
func dataVolume(claim string) corev1.Volume {
	return corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
}

// serverPod is a pod running summa-server on the claim.
func serverPod(name, claim string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{engine("engine")},
			Volumes:    []corev1.Volume{dataVolume(claim)},
		},
	}
}

// create creates the objects.
func create(t *testing.T, f *fixture, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := f.c.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
}

// get reads the object's current state into it.
func get(f *fixture, obj client.Object) error {
	return f.c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
}

// gone returns nil once the object no longer exists.
func gone(f *fixture, obj client.Object) func() error {
	return func() error {
		err := get(f, obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			return fmt.Errorf("%s still exists (deletionTimestamp %v, finalizers %v)",
				obj.GetName(), obj.GetDeletionTimestamp(), obj.GetFinalizers())
		}
		return err
	}
}

// runningReady waits for the pod to be Running and Ready and returns it.
func runningReady(t *testing.T, f *fixture, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	eventually(t, "pod "+name+" Running and Ready", func() error {
		if err := get(f, pod); err != nil {
			return err
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && pod.Status.Phase == corev1.PodRunning {
				return nil
			}
		}
		return fmt.Errorf("phase %s, conditions %+v\n%s", pod.Status.Phase, pod.Status.Conditions, f.k.Logs(ns, name))
	})
	return pod
}

// events returns the history of one pod.
func events(f *fixture, pod string) []envkubelet.ContainerEvent {
	var out []envkubelet.ContainerEvent
	for _, e := range f.k.History() {
		if e.Namespace == ns && e.Pod == pod {
			out = append(out, e)
		}
	}
	return out
}

const testSchema = `{"fields":[{"name":"id","type":"keyword","primary":true},{"name":"body","type":"text"}]}`

// testServerPods: two summa-server pods on claims get their own loopback
// addresses and answer there; a SIGKILLed server restarts on its data;
// a deleted pod's server gets SIGTERM, exits 0 and the pod is removed.
func testServerPods(t *testing.T, f *fixture) {
	ctx := context.Background()
	create(t, f, claim("data-a"), claim("data-b"), serverPod("engine-a", "data-a"), serverPod("engine-b", "data-b"))
	a, b := runningReady(t, f, "engine-a"), runningReady(t, f, "engine-b")
	if a.Status.PodIP == b.Status.PodIP || !strings.HasPrefix(a.Status.PodIP, "127.0.0.") ||
		!strings.HasPrefix(b.Status.PodIP, "127.0.0.") || a.Status.PodIP == "127.0.0.1" {
		t.Fatalf("pod IPs %q and %q", a.Status.PodIP, b.Status.PodIP)
	}
	if ip := f.k.PodIP(ns, "engine-a"); ip != a.Status.PodIP {
		t.Fatalf("PodIP %q, status %q", ip, a.Status.PodIP)
	}
	if a.Spec.NodeName != "envtest-node" || a.Status.HostIP != "127.0.0.1" {
		t.Fatalf("nodeName %q hostIP %q", a.Spec.NodeName, a.Status.HostIP)
	}
	// The status is written only when it changes.
	rv := b.ResourceVersion
	time.Sleep(2 * time.Second)
	if err := get(f, b); err != nil || b.ResourceVersion != rv {
		t.Fatalf("a steady pod was updated: %v, status %+v", err, b.Status)
	}
	for _, pod := range []*corev1.Pod{a, b} {
		resp, err := http.Get("http://" + pod.Status.PodIP + ":8082/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s /healthz: %s", pod.Name, resp.Status)
		}
	}
	pvc := claim("data-a")
	if err := get(f, pvc); err != nil || pvc.Status.Phase != corev1.ClaimBound ||
		pvc.Status.Capacity.Storage().String() != "1Gi" {
		t.Fatalf("claim: %v %+v", err, pvc.Status)
	}

	// Data goes to the claim's directory and survives a crash.
	sc := summa.New("http://"+a.Status.PodIP+":8082", nil)
	if _, err := sc.CreateIndex(ctx, "books", json.RawMessage(testSchema)); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.AddDocuments(ctx, "books", map[string]any{"id": "1", "body": "light"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Commit(ctx, "books"); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(f.k.ClaimDir(ns, "data-a")); err != nil || len(entries) == 0 {
		t.Fatalf("claim directory: %v %v", entries, err)
	}
	if err := f.k.KillContainer(ns, "engine-a", "engine", syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "engine-a restarted", func() error {
		if err := get(f, a); err != nil {
			return err
		}
		cs := a.Status.ContainerStatuses[0]
		last := cs.LastTerminationState.Terminated
		if cs.RestartCount != 1 || !cs.Ready || last == nil || last.ExitCode != 137 {
			return fmt.Errorf("container status %+v\n%s", cs, f.k.Logs(ns, "engine-a"))
		}
		return nil
	})
	runningReady(t, f, "engine-a")
	st, err := sc.GetIndex(ctx, "books")
	if err != nil || st.Documents != 1 {
		t.Fatalf("index after the restart: %+v %v\n%s", st, err, f.k.Logs(ns, "engine-a"))
	}

	// Graceful deletion: SIGTERM, exit 0, then the pod is removed.
	if err := f.c.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	eventually(t, "engine-a removed", gone(f, a))
	evs := events(f, "engine-a")
	last := evs[len(evs)-1]
	if last.Type != envkubelet.ContainerStopped || last.ExitCode != 0 || last.RestartCount != 1 {
		t.Fatalf("last event %+v; history %+v\n%s", last, evs, f.k.Logs(ns, "engine-a"))
	}
	if f.k.PodIP(ns, "engine-a") != "" {
		t.Fatal("PodIP of a removed pod")
	}
	if !strings.Contains(f.k.Logs(ns, "engine-a"), "Signal received") {
		t.Fatalf("the server did not log the SIGTERM:\n%s", f.k.Logs(ns, "engine-a"))
	}
}

// doctorJob is a Job running the doctor on the claim.
func doctorJob(name, claim string) *batchv1.Job {
	c := engine("doctor")
	c.Args = []string{"--data-dir", "/data", "--doctor", "--report-file", "/dev/termination-log"}
	c.ReadinessProbe = nil
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{c},
				Volumes:       []corev1.Volume{dataVolume(claim)},
			}},
		},
	}
}

// jobPod waits for the Job's pod to reach a terminal phase and returns it.
func jobPod(t *testing.T, f *fixture, job *batchv1.Job) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, "pod of job "+job.Name+" finished", func() error {
		var pods corev1.PodList
		if err := f.c.List(context.Background(), &pods, client.InNamespace(ns),
			client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
			return err
		}
		if len(pods.Items) != 1 {
			return fmt.Errorf("%d pods", len(pods.Items))
		}
		pod = &pods.Items[0]
		if p := pod.Status.Phase; p != corev1.PodSucceeded && p != corev1.PodFailed {
			return fmt.Errorf("phase %q", p)
		}
		return nil
	})
	return pod
}

// jobCondition waits for the Job's condition to be True and returns the
// Job.
func jobCondition(t *testing.T, f *fixture, name string, ct batchv1.JobConditionType) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	eventually(t, "job "+name+" "+string(ct), func() error {
		if err := get(f, job); err != nil {
			return err
		}
		for _, c := range job.Status.Conditions {
			if c.Type == ct && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("status %+v", job.Status)
	})
	return job
}

// hasConditions reports whether the Job has exactly these True conditions,
// in order.
func hasConditions(job *batchv1.Job, types ...batchv1.JobConditionType) bool {
	if len(job.Status.Conditions) != len(types) {
		return false
	}
	for i, c := range job.Status.Conditions {
		if c.Type != types[i] || c.Status != corev1.ConditionTrue {
			return false
		}
	}
	return true
}

// testJobs: a doctor Job on the claim of the deleted engine-a completes
// with the report as its pod's termination message; one on the claim in
// use by engine-b fails (the directory is locked).
func testJobs(t *testing.T, f *fixture) {
	ok, locked := doctorJob("doctor-ok", "data-a"), doctorJob("doctor-locked", "data-b")
	create(t, f, ok, locked)

	pod := jobPod(t, f, ok)
	if pod.Status.Phase != corev1.PodSucceeded || !strings.HasPrefix(pod.Name, "doctor-ok-") ||
		pod.Labels["controller-uid"] != string(ok.UID) || !metav1.IsControlledBy(pod, ok) {
		t.Fatalf("pod %s %s labels %v\n%s", pod.Name, pod.Status.Phase, pod.Labels, f.k.Logs(ns, pod.Name))
	}
	term := pod.Status.ContainerStatuses[0].State.Terminated
	var report struct {
		Indexes []struct {
			Name string `json:"name"`
		} `json:"indexes"`
	}
	if term == nil || term.ExitCode != 0 || json.Unmarshal([]byte(term.Message), &report) != nil ||
		len(report.Indexes) != 1 || report.Indexes[0].Name != "books" {
		t.Fatalf("terminated state %+v", term)
	}
	job := jobCondition(t, f, "doctor-ok", batchv1.JobComplete)
	if !hasConditions(job, batchv1.JobSuccessCriteriaMet, batchv1.JobComplete) || job.Status.Succeeded != 1 ||
		job.Status.CompletionTime == nil || job.Status.Active != 0 {
		t.Fatalf("job status %+v", job.Status)
	}

	pod = jobPod(t, f, locked)
	term = pod.Status.ContainerStatuses[0].State.Terminated
	if pod.Status.Phase != corev1.PodFailed || term == nil || term.ExitCode != 2 || !strings.Contains(term.Message, `"error"`) {
		t.Fatalf("pod %s terminated %+v\n%s", pod.Status.Phase, term, f.k.Logs(ns, pod.Name))
	}
	job = jobCondition(t, f, "doctor-locked", batchv1.JobFailed)
	if !hasConditions(job, batchv1.JobFailureTarget, batchv1.JobFailed) || job.Status.Failed != 1 ||
		job.Status.CompletionTime != nil || job.Status.Conditions[1].Reason != batchv1.JobReasonBackoffLimitExceeded {
		t.Fatalf("job status %+v", job.Status)
	}
}

// testNativeSidecar: a regular init container runs to completion, then
// the engine as a native sidecar starts before the app container and stops
// after it.
func testNativeSidecar(t *testing.T, f *fixture) {
	sidecar := engine("engine")
	sidecar.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	sidecar.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: "/healthz", Port: intstr.FromString("http")}}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sidecar", Namespace: ns},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "prepare", Image: "busybox", Command: []string{"mkdir", "-p", "/data/x"}}, sidecar},
			Containers:     []corev1.Container{{Name: "app", Image: "busybox", Command: []string{"sleep", "infinity"}}},
			Volumes:        []corev1.Volume{dataVolume("data-c")},
		},
	}
	create(t, f, claim("data-c"), pod)
	runningReady(t, f, "sidecar")
	if err := f.c.Delete(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	eventually(t, "sidecar pod removed", gone(f, pod))
	evs := events(f, "sidecar")
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%s %s %d", e.Container, e.Type, e.ExitCode))
	}
	want := []string{"prepare Started 0", "prepare Stopped 0", "engine Started 0", "app Started 0", "app Stopped 0", "engine Stopped 0"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") || !evs[3].Simulated || evs[2].Simulated {
		t.Fatalf("history %q, want %q\n%s", got, want, f.k.Logs(ns, "sidecar"))
	}
}

// testSimulatedReadiness: the readiness probe of a simulated container
// passes only when a process of the pod listens where it probes: an app
// probing the engine sidecar's /readyz is ready, one probing a port nobody
// listens on never is, and so the pod is not Ready while its sidecar is.
func testSimulatedReadiness(t *testing.T, f *fixture) {
	sidecar := engine("engine")
	sidecar.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	app := func(name string, h corev1.ProbeHandler) corev1.Container {
		return corev1.Container{Name: name, Image: "busybox", Command: []string{"sleep", "infinity"},
			ReadinessProbe: &corev1.Probe{ProbeHandler: h}}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "unready-app", Namespace: ns},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar},
			Containers: []corev1.Container{
				app("follows", corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8082)}}),
				app("waits", corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9)}}),
				app("execs", corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}),
			},
			Volumes: []corev1.Volume{dataVolume("data-r")},
		},
	}
	create(t, f, claim("data-r"), pod)
	eventually(t, "engine and the apps probing something ready, the other app not", func() error {
		if err := get(f, pod); err != nil {
			return err
		}
		ready := map[string]bool{}
		for _, cs := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
			ready[cs.Name] = cs.Ready
		}
		if !ready["engine"] || !ready["follows"] || !ready["execs"] || ready["waits"] {
			return fmt.Errorf("readiness %v", ready)
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "waits") {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", pod.Status.Conditions)
	})
	if err := f.c.Delete(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod removed", gone(f, pod))
}

// testClaimProtection: a deleted claim keeps its protection finalizer
// while a pod uses it, then loses it and its directory.
func testClaimProtection(t *testing.T, f *fixture) {
	ctx := context.Background()
	pvc := claim("data-b")
	if err := get(f, pvc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(pvc.Finalizers, " "), "kubernetes.io/pvc-protection") {
		t.Fatalf("finalizers %v", pvc.Finalizers)
	}
	if err := f.c.Delete(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // a few passes of the Kubelet
	if err := get(f, pvc); err != nil || pvc.DeletionTimestamp == nil {
		t.Fatalf("claim in use: %v %v", err, pvc.DeletionTimestamp)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "engine-b", Namespace: ns}}
	if err := f.c.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	eventually(t, "claim removed", gone(f, pvc))
	eventually(t, "claim directory deleted", func() error {
		if _, err := os.Stat(f.k.ClaimDir(ns, "data-b")); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("stat: %v", err)
		}
		return nil
	})
}

// testGraceExpiry: a process that ignores SIGTERM gets SIGKILL when the
// grace period runs out; $(VAR) references and emptyDir paths work.
func testGraceExpiry(t *testing.T, f *fixture) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "stubborn", Namespace: ns},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](2),
			Containers: []corev1.Container{{
				Name: "sh", Image: "busybox", Command: []string{"sh", "-c"},
				Args: []string{"trap '' TERM; echo $(GREETING) > /scratch/out; cat /scratch/out; " +
					"echo ip=$POD_IP; while :; do sleep 0.1; done"},
				Env: []corev1.EnvVar{{Name: "GREETING", Value: "hello"},
					{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}},
			}},
			Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	create(t, f, pod)
	runningReady(t, f, "stubborn")
	ip := f.k.PodIP(ns, "stubborn")
	eventually(t, "output", func() error {
		if logs := f.k.Logs(ns, "stubborn"); !strings.Contains(logs, "hello\nip="+ip+"\n") {
			return fmt.Errorf("logs:\n%s", logs)
		}
		return nil
	})
	if err := f.c.Delete(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	eventually(t, "stubborn pod removed", gone(f, pod))
	evs := events(f, "stubborn")
	if last := evs[len(evs)-1]; last.Type != envkubelet.ContainerStopped || last.ExitCode != 137 {
		t.Fatalf("history %+v", evs)
	}
}
