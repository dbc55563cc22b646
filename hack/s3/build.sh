#!/usr/bin/env bash
# Builds the S3 server the backup tests run against (SeaweedFS's `weed`)
# from the Go module proxy into bin/s3/, only when it is missing.
#
# The module is large; only the `weed` command is built. Its pseudo-version
# is pinned below (the proxy serves this one). The tests find the binary at
# bin/s3/weed (or $SUMMA_S3_WEED) and skip with a clear message when it is
# absent, unless SUMMA_REQUIRE_S3=1.
#
# It is idempotent: when bin/s3/weed exists and bin/s3/VERSION matches
# WEED_VERSION, it does nothing. A cold build (about 1,740 packages, a
# 230 MB binary) took 64 minutes of wall time on a shared 2-core machine
# under a load of 20+ (12m17s user + 3m24s sys of CPU, module downloads
# included): about 8 minutes on 2 idle cores. With a warm Go build cache
# it takes seconds.
#
# Environment:
#   WEED_VERSION  module version of github.com/seaweedfs/seaweedfs
#   S3_DIR        output directory (default <repo>/bin/s3)
#   GO            go command (default go)
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
WEED_VERSION="${WEED_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}"
S3_DIR="${S3_DIR:-$root/bin/s3}"
GO="${GO:-go}"

if [ -x "$S3_DIR/weed" ] && [ "$(cat "$S3_DIR/VERSION" 2>/dev/null)" = "$WEED_VERSION" ]; then
  echo "s3: $S3_DIR/weed $WEED_VERSION already built" >&2
  exit 0
fi
mkdir -p "$S3_DIR"
start=$(date +%s)
# `go install pkg@version` refuses this module (its go.mod has a replace
# directive), so build inside the module's own tree as the module cache
# holds it: its go.mod, go.sum and replace apply as upstream builds it.
# Nothing is written there (the build goes to GOCACHE and -o). CGO off keeps
# it a static binary.
dir="$("$GO" mod download -json "github.com/seaweedfs/seaweedfs@$WEED_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[ -n "$dir" ] && [ -d "$dir/weed" ] || { echo "s3: cannot find the seaweedfs module source (got '$dir')" >&2; exit 1; }
(cd "$dir" && CGO_ENABLED=0 GOFLAGS=-mod=readonly "$GO" build -trimpath -o "$S3_DIR/weed" ./weed)
echo "$WEED_VERSION" >"$S3_DIR/VERSION"
"$S3_DIR/weed" version >&2 || true
printf 's3: built weed %s in %ss into %s\n' "$WEED_VERSION" "$(($(date +%s) - start))" "$S3_DIR" >&2
