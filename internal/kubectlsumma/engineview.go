package kubectlsumma

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	summav1 "github.com/summadev/summa/api/v1"
	engineclient "github.com/summadev/summa/client"
)

// enginePort is the engine's port in its pod.
const enginePort = 8082

// addEngineView adds the engine's own view of the index, read through a
// port forward to its pod with the index's admin token (never written to
// the report) and, with TLS on, its CA.
func (o *Options) addEngineView(ctx context.Context, cl *clients, w *reportWriter, x *summav1.SummaIndex) {
	c, stop, err := o.engineClient(ctx, cl, x)
	if err != nil {
		w.addError("engine", err)
		return
	}
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := c.GetIndex(ctx, x.Name)
	w.addJSON("engine/index", st, err)
	lc, err := c.Lifecycle(ctx)
	w.addJSON("engine/lifecycle", lc, err)
}

// addJSON writes v as indented JSON, or the error of collecting it.
func (w *reportWriter) addJSON(name string, v any, err error) {
	if err != nil {
		w.addError(name, err)
		return
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		w.addError(name, err)
		return
	}
	w.add(name+".json", append(data, '\n'))
}

// engineClient forwards a local port to the engine pod and returns a client
// of it with the admin token and the CA of the index's access settings.
func (o *Options) engineClient(ctx context.Context, cl *clients, x *summav1.SummaIndex) (*engineclient.Client, func(), error) {
	access, err := readAccess(ctx, cl, x)
	if err != nil {
		return nil, nil, err
	}
	port, stop, err := forward(cl, x.Namespace, x.EnginePodName())
	if err != nil {
		return nil, nil, err
	}
	scheme := "https"
	if access.caPEM == nil {
		scheme = "http"
	}
	c, err := engineclient.NewWithOptions(scheme+"://127.0.0.1:"+strconv.Itoa(port), engineclient.Options{
		Token: access.adminToken, CACert: access.caPEM, ServerName: x.Name + "." + x.Namespace + ".svc", Timeout: 20 * time.Second,
	})
	if err != nil {
		stop()
		return nil, nil, err
	}
	return c, stop, nil
}

// engineAccess is how the plugin reaches an engine.
type engineAccess struct {
	adminToken string
	// caPEM verifies the engine's certificate; nil with TLS disabled.
	caPEM []byte
}

// readAccess reads the admin token and the CA the operator uses for x
// (engine contract 1.1: Secret <name>-credentials, or
// status.access.credentialsSecret; CA in Secret <name>-tls, or
// spec.access.tls.secretName; none with spec.access.tls.mode Disabled).
// The fields are read untyped so that the plugin works with any operator
// version that has them.
func readAccess(ctx context.Context, cl *clients, x *summav1.SummaIndex) (*engineAccess, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: summav1.GroupVersion.Group, Version: summav1.GroupVersion.Version, Kind: "SummaIndex"})
	if err := cl.c.Get(ctx, clientKey(x), u); err != nil {
		return nil, fmt.Errorf("read summaindex: %w", err)
	}
	credentials, _, _ := unstructured.NestedString(u.Object, "status", "access", "credentialsSecret")
	if credentials == "" {
		credentials = x.Name + "-credentials"
	}
	a := &engineAccess{}
	sec, err := cl.kube.CoreV1().Secrets(x.Namespace).Get(ctx, credentials, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read the admin token from Secret %s: %w", credentials, err)
	}
	a.adminToken = string(sec.Data["admin-token"])
	mode, _, _ := unstructured.NestedString(u.Object, "spec", "access", "tls", "mode")
	if mode == "Disabled" {
		return a, nil
	}
	tlsSecret, _, _ := unstructured.NestedString(u.Object, "spec", "access", "tls", "secretName")
	if tlsSecret == "" {
		tlsSecret = x.Name + "-tls"
	}
	tsec, err := cl.kube.CoreV1().Secrets(x.Namespace).Get(ctx, tlsSecret, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read the CA from Secret %s: %w", tlsSecret, err)
	}
	a.caPEM = tsec.Data["ca.crt"]
	if len(a.caPEM) == 0 {
		return nil, fmt.Errorf("secret %s has no ca.crt to verify the engine with", tlsSecret)
	}
	return a, nil
}

// forward opens a port forward to the engine port of a pod and returns
// the local port and the function that closes it.
func forward(cl *clients, ns, pod string) (int, func(), error) {
	transport, upgrader, err := spdy.RoundTripperFor(cl.cfg)
	if err != nil {
		return 0, nil, fmt.Errorf("port forward: %w", err)
	}
	url := cl.kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	stopCh, readyCh := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(enginePort)}, stopCh, readyCh, io.Discard, io.Discard)
	if err != nil {
		return 0, nil, fmt.Errorf("port forward to pod %s: %w", pod, err)
	}
	errc := make(chan error, 1)
	go func() { errc <- fw.ForwardPorts() }()
	select {
	case <-readyCh:
	case err := <-errc:
		return 0, nil, fmt.Errorf("port forward to pod %s: %w", pod, err)
	case <-time.After(30 * time.Second):
		close(stopCh)
		return 0, nil, fmt.Errorf("port forward to pod %s: not ready within 30s", pod)
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		close(stopCh)
		return 0, nil, fmt.Errorf("port forward to pod %s: no local port: %v", pod, err)
	}
	return int(ports[0].Local), func() { close(stopCh) }, nil
}
