#!/usr/bin/env bash
# Writes the kubectl-summa archives that plugins/krew/summa.yaml points at:
# one dist/kubectl-summa_<os>_<arch>.tar.gz per platform, holding the
# plugin binary and the repository's LICENSE, and prints each sha256.
# PLATFORMS (space-separated os/arch) and OUT (the directory) override the
# defaults; BIN packs that file as the binary instead of building one
# (cmd/kubectl-summa's archive test does, with one platform). Run by
# `make plugin-archives`.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64 darwin/arm64}
OUT=${OUT:-dist}
mkdir -p "$OUT"
for p in $PLATFORMS; do
	os=${p%/*}
	arch=${p#*/}
	d=$(mktemp -d)
	if [ -n "${BIN:-}" ]; then
		cp "$BIN" "$d/kubectl-summa"
	else
		CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$GO" build -trimpath -o "$d/kubectl-summa" ./cmd/kubectl-summa
	fi
	cp LICENSE "$d/LICENSE"
	tar -C "$d" -czf "$OUT/kubectl-summa_${os}_${arch}.tar.gz" kubectl-summa LICENSE
	rm -rf "$d"
	sha256sum "$OUT/kubectl-summa_${os}_${arch}.tar.gz"
done
