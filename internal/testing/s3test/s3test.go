// Package s3test runs a real S3 server for tests: SeaweedFS's `weed
// server -s3`, built from the Go module proxy by hack/s3/build.sh (make
// s3) into bin/s3/weed. It listens on 127.0.0.1 only (StartOn: another
// local address), on free ports, with
// its data in the test's temporary directory, and is killed when the test
// ends.
//
// When the binary is absent the tests that need it are skipped with a
// message that says how to build it, unless SUMMA_REQUIRE_S3=1, which
// makes them fail instead (CI sets it once it builds the server).
// SUMMA_S3_WEED names another weed binary.
package s3test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/summadev/summa/internal/testing/harness"
)

// TB is what the package needs of a test: *testing.T, testing.TB and
// Ginkgo's GinkgoT() all have it.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
	Skip(args ...any)
	Failed() bool
	TempDir() string
	Cleanup(f func())
}

// Credentials of the test server's one identity.
const (
	AccessKey = "summa-test-access"
	SecretKey = "summa-test-secret-0123456789"
)

// startTimeout bounds how long weed may take to serve S3.
const startTimeout = 90 * time.Second

// Binary returns the weed binary and whether it exists.
func Binary() (string, bool) {
	if p := os.Getenv("SUMMA_S3_WEED"); p != "" {
		st, err := os.Stat(p)
		return p, err == nil && !st.IsDir()
	}
	root, err := harness.ModuleRoot()
	if err != nil {
		return "", false
	}
	p := filepath.Join(root, "bin", "s3", "weed")
	st, err := os.Stat(p)
	return p, err == nil && !st.IsDir()
}

// Need skips (or, with SUMMA_REQUIRE_S3=1, fails) the test when the S3
// server binary is absent; it returns the binary.
func Need(t TB) string {
	t.Helper()
	bin, ok := Binary()
	if !ok {
		msg := fmt.Sprintf("S3 server binary not found (%q): run `make s3` (hack/s3/build.sh) to build SeaweedFS's weed into bin/s3", bin)
		if os.Getenv("SUMMA_REQUIRE_S3") == "1" {
			t.Fatalf("%s; SUMMA_REQUIRE_S3=1 forbids skipping", msg)
		}
		t.Skip(msg)
	}
	return bin
}

// Server is one running S3 server.
type Server struct {
	// Endpoint is http://IP:PORT (127.0.0.1 unless StartOn).
	Endpoint string
	// Port is the S3 port.
	Port int
	// Bucket is a bucket created for the test.
	Bucket string
	// CredentialsFile holds AccessKey and SecretKey in the two-line form.
	CredentialsFile string
	// Client is an S3 client of the server, for checks.
	Client *minio.Client

	t    TB
	bin  string
	dir  string
	args []string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  *harness.Output
}

// Start starts a server on 127.0.0.1 with one bucket and waits until it
// serves S3.
func Start(t TB) *Server {
	t.Helper()
	return StartOn(t, "127.0.0.1")
}

