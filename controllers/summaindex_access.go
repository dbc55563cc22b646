package controllers

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	summav1 "github.com/summadev/summa/api/v1"
	engineclient "github.com/summadev/summa/client"
)

// The access step: the engine's tokens (a Secret the operator creates or
// the one spec.access.credentialsSecret names), its certificate (issued and
// renewed by the operator, or a Secret made by someone else, or none), the
// NetworkPolicies, and status.access. Every pass decides from the objects
// as they are, so it resumes wherever it was interrupted; a value the
// operator wrote is never overwritten, so a person rotates a token by
// editing the Secret.
//
// The kubelet refreshes mounted Secrets lazily (about a minute). The
// operator therefore keeps a hash of what is mounted in the engine pod's
// annotation summa.dev/access-hash: changing an annotation makes the
// kubelet sync the pod, and with it its Secret volumes, at once. The
// annotation is not part of the pod's revision, so it never causes a
// restart; the engine re-reads its token and certificate files by itself.

const (
	// AnnotationAccessHash carries, on the engine pod, a hash of the tokens
	// and certificate the pod mounts.
	AnnotationAccessHash = "summa.dev/access-hash"
	// tokenBytes is the entropy of a generated token.
	tokenBytes = 32
	// rotationGrace is how long after the pod was told about new
	// credentials a refused admin token counts as a rotation in flight.
	rotationGrace = 2 * time.Minute
	// unauthorizedRetry is the requeue while the engine refuses the token.
	unauthorizedRetry = 2 * time.Second
)

// access is what the access step decided in this pass: the Secrets the
// engine pod mounts and a hash of their mounted content. The zero value is
// an engine without tokens or TLS (pods made before version 1.1), and not
// known: the step failed, so no pod is created or replaced.
type access struct {
	// known tells that the access step succeeded.
	known bool
	// credentialsSecret names the Secret of the tokens.
	credentialsSecret string
	// tlsSecret names the Secret of the certificate; "" serves plain HTTP.
	tlsSecret string
	// caPresent tells that tlsSecret has a ca.crt for app containers.
	caPresent bool
	// hash is the hash of the mounted tokens and certificate.
	hash string
}

// Degraded reasons of the access step (see summaindex_failures.go).
const (
	// ReasonCredentialsSecretMissing: spec.access.credentialsSecret names
	// no Secret.
	ReasonCredentialsSecretMissing = "CredentialsSecretMissing"
	// ReasonCredentialsSecretInvalid: that Secret lacks a token.
	ReasonCredentialsSecretInvalid = "CredentialsSecretInvalid"
	// ReasonTLSSecretMissing: spec.access.tls.secretName names no Secret.
	ReasonTLSSecretMissing = "TLSSecretMissing"
	// ReasonTLSSecretInvalid: that Secret has no usable key pair.
	ReasonTLSSecretInvalid = "TLSSecretInvalid"
	// ReasonSecretConflict: a Secret of a generated name belongs to
	// someone else.
	ReasonSecretConflict = "SecretConflict"
	// ReasonNetworkPolicyConflict: a NetworkPolicy of a generated name
	// belongs to someone else.
	ReasonNetworkPolicyConflict = "NetworkPolicyConflict"
	// ReasonWaitingForGarbageCollection: an object of a generated name
	// still belongs to a deleted SummaIndex of the same name.
	ReasonWaitingForGarbageCollection = "WaitingForGarbageCollection"
	// ReasonAccessFailed: the access objects could not be read or written.
	ReasonAccessFailed = "AccessFailed"
	// ReasonUnauthorized: the engine refuses the admin token for longer
	// than a rotation takes.
	ReasonUnauthorized = "Unauthorized"
)

// accessError is a problem with the access objects that a person has to
// fix, with its Degraded reason.
type accessError struct {
	// reason is the Degraded condition's reason.
	reason string
	// msg says what is wrong and what to do.
	msg string
}

// Error returns the message.
func (e *accessError) Error() string { return e.msg }

// reconcileAccess makes the credentials, the certificate and the
// NetworkPolicies what index asks for and records them in status.access. Its
// error is a step failure (Degraded with a reason naming the problem).
func (r *SummaIndexReconciler) reconcileAccess(ctx context.Context, index *summav1.SummaIndex) (access, error) {
	acc, err := r.ensureAccess(ctx, index)
	var ae *accessError
	switch {
	case errors.As(err, &ae):
		return access{}, failed(ae.reason, err)
	case err != nil:
		return access{}, failed(ReasonAccessFailed, err)
	}
	return acc, nil
}

