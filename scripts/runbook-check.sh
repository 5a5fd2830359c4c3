#!/usr/bin/env bash
# Runs the commands of the operator's runbook (deploy/README.md) and of README.md
# that need one machine and no root, Docker, Kubernetes or systemd, in a temporary
# directory against the release binaries, with small budgets; and checks what the
# text says of each: exit status, the log lines and output it quotes, the files it
# makes, the metrics and status keys it names. One PASS/FAIL line per command, a
# summary, and a non-zero exit status when any failed.
#
# BIN=DIR takes the coordinator, worker and book-tools from DIR; without it they
# are built (cargo build --release). Needs curl, python3, promtool, openssl and
# the engines gpsusi and fairy-stockfish (/usr/games).
set -uo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
# shellcheck source=scripts/python-env.sh
. scripts/python-env.sh
export PATH="$PATH:/usr/games"

if [ -z "${BIN:-}" ]; then
    cargo build --release --quiet -p coordinator -p worker -p book-tools || exit 1
    BIN="${CARGO_TARGET_DIR:-target}/release"
fi
BIN="$(cd "$BIN" && pwd)"
COORD="$BIN/coordinator"
WORKER="$BIN/worker"
BT="$BIN/book-tools"
for b in "$COORD" "$WORKER" "$BT"; do
    [ -x "$b" ] || { echo "runbook-check: $b is missing" >&2; exit 1; }
done

tmp="$(mktemp -d)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || exit 1
mkdir logs

