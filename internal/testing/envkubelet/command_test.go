package envkubelet

import "testing"

// TestRewrite covers the translation of arguments without a cluster.
func TestRewrite(t *testing.T) {
	r := &rewriter{
		mounts:   []mount{{path: "/data/sub", host: "/h/sub"}, {path: "/data", host: "/h/data"}, {path: "/tmp", host: "/h/tmp"}},
		termPath: "/dev/termination-log", termFile: "/h/term", ip: "127.0.0.7",
	}
	for in, want := range map[string]string{
		"/data":                              "/h/data",
		"/data/x/y":                          "/h/data/x/y",
		"/data/sub/z":                        "/h/sub/z",
		"/database":                          "/database",
		"--data-dir=/data":                   "--data-dir=/h/data",
		"--listen":                           "--listen",
		"0.0.0.0:8082":                       "127.0.0.7:8082",
		"--listen=0.0.0.0:8082":              "--listen=127.0.0.7:8082",
		"[::]:9000":                          "127.0.0.7:9000",
		":80":                                "127.0.0.7:80",
		"127.0.0.1:8082":                     "127.0.0.1:8082",
		"/dev/termination-log":               "/h/term",
		"--report-file=/dev/termination-log": "--report-file=/h/term",
		"cp -a /data/. /tmp/x && echo ok > /dev/termination-log": "cp -a /h/data/. /h/tmp/x && echo ok > /h/term",
		"http://host/data": "http://host/data",
		"SRC='/data/sub'":  "SRC='/h/sub'",
	} {
		if got := r.arg(in); got != want {
			t.Errorf("arg(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestExpand covers $(VAR) expansion as the kubelet does it.
func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "x", "B": "y"}
	for in, want := range map[string]string{
		"$(A)-$(B)": "x-y", "$$(A)": "$(A)", "$(C)": "$(C)", "$A": "$A", "$(A": "$(A", "cost $": "cost $", "$$$(B)": "$y",
	} {
		if got := expand(in, vars); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestImageBase covers the image name used without a command.
func TestImageBase(t *testing.T) {
	for in, want := range map[string]string{
		"summa-server": "summa-server", "ghcr.io/x/summa-server:v1": "summa-server",
		"localhost:5000/summa-server@sha256:abc": "summa-server", "busybox:1.36": "busybox",
	} {
		if got := imageBase(in); got != want {
			t.Errorf("imageBase(%q) = %q, want %q", in, got, want)
		}
	}
}