// StartOn is Start on another local address of this host (the e2e specs
// use the local cluster's node address, which pods reach).
func StartOn(t TB, ip string) *Server {
	t.Helper()
	bin := Need(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`{"identities":[{"name":"summa","credentials":[{"accessKey":%q,"secretKey":%q}],"actions":["Admin","Read","Write","List","Tagging"]}]}`,
		AccessKey, SecretKey)
	cfgFile := filepath.Join(dir, "s3.json")
	credFile := filepath.Join(dir, "credentials")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(credFile, []byte(AccessKey+"\n"+SecretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ports, err := harness.FreePorts(7)
	if err != nil {
		t.Fatal(err)
	}
	s3Port := ports[0]
	args := []string{"server", "-s3", "-filer",
		"-ip=" + ip, "-ip.bind=" + ip, "-dir=" + data,
		"-master.port=" + strconv.Itoa(ports[1]), "-master.port.grpc=" + strconv.Itoa(ports[2]),
		"-volume.port=" + strconv.Itoa(ports[3]), "-volume.port.grpc=" + strconv.Itoa(ports[4]),
		"-filer.port=" + strconv.Itoa(ports[5]), "-filer.port.grpc=" + strconv.Itoa(ports[6]),
		"-s3.port=" + strconv.Itoa(s3Port), "-s3.port.iceberg=0", "-s3.port.lance=0",
		"-s3.config=" + cfgFile,
		"-master.telemetry=false", "-master.volumeSizeLimitMB=64", "-volume.max=0",
		"-filer.localSocket=" + filepath.Join(dir, "filer.sock"),
	}
	hostPort := net.JoinHostPort(ip, strconv.Itoa(s3Port))
	s := &Server{Endpoint: "http://" + hostPort, Port: s3Port, Bucket: "summa-backups",
		CredentialsFile: credFile, t: t, bin: bin, dir: dir, args: args}
	cl, err := minio.New(hostPort, &minio.Options{
		Creds: credentials.NewStaticV4(AccessKey, SecretKey, ""), Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	s.Client = cl
	t.Cleanup(func() {
		s.Kill()
		if t.Failed() {
			t.Logf("weed output (tail):\n%s", harness.Tail(s.Output(), 40))
		}
	})
	s.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		err := cl.MakeBucket(ctx, s.Bucket, minio.MakeBucketOptions{Region: "us-east-1"})
		if err == nil {
			break
		}
		if code := minio.ToErrorResponse(err).Code; code == "BucketAlreadyOwnedByYou" || code == "BucketAlreadyExists" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("S3 server did not create a bucket within %s: %v\n%s", startTimeout, err, harness.Tail(s.Output(), 40))
		}
		time.Sleep(250 * time.Millisecond)
	}
	return s
}

// start runs the process.
func (s *Server) start(t TB) {
	t.Helper()
	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.dir
	out := &harness.Output{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", s.bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done, s.log = cmd, done, out
	s.mu.Unlock()
}

// Kill stops the server at once (SIGKILL to its process group).
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
}

// Restart kills the server and starts it again on the same ports and
// data, then waits until the bucket answers again.
func (s *Server) Restart(t TB) {
	t.Helper()
	s.Kill()
	s.start(t)
	s.WaitServing(t)
}

// WaitServing waits until the bucket can be listed.
func (s *Server) WaitServing(t TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		ok, err := s.Client.BucketExists(ctx, s.Bucket)
		if err == nil && ok {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("S3 server not serving bucket %s within %s: %v", s.Bucket, startTimeout, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Output is what the server printed.
func (s *Server) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil {
		return ""
	}
	return s.log.String()
}

// Flags are the summa-server flags of this store with prefix.
func (s *Server) Flags(prefix string) []string {
	return []string{"--s3-endpoint", s.Endpoint, "--s3-bucket", s.Bucket, "--s3-prefix", prefix,
		"--s3-credentials-file", s.CredentialsFile}
}

// Object is one stored object.
type Object struct {
	Key  string
	Size int64
}

// Objects lists every object under prefix, sorted by key.
func (s *Server) Objects(t TB, prefix string) []Object {
	t.Helper()
	var out []Object
	for o := range s.Client.ListObjects(context.Background(), s.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			t.Fatalf("list %s: %v", prefix, o.Err)
		}
		out = append(out, Object{Key: o.Key, Size: o.Size})
	}
	return out
}

// Get reads an object.
func (s *Server) Get(t TB, key string) []byte {
	t.Helper()
	obj, err := s.Client.GetObject(context.Background(), s.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer obj.Close()
	data, err := io.ReadAll(obj)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return data
}

// FlipByte rewrites an object with one byte inverted at off (counted from
// the end when negative), keeping its size and user metadata.
func (s *Server) FlipByte(t TB, key string, off int64) {
	t.Helper()
	ctx := context.Background()
	st, err := s.Client.StatObject(ctx, s.Bucket, key, minio.StatObjectOptions{})
	if err != nil {
		t.Fatalf("stat %s: %v", key, err)
	}
	data := s.Get(t, key)
	if off < 0 {
		off += int64(len(data))
	}
	data[off] ^= 0xff
	meta := map[string]string{}
	for k, v := range st.UserMetadata {
		meta[strings.TrimPrefix(k, "X-Amz-Meta-")] = v
	}
	if _, err := s.Client.PutObject(ctx, s.Bucket, key, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{UserMetadata: meta}); err != nil {
		t.Fatalf("rewrite %s: %v", key, err)
	}
}

// Put writes an object (with the user metadata of the object it
// replaces, if any).
func (s *Server) Put(t TB, key string, data []byte) {
	t.Helper()
	meta := map[string]string{}
	if st, err := s.Client.StatObject(context.Background(), s.Bucket, key, minio.StatObjectOptions{}); err == nil {
		for k, v := range st.UserMetadata {
			meta[strings.TrimPrefix(k, "X-Amz-Meta-")] = v
		}
	}
	if _, err := s.Client.PutObject(context.Background(), s.Bucket, key, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{UserMetadata: meta}); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// Remove deletes an object.
func (s *Server) Remove(t TB, key string) {
	t.Helper()
	if err := s.Client.RemoveObject(context.Background(), s.Bucket, key, minio.RemoveObjectOptions{}); err != nil {
		t.Fatalf("remove %s: %v", key, err)
	}
}
