// Package s3server starts real S3 servers, MinIO and versitygw, as separate
// processes: each on a free loopback port, with its own data directory,
// random credentials and one bucket. Tests use the testing.TB helpers
// (StartMinIO and friends), which stop the server when the test ends;
// programs that are not tests, such as the chaos run, use Launch and Stop
// the server themselves.
//
// The servers are binaries found on PATH or in $(go env GOPATH)/bin;
// scripts/install-s3-servers.sh installs both. When one is missing the test
// is skipped, or fails if the environment variable CI is set, so that CI
// never passes by skipping. MinIO is AGPL: it is only ever run as a separate
// process, never linked.
package s3server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/sluicedb/sluice/internal/subprocess"
	"github.com/sluicedb/sluice/objectio"
)

const (
	// Region is the region every server is started with.
	Region = "us-east-1"
	// BucketName is the bucket every server is started with.
	BucketName = "sluice-test"

	// readyTimeout bounds the wait for a server to answer after a start.
	readyTimeout = 60 * time.Second
	// readyPollInterval is the pause between readiness probes.
	readyPollInterval = 100 * time.Millisecond
	// probeTimeout bounds one readiness probe.
	probeTimeout = 2 * time.Second
	// startAttemptMax bounds the starts on fresh ports when another
	// process took the free port first.
	startAttemptMax = 3
	// logTailBytes is how much of a server's log a failure shows.
	logTailBytes = 4 << 10

	installScript = "scripts/install-s3-servers.sh"
)

// kind describes how to run one server binary.
type kind struct {
	name    string // binary name, also the Server's Kind
	install string // the go install command
	// args returns the command line after the binary.
	args func(s *Server) []string
	// env returns the extra environment.
	env func(s *Server) []string
	// ports is how many loopback ports the server needs.
	ports int
}

var minio = kind{
	name:    "minio",
	install: "go install github.com/minio/minio@latest",
	args: func(s *Server) []string {
		return []string{"server", s.dataDir(),
			"--address", s.addrs[0], "--console-address", s.addrs[1],
			"--certs-dir", filepath.Join(s.Dir, "certs"), "--quiet"}
	},
	env: func(s *Server) []string {
		return []string{"MINIO_ROOT_USER=" + s.AccessKey, "MINIO_ROOT_PASSWORD=" + s.SecretKey,
			"MINIO_BROWSER=off", "MINIO_UPDATE=off"}
	},
	ports: 2, // the S3 API and the console
}

var versitygw = kind{
	name:    "versitygw",
	install: "go install github.com/versity/versitygw/cmd/versitygw@v1.8.0",
	args: func(s *Server) []string {
		return []string{"--port", s.addrs[0], "--access", s.AccessKey, "--secret", s.SecretKey,
			"--region", Region, "--keep-alive", "--quiet", "posix", s.dataDir()}
	},
	env:   func(*Server) []string { return nil },
	ports: 1,
}

// kinds are the servers Launch knows, by name.
var kinds = map[string]kind{minio.name: minio, versitygw.name: versitygw}

// ErrNotInstalled means the server binary is on neither PATH nor a Go bin
// directory.
var ErrNotInstalled = errors.New("s3server: server binary not installed")

// Server is a running (or stopped) S3 server process. Its methods must be
// called from one goroutine (the test's), not concurrently.
type Server struct {
	Kind      string // "minio" or "versitygw"
	Endpoint  string // base URL, as in http://127.0.0.1:41234
	Bucket    string // created at start
	AccessKey string
	SecretKey string
	Dir       string // holds the data directory and the server's log

	t     testing.TB // nil when started by Launch
	kind  kind
	bin   string
	addrs []string            // loopback host:port, the S3 API first
	proc  *subprocess.Process // nil when stopped
}

// StartMinIO starts MinIO and returns a store URL for a fresh prefix of its
// bucket.
func StartMinIO(t testing.TB) string {
	t.Helper()
	return StartMinIOServer(t).URL(RandomPrefix())
}

// StartVersityGW starts versitygw on a posix directory and returns a store
// URL for a fresh prefix of its bucket.
func StartVersityGW(t testing.TB) string {
	t.Helper()
	return StartVersityGWServer(t).URL(RandomPrefix())
}

// StartMinIOServer starts MinIO and returns its handle, with which a test
// can Stop it mid-run and Start it again on the same port and data.
func StartMinIOServer(t testing.TB) *Server {
	t.Helper()
	return start(t, minio)
}

// StartVersityGWServer starts versitygw and returns its handle.
func StartVersityGWServer(t testing.TB) *Server {
	t.Helper()
	return start(t, versitygw)
}

