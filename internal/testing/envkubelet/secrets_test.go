package envkubelet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// readVolume returns the files a process sees in a volume directory (the
// top-level names, followed through their symlinks), with their modes.
func readVolume(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		target, err := filepath.EvalSymlinks(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		err = filepath.Walk(target, func(path string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			rel, _ := filepath.Rel(target, path)
			out[filepath.Join(e.Name(), rel)] = info.Mode().Perm().String() + " " + string(data)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestSecretVolumeHonoursItemsAndModes(t *testing.T) {
	s := &corev1.Secret{Data: map[string][]byte{"tls.crt": []byte("cert"), "tls.key": []byte("key"), "ca.key": []byte("secret")}}
	src := &corev1.SecretVolumeSource{SecretName: "pair", DefaultMode: ptr.To[int32](0o440), Items: []corev1.KeyToPath{
		{Key: "tls.crt", Path: "tls.crt"}, {Key: "tls.key", Path: "private/tls.key", Mode: ptr.To[int32](0o400)},
	}}
	files, err := secretFiles(src, s)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if changed, err := writeAtomic(dir, files); err != nil || !changed {
		t.Fatalf("first write: %v %v", changed, err)
	}
	got := readVolume(t, dir)
	want := map[string]string{"tls.crt": "-r--r----- cert", "private/tls.key": "-r-------- key"}
	if len(got) != len(want) || got["tls.crt"] != want["tls.crt"] || got["private/tls.key"] != want["private/tls.key"] {
		t.Fatalf("volume %v, want %v (and never ca.key)", got, want)
	}
	if changed, err := writeAtomic(dir, files); err != nil || changed {
		t.Fatalf("same content written again: %v %v", changed, err)
	}
	s.Data["tls.crt"] = []byte("renewed")
	files, _ = secretFiles(src, s)
	if changed, err := writeAtomic(dir, files); err != nil || !changed {
		t.Fatalf("update: %v %v", changed, err)
	}
	if got := readVolume(t, dir)["tls.crt"]; got != "-r--r----- renewed" {
		t.Fatalf("after the update tls.crt is %q", got)
	}
	entries, _ := os.ReadDir(dir)
	var hidden []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			hidden = append(hidden, e.Name())
		}
	}
	if len(hidden) != 2 { // ..data and the one timestamped directory
		t.Fatalf("old generations left behind: %v", hidden)
	}
	link, err := os.Readlink(filepath.Join(dir, "tls.crt"))
	if err != nil || link != filepath.Join("..data", "tls.crt") {
		t.Fatalf("tls.crt is not a link into ..data: %q %v", link, err)
	}
}

func TestSecretVolumeRequiresItsSecretAndKeysUnlessOptional(t *testing.T) {
	src := &corev1.SecretVolumeSource{SecretName: "creds", Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}
	if _, err := secretFiles(src, nil); err == nil {
		t.Error("a missing Secret was accepted")
	}
	if _, err := secretFiles(src, &corev1.Secret{Data: map[string][]byte{"other": nil}}); err == nil {
		t.Error("a missing key was accepted")
	}
	src.Optional = ptr.To(true)
	if files, err := secretFiles(src, nil); err != nil || len(files) != 0 {
		t.Errorf("optional, missing Secret: %v %v", files, err)
	}
	if files, err := secretFiles(src, &corev1.Secret{}); err != nil || len(files) != 0 {
		t.Errorf("optional, missing key: %v %v", files, err)
	}
}

func TestSecretVolumesFollowThePeriodAndAnnotationChanges(t *testing.T) {
	k := &Kubelet{opts: Options{SecretSyncPeriod: time.Hour}, log: logr.Discard(), secrets: map[secretKey]*corev1.Secret{}}
	dir := t.TempDir()
	obj := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Annotations: map[string]string{"a": "1"}},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}}}},
	}
	p := &pod{k: k, ns: "ns", name: "p", obj: obj, volumes: map[string]string{"creds": dir}}
	k.secrets[secretKey{"ns", "creds"}] = &corev1.Secret{Data: map[string][]byte{"token": []byte("old")}}
	start := time.Now()
	p.annotations = obj.Annotations
	p.syncSecretVolumes(start)
	token := func() string { data, _ := os.ReadFile(filepath.Join(dir, "token")); return string(data) }
	if token() != "old" {
		t.Fatalf("token %q", token())
	}

	k.secrets[secretKey{"ns", "creds"}] = &corev1.Secret{Data: map[string][]byte{"token": []byte("new")}}
	p.refreshSecretVolumes(obj, start.Add(time.Minute))
	if token() != "old" {
		t.Fatal("refreshed before the period with the same annotations (the kubelet is lazier)")
	}
	live := obj.DeepCopy()
	live.Annotations["a"] = "2"
	p.refreshSecretVolumes(live, start.Add(2*time.Minute))
	if token() != "new" {
		t.Fatal("an annotation change did not refresh the secret volume")
	}

	k.secrets[secretKey{"ns", "creds"}] = &corev1.Secret{Data: map[string][]byte{"token": []byte("newer")}}
	p.refreshSecretVolumes(live, start.Add(2*time.Minute+time.Hour))
	if token() != "newer" {
		t.Fatal("the periodic sync did not refresh the secret volume")
	}
	delete(k.secrets, secretKey{"ns", "creds"})
	p.refreshSecretVolumes(live, start.Add(3*time.Hour))
	if token() != "newer" {
		t.Fatal("a deleted Secret emptied the volume (the kubelet keeps the last files)")
	}
}
