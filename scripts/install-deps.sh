#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian machine with the Rust
# toolchain: the real USI engines the engine tests drive, and the independent
# move-generation oracle (cshogi) the rules tests compare against.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends gpsshogi fairy-stockfish

python3 -m pip install -q --disable-pip-version-check cshogi

rustup component add clippy rustfmt >/dev/null 2>&1 || true
