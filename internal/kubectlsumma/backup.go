package kubectlsumma

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	summav1 "github.com/summadev/summa/api/v1"
)

// backupOptions are the flags of `kubectl summa backup`.
type backupOptions struct {
	name   string
	noWait bool
}

// newBackupCommand is `kubectl summa backup NAME`.
func newBackupCommand(o *Options) *cobra.Command {
	bo := &backupOptions{}
	cmd := &cobra.Command{
		Use:   "backup NAME",
		Short: "Back an index up online to its object store (a SummaIndexBackup) and follow it",
		Long: `Create a SummaIndexBackup of the index and follow it until it completed or
failed. The engine uploads its committed generation to spec.backup.s3
while it keeps serving reads and writes; files already in the bucket are
not uploaded again.`,
		Example: `  kubectl summa backup articles
  kubectl summa backup articles --name before-upgrade --no-wait`,
		Args: exactlyOneName,
		RunE: o.onIndex(func(ctx context.Context, cl *clients, name string) error {
			return o.backup(ctx, cl, name, bo)
		}),
	}
	cmd.Flags().StringVar(&bo.name, "name", "", "name of the SummaIndexBackup (default NAME-<UTC time>)")
	cmd.Flags().BoolVar(&bo.noWait, "no-wait", false, "create the SummaIndexBackup and return")
	return cmd
}

// backup creates the SummaIndexBackup and follows it.
func (o *Options) backup(ctx context.Context, cl *clients, index string, bo *backupOptions) error {
	if _, err := cl.get(ctx, index); err != nil {
		return err
	}
	name := bo.name
	if name == "" {
		name = index + "-" + o.Now().UTC().Format("20060102-150405")
	}
	b := &summav1.SummaIndexBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cl.namespace},
		Spec:       summav1.SummaIndexBackupSpec{Index: index},
	}
	if err := cl.c.Create(ctx, b); err != nil {
		return fmt.Errorf("create summaindexbackup %s/%s: %w", cl.namespace, name, err)
	}
	o.printf("summaindexbackup/%s created\n", name)
	if bo.noWait {
		return nil
	}
	last := ""
	return o.follow(ctx, func() (bool, error) {
		if err := cl.c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return false, fmt.Errorf("summaindexbackup %s/%s: %w", cl.namespace, name, err)
		}
		st := b.Status
		line := fmt.Sprintf("%s %s", st.Phase, st.Message)
		if line != last && st.Phase != "" {
			o.printf("%s\n", line)
			last = line
		}
		switch st.Phase {
		case summav1.BackupPhaseCompleted:
			o.printf("backup %s of %s completed: generation %d, %d documents, %d bytes uploaded, %d reused\n",
				st.BackupID, index, st.Generation, st.Documents, st.Bytes, st.ReusedBytes)
			return true, nil
		case summav1.BackupPhaseFailed:
			return true, fmt.Errorf("backup of %s failed: %s", index, st.Message)
		}
		return false, nil
	})
}

// restoreOptions are the flags of `kubectl summa restore`.
type restoreOptions struct {
	from, fromNamespace, backup string
	apply                       bool
}

// newRestoreCommand is `kubectl summa restore NAME`.
func newRestoreCommand(o *Options) *cobra.Command {
	ro := &restoreOptions{}
	cmd := &cobra.Command{
		Use:   "restore NAME (--from INDEX | --backup ID)",
		Short: "Print (or apply) a new SummaIndex that restores a backup before its engine starts",
		Long: `Build a SummaIndex NAME with spec.restore: its schema, storage, image and
spec.backup are those of the SummaIndex INDEX (--from, in --from-namespace),
or of the index a SummaIndexBackup with status.backupId ID backed up
(--backup alone). NAME may be INDEX's own name (in another namespace, or
once the original is deleted) or a new one: then spec.restore.index names
INDEX, whose backups are restored under NAME. Without --backup the newest
backup is restored. The YAML is printed; --apply creates it.`,
		Example: `  kubectl summa restore articles --from articles --from-namespace prod -n staging
  kubectl summa restore articles-copy --from articles --apply
  kubectl summa restore articles --backup 20261205T181502.123Z-3fa2c1d0 --apply`,
		Args: exactlyOneName,
		PreRunE: func(*cobra.Command, []string) error {
			if ro.from == "" && ro.backup == "" {
				return errors.New("restore needs --from INDEX or --backup ID")
			}
			return nil
		},
		RunE: o.onIndex(func(ctx context.Context, cl *clients, name string) error {
			return o.restore(ctx, cl, name, ro)
		}),
	}
	cmd.Flags().StringVar(&ro.from, "from", "", "SummaIndex whose settings and backups to use")
	cmd.Flags().StringVar(&ro.fromNamespace, "from-namespace", "", "namespace of --from (default: the current one)")
	cmd.Flags().StringVar(&ro.backup, "backup", "", "backup ID to restore (default: the newest)")
	cmd.Flags().BoolVar(&ro.apply, "apply", false, "create the SummaIndex instead of printing it")
	return cmd
}

// restore builds, then prints or creates, the restoring SummaIndex.
func (o *Options) restore(ctx context.Context, cl *clients, name string, ro *restoreOptions) error {
	srcName, srcNS := ro.from, ro.fromNamespace
	if srcNS == "" {
		srcNS = cl.namespace
	}
	if srcName == "" {
		list := &summav1.SummaIndexBackupList{}
		if err := cl.c.List(ctx, list, client.InNamespace(srcNS)); err != nil {
			return fmt.Errorf("list summaindexbackups in %s: %w", srcNS, err)
		}
		for _, b := range list.Items {
			if b.Status.BackupID == ro.backup {
				srcName = b.Spec.Index
			}
		}
		if srcName == "" {
			return fmt.Errorf("no SummaIndexBackup in namespace %s has backup ID %s: name the index with --from", srcNS, ro.backup)
		}
	}
	src := &summav1.SummaIndex{}
	if err := cl.c.Get(ctx, client.ObjectKey{Namespace: srcNS, Name: srcName}, src); err != nil {
		return fmt.Errorf("summaindex %s/%s: %w", srcNS, srcName, err)
	}
	if src.Spec.Backup == nil {
		return fmt.Errorf("summaindex %s/%s has no spec.backup: there is no object store to restore from", srcNS, srcName)
	}
	x := restoringIndex(src, name, cl.namespace, ro.backup)
	if !ro.apply {
		out, err := yaml.Marshal(x)
		if err != nil {
			return fmt.Errorf("encode the SummaIndex: %w", err)
		}
		o.printf("%s", out)
		return nil
	}
	if err := cl.c.Create(ctx, x); err != nil {
		return fmt.Errorf("create summaindex %s/%s: %w", x.Namespace, x.Name, err)
	}
	o.printf("summaindex/%s created; it restores backup %s before its engine starts\n", x.Name, x.Spec.Restore.BackupID)
	return nil
}

// restoringIndex is a new SummaIndex name of src's settings in namespace,
// restoring backup (empty: the newest) of src.
func restoringIndex(src *summav1.SummaIndex, name, namespace, backup string) *summav1.SummaIndex {
	if backup == "" {
		backup = summav1.RestoreLatest
	}
	spec := src.Spec.DeepCopy()
	spec.Doctor.RequestID = ""
	spec.Suspend = false
	spec.Restore = &summav1.RestoreSpec{BackupID: backup}
	if name != src.Name {
		spec.Restore.Index = src.Name
	}
	return &summav1.SummaIndex{
		TypeMeta:   metav1.TypeMeta{APIVersion: summav1.GroupVersion.String(), Kind: "SummaIndex"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       *spec,
	}
}
