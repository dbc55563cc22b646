package envkubelet

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// containerKind tells init containers, native sidecars and app containers
// apart.
type containerKind int

const (
	// initKind is a regular init container: it runs to completion.
	initKind containerKind = iota
	// sidecarKind is an init container with restartPolicy Always.
	sidecarKind
	// appKind is a container of spec.containers.
	appKind
)

// pod is the runtime state of one pod. All fields are guarded by k.mu,
// except the ones set at admission and never changed (k, uid, ns, name,
// obj, ip, dir, volumes, startTime and the container slices).
type pod struct {
	// k is the Kubelet running the pod.
	k *Kubelet
	// uid, ns and name identify the pod.
	uid types.UID
	// ns is the namespace.
	ns string
	// name is the pod's name.
	name string
	// obj is the pod as admitted (metadata and spec are read from it).
	obj *corev1.Pod
	// ip is the pod's loopback address.
	ip string
	// reservation is a listener on ip that keeps other Kubelets off it
	// (nil once released). Guarded by k.mu.
	reservation net.Listener
	// dir is the pod's working directory.
	dir string
	// volumes maps a volume name to its host directory.
	volumes map[string]string
	// startTime is when the pod was admitted.
	startTime time.Time
	// inits are the init containers (regular and sidecars) in spec order.
	inits []*container
	// apps are the app containers in spec order.
	apps []*container

	// initialized is set once every init container completed or, for a
	// sidecar, started.
	initialized bool
	// terminating is set when the containers are being stopped: the pod is
	// deleted, or its app containers finished for good.
	terminating bool
	// deadline is when whatever still runs gets SIGKILL.
	deadline time.Time
	// deleting is set once the pod has a deletionTimestamp.
	deleting bool
	// vanished is set once the pod is gone from the API.
	vanished bool
	// final is the terminal phase decided when the app containers finished
	// (or an init container failed); empty otherwise.
	final corev1.PodPhase
	// done is set when nothing runs or will run any more.
	done bool
	// annotations are the pod's annotations at the last look; a change
	// refreshes the secret volumes at once.
	annotations map[string]string
	// secretsSyncedAt is when the secret volumes were last refreshed.
	secretsSyncedAt time.Time
}

// container is one container of a pod and its current and previous runs.
type container struct {
	// spec is the container's spec.
	spec corev1.Container
	// kind is init, sidecar or app.
	kind containerKind
	// cur is the current (or last) run; nil before the first.
	cur *instance
	// prev is the run before cur, for lastState.
	prev *instance
	// restarts is the restart count.
	restarts int32
	// restartAt is when the exited container restarts; zero if it does not.
	restartAt time.Time
	// pulling is the waiting state of a container whose image cannot be
	// pulled (see pullFailure); nil otherwise.
	pulling *corev1.ContainerStateWaiting
	// pullAttempts counts the failed pulls of the image.
	pullAttempts int
	// pullRetryAt is when the pull is tried again.
	pullRetryAt time.Time
}

// running reports whether the current run has not exited.
func (c *container) running() bool { return c.cur != nil && c.cur.running }

// instance is one run of a container: a process, or a simulated one.
type instance struct {
	// id is the containerID reported in the status.
	id string
	// proc is the process; nil for a simulated container.
	proc *os.Process
	// sim receives the exit code of a simulated container.
	sim chan int
	// running is true until the run exited.
	running bool
	// startedAt and finishedAt bound the run.
	startedAt, finishedAt time.Time
	// exitCode is the exit status (128+signal when killed by a signal).
	exitCode int
	// reason and message are the terminated state's.
	reason, message string
	// started is true once the startup probe (if any) passed.
	started bool
	// ready is the readiness probe's verdict.
	ready bool
	// okCount and failCount count consecutive readiness results.
	okCount, failCount int
	// termSent and killSent record the signals sent while terminating.
	termSent, killSent bool
	// logPath and logOffset locate this run's output.
	logPath string
	// logOffset is the log file's size when the run started.
	logOffset int64
	// done is closed when the run exited.
	done chan struct{}
}

// signal sends sig to the run: to the process group of a process, or as
// an exit code to a simulated container (0 for SIGTERM and SIGINT).
func (in *instance) signal(sig syscall.Signal) {
	if in.proc != nil {
		if err := syscall.Kill(-in.proc.Pid, sig); err != nil {
			_ = in.proc.Signal(sig)
		}
		return
	}
	code := 128 + int(sig)
	if sig == syscall.SIGTERM || sig == syscall.SIGINT {
		code = 0
	}
	select {
	case in.sim <- code:
	default:
	}
}

