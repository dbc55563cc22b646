package controllers

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	summav1 "github.com/summadev/summa/api/v1"
)

// The object store of spec.backup.s3 (and spec.restore.s3) as the engine
// and the restore and prune Jobs see it.
//
// The engine reads one credentials file (AWS_ACCESS_KEY_ID= and
// AWS_SECRET_ACCESS_KEY= lines) while the Secret a person makes has the
// two keys accessKeyId and secretAccessKey. So the operator derives an
// owned Secret <name>-s3-credentials (<name>-restore-s3-credentials for
// spec.restore.s3) with the key "credentials" in the engine's format, and
// keeps it equal to the person's Secret on every pass: a rotated key
// reaches the mounted file, which the engine reads again for every backup,
// without a restart. The CA Secret's ca.crt is mounted as it is.

// Reasons of Degraded for the object store.
const (
	// ReasonBackupCredentials: the Secret named by s3.credentialsSecret is
	// missing or lacks a key.
	ReasonBackupCredentials = "BackupCredentialsInvalid"
	// ReasonInvalidBackupSchedule: spec.backup.schedule does not parse.
	ReasonInvalidBackupSchedule = "InvalidBackupSchedule"
	// ReasonRestoreFailed: the restore Job failed; nothing is served.
	ReasonRestoreFailed = "RestoreFailed"
	// ReasonBackupFailed: the last scheduled backup failed.
	ReasonBackupFailed = "BackupFailed"
)

// Paths and names of the object store's files in pods.
const (
	// s3CredentialsKey is the derived Secret's key of the credentials file.
	s3CredentialsKey = "credentials"
	// S3CredentialsMountPath is where the engine and the Jobs find the
	// credentials file.
	S3CredentialsMountPath = "/etc/summa/s3"
	// S3CAMountPath is where they find the store's ca.crt.
	S3CAMountPath = "/etc/summa/s3-ca"
	// s3CredentialsVolumeName is the pod volume of the credentials file.
	s3CredentialsVolumeName = "summa-s3-credentials"
	// s3CAVolumeName is the pod volume of the store's CA.
	s3CAVolumeName = "summa-s3-ca"
)

// s3Args are the --s3-* flags for an object store.
func s3Args(s *summav1.S3Spec) []string {
	args := []string{"--s3-endpoint=" + s.Endpoint, "--s3-bucket=" + s.Bucket,
		"--s3-credentials-file=" + path.Join(S3CredentialsMountPath, s3CredentialsKey)}
	if s.Prefix != "" {
		args = append(args, "--s3-prefix="+s.Prefix)
	}
	if s.Region != "" {
		args = append(args, "--s3-region="+s.Region)
	}
	if s.CASecret != "" {
		args = append(args, "--s3-ca-file="+path.Join(S3CAMountPath, summav1.CACertKey))
	}
	return args
}

// s3Mounts are a container's mounts of the object store's Secrets.
func s3Mounts(s *summav1.S3Spec) []corev1.VolumeMount {
	m := []corev1.VolumeMount{{Name: s3CredentialsVolumeName, MountPath: S3CredentialsMountPath, ReadOnly: true}}
	if s.CASecret != "" {
		m = append(m, corev1.VolumeMount{Name: s3CAVolumeName, MountPath: S3CAMountPath, ReadOnly: true})
	}
	return m
}

// s3Volumes are the pod volumes of the object store's Secrets: the derived
// credentials Secret derived, and the CA Secret's ca.crt.
func s3Volumes(s *summav1.S3Spec, derived string) []corev1.Volume {
	v := []corev1.Volume{secretVolume(s3CredentialsVolumeName, derived, secretFileMode, false,
		[2]string{s3CredentialsKey, s3CredentialsKey})}
	if s.CASecret != "" {
		v = append(v, secretVolume(s3CAVolumeName, s.CASecret, secretFileMode, false,
			[2]string{summav1.CACertKey, summav1.CACertKey}))
	}
	return v
}

// backupS3 is the leader engine's object store, nil without spec.backup.
func backupS3(index *summav1.SummaIndex) *summav1.S3Spec {
	if index.Spec.Backup == nil {
		return nil
	}
	return &index.Spec.Backup.S3
}

// s3Port is the TCP port of an endpoint (443 or 80 by scheme when the URL
// has none).
func s3Port(endpoint string) int32 {
	ep := endpoint
	if !strings.Contains(ep, "://") {
		ep = "https://" + ep
	}
	u, err := url.Parse(ep)
	if err != nil {
		return 443
	}
	if _, p, err := net.SplitHostPort(u.Host); err == nil {
		if n, err := strconv.ParseInt(p, 10, 32); err == nil && n > 0 {
			return int32(n)
		}
	}
	if u.Scheme == "http" {
		return 80
	}
	return 443
}

