package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// envPath is the PATH of every image, so that a pod's command may name the
// binary alone (summa-server).
const envPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// epoch is the time stamp of every file and of the image: the same binary
// gives the same image digest, so a repeated import changes nothing.
var epoch = time.Unix(0, 0).UTC()

// writeImageIfChanged writes the image tarball of s unless the one at
// tarPath was made from the same binary and spec (recorded beside it in
// tarPath.src).
func writeImageIfChanged(tarPath string, s spec, bin string) error {
	f, err := os.Open(bin)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	src := fmt.Sprintf("%x %+v\n", h.Sum(nil), s)
	if old, err := os.ReadFile(tarPath + ".src"); err == nil && string(old) == src {
		if _, err := os.Stat(tarPath); err == nil {
			return nil
		}
	}
	if err := writeImage(tarPath, s, bin); err != nil {
		return err
	}
	// Replaced, not rewritten in place, like the tarball: a cache whose
	// files are hard links of another's (a CI clone's bin/ linked to a
	// warm one) must never see a stamp that speaks for a tarball it lacks.
	tmp := tarPath + ".src.tmp"
	if err := os.WriteFile(tmp, []byte(src), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, tarPath+".src")
}

// writeImage writes the image tarball of s, with the binary bin, to tarPath.
func writeImage(tarPath string, s spec, bin string) error {
	layerTar, err := layerContent(s, bin)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithCompressionLevel(gzip.BestSpeed), tarball.WithCompressedCaching)
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.Architecture = runtime.GOARCH
	cf.OS = "linux"
	cf.Created = v1.Time{Time: epoch}
	for i := range cf.History {
		cf.History[i].Created = v1.Time{Time: epoch}
	}
	cf.Config.Entrypoint = s.entrypoint
	cf.Config.Cmd = s.cmd
	cf.Config.Env = []string{envPath}
	cf.Config.User = s.user
	cf.Config.WorkingDir = "/"
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return err
	}
	ref, err := name.NewTag(s.ref)
	if err != nil {
		return err
	}
	tmp := tarPath + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, tarPath)
}

// layerContent returns the uncompressed layer: the binary at s.path (mode
// 0755, owned by root), its parent directories, a world-writable /tmp, and
// /etc/passwd and /etc/group naming root and the image's user.
func layerContent(s spec, bin string) ([]byte, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	uid, gid, _ := strings.Cut(s.user, ":")
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%s:%s:nonroot:/home/nonroot:/sbin/nologin\n", uid, gid)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%s:\n", gid)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	addDir := func(p string, mode int64) error {
		if dirs[p] {
			return nil
		}
		dirs[p] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: mode, ModTime: epoch, Format: tar.FormatPAX})
	}
	addFile := func(p string, mode int64, content []byte) error {
		// Parent directories first, outermost first.
		parts := strings.Split(path.Dir(p), "/")
		for i := range parts {
			if d := strings.Join(parts[:i+1], "/"); d != "" && d != "." {
				if err := addDir(d, 0o755); err != nil {
					return err
				}
			}
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: mode, Size: int64(len(content)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(content)
		return err
	}
	if err := addDir("tmp", 0o1777); err != nil {
		return nil, err
	}
	if err := addFile("etc/passwd", 0o644, []byte(passwd)); err != nil {
		return nil, err
	}
	if err := addFile("etc/group", 0o644, []byte(group)); err != nil {
		return nil, err
	}
	if err := addFile(strings.TrimPrefix(s.path, "/"), 0o755, data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