// release closes the address reservation. k.mu is held.
func (p *pod) release() {
	if p.reservation != nil {
		_ = p.reservation.Close()
		p.reservation = nil
	}
}

// all returns the init containers, then the app containers.
func (p *pod) all() []*container {
	return append(append([]*container(nil), p.inits...), p.apps...)
}

// restartPolicy is the pod's restart policy (Always if unset).
func (p *pod) restartPolicy() corev1.RestartPolicy {
	if rp := p.obj.Spec.RestartPolicy; rp != "" {
		return rp
	}
	return corev1.RestartPolicyAlways
}

// step starts, restarts and stops containers as the pod's state asks. It
// is called often; k.mu is held.
func (p *pod) step(now time.Time) {
	switch {
	case p.done, p.k.stopped:
	case p.vanished:
		for _, c := range p.all() {
			if c.running() && !c.cur.killSent {
				c.cur.killSent = true
				c.cur.signal(syscall.SIGKILL)
			}
		}
		p.done = !p.anyRunning()
	case p.terminating:
		p.stepTerminating(now)
	case !p.initialized:
		p.stepInit(now)
	default:
		p.stepRunning(now)
	}
}

// anyRunning reports whether a container runs.
func (p *pod) anyRunning() bool {
	for _, c := range p.all() {
		if c.running() {
			return true
		}
	}
	return false
}

// stepInit runs the init containers in order: a regular one to completion,
// a sidecar until started. Then it starts the app containers.
func (p *pod) stepInit(now time.Time) {
	for _, c := range p.inits {
		switch {
		case c.running():
			if c.kind == sidecarKind && c.cur.started {
				continue
			}
			return
		case c.cur == nil:
			p.start(c, now)
			return
		case c.kind == initKind && c.cur.exitCode == 0:
			continue
		case c.kind == initKind && p.restartPolicy() == corev1.RestartPolicyNever:
			p.final = corev1.PodFailed
			p.beginTerminating(now, p.gracePeriod())
			return
		default:
			p.restartLater(c, now)
			return
		}
	}
	p.initialized = true
	for _, c := range p.apps {
		p.start(c, now)
	}
}

// stepRunning restarts exited containers per the restart policy (sidecars
// always) and ends the pod when its app containers finished for good.
func (p *pod) stepRunning(now time.Time) {
	for _, c := range p.inits {
		if c.kind == sidecarKind && !c.running() {
			p.restartLater(c, now)
		}
	}
	allDone, allOK := true, true
	for _, c := range p.apps {
		if c.cur == nil { // its image is not pulled yet
			allDone = false
			p.start(c, now)
			continue
		}
		if c.running() {
			allDone = false
			continue
		}
		rp := p.restartPolicy()
		if rp == corev1.RestartPolicyAlways || rp == corev1.RestartPolicyOnFailure && c.cur.exitCode != 0 {
			allDone = false
			p.restartLater(c, now)
			continue
		}
		if c.cur.exitCode != 0 {
			allOK = false
		}
	}
	if allDone {
		p.final = corev1.PodSucceeded
		if !allOK {
			p.final = corev1.PodFailed
		}
		p.beginTerminating(now, p.gracePeriod())
	}
}

// restartLater schedules the exited container's restart, or restarts it
// when the back-off passed.
func (p *pod) restartLater(c *container, now time.Time) {
	if c.restartAt.IsZero() {
		c.restartAt = now.Add(restartDelay)
		return
	}
	if now.Before(c.restartAt) {
		return
	}
	c.restartAt = time.Time{}
	c.restarts++
	p.start(c, now)
}

// gracePeriod is the pod's termination grace period.
func (p *pod) gracePeriod() time.Duration {
	if g := p.obj.Spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return 30 * time.Second
}

// beginTerminating starts stopping the containers; whatever still runs
// after grace gets SIGKILL. A later call may only shorten the deadline.
func (p *pod) beginTerminating(now time.Time, grace time.Duration) {
	deadline := now.Add(grace)
	if !p.terminating || deadline.Before(p.deadline) {
		p.deadline = deadline
	}
	p.terminating = true
	for _, c := range p.all() {
		c.restartAt = time.Time{}
	}
}

// requestDelete notes the pod's deletion with the given grace period.
func (p *pod) requestDelete(now time.Time, grace time.Duration) {
	if !p.deleting && !p.done {
		p.k.log.Info("Pod deleted; stopping its containers", "pod", p.ns+"/"+p.name, "grace", grace.String())
	}
	p.deleting = true
	p.beginTerminating(now, grace)
}