// ensureS3Credentials keeps the derived Secret name (owned by index) holding
// the credentials file of the Secret s names. Its errors carry the reason
// BackupCredentialsInvalid.
func (r *SummaIndexReconciler) ensureS3Credentials(ctx context.Context, index *summav1.SummaIndex, s *summav1.S3Spec, name string) error {
	src, err := r.getSecret(ctx, index.Namespace, s.CredentialsSecret)
	if apierrors.IsNotFound(err) {
		return failed(ReasonBackupCredentials, fmt.Errorf(
			"Secret %s named by s3.credentialsSecret does not exist: create it with the keys %s and %s",
			s.CredentialsSecret, summav1.S3AccessKeyIDKey, summav1.S3SecretAccessKeyKey))
	}
	if err != nil {
		return failed(ReasonBackupCredentials, fmt.Errorf("get secret %s: %w", s.CredentialsSecret, err))
	}
	id := strings.TrimSpace(string(src.Data[summav1.S3AccessKeyIDKey]))
	key := strings.TrimSpace(string(src.Data[summav1.S3SecretAccessKeyKey]))
	if id == "" || key == "" || strings.ContainsAny(id+key, "\r\n") {
		return failed(ReasonBackupCredentials, fmt.Errorf(
			"Secret %s named by s3.credentialsSecret needs the one-line keys %s and %s",
			s.CredentialsSecret, summav1.S3AccessKeyIDKey, summav1.S3SecretAccessKeyKey))
	}
	want := []byte("AWS_ACCESS_KEY_ID=" + id + "\nAWS_SECRET_ACCESS_KEY=" + key + "\n")
	cur, err := r.getSecret(ctx, index.Namespace, name)
	if apierrors.IsNotFound(err) {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: index.Namespace, Labels: index.Labels()},
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{s3CredentialsKey: want}}
		if err := controllerutil.SetControllerReference(index, sec, r.Scheme); err != nil {
			return fmt.Errorf("owner reference on secret %s: %w", name, err)
		}
		if err := r.Create(ctx, sec); err != nil && !apierrors.IsAlreadyExists(err) {
			return failed(ReasonBackupCredentials, fmt.Errorf("create secret %s: %w", name, err))
		}
		return nil
	}
	if err != nil {
		return failed(ReasonBackupCredentials, fmt.Errorf("get secret %s: %w", name, err))
	}
	if err := r.checkOwned(ctx, index, cur, ""); err != nil {
		return failed(ReasonBackupCredentials, err)
	}
	if string(cur.Data[s3CredentialsKey]) == string(want) {
		return nil
	}
	cur.Data = map[string][]byte{s3CredentialsKey: want}
	if err := r.Update(ctx, cur); err != nil {
		return failed(ReasonBackupCredentials, fmt.Errorf("update secret %s: %w", name, err))
	}
	r.event(index, nil, corev1.EventTypeNormal, "BackupCredentialsUpdated", "object store credentials %s updated from %s", name, s.CredentialsSecret)
	return nil
}

// backupMounts are the engine container's mounts of spec.backup.s3.
func backupMounts(index *summav1.SummaIndex) []corev1.VolumeMount {
	if s3 := backupS3(index); s3 != nil {
		return s3Mounts(s3)
	}
	return nil
}

// desiredObjectStoreJobsNetworkPolicy selects the restore and prune Jobs'
// pods: nothing in; out, only DNS and the TCP ports of the object stores
// of spec.backup.s3 and spec.restore.s3.
func desiredObjectStoreJobsNetworkPolicy(index *summav1.SummaIndex) networkingv1.NetworkPolicySpec {
	ports := []networkingv1.NetworkPolicyPort{
		{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromInt32(53))},
		{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(53))},
	}
	seen := map[int32]bool{}
	for _, s := range []*summav1.S3Spec{backupS3(index), index.RestoreS3()} {
		if s == nil || seen[s3Port(s.Endpoint)] {
			continue
		}
		seen[s3Port(s.Endpoint)] = true
		ports = append(ports, networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(s3Port(s.Endpoint)))})
	}
	return jobPodsNetworkPolicy(index, []networkingv1.NetworkPolicyEgressRule{{Ports: ports}}, restoreContainer, pruneContainer)
}

// deleteObjectStoreJobsPolicy removes the restore and prune Jobs' policy
// of an index without an object store (looked up in the cache only: most
// indexes never had one).
func (r *SummaIndexReconciler) deleteObjectStoreJobsPolicy(ctx context.Context, index *summav1.SummaIndex) error {
	cur := &networkingv1.NetworkPolicy{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: index.Namespace, Name: index.ObjectStoreJobsNetworkPolicyName()}, cur); err != nil {
		return client.IgnoreNotFound(err)
	}
	return r.deleteNetworkPolicy(ctx, index, cur.Name)
}
