// Command sample-ingest loads the paragraphs of Newton's Opticks into a
// running summa-server through its HTTP API: it creates the index, sends
// the documents as NDJSON, commits and runs a few searches.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/internal/corpus"
)

func main() {
	addr := flag.String("server", "http://127.0.0.1:8082", "summa-server address")
	name := flag.String("index", "opticks", "index name")
	token := flag.String("token", os.Getenv("SUMMA_TOKEN"), "bearer token with the admin scope (default $SUMMA_TOKEN)")
	caFile := flag.String("cacert", "", "PEM file of the CA that verifies an https:// server")
	serverName := flag.String("server-name", "", "name to verify in the server's certificate, when not the URL's host")
	flag.Parse()
	c, err := newClient(*addr, *token, *caFile, *serverName)
	if err == nil {
		err = run(c, *name)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sample-ingest:", err)
		os.Exit(1)
	}
}

// newClient is a client of addr with a token and, for HTTPS, a CA file.
func newClient(addr, token, caFile, serverName string) (*client.Client, error) {
	var ca []byte
	if caFile != "" {
		var err error
		if ca, err = os.ReadFile(caFile); err != nil {
			return nil, fmt.Errorf("read -cacert: %w", err)
		}
	}
	return client.NewWithOptions(addr, client.Options{Token: token, CACert: ca, ServerName: serverName})
}

func run(c *client.Client, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.CreateIndex(ctx, name, json.RawMessage(corpus.Schema(true))); err != nil {
		return err
	}
	ps, err := corpus.Paragraphs()
	if err != nil {
		return err
	}
	var nd bytes.Buffer
	for i, p := range ps {
		nd.Write(append(corpus.Document(i, p), '\n'))
	}
	start := time.Now()
	if _, err := c.AddNDJSON(ctx, name, &nd); err != nil {
		return err
	}
	res, err := c.Commit(ctx, name)
	if err != nil {
		return err
	}
	fmt.Printf("ingested %d paragraphs of Opticks into %q over HTTP in %v: generation %d, %d documents\n",
		len(ps), name, time.Since(start).Round(time.Millisecond), res.Generation, res.Documents)
	for _, q := range []string{"light", "+prism +colours", `"angle of incidence"`} {
		r, err := c.Search(ctx, name, client.SearchRequest{Query: q, Limit: 3})
		if err != nil {
			return err
		}
		fmt.Printf("search %-22s %d hits\n", q, r.TotalHits)
	}
	return nil
}
