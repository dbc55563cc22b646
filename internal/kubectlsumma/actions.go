package kubectlsumma

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	summav1 "github.com/summadev/summa/api/v1"
)

// Annotations the operator honours (controllers/summaindex_failures.go).
const (
	// annotationRestartedAt asks for one drained restart per new value.
	annotationRestartedAt = "summa.dev/restartedAt"
)

// newRestartCommand is `kubectl summa restart NAME`.
func newRestartCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "restart NAME",
		Short: "Restart an index's engine pod after a drain (like kubectl rollout restart)",
		Long: `Ask the operator for one drained restart: the engine stops admitting
writes, commits everything it accepted, and only then is its pod replaced.
This sets the annotation summa.dev/restartedAt to the current time.`,
		Example: `  kubectl summa restart articles`,
		Args:    exactlyOneName,
		RunE: o.onIndex(func(ctx context.Context, cl *clients, name string) error {
			at := o.Now().UTC().Format(time.RFC3339)
			if _, err := cl.patch(ctx, name, func(x *summav1.SummaIndex) {
				if x.Annotations == nil {
					x.Annotations = map[string]string{}
				}
				x.Annotations[annotationRestartedAt] = at
			}); err != nil {
				return err
			}
			o.printf("summaindex/%s restart requested (drained; %s=%s)\n", name, annotationRestartedAt, at)
			return nil
		}),
	}
}

// newSuspendCommand is `kubectl summa suspend NAME` (suspend) or
// `kubectl summa resume NAME`.
func newSuspendCommand(o *Options, suspend bool) *cobra.Command {
	use, short, verb := "resume NAME", "Start a suspended index's engine again on its volume", "resumed"
	if suspend {
		use, short, verb = "suspend NAME", "Drain and stop an index's engine pod, keeping its volume", "suspended"
	}
	return &cobra.Command{
		Use:     use,
		Short:   short,
		Example: "  kubectl summa " + use[:len(use)-len(" NAME")] + " articles",
		Args:    exactlyOneName,
		RunE: o.onIndex(func(ctx context.Context, cl *clients, name string) error {
			if _, err := cl.patch(ctx, name, func(x *summav1.SummaIndex) { x.Spec.Suspend = suspend }); err != nil {
				return err
			}
			o.printf("summaindex/%s %s\n", name, verb)
			return nil
		}),
	}
}

// doctorOptions are the flags of `kubectl summa doctor`.
type doctorOptions struct {
	noBackup  bool
	requestID string
	wait      bool
	timeout   time.Duration
}

// newDoctorCommand is `kubectl summa doctor NAME`.
func newDoctorCommand(o *Options) *cobra.Command {
	d := &doctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor NAME",
		Short: "Run the offline doctor on an index and follow it to the end",
		Long: `Start one doctor run: a copy of the volume (unless --no-backup), a drain,
the engine stopped, the doctor Job, its report recorded in status, and the
engine started again. The command sets a fresh spec.doctor.requestId and
follows the run until it succeeds or fails (exit status 1 when it fails).`,
		Example: `  kubectl summa doctor articles
  kubectl summa doctor articles --no-backup --timeout 1h`,
		Args: exactlyOneName,
		RunE: o.onIndex(func(ctx context.Context, cl *clients, name string) error {
			return o.doctor(ctx, cl, name, d)
		}),
	}
	cmd.Flags().BoolVar(&d.noBackup, "no-backup", false, "do not copy the volume first (spec.doctor.backup: None)")
	cmd.Flags().StringVar(&d.requestID, "request-id", "", "the run's requestId (default: one made from the current time)")
	cmd.Flags().BoolVar(&d.wait, "wait", true, "follow the run until it ends")
	cmd.Flags().DurationVar(&d.timeout, "timeout", 30*time.Minute, "how long to follow the run")
	return cmd
}

// doctor starts a run and follows it.
func (o *Options) doctor(ctx context.Context, cl *clients, name string, d *doctorOptions) error {
	id := d.requestID
	if id == "" {
		id = "r" + o.Now().UTC().Format("20060102-150405")
	}
	x, err := cl.get(ctx, name)
	if err != nil {
		return err
	}
	if x.Spec.Doctor.RequestID == id || (x.Status.Doctor != nil && x.Status.Doctor.RequestID == id) {
		return fmt.Errorf("requestId %s was already used on summaindex/%s: a requestId runs once; pass another --request-id", id, name)
	}
	if _, err := cl.patch(ctx, name, func(x *summav1.SummaIndex) {
		x.Spec.Doctor.RequestID = id
		x.Spec.Doctor.Backup = summav1.BackupCopy
		if d.noBackup {
			x.Spec.Doctor.Backup = summav1.BackupNone
		}
	}); err != nil {
		return err
	}
	o.printf("summaindex/%s doctor run %s requested (backup: %t)\n", name, id, !d.noBackup)
	if !d.wait {
		return nil
	}
	return o.followDoctor(ctx, cl, name, id, d.timeout)
}

// followDoctor prints the phases of doctor run id of name until it ends
// or timeout passes.
func (o *Options) followDoctor(ctx context.Context, cl *clients, name, id string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := ""
	err := o.follow(ctx, func() (bool, error) {
		x, err := cl.get(ctx, name)
		if err != nil {
			return false, err
		}
		st := x.Status.Doctor
		if st == nil || st.RequestID != id {
			return false, nil
		}
		if st.Phase != last {
			o.printf("  %s  %s\n", o.Now().Format("15:04:05"), st.Phase)
			last = st.Phase
		}
		switch st.Phase {
		case summav1.DoctorPhaseSucceeded:
			o.printf("doctor run %s succeeded: checked %d segments, removed %d (%d documents)\n",
				id, st.CheckedSegments, len(st.RemovedSegments), st.RemovedDocuments)
			for _, seg := range st.RemovedSegments {
				o.printf("  removed segment %s\n", seg)
			}
			return true, nil
		case summav1.DoctorPhaseFailed:
			return true, fmt.Errorf("doctor run %s failed: %s", id, st.Message)
		}
		return false, nil
	})
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		return fmt.Errorf("doctor run %s still %s after %v; it goes on (kubectl summa status %s)", id, orNone(last), timeout, name)
	}
	return err
}
