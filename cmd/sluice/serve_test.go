package main

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/objectio"
)

func TestWithS3CredentialsAddsThemToTheURL(t *testing.T) {
	got, err := withS3Credentials("s3://b/p?endpoint=http://127.0.0.1:9000", "AK", "SK")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(got)
	if q := u.Query(); q.Get("access_key") != "AK" || q.Get("secret_key") != "SK" || q.Get("endpoint") != "http://127.0.0.1:9000" {
		t.Fatalf("got %s", got)
	}
	if _, err := withS3Credentials("dir://./x", "AK", ""); err == nil {
		t.Fatal("credentials for a dir store were accepted")
	}
}

func TestStoreErrorsSayWhatToFix(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{objectio.ErrBucketMissing, "does not exist"},
		{objectio.ErrCredentials, "refused our credentials"},
		{objectio.ErrConditionalCreateIgnored, "ignores If-None-Match"},
	} {
		got := explainStoreError(fmt.Errorf("store check: %w", tc.err), "s3://b/p?secret_key=hush")
		if !strings.Contains(got.Error(), tc.want) || !errors.Is(got, tc.err) || strings.Contains(got.Error(), "hush") {
			t.Errorf("%v explained as %q; want it to contain %q, wrap the error and hide the secret", tc.err, got, tc.want)
		}
	}
}
