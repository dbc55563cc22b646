package v1

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The name policy: the CRD refuses a SummaIndex whose name is not a
// DNS-1035 label of at most 63 characters (it names the Service), and
// every name derived from it must then be valid for its kind, also at the
// limits: the longest index name, the longest doctor requestId (a DNS
// label of 63) and the longest namespace.
func TestDerivedNamesAreValidAtTheLengthLimits(t *testing.T) {
	longest := "a" + strings.Repeat("b", 61) + "9" // 63, a DNS-1035 label
	for _, name := range []string{"a", "articles", longest} {
		for _, requestID := range []string{"r", "r1", strings.Repeat("7", 63)} {
			x := &SummaIndex{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: strings.Repeat("n", 63)}}
			check := func(what, value string, errs []string) {
				t.Helper()
				if len(errs) > 0 {
					t.Errorf("name %d chars, requestId %d chars: %s %q: %s", len(name), len(requestID), what, value, strings.Join(errs, "; "))
				}
			}
			check("Service", x.ServiceName(), validation.IsDNS1035Label(x.ServiceName()))
			check("NetworkPolicy", x.NetworkPolicyName(), validation.IsDNS1123Subdomain(x.NetworkPolicyName()))
			check("jobs NetworkPolicy", x.JobsNetworkPolicyName(), validation.IsDNS1123Subdomain(x.JobsNetworkPolicyName()))
			check("data volume", x.DataClaimName(), validation.IsDNS1123Subdomain(x.DataClaimName()))
			check("backup volume", x.BackupClaimName(requestID), validation.IsDNS1123Subdomain(x.BackupClaimName(requestID)))
			check("engine pod", x.EnginePodName(), validation.IsDNS1123Subdomain(x.EnginePodName()))
			check("credentials Secret", x.GeneratedCredentialsSecretName(), validation.IsDNS1123Subdomain(x.GeneratedCredentialsSecretName()))
			check("TLS Secret", x.IssuedTLSSecretName(), validation.IsDNS1123Subdomain(x.IssuedTLSSecretName()))
			for _, sec := range []string{x.S3CredentialsSecretName(), x.RestoreS3CredentialsSecretName(), x.ObjectStoreJobsNetworkPolicyName()} {
				check("object store Secret or NetworkPolicy", sec, validation.IsDNS1123Subdomain(sec))
			}
			for _, job := range []string{x.DoctorJobName(requestID), x.BackupJobName(requestID), x.RestoreJobName(), x.BackupPruneJobName()} {
				// A Job's name becomes the job-name label of its pods.
				check("Job", job, validation.IsDNS1123Label(job))
				check("job-name label", job, validation.IsValidLabelValue(job))
			}
			for k, v := range x.Labels() {
				check("label "+k, v, validation.IsValidLabelValue(v))
			}
			check("summa.dev/client label", x.Name, validation.IsValidLabelValue(x.Name))
			for _, dns := range append(x.ServiceDNSNames("cluster.local"), x.ReadServiceDNSNames("cluster.local")...) {
				check("certificate name", dns, validation.IsDNS1123Subdomain(dns))
			}
			if x.HasReadService() {
				check("read Service", x.ReadServiceName(), validation.IsDNS1035Label(x.ReadServiceName()))
			} else if len(name) <= 58 {
				t.Errorf("name %d chars has no read Service", len(name))
			}
			for _, k := range []int{1, MaxReplicas} {
				check("follower pod", x.FollowerPodName(k), validation.IsDNS1123Subdomain(x.FollowerPodName(k)))
				check("follower volume", x.FollowerClaimName(k), validation.IsDNS1123Subdomain(x.FollowerClaimName(k)))
			}
			check("PodDisruptionBudget", x.PodDisruptionBudgetName(), validation.IsDNS1123Subdomain(x.PodDisruptionBudgetName()))
		}
	}
}

