package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
	engineclient "github.com/summadev/summa/client"
	"github.com/summadev/summa/internal/corpus"
)

// Generous bounds; nothing asserts a duration.
const (
	readyTimeout = 4 * time.Minute
	poll         = 250 * time.Millisecond
)

// newIndex is a SummaIndex of the test namespace with a small real schema.
func newIndex(name string, mutate func(*summav1.SummaIndex)) *summav1.SummaIndex {
	x := &summav1.SummaIndex{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
		Spec: summav1.SummaIndexSpec{
			Schema: summav1.Schema{Fields: []summav1.SchemaField{
				{Name: "id", Type: summav1.FieldTypeKeyword, Primary: true},
				{Name: "body", Type: summav1.FieldTypeText},
				{Name: "tag", Type: summav1.FieldTypeKeyword},
			}},
			Storage: summav1.StorageSpec{Size: resource.MustParse("1Gi")},
		},
	}
	if mutate != nil {
		mutate(x)
	}
	return x
}

// getIndex reads a SummaIndex.
func getIndex(name string) *summav1.SummaIndex {
	GinkgoHelper()
	x := &summav1.SummaIndex{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name}, x)).To(Succeed())
	return x
}

// createReady creates a SummaIndex, waits until it is Ready and returns
// how long that took.
func createReady(name string, mutate func(*summav1.SummaIndex)) time.Duration {
	GinkgoHelper()
	start := time.Now()
	Expect(k8s.Create(ctx, newIndex(name, mutate))).To(Succeed())
	waitReady(name)
	return time.Since(start)
}

// waitReady waits until the SummaIndex is Running and Ready.
func waitReady(name string) *summav1.SummaIndex {
	GinkgoHelper()
	var x *summav1.SummaIndex
	Eventually(func(g Gomega) {
		x = &summav1.SummaIndex{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name}, x)).To(Succeed())
		g.Expect(x.Status.Phase).To(Equal(summav1.PhaseRunning))
		g.Expect(x.IsReady()).To(BeTrue(), "conditions %+v", x.Status.Conditions)
	}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
	return x
}

// updateIndex re-reads a SummaIndex and applies change.
func updateIndex(name string, change func(*summav1.SummaIndex)) {
	GinkgoHelper()
	Eventually(func() error {
		x := getIndex(name)
		change(x)
		return k8s.Update(ctx, x)
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// enginePod reads the engine pod of a SummaIndex.
func enginePod(name string) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	err := k8s.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name + "-engine"}, pod)
	return pod, err
}

// engine returns a client of the index's engine pod: at its pod IP on the
// local cluster, through a port-forward on kind; with the admin token of
// the credentials Secret and, over HTTPS, the CA of the TLS Secret that
// status.access names, verifying the Service's name.
func engine(name string) *engineclient.Client {
	GinkgoHelper()
	c, err := engineClient(name)
	Expect(err).NotTo(HaveOccurred())
	return c
}

// httpClients are the HTTP clients of the engines, by CA and server name,
// so that connections are reused across calls.
var httpClients sync.Map

// engineClient is engine without failing the spec (for goroutines that
// retry).
func engineClient(name string) (*engineclient.Client, error) {
	pod, err := enginePod(name)
	if err != nil {
		return nil, err
	}
	x := &summav1.SummaIndex{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name}, x); err != nil {
		return nil, err
	}
	if x.Status.Access == nil || x.Status.Access.CredentialsSecret == "" {
		return nil, fmt.Errorf("%s has no status.access yet", name)
	}
	creds := &corev1.Secret{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: x.Status.Access.CredentialsSecret}, creds); err != nil {
		return nil, err
	}
	token := strings.TrimSpace(strings.SplitN(string(creds.Data[summav1.AdminTokenKey]), "\n", 2)[0])
	scheme, ca := "http://", []byte(nil)
	if s := x.Status.Access.TLSSecret; s != "" {
		tlsSecret := &corev1.Secret{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: s}, tlsSecret); err != nil {
			return nil, err
		}
		scheme, ca = "https://", tlsSecret.Data[summav1.CACertKey]
	}
	key := string(ca) + "|" + x.ServiceHost()
	hc, ok := httpClients.Load(key)
	if !ok {
		c, err := engineclient.NewHTTPClient(ca, x.ServiceHost(), time.Minute)
		if err != nil {
			return nil, err
		}
		hc, _ = httpClients.LoadOrStore(key, c)
	}
	addr := ""
	if mode == "kind" {
		addr = portForward(pod)
	} else if pod.Status.PodIP == "" {
		return nil, fmt.Errorf("pod %s has no IP yet", pod.Name)
	} else {
		addr = net.JoinHostPort(pod.Status.PodIP, "8082")
	}
	return engineclient.New(scheme+addr, hc.(*http.Client)).WithToken(token), nil
}

// forwards holds the running port-forwards by pod UID (kind only).
var forwards = map[string]string{}

