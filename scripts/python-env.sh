# Sourced by the scripts that run Python: puts the project's virtual environment
# (`.venv`, made by scripts/install-deps.sh) first on PATH, so `python3` and the
# validators installed there are the ones every script and test runs, and Debian's
# externally managed Python (PEP 668) is never asked to hold packages.
# shellcheck shell=bash
stera_venv="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.venv"
if [ -x "$stera_venv/bin/python3" ]; then
    export PATH="$stera_venv/bin:$PATH"
    export VIRTUAL_ENV="$stera_venv"
else
    echo "note: no project venv at $stera_venv (scripts/install-deps.sh makes it); using $(command -v python3 || echo 'no python3')" >&2
fi
unset stera_venv
