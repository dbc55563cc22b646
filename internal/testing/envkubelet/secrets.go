package envkubelet

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Secrets, as the kubelet uses them: secret volumes and secretKeyRef env
// values. The API loop lists the Secrets every pass (k.secrets); a pod
// starts once the Secrets of its volumes exist with the keys their items
// name (unless optional). A secret volume is written like the kubelet's
// atomic writer does: the files in a timestamped directory, "..data" a
// symlink to it swapped atomically by rename, and each top-level name a
// symlink into "..data", so a process never reads half of an update. It is
// refreshed every Options.SecretSyncPeriod (the kubelet's periodic pod
// sync) and at once when the pod's annotations change (a pod update makes
// the kubelet sync the pod, and its secret volumes, at once). A Secret that
// is gone leaves the last files in place.

const (
	// DefaultSecretSyncPeriod is the period of the secret volumes' refresh,
	// the real kubelet's syncFrequency.
	DefaultSecretSyncPeriod = time.Minute
	// defaultSecretMode is the kubelet's default mode of secret files.
	defaultSecretMode int32 = 0o644
	// dataDirName is the atomic writer's symlink to the current files.
	dataDirName = "..data"
)

// secretFile is one file of a secret volume.
type secretFile struct {
	// data is its content.
	data []byte
	// mode is its permission bits.
	mode os.FileMode
}

// secretKey names a Secret: namespace and name.
type secretKey [2]string

// secretFiles returns the files of a secret volume from the Secret s
// (nil when it does not exist), and whether the volume can be set up: a
// missing Secret or a missing key named in items is fine only when the
// volume is optional.
func secretFiles(src *corev1.SecretVolumeSource, s *corev1.Secret) (map[string]secretFile, error) {
	optional := ptr.Deref(src.Optional, false)
	if s == nil {
		if optional {
			return map[string]secretFile{}, nil
		}
		return nil, fmt.Errorf("secret %q not found", src.SecretName)
	}
	mode := os.FileMode(ptr.Deref(src.DefaultMode, defaultSecretMode)) & fs.ModePerm
	files := map[string]secretFile{}
	if len(src.Items) == 0 {
		for k, v := range s.Data {
			files[k] = secretFile{data: v, mode: mode}
		}
		return files, nil
	}
	for _, it := range src.Items {
		v, ok := s.Data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("secret %q has no key %q", src.SecretName, it.Key)
		}
		m := mode
		if it.Mode != nil {
			m = os.FileMode(*it.Mode) & fs.ModePerm
		}
		files[filepath.Clean(it.Path)] = secretFile{data: v, mode: m}
	}
	return files, nil
}

// secretsReady reports whether every secret volume of the pod can be set
// up, and if not, why. k.mu is held.
func (k *Kubelet) secretsReady(pod *corev1.Pod) (bool, string) {
	for _, v := range pod.Spec.Volumes {
		if v.Secret == nil {
			continue
		}
		if _, err := secretFiles(v.Secret, k.secrets[secretKey{pod.Namespace, v.Secret.SecretName}]); err != nil {
			return false, "volume " + v.Name + ": " + err.Error()
		}
	}
	return true, ""
}

// syncSecretVolumes writes the pod's secret volumes from the Secrets as
// last listed. k.mu is held.
func (p *pod) syncSecretVolumes(now time.Time) {
	p.secretsSyncedAt = now
	for _, v := range p.obj.Spec.Volumes {
		if v.Secret == nil {
			continue
		}
		s, ok := p.k.secrets[secretKey{p.ns, v.Secret.SecretName}]
		if !ok {
			continue // gone: the last files stay
		}
		files, err := secretFiles(v.Secret, s)
		if err != nil {
			p.k.log.Info("Secret volume not refreshed", "pod", p.ns+"/"+p.name, "volume", v.Name, "error", err.Error())
			continue
		}
		changed, err := writeAtomic(p.volumes[v.Name], files)
		if err != nil {
			p.k.log.Error(err, "Cannot write a secret volume", "pod", p.ns+"/"+p.name, "volume", v.Name)
			continue
		}
		if changed {
			p.k.log.Info("Secret volume written", "pod", p.ns+"/"+p.name, "volume", v.Name, "secret", v.Secret.SecretName)
		}
	}
}

