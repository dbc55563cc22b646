#!/usr/bin/env bash
# Fails when git tracks a build output: any ELF file, or any file larger than
# 1 MiB that is not listed in hack/tracked-large-files.txt (one path a line,
# # starts a comment). Run by `make test` (target check-tracked-files).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
limit=$((1024 * 1024))
allow=hack/tracked-large-files.txt
bad=0
while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue # deleted in the work tree, not yet committed
	magic=$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')
	if [ "$magic" = "7f454c46" ]; then
		echo "tracked ELF binary: $f (git rm --cached it; build into bin/)"
		bad=1
		continue
	fi
	size=$(stat -c %s "$f")
	if [ "$size" -gt "$limit" ] && ! grep -qxF "$f" <(grep -v '^#' "$allow" 2>/dev/null || true); then
		echo "tracked file over 1 MiB not in $allow: $f ($size bytes)"
		bad=1
	fi
done < <(git ls-files -z)
if [ "$bad" -ne 0 ]; then
	exit 1
fi
echo "tracked files: no ELF, nothing over 1 MiB outside $allow"