# --- Reporting ------------------------------------------------------------------
# begin NAME ... end: one command of the text and what is checked of it; the
# first failed expectation names the reason.
passed=0
failed=0
failures=()
name=""
why=""
n=0
begin() {
    name="$1"
    why=""
}
miss() { [ -n "$why" ] || why="$1"; }
end() {
    if [ -z "$why" ]; then
        echo "PASS $name"
        passed=$((passed + 1))
    else
        echo "FAIL $name: $why"
        failed=$((failed + 1))
        failures+=("$name")
    fi
}
# run CMD...: runs it in the foreground; $out, $err are its stdout and stderr
# files, $rc its exit status.
run() {
    n=$((n + 1))
    out="logs/$n.out"
    err="logs/$n.err"
    "$@" >"$out" 2>"$err" </dev/null
    rc=$?
}
want_rc() { [ "$rc" = "$1" ] || miss "exit status $rc, expected $1 ($(tail -c 300 "$err" | tr '\n' ' '))"; }
want_ok() { [ "$rc" = 0 ] || miss "exit status $rc ($(tail -c 300 "$err" | tr '\n' ' '))"; }
want_fail() { [ "$rc" != 0 ] || miss "exit status 0, expected a failure"; }
# want_text PATTERN [FILE...]: an extended regex in the files (default: $out and $err).
want_text() {
    local pattern="$1"
    shift
    [ $# -gt 0 ] || set -- "$out" "$err"
    grep -qE -- "$pattern" "$@" || miss "no \`$pattern\` in $*"
}
no_text() {
    local pattern="$1"
    shift
    [ $# -gt 0 ] || set -- "$out" "$err"
    ! grep -qE -- "$pattern" "$@" || miss "\`$pattern\` in $*"
}
want_file() { [ -e "$1" ] || miss "$1 was not made"; }
want() {
    local desc="$1"
    shift
    "$@" >/dev/null 2>&1 || miss "$desc"
}

# --- Processes ------------------------------------------------------------------
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# start LOG CMD...: in the background; $! is in $bg.
start() {
    local log="$1"
    shift
    "$@" >"$log" 2>&1 </dev/null &
    bg=$!
    pids+=("$bg")
}
# wait_for SECS PATTERN FILE: until the file holds the pattern.
wait_for() {
    local deadline=$((SECONDS + $1))
    while [ $SECONDS -lt $deadline ]; do
        grep -qE -- "$2" "$3" 2>/dev/null && return 0
        sleep 0.2
    done
    return 1
}
# await PID [SECS]: wait for the exit; $rc is its status (124: still running, then killed).
await() {
    local pid="$1" secs="${2:-60}"
    local deadline=$((SECONDS + secs))
    while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid"
        wait "$pid" 2>/dev/null
        rc=124
    else
        wait "$pid"
        rc=$?
    fi
}
# stop PID [SECS]: SIGTERM, then await.
stop() {
    kill -TERM "$1" 2>/dev/null
    await "$@"
}
metrics() { curl -sf "http://127.0.0.1:$1/metrics"; }

# Flags used by every coordinator here: small budgets so that each run takes seconds.
SMALL=(--nodes 2000)

# === deploy/README.md, "The token" ===============================================
begin "head -c 24 /dev/urandom | base64 > token && chmod 0600 token"
run sh -c 'head -c 24 /dev/urandom | base64 > token && chmod 0600 token'
want_ok
want "token is mode 0600" test "$(stat -c %a token)" = 600
want "token holds 32 base64 characters" test "$(tr -d '\n' <token | wc -c)" = 32
end

# === README.md, command 1: a book made locally ===================================
begin "coordinator --db book.db --create --local-workers 2 --think-limit 1000 --export book.db2016 (think-limit 200)"
run "$COORD" --db book.db --create --local-workers 2 --think-limit 200 "${SMALL[@]}" --export book.db2016
want_ok
want_file book.db2016
want_text 'book exported'
want_text 'coordinator stopped'
# "Run it again to grow the same book": the same command, its export replaced.
run "$COORD" --db book.db --create --local-workers 2 --think-limit 200 "${SMALL[@]}" --export book.db2016
want_ok
want_text 'book loaded nodes=[1-9]'
want_text 'book exported'
want "book.db2016 is a DB2016 text book" grep -q '^#YANEURAOU-DB2016 1.00' book.db2016
want "the store thought at least 200 positions" test "$(grep -o 'nodes=[0-9]*' "$err" | tail -1 | cut -d= -f2)" -ge 200
end
begin "README: run it again to grow the same book"
before="$(grep -o 'nodes=[0-9]*' "$err" | tail -1 | cut -d= -f2)"
run "$COORD" --db book.db --local-workers 2 --think-limit 50 "${SMALL[@]}" --export book.db2016
want_ok
after="$(grep -o 'nodes=[0-9]*' "$err" | tail -1 | cut -d= -f2)"
want "the book grew ($before -> $after)" test "$after" -ge $((before + 50))
end
begin "README: local workers with the worker's engine flags (Fairy-Stockfish for YaneuraOu, --depth 4, think-limit 5)"
run "$COORD" --db fs-local.db --create --local-workers 1 --think-limit 5 --depth 4 \
    --engine-cmd /usr/games/fairy-stockfish --engine-option UCI_Variant=shogi --export fs-local.db2016
want_ok
want_file fs-local.db2016
run "$BT" stats --db fs-local.db
want_ok
want_text 'Fairy-Stockfish'
end
begin "README: engine flags without --local-workers are refused"
run "$COORD" --db refused-engine.db --engine-cmd /usr/games/fairy-stockfish --nodes 1000
want_fail
want_text 'no --local-workers'
want "nothing was made" test ! -e refused-engine.db
end

# === README.md, "Roots" and "Book tools", on the stopped store ===================
begin "book-tools roots list --db book.db > roots.txt (the defaults: startpos and its 30 children)"
run "$BT" roots list --db book.db
want_ok
cp "$out" roots.txt
want "31 roots" test "$(grep -cvE '^(#|$)' roots.txt)" = 31
want "startpos first" test "$(grep -vE '^(#|$)' roots.txt | head -1)" = startpos
end

begin "book-tools roots set --create --db book.db roots.txt"
run "$BT" roots set --create --db book.db roots.txt
want_ok
end
begin "book-tools roots set --create --db book.db --leaves-per-turn 5 roots.txt"
run "$BT" roots set --create --db book.db --leaves-per-turn 5 roots.txt
want_ok
end
begin "book-tools roots set --create --db roots-only.db roots.txt (a new store, before the first start)"
printf 'startpos\nstartpos moves 7g7f\n' >two-roots.txt
run "$BT" roots set --create --db roots-only.db two-roots.txt
want_ok
run "$BT" roots list --db roots-only.db
want "roots list prints the roots set" diff -q <(grep -vE '^(#|$)' "$out") two-roots.txt
end

cat >game.csa <<'CSA'
V2.2
N+black
N-white
PI
+
+7776FU
-3334FU
+2726FU
-8384FU
%TORYO
CSA
begin "book-tools kifu add --create --db book.db games.csa"
run "$BT" kifu add --create --db kifu.db game.csa
want_ok
want_file kifu.db
end

begin "book-tools import --create --db book.db old.db2016"
run "$BT" import --create --db imported.db book.db2016
want_ok
end

begin "book-tools export --db book.db --out book.db2016 [--export-shrink] [--export-raw]"
run "$BT" export --db book.db --out plain.db2016
want_ok
run "$BT" export --db book.db --out shrunk.db2016 --export-shrink
want_ok
run "$BT" export --db book.db --out raw.db2016 --export-raw
want_ok
for f in plain shrunk raw; do want "$f.db2016 written" grep -q '^#YANEURAOU-DB2016' "$f.db2016"; done
want "--export-shrink writes a smaller book" test "$(stat -c %s shrunk.db2016)" -lt "$(stat -c %s plain.db2016)"
end

begin "book-tools export --db book.db --out book.ybb (binary by the extension; import reads .ybb too)"
run "$BT" export --db book.db --out book.ybb
want_ok
want "book.ybb is not a text book" sh -c '! grep -q "^#YANEURAOU" book.ybb'
run "$BT" import --create --db from-ybb.db book.ybb
want_ok
end

begin "README: an --export-format that contradicts the extension is refused before anything is done"
run "$BT" export --db book.db --out contradiction.ybb --export-format text
want_fail
want "no file written" test ! -e contradiction.ybb
run "$BT" export --db book.db --out contradiction.db --export-format ybb
want_fail
want "no file written" test ! -e contradiction.db
end

begin "book-tools next --db book.db 100 --think-file next.sfen"
run "$BT" next --db book.db 100 --think-file next.sfen
want_ok
want_file next.sfen
end

begin "book-tools backup --db book.db --out copy.db"
run "$BT" backup --db book.db --out copy.db
want_ok
want_file copy.db/STERA-WHOLE
end

begin "book-tools check --db book.db (whole)"
run "$BT" check --db copy.db
want_ok
want_text 'whole'
end

begin "book-tools check on a store whose db file was cut short: damaged, exit non-zero"
cp -a copy.db cut.db
truncate -s 4096 cut.db/db
run "$BT" check --db cut.db
want_fail
want_text 'damaged|missing'
run "$BT" stats --db cut.db
want_fail
want_text 'damaged'
want_text 'restore it from a backup'
end

begin "book-tools check on a copy without STERA-WHOLE: refused as damaged"
cp -a copy.db nowhole.db
rm nowhole.db/STERA-WHOLE
run "$BT" stats --db nowhole.db
want_fail
want_text 'damaged'
end

begin "book-tools migrate --db book.db --dry-run"
run "$BT" migrate --db copy.db --dry-run
want_ok
end
begin "book-tools migrate --db book.db --out book-merged.db"
run "$BT" migrate --db copy.db --out merged.db
want_ok
# A store grown by this release holds no twin pairs: only marked, in place.
want_text 'nothing to do'
want "no store written for a store without twin pairs" test ! -e merged.db
end

begin "book-tools stats --db book.db"
run "$BT" stats --db book.db
want_ok
want_text "$after"
end

begin "book-tools show --db book.db \"startpos moves 7g7f\""
run "$BT" show --db book.db "startpos moves 7g7f"
want_ok
end
begin "book-tools show --db book.db startpos"
run "$BT" show --db book.db startpos
want_ok
end

begin "book-tools unban --db book.db --all"
run "$BT" unban --db book.db --all
want_ok
want_text 'nothing is quarantined|lifted'
end

begin "book-tools evaluate startpos --engine usi --engine-cmd /usr/games/fairy-stockfish --engine-option UCI_Variant=shogi --depth 6"
run "$BT" evaluate startpos --engine usi --engine-cmd /usr/games/fairy-stockfish --engine-option UCI_Variant=shogi --depth 6
want_ok
want_text 'moves 30'
end

begin "book-tools perft startpos 5 (last line: nodes 19861490)"
run "$BT" perft startpos 5
want_ok
want "last line: nodes 19861490" sh -c "tail -1 $out | grep -q 'nodes 19861490'"
end

begin "book-tools synth --db synth.db --positions 1000000 (1000)"
run "$BT" synth --db synth.db --positions 1000
want_ok
end
begin "book-tools bench select --db synth.db --in-flight 1000"
run "$BT" bench select --db synth.db --in-flight 1000
want_ok
end

begin "README: a former spelling prints 'warning: --old is deprecated; use --new'"
run "$BT" next --db book.db 1 --temperature 50 --select softmax
want_text 'warning: --temperature is deprecated; use --select-temperature'
end

# === deploy/README.md: a coordinator as the systemd unit runs it, and a worker =====
# The unit's flags and coordinator.env's, with the state directory in ./state,
# loopback addresses, a small --nodes, and minutes of 1 for the periodic export
# and backup (360 and 60 as shipped) so that both happen within the check.
grpc="$(free_port)"
mport="$(free_port)"
wport="$(free_port)"
url="http://127.0.0.1:$grpc"
mkdir state
cp -a copy.db state/book.db
coord_log=logs/coordinator.log
coord_args=(--db state/book.db --create --token-file token --export state/book.db2016 --export-dir state
    --backup-dir state/backups --log-format json
    --listen "127.0.0.1:$grpc" --metrics "127.0.0.1:$mport" "${SMALL[@]}"
    --export-every-mins 1 --backup-every-mins 1 --status-every-secs 5)
coord_started=$SECONDS
begin "coordinator (systemd unit's flags: --db --token-file --export --export-dir --backup-dir --log-format json --listen --metrics --nodes --export-every-mins --backup-every-mins)"
start "$coord_log" "$COORD" "${coord_args[@]}"
coord=$bg
wait_for 60 '"listening"' "$coord_log" || miss "no \`listening\` line"
want "the backup directory is made at start" test -d state/backups
want_text '"level":"INFO"' "$coord_log"
want_text 'malloc arenas capped' "$coord_log"
end

begin "worker --coordinator URL --token-file token --slots 8 --metrics 0.0.0.0:9101 (--slots 1)"
worker_log=logs/worker.log
start "$worker_log" "$WORKER" --coordinator "$url" --token-file token --slots 1 --metrics "127.0.0.1:$wport" \
    --max-backoff-secs 2 --status-every-secs 5
worker=$bg
wait_for 60 'connected' "$worker_log" || miss "the worker logged no \`connected\`"
end

begin "a worker with a wrong token is refused: exit status 1"
echo wrong >wrong-token
run timeout 60 "$WORKER" --coordinator "$url" --token-file wrong-token --slots 1
want_rc 1
end

begin "curl http://COORDINATOR:9100/metrics (the metric names of the runbook)"
sleep 3
metrics "$mport" >metrics.txt || miss "no /metrics"
for m in stera_book_nodes stera_book_store_size_bytes stera_book_quarantined_positions stera_book_games \
    stera_coordinator_results_rejected_total stera_coordinator_store_writable \
    stera_coordinator_store_disk_free_bytes stera_coordinator_store_disk_size_bytes \
    stera_coordinator_last_export_success_timestamp_seconds stera_coordinator_export_interval_seconds \
    stera_coordinator_backup_last_success_timestamp_seconds stera_coordinator_backup_interval_seconds \
    stera_coordinator_start_time_seconds; do
    grep -q "^$m" metrics.txt || miss "$m not in /metrics"
done
want "export interval is --export-every-mins in seconds" grep -qE '^stera_coordinator_export_interval_seconds 60$' metrics.txt
want "backup interval is --backup-every-mins in seconds" grep -qE '^stera_coordinator_backup_interval_seconds 60$' metrics.txt
end

begin "curl http://WORKER:9101/metrics"
metrics "$wport" >worker-metrics.txt || miss "no worker /metrics"
want "worker metrics" grep -q '^stera_worker' worker-metrics.txt
end

begin "curl http://COORDINATOR:9100/ (the dashboard)"
run curl -sf "http://127.0.0.1:$mport/"
want_ok
want_text '<html'
end

begin "curl http://COORDINATOR:9100/api/status (the status document, version 2, the README's keys)"
run curl -sf "http://127.0.0.1:$mport/api/status"
want_ok
cp "$out" api-status.json
python3 - api-status.json "$repo/README.md" <<'PY' >logs/keys.txt 2>&1 || miss "$(head -c 400 logs/keys.txt)"
import json, re, sys
doc = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
section = text.split("## The status document", 1)[1].split("\n## ", 1)[0]
documented = set(re.findall(r"^\| `([a-z_\[\].]+)` \|", section, re.M))
def keys(value, prefix=""):
    out = set()
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(prefix + k)
            out |= keys(v, prefix + k + ".")
    elif isinstance(value, list):
        for item in value:
            out |= keys(item, prefix[:-1] + "[].")
    return out
found = keys(doc)
top_documented = {k for k in documented if "." not in k}
top_found = {k for k in found if "." not in k}
assert doc["version"] == 2, doc["version"]
problems = []
if top_documented - top_found:
    problems.append(f"documented, not served: {sorted(top_documented - top_found)}")
if top_found - top_documented:
    problems.append(f"served, not documented: {sorted(top_found - top_documented)}")
nested = {k for k in found if "." in k}
if nested - documented:
    problems.append(f"nested keys served, not documented: {sorted(nested - documented)}")
if problems:
    sys.exit("; ".join(problems))
PY
end

begin "book-tools remote status --coordinator URL --token-file token"
run "$BT" remote status --coordinator "$url" --token-file token
want_ok
want_text 'backups'
end

begin "book-tools remote status --json (the same document as /api/status)"
run "$BT" remote status --coordinator "$url" --token-file token --json
want_ok
cp "$out" remote-status.json
curl -sf "http://127.0.0.1:$mport/api/status" >api-status.json
want "the same keys as /api/status" python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
sys.exit(sorted(a) != sorted(b))' remote-status.json api-status.json
end

begin "book-tools remote export --coordinator URL --token-file token --out STATE/now.db2016 --export-shrink"
run "$BT" remote export --coordinator "$url" --token-file token --out "$tmp/state/now.db2016" --export-shrink
want_ok
want_file state/now.db2016
first_positions="$(grep -oE 'export --first-positions [0-9]+' "$out" "$err" | head -1 | grep -oE '[0-9]+$')"
want "the reply names the snapshot's size (--first-positions N)" test -n "$first_positions"
want_text 'book exported' "$coord_log"
end

begin "remote export with a relative --out (taken from --export-dir; .ybb: binary)"
run "$BT" remote export --coordinator "$url" --token-file token --out relative.db2016
want_ok
want_file state/relative.db2016
run "$BT" remote export --coordinator "$url" --token-file token --out now.ybb
want_ok
want "now.ybb is a binary book" sh -c '! grep -q "^#YANEURAOU" state/now.ybb'
end

begin "remote export outside --export-dir, or into a store, is refused"
run "$BT" remote export --coordinator "$url" --token-file token --out "$tmp/outside.db2016"
want_fail
want "nothing written outside" test ! -e outside.db2016
run "$BT" remote export --coordinator "$url" --token-file token --out "$tmp/state/book.db/x.db2016"
want_fail
want "nothing written in the store" test ! -e state/book.db/x.db2016
end

begin "book-tools remote backup --coordinator URL --token-file token --out STATE/backup-now.db"
run "$BT" remote backup --coordinator "$url" --token-file token --out "$tmp/state/backup-now.db"
want_ok
want_file state/backup-now.db/STERA-WHOLE
want_text 'store backed up' "$coord_log"
want "no stera-partial leftovers" test -z "$(ls state | grep stera-partial)"
end

begin "remote backup onto an existing path: refused, logged 'backup request refused', counted refused"
run "$BT" remote backup --coordinator "$url" --token-file token --out "$tmp/state/backup-now.db"
want_fail
want_text 'backup request refused' "$coord_log"
metrics "$mport" >metrics.txt
want 'stera_coordinator_backups_total{result="refused"} 1' grep -qE '^stera_coordinator_backups_total\{result="refused"\} 1$' metrics.txt
want 'stera_coordinator_backups_total{result="ok"}' grep -qE '^stera_coordinator_backups_total\{result="ok"\} [1-9]' metrics.txt
want 'stera_coordinator_backup_last_size_bytes' grep -qE '^stera_coordinator_backup_last_size_bytes [1-9]' metrics.txt
want 'stera_coordinator_backup_last_duration_seconds' grep -qE '^stera_coordinator_backup_last_duration_seconds' metrics.txt
want 'stera_coordinator_exports_total{result="ok"}' grep -qE '^stera_coordinator_exports_total\{result="ok"\} [1-9]' metrics.txt
want 'stera_coordinator_export_duration_seconds' grep -qE '^stera_coordinator_export_duration_seconds' metrics.txt
curl -sf "http://127.0.0.1:$mport/api/status" >api-status.json
want "/api/status backups_refused 1" python3 -c 'import json,sys; d=json.load(open("api-status.json")); sys.exit(not (d["backups_refused"]==1 and d["backups_ok"]>=1 and d["last_backup_bytes"]>0))'
end

begin "book-tools remote export --export-raw (a logical backup while it runs)"
run "$BT" remote export --coordinator "$url" --token-file token --out "$tmp/state/backup-raw.db2016" --export-raw
want_ok
want_file state/backup-raw.db2016
end

# --- A restart: the coordinator drains, the worker waits and reconnects by itself ---
begin "coordinator SIGTERM: drain, final export, 'coordinator stopped'; the worker logs 'waiting for the coordinator to come back'"
stop "$coord" 120
want_rc 0
want_text '"coordinator stopped"' "$coord_log"
want "the final export to --export" test -s state/book.db2016
wait_for 30 'waiting for the coordinator to come back' "$worker_log" || miss "the worker did not log \`waiting for the coordinator to come back\`"
want "the worker is still running" kill -0 "$worker"
end

begin "coordinator started again: the worker logs 'connected again' (down_secs, attempts, lost)"
coord_log=logs/coordinator-2.log
start "$coord_log" "$COORD" "${coord_args[@]}"
coord=$bg
coord_started=$SECONDS
wait_for 60 '"listening"' "$coord_log" || miss "no \`listening\` line"
wait_for 60 'connected again' "$worker_log" || miss "no \`connected again\` in the worker's log"
want "down_secs, attempts and lost on the line" grep -qE 'connected again.*(down_secs.*attempts|attempts.*down_secs).*lost|lost.*connected again' "$worker_log"
end

# === README.md "Games" and deploy/README.md "Play games from the book" ==========
# (The main coordinator above keeps running meanwhile: its periodic export and
# backup come after a minute.)
cp -a copy.db games.db
begin "coordinator --local-workers 2 --think-limit 1000 --play-share 0.2 --play-nodes 1000 --out-games games.txt (think-limit 60)"
run "$COORD" --db games.db --local-workers 2 --think-limit 60 "${SMALL[@]}" --play-share 0.2 --play-nodes 1000 --out-games games.txt
want_ok
want_file games.txt
end

begin "coordinator --think-limit 0 --play-share 1 --play-games 200 --play-nodes 1000 (a games-only run, 10 games)"
gport="$(free_port)"
run "$COORD" --db games.db --local-workers 2 --think-limit 0 --play-share 1 --play-games 10 --play-nodes 1000 \
    --metrics "127.0.0.1:$gport" --out-games games-only.txt
want_ok
want_text 'games target reached'
want "10 games or more in --out-games" test "$(wc -l <games-only.txt)" -ge 10
end

begin "book-tools show --db book.db startpos (games and score per move)"
run "$BT" show --db games.db startpos
want_ok
want_text 'games [1-9]'
end

begin "book-tools stats (games per root)"
run "$BT" stats --db games.db
want_ok
want_text 'games'
end

begin "book-tools match --db book.db --games 400 --nodes 1000 --concurrency 2 (8 games)"
run "$BT" match --db games.db --games 8 --nodes 1000 --concurrency 2
want_ok
want_text '^elo \(pentanomial, 95 %\)'
end

begin "book-tools match --db book.db --games 1000 --nodes 1000 --sprt 0,10 --json result.json (8 games)"
run "$BT" match --db games.db --games 8 --nodes 1000 --sprt 0,10 --json result.json
want_file result.json
want "result.json is JSON with engine, limits, opponent_engine, opponent_limits" python3 -c '
import json; d = json.load(open("result.json")); [d[k] for k in ("engine", "limits", "opponent_engine", "opponent_limits")]'
end

begin "book-tools match ... --opponent-engine-cmd /usr/games/fairy-stockfish --opponent-engine-option UCI_Variant=shogi --opponent-nodes 20000 (8 games, 2000 nodes)"
run "$BT" match --db games.db --games 8 --nodes 1000 --concurrency 2 \
    --opponent-engine-cmd /usr/games/fairy-stockfish --opponent-engine-option UCI_Variant=shogi --opponent-nodes 2000
want_ok
want_text '^elo \(pentanomial, 95 %\)'
want_text 'Fairy-Stockfish'
end

begin "book-tools match --db book-copy.db --coordinator URL --token-file token --out-games match.csa (8 games, the running coordinator's worker)"
run "$BT" match --db games.db --games 8 --nodes 1000 --concurrency 2 --coordinator "$url" --token-file token --out-games match.csa
want_ok
want_text '^elo \(pentanomial, 95 %\)'
want "match.csa holds CSA games" grep -q '^PI\|^P1\|^\$' match.csa
end

# === README.md "Moves chosen by games" and deploy/README.md "Learning games" =====
begin ".venv/bin/python3 scripts/book-openings.py book.db2016 2-4 100 1 > openings.txt (the book of command 1)"
run sh -c "python3 '$repo/scripts/book-openings.py' book.db2016 2-4 100 1 > openings.txt"
want_ok
want "openings.txt holds startpos lines" grep -q '^startpos moves ' openings.txt
end

begin "coordinator --think-limit 0 --learn-openings openings.txt --learn-games 20000 --learn-nodes 1000 --learn-concurrency 2 --learn-opponent ... (20 games)"
lport="$(free_port)"
run "$COORD" --db games.db --local-workers 2 --think-limit 0 --learn-openings openings.txt \
    --learn-games 20 --learn-nodes 1000 --learn-concurrency 2 \
    --learn-opponent "--nodes 500" --learn-opponent "--nodes 1000" --learn-opponent "--nodes 2000" \
    --metrics "127.0.0.1:$lport"
want_ok
want_text 'learning games counted'
end

begin "book-tools learn --db book.db --learn-openings openings.txt --learn-games 20000 --nodes 1000 --learn-concurrency 2 --learn-opponent ... (20 games, fairy-stockfish at 2000 nodes)"
run "$BT" learn --db games.db --learn-openings openings.txt --learn-games 20 --nodes 1000 \
    --learn-concurrency 2 --learn-opponent "--nodes 500" --learn-opponent "--nodes 2000" \
    --learn-opponent "--engine-cmd /usr/games/fairy-stockfish --engine-option UCI_Variant=shogi --nodes 2000"
want_ok
end

begin "book-tools stats --db book.db (the opponents and their games)"
run "$BT" stats --db games.db
want_ok
want_text 'at 1000 nodes'
want_text 'Fairy-Stockfish'
end

begin "book-tools export --db book.db --export-by-results --export book.db2016"
run "$BT" export --db games.db --export-by-results --export by-results.db2016
want_ok
want_file by-results.db2016
end

begin "book-tools match --book-moves results --openings openings.txt --repeat-openings ... --opponent-engine-cmd /usr/games/gpsusi --opponent-engine-option BookDepth=0 (2 games, 50 ms), and the same without the book"
run "$BT" match --db games.db --book-moves results --openings openings.txt --repeat-openings \
    --games 2 --nodes 1000 --concurrency 2 --play-seed 7 --out-games book.csa \
    --opponent-engine-cmd /usr/games/gpsusi --opponent-engine-option BookDepth=0 --opponent-time-ms 50
want_text 'gpsshogi'
want_file book.csa
run "$BT" match --db games.db --book-max-ply 0 --openings openings.txt --repeat-openings \
    --games 2 --nodes 1000 --concurrency 2 --play-seed 7 --out-games none.csa \
    --opponent-engine-cmd /usr/games/gpsusi --opponent-engine-option BookDepth=0 --opponent-time-ms 50
want_ok
want_file none.csa
end

# === README.md "Book weights" ====================================================
begin "book-tools export --db book.db --out book.db2016 --export-weights ndf"
run "$BT" export --db games.db --out ndf.db2016 --export-weights ndf
want_ok
want_file ndf.db2016
end
begin "book-tools export --db book.db --out book.db2016 --export-backup softmax"
run "$BT" export --db games.db --out softmax.db2016 --export-backup softmax
want_ok
want_file softmax.db2016
end
begin "coordinator --local-workers 2 --think-limit 1000 --select softmax --select-temperature 50 (think-limit 30)"
run "$COORD" --db games.db --local-workers 2 --think-limit 30 "${SMALL[@]}" --select softmax --select-temperature 50
want_ok
want_text 'Softmax'
end

# === Other one-machine commands ==================================================
begin "README: worker --usi speaks USI with the built-in engine"
run sh -c "printf 'usi\nisready\nposition startpos\ngo nodes 1000\n' | timeout 30 '$WORKER' --usi; true"
want_text '^usiok'
want_text '^readyok'
want_text '^bestmove '
end

begin "deploy: --store-reserve-mb below 8 is raised to 8, and the start log says so"
run timeout 60 "$COORD" --db reserve.db --create --store-reserve-mb 1 --think-limit 0 --listen 127.0.0.1:0
want_text 'store-reserve-mb is below .*raised to 8 MiB'
end

begin "deploy: with MALLOC_ARENA_MAX set the coordinator leaves malloc alone and logs nothing about arenas"
run env MALLOC_ARENA_MAX=2 timeout 60 "$COORD" --db reserve.db --think-limit 0 --listen 127.0.0.1:0
want_ok
no_text 'arena'
end

begin "deploy: openssl req ... CA:FALSE; coordinator --tls-cert cert.pem --tls-key key.pem; worker https:// --tls-ca cert.pem; remote status over TLS"
# The runbook's openssl command, for the host name localhost.
openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 3650 \
    -subj /CN=localhost -addext subjectAltName=DNS:localhost \
    -addext basicConstraints=critical,CA:FALSE >/dev/null 2>&1 || miss "openssl could not make a certificate"
tport="$(free_port)"
start logs/tls-coordinator.log "$COORD" --db tls.db --create --listen "127.0.0.1:$tport" --tls-cert cert.pem --tls-key key.pem \
    --token-file token "${SMALL[@]}" --think-limit 5
tls_coord=$bg
wait_for 60 'listening' logs/tls-coordinator.log || miss "the TLS coordinator did not listen"
run "$BT" remote status --coordinator "https://localhost:$tport" --tls-ca cert.pem --token-file token
want_ok
start logs/tls-worker.log "$WORKER" --coordinator "https://localhost:$tport" --tls-ca cert.pem --token-file token --slots 1
tls_worker=$bg
wait_for 60 'connected' logs/tls-worker.log || miss "the worker did not connect over TLS"
await "$tls_coord" 120
want_ok
stop "$tls_worker" 60
want_ok
want_text 'think limit reached' logs/tls-coordinator.log
end

# External USI engines as workers (the runbook's GPS Shogi and Fairy-Stockfish
# lines, at a budget of seconds instead of --time-ms 2000 / --depth 12).
for engine in gps fairy; do
    case $engine in
        gps)
            label="worker --engine usi --engine-cmd /usr/games/gpsusi --engine-option BookDepth=0 --time-ms 2000 (--time-ms 50)"
            engine_args=(--engine usi --engine-cmd /usr/games/gpsusi --engine-option BookDepth=0 --time-ms 50)
            ;;
        fairy)
            label="worker --engine usi --engine-cmd /usr/games/fairy-stockfish --engine-option UCI_Variant=shogi --depth 12 (--depth 4)"
            engine_args=(--engine usi --engine-cmd /usr/games/fairy-stockfish --engine-option UCI_Variant=shogi --depth 4)
            ;;
    esac
    begin "$label"
    eport="$(free_port)"
    # A store of its own: a store thought by the built-in engine refuses another
    # engine's workers (deploy/README.md "A worker refused for its engine or budget").
    start "logs/usi-$engine-coordinator.log" "$COORD" --db "usi-$engine.db" --create --listen "127.0.0.1:$eport" \
        --token-file token --think-limit 2
    ucoord=$bg
    wait_for 60 'listening' "logs/usi-$engine-coordinator.log" || miss "the coordinator did not listen"
    start "logs/usi-$engine-worker.log" "$WORKER" --coordinator "http://127.0.0.1:$eport" --token-file token --slots 2 "${engine_args[@]}"
    uworker=$bg
    await "$ucoord" 120
    want_ok
    stop "$uworker" 60
    want_ok
    want_text 'connected' "logs/usi-$engine-worker.log"
    want_text 'think limit reached' "logs/usi-$engine-coordinator.log"
    end
