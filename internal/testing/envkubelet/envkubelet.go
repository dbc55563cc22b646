// Package envkubelet is a kubelet, scheduler, job controller,
// PVC-protection controller and minimal garbage collector for envtest,
// running containers as real local processes.
//
// envtest runs a real kube-apiserver and etcd but nothing that acts on
// pods. A Kubelet plays those parts against the API server through a
// controller-runtime client (core, batch and networking types in its
// scheme), polling
// every 200ms instead of watching:
//
//	k := envkubelet.New(c, envkubelet.Options{
//		Binaries: map[string]string{"summa-server": bin}, Root: t.TempDir(), Log: testr.New(t)})
//	go k.Start(ctx) // until ctx is done; then every process is killed
//
// What it does:
//
//   - Node and scheduler: it registers one Ready Node (Options.NodeName)
//     and binds every unscheduled pod without scheduling gates to it
//     through the pods/binding subresource, so that the API server deletes
//     pods gracefully as on a real cluster.
//   - Pod addresses: each pod gets its own loopback address (127.0.0.2,
//     127.0.0.3, ...; Linux routes all of 127/8 to lo), so that every pod
//     can listen on the same port. An address on which any TCP socket is
//     bound (by another test binary, say) is skipped, and the Kubelet holds
//     a listener on port 65500 of each address it hands out so that other
//     Kubelets skip it too.
//   - Containers: a container whose command (or, without a command, whose
//     image) has a base name listed in Options.Binaries runs as a local
//     process in its own process group. In its arguments and env values,
//     $(VAR) references are expanded; paths at or under a volume mount
//     (also inside a shell script) point into the volume's host directory;
//     the termination message path is a host file; and a wildcard listen
//     address (0.0.0.0:PORT, [::]:PORT, :PORT) becomes the pod's address.
//     The environment holds PATH, HOSTNAME, HOME (the pod's directory), the
//     literal env values, secretKeyRef values (a required one that cannot
//     be resolved fails the container's start with
//     CreateContainerConfigError, retried per the restart policy) and
//     fieldRef values of the pod's name, namespace, UID, labels,
//     annotations, node, service account and IPs; envFrom and configMap
//     references are ignored. Any other container is
//     simulated: no process, "running" until stopped (exit 0 on SIGTERM),
//     except that regular init containers and the containers of OnFailure
//     and Never pods succeed at once. A simulated container is started at
//     once and its readiness probe runs like a process's (see below), so
//     that an httpGet or tcpSocket probe passes only when a process of the
//     pod listens there: an app container that is never ready is a
//     simulated one probing a port nobody listens on.
//     A container of an image under
//     UnpullableRegistry never starts: it waits with ErrImagePull, then
//     ImagePullBackOff; an image name with upper-case letters or spaces
//     waits with InvalidImageName.
//   - Lifecycle: regular init containers run to completion one by one,
//     native sidecars (init containers with restartPolicy Always) start in
//     order (each must be started, i.e. running and past its startupProbe),
//     then the app containers start. A container that exits restarts after
//     500ms per the pod's restartPolicy (sidecars always); when the app
//     containers of an OnFailure or Never pod finished, the sidecars are
//     stopped and the pod Succeeded or Failed. A pod with a
//     deletionTimestamp gets SIGTERM in its app containers, then, once they
//     exited, in its sidecars one by one in reverse order; SIGKILL for what
//     still runs when the grace period (from when the Kubelet noticed) ran
//     out; then its final status is written and it is removed from the API.
//     A pod that vanished from the API gets SIGKILL.
//   - Pod status: phase, IPs, conditions (PodScheduled,
//     PodReadyToStartContainers, Initialized, ContainersReady, Ready,
//     honouring readiness gates) and container statuses with state,
//     lastState, restart count and the termination message (or, with
//     FallbackToLogsOnError, the log tail), written only when they change.
//     Readiness and startup probes (httpGet, over HTTPS without verifying
//     the certificate as the kubelet does, and tcpSocket) run every 300ms
//     against the pod address, ignoring their timing fields but honouring
//     the thresholds; exec and grpc probes always pass; liveness probes and
//     lifecycle hooks are ignored.
//   - Volumes: a persistentVolumeClaim volume is the host directory
//     ClaimDir(namespace, claim); a pod starts only once its claims exist
//     and are not being deleted. When a claim is gone from the API its
//     directory is deleted (as with reclaimPolicy Delete). A secret volume
//     holds the Secret's keys (or its items, with their paths and modes)
//     as files, written atomically like the kubelet's atomic writer; the
//     pod starts only once its Secrets exist with those keys (unless
//     optional); the files are refreshed every Options.SecretSyncPeriod
//     and at once when the pod's annotations change (see secrets.go).
//     Every other volume (emptyDir, configMap, ...) is an empty per-pod
//     directory, deleted with the pod.
//   - Job controller: one pod per unsuspended Job, as with completions,
//     parallelism 1 and backoffLimit 0: the Job is Complete when its pod
//     Succeeded and Failed (BackoffLimitExceeded) when it failed or
//     vanished, with the status the real controller writes. Deadlines,
//     TTLs, pod failure and success policies are ignored.
//   - Claims: Pending claims become Bound with the requested capacity (a
//     grown request is "expanded" at once); the kubernetes.io/pvc-protection
//     finalizer of a deleted claim is removed once no pod that is not
//     terminated uses it.
//   - Garbage collector: pods, services, claims, jobs, secrets and
//     networkpolicies whose owners are
//     all gone (or replaced by an object with another UID) are deleted in
//     the background; owners being deleted with the foregroundDeletion or
//     orphan finalizer have these dependents deleted (in the background) or
//     orphaned and then lose the finalizer. Other kinds of dependents are
//     not collected. Options.NoGarbageCollector turns it off where the
//     real one runs.
//
// Process output goes to Root/logs/<namespace>_<pod>_<container>.log,
// appended across restarts. The package is meant for Linux test machines.
package envkubelet

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/summadev/summa/internal/tick"
)

