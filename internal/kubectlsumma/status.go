package kubectlsumma

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	summav1 "github.com/summadev/summa/api/v1"
)

// newStatusCommand is `kubectl summa status NAME`.
func newStatusCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "status NAME",
		Short: "Show an index's phase, conditions, documents, grace, doctor report and recent events",
		Long: `Show one SummaIndex on one screen: phase and conditions, documents,
segments and generation, the termination grace and drain estimate,
quarantined segments, the leader and each read follower (generation and
replication lag), the last doctor run, and the most recent events.`,
		Example: `  kubectl summa status articles
  kubectl summa status articles -n search --context prod`,
		Args: exactlyOneName,
		RunE: o.onIndex(o.status),
	}
}

// status prints the screen of one index.
func (o *Options) status(ctx context.Context, cl *clients, name string) error {
	x, err := cl.get(ctx, name)
	if err != nil {
		return err
	}
	s := x.Status
	w := tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "SummaIndex\t%s/%s\n", x.Namespace, x.Name)
	fmt.Fprintf(w, "Phase\t%s\n", orNone(string(s.Phase)))
	if x.Annotations["summa.dev/reconcile"] == "paused" {
		fmt.Fprintf(w, "Reconcile\tpaused (annotation summa.dev/reconcile)\n")
	}
	fmt.Fprintf(w, "Documents\t%d (uncommitted %d)\n", s.Documents, s.UncommittedDocuments)
	fmt.Fprintf(w, "Segments\t%d\n", s.Segments)
	fmt.Fprintf(w, "Generation\t%d\n", s.Generation)
	estimate := "unknown"
	if s.DrainEstimateSeconds != nil {
		estimate = fmt.Sprintf("%.1fs", *s.DrainEstimateSeconds)
	}
	fmt.Fprintf(w, "Grace\t%ds (engine shutdown deadline %ds, drain estimate %s)\n",
		s.TerminationGracePeriodSeconds, s.ShutdownDeadlineSeconds, estimate)
	fmt.Fprintf(w, "Pod\t%s (revision %s, desired %s)\n", orNone(s.PodName), orNone(s.CurrentRevision), orNone(s.UpdateRevision))
	if s.DurabilityDegraded {
		fmt.Fprintf(w, "Durability\tDEGRADED: a directory sync failed after a commit\n")
	}
	if s.DrainStartTime != nil {
		fmt.Fprintf(w, "Draining since\t%s\n", age(s.DrainStartTime, o.Now()))
	}
	if s.DrainFailures > 0 {
		fmt.Fprintf(w, "Drain timeouts\t%d\n", s.DrainFailures)
	}
	w.Flush()

	o.printf("\nConditions:\n")
	w = tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
	for _, c := range s.Conditions {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, age(&c.LastTransitionTime, o.Now()), oneLine(c.Message, 100))
	}
	w.Flush()

	o.printReplicas(x)
	if len(s.QuarantinedSegments) > 0 {
		o.printf("\nQuarantined segments (run: kubectl summa doctor %s):\n", x.Name)
		for _, q := range s.QuarantinedSegments {
			o.printf("  %s  %s\n", q.ID, oneLine(q.Reason, 100))
		}
	}
	if d := s.Doctor; d != nil {
		o.printf("\nLast doctor run: %s, phase %s", orNone(d.RequestID), orNone(d.Phase))
		if d.CompletionTime != nil {
			o.printf(", finished %s ago", age(d.CompletionTime, o.Now()))
		}
		o.printf("\n  checked %d segments, removed %d (%d documents)", d.CheckedSegments,
			max(d.RemovedSegmentCount, int64(len(d.RemovedSegments))), d.RemovedDocuments)
		if d.BackupClaimName != "" {
			o.printf(", backup in volume %s", d.BackupClaimName)
		}
		o.printf("\n")
		if d.Message != "" {
			o.printf("  %s\n", oneLine(d.Message, 200))
		}
	}
	events, err := recentEvents(ctx, cl, x, 10)
	if err != nil {
		o.printf("\nEvents: %v\n", err)
		return nil
	}
	o.printf("\nEvents:\n")
	if len(events) == 0 {
		o.printf("  <none>\n")
		return nil
	}
	w = tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "  LAST SEEN\tTYPE\tREASON\tMESSAGE")
	for _, e := range events {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", age(&metav1.Time{Time: eventTime(e)}, o.Now()), e.Type, e.Reason, oneLine(e.Message, 100))
	}
	return w.Flush()
}

// recentEvents are the last n events about x, newest last.
func recentEvents(ctx context.Context, cl *clients, x *summav1.SummaIndex, n int) ([]corev1.Event, error) {
	list, err := cl.kube.CoreV1().Events(x.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=SummaIndex,involvedObject.name=" + x.Name,
	})
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	items := list.Items
	sort.Slice(items, func(i, j int) bool { return eventTime(items[i]).Before(eventTime(items[j])) })
	if len(items) > n {
		items = items[len(items)-n:]
	}
	return items, nil
}

// eventTime is when an event last happened.
func eventTime(e corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// age is kubectl's short age of t.
func age(t *metav1.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// orNone is s, or <none> when empty.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// oneLine flattens s and clips it to n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