done

# === Prometheus (deploy/README.md "Validation": promtool) ========================
begin "promtool check config deploy/prometheus/prometheus.yml and prometheus-compose.yml"
run promtool check config "$repo/deploy/prometheus/prometheus.yml"
want_ok
run promtool check config --syntax-only "$repo/deploy/prometheus/prometheus-compose.yml"
want_ok
end
begin "promtool check rules deploy/prometheus/alerts.yml; promtool test rules alerts_test.yml"
run promtool check rules "$repo/deploy/prometheus/alerts.yml"
want_ok
run sh -c "cd '$repo/deploy/prometheus' && promtool test rules alerts_test.yml"
want_ok
end
begin "deploy: every alert of the runbook's table is a rule of alerts.yml"
for a in $(grep -oE '^\| `Stera[A-Za-z]+`' "$repo/deploy/README.md" | tr -d '|` '); do
    grep -q "alert: $a\$" "$repo/deploy/prometheus/alerts.yml" || miss "$a is not in alerts.yml"
done
for a in $(grep -oE 'alert: Stera[A-Za-z]+' "$repo/deploy/prometheus/alerts.yml" | cut -d' ' -f2); do
    grep -q "^| \`$a\`" "$repo/deploy/README.md" || miss "$a is not in the runbook's table"
