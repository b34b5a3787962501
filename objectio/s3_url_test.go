package objectio

import (
	"strings"
	"testing"
	"time"
)

func TestParseS3URLReadsEveryParameter(t *testing.T) {
	cfg, err := parseS3URL("bkt/some/prefix?endpoint=http%3A%2F%2Fminio.internal%3A9000&region=eu-west-1&path_style=true" +
		"&access_key=AK&secret_key=S%2Bx%26y&request_timeout=5s&max_attempts=7")
	if err != nil {
		t.Fatalf("parseS3URL = %v, want nil", err)
	}
	want := S3Config{Bucket: "bkt", Prefix: "some/prefix", Endpoint: "http://minio.internal:9000", Region: "eu-west-1",
		PathStyle: true, AccessKey: "AK", SecretKey: "S+x&y", RequestTimeout: 5 * time.Second, MaxAttempts: 7}
	if cfg != want {
		t.Fatalf("parseS3URL = %+v, want %+v", cfg, want)
	}
}

func TestParseS3URLDefaultsPathStyleOnlyForLoopbackAndIPEndpoints(t *testing.T) {
	cases := []struct {
		rest string
		want bool
	}{
		{"b", false},
		{"b/p?endpoint=https://s3.example.com", false},
		{"b/p?endpoint=http://127.0.0.1:9000", true},
		{"b/p?endpoint=http://localhost:9000", true},
		{"b/p?endpoint=http://[::1]:9000", true},
		{"b/p?endpoint=http://127.0.0.1:9000&path_style=false", false},
		{"b/p?endpoint=https://s3.example.com&path_style=1", true},
	}
	for _, c := range cases {
		cfg, err := parseS3URL(c.rest)
		if err != nil || cfg.PathStyle != c.want {
			t.Errorf("parseS3URL(%q).PathStyle = %v, %v; want %v", c.rest, cfg.PathStyle, err, c.want)
		}
	}
}

func TestParseS3URLRejectsBadURLsWithoutEchoingSecrets(t *testing.T) {
	cases := []struct{ rest, wantInError string }{
		{"", "needs a bucket"},
		{"/prefix", "needs a bucket"},
		{"b?secret_key=hunter2&bogus=1", `unknown parameter "bogus"`},
		{"b?secret_key=hunter2&path_style=maybe", "path_style"},
		{"b?secret_key=hunter2&request_timeout=soon", "request_timeout"},
		{"b?secret_key=hunter2&max_attempts=0", "max_attempts"},
		{"b?secret_key=hunter2&region=a&region=b", "repeats"},
		{"b?secret_key=hunter2&%zz", "malformed"},
	}
	for _, c := range cases {
		_, err := parseS3URL(c.rest)
		if err == nil || !strings.Contains(err.Error(), c.wantInError) {
			t.Errorf("parseS3URL(%q) = %v, want an error mentioning %q", c.rest, err, c.wantInError)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("parseS3URL(%q) = %q, which leaks the secret key", c.rest, err)
		}
	}
}

func TestNewS3RejectsBadConfigs(t *testing.T) {
	cases := []struct {
		cfg         S3Config
		wantInError string
	}{
		{S3Config{}, "needs a bucket"},
		{S3Config{Bucket: "b", Prefix: "a/../b"}, "prefix"},
		{S3Config{Bucket: "b", Endpoint: "127.0.0.1:9000"}, "needs a scheme"},
		{S3Config{Bucket: "b", AccessKey: "only-access"}, "both"},
	}
	for _, c := range cases {
		_, err := NewS3(t.Context(), c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.wantInError) {
			t.Errorf("NewS3(%+v) = %v, want an error mentioning %q", c.cfg, err, c.wantInError)
		}
	}
}

func TestNewS3TakesCredentialsFromSluiceEnvironment(t *testing.T) {
	t.Setenv(envAccessKey, "env-access")
	t.Setenv(envSecretKey, "")
	if _, err := NewS3(t.Context(), S3Config{Bucket: "b"}); err == nil || !strings.Contains(err.Error(), envSecretKey) {
		t.Fatalf("NewS3 with only %s set = %v, want an error naming %s", envAccessKey, err, envSecretKey)
	}
	t.Setenv(envSecretKey, "env-secret")
	s, err := NewS3(t.Context(), S3Config{Bucket: "b", Endpoint: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatalf("NewS3 with %s/%s = %v, want nil", envAccessKey, envSecretKey, err)
	}
	creds, err := s.client.Options().Credentials.Retrieve(t.Context())
	if err != nil || creds.AccessKeyID != "env-access" || creds.SecretAccessKey != "env-secret" {
		t.Fatalf("credentials = %q/%q, %v; want env-access/env-secret", creds.AccessKeyID, creds.SecretAccessKey, err)
	}
}

func TestNewS3NormalizesThePrefix(t *testing.T) {
	for in, want := range map[string]string{"": "", "/": "", "a": "a/", "a/b/": "a/b/", "/a/b": "a/b/"} {
		s, err := NewS3(t.Context(), S3Config{Bucket: "b", Prefix: in, AccessKey: "a", SecretKey: "s"})
		if err != nil || s.prefix != want {
			t.Errorf("NewS3(Prefix %q).prefix = %q, %v; want %q", in, s.prefix, err, want)
		}
	}
}

func TestRedactStoreURLHidesKeys(t *testing.T) {
	in := "s3://b/p?endpoint=http://x:9000&access_key=AK&secret_key=SK&region=r"
	want := "s3://b/p?endpoint=http://x:9000&access_key=REDACTED&secret_key=REDACTED&region=r"
	if got := RedactStoreURL(in); got != want {
		t.Fatalf("RedactStoreURL = %q, want %q", got, want)
	}
	for _, same := range []string{"dir:///var/lib/sluice", "mem://", "s3://b/p"} {
		if got := RedactStoreURL(same); got != same {
			t.Errorf("RedactStoreURL(%q) = %q, want it unchanged", same, got)
		}
	}
}

func TestCheckContentRange(t *testing.T) {
	cases := []struct {
		header string
		offset int64
		ok     bool
	}{
		{"", 5, true},
		{"bytes 5-9/10", 5, true},
		{"bytes 0-9/10", 0, true},
		{"bytes 4-9/10", 5, false},
		{"items 5-9/10", 5, false},
		{"bytes x-9/10", 5, false},
	}
	for _, c := range cases {
		if err := checkContentRange(c.header, c.offset); (err == nil) != c.ok {
			t.Errorf("checkContentRange(%q, %d) = %v, want ok=%v", c.header, c.offset, err, c.ok)
		}
	}
}

func TestFencedReaderFailsAfterFence(t *testing.T) {
	f := newFencedReader([]byte("abcdef"))
	buf := make([]byte, 3)
	if n, err := f.Read(buf); n != 3 || err != nil || string(buf) != "abc" {
		t.Fatalf("Read = %d, %v, %q; want 3, nil, abc", n, err, buf)
	}
	if pos, err := f.Seek(0, 0); pos != 0 || err != nil {
		t.Fatalf("Seek(0) = %d, %v", pos, err)
	}
	f.fence()
	if n, err := f.Read(buf); n != 0 || err != errFenced {
		t.Fatalf("Read after fence = %d, %v; want 0, errFenced", n, err)
	}
	if _, err := f.Seek(0, 0); err != errFenced {
		t.Fatalf("Seek after fence = %v; want errFenced", err)
	}
}
