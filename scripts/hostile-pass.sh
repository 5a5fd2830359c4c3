#!/usr/bin/env bash
# A hostile pass against the release binaries (issue 35): stores cut short,
# restores that could destroy, pipes, directories swapped for links after
# start, flooding engines, endless inputs, careless flags, a full disk and
# kill -9. Every case states its expected outcome and prints one line:
#
#   PASS|FAIL|SKIP  id  description  (observed: short)
#
# and the script exits non-zero when any case fails. Everything happens in a
# temporary directory that is removed at the end; the full-disk cases mount a
# small tmpfs when they can (root), else they are skipped.
#
#   cargo build --release -p coordinator -p worker -p book-tools
#   scripts/hostile-pass.sh                 # BIN=target/release by default
#   BIN=/path/to/bin scripts/hostile-pass.sh
#
# Results for forged leases need a gRPC client and are covered by the
# coordinator's integration tests; they are listed at the end (not counted).
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/python-env.sh
. "$HERE/python-env.sh"
ROOT=$(dirname "$HERE")
BIN=${BIN:-$ROOT/target/release}
BIN=$(cd "$BIN" 2>/dev/null && pwd) || { echo "BIN=$BIN is not a directory" >&2; exit 2; }
BT=$BIN/book-tools
CO=$BIN/coordinator
WK=$BIN/worker
for b in "$BT" "$CO" "$WK"; do
    [ -x "$b" ] || { echo "missing $b: cargo build --release -p coordinator -p worker -p book-tools" >&2; exit 2; }
done
command -v python3 >/dev/null || { echo "python3 is needed" >&2; exit 2; }
HELPER=(python3 "$HERE/hostile_helper.py")
ENGINE="python3 $HERE/hostile_usi_engine.py"
# Memory any one process of a case may use (KiB): the flooding and endless
# inputs of issue 35 reached gigabytes.
RSS_LIMIT_KB=${RSS_LIMIT_KB:-512000}
TIME_BIN=""
if [ -x /usr/bin/time ] && /usr/bin/time -f %M -o /dev/null true 2>/dev/null; then
    TIME_BIN=/usr/bin/time
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/hostile-pass.XXXXXX")
MNT=""
PIDS=()
cleanup() {
    local p
    for p in ${PIDS[@]+"${PIDS[@]}"}; do
        kill -9 "$p" 2>/dev/null
    done
    if [ -n "$MNT" ]; then
        umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
    fi
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$T/r" "$T/s"
cd "$T" || exit 2

# ---------------------------------------------------------------- reporting
NPASS=0
NFAIL=0
NSKIP=0
FAILED=()
STARTED=$(date +%s)

# report VERDICT ID DESCRIPTION OBSERVED
report() {
    local verdict=$1 id=$2 desc=$3 obs
    obs=$(printf '%s' "$4" | tr '\n\t' '  ' | tr -s ' ' | cut -c1-400)
    local line
    line=$(printf '%-4s  %s  %s  (observed: %s)' "$verdict" "$id" "$desc" "$obs")
    echo "$line"
    case $verdict in
        PASS) NPASS=$((NPASS + 1)) ;;
        FAIL) NFAIL=$((NFAIL + 1)); FAILED+=("$line") ;;
        SKIP) NSKIP=$((NSKIP + 1)) ;;
    esac
}

# verdict OK ID DESCRIPTION OBSERVED: PASS when OK is 1.
verdict() {
    if [ "$1" = 1 ]; then report PASS "$2" "$3" "$4"; else report FAIL "$2" "$3" "$4"; fi
}

# ---------------------------------------------------------------- running
# run NAME SECONDS CMD...: runs CMD (stdin from $STDIN or /dev/null) with a
# time limit; sets RC, MS (wall milliseconds), RSS (max resident KiB, 0 when
# unknown), OUT and ERR (files).
run() {
    local name=$1 limit=$2
    shift 2
    OUT=$T/r/$name.out
    ERR=$T/r/$name.err
    local rss=$T/r/$name.rss t0 t1
    t0=$(date +%s%N)
    if [ -n "$TIME_BIN" ]; then
        timeout -k 5 "$limit" "$TIME_BIN" -f %M -o "$rss" "$@" >"$OUT" 2>"$ERR" <"${STDIN:-/dev/null}"
    else
        timeout -k 5 "$limit" "$@" >"$OUT" 2>"$ERR" <"${STDIN:-/dev/null}"
    fi
    RC=$?
    t1=$(date +%s%N)
    MS=$(((t1 - t0) / 1000000))
    RSS=$(grep -E '^[0-9]+$' "$rss" 2>/dev/null | tail -1)
    RSS=${RSS:-0}
}

# The first line of ERR that says what went wrong (log noise left out).
why() {
    grep -v -e 'malloc arenas' -e ' INFO ' "$ERR" | grep -m1 -iE 'error|refus|damaged|warn|panicked' | cut -c1-220
}

# The last run's wall time as seconds with one decimal.
secs() {
    printf '%d.%d' $((MS / 1000)) $((MS % 1000 / 100))
}

no_panic() {
    [ "$RC" -ne 101 ] && ! grep -q 'panicked' "$ERR"
}

alive() {
    local s
    s=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
    [[ $s != Z* ]]
}

# wait_pid PID SECONDS: waits for a child, kills it after SECONDS; returns its status.
wait_pid() {
    local pid=$1 limit=$2 i
    for ((i = 0; i < limit * 10; i++)); do
        alive "$pid" || break
        sleep 0.1
    done
    alive "$pid" && kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
}

# start_coord NAME ARGS...: a coordinator on a free loopback port, in the
# background; sets CPID, CADDR, MADDR (with --metrics 127.0.0.1:0) and CLOG.
start_coord() {
    local name=$1 i
    shift
    CLOG=$T/r/$name.log
    "$CO" --create --listen 127.0.0.1:0 --status-every-secs 0 "$@" >"$CLOG" 2>&1 </dev/null &
    CPID=$!
    PIDS+=("$CPID")
    CADDR=""
    for ((i = 0; i < 200; i++)); do
        CADDR=$(grep -o 'listening addr=[0-9.:]*' "$CLOG" | head -1 | cut -d= -f2)
        [ -n "$CADDR" ] && break
        alive "$CPID" || break
        sleep 0.1
    done
    MADDR=$(grep -o 'metrics over HTTP http=[0-9.:]*' "$CLOG" | head -1 | cut -d= -f2)
}

stop_coord() {
    kill -TERM "$CPID" 2>/dev/null
    wait_pid "$CPID" 90
}

# wait_log FILE PATTERN SECONDS [PID]: true once PATTERN is in FILE.
wait_log() {
    local file=$1 pattern=$2 limit=$3 pid=${4:-} i
    for ((i = 0; i < limit * 10; i++)); do
        grep -qE "$pattern" "$file" 2>/dev/null && return 0
        [ -n "$pid" ] && ! alive "$pid" && break
        sleep 0.1
    done
    grep -qE "$pattern" "$file" 2>/dev/null
}

tree_sum() { "${HELPER[@]}" tree-sum "$1"; }

# ---------------------------------------------------------------- fixtures
echo "hostile pass: binaries in $BIN, scratch in $T"
NGAMES=$("${HELPER[@]}" games "$T/games.usi")
head -n 300 "$T/games.usi" >"$T/small.usi"
"$BT" synth --db "$T/s/syn" --nodes 800 >/dev/null 2>&1 || { echo "cannot make the synthetic store" >&2; exit 2; }
# A store as the coordinator leaves it: two runs (the second open leaves a snap.* file).
# Every later coordinator on it thinks at the same --nodes 500: another budget would be
# refused (--allow-mixed-engines).
for i in 1 2; do
    "$CO" --db "$T/s/coord" --create --listen 127.0.0.1:0 --local-workers 1 --think-limit 300 --nodes 500 \
        --status-every-secs 0 >"$T/r/fixture-coord-$i.log" 2>&1 </dev/null \
        || { echo "cannot make the coordinator's store" >&2; exit 2; }
done
"$BT" synth --db "$T/s/big" --nodes 60000 >/dev/null 2>&1 || { echo "cannot make the large store" >&2; exit 2; }
"$BT" export --db "$T/s/syn" --out "$T/syn.db" >/dev/null 2>&1
"$BT" export --db "$T/s/syn" --out "$T/syn.ybb" >/dev/null 2>&1

# The intact answers of each opener, from a copy (opening may add sled's snap.* file).
declare -A NODES
reference() {
    local store=$1 ref=$T/ref-$1
    rm -rf "$ref" && cp -a "$T/s/$store" "$ref"
    "$BT" stats --db "$ref" >"$T/ref-$store.stats" 2>/dev/null
    "$BT" show --db "$ref" startpos >"$T/ref-$store.show" 2>/dev/null
    "$BT" export --db "$ref" --out "$T/ref-$store.export.db" >/dev/null 2>&1
    "$BT" next --db "$ref" 5 >"$T/ref-$store.next" 2>/dev/null
    NODES[$store]=$(awk '$1 == "nodes" {print $2; exit}' "$T/ref-$store.stats")
}
reference syn
reference coord