// refreshSecretVolumes syncs the pod's secret volumes when the sync period
// passed or the pod's annotations changed since the last look. k.mu is
// held.
func (p *pod) refreshSecretVolumes(live *corev1.Pod, now time.Time) {
	changed := !maps.Equal(p.annotations, live.Annotations)
	if changed {
		p.annotations = maps.Clone(live.Annotations)
	}
	if changed || now.Sub(p.secretsSyncedAt) >= p.k.opts.SecretSyncPeriod {
		p.syncSecretVolumes(now)
	}
}

// secretEnv resolves a secretKeyRef env value; ok is false for an optional
// reference to a missing Secret or key (the variable is left unset), err
// is set for a required one. k.mu is held.
func (p *pod) secretEnv(ref *corev1.SecretKeySelector) (value string, ok bool, err error) {
	s := p.k.secrets[secretKey{p.ns, ref.Name}]
	if s != nil {
		if v, found := s.Data[ref.Key]; found {
			return string(v), true, nil
		}
	}
	if ptr.Deref(ref.Optional, false) {
		return "", false, nil
	}
	if s == nil {
		return "", false, fmt.Errorf("secret %q not found", ref.Name)
	}
	return "", false, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, p.ns, ref.Name)
}

// writeAtomic makes dir hold exactly files, as the kubelet's atomic
// writer does, and reports whether anything changed.
func writeAtomic(dir string, files map[string]secretFile) (bool, error) {
	if same, err := holds(dir, files); err != nil || same {
		return false, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	ts := ".." + strconv.FormatInt(time.Now().UnixNano(), 10)
	for name, f := range files {
		path := filepath.Join(dir, ts, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return false, err
		}
		if err := os.WriteFile(path, f.data, 0o600); err != nil {
			return false, err
		}
		if err := os.Chmod(path, f.mode); err != nil {
			return false, err
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, ts), 0o755); err != nil {
		return false, err
	}
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(ts, tmp); err != nil {
		return false, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, dataDirName)); err != nil {
		return false, err
	}
	top := map[string]bool{}
	for name := range files {
		top[strings.Split(filepath.ToSlash(name), "/")[0]] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		n := e.Name()
		switch {
		case strings.HasPrefix(n, ".."):
			if n != dataDirName && n != ts {
				_ = os.RemoveAll(filepath.Join(dir, n))
			}
		case !top[n] && e.Type()&fs.ModeSymlink != 0:
			_ = os.Remove(filepath.Join(dir, n))
		}
	}
	for n := range top {
		link := filepath.Join(dir, n)
		if _, err := os.Lstat(link); errors.Is(err, fs.ErrNotExist) {
			if err := os.Symlink(filepath.Join(dataDirName, n), link); err != nil {
				return false, err
			}
		}
	}
	return true, nil
}

// holds reports whether dir's current files are exactly files.
func holds(dir string, files map[string]secretFile) (bool, error) {
	data := filepath.Join(dir, dataDirName)
	if _, err := os.Stat(data); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	n := 0
	err := filepath.WalkDir(data+"/", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		rel, _ := filepath.Rel(data, path)
		want, ok := files[rel]
		if !ok {
			return errMismatch
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		got, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want.data) || info.Mode().Perm() != want.mode {
			return errMismatch
		}
		return nil
	})
	if errors.Is(err, errMismatch) {
		return false, nil
	}
	return err == nil && n == len(files), err
}

// errMismatch stops holds' walk at the first difference.
var errMismatch = errors.New("differs")
