# Sourced by the scripts that measure games per second (self-play-rate.sh,
# learning-rate.sh): the book they start from and how they time and divide.
# Expects BIN (the binaries) and NODES (the built-in engine's budget), and the
# current directory to be the measuring one.
# shellcheck shell=bash

# A real book in ./book.db, grown by the built-in engine once (kept between runs).
grow_book() {
  if [ ! -d book.db ]; then
    "$BIN/coordinator" --db book.db --create --listen 127.0.0.1:0 --local-workers 2 \
      --think-limit 500 --nodes "$NODES" >grow.log 2>&1
  fi
}

# GAMES SECONDS -> games per second.
rate() { python3 -c "import sys; print(f'{int(sys.argv[1]) / float(sys.argv[2]):.2f}')" "$@"; }

# Seconds since START (a `date +%s.%N` value).
elapsed() { python3 -c "import sys, time; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$1"; }