// Timing of the loops. They are short so that tests run fast; they are not
// the real kubelet's.
const (
	// apiInterval is the period of the loop that talks to the API server.
	apiInterval = 200 * time.Millisecond
	// runtimeInterval is the period of the loop that starts and stops
	// containers.
	runtimeInterval = 100 * time.Millisecond
	// probeInterval is the period of readiness and startup probes.
	probeInterval = 300 * time.Millisecond
	// restartDelay is the back-off before a container restarts.
	restartDelay = 500 * time.Millisecond
)

// Options configures a Kubelet.
type Options struct {
	// Binaries maps a container command's base name (e.g. "summa-server")
	// to a local executable path. A container without a command is looked
	// up by its image's base name without tag ("ghcr.io/x/summa-server:v1"
	// is "summa-server"), with the container's args as arguments.
	Binaries map[string]string
	// Root is a directory for volumes, logs and termination messages
	// (required; created if needed; made absolute).
	Root string
	// Log receives the Kubelet's logs; the zero value discards them.
	Log logr.Logger
	// NodeName is the name of the Node that pods are bound to; default
	// "envtest-node".
	NodeName string
	// FirstIP is the first pod address; each pod gets the next free one
	// (see the package documentation). Default "127.0.0.2". It must be an
	// IPv4 loopback address.
	FirstIP string
	// SecretSyncPeriod is how often secret volumes are refreshed from their
	// Secrets, as the kubelet's periodic pod sync does; a change of the
	// pod's annotations refreshes them at once. Default
	// DefaultSecretSyncPeriod (one minute).
	SecretSyncPeriod time.Duration
	// NoGarbageCollector turns the minimal garbage collector off, for a
	// test environment that runs the real one (kube-controller-manager).
	NoGarbageCollector bool
	// ProbePeriods runs each startup and readiness probe every
	// periodSeconds of its spec (10 when unset), as the kubelet does,
	// instead of every 300 ms: a benchmark whose probe load must be the
	// kubelet's sets it; tests leave it off and see readiness change at
	// once.
	ProbePeriods bool
}

// EventType tells what happened to a container.
type EventType string

const (
	// ContainerStarted: a process (or a simulated container) was started.
	ContainerStarted EventType = "Started"
	// ContainerStopped: it exited; ContainerEvent.ExitCode tells how.
	ContainerStopped EventType = "Stopped"
)

// ContainerEvent is one start or stop of a container.
type ContainerEvent struct {
	// Time is when the Kubelet saw it.
	Time time.Time
	// Type is ContainerStarted or ContainerStopped.
	Type EventType
	// Namespace and Pod name the pod; PodUID tells apart pods of one name.
	Namespace, Pod string
	// PodUID is the pod's UID.
	PodUID types.UID
	// Container is the container's name.
	Container string
	// Simulated is true for a container without a local process.
	Simulated bool
	// RestartCount is the container's restart count at this event.
	RestartCount int32
	// ExitCode is set for ContainerStopped: the exit status, or 128+signal
	// for a process killed by a signal (137 for SIGKILL, 143 for SIGTERM).
	ExitCode int
}