func TestNetworkPolicyNamesOfTwoIndexesNeverCollide(t *testing.T) {
	a := &SummaIndex{ObjectMeta: metav1.ObjectMeta{Name: "foo"}}
	b := &SummaIndex{ObjectMeta: metav1.ObjectMeta{Name: "foo-jobs"}}
	names := map[string]bool{a.NetworkPolicyName(): true, a.JobsNetworkPolicyName(): true}
	if names[b.NetworkPolicyName()] || names[b.JobsNetworkPolicyName()] || len(names) != 2 {
		t.Fatalf("policies %v and %s, %s", names, b.NetworkPolicyName(), b.JobsNetworkPolicyName())
	}
	if len(validation.IsDNS1035Label(a.JobsNetworkPolicyName())) == 0 {
		t.Fatalf("%q could be the name of an index", a.JobsNetworkPolicyName())
	}
}

func TestJobNamesOfDifferentRequestsDifferAtTheLimit(t *testing.T) {
	x := &SummaIndex{ObjectMeta: metav1.ObjectMeta{Name: "a" + strings.Repeat("b", 62)}}
	a, b := x.BackupJobName(strings.Repeat("1", 63)), x.BackupJobName(strings.Repeat("1", 62)+"2")
	if a == b || x.DoctorJobName("x") == x.BackupJobName("x") {
		t.Fatalf("Job names collide: %q", a)
	}
}

func TestAccessNamesAndDefaults(t *testing.T) {
	x := &SummaIndex{ObjectMeta: metav1.ObjectMeta{Name: "articles", Namespace: "ns"}}
	if x.CredentialsSecretName() != "articles-credentials" || !x.GeneratesCredentials() {
		t.Errorf("credentials secret %q", x.CredentialsSecretName())
	}
	if !x.TLSEnabled() || !x.IssuesCertificate() || x.TLSSecretName() != "articles-tls" {
		t.Errorf("TLS by default: enabled %v, issued %v, secret %q", x.TLSEnabled(), x.IssuesCertificate(), x.TLSSecretName())
	}
	if !x.NetworkPolicyEnabled() {
		t.Error("the NetworkPolicy is not on by default")
	}
	want := []string{"articles", "articles.ns", "articles.ns.svc", "articles.ns.svc.cluster.local"}
	if got := x.ServiceDNSNames("cluster.local"); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("DNS names %v", got)
	}
	x.Spec.Access = AccessSpec{CredentialsSecret: "mine", TLS: TLSSpec{SecretName: "cert-manager-made"}, NetworkPolicy: NetworkPolicyDisabled}
	if x.CredentialsSecretName() != "mine" || x.GeneratesCredentials() || x.IssuesCertificate() ||
		x.TLSSecretName() != "cert-manager-made" || x.NetworkPolicyEnabled() {
		t.Errorf("user-provided access: %+v", x.Spec.Access)
	}
	x.Spec.Access.TLS = TLSSpec{Mode: TLSDisabled}
	if x.TLSEnabled() || x.TLSSecretName() != "" {
		t.Error("TLS disabled still names a Secret")
	}
}

func TestFollowerNamesParseBack(t *testing.T) {
	x := &SummaIndex{ObjectMeta: metav1.ObjectMeta{Name: "a-r1", Namespace: "ns"}}
	for k := 1; k <= MaxReplicas; k++ {
		if got := x.FollowerIndex(x.FollowerPodName(k)); got != k {
			t.Errorf("pod of %d parses as %d", k, got)
		}
		if got := x.FollowerIndex(x.FollowerClaimName(k)); got != k {
			t.Errorf("volume of %d parses as %d", k, got)
		}
	}
	for _, n := range []string{"a-r1", "a-r1-engine", "a-r1-r0", "a-r1-r01", "a-r1-rx", "a-r1-r", "a-r1-data", "b-r1-r1"} {
		if k := x.FollowerIndex(n); k != 0 {
			t.Errorf("%s parses as follower %d", n, k)
		}
	}
}