// accessStep is the pass step of the credentials, the certificate and the
// NetworkPolicies; the later steps read its decisions from p.access (not
// known when it failed).
func (r *SummaIndexReconciler) accessStep(ctx context.Context, p *pass) error {
	acc, err := r.reconcileAccess(ctx, p.index)
	p.access = acc
	return err
}

// ensureAccess is reconcileAccess's work.
func (r *SummaIndexReconciler) ensureAccess(ctx context.Context, index *summav1.SummaIndex) (access, error) {
	creds, err := r.ensureCredentials(ctx, index)
	if err != nil {
		return access{}, err
	}
	tlsSecret, cert, err := r.ensureTLS(ctx, index)
	if err != nil {
		return access{}, err
	}
	if err := r.ensureNetworkPolicies(ctx, index); err != nil {
		return access{}, err
	}
	acc := access{known: true, credentialsSecret: creds.Name, hash: accessHash(creds, tlsSecret)}
	if index.Status.Access == nil {
		index.Status.Access = &summav1.AccessStatus{}
	}
	st := index.Status.Access
	st.CredentialsSecret = creds.Name
	st.TLSSecret, st.CertificateNotAfter, st.CertificateRenewalTime = "", nil, nil
	if tlsSecret != nil {
		acc.tlsSecret = tlsSecret.Name
		acc.caPresent = len(tlsSecret.Data[summav1.CACertKey]) > 0
		st.TLSSecret = tlsSecret.Name
		st.CertificateNotAfter = &metav1.Time{Time: cert.notAfter}
		if index.IssuesCertificate() {
			st.CertificateRenewalTime = &metav1.Time{Time: cert.renewAt}
		}
	}
	return acc, nil
}

// accessHash hashes what the engine pod mounts of the two Secrets.
func accessHash(creds, tlsSecret *corev1.Secret) string {
	h := sha256.New()
	for _, k := range summav1.TokenKeys {
		fmt.Fprintf(h, "%s\x00%s\x00", k, creds.Data[k])
	}
	if tlsSecret != nil {
		for _, k := range []string{summav1.TLSCertKey, summav1.TLSKeyKey, summav1.CACertKey} {
			fmt.Fprintf(h, "%s\x00%s\x00", k, tlsSecret.Data[k])
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// getSecret reads a Secret (see getLive): a Secret a person made is read
// from the API server.
func (r *SummaIndexReconciler) getSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := r.getLive(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); err != nil {
		return nil, err
	}
	return s, nil
}

// getLive reads an object the operator names: from the cache, which holds
// only what the operator labelled (CacheByObject), else from the API
// server. So an object of the same name that someone else made is seen
// (and refused, never adopted or written into), as is one created a moment
// ago that the cache has not caught up with.
func (r *SummaIndexReconciler) getLive(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	err := r.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) && r.APIReader != nil {
		err = r.APIReader.Get(ctx, key, obj)
	}
	return err
}

// lookedUp reads the error of a Get of the object called name (a what):
// found is false when the Get failed, and err is nil when it failed only
// because the object does not exist.
func lookedUp(err error, what, name string) (found bool, _ error) {
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get %s %s: %w", what, name, err)
	}
	return true, nil
}

// ensureCredentials returns the Secret of the engine's tokens: the one
// spec.access.credentialsSecret names (checked, never changed), or
// <name>-credentials, created with random tokens, its missing keys filled
// in and its existing values left alone.
func (r *SummaIndexReconciler) ensureCredentials(ctx context.Context, index *summav1.SummaIndex) (*corev1.Secret, error) {
	name := index.CredentialsSecretName()
	s, err := r.getSecret(ctx, index.Namespace, name)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get credentials secret %s: %w", name, err)
	}
	if !index.GeneratesCredentials() {
		if err != nil {
			return nil, &accessError{reason: ReasonCredentialsSecretMissing, msg: fmt.Sprintf(
				"Secret %s named by spec.access.credentialsSecret does not exist: create it with the keys %s",
				name, strings.Join(summav1.TokenKeys, ", "))}
		}
		if missing := missingTokens(s); len(missing) > 0 {
			return nil, &accessError{reason: ReasonCredentialsSecretInvalid, msg: fmt.Sprintf(
				"Secret %s named by spec.access.credentialsSecret lacks a token under %s", name, strings.Join(missing, ", "))}
		}
		return s, nil
	}
	if err != nil {
		return r.createCredentials(ctx, index)
	}
	if err := r.checkOwned(ctx, index, s, "spec.access.credentialsSecret"); err != nil {
		return nil, err
	}
	missing := missingTokens(s)
	if len(missing) == 0 {
		return s, nil
	}
	if err := fillTokens(s, missing); err != nil {
		return nil, err
	}
	// Update carries the resourceVersion read: a concurrent edit (a
	// rotation) wins, and the next pass looks again.
	if err := r.Update(ctx, s); err != nil {
		return nil, fmt.Errorf("fill in the tokens %s of secret %s: %w", strings.Join(missing, ", "), name, err)
	}
	r.event(index, s, corev1.EventTypeNormal, "CredentialsUpdated", "generated %s in secret %s", strings.Join(missing, ", "), name)
	return s, nil
}