done
end

# === The main coordinator: periodic export and backup, summaries, a lost connection ===
begin "periodic export and backup (--export-every-mins/--backup-every-mins 1): backups/backup-<unix seconds>.db, 'store backed up', 'book exported'"
wait_for $((coord_started + 100 - SECONDS > 5 ? coord_started + 100 - SECONDS : 5)) 'backups/backup-[0-9]+\.db' "$coord_log" || miss "no periodic backup logged"
want "backups/backup-<unix seconds>.db" sh -c 'ls state/backups | grep -qE "^backup-[0-9]{10}\.db$"'
wait_for 30 'book exported.*state/book\.db2016' "$coord_log" || miss "no periodic export logged"
want "the backup is a complete store" test -e "state/backups/$(ls state/backups | grep -E '^backup-[0-9]+\.db$' | tail -1)/STERA-WHOLE"
end

begin "deploy: a summary line every --status-every-secs when stderr is not a terminal (coordinator and worker)"
want_text 'stera_coordinator::status' "$coord_log"
want_text 'stera_worker::status' "$worker_log"
end

begin "a coordinator killed outright: the worker logs WARN 'coordinator unreachable', then 'connected again'"
kill -KILL "$coord"
wait "$coord" 2>/dev/null
wait_for 30 'WARN.*coordinator unreachable' "$worker_log" || miss "no WARN \`coordinator unreachable\`"
coord_log=logs/coordinator-3.log
start "$coord_log" "$COORD" "${coord_args[@]}"
coord=$bg
wait_for 60 '"listening"' "$coord_log" || miss "no \`listening\` line"
deadline=$((SECONDS + 60))
while [ "$(grep -c 'connected again' "$worker_log")" -lt 2 ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
want "a second \`connected again\`" test "$(grep -c 'connected again' "$worker_log")" -ge 2
end

begin "worker SIGTERM: finishes the jobs in hand, sends their results and exits (status 0)"
stop "$worker" 120
want_ok
want_text 'finishing the jobs in hand' "$worker_log"
end

begin "coordinator SIGTERM: 'coordinator stopped' with nodes=; book-tools stats --db counts the same"
stop "$coord" 120
want_ok
stopped_nodes="$(grep '"coordinator stopped"' "$coord_log" | grep -oE '"nodes":[0-9]+' | cut -d: -f2)"
want "nodes= on the stopped line" test -n "$stopped_nodes"
run "$BT" stats --db state/book.db
want_ok
want "stats counts nodes=$stopped_nodes" grep -qE "^nodes +$stopped_nodes\$" "$out"
end

begin "book-tools export --db <stopped store> --first-positions N writes the remote export again byte for byte"
run "$BT" export --db state/book.db --first-positions "$first_positions" --export-shrink --out again.db2016
want_ok
want "the same bytes as the remote export" cmp -s again.db2016 state/now.db2016
end

# === deploy/README.md "Move the store to another disk or host" ==================
begin "book-tools backup --db book.db --out /new/disk/book.db; book-tools stats --db /new/disk/book.db (nodes= of 'coordinator stopped')"
mkdir newdisk
run "$BT" backup --db state/book.db --out newdisk/book.db
want_ok
run "$BT" stats --db newdisk/book.db
want_ok
want "the copy counts nodes=$stopped_nodes" grep -qE "^nodes +$stopped_nodes\$" "$out"
end

# === deploy/README.md "Restore from a backup" ====================================
begin "restore: the coordinator refuses a --db inside --backup-dir, or named like a periodic backup"
newest="$(ls state/backups | grep -E '^backup-[0-9]+\.db$' | sort -t- -k2 -n | tail -1)"
run timeout 60 "$COORD" --db "state/backups/$newest" --backup-dir state/backups --listen 127.0.0.1:0 --think-limit 0
want_fail
want_text 'refusing --db'
run timeout 60 "$COORD" --db state/backup-1000.db --backup-dir state/backups --listen 127.0.0.1:0 --think-limit 0
want_fail
want "nothing made" test ! -e state/backup-1000.db
end

begin "restore steps 2-5 as the runbook's systemd block (mv aside, cp -a the newest backup, check, start)"
run sh -c 'cd state &&
    mv book.db book.db.damaged &&
    cp -a "backups/$(ls backups | grep -E "^backup-[0-9]+\.db$" | sort -t- -k2 -n | tail -1)" book.db &&
    '"'$BT'"' check --db book.db'
want_ok
want_text 'whole'
run "$COORD" --db state/book.db --backup-dir state/backups --local-workers 1 --think-limit 10 "${SMALL[@]}" --listen 127.0.0.1:0
want_ok
want_text 'coordinator stopped'
end

begin "restore of an online backup: mv book.db book.db.old && mv backup-now.db book.db; start"
run sh -c 'cd state && mv book.db book.db.old && mv backup-now.db book.db'
want_ok
run "$COORD" --db state/book.db --local-workers 1 --think-limit 10 "${SMALL[@]}" --listen 127.0.0.1:0
want_ok
end

begin "logical restore: book-tools import --keep-twins --create --db restored.db backup-raw.db2016; roots set; re-export gives the same file"
run "$BT" import --keep-twins --create --db restored.db state/backup-raw.db2016
want_ok
run "$BT" roots set --create --db restored.db roots.txt
want_ok
run "$BT" export --db restored.db --export-raw --out re-exported.db2016
want_ok
want "re-exporting gives the same file" cmp -s re-exported.db2016 state/backup-raw.db2016
end

begin "a coordinator started without --export-dir refuses every remote export"
nport="$(free_port)"
# No think limit and no workers: it serves until stopped (with --think-limit 0 it
# would stop at once, racing the two checks below).
start logs/no-export-dir.log "$COORD" --db newdisk/book.db --listen "127.0.0.1:$nport"
nocoord=$bg
wait_for 60 'listening' logs/no-export-dir.log || miss "the coordinator did not listen"
run "$BT" remote export --coordinator "http://127.0.0.1:$nport" --out "$tmp/refused.db2016"
want_fail
want "nothing written" test ! -e refused.db2016
run "$BT" remote backup --coordinator "http://127.0.0.1:$nport" --out "$tmp/refused.db"
want_fail
end

begin "README: remote status --json of a coordinator without --metrics: store_bytes 0 (not measured), roots_age_ms 0"
run "$BT" remote status --coordinator "http://127.0.0.1:$nport" --json
want_ok
want "store_bytes 0 and roots_age_ms 0" python3 -c '
import json, sys; d = json.load(open(sys.argv[1])); sys.exit(not (d["store_bytes"] == 0 and d["roots_age_ms"] == 0))' "$out"
stop "$nocoord" 60
want_ok
end

for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
echo "runbook-check: $passed passed, $failed failed ($((SECONDS)) s)"
for f in "${failures[@]}"; do echo "  FAIL $f"; done
[ "$failed" = 0 ]
