// Command netprobe checks the cluster's network from inside a pod, for the
// e2e spec of cluster networking: it resolves a name with the pod's DNS,
// searches an engine through its Service with the index's CA and a token,
// and asks the API server for its version through the "kubernetes"
// Service with the pod's service account. It prints one JSON object
// (report) on stdout and exits non-zero when a step still fails at the
// deadline (each step is retried: a new Service takes a moment to route).
//
//	netprobe -lookup NAME -engine URL -index NAME -query Q -ca FILE -token-file FILE [-kubernetes URL]
//	netprobe -load -expect N -engine URL -index NAME -query Q -ca FILE -token-file FILE
//
// With -load it instead searches the engine back to back until it is
// killed, as a client of a read Service would (load.go).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/summadev/summa/client"
)

// serviceAccountDir holds the pod's service-account token and the cluster CA.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// report is what netprobe prints.
type report struct {
	// Lookup is the name resolved with the pod's resolver.
	Lookup string `json:"lookup"`
	// Addresses are its addresses.
	Addresses []string `json:"addresses"`
	// TotalHits and IDs are the search's result.
	TotalHits int      `json:"totalHits"`
	IDs       []string `json:"ids"`
	// GitVersion is the API server's version, read through the kubernetes Service.
	GitVersion string `json:"gitVersion"`
}

// options are the command line.
type options struct {
	lookup, engine, index, query, ca, tokenFile, kubernetes string
	deadline                                                time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.lookup, "lookup", "", "name to resolve")
	flag.StringVar(&o.engine, "engine", "", "engine base URL, e.g. https://NAME.NS.svc:8082")
	flag.StringVar(&o.index, "index", "", "index to search")
	flag.StringVar(&o.query, "query", "", "query")
	flag.StringVar(&o.ca, "ca", "", "PEM CA file that verifies the engine")
	flag.StringVar(&o.tokenFile, "token-file", "", "file of the bearer token (first line)")
	flag.StringVar(&o.kubernetes, "kubernetes", "https://kubernetes.default.svc", "API server URL")
	flag.DurationVar(&o.deadline, "deadline", 2*time.Minute, "how long each step is retried")
	load := flag.Bool("load", false, "search continuously until killed, printing running totals (load.go)")
	expect := flag.Int("expect", 0, "with -load: the total hits every search must find")
	workers := flag.Int("workers", 2, "with -load: concurrent searchers")
	flag.Parse()
	if *load {
		if err := runLoad(o, *expect, *workers); err != nil {
			fmt.Fprintln(os.Stderr, "netprobe:", err)
			os.Exit(1)
		}
		return
	}
	r, err := run(o)
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
	if err != nil {
		fmt.Fprintln(os.Stderr, "netprobe:", err)
		os.Exit(1)
	}
}

// run does the three steps in order.
func run(o options) (*report, error) {
	r := &report{Lookup: o.lookup}
	err := retry(o.deadline, func(ctx context.Context) (err error) {
		r.Addresses, err = net.DefaultResolver.LookupHost(ctx, o.lookup)
		return err
	})
	if err != nil {
		return r, fmt.Errorf("resolve %s: %w", o.lookup, err)
	}
	if err := retry(o.deadline, func(ctx context.Context) error { return search(ctx, o, r) }); err != nil {
		return r, fmt.Errorf("search %s at %s: %w", o.index, o.engine, err)
	}
	if err := retry(o.deadline, func(ctx context.Context) error { return apiVersion(ctx, o.kubernetes, r) }); err != nil {
		return r, fmt.Errorf("API server at %s: %w", o.kubernetes, err)
	}
	return r, nil
}

// retry calls step every second until it succeeds or the deadline passes.
func retry(deadline time.Duration, step func(context.Context) error) error {
	end := time.Now().Add(deadline)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := step(ctx)
		cancel()
		if err == nil || time.Now().After(end) {
			return err
		}
		fmt.Fprintln(os.Stderr, "netprobe: retrying:", err)
		time.Sleep(time.Second)
	}
}

// engineClient is a client of o.engine with the engine's CA (verifying the
// URL's host) and the token of o.tokenFile.
func engineClient(o options) (*client.Client, error) {
	ca, err := os.ReadFile(o.ca)
	if err != nil {
		return nil, fmt.Errorf("read the CA: %w", err)
	}
	tok, err := os.ReadFile(o.tokenFile)
	if err != nil {
		return nil, fmt.Errorf("read the token: %w", err)
	}
	hc, err := client.NewHTTPClient(ca, "", 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("engine client: %w", err)
	}
	token := strings.TrimSpace(strings.SplitN(string(tok), "\n", 2)[0])
	return client.New(o.engine, hc).WithToken(token), nil
}

// search runs the query with the engine's CA (verifying the URL's host) and
// the token.
func search(ctx context.Context, o options, r *report) error {
	c, err := engineClient(o)
	if err != nil {
		return err
	}
	res, err := c.Search(ctx, o.index, client.SearchRequest{Query: o.query, Limit: 10})
	if err != nil {
		return err
	}
	r.TotalHits, r.IDs = res.TotalHits, nil
	for _, h := range res.Hits {
		var f struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(h.Fields, &f); err != nil {
			return fmt.Errorf("decode a hit: %w", err)
		}
		r.IDs = append(r.IDs, f.ID)
	}
	return nil
}

// apiVersion reads GET /version with the pod's service-account token,
// verifying the API server with the cluster CA the kubelet mounts.
func apiVersion(ctx context.Context, base string, r *report) error {
	ca, err := os.ReadFile(serviceAccountDir + "/ca.crt")
	if err != nil {
		return fmt.Errorf("read the cluster CA: %w", err)
	}
	tok, err := os.ReadFile(serviceAccountDir + "/token")
	if err != nil {
		return fmt.Errorf("read the service-account token: %w", err)
	}
	hc, err := client.NewHTTPClient(ca, "", 10*time.Second)
	if err != nil {
		return fmt.Errorf("API client: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/version", nil)
	if err != nil {
		return fmt.Errorf("request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("GET /version: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /version: %s", resp.Status)
	}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return fmt.Errorf("decode /version: %w", err)
	}
	if v.GitVersion == "" {
		return errors.New("GET /version: no gitVersion")
	}
	r.GitVersion = v.GitVersion
	return nil
}
