package controllers

import (
	"bytes"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	summav1 "github.com/summadev/summa/api/v1"
)

// The CA's private key of an operator-issued certificate lives in a Secret
// of its own, <name>-ca (key ca.key), which no pod mounts and no client
// reads, as ECK keeps its CA apart from the certificates it hands out;
// <name>-tls keeps ca.crt (what clients verify with), tls.crt and tls.key.
// Who may read <name>-tls (an app's ServiceAccount, to get ca.crt) can
// then no longer issue certificates the engine's clients trust.
//
// A <name>-tls made by an earlier version still holds ca.key: the key is
// written to <name>-ca first, and only then removed from <name>-tls, so
// that a pass killed in between loses nothing and the CA, and the ca.crt
// clients trust, stay the same.

// caSecretName is the name of the Secret of index's CA key.
func caSecretName(index *summav1.SummaIndex) string { return index.Name + "-ca" }

// caKeySecret returns index's CA key Secret, or nil when there is none.
func (r *SummaIndexReconciler) caKeySecret(ctx context.Context, index *summav1.SummaIndex) (*corev1.Secret, error) {
	s, err := r.getSecret(ctx, index.Namespace, caSecretName(index))
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get CA secret %s: %w", caSecretName(index), err)
	}
	if err := r.checkOwned(ctx, index, s, ""); err != nil {
		return nil, err
	}
	return s, nil
}

// withCAKey returns the TLS Secret's data with the CA key of cur (index's CA
// key Secret) in it; an earlier version's ca.key in the TLS data is used
// when cur has none.
func withCAKey(tlsData map[string][]byte, cur *corev1.Secret) map[string][]byte {
	out := map[string][]byte{}
	for k, v := range tlsData {
		out[k] = v
	}
	if cur != nil && len(cur.Data[summav1.CAKeyKey]) > 0 {
		out[summav1.CAKeyKey] = cur.Data[summav1.CAKeyKey]
	}
	return out
}

// saveCAKey makes index's CA key Secret (cur, nil when missing) hold key.
func (r *SummaIndexReconciler) saveCAKey(ctx context.Context, index *summav1.SummaIndex, cur *corev1.Secret, key []byte) error {
	if cur != nil && bytes.Equal(cur.Data[summav1.CAKeyKey], key) {
		return nil
	}
	name := caSecretName(index)
	if cur != nil {
		// With the resourceVersion read: a concurrent writer wins and the
		// next pass looks again.
		cur.Data = map[string][]byte{summav1.CAKeyKey: key}
		if err := r.Update(ctx, cur); err != nil {
			return fmt.Errorf("update CA secret %s: %w", name, err)
		}
		return nil
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: index.Namespace, Labels: index.Labels()},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{summav1.CAKeyKey: key},
	}
	return r.createOwned(ctx, index, s, "CA secret", "delete or rename it")
}

// splitCAKey saves the CA key of the issued TLS data into index's CA key
// Secret and removes it from data.
func (r *SummaIndexReconciler) splitCAKey(ctx context.Context, index *summav1.SummaIndex, cur *corev1.Secret, data map[string][]byte) error {
	key := data[summav1.CAKeyKey]
	delete(data, summav1.CAKeyKey)
	if len(key) == 0 {
		return nil
	}
	return r.saveCAKey(ctx, index, cur, key)
}