// stepTerminating stops the containers in the kubelet's order: SIGTERM to
// the app (and regular init) containers, and once they exited, to the
// sidecars one by one in reverse order; SIGKILL to all at the deadline.
func (p *pod) stepTerminating(now time.Time) {
	if !now.Before(p.deadline) {
		for _, c := range p.all() {
			if c.running() && !c.cur.killSent {
				c.cur.killSent = true
				c.cur.signal(syscall.SIGKILL)
			}
		}
	}
	regular := false
	for _, c := range p.all() {
		if c.kind == sidecarKind || !c.running() {
			continue
		}
		regular = true
		if !c.cur.termSent {
			c.cur.termSent = true
			c.cur.signal(syscall.SIGTERM)
		}
	}
	if regular {
		return
	}
	for i := len(p.inits) - 1; i >= 0; i-- {
		c := p.inits[i]
		if c.kind != sidecarKind || !c.running() {
			continue
		}
		if !c.cur.termSent {
			c.cur.termSent = true
			c.cur.signal(syscall.SIGTERM)
		}
		return
	}
	if p.final == "" {
		p.final = p.phaseAfterStop()
	}
	p.done = true
}

// phaseAfterStop is the phase of a pod stopped by its deletion: Succeeded
// if every app container ran and exited 0, Failed otherwise.
func (p *pod) phaseAfterStop() corev1.PodPhase {
	for _, c := range p.apps {
		if c.cur == nil || c.cur.exitCode != 0 {
			return corev1.PodFailed
		}
	}
	return corev1.PodSucceeded
}

// simulatedCompletes reports whether a simulated container of this kind
// succeeds at once instead of running until stopped.
func (p *pod) simulatedCompletes(c *container) bool {
	return c.kind == initKind || c.kind == appKind && p.restartPolicy() != corev1.RestartPolicyAlways
}

// start runs the container (again).
func (p *pod) start(c *container, now time.Time) {
	k := p.k
	if k.stopped {
		return
	}
	if c.cur == nil && !p.pulled(c, now) {
		return
	}
	in := &instance{
		id:      fmt.Sprintf("envkubelet://%s-%s-%d", p.uid, c.spec.Name, c.restarts),
		running: true, startedAt: now, done: make(chan struct{}),
	}
	if c.cur != nil {
		c.prev = c.cur
	}
	c.cur = in
	termFile := p.termFile(c)
	if err := os.WriteFile(termFile, nil, 0o644); err != nil {
		k.log.Error(err, "Cannot create the termination message file", "pod", p.ns+"/"+p.name)
	}
	bin, args, env, dir, err := p.command(c)
	k.record(ContainerEvent{Time: now, Type: ContainerStarted, Namespace: p.ns, Pod: p.name, PodUID: p.uid,
		Container: c.spec.Name, Simulated: bin == "", RestartCount: c.restarts})
	if err != nil {
		in.reason, in.message = "CreateContainerConfigError", err.Error()
		p.exited(c, in, 128, now)
		return
	}
	if bin == "" {
		// Started at once; ready at once without a readiness probe, else
		// when the probe passes (against the pod's address, where only the
		// pod's processes listen).
		in.started, in.ready = true, c.spec.ReadinessProbe == nil
		if p.simulatedCompletes(c) {
			p.exited(c, in, 0, now)
			return
		}
		in.sim = make(chan int, 1)
		k.procs.Add(1)
		go func() {
			defer k.procs.Done()
			code := <-in.sim
			k.mu.Lock()
			defer k.mu.Unlock()
			p.exited(c, in, code, time.Now())
		}()
		if c.spec.ReadinessProbe != nil {
			go p.probeLoop(c, in)
		}
		return
	}
	in.logPath = filepath.Join(k.opts.Root, "logs", p.ns+"_"+p.name+"_"+c.spec.Name+".log")
	f, err := openLog(in.logPath)
	if err != nil {
		in.reason = "StartError"
		in.message = err.Error()
		p.exited(c, in, 128, now)
		return
	}
	fmt.Fprintf(f, "envkubelet: %s %s: starting %s %s (restart %d)\n", now.Format(time.RFC3339Nano),
		c.spec.Name, bin, strings.Join(args, " "), c.restarts)
	if st, err := f.Stat(); err == nil {
		in.logOffset = st.Size()
	}
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, dir, f, f
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	_ = f.Close()
	if err != nil {
		in.reason = "StartError"
		in.message = err.Error()
		p.exited(c, in, 128, now)
		return
	}
	in.proc = cmd.Process
	if c.spec.StartupProbe == nil {
		in.started = true
	}
	k.procs.Add(1)
	go func() {
		defer k.procs.Done()
		_ = cmd.Wait()
		code := exitCode(cmd.ProcessState)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what is left of its process group
		k.mu.Lock()
		defer k.mu.Unlock()
		p.exited(c, in, code, time.Now())
	}()
	if c.spec.StartupProbe != nil || c.spec.ReadinessProbe != nil {
		go p.probeLoop(c, in)
	}
}

