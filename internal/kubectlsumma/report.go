package kubectlsumma

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	summav1 "github.com/summadev/summa/api/v1"
)

// reportOptions are the flags of `kubectl summa report`.
type reportOptions struct {
	output            string
	operatorNamespace string
	tail              int64
}

// newReportCommand is `kubectl summa report NAME -o FILE.zip`.
func newReportCommand(o *Options) *cobra.Command {
	r := &reportOptions{}
	cmd := &cobra.Command{
		Use:   "report NAME -o FILE.zip",
		Short: "Collect everything support needs about an index into a zip file",
		Long: `Write one zip file with the SummaIndex, the objects the operator made for
it (pod, volumes, Service, Jobs, NetworkPolicy), their events, the logs of
the operator and of the engine (current and previous), and the engine's own
view: GET /v1/indexes/NAME and /v1/admin/lifecycle, reached through a port
forward with the index's admin token. Secrets are never included. A part
that cannot be collected is recorded as <part>.error.txt.`,
		Example: `  kubectl summa report articles -o articles-report.zip
  kubectl summa report articles -o r.zip --operator-namespace summa-system --tail 5000`,
		Args: exactlyOneName,
		PreRunE: func(*cobra.Command, []string) error {
			if r.output == "" {
				return fmt.Errorf("--output (-o) FILE.zip is required")
			}
			return nil
		},
		RunE: o.onIndex(func(ctx context.Context, cl *clients, name string) error {
			return o.report(ctx, cl, name, r)
		}),
	}
	cmd.Flags().StringVarP(&r.output, "output", "o", "", "the zip file to write")
	cmd.Flags().StringVar(&r.operatorNamespace, "operator-namespace", "summa-system", "namespace of the operator's pods")
	cmd.Flags().Int64Var(&r.tail, "tail", 2000, "lines of each log to keep")
	return cmd
}

// reportWriter adds the parts of a report to a zip.
type reportWriter struct {
	zw    *zip.Writer
	parts []string
	fails int
}

// add writes one part.
func (w *reportWriter) add(name string, data []byte) {
	f, err := w.zw.Create(name)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		w.parts = append(w.parts, name)
	}
}

// addYAML writes v as YAML, or the error of collecting it.
func (w *reportWriter) addYAML(name string, v any, err error) {
	if err != nil {
		w.addError(name, err)
		return
	}
	data, err := yaml.Marshal(v)
	if err != nil {
		w.addError(name, err)
		return
	}
	w.add(name+".yaml", data)
}

// addError records that a part could not be collected.
func (w *reportWriter) addError(name string, err error) {
	w.fails++
	w.add(name+".error.txt", []byte(err.Error()+"\n"))
}

// report writes the zip.
func (o *Options) report(ctx context.Context, cl *clients, name string, r *reportOptions) error {
	x, err := cl.get(ctx, name)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	w := &reportWriter{zw: zip.NewWriter(&buf)}
	strip := func(obj metav1.Object) { obj.SetManagedFields(nil) }
	strip(x)
	w.addYAML("summaindex", x, nil)

	sel := client.MatchingLabels{summav1.LabelIndex: x.Name}
	ns := client.InNamespace(x.Namespace)
	for _, part := range []struct {
		name string
		list client.ObjectList
	}{
		{"pods", &corev1.PodList{}}, {"persistentvolumeclaims", &corev1.PersistentVolumeClaimList{}},
		{"services", &corev1.ServiceList{}}, {"jobs", &batchv1.JobList{}},
		{"networkpolicies", &networkingv1.NetworkPolicyList{}},
	} {
		w.addYAML(part.name, part.list, listStripped(ctx, cl, part.list, ns, sel))
	}
	events, err := cl.kube.CoreV1().Events(x.Namespace).List(ctx, metav1.ListOptions{})
	if err == nil {
		kept := events.Items[:0]
		for _, e := range events.Items {
			if e.InvolvedObject.Name == x.Name || e.InvolvedObject.Name == x.EnginePodName() ||
				bytes.HasPrefix([]byte(e.InvolvedObject.Name), []byte(x.Name+"-")) {
				kept = append(kept, e)
			}
		}
		events.Items = kept
	}
	w.addYAML("events", events, err)

	o.addLogs(ctx, cl, w, x.Namespace, x.EnginePodName(), "engine", r.tail)
	operators, err := cl.kube.CoreV1().Pods(r.operatorNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=summa-operator"})
	if err != nil {
		w.addError("logs/operator", err)
	} else {
		for _, p := range operators.Items {
			o.addLogs(ctx, cl, w, p.Namespace, p.Name, "", r.tail)
		}
	}
	o.addEngineView(ctx, cl, w, x)
	if err := w.zw.Close(); err != nil {
		return fmt.Errorf("write the zip: %w", err)
	}
	if err := os.WriteFile(r.output, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", r.output, err)
	}
	o.printf("wrote %s: %d parts, %d could not be collected (see *.error.txt)\n", r.output, len(w.parts), w.fails)
	return nil
}

// listStripped lists into list and drops managed fields.
func listStripped(ctx context.Context, cl *clients, list client.ObjectList, opts ...client.ListOption) error {
	if err := cl.c.List(ctx, list, opts...); err != nil {
		return err
	}
	items, err := metaItems(list)
	if err != nil {
		return err
	}
	for _, it := range items {
		it.SetManagedFields(nil)
	}
	return nil
}

// metaItems are the items of a list as metav1.Object.
func metaItems(list client.ObjectList) ([]metav1.Object, error) {
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Object, 0, len(objs))
	for _, o := range objs {
		if m, ok := o.(metav1.Object); ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// addLogs adds the current and previous logs of a pod (one container, or
// all when container is empty).
func (o *Options) addLogs(ctx context.Context, cl *clients, w *reportWriter, ns, pod, container string, tail int64) {
	p, err := cl.kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		w.addError("logs/"+pod, err)
		return
	}
	var names []string
	for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
		if container == "" || c.Name == container {
			names = append(names, c.Name)
		}
	}
	for _, c := range names {
		for _, previous := range []bool{false, true} {
			part := "logs/" + pod + "/" + c
			if previous {
				part += ".previous"
			}
			rc, err := cl.kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: c, Previous: previous, TailLines: &tail}).Stream(ctx)
			if err != nil {
				if !previous {
					w.addError(part, err)
				}
				continue
			}
			data, err := io.ReadAll(io.LimitReader(rc, 64<<20))
			rc.Close()
			if err != nil {
				w.addError(part, err)
				continue
			}
			w.add(part+".log", data)
		}
	}
}
