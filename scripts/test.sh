#!/usr/bin/env bash
# The full check: formatting, lints, and every test (real engines and the cshogi
# oracle are required, so a missing install fails instead of skipping).
set -euo pipefail
cd "$(dirname "$0")/.."
# Python (the cshogi oracle, the deploy validators) from the project's venv.
# shellcheck source=scripts/python-env.sh
. scripts/python-env.sh

export STERA_REQUIRE_ENGINES=1
export STERA_REQUIRE_ORACLE=1
export STERA_REQUIRE_BROWSER=1
export STERA_REQUIRE_PROMETHEUS=1
export PATH="$PATH:/usr/games"
# A one-off build: incremental caches would only double the disk it takes.
export CARGO_INCREMENTAL=0

cargo fmt --all -- --check
python3 scripts/check-layers.py
cargo clippy --workspace --all-targets --locked -- -D warnings
# Every test in a process of its own, several at once (.config/nextest.toml); then
# the documentation's examples, which nextest does not run.
cargo nextest run --workspace --locked --no-fail-fast
cargo test --workspace --locked --doc
scripts/validate-deploy.sh