func start(t testing.TB, k kind) *Server {
	t.Helper()
	bin := findBinary(t, k)
	dir := t.TempDir()
	s, err := launch(k, bin, dir)
	if err != nil {
		t.Fatalf("s3server: %v", err)
	}
	s.t = t
	// Registered after TempDir, so it runs before the directory is
	// removed: cleanups run last-in first-out.
	t.Cleanup(s.Stop)
	return s
}

// Launch starts a server of the given kind ("minio" or "versitygw") for a
// program that is not a test. Its data directory and log go under dir,
// which is created if missing and which the caller removes. The caller
// must Stop the server; the process is also killed if the caller dies
// first (on Linux). A missing binary is ErrNotInstalled.
func Launch(kindName, dir string) (*Server, error) {
	k, ok := kinds[kindName]
	if !ok {
		return nil, fmt.Errorf("s3server: unknown server kind %q; want minio or versitygw", kindName)
	}
	bin, err := lookBinary(k)
	if err != nil {
		return nil, err
	}
	return launch(k, bin, dir)
}

// launch starts the server with data under dir, on fresh ports, and creates
// its bucket.
func launch(k kind, bin, dir string) (*Server, error) {
	s := &Server{
		Kind:      k.name,
		Bucket:    BucketName,
		AccessKey: "sluice" + randomHex(8),
		SecretKey: randomHex(20),
		Dir:       dir,
		kind:      k,
		bin:       bin,
	}
	if err := os.MkdirAll(s.dataDir(), 0o755); err != nil {
		return nil, err
	}
	var err error
	for range startAttemptMax {
		if err = s.pickPorts(); err != nil {
			break
		}
		if err = s.run(); err == nil || !errors.Is(err, errExitedEarly) {
			break
		}
		// Most likely another process took the port between our probe
		// and the server's bind; try fresh ports.
	}
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", k.name, err)
	}
	if err := s.CreateBucket(s.Bucket); err != nil {
		s.Stop()
		return nil, fmt.Errorf("%s: %w", k.name, err)
	}
	return s, nil
}

// URL returns the store URL of prefix in the server's bucket, with
// credentials, as --store takes it.
func (s *Server) URL(prefix string) string {
	return s.URLFor(s.Bucket, prefix)
}

// URLFor returns the store URL of prefix in any bucket of the server.
func (s *Server) URLFor(bucket, prefix string) string {
	q := url.Values{}
	q.Set("endpoint", s.Endpoint)
	q.Set("region", Region)
	q.Set("path_style", "true")
	q.Set("access_key", s.AccessKey)
	q.Set("secret_key", s.SecretKey)
	return "s3://" + bucket + "/" + prefix + "?" + q.Encode()
}

// Config returns the configuration of a store on prefix in the server's
// bucket.
func (s *Server) Config(prefix string) objectio.S3Config {
	return objectio.S3Config{
		Bucket:    s.Bucket,
		Prefix:    prefix,
		Endpoint:  s.Endpoint,
		Region:    Region,
		PathStyle: true,
		AccessKey: s.AccessKey,
		SecretKey: s.SecretKey,
	}
}

// Stop kills the server (SIGKILL, as a crash would) and waits for it to
// exit. Requests fail until Start. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	if s.proc == nil {
		return
	}
	s.proc.Kill()
	s.proc = nil
}

// Start starts a stopped server again on the same port and data directory
// and waits until it answers. Starting a running server does nothing. A
// server from a test's helper fails the test when it cannot start; one from
// Launch returns the error.
func (s *Server) Start() error {
	if s.t != nil {
		s.t.Helper()
	}
	if s.proc != nil {
		return nil
	}
	err := s.run()
	if err != nil {
		err = fmt.Errorf("s3server: restarting %s: %w", s.Kind, err)
		if s.t != nil {
			s.t.Fatal(err)
		}
	}
	return err
}

// CreateBucket creates a bucket; one that exists already is fine.
func (s *Server) CreateBucket(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	_, err := s.client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
	var ae smithy.APIError
	if errors.As(err, &ae) && (ae.ErrorCode() == "BucketAlreadyOwnedByYou" || ae.ErrorCode() == "BucketAlreadyExists") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating bucket %q: %w", name, err)
	}
	return nil
}

// RandomPrefix returns a fresh store prefix, so that tests sharing a
// server and bucket each see an empty store.
func RandomPrefix() string {
	return "t-" + randomHex(6)
}

func (s *Server) dataDir() string { return filepath.Join(s.Dir, "data") }
func (s *Server) logPath() string { return filepath.Join(s.Dir, s.Kind+".log") }