// openLog opens a log file for appending.
func openLog(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// exitCode is the exit status of a process, 128+signal if a signal
// killed it.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return 128
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// Termination messages are cut at the kubelet's limits.
const (
	// maxMessage bounds a termination message file.
	maxMessage = 4096
	// maxLogMessage bounds a message taken from the logs.
	maxLogMessage = 2048
)

// exited records the end of a run. k.mu is held.
func (p *pod) exited(c *container, in *instance, code int, now time.Time) {
	if !in.running {
		return
	}
	in.running, in.finishedAt, in.exitCode = false, now, code
	if in.reason == "" {
		in.reason = "Completed"
		if code != 0 {
			in.reason = "Error"
		}
	}
	if in.message == "" {
		in.message = readHead(p.termFile(c), maxMessage)
	}
	if in.message == "" && code != 0 && in.logPath != "" &&
		c.spec.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
		in.message = readTailFrom(in.logPath, in.logOffset, maxLogMessage)
	}
	close(in.done)
	p.k.record(ContainerEvent{Time: now, Type: ContainerStopped, Namespace: p.ns, Pod: p.name, PodUID: p.uid,
		Container: c.spec.Name, Simulated: in.proc == nil, RestartCount: c.restarts, ExitCode: code})
}

// termFile is the host file standing in for the container's termination
// message path.
func (p *pod) termFile(c *container) string {
	return filepath.Join(p.k.opts.Root, "termination", string(p.uid)+"-"+c.spec.Name)
}

// readHead returns up to the first n bytes of the file.
func readHead(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, n)
	m, _ := f.Read(buf)
	return string(buf[:m])
}

// readTailFrom returns up to the last n bytes of the file after offset.
func readTailFrom(path string, offset, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	if st.Size()-n > offset {
		offset = st.Size() - n
	}
	buf := make([]byte, max(st.Size()-offset, 0))
	m, _ := f.ReadAt(buf, offset)
	return string(buf[:m])
}

// UnpullableRegistry is a registry whose images never pull: a container
// of an image under it (unpullable.invalid/summa-server:v1) stays waiting
// with ErrImagePull, then ImagePullBackOff, as on a node that cannot
// reach the registry (".invalid" is a reserved top-level domain, so no
// real registry has that name either).
const UnpullableRegistry = "unpullable.invalid/"

// pullFailure is the waiting reason and message of a pull of image that
// fails at attempt n (0 first), or "" when the image pulls. An image
// reference with upper-case letters or spaces in its name is
// InvalidImageName.
func pullFailure(image string, n int) (reason, message string) {
	name, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	switch {
	case name == "" || strings.ContainsAny(name, " \t") || strings.ToLower(name) != name:
		return "InvalidImageName", fmt.Sprintf("Failed to apply default image tag %q: couldn't parse image name %q: invalid reference format", image, image)
	case !strings.HasPrefix(image, UnpullableRegistry):
		return "", ""
	case n == 0:
		return "ErrImagePull", fmt.Sprintf("failed to pull and unpack image %q: failed to resolve reference: dial tcp: lookup unpullable.invalid: no such host", image)
	}
	return "ImagePullBackOff", fmt.Sprintf("Back-off pulling image %q", image)
}

// pulled reports whether c's image is there, pulling it (with a back-off
// between failed attempts) if not. k.mu is held.
func (p *pod) pulled(c *container, now time.Time) bool {
	if c.pulling == nil && c.pullAttempts == 0 {
		if reason, _ := pullFailure(c.spec.Image, 0); reason == "" {
			return true
		}
	}
	if now.Before(c.pullRetryAt) {
		return false
	}
	reason, msg := pullFailure(c.spec.Image, c.pullAttempts)
	if reason == "" {
		c.pulling = nil
		return true
	}
	if c.pulling == nil || c.pulling.Reason != reason {
		p.k.log.Info("Image pull failed", "pod", p.ns+"/"+p.name, "container", c.spec.Name, "image", c.spec.Image, "reason", reason)
	}
	c.pullAttempts++
	c.pulling = &corev1.ContainerStateWaiting{Reason: reason, Message: msg}
	c.pullRetryAt = now.Add(restartDelay)
	return false
}