// Kubelet plays the node, scheduler, kubelet, job controller, PVC
// controllers and garbage collector for an envtest API server.
type Kubelet struct {
	// c talks to the API server.
	c client.Client
	// opts is the configuration, with defaults filled in.
	opts Options
	// log receives the logs.
	log logr.Logger
	// firstIP is opts.FirstIP as a number.
	firstIP uint32

	// procs counts the goroutines waiting for processes and simulated
	// containers, for Stop.
	procs sync.WaitGroup
	// startOnce guards Start.
	startOnce sync.Once

	// mu guards the fields below and all pod and container state.
	mu sync.Mutex
	// pods are the pods this Kubelet runs, by UID.
	pods map[types.UID]*pod
	// history is every container start and stop.
	history []ContainerEvent
	// nextIP is the number of pod addresses handed out.
	nextIP uint32
	// stopped is set by Stop: no process starts any more.
	stopped bool
	// claims are the claims seen in the API, by UID, as namespace/name.
	claims map[types.UID][2]string
	// jobPods names the pod created for each Job, by the Job's UID.
	jobPods map[types.UID]string
	// secrets are the Secrets as last listed.
	secrets map[secretKey]*corev1.Secret

	// nodeDone is set once the Node is registered (API loop only).
	nodeDone bool
	// lastErr is the last error logged per API call (API loop only).
	lastErr map[string]string
	// deletingOwners are owners seen being deleted with the orphan or
	// foregroundDeletion finalizer (API loop only).
	deletingOwners map[ownerKey]types.UID
}

// New returns a Kubelet for the API server c talks to. c needs the core
// and batch types in its scheme. Nothing happens until Start.
func New(c client.Client, opts Options) *Kubelet {
	if opts.NodeName == "" {
		opts.NodeName = "envtest-node"
	}
	if opts.FirstIP == "" {
		opts.FirstIP = "127.0.0.2"
	}
	if opts.SecretSyncPeriod <= 0 {
		opts.SecretSyncPeriod = DefaultSecretSyncPeriod
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	if abs, err := filepath.Abs(opts.Root); err == nil && opts.Root != "" {
		opts.Root = abs
	}
	return &Kubelet{
		c: c, opts: opts, log: opts.Log,
		pods: map[types.UID]*pod{}, claims: map[types.UID][2]string{}, jobPods: map[types.UID]string{},
		secrets: map[secretKey]*corev1.Secret{},
		lastErr: map[string]string{}, deletingOwners: map[ownerKey]types.UID{},
	}
}

// Start runs the Kubelet until ctx is done, then kills every process like
// Stop and returns nil. It returns an error at once for invalid Options.
// Call it once (in its own goroutine).
func (k *Kubelet) Start(ctx context.Context) error {
	if err := k.validate(); err != nil {
		return err
	}
	started := false
	k.startOnce.Do(func() { started = true })
	if !started {
		return errors.New("envkubelet: Start called twice")
	}
	defer k.Stop()
	k.log.Info("Starting", "node", k.opts.NodeName, "root", k.opts.Root, "firstIP", k.opts.FirstIP)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		k.runtimeLoop(ctx)
	}()
	t := time.NewTicker(apiInterval)
	defer t.Stop()
	for {
		k.syncAPI(ctx)
		select {
		case <-ctx.Done():
			wg.Wait()
			k.log.Info("Stopping")
			return nil
		case <-t.C:
		}
	}
}

// validate checks the options and creates Root.
func (k *Kubelet) validate() error {
	if k.c == nil {
		return errors.New("envkubelet: nil client")
	}
	if k.opts.Root == "" {
		return errors.New("envkubelet: Options.Root is required")
	}
	ip := net.ParseIP(k.opts.FirstIP).To4()
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("envkubelet: FirstIP %q is not an IPv4 loopback address", k.opts.FirstIP)
	}
	k.firstIP = uint32(ip[0])<<24 | uint32(ip[1])<<16 | uint32(ip[2])<<8 | uint32(ip[3])
	for name, path := range k.opts.Binaries {
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("envkubelet: binary %q: %w", name, err)
		}
	}
	return os.MkdirAll(k.opts.Root, 0o755)
}

// Stop kills every process with SIGKILL and waits for them; no process
// starts afterwards. It may be called more than once, and before or after
// Start returns.
func (k *Kubelet) Stop() {
	k.mu.Lock()
	k.stopped = true
	for _, p := range k.pods {
		p.release()
		for _, c := range p.all() {
			if c.running() {
				c.cur.signal(syscall.SIGKILL)
			}
		}
	}
	k.mu.Unlock()
	k.procs.Wait()
}

// runtimeLoop steps every pod's containers until ctx is done.
func (k *Kubelet) runtimeLoop(ctx context.Context) {
	tick.Every(ctx, runtimeInterval, func() {
		k.mu.Lock()
		now := time.Now()
		for _, p := range k.pods {
			p.step(now)
		}
		k.mu.Unlock()
	})
}

