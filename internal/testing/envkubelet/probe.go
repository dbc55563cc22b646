package envkubelet

import (
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probeLoop runs the startup probe until it passes, then the readiness
// probe, every probeInterval (or, with Options.ProbePeriods, every
// periodSeconds of the probe) until the run exits. initialDelaySeconds is
// ignored; the thresholds are honoured for readiness.
func (p *pod) probeLoop(c *container, in *instance) {
	t := time.NewTimer(p.probePeriod(c.spec.StartupProbe))
	defer t.Stop()
	mu := &p.k.mu
	for {
		select {
		case <-in.done:
			return
		case <-t.C:
		}
		mu.Lock()
		started := in.started
		mu.Unlock()
		if !started {
			next := c.spec.StartupProbe
			if p.probe(c, c.spec.StartupProbe) {
				mu.Lock()
				in.started = true
				mu.Unlock()
				next = c.spec.ReadinessProbe
			}
			t.Reset(p.probePeriod(next))
			continue
		}
		pr := c.spec.ReadinessProbe
		if pr == nil {
			return
		}
		t.Reset(p.probePeriod(pr))
		ok := p.probe(c, pr)
		mu.Lock()
		if ok {
			in.okCount, in.failCount = in.okCount+1, 0
			if in.okCount >= int(max(pr.SuccessThreshold, 1)) {
				in.ready = true
			}
		} else {
			in.okCount, in.failCount = 0, in.failCount+1
			if in.failCount >= int(max(pr.FailureThreshold, 1)) {
				in.ready = false
			}
		}
		mu.Unlock()
	}
}

// probePeriod is the time between two runs of pr: probeInterval, or with
// Options.ProbePeriods its periodSeconds (10 when unset, as the API's
// default).
func (p *pod) probePeriod(pr *corev1.Probe) time.Duration {
	if !p.k.opts.ProbePeriods || pr == nil {
		return probeInterval
	}
	if pr.PeriodSeconds <= 0 {
		return 10 * time.Second
	}
	return time.Duration(pr.PeriodSeconds) * time.Second
}

// probeClient runs HTTP probes: no keep-alive, no redirects (a 3xx is a
// success), any certificate.
var probeClient = &http.Client{
	Transport: &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as the kubelet's HTTPS probes
	},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// probe runs one probe against the pod's address: an httpGet probe passes
// with a status from 200 to 399, a tcpSocket probe when it connects; exec
// and grpc probes always pass.
func (p *pod) probe(c *container, pr *corev1.Probe) bool {
	if pr == nil {
		return true
	}
	timeout := time.Duration(max(pr.TimeoutSeconds, 1)) * time.Second
	switch {
	case pr.HTTPGet != nil:
		g := pr.HTTPGet
		port, ok := resolvePort(g.Port, c)
		if !ok {
			return false
		}
		host := g.Host
		if host == "" {
			host = p.ip
		}
		scheme := "http"
		if g.Scheme == corev1.URISchemeHTTPS {
			scheme = "https"
		}
		path := g.Path
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req, err := http.NewRequest(http.MethodGet, scheme+"://"+net.JoinHostPort(host, port)+path, nil)
		if err != nil {
			return false
		}
		for _, h := range g.HTTPHeaders {
			req.Header.Add(h.Name, h.Value)
		}
		cl := *probeClient
		cl.Timeout = timeout
		resp, err := cl.Do(req)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode >= 200 && resp.StatusCode < 400
	case pr.TCPSocket != nil:
		port, ok := resolvePort(pr.TCPSocket.Port, c)
		if !ok {
			return false
		}
		host := pr.TCPSocket.Host
		if host == "" {
			host = p.ip
		}
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), timeout)
		if err != nil {
			return false
		}
		_ = conn.Close()
		return true
	}
	return true
}

// resolvePort returns a probe's port number, looking a named port up in
// the container's ports.
func resolvePort(port intstr.IntOrString, c *container) (string, bool) {
	if port.Type == intstr.Int {
		return strconv.Itoa(int(port.IntVal)), port.IntVal > 0
	}
	for _, cp := range c.spec.Ports {
		if cp.Name == port.StrVal {
			return strconv.Itoa(int(cp.ContainerPort)), true
		}
	}
	if n, err := strconv.Atoi(port.StrVal); err == nil && n > 0 {
		return port.StrVal, true
	}
	return "", false
}