// createCredentials creates <name>-credentials with three random tokens.
func (r *SummaIndexReconciler) createCredentials(ctx context.Context, index *summav1.SummaIndex) (*corev1.Secret, error) {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: index.GeneratedCredentialsSecretName(), Namespace: index.Namespace, Labels: index.Labels()},
		Type:       corev1.SecretTypeOpaque,
	}
	if err := fillTokens(s, summav1.TokenKeys); err != nil {
		return nil, err
	}
	if err := r.createOwned(ctx, index, s, "credentials secret", "delete it, or name it in spec.access.credentialsSecret to use it"); err != nil {
		return nil, err
	}
	r.event(index, s, corev1.EventTypeNormal, "CredentialsCreated", "secret %s created with admin, write and read tokens", s.Name)
	return s, nil
}

// checkOwned refuses an object of a generated name that index does not
// control; one still controlled by a deleted SummaIndex of the same name
// is waited for (the garbage collector removes it), and one orphaned by
// such an index is adopted, or replaced if it is a Secret
// (summaindex_orphans.go).
func (r *SummaIndexReconciler) checkOwned(ctx context.Context, index *summav1.SummaIndex, obj client.Object, field string) error {
	if metav1.IsControlledBy(obj, index) {
		return nil
	}
	kind := kindOf(obj)
	if isOrphanOf(index, obj) {
		if _, ok := obj.(*corev1.Secret); ok {
			return r.replaceOrphanSecret(ctx, index, obj)
		}
		return r.adoptOrphan(ctx, index, obj)
	}
	if owner := metav1.GetControllerOf(obj); owner != nil && owner.Kind == "SummaIndex" && owner.Name == index.Name {
		return &accessError{reason: ReasonWaitingForGarbageCollection, msg: fmt.Sprintf(
			"%s %s still belongs to a deleted SummaIndex %s; waiting for the garbage collector", kind, obj.GetName(), index.Name)}
	}
	hint := "delete or rename it"
	if field != "" {
		hint += ", or name it in " + field + " to use it"
	}
	return conflictError(obj, hint)
}

// conflictError refuses obj, which someone other than the operator made
// under a name the operator uses; hint says what the person may do.
func conflictError(obj client.Object, hint string) error {
	reason := ReasonSecretConflict
	if _, ok := obj.(*networkingv1.NetworkPolicy); ok {
		reason = ReasonNetworkPolicyConflict
	}
	return &accessError{reason: reason, msg: fmt.Sprintf(
		"%s %s exists and was not made by the operator for this SummaIndex: %s", kindOf(obj), obj.GetName(), hint)}
}

// createOwned creates obj (a what) controlled by index; one of the same
// name that exists already is a conflictError with hint.
func (r *SummaIndexReconciler) createOwned(ctx context.Context, index *summav1.SummaIndex, obj client.Object, what, hint string) error {
	if err := controllerutil.SetControllerReference(index, obj, r.Scheme); err != nil {
		return fmt.Errorf("owner reference on %s %s: %w", what, obj.GetName(), err)
	}
	if err := r.Create(ctx, obj); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return conflictError(obj, hint)
		}
		return fmt.Errorf("create %s %s: %w", what, obj.GetName(), err)
	}
	return nil
}

