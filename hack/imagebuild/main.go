// Command imagebuild builds the container images of the local cluster
// (hack/cluster) without a registry or a container builder: each image is
// one layer holding one static Go binary, written as an image tarball that
// `ctr images import` reads.
//
//	go run ./hack/imagebuild [-out bin/images] [-containerd SOCKET] [-tag TAG] [-version V] [IMAGE...]
//
// Images (all by default):
//
//	summa-server:latest    /usr/local/bin/summa-server (./cmd/summa-server), user 65532
//	summa-operator:latest  /manager (./cmd/manager), user 65532
//	summa.dev/pause:1      /pause (./hack/imagebuild/pause), the pods' sandbox
//
// and, only when named: summa.dev/netprobe:1, /netprobe
// (./test/e2e/netprobe), the e2e specs' in-cluster network probe.
//
// With -containerd, the tarballs are then imported into that containerd's
// k8s.io namespace, where the kubelet finds them (pods use
// imagePullPolicy IfNotPresent or Never: there is nothing to pull from).
// -tag replaces the images' tags, and -version stamps the operator's
// version (main.version), so that the e2e specs can roll out a second
// operator image that differs from the first (an upgrade). Run it from the
// module root.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// spec describes one image.
type spec struct {
	ref        string   // image reference, tag included
	pkg        string   // Go main package of the binary
	path       string   // the binary's path in the image, absolute
	entrypoint []string // image Entrypoint
	cmd        []string // image Cmd (default arguments)
	user       string   // image User, uid:gid
}

// images lists the images this program builds, by short name.
var images = map[string]spec{
	"summa-server": {
		ref:        "summa-server:latest",
		pkg:        "./cmd/summa-server",
		path:       "/usr/local/bin/summa-server",
		entrypoint: []string{"/usr/local/bin/summa-server"},
		cmd:        []string{"--data-dir", "/data", "--listen", "0.0.0.0:8082"},
		user:       "65532:65532",
	},
	"summa-operator": {
		ref:        "summa-operator:latest",
		pkg:        "./cmd/manager",
		path:       "/manager",
		entrypoint: []string{"/manager"},
		user:       "65532:65532",
	},
	"netprobe": {
		ref:        "summa.dev/netprobe:1",
		pkg:        "./test/e2e/netprobe",
		path:       "/netprobe",
		entrypoint: []string{"/netprobe"},
		user:       "65532:65532",
	},
	"pause": {
		ref:        "summa.dev/pause:1",
		pkg:        "./hack/imagebuild/pause",
		path:       "/pause",
		entrypoint: []string{"/pause"},
		user:       "65535:65535",
	},
}

// order is the build order of the default images (netprobe only when named).
var order = []string{"pause", "summa-server", "summa-operator"}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("imagebuild", flag.ContinueOnError)
	out := fs.String("out", "bin/images", "directory of the image tarballs")
	sock := fs.String("containerd", "", "containerd socket to import the images into (namespace k8s.io); empty: do not import")
	ctr := fs.String("ctr", "ctr", "ctr command")
	tag := fs.String("tag", "", "tag of the images (default: each image's own)")
	version := fs.String("version", "", "version stamped into the operator (main.version)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	names := fs.Args()
	if len(names) == 0 {
		names = order
	}
	if _, err := os.Stat("go.mod"); err != nil {
		return fmt.Errorf("run it from the module root: %w", err)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	// The binaries stay in out/.bin: go build relinks only what changed, and
	// an image whose binary did not change is not written again.
	binDir := filepath.Join(*out, ".bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	for _, n := range names {
		s, ok := images[n]
		if !ok {
			return fmt.Errorf("unknown image %q (known: %s, netprobe)", n, strings.Join(order, ", "))
		}
		start := time.Now()
		if *tag != "" {
			s.ref = s.ref[:strings.LastIndex(s.ref, ":")+1] + *tag
		}
		ldflags := "-s -w"
		if *version != "" && s.pkg == "./cmd/manager" {
			ldflags += " -X main.version=" + *version
		}
		bin := filepath.Join(binDir, n)
		if err := goBuild(s.pkg, bin, ldflags); err != nil {
			return err
		}
		tarPath := filepath.Join(*out, n+".tar")
		if err := writeImageIfChanged(tarPath, s, bin); err != nil {
			return fmt.Errorf("image %s: %w", s.ref, err)
		}
		if *sock != "" {
			if err := importImage(*ctr, *sock, tarPath); err != nil {
				return fmt.Errorf("import %s: %w", s.ref, err)
			}
		}
		fmt.Fprintf(os.Stderr, "imagebuild: %s -> %s (%s)\n", s.ref, tarPath, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// goBuild builds a static Linux binary of pkg at out.
func goBuild(pkg, out, ldflags string) error {
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.Command(goCmd, "build", "-trimpath", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", pkg, err)
	}
	return nil
}

// importImage imports an image tarball into containerd's k8s.io namespace.
func importImage(ctr, sock, tarPath string) error {
	cmd := exec.Command(ctr, "--address", sock, "--namespace", "k8s.io", "images", "import", tarPath)
	b, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w", strings.TrimSpace(string(b)), err)
	}
	return nil
}
