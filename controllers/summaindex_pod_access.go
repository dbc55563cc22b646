package controllers

import (
	"path"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	summav1 "github.com/summadev/summa/api/v1"
)

// What the engine pod mounts of the access Secrets, and what its app
// containers get.
//
// The engine container mounts, read-only, the three tokens of the
// credentials Secret at /etc/summa/credentials and, with TLS, only tls.crt
// and tls.key of the TLS Secret at /etc/summa/tls (never ca.key), and is
// told about them with --admin-token-file, --write-token-file,
// --read-token-file, --tls-cert-file and --tls-key-file. It re-reads the
// files when they change.
//
// App containers of spec.podTemplate reach the engine at localhost and get,
// unless they set the variable themselves in env:
//
//	SUMMA_URL         https://localhost:8082 (http:// without TLS)
//	SUMMA_TOKEN       the write token (from the Secret; fixed at start)
//	SUMMA_TOKEN_FILE  /var/run/summa/credentials/token, the write token,
//	                  kept current by the kubelet (follows rotations)
//	SUMMA_CA_FILE     /var/run/summa/tls/ca.crt, with TLS when the Secret
//	                  has a ca.crt

const (
	// credentialsVolumeName is the engine's volume of the tokens.
	credentialsVolumeName = "summa-credentials"
	// tlsVolumeName is the engine's volume of tls.crt and tls.key.
	tlsVolumeName = "summa-tls"
	// CredentialsMountPath is where the engine finds its token files.
	CredentialsMountPath = "/etc/summa/credentials"
	// TLSMountPath is where the engine finds tls.crt and tls.key.
	TLSMountPath = "/etc/summa/tls"
	// clientTokenVolumeName is the app containers' volume of the write
	// token.
	clientTokenVolumeName = "summa-client-token"
	// clientCAVolumeName is the app containers' volume of ca.crt.
	clientCAVolumeName = "summa-client-ca"
	// ClientTokenMountPath is where app containers find the write token
	// (file "token").
	ClientTokenMountPath = "/var/run/summa/credentials"
	// ClientCAMountPath is where app containers find ca.crt.
	ClientCAMountPath = "/var/run/summa/tls"
	// secretFileMode: readable by the pod's fsGroup (the engine's group),
	// by nobody else.
	secretFileMode int32 = 0o440
	// publicFileMode is the mode of ca.crt for app containers, which may
	// run as any user.
	publicFileMode int32 = 0o444
)

// Environment variables of app containers.
const (
	// EnvURL is the engine's URL as app containers reach it.
	EnvURL = "SUMMA_URL"
	// EnvToken is the write token.
	EnvToken = "SUMMA_TOKEN"
	// EnvTokenFile is the file of the write token.
	EnvTokenFile = "SUMMA_TOKEN_FILE"
	// EnvCAFile is the file of the CA certificates that verify the engine.
	EnvCAFile = "SUMMA_CA_FILE"
)

// tokenFlags maps each key of the credentials Secret to its engine flag.
var tokenFlags = map[string]string{
	summav1.AdminTokenKey: "--admin-token-file",
	summav1.WriteTokenKey: "--write-token-file",
	summav1.ReadTokenKey:  "--read-token-file",
}

// accessArgs are the engine's flags for its tokens and certificate.
func accessArgs(acc access) []string {
	var args []string
	if acc.credentialsSecret != "" {
		for _, k := range summav1.TokenKeys {
			args = append(args, tokenFlags[k]+"="+path.Join(CredentialsMountPath, k))
		}
	}
	if acc.tlsSecret != "" {
		args = append(args,
			"--tls-cert-file="+path.Join(TLSMountPath, summav1.TLSCertKey),
			"--tls-key-file="+path.Join(TLSMountPath, summav1.TLSKeyKey))
	}
	return args
}

// accessMounts are the engine container's mounts of the access Secrets.
func accessMounts(acc access) []corev1.VolumeMount {
	var m []corev1.VolumeMount
	if acc.credentialsSecret != "" {
		m = append(m, corev1.VolumeMount{Name: credentialsVolumeName, MountPath: CredentialsMountPath, ReadOnly: true})
	}
	if acc.tlsSecret != "" {
		m = append(m, corev1.VolumeMount{Name: tlsVolumeName, MountPath: TLSMountPath, ReadOnly: true})
	}
	return m
}