# ======================================================= 1. stores cut short
# openers DB STORE TAG: every opener on DB (a damaged copy of STORE). Each must
# refuse naming the damage and the restore section, or read the whole book (the
# same output as the intact store). Sets OK and OBS.
openers() {
    local db=$1 store=$2 tag=$3 n=${NODES[$2]}
    local refused=() whole=() bad=() said=""
    judge() {
        local name=$1 same=$2
        if ! no_panic; then
            bad+=("$name:panic")
        elif [ "$RC" -ne 0 ]; then
            if grep -qi 'damaged' "$ERR" && grep -qi 'restore' "$ERR"; then
                refused+=("$name")
            else
                bad+=("$name(rc=$RC)")
                [ -z "$said" ] && said=$(why | sed "s|$T/||g" | cut -c1-120)
            fi
        elif [ "$same" = 1 ]; then
            whole+=("$name")
        else
            bad+=("$name:exit 0 with another book")
        fi
    }
    run "$tag-check" 60 "$BT" check --db "$db"
    judge check "$(grep -q '^whole' "$OUT" && echo 1)"
    run "$tag-stats" 60 "$BT" stats --db "$db"
    judge stats "$(cmp -s "$OUT" "$T/ref-$store.stats" && echo 1)"
    run "$tag-show" 60 "$BT" show --db "$db" startpos
    judge show "$(cmp -s "$OUT" "$T/ref-$store.show" && echo 1)"
    run "$tag-export" 60 "$BT" export --db "$db" --out "$T/r/$tag.export.db"
    judge export "$(cmp -s "$T/r/$tag.export.db" "$T/ref-$store.export.db" && echo 1)"
    run "$tag-next" 60 "$BT" next --db "$db" 5
    judge next "$(cmp -s "$OUT" "$T/ref-$store.next" && echo 1)"
    run "$tag-learn" 120 "$BT" learn --db "$db" --games 1 --nodes 50
    judge learn 1
    run "$tag-coordinator" 120 "$CO" --db "$db" --create --listen 127.0.0.1:0 --think-limit 1 \
        --local-workers 1 --nodes 500 --status-every-secs 0
    judge coordinator "$(grep -q "book loaded nodes=$n\b" "$ERR" && echo 1)"
    if [ "$RC" -eq 0 ] && grep -q 'NEW, EMPTY' "$ERR"; then
        bad+=("coordinator(logs 'created a NEW, EMPTY book store' yet $(grep -m1 -o 'book loaded nodes=[0-9]*' "$ERR"))")
    fi
    OK=0
    [ ${#bad[@]} -eq 0 ] && OK=1
    OBS=""
    [ ${#refused[@]} -gt 0 ] && OBS+="refused as damaged (restore named): ${refused[*]}; "
    [ ${#whole[@]} -gt 0 ] && OBS+="read the whole $n-position book: ${whole[*]}; "
    [ ${#bad[@]} -gt 0 ] && OBS+="WRONG: ${bad[*]}${said:+: '$said'}"
}

cut_case() {
    local store=$1 mode=$2 pct=$3 db size
    db=$T/cut-$store-$mode-$pct
    rm -rf "$db" && cp -a "$T/s/$store" "$db"
    if [ "$mode" = file ]; then
        size=$(stat -c %s "$db/db")
    else
        size=$("${HELPER[@]}" data-end "$db/db")
    fi
    truncate -s $((size * pct / 100)) "$db/db"
    openers "$db" "$store" "cut-$store-$mode-$pct"
    local what="its db file cut to $pct % of its size"
    [ "$mode" = data ] && what="its db file cut to $pct % of its written data (sled preallocates)"
    verdict "$OK" "trunc-$store-$mode-$pct" "$store store, $what: every opener refuses it naming the restore, or reads the whole book" "$OBS"
    rm -rf "$db"
}

for pct in 99 95 90 80 50 10 0; do cut_case coord file "$pct"; done
for pct in 99 95 90 50; do cut_case coord data "$pct"; done
for pct in 99 90 50 10 0; do cut_case syn file "$pct"; done

# damage_case ID STORE DESCRIPTION SHELL-DAMAGE [strict]: the store's files
# damaged by a shell command (run in the copy's directory).
damage_case() {
    local id=$1 store=$2 desc=$3 damage=$4 db
    db=$T/dmg-$id
    rm -rf "$db" && cp -a "$T/s/$store" "$db"
    (cd "$db" && eval "$damage")
    openers "$db" "$store" "dmg-$id"
    verdict "$OK" "$id" "$desc: every opener refuses it naming the restore, or reads the whole book" "$OBS"
    rm -rf "$db"
}
damage_case whole-deleted coord "STERA-WHOLE deleted (a copy that left it out)" 'rm -f STERA-WHOLE'
damage_case whole-empty coord "STERA-WHOLE truncated to 0 bytes" 'truncate -s 0 STERA-WHOLE'
damage_case whole-cut coord "STERA-WHOLE truncated to 10 bytes" 'truncate -s 10 STERA-WHOLE'
damage_case conf-deleted coord "sled's conf deleted" 'rm -f conf'
damage_case conf-empty coord "sled's conf truncated to 0 bytes" 'truncate -s 0 conf'
damage_case snap-deleted coord "sled's snap.* deleted" 'rm -f snap.*'
damage_case snap-empty coord "sled's snap.* truncated to 0 bytes" 'for f in snap.*; do truncate -s 0 "$f"; done'
damage_case snap-half coord "sled's snap.* cut in half" 'for f in snap.*; do truncate -s $(( $(stat -c %s "$f") / 2 )) "$f"; done'
damage_case snap-forged coord "a garbage snap.* newer than sled's" 'head -c 2000 /dev/urandom > snap.0000000000FFFFFF'
damage_case db-deleted coord "sled's db file deleted" 'rm -f db'
damage_case db-zeroed coord "8 KiB of zeros written in the middle of db" 'dd if=/dev/zero of=db bs=4096 seek=20 count=2 conv=notrunc status=none'
damage_case blobs-deleted coord "sled's blobs/ deleted" 'rm -rf blobs'

# A copy mixing two moments: db from an earlier state, STERA-WHOLE from a later one.
early=$T/early
rm -rf "$early" "$T/late"
"$BT" synth --db "$early" --nodes 400 >/dev/null 2>&1
cp -a "$early" "$T/late"
"$BT" synth --db "$T/late" --nodes 800 >/dev/null 2>&1
cp "$T/late/STERA-WHOLE" "$early/STERA-WHOLE"
run mixed-stats 60 "$BT" stats --db "$early"
ok=0
[ "$RC" -ne 0 ] && grep -q 'holds less' "$ERR" && grep -qi restore "$ERR" && ok=1
rc=$RC
run mixed-check 60 "$BT" check --db "$early"
{ [ "$RC" -ne 0 ] && grep -q 'holds less' "$OUT" "$ERR"; } || ok=0
verdict "$ok" mixed-moments "db of a 400-position moment with STERA-WHOLE of an 800-position one (a live cp): stats and check say it holds less" \
    "stats rc=$rc, check rc=$RC: $(grep -h -m1 -o 'positions: [0-9]* of [0-9]*' "$OUT" "$ERR" | head -1)"

# check must agree with the openers about a store that lost its record.
db=$T/no-record
rm -rf "$db" && cp -a "$T/s/coord" "$db" && rm -f "$db/STERA-WHOLE"
run no-record-stats 60 "$BT" stats --db "$db"
rc=$RC
run no-record-check 60 "$BT" check --db "$db"
ok=0
[ "$rc" -ne 0 ] && [ "$RC" -ne 0 ] && no_panic && ok=1
verdict "$ok" check-no-record "STERA-WHOLE deleted from a store that kept one: check exits non-zero, as stats and every opener refuse it" \
    "stats rc=$rc; check rc=$RC: $(grep -m1 -oE 'no record of what it must hold[^:]*: [^,]*|^whole.*' "$OUT" | cut -c1-150)"

for store in syn coord; do
    db=$T/intact-$store
    cp -a "$T/s/$store" "$db"
    run "intact-$store" 60 "$BT" check --db "$db"
    ok=0
    [ "$RC" -eq 0 ] && grep -q '^whole' "$OUT" && ok=1
    verdict "$ok" "check-intact-$store" "book-tools check on the intact $store store exits 0 and says whole" "rc=$RC, $(grep -m1 '^whole' "$OUT")"
done

# ======================================================= 2. restores that could destroy
mkdir -p "$T/restore/backups" "$T/restore/elsewhere"
cp -a "$T/s/coord" "$T/restore/backups/backup-100.db"
cp -a "$T/s/coord" "$T/restore/backups/book.db"
cp -a "$T/s/coord" "$T/restore/elsewhere/backup-7.db"
cp -a "$T/s/coord" "$T/restore/book.db"
ln -s backups/backup-100.db "$T/restore/live.db"
ln -s backups "$T/restore/backups-link"
restore_case() {
    local id=$1 desc=$2 expect=$3
    shift 3
    run "restore-$id" 60 "$CO" --listen 127.0.0.1:0 --think-limit 1 --local-workers 1 --nodes 500 \
        --status-every-secs 0 "$@"
    local ok=0
    if [ "$expect" = refuse ]; then
        [ "$RC" -ne 0 ] && no_panic && grep -qE "refusing --db|refusing to write" "$ERR" && ok=1
        verdict "$ok" "restore-$id" "$desc: refused" "rc=$RC $(why)"
    else
        [ "$RC" -eq 0 ] && grep -q "book loaded nodes=${NODES[coord]}" "$ERR" && ok=1
        verdict "$ok" "restore-$id" "$desc: accepted" "rc=$RC, $(grep -o 'book loaded nodes=[0-9]*' "$ERR")"
    fi
}
R=$T/restore
restore_case backup-in-dir "--db a backup-N.db inside --backup-dir (the runbook read literally)" refuse \
    --db "$R/backups/backup-100.db" --backup-dir "$R/backups" --backup-every-mins 60
restore_case store-in-dir "--db any store inside --backup-dir" refuse --db "$R/backups/book.db" --backup-dir "$R/backups" --backup-every-mins 60
restore_case named-like-backup "--db named backup-N.db outside any backup dir" refuse --db "$R/elsewhere/backup-7.db"
restore_case link-into-dir "--db a symlink to a backup inside --backup-dir" refuse --db "$R/live.db" --backup-dir "$R/backups" --backup-every-mins 60
restore_case via-linked-dir "--db reached through a symlinked --backup-dir" refuse --db "$R/backups-link/backup-100.db" --backup-dir "$R/backups" --backup-every-mins 60
restore_case dir-is-parent "--backup-dir the store's own parent" refuse --db "$R/book.db" --backup-dir "$R" --backup-every-mins 60
restore_case dir-inside-store "--backup-dir inside the store" refuse --db "$R/book.db" --backup-dir "$R/book.db/bk" --backup-every-mins 60
cp -a "$R/backups/backup-100.db" "$R/restored.db"
restore_case runbook "the runbook's restore: copy the backup out, start on the copy with the same --backup-dir" accept \
    --db "$R/restored.db" --backup-dir "$R/backups" --backup-every-mins 60

# ======================================================= 3. pipes
kifu_counts() { grep -m1 -oE 'games read [0-9]+, skipped [0-9]+; positions [0-9]+, distinct [0-9]+' "$1"; }
run kifu-file 120 "$BT" kifu add --create --db "$T/kifu-file" "$T/games.usi"
FILE_COUNTS=$(kifu_counts "$OUT")
pipe_kifu() {
    local id=$1 desc=$2 cmd=$3 expect=$4
    run "$id" 120 bash -c "$cmd"
    local got ok=0
    got=$(kifu_counts "$OUT")
    [ "$RC" -eq 0 ] && [ -n "$got" ] && [ "$got" = "$expect" ] && ok=1
    verdict "$ok" "$id" "$desc" "rc=$RC, $got"
}
pipe_kifu pipe-kifu-dash "cat games.usi ($NGAMES games, $(stat -c %s "$T/games.usi") bytes) | kifu add --create -: every game read" \
    "cat '$T/games.usi' | '$BT' kifu add --create --db '$T/kifu-dash' -" "$FILE_COUNTS"
pipe_kifu pipe-kifu-devstdin "cat games.usi | kifu add --create /dev/stdin: every game read" \
    "cat '$T/games.usi' | '$BT' kifu add --create --db '$T/kifu-devstdin' /dev/stdin" "$FILE_COUNTS"
pipe_kifu pipe-kifu-slow "a pipe giving 100 bytes, then the rest a second later: every game read" \
    "${HELPER[*]} slow-writer '$T/games.usi' 100 1 | '$BT' kifu add --create --db '$T/kifu-slow' -" "$FILE_COUNTS"
mkfifo "$T/games.fifo"
pipe_kifu pipe-kifu-fifo "kifu add on a FIFO: every game read" \
    "cat '$T/games.usi' > '$T/games.fifo' & '$BT' kifu add --create --db '$T/kifu-fifo' '$T/games.fifo'" "$FILE_COUNTS"
run kifu-small-file 60 "$BT" kifu add --create --db "$T/kifu-small-file" "$T/small.usi"
pipe_kifu pipe-kifu-small "a pipe under 64 KiB (300 games): every game read" \
    "cat '$T/small.usi' | '$BT' kifu add --create --db '$T/kifu-small' -" "$(kifu_counts "$T/r/kifu-small-file.out")"

import_counts() { grep -m1 -oE 'entries [0-9]+: imported [0-9]+' "$1"; }
run import-file 120 "$BT" import --create --db "$T/import-file" "$T/syn.db"
IMPORT_FILE=$(import_counts "$OUT")
pipe_import() {
    local id=$1 desc=$2 cmd=$3
    run "$id" 120 bash -c "$cmd"
    local got ok=0
    got=$(import_counts "$OUT")
    [ "$RC" -eq 0 ] && [ -n "$got" ] && [ "$got" = "$IMPORT_FILE" ] && ok=1
    verdict "$ok" "$id" "$desc" "rc=$RC, $got (from the file: $IMPORT_FILE)"
}
pipe_import pipe-import-dash "cat book.db | import --create -: every entry imported" \
    "cat '$T/syn.db' | '$BT' import --create --db '$T/import-dash' -"
pipe_import pipe-import-slow "import - from a pipe that pauses after 100 bytes: every entry" \
    "${HELPER[*]} slow-writer '$T/syn.db' 100 1 | '$BT' import --create --db '$T/import-slow' -"
pipe_import pipe-import-ybb "cat book.ybb | import --create -: taken as .ybb by its magic, every entry" \
    "cat '$T/syn.ybb' | '$BT' import --create --db '$T/import-ybb' -"

printf 'startpos\n# a comment\nstartpos moves 7g7f 3c3d\nsfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1\n' >"$T/roots.txt"
for how in dash devstdin; do
    arg=-
    [ "$how" = devstdin ] && arg=/dev/stdin
    run "roots-$how" 60 bash -c "cat '$T/roots.txt' | '$BT' roots set --create --db '$T/roots-$how' $arg"
    rc=$RC
    run "roots-$how-list" 60 "$BT" roots list --db "$T/roots-$how"
    n=$(grep -cvE '^(#|$)' "$OUT")
    ok=0
    [ "$rc" -eq 0 ] && [ "$RC" -eq 0 ] && [ "$n" -eq 3 ] && ok=1
    verdict "$ok" "pipe-roots-$how" "cat roots.txt | roots set --create $arg: the 3 roots stored" "set rc=$rc, list shows $n roots"
done

# Standard output closed by its reader: no panic, and the work is kept.
closed() {
    local id=$1 desc=$2 check=$3
    shift 3
    run "$id" 120 "${HELPER[@]}" closed-stdout "$@"
    local ok=0 rc=$RC panic=no
    no_panic || panic=yes
    if [ "$panic" = no ] && [ "$rc" -ne 101 ]; then
        if [ -z "$check" ] || eval "$check"; then ok=1; fi
    fi
    verdict "$ok" "$id" "$desc" "rc=$rc, panic: $panic$([ -n "$check" ] && echo ", work kept: $([ $ok = 1 ] && echo yes || echo no)")"
}
cp -a "$T/s/syn" "$T/closed-syn"
closed closed-kifu-add "kifu add with stdout closed (| head): no panic, every game stored" \
    '"$BT" kifu add --db "$T/closed-kifu" "$T/games.usi" 2>/dev/null | grep -q "added 0 (kifu set now $(echo "$FILE_COUNTS" | grep -o "distinct [0-9]*" | cut -d" " -f2))"' \
    "$BT" kifu add --create --db "$T/closed-kifu" "$T/games.usi"
closed closed-learn "learn --games 2 with stdout closed: no panic, both games counted" \
    '"$BT" stats --db "$T/closed-syn" 2>/dev/null | grep -q "at 50 nodes: 2 games"' \
    "$BT" learn --db "$T/closed-syn" --games 2 --nodes 50
closed closed-roots-list "roots list with stdout closed: no panic" "" "$BT" roots list --db "$T/s/syn"
closed closed-stats "stats with stdout closed: no panic" "" "$BT" stats --db "$T/closed-syn"
closed closed-next "next 50 with stdout closed: no panic" "" "$BT" next --db "$T/closed-syn" 50
closed closed-show "show with stdout closed: no panic" "" "$BT" show --db "$T/closed-syn" startpos
closed closed-check "check with stdout closed: no panic" "" "$BT" check --db "$T/closed-syn"
closed closed-import "import with stdout closed: no panic, every entry stored" \
    '"$BT" stats --db "$T/closed-import" 2>/dev/null | grep -q "^nodes *800$"' \
    "$BT" import --create --db "$T/closed-import" "$T/syn.db"
closed closed-match-json "match --json - with stdout closed: no panic" "" \
    "$BT" match --db "$T/closed-syn" --games 2 --nodes 100 --json -
closed closed-backup "backup with stdout closed: no panic, the copy made" '[ -d "$T/closed-backup" ]' \
    "$BT" backup --db "$T/s/syn" --out "$T/closed-backup"
closed closed-synth "synth with stdout closed: no panic" "" "$BT" synth --db "$T/closed-synth" --nodes 200
closed closed-export "export with stdout closed: no panic, the book written" '[ -s "$T/closed-export.db" ]' \
    "$BT" export --db "$T/closed-syn" --out "$T/closed-export.db"
closed closed-unban "unban --all with stdout closed: no panic" "" "$BT" unban --db "$T/closed-syn" --all
closed closed-perft "perft with stdout closed: no panic" "" "$BT" perft startpos 3
closed closed-evaluate "evaluate with stdout closed: no panic" "" "$BT" evaluate startpos --nodes 1000
closed closed-remote-help "coordinator --help with stdout closed: no panic" "" "$CO" --help
for what in "kifu add --create --db $T/head-kifu $T/games.usi" "roots list --db $T/s/syn" "stats --db $T/closed-syn" \
    "learn --db $T/closed-syn --games 1 --nodes 50" "export --db $T/closed-syn --out -"; do
    id=head-$(echo "$what" | cut -d' ' -f1-2 | tr ' ' '-' | sed 's/--db//; s/-$//')
    run "$id" 120 bash -c "cd '$T/r' && '$BT' $what | head -n 1 >/dev/null; exit \${PIPESTATUS[0]}"
    ok=0
    no_panic && ok=1
    extra=""
    [[ $what == export* ]] && [ -f "$T/r/-" ] && extra=", wrote a file named '-' (not standard output)"
    verdict "$ok" "$id" "book-tools ${what%% --db*} | head -n 1: no panic" "rc=$RC$extra"
done

# Standard error into the same closed pipe (`2>&1 | head`), and a log pipe whose
# reader died (what a local worker's stderr becomes when its coordinator dies).
cp -a "$T/s/coord" "$T/stderr-store"
for what in "stats --db $T/stderr-store" "kifu add --db $T/stderr-store $T/games.usi" \
    "export --db $T/stderr-store --out $T/r/stderr-export.db" "learn --db $T/stderr-store --games 2 --nodes 50"; do
    id=head2-$(echo "$what" | cut -d' ' -f1-2 | tr ' ' '-' | sed 's/--db//; s/-$//')
    run "$id" 120 bash -c "'$BT' $what 2>&1 | head -n 1 >/dev/null; exit \${PIPESTATUS[0]}"
    ok=0
    [ "$RC" -ne 101 ] && ok=1
    verdict "$ok" "$id" "book-tools ${what%% --db*} 2>&1 | head -n 1: no panic" "rc=$RC$([ "$RC" -eq 101 ] && echo ' (a panic: its stderr went into the closed pipe)')"
done
run head2-coordinator 120 bash -c "'$CO' --db '$T/stderr-store' --create --listen 127.0.0.1:0 --think-limit 200 --local-workers 1 --nodes 500 --status-every-secs 0 2>&1 | head -n 1 >/dev/null; exit \${PIPESTATUS[0]}"
rc=$RC
run head2-coordinator-check 60 "$BT" check --db "$T/stderr-store"
ok=0
[ "$rc" -ne 101 ] && [ "$RC" -eq 0 ] && ok=1
verdict "$ok" head2-coordinator "coordinator ... 2>&1 | head -n 1 (its log pipe closed): no panic, the store whole" "rc=$rc$([ "$rc" -eq 101 ] && echo ' (a panic)'), check rc=$RC"
run closed-stderr-worker 8 "${HELPER[@]}" closed-stderr "$WK" --coordinator http://127.0.0.1:9 --slots 1 --status-every-secs 0
ok=0
[ "$RC" -ne 101 ] && ok=1
verdict "$ok" closed-stderr-worker "worker whose stderr is a pipe nobody reads any more (a dead coordinator's local worker): no panic" \
    "rc=$RC$([ "$RC" -eq 101 ] && echo ' (a panic at its first log line; 124 would be: still retrying, as it should)')"

# ======================================================= 4. directories swapped for links after start
# swap_case ID DESC DIR PATTERN CMD...: CMD writes into DIR; once PATTERN is in
# its stderr, DIR is replaced by a symlink to another store. That store must be
# unchanged (same files, same bytes) and still open as whole.
swap_case() {
    local id=$1 desc=$2 dir=$3 pattern=$4
    shift 4
    local other=$T/swap-other-$id before after pid running=no rc
    cp -a "$T/s/syn" "$other"
    before=$(tree_sum "$other")
    mkdir -p "$dir"
    "$@" >"$T/r/$id.out" 2>"$T/r/$id.err" </dev/null &
    pid=$!
    PIDS+=("$pid")
    if [[ $pattern == sleep:* ]]; then
        sleep "${pattern#sleep:}"
    else
        wait_log "$T/r/$id.err" "$pattern" 60 "$pid"
    fi
    alive "$pid" && running=yes
    mv "$dir" "$dir.orig" && ln -s "$other" "$dir"
    wait_pid "$pid" 180
    rc=$?
    after=$(tree_sum "$other")
    run "$id-check" 60 "$BT" check --db "$other"
    if [ "$running" = no ]; then
        report SKIP "$id" "$desc" "the command ended (rc=$rc) before the swap"
        return
    fi
    local ok=0
    [ "$before" = "$after" ] && [ "$RC" -eq 0 ] && ok=1
    verdict "$ok" "$id" "$desc: the other store is unchanged and opens" \
        "swapped while running; rc=$rc$([ "$rc" -ne 0 ] && echo " ($(grep -v ' INFO ' "$T/r/$id.err" | grep -m1 -iE 'error' | cut -c1-160))"); other store $([ "$before" = "$after" ] && echo unchanged || echo CHANGED), check rc=$RC; the bound directory holds: $(ls "$dir.orig" | tr '\n' ' ')"
}
swap_case swap-match-json "match --json D/db, D swapped for a link into a store once the match runs" \
    "$T/swap1" '^game|^match' "$BT" match --db "$T/s/syn" --games 6 --nodes 3000 --json "$T/swap1/db"
swap_case swap-match-games "match --out-games D/conf, D swapped once the match runs" \
    "$T/swap2" '^game|^match' "$BT" match --db "$T/s/syn" --games 6 --nodes 3000 --out-games "$T/swap2/conf"
swap_case swap-export "export --out D/db of a 60,000-position store, D swapped once it has loaded" \
    "$T/swap3" 'loaded' "$BT" export --db "$T/s/big" --out "$T/swap3/db"
swap_case swap-next "next --think-file D/db (10,000 positions), D swapped 0.5 s after start" \
    "$T/swap4" 'sleep:0.5' "$BT" next --db "$T/s/big" 10000 --think-file "$T/swap4/db"
cp -a "$T/s/coord" "$T/swap-coord-1"
swap_case swap-coord-games "coordinator --out-games D/db (self-play games), D swapped once a worker is connected" \
    "$T/swap5" 'worker connected' "$CO" --db "$T/swap-coord-1" --create --listen 127.0.0.1:0 --local-workers 1 \
    --play-share 1 --games 60 --play-nodes 300 --think-limit 1 --nodes 500 --status-every-secs 0 --out-games "$T/swap5/db"
cp -a "$T/s/coord" "$T/swap-coord-2"
swap_case swap-coord-export "coordinator --export D/db (the final export), D swapped once a worker is connected" \
    "$T/swap6" 'worker connected' "$CO" --db "$T/swap-coord-2" --create --listen 127.0.0.1:0 --local-workers 1 \
    --think-limit 1500 --nodes 500 --status-every-secs 0 --export "$T/swap6/db"

# ======================================================= 5. typed RPC errors (book-tools remote)
mkdir -p "$T/exports"
cp -a "$T/s/coord" "$T/rpc-store"
cp -a "$T/s/syn" "$T/rpc-other"
ln -s ../rpc-other "$T/exports/into-store"
start_coord rpc --db "$T/rpc-store" --export-dir "$T/exports" --metrics 127.0.0.1:0
rpc_case() {
    local id=$1 desc=$2 code=$3
    shift 3
    run "$id" 60 "$BT" remote "$@" --coordinator "$CADDR"
    local ok=0
    [ "$RC" -ne 0 ] && no_panic && grep -q "($code)" "$ERR" && ok=1
    verdict "$ok" "$id" "$desc: refused as $code" "rc=$RC $(why)"
}
if [ -n "$CADDR" ]; then
    rpc_case rpc-nan-temperature "remote export --temperature NaN" InvalidArgument export --out a.db --temperature NaN
    rpc_case rpc-nan-prior "remote export --prior-games NaN" InvalidArgument export --out a.db --prior-games NaN
    rpc_case rpc-escape "remote export --out ../escape.db" PermissionDenied export --out ../escape.db
    rpc_case rpc-absolute "remote export --out /etc/passwd" PermissionDenied export --out /etc/passwd
    rpc_case rpc-link-into-store "remote export --out LINK/db, LINK a symlink in --export-dir to a store" PermissionDenied \
        export --out into-store/db
    rpc_case rpc-backup-escape "remote backup --out ../copy.db" PermissionDenied backup --out ../copy.db
    # Issue 45, point 6: the caller's mistakes are INVALID_ARGUMENT (they were
    # INTERNAL and counted as failures), and a file in --export-dir that the
    # store did not write is never replaced.
    rpc_case rpc-unknown-opponent "remote export --export-by-results --opponents 999" InvalidArgument \
        export --export b.db --export-by-results --opponents 999
    rpc_case rpc-long-backup-name "remote backup --out NAME (5,000 characters)" InvalidArgument \
        backup --out "$(head -c 5000 /dev/zero | tr '\0' b)"
    printf 'a book of another store\n' >"$T/exports/foreign.db"
    rpc_case rpc-not-ours "remote export --export FILE, FILE in --export-dir not written by this store" AlreadyExists \
        export --export foreign.db
    ok=0
    [ "$(cat "$T/exports/foreign.db")" = "a book of another store" ] && ok=1
    verdict "$ok" rpc-not-ours-unchanged "the file the store did not write is unchanged" "$(head -c 80 "$T/exports/foreign.db")"
    failed_exports=$("${HELPER[@]}" metric "http://$MADDR/metrics" 'stera_coordinator_exports_total{result="error"}')
    failed_backups=$("${HELPER[@]}" metric "http://$MADDR/metrics" 'stera_coordinator_backups_total{result="error"}')
    invalid_exports=$("${HELPER[@]}" metric "http://$MADDR/metrics" 'stera_coordinator_exports_total{result="invalid"}')
    invalid_backups=$("${HELPER[@]}" metric "http://$MADDR/metrics" 'stera_coordinator_backups_total{result="invalid"}')
    ok=0
    [ "$failed_exports" = 0 ] && [ "$failed_backups" = 0 ] && [ "$invalid_exports" != 0 ] && [ "$invalid_backups" != 0 ] && ok=1
    verdict "$ok" rpc-not-counted "refused Export/Backup requests are not counted as failed exports or backups, invalid ones as result=invalid" \
        "exports_total{error}=$failed_exports, backups_total{error}=$failed_backups, exports_total{invalid}=$invalid_exports, backups_total{invalid}=$invalid_backups"
else
    report FAIL rpc-start "a coordinator for the RPC cases starts" "$(tail -2 "$CLOG")"
fi
stop_coord
ok=0
[ "$(tree_sum "$T/rpc-other")" = "$(tree_sum "$T/s/syn")" ] && ok=1
verdict "$ok" rpc-other-unchanged "the store behind the export directory's symlink is unchanged" "$([ $ok = 1 ] && echo unchanged || echo CHANGED)"

# ======================================================= 6. flooding engines
# bounded RC... : the last run ended with an error, within LIMIT ms, under the RSS limit, without a panic.
bounded() {
    local limit_ms=$1
    [ "$RC" -ne 0 ] && [ "$RC" -ne 124 ] && [ "$RC" -ne 137 ] && no_panic && [ "$MS" -le "$limit_ms" ] \
        && { [ "$RSS" -eq 0 ] || [ "$RSS" -le "$RSS_LIMIT_KB" ]; }
}
for mode in flood-info trickle-info endless-line silent-go flood-stderr no-usiok flood-options flood-info-before-usiok endless-id; do
    run "engine-$mode" 90 "$BT" evaluate startpos --engine usi --engine-cmd "$ENGINE $mode" --nodes 1000 --timeout-secs 3
    ok=0
    bounded 30000 && ok=1
    verdict "$ok" "engine-eval-$mode" "evaluate with a USI engine doing $mode, --timeout-secs 3: an error within 30 s, RSS < $((RSS_LIMIT_KB / 1024)) MB" \
        "rc=$RC in $(secs) s, rss $((RSS / 1024)) MB: $(why | cut -c1-150)"
done
for mode in flood-info trickle-info endless-line no-usiok; do
    cp -a "$T/s/coord" "$T/flood-$mode"
    # The store was thought by the built-in engine at 500 nodes: a run at another
    # budget does not start, and a worker of another engine needs the mixing allowed.
    start_coord "flood-$mode" --db "$T/flood-$mode" --nodes 500 --max-worker-failures 2 --allow-mixed-engines
    run "worker-$mode" 120 "$WK" --coordinator "http://$CADDR" --slots 1 --engine usi \
        --engine-cmd "$ENGINE $mode" --timeout-secs 3 --status-every-secs 0 --max-backoff-secs 1
    stop_coord
    ok=0
    gave=no
    grep -q 'given back' "$CLOG" && gave=yes
    if bounded 60000; then
        [ "$mode" = no-usiok ] || [ "$gave" = yes ] && ok=1
    fi
    verdict "$ok" "engine-worker-$mode" "worker with a USI engine doing $mode, --timeout-secs 3: jobs given back, the worker ends within 60 s, RSS < $((RSS_LIMIT_KB / 1024)) MB" \
        "rc=$RC in $(secs) s, rss $((RSS / 1024)) MB, given back: $gave; $(why | cut -c1-120)"
done
cp -a "$T/s/syn" "$T/flood-learn"
run engine-learn-flood 120 "$BT" learn --db "$T/flood-learn" --games 2 --engine usi --engine-cmd "$ENGINE flood-info" --nodes 100 --timeout-secs 3
ok=0
bounded 60000 && ok=1
rc=$RC
took="$(secs) s, rss $((RSS / 1024)) MB: $(why | cut -c1-100)"
run engine-learn-flood-check 60 "$BT" check --db "$T/flood-learn"
[ "$RC" -eq 0 ] || ok=0
verdict "$ok" engine-learn-flood "learn with a flooding USI engine: an error in bounded time and memory, the store still whole" \
    "rc=$rc in $took; check rc=$RC"
run engine-match-endless 120 "$BT" match --db "$T/s/syn" --games 2 --engine usi --engine-cmd "$ENGINE endless-line" --nodes 100 --timeout-secs 3
ok=0
bounded 60000 && ok=1
verdict "$ok" engine-match-endless "match with an engine printing one endless line: an error in bounded time and memory" "rc=$RC in $(secs) s, rss $((RSS / 1024)) MB"

# ======================================================= 7. endless inputs
zero_case() {
    local id=$1 desc=$2
    shift 2
    run "$id" 90 "$@"
    local ok=0 longest
    longest=$("${HELPER[@]}" longest-line "$ERR")
    bounded 30000 && [ "$longest" -le 2000 ] && ok=1
    verdict "$ok" "$id" "$desc: a clear error within 30 s, RSS < $((RSS_LIMIT_KB / 1024)) MB, no line over 2,000 characters" \
        "rc=$RC in $(secs) s, rss $((RSS / 1024)) MB: $(why | cut -c1-140)"
}
zero_case zero-match-openings "match --openings /dev/zero" "$BT" match --db "$T/s/syn" --games 2 --nodes 100 --openings /dev/zero
zero_case zero-learn-openings "learn --openings /dev/zero" "$BT" learn --db "$T/closed-syn" --games 1 --nodes 100 --openings /dev/zero
zero_case zero-coord-learn-openings "coordinator --learn-openings /dev/zero" "$CO" --db "$T/zero-coord" --create --listen 127.0.0.1:0 --learn-games 1 --learn-openings /dev/zero
zero_case zero-token-worker "worker --token-file /dev/zero" "$WK" --coordinator http://127.0.0.1:9 --token-file /dev/zero
zero_case zero-token-coord "coordinator --token-file /dev/zero" "$CO" --db "$T/zero-coord2" --create --listen 127.0.0.1:0 --token-file /dev/zero
zero_case zero-token-match "match --coordinator --token-file /dev/zero" "$BT" match --db "$T/s/syn" --games 2 --coordinator http://127.0.0.1:9 --token-file /dev/zero
zero_case zero-eval-file "evaluate --eval-file /dev/zero" "$BT" evaluate startpos --nodes 100 --eval-file /dev/zero
zero_case zero-eval-file-worker "worker --eval-file /dev/zero" "$WK" --coordinator http://127.0.0.1:9 --eval-file /dev/zero
# Issue 45, point 9: binary USI input was echoed back for ever (532 MB in 30 s).
STDIN=/dev/urandom run urandom-usi 60 "$WK" --usi
ok=0
bytes=$(wc -c <"$OUT")
[ "$RC" -eq 1 ] && [ "$bytes" -lt 200000 ] && grep -q 'MAX_BAD_LINES' "$ERR" && ok=1
verdict "$ok" urandom-usi "worker --usi < /dev/urandom: ends with an error after a few bad lines" "rc=$RC in $(secs) s, $bytes bytes answered: $(why | cut -c1-120)"
zero_case zero-roots-set "roots set --create /dev/zero" "$BT" roots set --create --db "$T/zero-roots" /dev/zero
zero_case zero-kifu-add "kifu add --create /dev/zero" "$BT" kifu add --create --db "$T/zero-kifu" /dev/zero
zero_case zero-import "import --create /dev/zero" "$BT" import --create --db "$T/zero-import" /dev/zero
zero_case zero-usi-stdin "worker --usi < /dev/zero" bash -c "exec '$WK' --usi < /dev/zero"
ok=0
[ ! -e "$T/zero-roots" ] && ok=1
verdict "$ok" zero-nothing-made "roots set --create /dev/zero makes no store (nothing is stored if the file is bad)" "$([ -e "$T/zero-roots" ] && echo 'a store was made' || echo 'no store')"

# ======================================================= 8. careless input
typo_case() {
    local id=$1 desc=$2
    shift 2
    run "$id" 60 "$@"
    local ok=0
    [ "$RC" -ne 0 ] && no_panic && grep -q -- '--create' "$ERR" && [ ! -e "$T/typo.db" ] && ok=1
    verdict "$ok" "$id" "$desc: an error naming --create, nothing made" "rc=$RC $(why | cut -c1-120); $([ -e "$T/typo.db" ] && echo 'typo.db MADE' || echo 'nothing made')"
    rm -rf "$T/typo.db"
}
typo_case typo-kifu "kifu add --db typo.db (no such store) without --create" "$BT" kifu add --db "$T/typo.db" "$T/small.usi"
typo_case typo-import "import --db typo.db without --create" "$BT" import --db "$T/typo.db" "$T/syn.db"
typo_case typo-roots "roots set --db typo.db without --create" "$BT" roots set --db "$T/typo.db" "$T/roots.txt"
mkdir -p "$T/not-a-store"
run typo-not-a-store 60 "$BT" kifu add --db "$T/not-a-store" "$T/small.usi"
ok=0
[ "$RC" -ne 0 ] && grep -q -- '--create' "$ERR" && [ -z "$(ls -A "$T/not-a-store")" ] && ok=1
verdict "$ok" typo-not-a-store "kifu add --db an existing directory that is not a store: an error naming --create, nothing written" "rc=$RC $(why | cut -c1-100)"
made=""
for c in "stats" "show startpos" "export --out $T/x.db" "next 1" "learn --games 1 --nodes 50" "check" "roots list" "backup --out $T/typo-b" "match --games 2 --nodes 50"; do
    sub=${c%% *}
    rest=${c#"$sub"}
    # shellcheck disable=SC2086
    run "typo-read-$sub" 60 "$BT" $sub --db "$T/typo.db" $rest
    { [ "$RC" -eq 0 ] || ! no_panic || [ -e "$T/typo.db" ]; } && made+="$sub(rc=$RC) "
    rm -rf "$T/typo.db"
done
verdict "$([ -z "$made" ] && echo 1)" typo-readers "stats/show/export/next/learn/check/roots list/backup/match on a missing --db: an error each, nothing made" "${made:-every one refused, nothing made}"

# --coordinator without a scheme: taken as http:// (or refused clearly).
cp -a "$T/s/coord" "$T/scheme-store"
start_coord scheme --db "$T/scheme-store" --nodes 500 --think-limit 20
run scheme-worker 60 "$WK" --coordinator "$CADDR" --slots 1 --status-every-secs 0 --exit-on-drain
ok=0
grep -q "connected url=http://$CADDR" "$ERR" && ok=1
verdict "$ok" scheme-worker "worker --coordinator 127.0.0.1:PORT (no scheme): taken as http:// and works" "rc=$RC, $(grep -m1 -o 'connected url=[^ ]*' "$ERR")"
stop_coord
cp -a "$T/s/coord" "$T/scheme-store2"
start_coord scheme2 --db "$T/scheme-store2"
run scheme-status 60 "$BT" remote status --coordinator "$CADDR" --json
ok=0
[ "$RC" -eq 0 ] && grep -q '"nodes"' "$OUT" && ok=1
verdict "$ok" scheme-remote-status "remote status --coordinator 127.0.0.1:PORT (no scheme): works" "rc=$RC $(why | cut -c1-100)"
run scheme-match 15 "$BT" match --db "$T/s/syn" --games 2 --coordinator "$CADDR" --nodes 100
ok=0
no_panic && grep -q '^waiting: ' "$ERR" && ok=1
verdict "$ok" scheme-match "match --coordinator 127.0.0.1:PORT (no scheme) with no workers: taken as http://, says it waits" \
    "$(grep -m1 -o '^waiting: [^;]*' "$ERR" | cut -c1-120)"
stop_coord

flag_case() {
    local id=$1 desc=$2 pattern=$3
    shift 3
    run "$id" 60 "$@"
    local ok=0
    [ "$RC" -ne 0 ] && no_panic && grep -qiE -- "$pattern" "$ERR" && ok=1
    verdict "$ok" "$id" "$desc: refused" "rc=$RC $(grep -m1 -iE 'error|invalid' "$ERR" | cut -c1-140)"
}
flag_case learn-concurrency-0 "learn --concurrency 0" 'not 1 to 256|concurrency' "$BT" learn --db "$T/closed-syn" --games 1 --concurrency 0
flag_case learn-concurrency-huge "learn --concurrency 100000" 'not 1 to 256|concurrency' "$BT" learn --db "$T/closed-syn" --games 1 --concurrency 100000
flag_case play-temperature-nan "coordinator --play-temperature NaN" 'temperature' "$CO" --db "$T/pt" --create --listen 127.0.0.1:0 --play-temperature NaN
flag_case play-temperature-negative "coordinator --play-temperature=-1" 'temperature' "$CO" --db "$T/pt" --create --listen 127.0.0.1:0 --play-temperature=-1
flag_case play-temperature-inf "coordinator --play-temperature inf" 'temperature' "$CO" --db "$T/pt" --create --listen 127.0.0.1:0 --play-temperature inf
ok=0
[ ! -e "$T/pt" ] && ok=1
verdict "$ok" play-temperature-no-store "a refused --play-temperature makes no store" "$([ -e "$T/pt" ] && echo 'a store was made' || echo 'no store')"
flag_case next-count-0 "next 0" 'not in 1..=10000' "$BT" next --db "$T/closed-syn" 0
flag_case next-count-huge "next 100000" 'not in 1..=10000' "$BT" next --db "$T/closed-syn" 100000
# Game threads and engines by the thousand, each with its own hash table: under
# a 3 GB address-space limit so that the case cannot take the machine's memory.
run match-concurrency-huge 120 bash -c "ulimit -v 3000000; exec '$BT' match --db '$T/s/syn' --games 1000 --nodes 1 --concurrency 1000 --repeat-openings"
ok=0
{ [ "$RC" -eq 2 ] || [ "$RC" -eq 1 ]; } && grep -qi 'concurrency' "$ERR" && ok=1
verdict "$ok" match-concurrency-huge "match --concurrency 1000 (1,000 game threads, two engines each): refused as learn's is (1..=256), not an allocation abort" \
    "rc=$RC $(grep -m1 -iE 'error|memory allocation|concurrency' "$ERR" | cut -c1-140)"
run worker-slots-huge 60 bash -c "ulimit -v 3000000; exec '$WK' --coordinator http://127.0.0.1:9 --slots 100000 --status-every-secs 0"
ok=0
{ [ "$RC" -eq 2 ] || [ "$RC" -eq 1 ]; } && grep -qi 'slots' "$ERR" && ok=1
verdict "$ok" worker-slots-huge "worker --slots 100000: refused with a bound, not an allocation abort" \
    "rc=$RC $(grep -m1 -iE 'error|memory allocation|slots' "$ERR" | cut -c1-140)"

# Issue 45, point 5: a run that cannot progress ends non-zero with the reason
# (it idled for ever): limits outside the protocol's bounds are refused at
# start, local workers that cannot start end the run.
flag_case depth-over-bound "coordinator --depth 4294967295" "--depth is out of the protocol's bounds" \
    "$CO" --db "$T/bounds" --create --listen 127.0.0.1:0 --depth 4294967295
flag_case time-over-bound "coordinator --time-ms 3600001" "--time-ms is out of the protocol's bounds" \
    "$CO" --db "$T/bounds" --create --listen 127.0.0.1:0 --time-ms 3600001
flag_case nodes-over-bound "coordinator --nodes 18446744073709551615" "--nodes is out of the protocol's bounds" \
    "$CO" --db "$T/bounds" --create --listen 127.0.0.1:0 --nodes 18446744073709551615
flag_case local-engine-missing "coordinator --local-workers 2 --engine-cmd /nonexistent" 'local-workers ended.*nonexistent' \
    "$CO" --db "$T/bounds" --create --listen 127.0.0.1:0 --local-workers 2 --think-limit 10 --engine-cmd /nonexistent --nodes 1000
flag_case local-eval-file-zero "coordinator --local-workers 1 --eval-file /dev/zero" 'local-workers ended.*/dev/zero' \
    "$CO" --db "$T/bounds-eval" --create --listen 127.0.0.1:0 --local-workers 1 --think-limit 10 --eval-file /dev/zero

# Issue 45, point 7: an error quotes a few hundred bytes of any argument.
LONG_ARG=$(head -c 100000 /dev/zero | tr '\0' p)
LONG_PATH=$(printf '/d%.0s' $(seq 1 40000))/x.db
long_case() {
    local id=$1 desc=$2
    shift 2
    run "$id" 60 "$@"
    local ok=0 bytes
    bytes=$(wc -c <"$ERR")
    [ "$RC" -ne 0 ] && no_panic && [ "$bytes" -lt 4000 ] && grep -q '…' "$ERR" && ok=1
    verdict "$ok" "$id" "$desc: an error of a few hundred bytes" "rc=$RC, $bytes bytes of stderr"
}
long_case long-evaluate "book-tools evaluate 'sfen Q...' (100,000 characters)" "$BT" evaluate "sfen $LONG_ARG"
long_case long-worker-url "worker --coordinator http://p... (100 KB)" "$WK" --coordinator "http://$LONG_ARG"
long_case long-engine-option "worker --engine-option p... (100 KB)" "$WK" --engine-option "$LONG_ARG"
long_case long-engine-cmd "worker --engine-cmd /p... (100 KB)" "$WK" --engine-cmd "/$LONG_ARG" --coordinator http://127.0.0.1:9
long_case long-learn-opponent "coordinator --learn-opponent '--nodes p...' (100 KB)" \
    "$CO" --db "$T/long-opponent" --create --listen 127.0.0.1:0 --learn-games 1 --learn-opponent "--nodes $LONG_ARG"
long_case long-export-out "export --out PATH (80 KB of short names)" "$BT" export --db "$T/s/syn" --out "$LONG_PATH"

printf 'startpos\nstartpos moves 7g7f 3c3d\nsfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNX b - 1\n' >"$T/bad-roots.txt"
cp -a "$T/s/syn" "$T/bad-input"
file_line_case() {
    local id=$1 desc=$2 where=$3
    shift 3
    run "$id" 60 "$@"
    local ok=0
    no_panic && grep -qE -- "$where" "$ERR" "$OUT" && ok=1
    verdict "$ok" "$id" "$desc: the error names $where" "rc=$RC $(grep -m1 -hE -- "$where" "$ERR" "$OUT" | cut -c1-140)"
}
file_line_case bad-sfen-root "roots set with a bad SFEN on line 3" 'bad-roots.txt:3' "$BT" roots set --db "$T/bad-input" "$T/bad-roots.txt"
printf 'startpos moves 7g7f 3c3d\nstartpos moves 2g2f 9z9y\n' >"$T/bad-kifu.usi"
file_line_case bad-kifu-line "kifu add with a malformed move on line 2" 'bad-kifu.usi:2' "$BT" kifu add --db "$T/bad-input" "$T/bad-kifu.usi"
sed '5s/.*/9z9y none abc 0 1/' "$T/syn.db" >"$T/bad-book.db"
file_line_case bad-book-line "import of a book with a malformed move line 5" 'bad-book.db:5' "$BT" import --create --db "$T/bad-import" "$T/bad-book.db"
printf 'startpos\nstartpos moves 7g7f qq\n' >"$T/bad-openings.txt"
file_line_case bad-openings-line "match --openings with a bad line 2" 'bad-openings.txt(:|, line )2' "$BT" match --db "$T/s/syn" --games 2 --nodes 100 --openings "$T/bad-openings.txt"
file_line_case bad-show-sfen "show with a malformed SFEN" 'invalid character|malformed SFEN' "$BT" show --db "$T/bad-input" "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNX b - 1"
python3 -c "print('startpos moves 7g7f'); print('x' * 2000000)" >"$T/long-line.usi"
file_line_case long-kifu-line "kifu add with one 2 MB line" 'long-line.usi:2' "$BT" kifu add --db "$T/bad-input" "$T/long-line.usi"
file_line_case ply-past-max "show a position at ply 10,001" 'ply|MAX_PLY|10000|10,000' "$BT" show --db "$T/bad-input" "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 10001"

# ======================================================= 9. disk reserve and a full disk
cp -a "$T/s/coord" "$T/reserve-store"
run reserve-raised 60 "$CO" --db "$T/reserve-store" --create --listen 127.0.0.1:0 --store-reserve-mb 1 --think-limit 3 --local-workers 1 --nodes 500 --status-every-secs 0
ok=0
[ "$RC" -eq 0 ] && grep -q 'reserve is raised to 8 MiB' "$ERR" && ok=1
verdict "$ok" reserve-raised "--store-reserve-mb 1: raised to the store's 8 MiB write margin, and said" "rc=$RC $(grep -m1 -o 'the reserve is raised[^=]*' "$ERR")"

MNT=$T/mnt
mkdir -p "$MNT"
if mount -t tmpfs -o size=64m tmpfs "$MNT" 2>/dev/null; then
    # fill_to BYTES: grows or shrinks one filler file in place (never freeing
    # everything in between) so that about BYTES stay free on the tmpfs.
    fill_to() {
        local free size want
        free=$(df -B1 --output=avail "$MNT" | tail -1)
        size=$(stat -c %s "$MNT/filler" 2>/dev/null || echo 0)
        want=$((size + free - $1))
        [ "$want" -lt 0 ] && want=0
        if [ "$want" -lt "$size" ]; then
            truncate -s "$want" "$MNT/filler"
        else
            fallocate -l "$want" "$MNT/filler" 2>/dev/null \
                || dd if=/dev/zero of="$MNT/filler" bs=1M count=$((want / 1048576)) status=none 2>/dev/null
        fi
    }
    MB=1048576
    start_coord full --db "$MNT/full" --local-workers 1 --nodes 300 --store-reserve-mb 16 --metrics 127.0.0.1:0
    status() { "${HELPER[@]}" json-field "http://$MADDR/api/status" nodes 2>/dev/null; }
    writable() { "${HELPER[@]}" metric "http://$MADDR/metrics" stera_coordinator_store_writable 2>/dev/null; }
    sleep 1.5
    fill_to $((12 * MB))
    sleep 3
    n1=$(status)
    w1=$(writable)
    sleep 3
    n2=$(status)
    ok=0
    [ "$w1" = 0 ] && [ "$n1" = "$n2" ] && [ "$(grep -c 'disk is full' "$CLOG")" -eq 1 ] && ok=1
    verdict "$ok" full-pause "coordinator on a tmpfs filled below --store-reserve-mb 16: no jobs go out, store_writable 0, said once" \
        "nodes $n1 -> $n2 over 3 s, store_writable=$w1, 'disk is full' logged $(grep -c 'disk is full' "$CLOG")x"
    fill_to $((20 * MB))
    sleep 3
    n3=$(status)
    ok=0
    [ "$(writable)" = 0 ] && [ "$n3" = "$n2" ] && [ "$(grep -c 'space again' "$CLOG")" -eq 0 ] && ok=1
    verdict "$ok" full-hysteresis "free space back above the reserve but under reserve + 8 MiB: still paused, no flapping" \
        "nodes $n2 -> $n3, store_writable=$(writable), 'space again' logged $(grep -c 'space again' "$CLOG")x"
    rm -f "$MNT/filler"
    sleep 3
    n4=$(status)
    w4=$(writable)
    stop_coord
    crc=$?
    run full-check 60 "$BT" check --db "$MNT/full"
    ok=0
    [ "$w4" = 1 ] && [ "$n4" -gt "$n3" ] && [ "$(grep -c 'space again' "$CLOG")" -eq 1 ] && [ "$crc" -eq 0 ] && [ "$RC" -eq 0 ] && ok=1
    verdict "$ok" full-resume "space freed: jobs resume once, the coordinator stops cleanly, the store is whole" \
        "nodes $n3 -> $n4, store_writable=$w4, exit $crc, check rc=$RC"
    rm -rf "$MNT/full"
    cp -a "$T/s/coord" "$MNT/imp"
    fill_to $((4 * MB))
    run full-import 120 "$BT" import --db "$MNT/imp" "$T/syn.db"
    rc=$RC
    why_full=$(why | cut -c1-120)
    run full-import-check 60 "$BT" check --db "$MNT/imp"
    ok=0
    [ "$rc" -ne 0 ] && [ "$rc" -ne 101 ] && grep -q 'no space' "$T/r/full-import.err" && [ "$RC" -eq 0 ] && ok=1
    verdict "$ok" full-import "import into a store on a nearly full disk: an error naming the space, the store still whole" "rc=$rc $why_full; check rc=$RC"
    run full-kifu 120 "$BT" kifu add --db "$MNT/imp" "$T/games.usi"
    rc=$RC
    run full-kifu-check 60 "$BT" check --db "$MNT/imp"
    ok=0
    [ "$rc" -ne 0 ] && [ "$rc" -ne 101 ] && [ "$RC" -eq 0 ] && ok=1
    verdict "$ok" full-kifu "kifu add on a nearly full disk: an error, the store still whole" "rc=$rc; check rc=$RC"
    fill_to $((200 * 1024))
    run full-export 120 "$BT" export --db "$MNT/imp" --out "$MNT/out.db"
    ok=0
    [ "$RC" -ne 0 ] && no_panic && [ ! -e "$MNT/out.db" ] && [ -z "$(find "$MNT" -maxdepth 1 -name '*stera-partial*')" ] && ok=1
    verdict "$ok" full-export "export onto a full disk: an error, no book file and no temporary file left" "rc=$RC $(why | cut -c1-120)"
    # Issue 45: a match's outputs on a full disk (the games file was truncated
    # at start and left with 0 bytes, the JSON too).
    printf 'earlier games\n' >"$MNT/games.csa"
    fill_to 0
    run full-match 120 "$BT" match --db "$T/s/syn" --games 4 --nodes 200 --ply-limit 60 \
        --out-games "$MNT/games.csa" --json "$MNT/match.json"
    ok=0
    [ "$RC" -ne 0 ] && no_panic && grep -qi 'no space' "$ERR" && [ "$(cat "$MNT/games.csa")" = "earlier games" ] \
        && [ ! -e "$MNT/match.json" ] && [ -z "$(find "$MNT" -maxdepth 1 -name '*stera-partial*')" ] && ok=1
    verdict "$ok" full-match "match --out-games/--json onto a full disk: an error, the earlier games file as it was, no JSON, no temporary file" \
        "rc=$RC, games.csa: $(head -c 40 "$MNT/games.csa" | tr '\n' ' '), $(ls "$MNT" | tr '\n' ' ') $(why | cut -c1-100)"
    # Issue 45: the coordinator's --out-games on a full disk (one WARN per game,
    # games counted but missing from the file).
    rm -f "$MNT/games.csa"
    fill_to 0
    start_coord full-games --db "$T/full-games" --think-limit 0 --play-share 1 --play-games 3 --play-nodes 100 \
        --local-workers 1 --out-games "$MNT/games.txt"
    wait_pid "$CPID" 120
    crc=$?
    ok=0
    [ "$crc" -eq 0 ] && [ "$(grep -c 'games.txt' "$CLOG")" -eq 1 ] && grep -q 'ERROR.*cannot write game 1 of this run' "$CLOG" \
        && [ ! -s "$MNT/games.txt" ] && ok=1
    verdict "$ok" full-games-file "coordinator --out-games on a full disk: one error naming the file, it stays whole (empty), the run plays its 3 games and exits 0" \
        "exit $crc, lines naming the file: $(grep -c 'games.txt' "$CLOG"), file $(stat -c %s "$MNT/games.txt" 2>/dev/null) bytes: $(grep -m1 -o 'cannot write game[^(]*' "$CLOG")"
    rm -rf "${MNT:?}"/*
    umount "$MNT" 2>/dev/null
    MNT=""
else
    MNT=""
    for id in full-pause full-hysteresis full-resume full-import full-kifu full-export full-match full-games-file; do
        report SKIP "$id" "a full disk (tmpfs)" "cannot mount a tmpfs here (not root?)"
    done
fi

# ======================================================= 10. kill -9 of a running coordinator
KDB=$T/killed
ORPHANS=""
for cycle in 1 2 3; do
    start_coord "kill-$cycle" --db "$KDB" --local-workers 1 --think-limit 1000000 --nodes 2000 --metrics 127.0.0.1:0
    sleep $((cycle + 1))
    acked=$("${HELPER[@]}" json-field "http://$MADDR/api/status" nodes 2>/dev/null)
    acked=${acked:-0}
    workers=$(pgrep -P "$CPID" | tr '\n' ' ')
    kill -9 "$CPID"
    wait "$CPID" 2>/dev/null
    run "kill-$cycle-check" 60 "$BT" check --db "$KDB"
    rc=$RC
    stored=$(grep -m1 -oE 'positions [0-9]+' "$OUT" | cut -d' ' -f2)
    # At the budget the store was thought at (another one does not start).
    run "kill-$cycle-restart" 120 "$CO" --db "$KDB" --create --listen 127.0.0.1:0 --think-limit 5 --local-workers 1 --nodes 2000 --status-every-secs 0
    loaded=$(grep -m1 -oE 'book loaded nodes=[0-9]+' "$ERR" | cut -d= -f2)
    ok=0
    [ "$rc" -eq 0 ] && [ "${stored:-0}" -ge "$acked" ] && [ "$RC" -eq 0 ] && [ "${loaded:-0}" -ge "$acked" ] \
        && ! grep -qi damaged "$ERR" && ok=1
    verdict "$ok" "kill9-$cycle" "kill -9 of a coordinator after $((cycle + 1)) s of thinking: check whole, positions >= acknowledged, restart loads them" \
        "acknowledged $acked, check rc=$rc positions ${stored:-?}, restart rc=$RC loaded ${loaded:-?}"
    # Its local workers: they must not outlive it for long, and must stop on SIGTERM.
    sleep 3
    for w in $workers; do
        if alive "$w"; then
            kill -TERM "$w" 2>/dev/null
            for ((i = 0; i < 100; i++)); do alive "$w" || break; sleep 0.1; done
            if alive "$w"; then
                ORPHANS+="cycle $cycle: local worker $w still running 10 s after SIGTERM ($(ps -o stat=,time= -p "$w" | tr -s ' ')); "
                kill -9 "$w" 2>/dev/null
            fi
        fi
    done
done
verdict "$([ -z "$ORPHANS" ] && echo 1)" kill9-local-workers "the local workers of a kill -9'd coordinator stop by themselves or on one SIGTERM within 10 s" "${ORPHANS:-each stopped}"

# ======================================================= 11. more
cp -a "$T/s/coord" "$T/inuse"
start_coord inuse --db "$T/inuse"
run inuse-second 30 "$CO" --db "$T/inuse" --create --listen 127.0.0.1:0 --status-every-secs 0
ok=0
[ "$RC" -ne 0 ] && grep -q 'in use' "$ERR" && ok=1
verdict "$ok" inuse-coordinator "a second coordinator on a store in use: refused" "rc=$RC $(why | cut -c1-120)"
run inuse-kifu 30 "$BT" kifu add --db "$T/inuse" "$T/small.usi"
ok=0
[ "$RC" -ne 0 ] && grep -q 'in use' "$ERR" && ok=1
verdict "$ok" inuse-kifu "kifu add on a store a coordinator holds: refused" "rc=$RC $(why | cut -c1-120)"
stop_coord

printf 'right-token\n' >"$T/token"
printf 'wrong-token\n' >"$T/token-wrong"
cp -a "$T/s/coord" "$T/token-store"
start_coord token --db "$T/token-store" --token-file "$T/token"
run token-wrong 60 "$WK" --coordinator "http://$CADDR" --token-file "$T/token-wrong" --slots 1 --status-every-secs 0
ok=0
[ "$RC" -ne 0 ] && no_panic && grep -qi 'token\|unauthenticated' "$ERR" && [ "$MS" -le 30000 ] && ok=1
verdict "$ok" token-wrong "a worker with the wrong token: refused, exits within 30 s" "rc=$RC in $(secs) s $(why | cut -c1-120)"
stop_coord
run token-empty 30 env STERA_TOKEN= "$WK" --coordinator http://127.0.0.1:9
ok=0
[ "$RC" -ne 0 ] && grep -qi 'empty' "$ERR" && ok=1
verdict "$ok" token-empty "STERA_TOKEN set but empty: an error" "rc=$RC $(why | cut -c1-120)"

# Issue 45: --create on a directory of other files made a store among them.
mkdir -p "$T/photos"
printf 'meow' >"$T/photos/cat.jpg"
printf 'startpos\n' >"$T/one-root.txt"
run create-photos-coord 60 "$CO" --db "$T/photos" --create --listen 127.0.0.1:0 --status-every-secs 0 --think-limit 1 --local-workers 1
rc1=$RC
said1=$(grep -c 'holds other files and is not a book store' "$ERR")
run create-photos-bt 60 "$BT" roots set --create --db "$T/photos" "$T/one-root.txt"
ok=0
[ "$rc1" -ne 0 ] && [ "$RC" -ne 0 ] && no_panic && [ "$said1" -ge 1 ] && grep -q 'holds other files and is not a book store' "$ERR" \
    && [ "$(ls -A "$T/photos")" = cat.jpg ] && ok=1
verdict "$ok" create-nonempty "coordinator and roots set with --create on a directory of other files: refused, saying so, the directory as it was" \
    "coordinator rc=$rc1, roots set rc=$RC, directory: $(ls -A "$T/photos" | tr '\n' ' ') $(why | cut -c1-120)"

# Issue 45: an expired lease went back to the silent worker. Two real workers;
# the first is stopped (SIGSTOP) once it works: its leases expire once, and no
# job goes to it again while the other works.
start_coord lease-silent --db "$T/lease-silent" --think-limit 1000000 --nodes 2000 --lease-secs 3 --heartbeat-secs 1 --metrics 127.0.0.1:0
"$WK" --coordinator "http://$CADDR" --slots 1 --status-every-secs 0 >"$T/r/lease-w1.log" 2>&1 </dev/null &
W1=$!
PIDS+=("$W1")
wait_log "$CLOG" 'worker connected' 30 "$CPID"
sleep 2
kill -STOP "$W1"
"$WK" --coordinator "http://$CADDR" --slots 1 --status-every-secs 0 >"$T/r/lease-w2.log" 2>&1 </dev/null &
W2=$!
PIDS+=("$W2")
wait_log "$CLOG" 'lease expired' 30 "$CPID"
sleep 1
e1=$(grep -c 'lease expired' "$CLOG")
n1=$("${HELPER[@]}" json-field "http://$MADDR/api/status" nodes 2>/dev/null)
sleep 10
e2=$(grep -c 'lease expired' "$CLOG")
n2=$("${HELPER[@]}" json-field "http://$MADDR/api/status" nodes 2>/dev/null)
kill -CONT "$W1"
stop_coord
wait_pid "$W1" 30
wait_pid "$W2" 30
ok=0
[ "$e1" -ge 1 ] && [ "$e2" = "$e1" ] && [ "${n2:-0}" -gt "${n1:-0}" ] && ok=1
verdict "$ok" lease-silent-worker "a stopped worker's leases expire once; its jobs go to the other worker, none to it again (10 s, lease 3 s)" \
    "lease expiries $e1 then $e2 after 10 s; nodes $n1 -> $n2"

# 10,001 distinct positions: four pawn pushes a side on distinct files (the
# set of pawns pushed is the position, whatever the order).
python3 - "$T/many-roots.txt" <<'EOF'
import itertools, sys
lines = []
for black in itertools.combinations(range(1, 10), 4):
    for white in itertools.combinations(range(1, 10), 4):
        moves = []
        for b, w in zip(black, white):
            moves += [f"{b}g{b}f", f"{w}c{w}d"]
        lines.append("startpos moves " + " ".join(moves))
open(sys.argv[1], "w").write("\n".join(lines[:10001]) + "\n")
EOF
cp -a "$T/s/syn" "$T/many-roots"
run many-roots 60 "$BT" roots set --db "$T/many-roots" "$T/many-roots.txt"
ok=0
[ "$RC" -ne 0 ] && no_panic && grep -qiE 'MAX_ROOTS|10,?000' "$ERR" && ok=1
verdict "$ok" roots-too-many "roots set with 10,001 roots: refused naming the bound, nothing stored" "rc=$RC $(why | cut -c1-120)"

# --------------------------------------------------------------- the end
cat <<'EOF'
covered by integration tests (a gRPC client is needed; not counted here):
  forged results for positions never handed out   coordinator/tests/it/restart_leases.rs forged_results_for_positions_never_handed_out_are_rejected_and_counted
  wrong results of a killed run (unknown leases)   coordinator/tests/it/restart_leases.rs wrong_results_of_a_killed_run_are_rejected
  results of a killed run kept (predecessor lease) coordinator/tests/it/restart_leases.rs results_of_a_killed_run_are_kept
  unknown and duplicate leases                     coordinator/tests/it/service.rs unknown_and_duplicate_leases
EOF
echo "hostile pass: $NPASS PASS, $NFAIL FAIL, $NSKIP SKIP in $(($(date +%s) - STARTED)) s"
if [ "$NFAIL" -gt 0 ]; then
    echo "failed:"
    printf '  %s\n' "${FAILED[@]}"
    exit 1
fi
exit 0
