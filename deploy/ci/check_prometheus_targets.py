#!/usr/bin/env python3
"""Checks that the shipped Prometheus configurations scrape what the shipped
deployments serve, so that a healthy install fires no alert as shipped.

`promtool check config` accepts any target, and a target that does not answer
fires the critical SteraTargetDown. This script compares:

- prometheus.yml (bare metal): the coordinator job's targets (static and the
  shipped file_sd files) must be exactly the coordinator's --metrics listener of
  deploy/systemd (localhost:PORT when it listens on every interface or loopback);
  every other job ships no target (workers are listed by the operator).
- the healthy-install test of prometheus/alerts_test.yml: its coordinator `up`
  series has that instance, and every alert of alerts.yml is expected silent at
  each of its evaluation times.
- the configuration compose.yaml runs (--config.file): the coordinator's target is
  the compose service and --metrics port, workers are found by the worker
  service's DNS name on the worker's --metrics port.

usage: check_prometheus_targets.py [DEPLOY_DIR]   (default: deploy)
Exit status 1 with one line per problem.
"""

from __future__ import annotations

import glob
import re
import shlex
import sys
from pathlib import Path

import yaml

COORDINATOR_JOB = "stera-coordinator"
WORKER_JOB = "stera-worker"
# Addresses a listener answers on loopback too: Prometheus on the same host
# reaches it as localhost.
LOCAL_LISTENERS = {"0.0.0.0", "127.0.0.1", "localhost", "[::]"}
HEALTHY_TEST_PREFIX = "healthy bare-metal install"


def flag_value(words: list[str], flag: str) -> str | None:
    """The value of `--flag V` or `--flag=V` in a command line, if present."""
    for i, word in enumerate(words):
        if word == flag and i + 1 < len(words):
            return words[i + 1]
        if word.startswith(flag + "="):
            return word.split("=", 1)[1]
    return None


def split_address(address: str) -> tuple[str, str]:
    host, _, port = address.rpartition(":")
    return host, port


def env_file_words(path: Path) -> list[str]:
    """Every word of every variable's value in a systemd environment file."""
    words: list[str] = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        # ExecStart's `$VAR` (unbraced) splits the value at white space.
        for value in shlex.split(line.split("=", 1)[1]):
            words += value.split()
    return words


def job_targets(config_path: Path, job: dict) -> tuple[list[str], list[str]]:
    """(targets, other service discoveries) a job ships: static targets and the
    targets of the file_sd files that exist beside the configuration."""
    targets: list[str] = []
    for static in job.get("static_configs", []):
        targets += static.get("targets", [])
    for file_sd in job.get("file_sd_configs", []):
        for pattern in file_sd.get("files", []):
            for name in sorted(glob.glob(str(config_path.parent / pattern))):
                for group in yaml.safe_load(Path(name).read_text()) or []:
                    targets += group.get("targets", [])
    others = [
        key
        for key in job
        if key.endswith("_sd_configs") and key != "file_sd_configs"
    ]
    return targets, others


def check_bare_metal(deploy: Path, problems: list[str]) -> str | None:
    env = deploy / "systemd/coordinator.env"
    unit = deploy / "systemd/stera-coordinator.service"
    words = env_file_words(env)
    for line in re.sub(r"\\\n", " ", unit.read_text()).splitlines():
        if line.startswith("ExecStart="):
            words += shlex.split(line.split("=", 1)[1])
    metrics = flag_value(words, "--metrics")
    if metrics is None:
        problems.append(f"{env}: the coordinator has no --metrics, so nothing serves /metrics")
        return None
    host, port = split_address(metrics)
    expected = f"localhost:{port}" if host in LOCAL_LISTENERS else metrics
    config_path = deploy / "prometheus/prometheus.yml"
    config = yaml.safe_load(config_path.read_text())
    jobs = {job["job_name"]: job for job in config.get("scrape_configs", [])}
    if set(jobs) != {COORDINATOR_JOB, WORKER_JOB}:
        problems.append(f"{config_path}: jobs {sorted(jobs)}, expected {COORDINATOR_JOB} and {WORKER_JOB}")
    for name, job in jobs.items():
        targets, others = job_targets(config_path, job)
        want = [expected] if name == COORDINATOR_JOB else []
        if targets != want:
            problems.append(
                f"{config_path}: job {name} ships targets {targets}, expected {want} "
                f"(the systemd coordinator serves /metrics on {metrics}); a target "
                "that does not answer fires SteraTargetDown on a healthy install"
            )
        if others:
            problems.append(
                f"{config_path}: job {name} uses {others}: names of other setups do not "
                "resolve on bare metal"
            )
    return expected


