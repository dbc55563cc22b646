package controllers

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	summav1 "github.com/summadev/summa/api/v1"
)

// TestBackupRevisionOnlyWhenConfigured: an index without spec.backup keeps
// the revision it had before backups existed (no restart on upgrade);
// spec.backup.s3 changes it, and schedule and keep do not.
func TestBackupRevisionOnlyWhenConfigured(t *testing.T) {
	x := podTestIndex()
	in := podInputs{image: "img:1", grace: 30}
	rev := revisionOf(x, in)
	if want := revisionFormat + "-"; !strings.HasPrefix(rev, want) {
		t.Fatalf("revision %q", rev)
	}
	y := x.DeepCopy()
	y.Spec.Backup = &summav1.BackupSpec{S3: summav1.S3Spec{Endpoint: "http://s3:9000", Bucket: "b", CredentialsSecret: "c"}}
	if revisionOf(y, in) == rev {
		t.Error("spec.backup.s3 does not change the revision")
	}
	z := y.DeepCopy()
	z.Spec.Backup.Schedule = "@daily"
	if revisionOf(z, in) != revisionOf(y, in) {
		t.Error("spec.backup.schedule changes the revision (the engine does not take it)")
	}
	pod := desiredPod(y, in)
	args := pod.Spec.Containers[0].Args
	for _, want := range []string{"--s3-endpoint=http://s3:9000", "--s3-bucket=b", "--s3-credentials-file=/etc/summa/s3/credentials"} {
		if !slices.Contains(args, want) {
			t.Errorf("engine args %v lack %s", args, want)
		}
	}
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--s3-ca-file") }) {
		t.Error("--s3-ca-file without a caSecret")
	}
	if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Secret != nil && v.Secret.SecretName == y.S3CredentialsSecretName()
	}) {
		t.Errorf("no volume of %s", y.S3CredentialsSecretName())
	}
	if slices.ContainsFunc(desiredPod(x, in).Spec.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--s3-") }) {
		t.Error("--s3-* flags without spec.backup")
	}
}

// TestEngineHasObjectStore: a backup starts only on a leader that runs
// with the object store of spec.backup.s3, as a native sidecar too.
func TestEngineHasObjectStore(t *testing.T) {
	x := podTestIndex()
	in := podInputs{image: "img:1", grace: 30}
	s3 := &summav1.S3Spec{Endpoint: "http://s3:9000", Bucket: "b", CredentialsSecret: "c"}
	if engineHasObjectStore(desiredPod(x, in), s3) {
		t.Error("a pod made before spec.backup has the object store")
	}
	y := x.DeepCopy()
	y.Spec.Backup = &summav1.BackupSpec{S3: *s3}
	if !engineHasObjectStore(desiredPod(y, in), s3) {
		t.Error("the pod of spec.backup lacks its object store")
	}
	other := *s3
	other.Bucket = "elsewhere"
	if engineHasObjectStore(desiredPod(y, in), &other) {
		t.Error("a pod of another bucket has the object store")
	}
	y.Spec.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
	if !engineHasObjectStore(desiredPod(y, in), s3) {
		t.Error("the native sidecar engine lacks its object store")
	}
}

func TestS3PortAndSchedulePeriod(t *testing.T) {
	for ep, want := range map[string]int32{"http://s3:9000": 9000, "https://s3.example.com": 443, "http://s3": 80, "s3:8333": 8333, "[::1]:7480": 7480} {
		if got := s3Port(ep); got != want {
			t.Errorf("s3Port(%q) = %d, want %d", ep, got, want)
		}
	}
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC) // a Saturday
	for spec, want := range map[string]time.Duration{"0 * * * *": time.Hour, "@daily": 24 * time.Hour, "0 3 * * 1-5": 72 * time.Hour} {
		s, err := cron.ParseStandard(spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := schedulePeriod(s, now); got != want {
			t.Errorf("schedulePeriod(%q) = %s, want %s", spec, got, want)
		}
	}
}

func TestObjectStoreJobsNetworkPolicy(t *testing.T) {
	x := podTestIndex()
	x.Spec.Backup = &summav1.BackupSpec{S3: summav1.S3Spec{Endpoint: "http://s3:9000", Bucket: "b", CredentialsSecret: "c"}}
	x.Spec.Restore = &summav1.RestoreSpec{BackupID: "latest", S3: &summav1.S3Spec{Endpoint: "https://other", Bucket: "b", CredentialsSecret: "c"}}
	np := desiredObjectStoreJobsNetworkPolicy(x)
	if len(np.Ingress) != 0 || !slices.Contains(np.PolicyTypes, networkingv1.PolicyTypeIngress) {
		t.Error("the restore and prune Jobs admit ingress")
	}
	var ports []int32
	for _, p := range np.Egress[0].Ports {
		ports = append(ports, p.Port.IntVal)
	}
	if !slices.Equal(ports, []int32{53, 53, 9000, 443}) {
		t.Errorf("egress ports %v, want DNS, 9000 and 443", ports)
	}
	if got := np.PodSelector.MatchExpressions[0].Values; !slices.Equal(got, []string{restoreContainer, pruneContainer}) {
		t.Errorf("selects components %v", got)
	}
}
