#!/usr/bin/env python3
"""Checks that every command line in deploy/ uses flags the binaries really have.

Schema validators accept any string in `args:` or `ExecStart=`, so a renamed or
misspelt flag would only show when a pod crash-loops. This script collects the
stera command lines from the compose file, rendered Kubernetes manifests, the
systemd units and their environment files, and the shell blocks of the runbook,
and checks each `--flag` against the binary's own `--help` (subcommands
included, e.g. `book-tools export --help`).

usage: check_flags.py BIN_DIR [--k8s RENDERED.yaml]... FILE...
Exit status 1 with one line per unknown flag (file, line, command, flag).
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

BINARIES = ("coordinator", "worker", "book-tools")
FLAG = re.compile(r"--[a-z0-9][a-z0-9-]*")


@dataclass
class CommandLine:
    """One stera command found in a file: where it is and its words."""

    where: str
    words: list[str]


class HelpCache:
    """The long flags each (binary, subcommand path) accepts, from its --help."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.cache: dict[tuple[str, ...], set[str] | None] = {}

    def flags(self, path: tuple[str, ...]) -> set[str] | None:
        """Flags of `path` (binary then subcommands), or None if it is no command."""
        if path not in self.cache:
            exe = self.bin_dir / path[0]
            proc = subprocess.run(
                [str(exe), *path[1:], "--help"],
                capture_output=True,
                text=True,
                check=False,
            )
            self.cache[path] = (
                set(FLAG.findall(proc.stdout)) if proc.returncode == 0 else None
            )
        return self.cache[path]


def binary_of(word: str) -> str | None:
    """The stera binary a command word runs (`worker`, `/opt/stera/bin/worker`)."""
    name = word.rsplit("/", 1)[-1]
    return name if name in BINARIES else None


def unknown_flags(cmd: CommandLine, helps: HelpCache) -> list[str]:
    """Problems with one command line: flags its binary does not accept."""
    words = cmd.words
    first = next((i for i, w in enumerate(words) if binary_of(w)), None)
    if first is None:
        return []
    # `docker compose run coordinator book-tools stats --db ...`: a service named
    # like a binary may precede the real command, so take the last binary word
    # before the first flag that follows a binary word.
    end = next((i for i in range(first, len(words)) if words[i].startswith("--")), len(words))
    start = max(i for i in range(first, end) if binary_of(words[i]))
    binary = binary_of(words[start])
    assert binary is not None
    path: tuple[str, ...] = (binary,)
    rest = words[start + 1 :]
    # Subcommands: leading plain words that --help accepts as commands.
    while rest and re.fullmatch(r"[a-z][a-z0-9-]*", rest[0]):
        if helps.flags((*path, rest[0])) is None:
            break
        path = (*path, rest[0])
        rest = rest[1:]
    known = helps.flags(path)
    if known is None:
        return [f"{cmd.where}: `{' '.join(path)} --help` failed"]
    problems = []
    for word in rest:
        if word in ("|", "&&", ";", "||", ">", "2>&1"):
            break
        if not word.startswith("--"):
            continue
        flag = word.split("=", 1)[0]
        if any(c.isspace() for c in flag):
            # A quoted value that is itself flags (`--opponent "--nodes 500"`):
            # the flags of another engine's description, not of this binary.
            continue
        if flag not in known:
            problems.append(f"{cmd.where}: `{' '.join(path)}` has no flag {flag}")
    return problems


def shell_words(text: str) -> list[str]:
    """Words of a shell-like line; unbalanced quotes fall back to spaces."""
    try:
        return shlex.split(text, comments=True)
    except ValueError:
        return text.split()


def from_compose(path: Path) -> list[CommandLine]:
    """Service commands of a compose file."""
    doc = yaml.safe_load(path.read_text())
    out = []
    for name, service in (doc.get("services") or {}).items():
        command = service.get("command")
        if isinstance(command, str):
            command = shell_words(command)
        if command:
            out.append(CommandLine(f"{path} service {name}", [str(w) for w in command]))
    return out


def from_k8s(path: Path) -> list[CommandLine]:
    """Container command + args of every workload in a rendered manifest stream."""
    out = []
    for doc in yaml.safe_load_all(path.read_text()):
        if not doc:
            continue
        spec = doc.get("spec", {}).get("template", {}).get("spec", {})
        for container in spec.get("containers", []) + spec.get("initContainers", []):
            words = [str(w) for w in container.get("command", []) + container.get("args", [])]
            where = f"{path} {doc['kind']}/{doc['metadata']['name']} container {container['name']}"
            out.append(CommandLine(where, words))
    return out