def check_healthy_test(deploy: Path, coordinator_target: str, problems: list[str]) -> None:
    rules_path = deploy / "prometheus/alerts.yml"
    tests_path = deploy / "prometheus/alerts_test.yml"
    alerts = {
        rule["alert"]
        for group in yaml.safe_load(rules_path.read_text())["groups"]
        for rule in group["rules"]
        if "alert" in rule
    }
    tests = [
        t
        for t in yaml.safe_load(tests_path.read_text())["tests"]
        if t.get("name", "").startswith(HEALTHY_TEST_PREFIX)
    ]
    if len(tests) != 1:
        problems.append(f"{tests_path}: expected one test named '{HEALTHY_TEST_PREFIX}...', found {len(tests)}")
        return
    test = tests[0]
    up = [
        s["series"]
        for s in test["input_series"]
        if s["series"].startswith("up{") and f'job="{COORDINATOR_JOB}"' in s["series"]
    ]
    if up != [f'up{{job="{COORDINATOR_JOB}",instance="{coordinator_target}"}}']:
        problems.append(
            f"{tests_path}: the healthy test's coordinator `up` series is {up}, expected "
            f"instance {coordinator_target} (the target prometheus.yml ships)"
        )
    silent: dict[str, set[str]] = {}
    for case in test["alert_rule_test"]:
        if case.get("exp_alerts"):
            problems.append(f"{tests_path}: the healthy test expects {case['alertname']} to fire")
        silent.setdefault(case["eval_time"], set()).add(case["alertname"])
    for eval_time, names in silent.items():
        missing = sorted(alerts - names)
        if missing:
            problems.append(
                f"{tests_path}: the healthy test does not check {missing} at {eval_time}"
            )


def check_compose(deploy: Path, problems: list[str]) -> None:
    compose_path = deploy / "compose.yaml"
    compose = yaml.safe_load(compose_path.read_text())
    services = compose["services"]
    mount = next(
        (v for v in services["prometheus"].get("volumes", []) if v.endswith(":/etc/prometheus:ro")),
        None,
    )
    if mount != "./prometheus:/etc/prometheus:ro":
        problems.append(f"{compose_path}: prometheus does not mount ./prometheus at /etc/prometheus")
        return
    config_file = flag_value(services["prometheus"]["command"], "--config.file") or ""
    config_path = deploy / "prometheus" / Path(config_file).relative_to("/etc/prometheus")
    if not config_path.is_file():
        problems.append(f"{compose_path}: --config.file {config_file} is not in deploy/prometheus")
        return
    coordinator_port = split_address(flag_value(services["coordinator"]["command"], "--metrics") or "")[1]
    worker_port = split_address(flag_value(services["worker"]["command"], "--metrics") or "")[1]
    config = yaml.safe_load(config_path.read_text())
    jobs = {job["job_name"]: job for job in config.get("scrape_configs", [])}
    if set(jobs) != {COORDINATOR_JOB, WORKER_JOB}:
        problems.append(f"{config_path}: jobs {sorted(jobs)}, expected {COORDINATOR_JOB} and {WORKER_JOB}")
        return
    targets, others = job_targets(config_path, jobs[COORDINATOR_JOB])
    if targets != [f"coordinator:{coordinator_port}"] or others:
        problems.append(
            f"{config_path}: job {COORDINATOR_JOB} scrapes {targets} {others}, expected "
            f"coordinator:{coordinator_port} (the compose service's --metrics)"
        )
    targets, others = job_targets(config_path, jobs[WORKER_JOB])
    dns = jobs[WORKER_JOB].get("dns_sd_configs", [])
    if (
        targets
        or others != ["dns_sd_configs"]
        or [(d.get("names"), str(d.get("port"))) for d in dns] != [(["worker"], worker_port)]
    ):
        problems.append(
            f"{config_path}: job {WORKER_JOB} must find workers by the DNS name 'worker' on "
            f"port {worker_port} and ship no other target (has {targets}, {dns})"
        )


def main() -> int:
    deploy = Path(sys.argv[1] if len(sys.argv) > 1 else "deploy")
    problems: list[str] = []
    target = check_bare_metal(deploy, problems)
    if target is not None:
        check_healthy_test(deploy, target, problems)
    check_compose(deploy, problems)
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
