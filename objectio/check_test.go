package objectio_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/objectio"
)

// ignoresIfAbsent is a store that drops the if-absent condition, as an S3
// server that does not implement If-None-Match would: every Put overwrites.
type ignoresIfAbsent struct{ objectio.Store }

func (s ignoresIfAbsent) Put(ctx context.Context, key string, data []byte, _ objectio.PutOptions) error {
	return s.Store.Put(ctx, key, data, objectio.PutOptions{})
}

// overwritesThenReportsExists says "exists" to a second if-absent Put but
// replaces the object anyway.
type overwritesThenReportsExists struct{ objectio.Store }

func (s overwritesThenReportsExists) Put(ctx context.Context, key string, data []byte, opt objectio.PutOptions) error {
	err := s.Store.Put(ctx, key, data, opt)
	if errors.Is(err, objectio.ErrExists) {
		_ = s.Store.Put(ctx, key, data, objectio.PutOptions{})
	}
	return err
}

// failsPuts fails every Put with err.
type failsPuts struct {
	objectio.Store
	err error
}

func (s failsPuts) Put(context.Context, string, []byte, objectio.PutOptions) error { return s.err }

func wantNoProbeLeft(t *testing.T, s objectio.Store) {
	t.Helper()
	left, err := objectio.ListAll(context.Background(), s, "")
	if err != nil || len(left) != 0 {
		t.Fatalf("after CheckConditionalCreate the store holds %v (err %v), want nothing: the probe must be deleted", left, err)
	}
}

func TestCheckConditionalCreatePassesOnMemAndDir(t *testing.T) {
	for name, s := range map[string]objectio.Store{"mem": objectio.NewMem(), "dir": newDir(t, t.TempDir())} {
		if err := objectio.CheckConditionalCreate(context.Background(), s); err != nil {
			t.Errorf("CheckConditionalCreate(%s) = %v, want nil", name, err)
		}
		wantNoProbeLeft(t, s)
	}
}

func TestCheckConditionalCreateFailsWhenTheStoreIgnoresIfAbsent(t *testing.T) {
	mem := objectio.NewMem()
	err := objectio.CheckConditionalCreate(context.Background(), ignoresIfAbsent{mem})
	if !errors.Is(err, objectio.ErrConditionalCreateIgnored) {
		t.Fatalf("CheckConditionalCreate on a store ignoring IfAbsent = %v, want ErrConditionalCreateIgnored", err)
	}
	for _, want := range []string{"If-None-Match", "two sequencers could both extend the metadata log"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error = %q, want it to say %q", err, want)
		}
	}
	wantNoProbeLeft(t, mem)
}

func TestCheckConditionalCreateFailsWhenExistsStillOverwrites(t *testing.T) {
	mem := objectio.NewMem()
	err := objectio.CheckConditionalCreate(context.Background(), overwritesThenReportsExists{mem})
	if !errors.Is(err, objectio.ErrConditionalCreateIgnored) || !strings.Contains(err.Error(), "replaced the object") {
		t.Fatalf("CheckConditionalCreate on a store that overwrites despite ErrExists = %v, want ErrConditionalCreateIgnored saying it replaced the object", err)
	}
	wantNoProbeLeft(t, mem)
}

func TestCheckConditionalCreateSurfacesConfigurationErrors(t *testing.T) {
	for _, sentinel := range []error{objectio.ErrBucketMissing, objectio.ErrCredentials} {
		cause := fmt.Errorf("%w: details from the backend", sentinel)
		err := objectio.CheckConditionalCreate(context.Background(), failsPuts{objectio.NewMem(), cause})
		if !errors.Is(err, sentinel) {
			t.Errorf("CheckConditionalCreate when Put fails with %v = %v, want it to wrap that error", cause, err)
		}
		if errors.Is(err, objectio.ErrConditionalCreateIgnored) {
			t.Errorf("CheckConditionalCreate = %v, which blames If-None-Match for a configuration error", err)
		}
	}
}
