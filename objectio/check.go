package objectio

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
)

// ErrConditionalCreateIgnored means the store accepted a second if-absent
// Put of an existing key: it ignores "If-None-Match: *". Such a store
// cannot fence the metadata log.
var ErrConditionalCreateIgnored = errors.New("objectio: the store ignores if-absent puts (If-None-Match: *)")

// probePrefix is where CheckConditionalCreate creates its probe objects.
const probePrefix = "meta/probe/"

// CheckConditionalCreate is the startup check of a store: it creates a probe
// object with an if-absent Put, then tries again on the same key. The first
// must succeed and the second must fail with ErrExists, leaving the first
// content in place; otherwise two sequencers could both extend the metadata
// log, and the store must not be used. The probe is deleted afterwards.
//
// A missing bucket or rejected credentials come back wrapping
// ErrBucketMissing or ErrCredentials, so the caller can tell the operator
// what to fix.
func CheckConditionalCreate(ctx context.Context, s Store) (err error) {
	key, first, second := probeKeyAndContents()
	if err := s.Put(ctx, key, first, PutOptions{IfAbsent: true}); err != nil {
		return checkFailed("creating probe object", key, err)
	}
	defer func() {
		if delErr := s.Delete(ctx, key); delErr != nil && err == nil {
			err = checkFailed("deleting probe object", key, delErr)
		}
	}()
	switch err := s.Put(ctx, key, second, PutOptions{IfAbsent: true}); {
	case err == nil:
		return fmt.Errorf("%w: a second if-absent put of %q succeeded where it must fail; "+
			"two sequencers could both extend the metadata log, so this store cannot be used "+
			"(S3 and MinIO honour If-None-Match on PUT; check the server and its version)",
			ErrConditionalCreateIgnored, key)
	case !errors.Is(err, ErrExists):
		return checkFailed("second if-absent put of probe object", key, err)
	}
	got, err := s.Get(ctx, key, 0, -1)
	if err != nil {
		return checkFailed("reading probe object", key, err)
	}
	if !bytes.Equal(got, first) {
		return fmt.Errorf("%w: a second if-absent put of %q reported that the key exists but replaced the object anyway; "+
			"two sequencers could both extend the metadata log, so this store cannot be used",
			ErrConditionalCreateIgnored, key)
	}
	return nil
}

// probeKeyAndContents returns a fresh probe key and two different contents.
// The key is random so that concurrent checks (several agents starting at
// once) never race on one probe.
func probeKeyAndContents() (key string, first, second []byte) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("objectio: crypto/rand failed: %v", err)) // never fails on supported platforms
	}
	id := hex.EncodeToString(b[:])
	return probePrefix + id, []byte("sluice conditional-create probe " + id + " first"),
		[]byte("sluice conditional-create probe " + id + " second")
}

// checkFailed describes a failed step of the startup check. The cause
// stays wrapped, so ErrBucketMissing and ErrCredentials (whose messages say
// what to fix) are still found with errors.Is.
func checkFailed(step, key string, err error) error {
	return fmt.Errorf("objectio: startup check: %s %q: %w", step, key, err)
}
