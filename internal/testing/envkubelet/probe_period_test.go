package envkubelet

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestProbePeriod: without Options.ProbePeriods every probe runs every
// probeInterval; with it, every periodSeconds of its spec, 10 s when
// unset.
func TestProbePeriod(t *testing.T) {
	every2 := &corev1.Probe{PeriodSeconds: 2}
	unset := &corev1.Probe{}
	for _, c := range []struct {
		on   bool
		pr   *corev1.Probe
		want time.Duration
	}{
		{false, every2, probeInterval},
		{false, nil, probeInterval},
		{true, every2, 2 * time.Second},
		{true, unset, 10 * time.Second},
		{true, nil, probeInterval},
	} {
		p := &pod{k: &Kubelet{opts: Options{ProbePeriods: c.on}}}
		if got := p.probePeriod(c.pr); got != c.want {
			t.Errorf("ProbePeriods %v, probe %+v: period %v, want %v", c.on, c.pr, got, c.want)
		}
	}
}
