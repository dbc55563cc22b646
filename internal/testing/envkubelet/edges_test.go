package envkubelet_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/summadev/summa/internal/testing/envkubelet"
)

// shPod is a pod running the shell script in a container "sh", with an
// emptyDir at /scratch.
func shPod(name string, policy corev1.RestartPolicy, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: policy,
			Containers: []corev1.Container{{Name: "sh", Image: "busybox", Command: []string{"sh", "-c", script},
				VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}}},
			Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
}

// podPhase waits for the pod's phase and returns the pod.
func podPhase(t *testing.T, f *fixture, name string, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	eventually(t, "pod "+name+" "+string(phase), func() error {
		if err := get(f, pod); err != nil {
			return err
		}
		if pod.Status.Phase != phase {
			return fmt.Errorf("phase %q, status %+v\n%s", pod.Status.Phase, pod.Status, f.k.Logs(ns, name))
		}
		return nil
	})
	return pod
}

// testRestartPolicies: an Always container that keeps failing restarts
// with its termination message in lastState; an OnFailure container
// restarts until it succeeds; a failed init container fails a Never pod.
func testRestartPolicies(t *testing.T, f *fixture) {
	ctx := context.Background()
	crashy := shPod("crashy", corev1.RestartPolicyAlways, "echo boom > /dev/termination-log; exit 3")
	retry := shPod("retry", corev1.RestartPolicyOnFailure,
		"test -e /scratch/again && exit 0; touch /scratch/again; exit 1")
	initFails := shPod("init-fails", corev1.RestartPolicyNever, "sleep 1000")
	initFails.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", Command: []string{"sh", "-c", "exit 4"}}}
	create(t, f, crashy, retry, initFails)

	eventually(t, "crashy restarted twice", func() error {
		if err := get(f, crashy); err != nil {
			return err
		}
		if len(crashy.Status.ContainerStatuses) != 1 {
			return fmt.Errorf("status %+v", crashy.Status)
		}
		cs := crashy.Status.ContainerStatuses[0]
		last := cs.LastTerminationState.Terminated
		if cs.RestartCount < 2 || last == nil || last.ExitCode != 3 || last.Message != "boom\n" ||
			crashy.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase %s, container status %+v", crashy.Status.Phase, cs)
		}
		return nil
	})

	pod := podPhase(t, f, "retry", corev1.PodSucceeded)
	if cs := pod.Status.ContainerStatuses[0]; cs.RestartCount != 1 || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
		t.Fatalf("retry: %+v", cs)
	}

	pod = podPhase(t, f, "init-fails", corev1.PodFailed)
	ics := pod.Status.InitContainerStatuses[0]
	if ics.State.Terminated == nil || ics.State.Terminated.ExitCode != 4 || ics.RestartCount != 0 {
		t.Fatalf("init container: %+v", ics)
	}
	for _, e := range events(f, "init-fails") {
		if e.Container == "sh" {
			t.Fatalf("the app container ran after a failed init container: %+v", e)
		}
	}

	for _, p := range []*corev1.Pod{crashy, retry, initFails} {
		if err := f.c.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
		eventually(t, p.Name+" removed", gone(f, p))
	}
}

// sleeperJob is a Job whose pod sleeps.
func sleeperJob(name string) *batchv1.Job {
	pod := shPod("", corev1.RestartPolicyNever, "sleep 1000")
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{
			BackoffLimit: new(int32),
			Template:     corev1.PodTemplateSpec{Spec: pod.Spec},
		},
	}
}

// runningJobPod waits for the Job's pod to be Running and returns it.
func runningJobPod(t *testing.T, f *fixture, job *batchv1.Job) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, "pod of job "+job.Name+" running", func() error {
		var pods corev1.PodList
		if err := f.c.List(context.Background(), &pods, client.InNamespace(ns),
			client.MatchingLabels{batchv1.ControllerUidLabel: string(job.UID)}); err != nil {
			return err
		}
		if len(pods.Items) != 1 || pods.Items[0].Status.Phase != corev1.PodRunning {
			return fmt.Errorf("pods %d", len(pods.Items))
		}
		pod = &pods.Items[0]
		return nil
	})
	return pod
}

// testJobPodDeleted: a Job whose running pod is deleted fails; a Job
// deleted in the foreground goes once its pod is gone.
func testJobPodDeleted(t *testing.T, f *fixture) {
	ctx := context.Background()
	lost, fg := sleeperJob("lost"), sleeperJob("foreground")
	create(t, f, lost, fg)
	pod := runningJobPod(t, f, lost)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "lost", Namespace: ns}}
	eventually(t, "job active", func() error {
		if err := get(f, job); err != nil || job.Status.Active != 1 || job.Status.StartTime == nil {
			return fmt.Errorf("%v %+v", err, job.Status)
		}
		return nil
	})
	if err := f.c.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	job = jobCondition(t, f, "lost", batchv1.JobFailed)
	if !hasConditions(job, batchv1.JobFailureTarget, batchv1.JobFailed) || job.Status.Failed != 1 {
		t.Fatalf("job status %+v", job.Status)
	}
	eventually(t, "pod of job lost removed", gone(f, pod))

	pod = runningJobPod(t, f, fg)
	if err := f.c.Delete(ctx, fg, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod of the job deleted in the foreground removed", gone(f, pod))
	eventually(t, "job deleted in the foreground removed", gone(f, fg))
}