// missingTokens lists the token keys of s without a token, sorted.
func missingTokens(s *corev1.Secret) []string {
	var missing []string
	for _, k := range summav1.TokenKeys {
		if firstToken(s.Data[k]) == "" {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	return missing
}

// firstToken is the first non-empty line of a token file's content.
func firstToken(data []byte) string {
	for _, line := range strings.Split(string(data), "\n") {
		if t := strings.TrimSpace(line); t != "" {
			return t
		}
	}
	return ""
}

// fillTokens sets a new random token under each of keys in s.
func fillTokens(s *corev1.Secret, keys []string) error {
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	for _, k := range keys {
		tok, err := newToken()
		if err != nil {
			return err
		}
		s.Data[k] = []byte(tok)
	}
	return nil
}

// newToken returns 32 random bytes, base64url-encoded.
func newToken() (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate a token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// syncAccessAnnotation tells a running engine pod about changed tokens or
// a renewed certificate by changing its annotation summa.dev/access-hash:
// the kubelet then refreshes the pod's Secret volumes at once, and the
// engine re-reads the files. The pod is not restarted.
func (r *SummaIndexReconciler) syncAccessAnnotation(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod, acc access) error {
	if acc.hash == "" {
		return nil
	}
	if pod.Annotations[AnnotationAccessHash] == acc.hash {
		if st := index.Status.Access; st == nil || st.SyncedHash != acc.hash {
			r.recordAccessSync(index, acc.hash) // a new pod, or a pass cut short after the patch
		}
		return nil
	}
	if err := r.patchAccessHash(ctx, pod, acc.hash); err != nil {
		return err
	}
	r.recordAccessSync(index, acc.hash)
	r.event(index, pod, corev1.EventTypeNormal, "AccessUpdated",
		"tokens or certificate changed: engine pod %s told to reload them (no restart)", pod.Name)
	return nil
}

// patchAccessHash sets pod's annotation summa.dev/access-hash to hash.
func (r *SummaIndexReconciler) patchAccessHash(ctx context.Context, pod *corev1.Pod, hash string) error {
	if err := r.annotate(ctx, pod, AnnotationAccessHash, hash); err != nil {
		return fmt.Errorf("pod %s, the new access hash: %w", pod.Name, err)
	}
	return nil
}

// annotate sets obj's annotation key to value with a merge patch.
func (r *SummaIndexReconciler) annotate(ctx context.Context, obj client.Object, key, value string) error {
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[key] = value
	obj.SetAnnotations(a)
	if err := r.Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("annotate %s: %w", key, err)
	}
	return nil
}

// recordAccessSync notes in status that the engine pod was told about
// hash now.
func (r *SummaIndexReconciler) recordAccessSync(index *summav1.SummaIndex, hash string) {
	if index.Status.Access == nil {
		index.Status.Access = &summav1.AccessStatus{}
	}
	now := metav1.NewTime(r.Options.Now())
	index.Status.Access.SyncedHash, index.Status.Access.SyncTime = hash, &now
}

// rotationInFlight reports whether err is the engine refusing the admin
// token soon after the pod was told about new credentials: the kubelet
// and the engine have not caught up yet, which is no failure.
func (r *SummaIndexReconciler) rotationInFlight(index *summav1.SummaIndex, err error) bool {
	st := index.Status.Access
	return engineclient.IsCode(err, engineclient.CodeUnauthorized) &&
		st != nil && st.SyncTime != nil && r.Options.Now().Sub(st.SyncTime.Time) < rotationGrace
}

// refusedToken turns a refused admin token that reached the end of the
// pod step (a drain, a resume) into what it is: during a rotation, a
// retry in unauthorizedRetry; after it, the failure Unauthorized.
func (r *SummaIndexReconciler) refusedToken(ctx context.Context, index *summav1.SummaIndex, res reconcile.Result, err error) (reconcile.Result, error) {
	switch {
	case r.rotationInFlight(index, err):
		log.FromContext(ctx).Info("Engine refuses the admin token; the rotated credentials are still reaching it", "error", err.Error())
		return reconcile.Result{RequeueAfter: unauthorizedRetry}, nil
	case engineclient.IsCode(err, engineclient.CodeUnauthorized):
		return res, failed(ReasonUnauthorized, unauthorized(index, err))
	}
	return res, err
}

// unauthorized explains a refused admin token.
func unauthorized(index *summav1.SummaIndex, err error) error {
	return fmt.Errorf("the engine refuses the admin token of Secret %s (%w): check that the engine pod mounts that Secret and that its admin-token is the one the engine was given",
		index.CredentialsSecretName(), err)
}
