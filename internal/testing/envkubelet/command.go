package envkubelet

import (
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// hostIP is the node's address.
const hostIP = "127.0.0.1"

// mount maps a container path to a host directory.
type mount struct {
	// path is the mount path in the container.
	path string
	// host is the host directory.
	host string
}

// rewriter turns container paths and addresses into host ones.
type rewriter struct {
	// mounts are the container's mounts, longest path first.
	mounts []mount
	// termPath is the container's termination message path.
	termPath string
	// termFile is the host file standing in for it.
	termFile string
	// ip is the pod's address.
	ip string
}

// arg rewrites one argument; a "-flag=value" argument has its value
// rewritten.
func (r *rewriter) arg(s string) string {
	if strings.HasPrefix(s, "-") {
		if i := strings.IndexByte(s, '='); i > 0 {
			return s[:i+1] + r.value(s[i+1:])
		}
		return s
	}
	return r.value(s)
}

// value rewrites a value: a wildcard listen address (0.0.0.0:PORT,
// [::]:PORT, :PORT) becomes the pod's address with that port; otherwise
// every path in it (at its start or after a space, quote, =, :, ;, and
// the like, so that shell scripts work too) that is the termination
// message path becomes the host file, and one at or under a mount path
// the same path under the mount's host directory.
func (r *rewriter) value(v string) string {
	for _, wildcard := range []string{"0.0.0.0:", "[::]:", ":"} {
		if port, ok := strings.CutPrefix(v, wildcard); ok && port != "" && strings.Trim(port, "0123456789") == "" {
			return net.JoinHostPort(r.ip, port)
		}
	}
	var b strings.Builder
	for i := 0; i < len(v); {
		if i == 0 || isBoundary(v[i-1]) {
			if host, n := r.match(v[i:]); n > 0 {
				b.WriteString(host)
				i += n
				continue
			}
		}
		b.WriteByte(v[i])
		i++
	}
	return b.String()
}

// match returns the host path for the container path s starts with, and
// that path's length (0 if none).
func (r *rewriter) match(s string) (string, int) {
	if strings.HasPrefix(s, r.termPath) && (len(s) == len(r.termPath) || isBoundary(s[len(r.termPath)])) {
		return r.termFile, len(r.termPath)
	}
	for _, m := range r.mounts {
		if strings.HasPrefix(s, m.path) && (len(s) == len(m.path) || s[len(m.path)] == '/' || isBoundary(s[len(m.path)])) {
			return m.host, len(m.path)
		}
	}
	return "", 0
}

// isBoundary reports whether c may delimit a path in a value.
func isBoundary(c byte) bool {
	return strings.IndexByte(" \t\n=:;,'\"()<>|&`", c) >= 0
}

// command translates the container into a local command: the binary
// ("" for a simulated container), its arguments, environment and working
// directory. It fails when a required secretKeyRef cannot be resolved.
// k.mu is held.
func (p *pod) command(c *container) (bin string, args, env []string, dir string, err error) {
	spec := &c.spec
	argv := append(append([]string(nil), spec.Command...), spec.Args...)
	if len(spec.Command) > 0 {
		bin, argv = p.k.opts.Binaries[path.Base(spec.Command[0])], argv[1:]
	} else {
		bin = p.k.opts.Binaries[imageBase(spec.Image)]
	}
	r := &rewriter{termPath: spec.TerminationMessagePath, termFile: p.termFile(c), ip: p.ip}
	if r.termPath == "" {
		r.termPath = corev1.TerminationMessagePathDefault
	}
	for _, vm := range spec.VolumeMounts {
		host, ok := p.volumes[vm.Name]
		mp := path.Clean(vm.MountPath)
		if !ok || mp == "/" || !path.IsAbs(mp) {
			continue
		}
		if vm.SubPath != "" {
			host = filepath.Join(host, filepath.FromSlash(vm.SubPath))
			if err := os.MkdirAll(host, 0o755); err != nil {
				p.k.log.Error(err, "Cannot create a subPath directory", "pod", p.ns+"/"+p.name)
			}
		}
		r.mounts = append(r.mounts, mount{path: mp, host: host})
	}
	sort.SliceStable(r.mounts, func(i, j int) bool { return len(r.mounts[i].path) > len(r.mounts[j].path) })

	vars := map[string]string{}
	env = []string{"PATH=" + os.Getenv("PATH"), "HOSTNAME=" + p.name, "HOME=" + p.dir}
	for _, e := range spec.Env {
		v := expand(e.Value, vars)
		if src := e.ValueFrom; src != nil && src.SecretKeyRef != nil {
			var ok bool
			if v, ok, err = p.secretEnv(src.SecretKeyRef); err != nil {
				return "", nil, nil, "", fmt.Errorf("env %s: %w", e.Name, err)
			} else if !ok {
				continue
			}
		} else if src != nil {
			var ok bool
			if v, ok = p.fieldRef(src); !ok {
				continue
			}
		}
		vars[e.Name] = v
		env = append(env, e.Name+"="+r.value(v))
	}
	for _, a := range argv {
		args = append(args, r.arg(expand(a, vars)))
	}
	dir = p.dir
	if wd := spec.WorkingDir; wd != "" {
		if host := r.value(wd); host != wd {
			dir = host
		}
	}
	return bin, args, env, dir, nil
}

// imageBase is an image reference's last path element without tag or
// digest: "ghcr.io/x/summa-server:v1" is "summa-server".
func imageBase(image string) string {
	image, _, _ = strings.Cut(image, "@")
	image = path.Base(image)
	name, _, _ := strings.Cut(image, ":")
	return name
}

// fieldRef resolves the downward-API fields a kubelet offers in env; other
// sources (configMapKeyRef, resourceFieldRef) are not supported and leave
// the variable unset (secretKeyRef: see secretEnv).
func (p *pod) fieldRef(src *corev1.EnvVarSource) (string, bool) {
	if src.FieldRef == nil {
		return "", false
	}
	fp := src.FieldRef.FieldPath
	switch fp {
	case "metadata.name":
		return p.name, true
	case "metadata.namespace":
		return p.ns, true
	case "metadata.uid":
		return string(p.uid), true
	case "spec.nodeName":
		return p.k.opts.NodeName, true
	case "spec.serviceAccountName":
		return p.obj.Spec.ServiceAccountName, true
	case "status.podIP", "status.podIPs":
		return p.ip, true
	case "status.hostIP", "status.hostIPs":
		return hostIP, true
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": p.obj.Labels, "metadata.annotations": p.obj.Annotations} {
		if key, ok := strings.CutPrefix(fp, prefix+"['"); ok && strings.HasSuffix(key, "']") {
			v, ok := m[strings.TrimSuffix(key, "']")]
			return v, ok
		}
	}
	return "", false
}

// expand replaces $(NAME) with the variable's value as the kubelet does:
// $$ is a literal $, and a reference to an unknown variable stays as is.
func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			ref := s[i : i+3+end]
			if v, ok := vars[s[i+2:i+2+end]]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(ref)
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
