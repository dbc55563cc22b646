// Command kustomize builds a kustomization of config/ with the release's
// images pinned, and prints the YAML: what `kustomize edit set image` then
// `kustomize build` do in kubebuilder's Makefile, without editing a
// committed file and without a kustomize binary (the kustomize API is
// already a module dependency).
//
//	go run ./hack/kustomize [-image NAME=REF]... [-engine-image REF] DIR
//
// -image replaces the image NAME (its name without a tag, as the
// kustomization's resources spell it) by REF (repository[:tag][@digest]).
// -engine-image sets SUMMA_ENGINE_IMAGE on the operator Deployment's
// manager container: the engine image of SummaIndexes without spec.image.
// Run it from the module root; `make build-installer` writes
// dist/install.yaml with it.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// The operator Deployment and container the -engine-image patch targets
// (config/manager/manager.yaml).
const (
	operatorDeployment = "summa-operator"
	operatorContainer  = "manager"
)

// imageFlags collects repeated -image NAME=REF flags.
type imageFlags []string

func (f *imageFlags) String() string { return strings.Join(*f, ",") }

func (f *imageFlags) Set(v string) error {
	if name, ref, ok := strings.Cut(v, "="); !ok || name == "" || ref == "" {
		return fmt.Errorf("want NAME=REF, got %q", v)
	}
	*f = append(*f, v)
	return nil
}

func main() {
	out, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "kustomize:", err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}

// run parses the arguments and returns the built YAML.
func run(args []string) ([]byte, error) {
	fs := flag.NewFlagSet("kustomize", flag.ContinueOnError)
	var images imageFlags
	fs.Var(&images, "image", "NAME=REF: replace image NAME by REF (repeatable)")
	engineImage := fs.String("engine-image", "", "engine image for the operator's SUMMA_ENGINE_IMAGE (empty: leave the operator's default)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() != 1 {
		return nil, fmt.Errorf("want one kustomization directory, got %d arguments", fs.NArg())
	}
	dir, err := filepath.Abs(fs.Arg(0))
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "summa-kustomize-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	// kustomize takes only relative resource paths.
	rel, err := filepath.Rel(tmp, dir)
	if err != nil {
		return nil, err
	}
	overlay, err := overlayFor(rel, images, *engineImage)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "kustomization.yaml"), []byte(overlay), 0o644); err != nil {
		return nil, err
	}
	// The kustomize command's order: namespaces and CRDs first, so that
	// `kubectl apply -f` of the output works on an empty cluster.
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy
	res, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), tmp)
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", fs.Arg(0), err)
	}
	return res.AsYaml()
}

// overlayFor returns a kustomization of dir (relative to it) that sets
// the images and the engine image.
func overlayFor(dir string, images []string, engineImage string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- %q\n", dir)
	if len(images) > 0 {
		b.WriteString("images:\n")
		for _, im := range images {
			name, ref, _ := strings.Cut(im, "=")
			repo, tag, digest, err := splitRef(ref)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, "- name: %q\n  newName: %q\n", name, repo)
			if tag != "" {
				fmt.Fprintf(&b, "  newTag: %q\n", tag)
			}
			if digest != "" {
				fmt.Fprintf(&b, "  digest: %q\n", digest)
			}
		}
	}
	if engineImage != "" {
		if _, _, _, err := splitRef(engineImage); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, `patches:
- target:
    kind: Deployment
    name: %s
  patch: |-
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: %s
    spec:
      template:
        spec:
          containers:
          - name: %s
            env:
            - name: SUMMA_ENGINE_IMAGE
              value: %q
`, operatorDeployment, operatorDeployment, operatorContainer, engineImage)
	}
	return b.String(), nil
}

// splitRef splits an image reference into repository, tag and digest. A
// colon names a tag only after the last slash (a registry may have a
// port).
func splitRef(ref string) (repo, tag, digest string, err error) {
	repo = ref
	if i := strings.Index(repo, "@"); i >= 0 {
		repo, digest = repo[:i], repo[i+1:]
		if !strings.Contains(digest, ":") {
			return "", "", "", fmt.Errorf("image %q: digest %q is not ALGORITHM:HEX", ref, digest)
		}
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo, tag = repo[:i], repo[i+1:]
	}
	if repo == "" || strings.ContainsAny(repo, " \t\n") {
		return "", "", "", fmt.Errorf("image %q: no repository", ref)
	}
	return repo, tag, digest, nil
}
