package controllers

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	summav1 "github.com/summadev/summa/api/v1"
)

// selects reports whether a label selector matches a label set.
func selects(t *testing.T, sel *metav1.LabelSelector, set map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	return s.Matches(labels.Set(set))
}

func TestEngineNetworkPolicyAdmitsExactlyTheContractPeers(t *testing.T) {
	x := podTestIndex()
	extra := networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.1.0.0/16"}}
	x.Spec.Access.AllowFrom = []networkingv1.NetworkPolicyPeer{extra}
	spec := desiredNetworkPolicy(x, "summa-system")

	pod := desiredPod(x, podInputs{image: "img:1", grace: 30, access: testAccess()})
	if !selects(t, &spec.PodSelector, pod.Labels) {
		t.Errorf("the policy does not select the engine pod (%v)", pod.Labels)
	}
	job := (&SummaIndexReconciler{}).doctorJob(withDoctor(x))
	if selects(t, &spec.PodSelector, job.Spec.Template.Labels) {
		t.Error("the engine policy selects the doctor Job's pod")
	}
	if len(spec.PolicyTypes) != 1 || spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
		t.Errorf("policy types %v: egress of the pod (and its app containers) must be left alone", spec.PolicyTypes)
	}
	if len(spec.Ingress) != 1 {
		t.Fatalf("ingress rules %+v", spec.Ingress)
	}
	rule := spec.Ingress[0]
	if len(rule.Ports) != 1 || rule.Ports[0].Port.IntValue() != EnginePort || string(*rule.Ports[0].Protocol) != "TCP" {
		t.Errorf("ports %+v", rule.Ports)
	}
	if len(rule.From) != 3 {
		t.Fatalf("peers %+v", rule.From)
	}
	operator := rule.From[0]
	if !selects(t, operator.NamespaceSelector, map[string]string{"kubernetes.io/metadata.name": "summa-system"}) ||
		selects(t, operator.NamespaceSelector, map[string]string{"kubernetes.io/metadata.name": "ns"}) ||
		!selects(t, operator.PodSelector, map[string]string{"app.kubernetes.io/name": "summa-operator"}) ||
		selects(t, operator.PodSelector, map[string]string{"app.kubernetes.io/name": "other"}) {
		t.Errorf("operator peer %+v", operator)
	}
	client := rule.From[1]
	if client.NamespaceSelector != nil || !selects(t, client.PodSelector, map[string]string{summav1.LabelClient: "articles"}) ||
		selects(t, client.PodSelector, map[string]string{summav1.LabelClient: "other"}) || selects(t, client.PodSelector, nil) {
		t.Errorf("client peer %+v: pods of the index's namespace labelled summa.dev/client=articles only", client)
	}
	if rule.From[2].IPBlock == nil || rule.From[2].IPBlock.CIDR != "10.1.0.0/16" {
		t.Errorf("allowFrom peer %+v", rule.From[2])
	}
}

func TestWithoutAnOperatorNamespaceNoOperatorPodIsAdmitted(t *testing.T) {
	spec := desiredNetworkPolicy(podTestIndex(), "")
	for _, p := range spec.Ingress[0].From {
		if p.NamespaceSelector != nil {
			t.Errorf("peer %+v admits another namespace", p)
		}
	}
}

func TestJobsNetworkPolicyCutsTheJobsOff(t *testing.T) {
	x := withDoctor(podTestIndex())
	spec := desiredJobsNetworkPolicy(x)
	r := &SummaIndexReconciler{}
	for _, job := range []string{"doctor", "backup"} {
		j := r.doctorJob(x)
		if job == "backup" {
			x.Status.Doctor.BackupClaimName = x.BackupClaimName("r1")
			j = r.backupJob(x)
		}
		if !selects(t, &spec.PodSelector, j.Spec.Template.Labels) {
			t.Errorf("the %s Job's pod (%v) is not selected", job, j.Spec.Template.Labels)
		}
		ps := j.Spec.Template.Spec
		if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken || ps.EnableServiceLinks == nil || *ps.EnableServiceLinks {
			t.Errorf("the %s Job's pod gets a token or service links", job)
		}
	}
	if selects(t, &spec.PodSelector, desiredPod(x, podInputs{image: "img:1", grace: 30}).Labels) {
		t.Error("the Jobs' policy selects the engine pod")
	}
	if len(spec.PolicyTypes) != 2 || len(spec.Ingress) != 0 || len(spec.Egress) != 0 {
		t.Errorf("policy %+v: want Ingress and Egress with no rule", spec)
	}
}

// withDoctor gives x a doctor run r1.
func withDoctor(x *summav1.SummaIndex) *summav1.SummaIndex {
	x.Status.Doctor = &summav1.DoctorStatus{RequestID: "r1"}
	return x
}
