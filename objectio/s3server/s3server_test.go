package s3server

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestLaunchRunsMinIOWithoutATest drives the non-test entry point the way
// the chaos program does: Launch, use, Stop (a crash), Start, use, Stop.
func TestLaunchRunsMinIOWithoutATest(t *testing.T) {
	if _, err := lookBinary(minio); err != nil && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	s, err := Launch("minio", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if s.t != nil {
		t.Fatal("a launched server holds a testing.TB; its Start would call Fatal outside a test")
	}
	listBucket := func() error {
		_, err := s.client().HeadBucket(context.Background(), &s3.HeadBucketInput{Bucket: &s.Bucket})
		return err
	}
	if err := listBucket(); err != nil {
		t.Fatalf("bucket %q after Launch: %v", s.Bucket, err)
	}
	s.Stop()
	if err := listBucket(); err == nil {
		t.Fatal("the bucket still answers after Stop; the process was not killed")
	}
	if err := s.Start(); err != nil {
		t.Fatalf("Start after Stop: %v", err)
	}
	if err := listBucket(); err != nil {
		t.Fatalf("bucket %q after a restart on the same data: %v", s.Bucket, err)
	}
}

func TestLaunchRejectsAnUnknownKind(t *testing.T) {
	if _, err := Launch("ceph", t.TempDir()); err == nil {
		t.Error("Launch(\"ceph\") succeeded, want an error naming the known kinds")
	}
}

func TestLookBinaryReportsAMissingServerAsNotInstalled(t *testing.T) {
	_, err := lookBinary(kind{name: "sluice-no-such-s3-server"})
	if !errors.Is(err, ErrNotInstalled) {
		t.Errorf("lookBinary of a missing server: %v, want ErrNotInstalled", err)
	}
}
