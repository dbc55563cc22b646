package e2e

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// newToken is 32 random bytes, base64url, like the operator's.
func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// rawStatus sends GET path to the engine pod of name with the engine's CA
// and the given bearer token ("" for none) and returns the status.
func rawStatus(name, path, token string) (int, error) {
	c := engine(name) // for its address, scheme and CA
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL()+path, nil)
	if err != nil {
		return 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.HTTPClient().Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

var _ = Describe("Access control on a real kubelet", func() {
	It("10. refuses requests without a token, rotates the admin token without a restart, and keeps the policy", func() {
		createReady("e2e-access", nil)
		ingest("e2e-access", 0, 100)
		commit("e2e-access")
		pod, err := enginePod("e2e-access")
		Expect(err).NotTo(HaveOccurred())
		uid := pod.UID

		By("refusing a request without a token and one of too low a scope")
		Expect(rawStatus("e2e-access", "/v1/indexes/e2e-access", "")).To(Equal(http.StatusUnauthorized))
		Expect(rawStatus("e2e-access", "/healthz", "")).To(Equal(http.StatusOK))
		x := getIndex("e2e-access")
		creds := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: x.Status.Access.CredentialsSecret}, creds)).To(Succeed())
		readToken := strings.TrimSpace(string(creds.Data[summav1.ReadTokenKey]))
		Expect(rawStatus("e2e-access", "/v1/indexes/e2e-access", readToken)).To(Equal(http.StatusOK))
		Expect(rawStatus("e2e-access", "/v1/admin/lifecycle", readToken)).To(Equal(http.StatusForbidden))
		if mode != "kind" {
			plain := &http.Client{Timeout: 10 * time.Second}
			resp, err := plain.Get("http://" + pod.Status.PodIP + ":8082/v1/indexes")
			if err == nil {
				resp.Body.Close()
				Expect(resp.StatusCode).To(BeNumerically(">=", 300), "plain HTTP to the TLS port")
			}
		}

		By("rotating the admin token in the Secret")
		oldAdmin := strings.TrimSpace(string(creds.Data[summav1.AdminTokenKey]))
		newAdmin := newToken()
		creds.Data[summav1.AdminTokenKey] = []byte(newAdmin)
		start := time.Now()
		Expect(k8s.Update(ctx, creds)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(rawStatus("e2e-access", "/v1/admin/lifecycle", newAdmin)).To(Equal(http.StatusOK))
			g.Expect(rawStatus("e2e-access", "/v1/admin/lifecycle", oldAdmin)).To(Equal(http.StatusUnauthorized))
		}).WithTimeout(2 * time.Minute).WithPolling(poll).Should(Succeed())
		figure("admin token rotation -> only the new token works: %.1fs (contract: within a minute)", time.Since(start).Seconds())
		pod, err = enginePod("e2e-access")
		Expect(err).NotTo(HaveOccurred())
		Expect(pod.UID).To(Equal(uid), "the rotation restarted the engine pod")
		// The operator follows: status stays current with the new token.
		ingest("e2e-access", 100, 150)
		commit("e2e-access")
		Eventually(func() int64 { return getIndex("e2e-access").Status.Documents }).
			WithTimeout(2 * time.Minute).WithPolling(poll).Should(BeEquivalentTo(150))

		By("keeping a NetworkPolicy that admits the operator, labelled clients and nothing else")
		np := &networkingv1.NetworkPolicy{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "e2e-access"}, np)).To(Succeed())
		Expect(np.Spec.Ingress).To(HaveLen(1))
		var clientLabels, operatorLabels bool
		for _, peer := range np.Spec.Ingress[0].From {
			if peer.PodSelector != nil && peer.PodSelector.MatchLabels["summa.dev/client"] == "e2e-access" {
				clientLabels = true
			}
			if peer.PodSelector != nil && peer.PodSelector.MatchLabels["app.kubernetes.io/name"] == "summa-operator" {
				operatorLabels = true
			}
		}
		Expect(clientLabels && operatorLabels).To(BeTrue(), "peers: %+v", np.Spec.Ingress[0].From)

		By("reading the engine through kubectl summa report's port forward")
		plugin := filepath.Join(repoRoot, "bin", "kubectl-summa")
		build := exec.Command("go", "build", "-o", plugin, "./cmd/kubectl-summa")
		build.Dir = repoRoot
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		zipPath := filepath.Join(GinkgoT().TempDir(), "report.zip")
		rep := exec.Command(plugin, "-n", testNamespace, "report", "e2e-access", "-o", zipPath)
		rep.Env = os.Environ()
		out, err = rep.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		data, err := os.ReadFile(zipPath)
		Expect(err).NotTo(HaveOccurred())
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		Expect(err).NotTo(HaveOccurred())
		var index []byte
		var logs bool
		for _, f := range zr.File {
			if strings.HasPrefix(f.Name, "logs/e2e-access-engine/engine") && strings.HasSuffix(f.Name, ".log") {
				logs = true
			}
			if f.Name == "engine/index.json" {
				rc, err := f.Open()
				Expect(err).NotTo(HaveOccurred())
				index, _ = io.ReadAll(rc)
				rc.Close()
			}
			Expect(f.Name).NotTo(ContainSubstring("secret"))
		}
		Expect(logs).To(BeTrue(), "the engine's log is in the report")
		Expect(string(index)).To(ContainSubstring(`"documents": 150`), "the engine's own view is in the report: %s", out)
		Expect(bytes.Contains(data, []byte(newAdmin))).To(BeFalse(), "the report holds the admin token")
	})
})
