package kubectlsumma

import (
	"fmt"
	"text/tabwriter"

	summav1 "github.com/summadev/summa/api/v1"
)

// printReplicas prints the leader and each read follower of x, with the
// generation it serves and its replication lag (from status.replicas).
func (o *Options) printReplicas(x *summav1.SummaIndex) {
	r := x.Status.Replicas
	if r == nil {
		return
	}
	lag := "unknown"
	if r.MaxLagSeconds != nil {
		lag = fmt.Sprintf("%.1fs", *r.MaxLagSeconds)
	}
	o.printf("\nReplicas: %d/%d followers ready (%d at the desired revision and caught up), max lag %s:\n",
		r.Ready, r.Desired, r.Updated, lag)
	w := tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "  POD\tROLE\tREADY\tSTATE\tGENERATION\tLEADER GENERATION\tLAG\tREVISION")
	fmt.Fprintf(w, "  %s\tleader\t%v\t-\t%d\t-\t-\t%s\n", orNone(x.Status.PodName), x.IsReady(), x.Status.Generation, orNone(x.Status.CurrentRevision))
	for _, f := range r.Followers {
		l := "unknown"
		if f.LagSeconds != nil {
			l = fmt.Sprintf("%.1fs", *f.LagSeconds)
		}
		fmt.Fprintf(w, "  %s\tfollower\t%v\t%s\t%d\t%d\t%s\t%s\n", f.Name, f.Ready, orNone(f.State), f.Generation,
			f.LeaderGeneration, l, orNone(f.Revision))
	}
	_ = w.Flush()
}
