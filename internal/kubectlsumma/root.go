// Package kubectlsumma is the `kubectl summa` plugin: status, restart,
// doctor, suspend, resume, report, backup and restore for SummaIndex
// resources, with
// kubectl's own connection flags (-n, --context, --kubeconfig, ...) from
// cli-runtime. CloudNativePG's `kubectl cnpg` is the model.
package kubectlsumma

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// Options are what every subcommand shares: the connection flags and the
// output streams.
type Options struct {
	// flags are kubectl's connection flags.
	flags *genericclioptions.ConfigFlags
	// IOStreams are the command's input and outputs.
	genericiooptions.IOStreams
	// Now is the clock (tests fix it).
	Now func() time.Time
	// Poll is how often followed changes are read.
	Poll time.Duration
}

// onIndex is the cobra RunE of a subcommand taking one SummaIndex NAME
// (Args: exactlyOneName): it builds the clients, then runs run with them
// and NAME.
func (o *Options) onIndex(run func(ctx context.Context, cl *clients, name string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		cl, err := o.clients()
		if err != nil {
			return err
		}
		return run(cmd.Context(), cl, args[0])
	}
}

// follow calls step every o.Poll until step reports done or an error,
// or ctx ends (then ctx's error).
func (o *Options) follow(ctx context.Context, step func() (done bool, err error)) error {
	for {
		if done, err := step(); done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(o.Poll):
		}
	}
}

// clients are the API clients of one invocation.
type clients struct {
	// c reads and writes SummaIndex objects and core objects.
	c client.Client
	// kube reads logs and events.
	kube kubernetes.Interface
	// namespace is the namespace of -n or the kubeconfig's context.
	namespace string
	// cfg is the connection, for port forwards.
	cfg *rest.Config
}

// NewCommand is `kubectl summa` with its subcommands.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{flags: genericclioptions.NewConfigFlags(true), IOStreams: streams, Now: time.Now, Poll: time.Second}
	root := &cobra.Command{
		Use: "summa",
		// Help and errors name the command as kubectl runs it.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl summa"},
		Short:       "Operate SummaIndex resources: status, restart, doctor, suspend, resume, report, backup, restore",
		Long: `kubectl summa drives the Summa operator's SummaIndex resources.

 Find more information at: docs/install.md and docs/operator.md`,
		Example: `  # Show an index's phase, conditions, documents, drain estimate and recent events
  kubectl summa status articles

  # Restart the engine pod after a drain (nothing accepted is lost)
  kubectl summa restart articles

  # Repair quarantined segments, without a copy of the volume first
  kubectl summa doctor articles --no-backup

  # Back up to the object store of spec.backup and follow the backup
  kubectl summa backup articles

  # Collect everything support needs
  kubectl summa report articles -o articles-report.zip`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	o.flags.AddFlags(root.PersistentFlags())
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.AddCommand(newStatusCommand(o), newRestartCommand(o), newDoctorCommand(o),
		newSuspendCommand(o, true), newSuspendCommand(o, false), newReportCommand(o),
		newBackupCommand(o), newRestoreCommand(o))
	return root
}

// clients connects with the connection flags.
func (o *Options) clients() (*clients, error) {
	cfg, err := o.flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := o.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("namespace: %w", err)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, batchv1.AddToScheme,
		networkingv1.AddToScheme, summav1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connect to the API server: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to the API server: %w", err)
	}
	return &clients{c: c, kube: kube, namespace: ns, cfg: cfg}, nil
}

// get reads the SummaIndex name.
func (cl *clients) get(ctx context.Context, name string) (*summav1.SummaIndex, error) {
	x := &summav1.SummaIndex{}
	if err := cl.c.Get(ctx, client.ObjectKey{Namespace: cl.namespace, Name: name}, x); err != nil {
		return nil, fmt.Errorf("summaindex %s/%s: %w", cl.namespace, name, err)
	}
	return x, nil
}

// patch applies change to the SummaIndex name with a merge patch.
func (cl *clients) patch(ctx context.Context, name string, change func(*summav1.SummaIndex)) (*summav1.SummaIndex, error) {
	x, err := cl.get(ctx, name)
	if err != nil {
		return nil, err
	}
	base := client.MergeFrom(x.DeepCopy())
	change(x)
	if err := cl.c.Patch(ctx, x, base); err != nil {
		return nil, fmt.Errorf("patch summaindex %s/%s: %w", cl.namespace, name, err)
	}
	return x, nil
}

// printf writes to the command's output.
func (o *Options) printf(format string, args ...any) { fmt.Fprintf(o.Out, format, args...) }

// exactlyOneName is the Args check of the subcommands taking NAME.
func exactlyOneName(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%s needs exactly one SummaIndex NAME (see --help)", cmd.CommandPath())
	}
	return nil
}

// clientKey is the object key of x.
func clientKey(x *summav1.SummaIndex) client.ObjectKey {
	return client.ObjectKey{Namespace: x.Namespace, Name: x.Name}
}
