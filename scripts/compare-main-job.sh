#!/usr/bin/env bash
# Behaviour unchanged after a refactor? Runs the README's main job at two revisions
# with the same seed and limits and compares the exported books byte for byte.
#
#   scripts/compare-main-job.sh [BEFORE_REV] [AFTER_REV]     (default: 606cecf HEAD)
#
# The README's main job is
#   coordinator --db book.db --local-workers 2 --think-limit 1000 --export book.db2016
# Its two concurrent workers make the order of results, hence the book, depend on
# timing. The deterministic form run here is
#   coordinator --db FRESH --listen 127.0.0.1:PORT --think-limit $THINK_LIMIT --export OUT.db2016
#   coordinator __worker --coordinator http://127.0.0.1:PORT --slots 1 --prefetch 0
# one worker with one engine and no prefetched job (so positions are thought one
# after the other in the order the selector picks them) and the built-in engine's node budget (its default,
# 300 000 nodes per position, or --nodes $NODES when NODES is set; never a time
# limit), which makes every evaluation the same on every run. Selection has no
# random seed: the book is a function of the revision, the limits and the (empty)
# starting store.  Running `compare-main-job.sh HEAD HEAD` checks that determinism.
#
# Each revision gets a git worktree and its own CARGO_TARGET_DIR under the scratch
# directory ($STERA_COMPARE_DIR, default ${TMPDIR:-/tmp}/stera-compare, never
# inside the repository), kept between runs so a second comparison only rebuilds
# what changed. A new target directory is seeded with a copy of the repository's
# target/release when it exists (dependencies are then not rebuilt; set
# STERA_COMPARE_SEED=0 to start empty). The coordinator starts its local workers
# from its own executable (`current_exe() __worker ...`), so each run uses its own
# revision's worker code.
#
# Environment: THINK_LIMIT (default 1000, the README's; about 90 s a run on 2
# cores), NODES (default: unset, the engine's default budget), CARGO_BUILD_JOBS
# (default 1), NICE (default 10), STERA_COMPARE_DIR, STERA_COMPARE_SEED.
#
# Exit status: 0 the exports are identical, 1 they differ, 2 a build or run failed.

set -euo pipefail
# shellcheck source=scripts/python-env.sh
. "$(dirname "$0")/python-env.sh"

before_arg=${1:-606cecf}
after_arg=${2:-HEAD}
think_limit=${THINK_LIMIT:-1000}
nodes=${NODES:-}
nice_level=${NICE:-10}
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1}

die() {
    echo "compare-main-job: $*" >&2
    exit 2
}

repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel) || die "not inside a git repository"
scratch=${STERA_COMPARE_DIR:-${TMPDIR:-/tmp}/stera-compare}
mkdir -p "$scratch"
scratch=$(cd "$scratch" && pwd -P)
case "$scratch/" in
"$(cd "$repo" && pwd -P)"/*) die "scratch directory $scratch is inside the repository; set STERA_COMPARE_DIR" ;;
esac

# One comparison at a time per scratch directory (worktrees and run dirs are shared).
if command -v flock >/dev/null; then
    exec 9>"$scratch/.lock"
    flock -n 9 || die "another comparison is running in $scratch"
fi

resolve() {
    git -C "$repo" rev-parse --verify --quiet "$1^{commit}" || die "unknown revision: $1"
}
before=$(resolve "$before_arg")
after=$(resolve "$after_arg")

# prepare SHA: worktree at SHA and its target directory.
prepare() {
    local sha=$1 wt="$scratch/wt-$1" target="$scratch/target-$1"
    if [[ -d $wt ]]; then
        [[ $(git -C "$wt" rev-parse HEAD) == "$sha" ]] || die "$wt is not at $sha; remove it (git worktree remove --force $wt)"
    else
        # --force: also when a removed scratch directory left the worktree registered.
        git -C "$repo" worktree add --force --detach --quiet "$wt" "$sha" || die "cannot create worktree $wt"
    fi
    if [[ ! -d $target && ${STERA_COMPARE_SEED:-1} != 0 && -d $repo/target/release ]]; then
        mkdir -p "$target"
        cp -a --reflink=auto "$repo/target/release" "$target/release" || rm -rf "$target"
    fi
}

# build SHA: release coordinator and worker of SHA.
build() {
    local sha=$1 start
    start=$(date +%s)
    echo "build ${sha:0:12}: cargo build --release -p coordinator -p worker (log $scratch/build-$sha.log)"
    if ! (cd "$scratch/wt-$sha" && CARGO_TARGET_DIR="$scratch/target-$sha" \
        nice -n "$nice_level" cargo build --release -p coordinator -p worker) >"$scratch/build-$sha.log" 2>&1; then
        tail -n 30 "$scratch/build-$sha.log" >&2
        die "build of $sha failed"
    fi
    echo "build ${sha:0:12}: done in $(($(date +%s) - start)) s"
}

# run LABEL SHA: the deterministic main job in a fresh store; the export is
# $scratch/run-LABEL/book.db2016.
run() {
    local label=$1 sha=$2 dir="$scratch/run-$1" start
    rm -rf "$dir"
    mkdir -p "$dir"
    local exe="$scratch/target-$sha/release/coordinator" port
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    local cmd=("$exe" --db "$dir/book.db" --listen "127.0.0.1:$port"
        --think-limit "$think_limit" --export "$dir/book.db2016")
    # A coordinator makes a new store only when told to (--create); one built
    # before the flag made it unasked.
    if "$exe" --help | grep -q -- '--create'; then
        cmd+=(--create)
    fi
    if [[ -n $nodes ]]; then
        cmd+=(--nodes "$nodes")
    fi
    # One worker process with one engine and no prefetched job: one position in
    # flight at a time. (A local worker prefetches one job beyond its engine: two
    # in flight, and which results a selection sees then depends on timing.)
    local worker=("$exe" __worker --coordinator "http://127.0.0.1:$port" --slots 1 --prefetch 0
        --worker-id compare --max-backoff-secs 1)
    echo "run $label (${sha:0:12}): ${cmd[*]}"
    echo "  worker: ${worker[*]}"
    start=$(date +%s)
    nice -n "$nice_level" "${cmd[@]}" </dev/null >"$dir/coordinator.log" 2>&1 &
    local coordinator_pid=$!
    nice -n "$nice_level" "${worker[@]}" </dev/null >"$dir/worker.log" 2>&1 &
    local worker_pid=$!
    local status=0
    wait "$coordinator_pid" || status=$?
    # A worker waits for the next coordinator after a drain: this run is over.
    kill "$worker_pid" 2>/dev/null || true
    wait "$worker_pid" 2>/dev/null || true
    if [[ $status -ne 0 ]]; then
        tail -n 30 "$dir/coordinator.log" >&2
        die "the main job of $sha failed (log $dir/coordinator.log)"
    fi
    [[ -f $dir/book.db2016 ]] || die "the main job of $sha wrote no export"
    echo "run $label: done in $(($(date +%s) - start)) s (log $dir/coordinator.log)"
}

describe() {
    local label=$1 sha=$2 file="$scratch/run-$1/book.db2016"
    printf '%-6s %s  %s\n' "$label" "$sha" "$(git -C "$repo" log -1 --format=%s "$sha" | cut -c1-70)"
    printf '       entries (positions) %s, move lines %s, size %s bytes\n' \
        "$(grep -c '^sfen ' "$file" || true)" "$(grep -vc -e '^sfen ' -e '^#' "$file" || true)" \
        "$(stat -c %s "$file")"
    printf '       sha256 %s\n' "$(sha256sum "$file" | cut -d' ' -f1)"
}

echo "scratch: $scratch"
echo "before:  $before_arg = $before"
echo "after:   $after_arg = $after"
echo "limits:  --think-limit $think_limit, ${nodes:+--nodes $nodes}${nodes:-built-in default node budget}, 1 worker x 1 slot"
for sha in "$before" "$after"; do
    prepare "$sha"
done
build "$before"
[[ $after == "$before" ]] || build "$after"
run before "$before"
run after "$after"

echo
describe before "$before"
describe after "$after"
b="$scratch/run-before/book.db2016"
a="$scratch/run-after/book.db2016"
if cmp -s "$b" "$a"; then
    echo "IDENTICAL"
    exit 0
fi
echo "DIFFERENT: $(cmp "$b" "$a" 2>&1 | head -n 1)"
echo "first differing lines (diff before after):"
diff "$b" "$a" | head -n 12 | cut -c1-200 || true
exit 1
