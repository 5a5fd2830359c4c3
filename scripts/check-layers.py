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


def module_of(src, path):
    """The module path of a source file: src/a/b.rs and src/a/b/mod.rs are ("a", "b")."""
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


PATH_RE = re.compile(r"\b(crate|super)((?:::[a-z_][a-z0-9_]*)+)")


def module_circles(root, src, crate_root):
    """Circles between modules of one crate (a module that uses another which, through
    any chain, uses it back), ignoring a module's use of its ancestors and
    descendants (a parent declares its children; a child uses its parent's items)."""
    files = [p for p in src.rglob("*.rs") if not (p.parent == src and p.name != crate_root and p.name in ("lib.rs", "main.rs"))]
    # A binary's main.rs and a library's lib.rs beside it are two crates.
    other_root = {"lib.rs": "main.rs", "main.rs": "lib.rs"}[crate_root]
    if (src / other_root).exists() and crate_root == "main.rs":
        files = [src / "main.rs"]  # the binary's own modules are declared in main.rs
    modules = {module_of(src, p): p for p in files}
    edges = {m: set() for m in modules}
    for module, path in modules.items():
        text = path.read_text(encoding="utf-8")
        # Tests may use anything of their parent's siblings.
        text = text.split("#[cfg(test)]")[0]
        # Doc links and comments name modules without using them.
        text = "\n".join(line.split("//")[0] for line in text.splitlines())
        for kind, tail in PATH_RE.findall(text):
            segments = tail.strip(":").split("::")
            base = () if kind == "crate" else module[:-1]
            while segments and segments[0] == "super" and kind == "super":
                base, segments = base[:-1], segments[1:]
            target = base + tuple(segments)
            while target and target not in modules:
                target = target[:-1]
            if not target or target == module:
                continue
            if target[: len(module)] == module or module[: len(target)] == target:
                continue  # ancestor or descendant
            edges[module].add(target)
    problems = []
    state = {}
    stack = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(edges[m]):
            if state.get(n) == 1:
                circle = stack[stack.index(n):] + [n]
                problems.append(
                    f"{src.relative_to(root)}: modules import each other in a circle: "
                    + " -> ".join("::".join(c) or "crate" for c in circle)
                )
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(modules):
        if m not in state:
            visit(m)
    return problems


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
    for crate_src in sorted(root.glob("**/src/lib.rs")) + sorted(root.glob("**/src/main.rs")):
        if "target" in crate_src.parts:
            continue
        problems.extend(module_circles(root, crate_src.parent, crate_src.name))
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print(f"dependency rules hold for {len(packages)} packages")


if __name__ == "__main__":
    main()
