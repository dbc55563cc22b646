// Command fakefollower stands in for summa-server in the operator's
// envtest specs, so that read followers can be run there: envkubelet
// runs every engine container through it.
//
// Without --follow it replaces itself (exec) with the real summa-server
// found next to it, so a leader is the real engine. With --follow it is
// a follower as far as the operator can see, without copying anything
// (in envtest the leader's Service name resolves nowhere): it checks that
// the files of --follow-token-file and --follow-ca-file exist, serves
// /healthz and /readyz, and answers GET /v1/indexes/{index} with the
// replication state written by the spec in <data-dir>/fake-follower.json
// (FakeState; absent: following, caught up at generation 1), over HTTPS
// with --tls-cert-file and --tls-key-file when given. It records its
// command line in <data-dir>/fake-follower-args.
//
// A doctor (--doctor) waits, before it execs the real one, for as long as
// a file named doctor-hold exists next to this binary: a spec holds a
// doctor run in its Job that way. A SIGTERM meanwhile ends it with exit
// code 143, as a doctor stopped mid-repair.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// FakeState is what the spec makes the follower report.
type FakeState struct {
	// State is the replication state (following, catchingUp, disconnected).
	State string `json:"state"`
	// Generation is the generation served.
	Generation int64 `json:"generation"`
	// LeaderGeneration is the leader's generation as known.
	LeaderGeneration int64 `json:"leaderGeneration"`
	// LagSeconds is the replication lag.
	LagSeconds float64 `json:"lagSeconds"`
	// Quarantined lists quarantined segment IDs.
	Quarantined []string `json:"quarantined,omitempty"`
	// NotReady makes /readyz answer 503.
	NotReady bool `json:"notReady,omitempty"`
}

// flags are the summa-server flags the fake reads.
type flags struct {
	dataDir, listen, follow, tokenFile, caFile, certFile, keyFile string
}

func main() {
	args := os.Args[1:]
	f := parse(args)
	if f.follow == "" {
		holdDoctor(args)
		execReal()
		return
	}
	if err := run(f, args); err != nil {
		fmt.Fprintln(os.Stderr, "fakefollower:", err)
		os.Exit(2)
	}
}

// holdDoctor waits while doctor-hold exists next to this binary, when args
// run the doctor.
func holdDoctor(args []string) {
	doctor := false
	for _, a := range args {
		doctor = doctor || a == "--doctor"
	}
	exe, err := os.Executable()
	if !doctor || err != nil {
		return
	}
	hold := filepath.Join(filepath.Dir(exe), "doctor-hold")
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(stop)
	for {
		if _, err := os.Stat(hold); err != nil {
			return
		}
		select {
		case <-stop:
			fmt.Fprintln(os.Stderr, "fakefollower: doctor stopped while held")
			os.Exit(143)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// execReal replaces the process with summa-server next to this binary.
func execReal() {
	exe, err := os.Executable()
	if err == nil {
		real := filepath.Join(filepath.Dir(exe), "summa-server")
		err = syscall.Exec(real, append([]string{real}, os.Args[1:]...), os.Environ())
	}
	fmt.Fprintln(os.Stderr, "fakefollower: exec summa-server:", err)
	os.Exit(2)
}

// parse reads the flags it knows (--name=value or --name value) and
// ignores the others.
func parse(args []string) flags {
	var f flags
	dst := map[string]*string{
		"--data-dir": &f.dataDir, "--listen": &f.listen, "--follow": &f.follow,
		"--follow-token-file": &f.tokenFile, "--follow-ca-file": &f.caFile,
		"--tls-cert-file": &f.certFile, "--tls-key-file": &f.keyFile,
	}
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(args[i], "=")
		p, ok := dst[name]
		if !ok {
			continue
		}
		if !hasValue && i+1 < len(args) {
			i++
			value = args[i]
		}
		*p = value
	}
	return f
}

// run serves as a follower until SIGTERM.
func run(f flags, args []string) error {
	for _, file := range []string{f.tokenFile, f.caFile} {
		if file == "" {
			continue
		}
		if _, err := os.Stat(file); err != nil {
			return fmt.Errorf("follow file: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(f.dataDir, "fake-follower-args"), []byte(strings.Join(args, "\n")), 0o644); err != nil {
		return fmt.Errorf("record arguments: %w", err)
	}
	srv := &http.Server{Addr: f.listen, Handler: handler(f), ReadHeaderTimeout: 10 * time.Second}
	if f.certFile != "" {
		pair, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
		if err != nil {
			return fmt.Errorf("certificate: %w", err)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	errc := make(chan error, 1)
	go func() {
		if srv.TLSConfig != nil {
			errc <- srv.ListenAndServeTLS("", "")
		} else {
			errc <- srv.ListenAndServe()
		}
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-stop:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// state reads FakeState from the data directory.
func state(f flags) FakeState {
	st := FakeState{State: "following", Generation: 1, LeaderGeneration: 1}
	if data, err := os.ReadFile(filepath.Join(f.dataDir, "fake-follower.json")); err == nil {
		_ = json.Unmarshal(data, &st)
	}
	return st
}

// handler answers the routes the operator and the probes use.
func handler(f flags) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if state(f).NotReady {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("GET /v1/indexes/{index}", func(w http.ResponseWriter, r *http.Request) {
		st := state(f)
		type quarantined struct {
			Segment string `json:"segment"`
			Reason  string `json:"reason"`
		}
		q := []quarantined{}
		for _, id := range st.Quarantined {
			q = append(q, quarantined{Segment: id, Reason: "checksum mismatch"})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"name": r.PathValue("index"), "state": "open", "generation": st.Generation, "documents": 0,
			"segments": []any{}, "quarantined": q,
			"replication": map[string]any{"leader": f.follow, "state": st.State,
				"leaderGeneration": st.LeaderGeneration, "lagSeconds": st.LagSeconds},
		})
	})
	return mux
}