// pickPorts reserves free loopback ports by binding and releasing them.
// Another process can take one before the server binds; start retries.
func (s *Server) pickPorts() error {
	s.addrs = s.addrs[:0]
	for range s.kind.ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("finding a free port: %w", err)
		}
		s.addrs = append(s.addrs, l.Addr().String())
		l.Close()
	}
	s.Endpoint = "http://" + s.addrs[0]
	return nil
}

// errExitedEarly means the server process exited before it was ready.
var errExitedEarly = errors.New("server exited before it was ready")

// run starts the process and waits until it serves S3 requests.
func (s *Server) run() error {
	logFile, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child has its own descriptor
	fmt.Fprintf(logFile, "--- %s starting %s %s\n", time.Now().Format(time.RFC3339Nano), s.bin, strings.Join(redactArgs(s.kind.args(s), s.SecretKey), " "))
	cmd := exec.Command(s.bin, s.kind.args(s)...)
	cmd.Dir = s.Dir
	cmd.Env = append(serverEnv(), s.kind.env(s)...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	proc, err := subprocess.Start(cmd)
	if err != nil {
		return err
	}
	s.proc = proc
	if err := s.waitReady(); err != nil {
		s.Stop()
		return fmt.Errorf("%w\n%s log (%s), last part:\n%s", err, s.Kind, s.logPath(), subprocess.LogTail(s.logPath(), logTailBytes))
	}
	return nil
}

// waitReady polls ListBuckets until it succeeds, the process exits, or
// readyTimeout passes.
func (s *Server) waitReady() error {
	client := s.client()
	deadline := time.Now().Add(readyTimeout)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-s.proc.Exited():
			return fmt.Errorf("%w: %v", errExitedEarly, s.proc.Err())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		_, lastErr = client.ListBuckets(ctx, &s3.ListBucketsInput{})
		cancel()
		if lastErr == nil {
			return nil
		}
		time.Sleep(readyPollInterval)
	}
	return fmt.Errorf("%s at %s not ready after %v: %v", s.Kind, s.Endpoint, readyTimeout, lastErr)
}

// client returns an SDK client with the server's root credentials, for
// administration (buckets, readiness); stores use objectio.NewS3.
func (s *Server) client() *s3.Client {
	return s3.New(s3.Options{
		Region:                     Region,
		BaseEndpoint:               aws.String(s.Endpoint),
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		RetryMaxAttempts:           1, // the callers poll
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// serverEnv is the test's environment without variables that would
// reconfigure the servers behind our back.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "MINIO_") || strings.HasPrefix(kv, "VGW_") || strings.HasPrefix(kv, "ROOT_ACCESS_KEY") || strings.HasPrefix(kv, "ROOT_SECRET") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func redactArgs(args []string, secret string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == secret {
			a = "REDACTED"
		}
		out[i] = a
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// findBinary finds a server binary for a test. A missing binary skips the
// test, or fails it when CI is set.
func findBinary(t testing.TB, k kind) string {
	t.Helper()
	path, err := lookBinary(k)
	if err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%v; CI is set, so the S3 tests must not be skipped", err)
	}
	t.Skip(err)
	return ""
}

// lookBinary finds a server binary on PATH, in $GOBIN or in the bin
// directory of each GOPATH entry.
func lookBinary(k kind) (string, error) {
	if path, err := exec.LookPath(k.name); err == nil {
		return path, nil
	}
	for _, dir := range goBinDirs() {
		path := filepath.Join(dir, k.name)
		if fi, err := os.Stat(path); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return path, nil
		}
	}
	return "", fmt.Errorf("%w: %s is not on PATH nor in %s; install it with %s, or run %s to install both S3 test servers",
		ErrNotInstalled, k.name, strings.Join(goBinDirs(), ", "), k.install, installScript)
}

var (
	goBinDirsOnce sync.Once
	goBinDirsList []string
)

// goBinDirs returns $GOBIN and each GOPATH entry's bin directory, as the go
// command sees them.
func goBinDirs() []string {
	goBinDirsOnce.Do(func() {
		gobin, gopath := os.Getenv("GOBIN"), os.Getenv("GOPATH")
		if out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output(); err == nil {
			lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
			if len(lines) == 2 {
				gobin, gopath = lines[0], lines[1]
			}
		}
		if gopath == "" {
			if home, err := os.UserHomeDir(); err == nil {
				gopath = filepath.Join(home, "go")
			}
		}
		if gobin != "" {
			goBinDirsList = append(goBinDirsList, gobin)
		}
		for _, p := range filepath.SplitList(gopath) {
			if p != "" {
				goBinDirsList = append(goBinDirsList, filepath.Join(p, "bin"))
			}
		}
	})
	return goBinDirsList
}