// testMissingClaim: a pod waits for its claim before it starts.
func testMissingClaim(t *testing.T, f *fixture) {
	pod := serverPod("late", "late-data")
	create(t, f, pod)
	time.Sleep(time.Second) // a few passes of the Kubelet
	if err := get(f, pod); err != nil || pod.Status.Phase != corev1.PodPending || pod.Status.PodIP != "" ||
		f.k.PodIP(ns, "late") != "" || pod.Spec.NodeName == "" {
		t.Fatalf("pod without its claim: %v node %q status %+v", err, pod.Spec.NodeName, pod.Status)
	}
	create(t, f, claim("late-data"))
	runningReady(t, f, "late")
	if err := f.c.Delete(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	eventually(t, "late removed", gone(f, pod))
}

// testGarbageCollector: dependents of a deleted owner are deleted; a Job
// deleted in the background takes its pod along; a Job deleted with the
// default (orphan) policy goes and leaves its pod.
func testGarbageCollector(t *testing.T, f *fixture) {
	ctx := context.Background()
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns}}
	create(t, f, owner)
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "owned", Namespace: ns, OwnerReferences: []metav1.OwnerReference{ref}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 8082}}},
	}
	create(t, f, svc)
	time.Sleep(time.Second)
	if err := get(f, svc); err != nil {
		t.Fatalf("service with a live owner: %v", err)
	}
	if err := f.c.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	eventually(t, "owned service collected", gone(f, svc))

	background, orphaned := doctorJob("doctor-bg", "data-a"), doctorJob("doctor-orphan", "data-a")
	create(t, f, background)
	bgPod := jobPod(t, f, background)
	create(t, f, orphaned)
	orphanPod := jobPod(t, f, orphaned)
	if err := f.c.Delete(ctx, background, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod of the job deleted in the background collected", gone(f, bgPod))
	if err := f.c.Delete(ctx, orphaned); err != nil {
		t.Fatal(err)
	}
	eventually(t, "job deleted with the orphan policy removed", gone(f, orphaned))
	if err := get(f, orphanPod); err != nil || len(orphanPod.OwnerReferences) != 0 {
		t.Fatalf("orphaned pod: %v %+v", err, orphanPod.OwnerReferences)
	}
}

// testImagePullFailures: a container of an image under UnpullableRegistry
// waits with ErrImagePull, then ImagePullBackOff, and never runs; an
// invalid image name is InvalidImageName; the pod stays Pending, its
// other containers wait, and it is deleted as any other.
func testImagePullFailures(t *testing.T, f *fixture) {
	ctx := context.Background()
	waiting := func(pod *corev1.Pod, reasons ...string) func() error {
		return func() error {
			if err := get(f, pod); err != nil {
				return err
			}
			var got []string
			for _, cs := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
				if cs.State.Waiting != nil {
					got = append(got, cs.State.Waiting.Reason)
				}
			}
			if pod.Status.Phase != corev1.PodPending || fmt.Sprint(got) != fmt.Sprint(reasons) {
				return fmt.Errorf("phase %s, waiting %v, want %v", pod.Status.Phase, got, reasons)
			}
			return nil
		}
	}
	pull := shPod("unpullable", corev1.RestartPolicyNever, "exit 0")
	pull.Spec.InitContainers = []corev1.Container{{Name: "first", Image: envkubelet.UnpullableRegistry + "tools:v1",
		Command: []string{"sh", "-c", "exit 0"}}}
	create(t, f, pull)
	eventually(t, "ErrImagePull", waiting(pull, "ErrImagePull", "PodInitializing"))
	eventually(t, "ImagePullBackOff", waiting(pull, "ImagePullBackOff", "PodInitializing"))
	for _, e := range f.k.History() {
		if e.Pod == "unpullable" {
			t.Fatalf("a container of an unpulled image ran: %+v", e)
		}
	}
	invalid := shPod("invalid-image", corev1.RestartPolicyNever, "exit 0")
	invalid.Spec.Containers[0].Image = "Busybox:latest"
	create(t, f, invalid)
	eventually(t, "InvalidImageName", waiting(invalid, "InvalidImageName"))
	for _, pod := range []*corev1.Pod{pull, invalid} {
		if err := f.c.Delete(ctx, pod); err != nil {
			t.Fatal(err)
		}
		eventually(t, pod.Name+" removed", gone(f, pod))
	}
}