// secretVolume is a volume of some keys of a Secret.
func secretVolume(name, secret string, mode int32, optional bool, keys ...[2]string) corev1.Volume {
	src := &corev1.SecretVolumeSource{SecretName: secret, DefaultMode: ptr.To(mode)}
	if optional {
		src.Optional = ptr.To(true)
	}
	for _, k := range keys {
		src.Items = append(src.Items, corev1.KeyToPath{Key: k[0], Path: k[1]})
	}
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: src}}
}

// accessVolumes are the engine's volumes of the access Secrets: the
// tokens, and only tls.crt and tls.key of the TLS Secret.
func accessVolumes(acc access) []corev1.Volume {
	var v []corev1.Volume
	if acc.credentialsSecret != "" {
		var keys [][2]string
		for _, k := range summav1.TokenKeys {
			keys = append(keys, [2]string{k, k})
		}
		v = append(v, secretVolume(credentialsVolumeName, acc.credentialsSecret, secretFileMode, false, keys...))
	}
	if acc.tlsSecret != "" {
		v = append(v, secretVolume(tlsVolumeName, acc.tlsSecret, secretFileMode, false,
			[2]string{summav1.TLSCertKey, summav1.TLSCertKey}, [2]string{summav1.TLSKeyKey, summav1.TLSKeyKey}))
	}
	return v
}

// clientVolumes are the app containers' volumes: the write token, and the
// CA when there is one.
func clientVolumes(acc access) []corev1.Volume {
	var v []corev1.Volume
	if acc.credentialsSecret != "" {
		v = append(v, secretVolume(clientTokenVolumeName, acc.credentialsSecret, publicFileMode, false,
			[2]string{summav1.WriteTokenKey, "token"}))
	}
	if acc.tlsSecret != "" && acc.caPresent {
		v = append(v, secretVolume(clientCAVolumeName, acc.tlsSecret, publicFileMode, true,
			[2]string{summav1.CACertKey, summav1.CACertKey}))
	}
	return v
}

// addClientAccess gives an app container the engine's URL, the write
// token and the CA, each unless the container sets the variable itself.
func addClientAccess(c *corev1.Container, acc access) {
	set := func(name string) bool {
		return slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
	}
	add := func(e corev1.EnvVar) {
		if !set(e.Name) {
			c.Env = append(c.Env, e)
		}
	}
	mount := func(name, mountPath string) {
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == mountPath }) {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: mountPath, ReadOnly: true})
		}
	}
	scheme := "http"
	if acc.tlsSecret != "" {
		scheme = "https"
	}
	add(corev1.EnvVar{Name: EnvURL, Value: scheme + "://localhost:" + strconv.Itoa(EnginePort)})
	if acc.credentialsSecret != "" {
		add(corev1.EnvVar{Name: EnvToken, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: acc.credentialsSecret}, Key: summav1.WriteTokenKey}}})
		if !set(EnvTokenFile) {
			mount(clientTokenVolumeName, ClientTokenMountPath)
			add(corev1.EnvVar{Name: EnvTokenFile, Value: path.Join(ClientTokenMountPath, "token")})
		}
	}
	if acc.tlsSecret != "" && acc.caPresent && !set(EnvCAFile) {
		mount(clientCAVolumeName, ClientCAMountPath)
		add(corev1.EnvVar{Name: EnvCAFile, Value: path.Join(ClientCAMountPath, summav1.CACertKey)})
	}
}

// podAccess is how an existing engine pod was made: which Secrets it
// mounts and whether it serves HTTPS. The operator speaks to a pod as it
// was made, so a pod from before a change of spec.access (or from before
// version 1.1) is still reached while it drains.
type podAccess struct {
	// credentialsSecret is the Secret of the pod's token files; "" for an
	// engine without tokens.
	credentialsSecret string
	// https tells that the engine serves HTTPS.
	https bool
	// tlsSecret is the Secret of its certificate, whose ca.crt verifies
	// it.
	tlsSecret string
}

// accessOf reads podAccess from the pod's spec.
func accessOf(pod *corev1.Pod) podAccess {
	var pa podAccess
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.Name != EngineContainerName {
				continue
			}
			pa.https = slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--tls-cert-file") })
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.Secret == nil {
			continue
		}
		switch v.Name {
		case credentialsVolumeName:
			pa.credentialsSecret = v.Secret.SecretName
		case tlsVolumeName:
			pa.tlsSecret = v.Secret.SecretName
		}
	}
	return pa
}
