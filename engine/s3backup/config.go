// Package s3backup keeps online backups of indexes in an S3-compatible
// object store and restores them (engine contract, "Backups to object
// storage").
//
// Bucket layout, under the configured prefix P (empty: the bucket's root):
//
//	P/<index>/files/seg_<ID>.<suffix>-<sha256>   one segment or mask file
//	P/<index>/backups/<backup ID>.json           one manifest per backup
//
// A file object's key carries the file's name and the SHA-256 of its
// content, so two different files can never share an object (across
// indexes, generations, backups, or an index deleted and created again
// under the same name), and a file already in the bucket under the same
// name and checksum is not uploaded again: every backup is incremental.
//
// A manifest holds the generation's metadata.json, the name, size and
// checksum of every file it names, and the engine version. It is written
// last, once every file object is in the bucket, with one PUT (atomic in
// S3): a backup exists exactly when its manifest does. Listings and
// restores read manifests only, so a backup cut short at any point (the
// process killed, the network or the store gone) leaves at most file
// objects that no manifest names, which the next backup reuses.
package s3backup

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// DefaultRegion is the region when none is configured.
const DefaultRegion = "us-east-1"

// ErrNotConfigured: no object store is configured (no --s3-* flags).
var ErrNotConfigured = errors.New("s3backup: no object store is configured (--s3-endpoint, --s3-bucket)")

// Config locates the object store.
type Config struct {
	// Endpoint is the store's URL: http://HOST:PORT or https://HOST:PORT
	// (a bare HOST:PORT means https).
	Endpoint string
	// Bucket is the bucket name.
	Bucket string
	// Prefix is prepended to every key (may be empty; slashes at its ends
	// are ignored).
	Prefix string
	// Region is the bucket's region (DefaultRegion when empty).
	Region string
	// CredentialsFile holds the access key: two lines (access key ID,
	// then secret access key), or the lines AWS_ACCESS_KEY_ID=... and
	// AWS_SECRET_ACCESS_KEY=.... It is read again by every operation, so
	// a rotated key is used without a restart.
	CredentialsFile string
	// CAFile is a PEM bundle that verifies the store's certificate
	// (default: the system's roots).
	CAFile string
	// UploadBytesPerSecond bounds the upload rate of one backup (0: no
	// bound), so that a backup leaves the disk and the network to search.
	UploadBytesPerSecond int64
}

// Configured reports whether any object store setting is given.
func (c Config) Configured() bool { return c.Endpoint != "" || c.Bucket != "" }

// Validate checks the settings without contacting the store.
func (c Config) Validate() error {
	switch {
	case c.Endpoint == "":
		return errors.New("--s3-endpoint is required with the other --s3-* flags")
	case c.Bucket == "":
		return errors.New("--s3-bucket is required with --s3-endpoint")
	case c.CredentialsFile == "":
		return errors.New("--s3-credentials-file is required with --s3-endpoint")
	case c.UploadBytesPerSecond < 0:
		return errors.New("--s3-upload-bytes-per-second must not be negative")
	}
	if _, _, err := parseEndpoint(c.Endpoint); err != nil {
		return err
	}
	return nil
}

// parseEndpoint splits the endpoint URL into host:port and TLS.
func parseEndpoint(ep string) (host string, secure bool, err error) {
	if !strings.Contains(ep, "://") {
		ep = "https://" + ep
	}
	u, err := url.Parse(ep)
	if err != nil {
		return "", false, fmt.Errorf("--s3-endpoint %q: %w", ep, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return "", false, fmt.Errorf("--s3-endpoint %q: want http://HOST:PORT or https://HOST:PORT", ep)
	}
	return u.Host, u.Scheme == "https", nil
}

// ReadCredentials reads a credentials file: either two non-empty lines
// (the access key ID, then the secret access key) or the lines
// AWS_ACCESS_KEY_ID=... and AWS_SECRET_ACCESS_KEY=... (other KEY= lines,
// blank lines and # comments are ignored in that form).
func ReadCredentials(path string) (accessKeyID, secretAccessKey string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", fmt.Errorf("s3backup: credentials file: %w", err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return "", "", fmt.Errorf("s3backup: credentials file %s: %w", path, err)
	}
	keyed := false
	for _, l := range lines {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		switch strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(k), "export ")) {
		case "AWS_ACCESS_KEY_ID":
			accessKeyID, keyed = unquote(v), true
		case "AWS_SECRET_ACCESS_KEY":
			secretAccessKey, keyed = unquote(v), true
		}
	}
	if !keyed {
		if len(lines) != 2 {
			return "", "", fmt.Errorf("s3backup: credentials file %s: want two lines (access key ID, secret access key) or AWS_ACCESS_KEY_ID= and AWS_SECRET_ACCESS_KEY=", path)
		}
		accessKeyID, secretAccessKey = lines[0], lines[1]
	}
	if accessKeyID == "" || secretAccessKey == "" {
		return "", "", fmt.Errorf("s3backup: credentials file %s: the access key ID or the secret access key is missing", path)
	}
	return accessKeyID, secretAccessKey, nil
}

func unquote(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	return v
}

// newClient builds an S3 client (path-style addressing), reading the
// credentials and CA files now.
func newClient(c Config) (*minio.Client, error) {
	host, secure, err := parseEndpoint(c.Endpoint)
	if err != nil {
		return nil, err
	}
	id, secret, err := ReadCredentials(c.CredentialsFile)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("s3backup: CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("s3backup: CA file %s holds no PEM certificate", c.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	region := c.Region
	if region == "" {
		region = DefaultRegion
	}
	cl, err := minio.New(host, &minio.Options{
		Creds:        credentials.NewStaticV4(id, secret, ""),
		Secure:       secure,
		Region:       region,
		BucketLookup: minio.BucketLookupPath,
		Transport:    tr,
		MaxRetries:   3,
	})
	if err != nil {
		return nil, fmt.Errorf("s3backup: %w", err)
	}
	return cl, nil
}
