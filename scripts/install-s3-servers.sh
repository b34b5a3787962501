#!/usr/bin/env bash
# Installs the S3 servers the objectio tests run against, MinIO and
# versitygw, into $(go env GOBIN) or $(go env GOPATH)/bin, each only if it is
# not there yet: a CI machine that keeps GOPATH between runs reuses them.
# Set FORCE=1 to reinstall. The tests (objectio/s3server) look on PATH and
# in that directory.
#
# MinIO is AGPL: it is only ever run as a separate process by the tests,
# never imported.
set -euo pipefail

MINIO_PKG=github.com/minio/minio@latest
VERSITYGW_PKG=github.com/versity/versitygw/cmd/versitygw@v1.8.0

bindir="$(go env GOBIN)"
if [ -z "$bindir" ]; then
  bindir="$(go env GOPATH | cut -d: -f1)/bin"
fi

# install NAME PACKAGE: go install PACKAGE unless bindir already has NAME.
install() {
  local name="$1" pkg="$2"
  if [ -x "$bindir/$name" ] && [ "${FORCE:-}" != 1 ]; then
    echo "$name: already installed at $bindir/$name"
    return
  fi
  echo "$name: installing $pkg (MinIO takes a few minutes to build)"
  # The repository's go.mod must not affect the tools' builds.
  (cd "$(mktemp -d)" && GOFLAGS= GOWORK=off go install "$pkg")
}

install minio "$MINIO_PKG"
install versitygw "$VERSITYGW_PKG"

echo "--- versions"
go version -m "$bindir/minio" | awk '$1 == "mod" { print "minio " $3 }'
go version -m "$bindir/versitygw" | awk '$1 == "mod" { print "versitygw " $3 }'
