package controllers

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	summav1 "github.com/summadev/summa/api/v1"
	"github.com/summadev/summa/internal/kubectlsumma"
)

// kubeconfigFile writes the envtest API server's connection as a
// kubeconfig whose context's namespace is the specs' namespace.
func kubeconfigFile() string {
	GinkgoHelper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin", Namespace: specNamespace}
	kc.CurrentContext = "envtest"
	path := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(clientcmd.WriteToFile(*kc, path)).To(Succeed())
	return path
}

// kubectlSumma runs the plugin with args and returns its output and error.
func kubectlSumma(kubeconfig string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := kubectlsumma.NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}

var _ = Describe("kubectl summa", func() {
	It("shows status, suspends, resumes, restarts, runs the doctor and writes a report", func() {
		kc := kubeconfigFile()
		createReady("plugged", nil)
		ingest("plugged", 0, 40)
		commit("plugged")
		Eventually(func() int64 { return getIndex("plugged").Status.Documents }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(BeEquivalentTo(40))

		out, err := kubectlSumma(kc, "status", "plugged")
		Expect(err).NotTo(HaveOccurred(), out)
		for _, want := range []string{"summa-specs/plugged", "Running", "Documents", "40", "Grace", "Conditions:", "Ready", "Events:", "PodCreated"} {
			Expect(out).To(ContainSubstring(want))
		}
		out, err = kubectlSumma(kc, "status", "missing")
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("not found"))
		_, err = kubectlSumma(kc, "status")
		Expect(err).To(MatchError(ContainSubstring("exactly one SummaIndex NAME")))

		out, err = kubectlSumma(kc, "suspend", "plugged")
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(func() summav1.Phase { return getIndex("plugged").Status.Phase }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(Equal(summav1.PhaseSuspended))
		out, err = kubectlSumma(kc, "resume", "plugged")
		Expect(err).NotTo(HaveOccurred(), out)
		waitReady("plugged")

		old := podUID("plugged")
		out, err = kubectlSumma(kc, "restart", "plugged")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(getIndex("plugged").Annotations).To(HaveKey(AnnotationRestartedAt))
		Eventually(func() string { return podUID("plugged") }).
			WithTimeout(readyTimeout).WithPolling(poll).ShouldNot(BeElementOf("", old))
		waitReady("plugged")
		Expect(engineExits(old)).To(Equal([]int{0}), "the restart was drained")

		out, err = kubectlSumma(kc, "doctor", "plugged", "--no-backup", "--request-id", "plugin-1")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("doctor run plugin-1 succeeded"))
		Expect(getIndex("plugged").Spec.Doctor.Backup).To(Equal(summav1.BackupNone))
		_, err = kubectlSumma(kc, "doctor", "plugged", "--request-id", "plugin-1")
		Expect(err).To(MatchError(ContainSubstring("already used")))
		waitReady("plugged")
		Expect(engineDocuments("plugged")).To(BeEquivalentTo(40))

		zipPath := filepath.Join(GinkgoT().TempDir(), "report.zip")
		out, err = kubectlSumma(kc, "report", "plugged", "-o", zipPath)
		Expect(err).NotTo(HaveOccurred(), out)
		data, err := os.ReadFile(zipPath)
		Expect(err).NotTo(HaveOccurred())
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		Expect(err).NotTo(HaveOccurred())
		names := map[string]*zip.File{}
		for _, f := range zr.File {
			names[f.Name] = f
		}
		Expect(names).To(HaveKey("summaindex.yaml"))
		Expect(names).To(HaveKey("events.yaml"))
		Expect(names).To(HaveKey("pods.yaml"))
		Expect(names).To(HaveKey("persistentvolumeclaims.yaml"))
		// envtest has no kubelet API: logs and the port forward cannot be
		// collected, and the report says so instead of failing.
		Expect(names).To(HaveKey(HavePrefix("logs/plugged-engine")))
		for name, f := range names {
			rc, err := f.Open()
			Expect(err).NotTo(HaveOccurred())
			var b bytes.Buffer
			_, _ = b.ReadFrom(rc)
			rc.Close()
			Expect(b.String()).NotTo(ContainSubstring("admin-token:"), "the report holds no Secret (%s)", name)
		}

		out, err = kubectlSumma(kc, "--help")
		Expect(err).NotTo(HaveOccurred())
		for _, want := range []string{"Usage:", "kubectl summa [command]", "Examples:", "--namespace", "--context", "--kubeconfig", "doctor", "report"} {
			Expect(out).To(ContainSubstring(want))
		}
	})
})
