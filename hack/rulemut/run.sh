#!/bin/sh
# Rule mutations: realistic mutations of the production code, one or more
# per rule of docs/engine.md (hack/rulemut/mutations_<family>.go), each applied in a scratch
# copy of the tree; the rule's tests must fail on it. Prints
# `RULE killed|SURVIVED|BROKEN|PANIC|SETUP|NOASSERT description` per
# entry, with the test and the assertion (file:line) that failed, and
# `rule mutations killed: K/N`; only a kill by an assertion counts.
# Arguments go to the runner (-only L03,C07; -only C04:2 for C04's second
# entry alone).
# Runs at low priority: it is a long, CPU-bound job.
set -e
cd "$(dirname "$0")/../.."
GO=${GO:-go}
exec nice -n 10 "$GO" run ./hack/rulemut "$@"