def logical_lines(path: Path) -> list[tuple[int, str]]:
    """Lines with backslash continuations joined, numbered by their first line."""
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if pending is not None:
            pending = (pending[0], pending[1] + " " + line.strip())
        else:
            pending = (number, line)
        if pending[1].endswith("\\"):
            pending = (pending[0], pending[1][:-1])
            continue
        out.append(pending)
        pending = None
    if pending is not None:
        out.append(pending)
    return out


def from_systemd(path: Path) -> list[CommandLine]:
    """ExecStart= lines of a unit; `${VAR}` and `%x` words are kept as values."""
    out = []
    for number, line in logical_lines(path):
        if line.startswith("ExecStart="):
            out.append(CommandLine(f"{path}:{number}", line[len("ExecStart=") :].split()))
    return out


def from_env_file(path: Path) -> list[CommandLine]:
    """`STERA_*_ARGS=` values of an environment file, commented examples included.

    The variable name says which binary they are for (COORDINATOR or WORKER).
    """
    out = []
    pattern = re.compile(r"^#?\s*STERA_(COORDINATOR|WORKER)_ARGS=(.*)$")
    for number, line in logical_lines(path):
        match = pattern.match(line.strip())
        if match:
            binary = match.group(1).lower()
            words = shell_words(match.group(2))
            value = words[0] if len(words) == 1 else " ".join(words)
            out.append(CommandLine(f"{path}:{number}", [binary, *value.split()]))
    return out


def from_markdown(path: Path) -> list[CommandLine]:
    """Commands in fenced sh/bash/console blocks, including `cargo run -p X --`."""
    out = []
    fence: str | None = None
    pending: tuple[int, str] | None = None
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if line.lstrip().startswith("```"):
            fence = None if fence is not None else line.strip()[3:].strip()
            pending = None
            continue
        if fence not in ("sh", "bash", "console", "shell"):
            continue
        pending = (pending[0], pending[1] + " " + line.strip()) if pending else (number, line)
        if pending[1].endswith("\\"):
            pending = (pending[0], pending[1][:-1])
            continue
        words = cargo_run_to_binary(shell_words(pending[1]))
        out.append(CommandLine(f"{path}:{pending[0]}", words))
        pending = None
    return out


def cargo_run_to_binary(words: list[str]) -> list[str]:
    """`cargo run ... -p coordinator -- ARGS` becomes `coordinator ARGS`."""
    if len(words) >= 2 and words[0] == "cargo" and words[1] == "run" and "--" in words:
        sep = words.index("--")
        package = next(
            (words[i + 1] for i in range(sep) if words[i] in ("-p", "--package") and i + 1 < sep),
            None,
        )
        if package in BINARIES:
            return [package, *words[sep + 1 :]]
    return words


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bin_dir", type=Path, help="directory holding the built binaries")
    parser.add_argument("--k8s", type=Path, action="append", default=[], help="rendered manifests")
    parser.add_argument("files", type=Path, nargs="*", help="compose, unit, env and markdown files")
    args = parser.parse_intermixed_args()

    for binary in BINARIES:
        if not (args.bin_dir / binary).is_file():
            print(f"check_flags: {args.bin_dir / binary} is missing", file=sys.stderr)
            return 1

    commands: list[CommandLine] = []
    for path in args.k8s:
        commands += from_k8s(path)
    for path in args.files:
        name = path.name
        if name.endswith((".yaml", ".yml")):
            commands += from_compose(path)
        elif name.endswith(".service"):
            commands += from_systemd(path)
        elif name.endswith(".env"):
            commands += from_env_file(path)
        elif name.endswith(".md"):
            commands += from_markdown(path)
        else:
            print(f"check_flags: do not know how to read {path}", file=sys.stderr)
            return 1

    helps = HelpCache(args.bin_dir)
    problems: list[str] = []
    checked = 0
    for cmd in commands:
        if any(binary_of(w) for w in cmd.words):
            checked += 1
            problems += unknown_flags(cmd, helps)
    for problem in problems:
        print(problem, file=sys.stderr)
    if checked == 0:
        print("check_flags: found no stera command line to check", file=sys.stderr)
        return 1
    print(f"check_flags: {checked} command lines, {len(problems)} unknown flags")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
