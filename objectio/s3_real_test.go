package objectio_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/objectio/s3server"
)

// These tests run the S3 backend against real servers, MinIO and
// versitygw, each started as a separate process by s3server. They are
// skipped when a binary is missing, unless CI is set; install both with
// scripts/install-s3-servers.sh.

func serverTarget(srv *s3server.Server) s3Target {
	return s3Target{base: srv.Config(""), checksCredentials: true, url: srv.URL}
}

func TestS3OnMinIO(t *testing.T) {
	runS3Suite(t, serverTarget(s3server.StartMinIOServer(t)))
}

func TestS3OnVersityGW(t *testing.T) {
	runS3Suite(t, serverTarget(s3server.StartVersityGWServer(t)))
}

// TestS3StoreSurvivesMinIORestart kills MinIO mid-run: calls fail with an
// error, within the request timeout, while it is down, and once it is back
// the store works again and has lost nothing.
func TestS3StoreSurvivesMinIORestart(t *testing.T) {
	srv := s3server.StartMinIOServer(t)
	cfg := srv.Config(s3server.RandomPrefix())
	cfg.RequestTimeout = 5 * time.Second
	cfg.MaxAttempts = 2
	s := newS3WithConfig(t, cfg)
	ctx := context.Background()
	if err := s.Put(ctx, "meta/log/1", []byte("before"), objectio.PutOptions{IfAbsent: true}); err != nil {
		t.Fatalf("Put before the restart = %v", err)
	}

	srv.Stop()
	start := time.Now()
	err := s.Put(ctx, "meta/log/2", []byte("while down"), objectio.PutOptions{IfAbsent: true})
	if err == nil || errors.Is(err, objectio.ErrExists) {
		t.Fatalf("Put while MinIO is down = %v, want a failure that is not ErrExists", err)
	}
	if took := time.Since(start); took > cfg.RequestTimeout+time.Second {
		t.Errorf("Put while MinIO is down took %v, want at most the request timeout %v", took, cfg.RequestTimeout)
	}
	if _, err := s.Get(ctx, "meta/log/1", 0, -1); err == nil || errors.Is(err, objectio.ErrNotFound) {
		t.Fatalf("Get while MinIO is down = %v, want a failure that is not ErrNotFound", err)
	}

	srv.Start()
	got, err := s.Get(ctx, "meta/log/1", 0, -1)
	if err != nil || string(got) != "before" {
		t.Fatalf("Get after the restart = %q, %v; want before", got, err)
	}
	if err := s.Put(ctx, "meta/log/1", []byte("again"), objectio.PutOptions{IfAbsent: true}); !errors.Is(err, objectio.ErrExists) {
		t.Fatalf("if-absent Put of an existing key after the restart = %v, want ErrExists", err)
	}
	if err := s.Put(ctx, "meta/log/2", []byte("after"), objectio.PutOptions{IfAbsent: true}); err != nil {
		t.Fatalf("if-absent Put of a new key after the restart = %v, want nil", err)
	}
}

// TestS3ServerURLsOpen checks the URL form the helpers return.
func TestS3ServerURLsOpen(t *testing.T) {
	for name, start := range map[string]func(testing.TB) string{
		"MinIO":     s3server.StartMinIO,
		"VersityGW": s3server.StartVersityGW,
	} {
		t.Run(name, func(t *testing.T) {
			url := start(t)
			s, err := objectio.Open(url)
			if err != nil {
				t.Fatalf("Open(%s) = %v", objectio.RedactStoreURL(url), err)
			}
			if err := objectio.CheckConditionalCreate(context.Background(), s); err != nil {
				t.Fatalf("CheckConditionalCreate on %s = %v, want nil", name, err)
			}
		})
	}
}
