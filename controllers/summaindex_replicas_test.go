package controllers

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	summav1 "github.com/summadev/summa/api/v1"
	"github.com/summadev/summa/client"
)

// replicaInputs are pod inputs with TLS and credentials.
func replicaInputs() podInputs {
	return podInputs{image: "summa-server:1", grace: 30,
		access: access{known: true, credentialsSecret: "articles-credentials", tlsSecret: "articles-tls", caPresent: true, hash: "h"}}
}

func TestFollowerRunsFollowAgainstTheLeaderServiceOnItsOwnVolume(t *testing.T) {
	x := podTestIndex()
	x.Spec.Replicas = ptr.To[int32](2)
	in := replicaInputs()
	leader, f := desiredPod(x, in), desiredFollower(x, in, 2)
	if f.Name != "articles-r2" || f.Annotations[AnnotationRevision] != leader.Annotations[AnnotationRevision] {
		t.Fatalf("follower %s revision %s, leader revision %s", f.Name, f.Annotations[AnnotationRevision], leader.Annotations[AnnotationRevision])
	}
	if leader.Labels[summav1.LabelRole] != summav1.RoleLeader || f.Labels[summav1.LabelRole] != summav1.RoleFollower ||
		f.Labels[LabelComponent] != ComponentFollower || f.Labels[summav1.LabelServing] != "true" || leader.Labels[summav1.LabelServing] != "true" {
		t.Errorf("labels: leader %v, follower %v", leader.Labels, f.Labels)
	}
	if selects(t, toSelector(engineLabels(x)), f.Labels) {
		t.Error("the leader's Service selects a follower")
	}
	args := f.Spec.Containers[0].Args
	for _, want := range []string{"--follow=https://articles.ns.svc:8082", "--follow-token-file=/etc/summa/credentials/read-token",
		"--follow-ca-file=/etc/summa/tls/ca.crt", "--read-token-file=/etc/summa/credentials/read-token"} {
		if !slices.Contains(args, want) {
			t.Errorf("follower args %v lack %s", args, want)
		}
	}
	if slices.ContainsFunc(leader.Spec.Containers[0].Args, func(a string) bool { return a == "--follow=https://articles.ns.svc:8082" }) {
		t.Error("the leader follows")
	}
	var claim string
	var caMounted bool
	for _, v := range f.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
		if v.Name == tlsVolumeName {
			caMounted = slices.ContainsFunc(v.Secret.Items, func(i corev1.KeyToPath) bool { return i.Key == summav1.CACertKey })
		}
	}
	if claim != "articles-r2-data" || !caMounted {
		t.Errorf("claim %q, ca.crt mounted %v", claim, caMounted)
	}
	for _, v := range leader.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName != "articles-data" {
			t.Errorf("desiredFollower changed the leader's volume: %s", v.PersistentVolumeClaim.ClaimName)
		}
	}
	aa := f.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	if len(aa) != 1 || aa[0].PodAffinityTerm.TopologyKey != "kubernetes.io/hostname" || !selects(t, aa[0].PodAffinityTerm.LabelSelector, leader.Labels) {
		t.Errorf("anti-affinity %+v", aa)
	}

	mine := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}}
	x.Spec.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Affinity: mine}}
	if f := desiredFollower(x, in, 1); len(f.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 0 {
		t.Error("spec.podTemplate's anti-affinity was overridden")
	}
}

func TestFollowerWithoutTLSFollowsOverHTTPWithoutCA(t *testing.T) {
	x := podTestIndex()
	in := replicaInputs()
	in.access.tlsSecret, in.access.caPresent = "", false
	args := desiredFollower(x, in, 1).Spec.Containers[0].Args
	if !slices.Contains(args, "--follow=http://articles.ns.svc:8082") || slices.ContainsFunc(args, func(a string) bool { return a == "--follow-ca-file="+followCAFile }) {
		t.Errorf("args %v", args)
	}
}

func TestNetworkPolicyWithFollowersCoversThemAndAdmitsThemToTheLeader(t *testing.T) {
	x := podTestIndex()
	x.Spec.Replicas = ptr.To[int32](1)
	in := replicaInputs()
	leader, f := desiredPod(x, in), desiredFollower(x, in, 1)
	spec := desiredNetworkPolicy(x, "summa-system")
	if !selects(t, &spec.PodSelector, leader.Labels) || !selects(t, &spec.PodSelector, f.Labels) {
		t.Errorf("selector %+v", spec.PodSelector)
	}
	admitted := false
	for _, p := range spec.Ingress[0].From {
		if p.NamespaceSelector == nil && p.PodSelector != nil && selects(t, p.PodSelector, f.Labels) {
			admitted = true
		}
	}
	if !admitted {
		t.Error("followers cannot reach the leader")
	}
}

