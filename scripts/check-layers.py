#!/usr/bin/env python3
"""The dependency rules of ARCHITECTURE.md ("Dependency rules"), checked on the
workspace's manifests (`cargo metadata`) and sources. Run by scripts/test.sh.

    scripts/check-layers.py

Exit status 0 when every rule holds; 1 with one line per broken rule.
"""
import json
import pathlib
import re
import subprocess
import sys

# Each package's layer: a package may depend (normal or build dependencies) only on
# packages of a lower layer. Dev-dependencies are free (tests may use anything).
LAYERS = {
    "stera-rules": 0,
    "stera-proto": 0,
    "stera-formats": 1,
    "stera-engine": 1,
    "stera-book": 2,
    "stera-games": 3,
    "stera-service": 4,
    "worker": 5,
    "coordinator": 6,
    "book-tools": 6,
    "stera-testkit": 7,
    "stera-bench-tools": 8,
}
# The domain libraries: no async runtime, no network.
NO_TOKIO = {"stera-rules", "stera-formats", "stera-engine", "stera-book", "stera-games"}
# The move generator backend (rsshogi) stays behind the rules crate; the formats
# crate uses only its game-record parsers.
BACKEND_USERS = {"stera-rules", "stera-formats"}
# Test support, never shipped: a dev-dependency of everything but the tools.
DEV_ONLY = {"stera-testkit"}
DEV_ONLY_ALLOWED_IN = {"stera-bench-tools"}


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--no-deps", "--locked"],
            cwd=root,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    problems = []
    packages = {p["name"]: p for p in meta["packages"]}
    for name in packages:
        if name not in LAYERS:
            problems.append(f"{name}: a workspace package without a layer in scripts/check-layers.py")
    for name, package in packages.items():
        layer = LAYERS.get(name)
        for dep in package["dependencies"]:
            dev = dep["kind"] == "dev"
            other = dep["name"]
            if other in LAYERS and not dev and layer is not None and LAYERS[other] >= layer:
                problems.append(f"{name} (layer {layer}) depends on {other} (layer {LAYERS[other]}): only lower layers")
            if other in DEV_ONLY and not dev and name not in DEV_ONLY_ALLOWED_IN:
                problems.append(f"{name}: {other} is test support, a dev-dependency only")
            if other == "tokio" and name in NO_TOKIO and not dev:
                problems.append(f"{name}: tokio in a domain library")
            if other == "rsshogi" and name not in BACKEND_USERS:
                problems.append(f"{name}: uses the rules backend rsshogi directly; go through stera-rules")
    # The coordinator runs local workers through the worker crate, and uses it
    # nowhere else (service plumbing is in stera-service).
    for path in sorted((root / "coordinator" / "src").rglob("*.rs")):
        if path.name == "main.rs" and path.parent.name == "src":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\bstera_worker\b", line) and not line.lstrip().startswith("//"):
                problems.append(f"{path.relative_to(root)}:{number}: uses the worker crate outside main.rs")
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print(f"dependency rules hold for {len(packages)} packages")


if __name__ == "__main__":
    main()