// reservePort is the port on which the Kubelet holds a listener on each
// pod address it hands out, so that Kubelets of other test processes skip
// the address.
const reservePort = "65500"

// allocIP returns the next free pod address and a listener reserving it.
// An address is skipped when another process has a TCP socket on it or
// holds its reservation: several test binaries (go test ./...) may run
// Kubelets at once. k.mu is held.
func (k *Kubelet) allocIP() (string, net.Listener) {
	for tries := 0; ; tries++ {
		n := k.firstIP + k.nextIP
		k.nextIP++
		if b := byte(n); b == 0 || b == 255 {
			continue
		}
		ip := net.IPv4(byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
		if tries < 4096 && ipBusy(ip) {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), reservePort))
		if err != nil && tries < 4096 {
			continue
		}
		return ip.String(), ln
	}
}

// ipBusy reports whether a TCP socket is bound to the IPv4 address, as
// /proc/net/tcp tells (false where it cannot be read).
func ipBusy(ip net.IP) bool {
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return false
	}
	want := fmt.Sprintf("%08X:", binary.NativeEndian.Uint32(ip.To4()))
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], want) {
			return true
		}
	}
	return false
}

// record appends a container event to the history. k.mu is held.
func (k *Kubelet) record(e ContainerEvent) {
	k.history = append(k.history, e)
	kv := []any{"pod", e.Namespace + "/" + e.Pod, "container", e.Container, "restartCount", e.RestartCount}
	if e.Simulated {
		kv = append(kv, "simulated", true)
	}
	if e.Type == ContainerStopped {
		kv = append(kv, "exitCode", e.ExitCode)
	}
	k.log.Info("Container "+strings.ToLower(string(e.Type)), kv...)
}

// ClaimDir is the host directory standing in for the PersistentVolumeClaim
// claim in namespace: Root/pvc/<namespace>/<claim>. It exists once a pod
// using the claim started (tests may create it earlier to seed data).
func (k *Kubelet) ClaimDir(namespace, claim string) string {
	return filepath.Join(k.opts.Root, "pvc", namespace, claim)
}

// PodIP is the address of the pod, or "" if this Kubelet does not run it
// (any more).
func (k *Kubelet) PodIP(namespace, name string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if p := k.find(namespace, name); p != nil {
		return p.ip
	}
	return ""
}

// find returns the pod namespace/name, preferring one not gone from the
// API. k.mu is held.
func (k *Kubelet) find(namespace, name string) *pod {
	var found *pod
	for _, p := range k.pods {
		if p.ns == namespace && p.name == name && (found == nil || found.vanished) {
			found = p
		}
	}
	return found
}

// KillContainer sends sig to the running container of the pod, e.g.
// SIGKILL to simulate a crash; the container restarts per the pod's
// restartPolicy. A simulated container exits 0 on SIGTERM and SIGINT and
// 128+sig otherwise.
func (k *Kubelet) KillContainer(namespace, name, container string, sig syscall.Signal) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	p := k.find(namespace, name)
	if p == nil {
		return fmt.Errorf("envkubelet: pod %s/%s is not running here", namespace, name)
	}
	for _, c := range p.all() {
		if c.spec.Name != container {
			continue
		}
		if !c.running() {
			return fmt.Errorf("envkubelet: container %s of pod %s/%s is not running", container, namespace, name)
		}
		c.cur.signal(sig)
		return nil
	}
	return fmt.Errorf("envkubelet: pod %s/%s has no container %s", namespace, name, container)
}

// History returns a copy of every container start and stop so far, in
// order.
func (k *Kubelet) History() []ContainerEvent {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]ContainerEvent(nil), k.history...)
}

// logTail bounds each container's part of Logs.
const logTail = 64 << 10

// Logs returns the output of every container of the pod namespace/name
// (the last 64KiB of each, across restarts and of earlier pods of the same
// name), each under a "==> container <==" header, for failure messages.
func (k *Kubelet) Logs(namespace, name string) string {
	prefix := namespace + "_" + name + "_"
	files, _ := filepath.Glob(filepath.Join(k.opts.Root, "logs", prefix+"*.log"))
	sort.Strings(files)
	var b strings.Builder
	for _, f := range files {
		container := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), prefix), ".log")
		fmt.Fprintf(&b, "==> %s <==\n%s\n", container, readTailFrom(f, 0, logTail))
	}
	return b.String()
}

// VolumeDir is the host directory of the pod's volume (the claim's
// directory for a persistentVolumeClaim volume), or "" if this Kubelet
// does not run the pod or it has no such volume.
func (k *Kubelet) VolumeDir(namespace, pod, volume string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if p := k.find(namespace, pod); p != nil {
		return p.volumes[volume]
	}
	return ""
}