func TestCaughtUp(t *testing.T) {
	st := func(state string, gen, leaderGen uint64, lag float64) *client.IndexStatus {
		return &client.IndexStatus{Generation: gen,
			Replication: &client.ReplicationStatus{State: state, LeaderGeneration: leaderGen, LagSeconds: lag}}
	}
	for _, c := range []struct {
		st   *client.IndexStatus
		want bool
	}{
		{nil, false}, {&client.IndexStatus{Generation: 3}, false},
		{st("following", 5, 5, 30), true}, {st("following", 4, 5, 1), true}, {st("following", 4, 5, 60), false},
		{st("catchingUp", 5, 5, 0), false}, {st("disconnected", 5, 5, 0), false},
	} {
		if got := caughtUp(c.st); got != c.want {
			t.Errorf("%+v: %v", c.st, got)
		}
	}
}

// toSelector is a label selector of exactly m.
func toSelector(m map[string]string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: m}
}

func TestBackForDoctor(t *testing.T) {
	now := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	r := &SummaIndexReconciler{Options: Options{Now: func() time.Time { return now }}}
	x := podTestIndex()
	x.Spec.Replicas = ptr.To[int32](1)
	x.Spec.Doctor.RequestID = "d2"
	pod := func(request string, ready bool, age time.Duration) *corev1.Pod {
		p := desiredFollower(x, replicaInputs(), 1)
		p.Annotations[AnnotationDoctorRequest] = request
		p.CreationTimestamp = metav1.NewTime(now.Add(-age))
		p.Status.PodIP = "10.0.0.9"
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: EngineContainerName, Ready: ready,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		return p
	}
	st := &client.IndexStatus{Replication: &client.ReplicationStatus{State: "catchingUp"}}
	for _, c := range []struct {
		name       string
		fl         follower
		back, late bool
	}{
		{"made for the run, ready, answering, not caught up", follower{pod: pod("d2", true, time.Minute), st: st}, true, false},
		{"made for an earlier run", follower{pod: pod("d1", true, time.Hour), st: st}, false, false},
		{"made for the run, starting", follower{pod: pod("d2", false, time.Minute)}, false, false},
		{"made for the run, not back after the start timeout", follower{pod: pod("d2", false, 6*time.Minute)}, false, true},
		{"ready but not answering yet", follower{pod: pod("d2", true, time.Minute)}, false, false},
		{"no pod", follower{}, false, false},
	} {
		back, late := r.backForDoctor(x, c.fl)
		if back != c.back || late != c.late {
			t.Errorf("%s: back %v late %v, want %v %v", c.name, back, late, c.back, c.late)
		}
	}
	if got := desiredFollower(x, replicaInputs(), 1).Annotations[AnnotationDoctorRequest]; got != "d2" {
		t.Errorf("a follower made now carries doctor request %q, want d2", got)
	}
}

func TestFollowerHoldsNoObjectStoreCredentials(t *testing.T) {
	x := podTestIndex()
	x.Spec.Replicas = ptr.To[int32](1)
	x.Spec.Backup = &summav1.BackupSpec{S3: summav1.S3Spec{Endpoint: "https://s3.example.com:9000", Bucket: "summa",
		CredentialsSecret: "s3", CASecret: "s3-ca"}}
	in := replicaInputs()
	count := func(p *corev1.Pod) (args, volumes, mounts int) {
		for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
			for _, a := range c.Args {
				if strings.HasPrefix(a, "--s3-") {
					args++
				}
			}
			for _, m := range c.VolumeMounts {
				if m.Name == s3CredentialsVolumeName || m.Name == s3CAVolumeName {
					mounts++
				}
			}
		}
		for _, v := range p.Spec.Volumes {
			if v.Name == s3CredentialsVolumeName || v.Name == s3CAVolumeName {
				volumes++
			}
		}
		return args, volumes, mounts
	}
	if a, v, m := count(desiredPod(x, in)); a == 0 || v != 2 || m != 2 {
		t.Fatalf("the leader has %d --s3 flags, %d object store volumes, %d mounts; want some, 2, 2", a, v, m)
	}
	if a, v, m := count(desiredFollower(x, in, 1)); a+v+m != 0 {
		t.Errorf("a follower has %d --s3 flags, %d object store volumes, %d mounts; want none", a, v, m)
	}
}
