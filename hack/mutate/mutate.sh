#!/usr/bin/env bash
# Mutation testing of the crash-critical code (make mutate).
#
# Runs gremlins (GREMLINS) on each unit of MUTATE_SCOPE, one after the other,
# with the packages' tests in -short mode (never from the test cache) and
# a per-mutant timeout of MUTATE_TIMEOUT_COEFFICIENT times the package's
# coverage run, then prints
# the survivors and `mutation score crash-critical: S` with
# S = killed / (killed + survived) over every unit run; the mutants listed in
# hack/mutate/equivalent.txt are left out, and those of
# hack/mutate/killed-by-hand.txt (which gremlins cannot run: NOT COVERED)
# count as killed. Any other mutant no test executes (NOT COVERED) counts
# as survived; one whose tests time out counts as killed;
# one that does not compile (NOT VIABLE) is not a mutant.
#
# Units (a package and the files of it that are mutated):
#   lifecycle      engine/lifecycle, every file
#   metadata       engine/metadata, every file
#   index-commit   engine/index: the commit path (commit, generation, publish,
#                  held publication, the commit point)
#   index-rewrite  engine/index: the rewrite path (rewrite, merge, compact,
#                  reorder)
#   registry       engine/registry: deletion and drain (delete, trash, drain)
set -euo pipefail

GO=${GO:-go}
GREMLINS=${GREMLINS:?GREMLINS: the gremlins binary}
SCOPE=${MUTATE_SCOPE:-lifecycle metadata index-commit index-rewrite registry}
WORKERS=${MUTATE_WORKERS:-2}
COEFF=${MUTATE_TIMEOUT_COEFFICIENT:-10}
OUT=${MUTATE_OUT:-bin/mutate}

unit_pkg() {
	case $1 in
	lifecycle) echo engine/lifecycle ;;
	metadata) echo engine/metadata ;;
	index-commit | index-rewrite) echo engine/index ;;
	registry) echo engine/registry ;;
	*) echo "mutate: unknown unit $1 (lifecycle metadata index-commit index-rewrite registry)" >&2; return 1 ;;
	esac
}

# unit_files prints the files a unit mutates, or nothing for the whole
# package.
unit_files() {
	case $1 in
	index-commit) echo commit.go generation.go publish.go held.go commitpoint.go ;;
	index-rewrite) echo rewrite.go merge.go compact.go reorder.go ;;
	registry) echo delete.go trash.go drain.go ;;
	esac
}

mkdir -p "$OUT"
start=$(date +%s)
results=()
for unit in $SCOPE; do
	pkg=$(unit_pkg "$unit")
	keep=$(unit_files "$unit")
	excludes=()
	if [ -n "$keep" ]; then
		for f in "$pkg"/*.go; do
			base=$(basename "$f")
			case $base in *_test.go) continue ;; esac
			case " $keep " in *" $base "*) ;; *) excludes+=(--exclude-files "(^|/)${base//./\\.}\$") ;; esac
		done
	fi
	echo "mutate: $unit ($pkg${keep:+: $keep})"
	# -count=1: the coverage run that sets every mutant's timeout must
	# run the tests; a cached result (a second unit of the same package)
	# takes a second, and every mutant would then time out (count killed).
	GOFLAGS="${GOFLAGS:+$GOFLAGS }-short -count=1" "$GREMLINS" unleash --silent \
		--workers "$WORKERS" --timeout-coefficient "$COEFF" \
		--output "$OUT/$unit.json" "${excludes[@]}" "./$pkg"
	results+=("$unit=$pkg=$OUT/$unit.json")
done
secs=$(( $(date +%s) - start ))
"$GO" run ./hack/mutate/score -equivalent hack/mutate/equivalent.txt -by-hand hack/mutate/killed-by-hand.txt -seconds "$secs" "${results[@]}"