// portForward forwards a local port to the pod's 8082 and returns the
// local address.
func portForward(pod *corev1.Pod) string {
	GinkgoHelper()
	if addr, ok := forwards[string(pod.UID)]; ok {
		return addr
	}
	cmd := exec.Command(kubectlBin, "-n", pod.Namespace, "port-forward", "pod/"+pod.Name, ":8082")
	out, err := cmd.StdoutPipe()
	Expect(err).NotTo(HaveOccurred())
	Expect(cmd.Start()).To(Succeed())
	DeferCleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	Expect(err).NotTo(HaveOccurred())
	m := regexp.MustCompile(`127\.0\.0\.1:(\d+)`).FindStringSubmatch(line)
	Expect(m).NotTo(BeNil(), "port-forward said %q", line)
	forwards[string(pod.UID)] = "127.0.0.1:" + m[1]
	return forwards[string(pod.UID)]
}

// documents returns real text documents [from, to).
func documents(from, to int) []any {
	GinkgoHelper()
	ps, err := corpus.Paragraphs()
	Expect(err).NotTo(HaveOccurred())
	var docs []any
	for i := from; i < to; i++ {
		docs = append(docs, map[string]any{"id": docID(i), "body": ps[i%len(ps)], "tag": "all"})
	}
	return docs
}

// docID is the primary key of document i.
func docID(i int) string { return fmt.Sprintf("d%06d", i) }

// ingest adds documents [from, to) and fails on any refusal.
func ingest(name string, from, to int) {
	GinkgoHelper()
	n, err := engine(name).AddDocuments(ctx, name, documents(from, to)...)
	Expect(err).NotTo(HaveOccurred())
	Expect(n).To(Equal(to - from))
}

// commit commits the index.
func commit(name string) {
	GinkgoHelper()
	_, err := engine(name).Commit(ctx, name)
	Expect(err).NotTo(HaveOccurred())
}

// committedIDs lists the primary keys the index serves (at most the
// engine's result window, 10,000: specs stay below it).
func committedIDs(name string) map[string]bool {
	GinkgoHelper()
	c := engine(name)
	st, err := c.GetIndex(ctx, name)
	Expect(err).NotTo(HaveOccurred())
	Expect(st.Documents).To(BeNumerically("<=", 10000))
	res, err := c.Search(ctx, name, engineclient.SearchRequest{Query: "tag:all", Limit: 10000})
	Expect(err).NotTo(HaveOccurred())
	ids := map[string]bool{}
	for _, h := range res.Hits {
		var doc struct {
			ID string `json:"id"`
		}
		Expect(json.Unmarshal(h.Fields, &doc)).To(Succeed())
		ids[doc.ID] = true
	}
	Expect(ids).To(HaveLen(int(st.Documents)))
	return ids
}

// expectAll checks that every document [from, to) is served.
func expectAll(name string, from, to int) {
	GinkgoHelper()
	ids := committedIDs(name)
	var missing []string
	for i := from; i < to; i++ {
		if !ids[docID(i)] {
			missing = append(missing, docID(i))
		}
	}
	sort.Strings(missing)
	Expect(missing).To(BeEmpty(), "documents accepted and lost")
}

// kill9 SIGKILLs a container of a pod: on the local cluster the container
// is a host process, found by its container ID in /proc/*/cgroup.
func kill9(pod *corev1.Pod, container string) {
	GinkgoHelper()
	var id string
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for _, cs := range list {
			if cs.Name == container {
				id = cs.ContainerID[strings.Index(cs.ContainerID, "://")+3:]
			}
		}
	}
	Expect(id).NotTo(BeEmpty(), "container %s of %s", container, pod.Name)
	if mode == "kind" {
		out, err := exec.Command("docker", "exec", pod.Spec.NodeName, "ctr", "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", id).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		return
	}
	procs, err := filepath.Glob("/proc/[0-9]*/cgroup")
	Expect(err).NotTo(HaveOccurred())
	killed := 0
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(data), id) {
			continue
		}
		pid, err := strconv.Atoi(strings.Split(p, "/")[2])
		Expect(err).NotTo(HaveOccurred())
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if !strings.Contains(string(cmdline), "summa-server") {
			continue
		}
		Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
		killed++
	}
	Expect(killed).To(BeNumerically(">", 0), "no summa-server process of container %s", id)
}

// volumeDir is the host directory of a bound volume (local cluster:
// hostPath provisioner).
func volumeDir(claim string) string {
	GinkgoHelper()
	if mode == "kind" {
		Skip("kind keeps volume files inside its node container; this spec reads them from the host")
	}
	pvc := &corev1.PersistentVolumeClaim{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: claim}, pvc)).To(Succeed())
	Expect(pvc.Spec.VolumeName).NotTo(BeEmpty())
	pv := &corev1.PersistentVolume{}
	Expect(k8s.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv)).To(Succeed())
	Expect(pv.Spec.HostPath).NotTo(BeNil(), "the e2e corruption spec needs a hostPath volume")
	return pv.Spec.HostPath.Path
}

// gone reports whether an object no longer exists.
func gone(obj client.Object, name string) bool {
	err := k8s.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name}, obj)
	return apierrors.IsNotFound(err)
}
