package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// netprobeReport is what test/e2e/netprobe prints.
type netprobeReport struct {
	Lookup     string   `json:"lookup"`
	Addresses  []string `json:"addresses"`
	TotalHits  int      `json:"totalHits"`
	IDs        []string `json:"ids"`
	GitVersion string   `json:"gitVersion"`
}

var _ = Describe("Cluster networking", func() {
	It("14. a pod resolves an engine's Service name, searches it through the ClusterIP with the index's CA and read token, and reaches the API server through the kubernetes Service", func() {
		img := os.Getenv("SUMMA_E2E_NETPROBE_IMG")
		if img == "" {
			Expect(mode).NotTo(Equal("local"), "make e2e sets SUMMA_E2E_NETPROBE_IMG")
			Skip("SUMMA_E2E_NETPROBE_IMG is not set (the probe image is built for the local cluster)")
		}
		const name = "e2e-net"
		createReady(name, nil)
		ingest(name, 0, 20)
		commit(name)
		x := getIndex(name)
		Expect(x.Status.Access).NotTo(BeNil())
		Expect(x.Status.Access.TLSSecret).NotTo(BeEmpty(), "the spec searches over HTTPS")
		svc := &corev1.Service{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: x.ServiceName()}, svc)).To(Succeed())
		Expect(svc.Spec.ClusterIP).NotTo(BeEmpty())
		Expect(svc.Spec.ClusterIP).NotTo(Equal(corev1.ClusterIPNone))

		start := time.Now()
		pod := netprobePod(x, img)
		Expect(k8s.Create(ctx, pod)).To(Succeed())
		DeferCleanup(func() { _ = k8s.Delete(ctx, pod) })
		Eventually(func(g Gomega) {
			p := &corev1.Pod{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pod), p)).To(Succeed())
			if p.Status.Phase == corev1.PodFailed {
				logs, _ := kubectlOut("-n", testNamespace, "logs", pod.Name)
				StopTrying("the probe pod failed; its logs:\n" + logs).Now()
			}
			g.Expect(p.Status.Phase).To(Equal(corev1.PodSucceeded))
		}).WithTimeout(4 * time.Minute).WithPolling(poll).Should(Succeed())
		figure("network probe pod (DNS, search through the ClusterIP, API through the kubernetes Service): %.1fs", time.Since(start).Seconds())

		out, err := kubectlOut("-n", testNamespace, "logs", pod.Name)
		Expect(err).NotTo(HaveOccurred(), out)
		var r netprobeReport
		line := strings.TrimSpace(out)
		Expect(json.Unmarshal([]byte(line[strings.LastIndex(line, "\n")+1:]), &r)).To(Succeed(), out)
		By("the Service name resolved to the ClusterIP with the pod's DNS")
		Expect(r.Addresses).To(ConsistOf(svc.Spec.ClusterIP))
		By("the search through the ClusterIP found every committed document")
		Expect(r.TotalHits).To(Equal(20))
		Expect(r.IDs).To(HaveLen(10))
		for _, id := range r.IDs {
			Expect(id).To(HavePrefix("d0000"))
		}
		By("the kubernetes Service reached the API server")
		Expect(r.GitVersion).To(HavePrefix("v1."))

		Expect(k8s.Delete(ctx, x)).To(Succeed())
	})
})

// netprobePod runs test/e2e/netprobe against x's engine: the Service's full
// name, the CA of status.access.tlsSecret and the read token of
// status.access.credentialsSecret, mounted as a client of the index would
// mount them (labelled as a client, which the engine's NetworkPolicy admits).
func netprobePod(x *summav1.SummaIndex, img string) *corev1.Pod {
	host := x.ServiceHost()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: x.Name + "-netprobe", Namespace: x.Namespace,
			Labels: map[string]string{summav1.LabelClient: x.Name},
		},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: "netprobe", Image: img, ImagePullPolicy: corev1.PullIfNotPresent,
				Args: []string{"-lookup", host + ".cluster.local", "-engine", "https://" + host + ":8082",
					"-index", x.Name, "-query", "tag:all", "-ca", "/ca/" + summav1.CACertKey,
					"-token-file", "/creds/" + summav1.ReadTokenKey},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "ca", MountPath: "/ca", ReadOnly: true},
					{Name: "creds", MountPath: "/creds", ReadOnly: true},
				},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: x.Status.Access.TLSSecret, Items: []corev1.KeyToPath{{Key: summav1.CACertKey, Path: summav1.CACertKey}}}}},
				{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: x.Status.Access.CredentialsSecret, Items: []corev1.KeyToPath{{Key: summav1.ReadTokenKey, Path: summav1.ReadTokenKey}}}}},
			},
		},
	}
}
