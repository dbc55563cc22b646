package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// podsPerNamespace is how many unrelated pods share a namespace.
const podsPerNamespace = 100

// createWorkers is how many objects are created at once.
const createWorkers = 16

// indexNamespaces names the n namespaces of the indexes.
func indexNamespaces(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("bench-idx-%02d", i)
	}
	return out
}

// indexKey is the namespace and name of the i-th index: suspended ones
// are s-NNNN, running ones r-NNNN, spread over the namespaces.
func indexKey(c config, running bool, i int) client.ObjectKey {
	prefix := "s-"
	if running {
		prefix = "r-"
	}
	return client.ObjectKey{Namespace: indexNamespaces(c.namespaces)[i%c.namespaces], Name: fmt.Sprintf("%s%04d", prefix, i)}
}

// createNamespaces creates the index namespaces and those of the
// unrelated pods.
func createNamespaces(ctx context.Context, e *env, c config) error {
	names := indexNamespaces(c.namespaces)
	for i := 0; i*podsPerNamespace < c.pods; i++ {
		names = append(names, fmt.Sprintf("bench-other-%02d", i))
	}
	for _, n := range names {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}
		if err := e.direct.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", n, err)
		}
	}
	return nil
}

// unrelatedPod is the i-th pod of someone else's application: the size
// and shape of a typical Deployment's pod (labels, annotations, env,
// resources), bound to another node, never run.
func unrelatedPod(i int) *corev1.Pod {
	app := "app-" + strconv.Itoa(i/10)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s-%06d", app, i),
			Namespace: fmt.Sprintf("bench-other-%02d", i/podsPerNamespace),
			Labels: map[string]string{"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": "shop",
				"pod-template-hash": "5d8f7c9b6"},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090",
				"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"},
		},
		Spec: corev1.PodSpec{
			NodeName: "some-other-node",
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.example.com/shop/" + app + ":v1.2.3",
				Args:  []string{"--listen=:8080", "--log-level=info"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
				Env: []corev1.EnvVar{{Name: "MODE", Value: "production"}, {Name: "REGION", Value: "eu-west-1"},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
			}},
		},
	}
}

// benchIndex is an index with a small schema; suspended ones never run
// an engine.
func benchIndex(key client.ObjectKey, suspend bool) *summav1.SummaIndex {
	return &summav1.SummaIndex{
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace},
		Spec: summav1.SummaIndexSpec{
			Schema: summav1.Schema{Fields: []summav1.SchemaField{
				{Name: "id", Type: summav1.FieldTypeKeyword, Primary: true},
				{Name: "body", Type: summav1.FieldTypeText, Stored: ptr.To(true)},
			}},
			Storage: summav1.StorageSpec{Size: resource.MustParse("1Gi")},
			Suspend: suspend,
		},
	}
}

// createAll creates n objects made by mk, createWorkers at a time.
func createAll(ctx context.Context, e *env, n int, mk func(i int) client.Object) error {
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range createWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				obj := mk(i)
				if err := e.direct.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("create %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}
