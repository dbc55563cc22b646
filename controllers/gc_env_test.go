package controllers

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The suite runs the real garbage collector: kube-controller-manager (built
// with the envtest binaries, `make envtest`) with only its
// garbagecollector controller, against the envtest API server. So a
// foreground deletion deletes a SummaIndex's dependents before it, an
// orphan deletion strips their owner references, and a background deletion
// removes them after it, as on a real cluster; the deletion specs
// (deletion_env_test.go) depend on it.

var (
	// gcProcess is the running kube-controller-manager.
	gcProcess *exec.Cmd
	// gcDir holds its kubeconfig and log.
	gcDir string
)

// startGarbageCollector starts kube-controller-manager's garbage collector
// against the envtest API server. Without the binary the suite fails when
// SUMMA_REQUIRE_ENVTEST is set; otherwise envkubelet's minimal garbage
// collector stands in.
func startGarbageCollector() {
	bin := filepath.Join(assetsDir, "kube-controller-manager")
	if _, err := os.Stat(bin); err != nil {
		Expect(os.Getenv(requireEnvtestVar)).To(BeEmpty(),
			"kube-controller-manager not found in %s: run `make envtest` (%s is set, so this is a failure)", assetsDir, requireEnvtestVar)
		return
	}
	dir, err := os.MkdirTemp("", "summa-specs-gc-")
	Expect(err).NotTo(HaveOccurred())
	gcDir = dir
	kubeconfig := filepath.Join(dir, "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	Expect(clientcmd.WriteToFile(*kc, kubeconfig)).To(Succeed())
	logFile, err := os.Create(filepath.Join(dir, "kube-controller-manager.log"))
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(bin,
		"--kubeconfig="+kubeconfig,
		"--controllers=garbagecollector",
		"--leader-elect=false",
		"--secure-port=0",
		"--concurrent-gc-syncs=5",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	Expect(cmd.Start()).To(Succeed())
	gcProcess = cmd
	GinkgoWriter.Printf("garbage collector: kube-controller-manager pid %d, log %s\n", cmd.Process.Pid, logFile.Name())
}

// stopGarbageCollector stops kube-controller-manager.
func stopGarbageCollector() {
	if gcProcess == nil {
		return
	}
	_ = gcProcess.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = gcProcess.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = gcProcess.Process.Kill()
		<-done
	}
	gcProcess = nil
	_ = os.RemoveAll(gcDir)
}
