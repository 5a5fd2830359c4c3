#!/usr/bin/env python3
"""What `isready` before every search costs a USI engine: SEARCHES searches of one
position at NODES nodes, first each preceded by `isready`, then without, the mean
wall time per search of both printed (BENCHMARKS.md, "The USI driver and
YaneuraOu").

    scripts/usi-isready-cost.py ENGINE [NODES [SEARCHES [NAME=VALUE ...]]]

Defaults: 1000 nodes, 20 searches, options BookFile=no_book Threads=1
USI_Hash=16 when the engine has them.
"""
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    engine = sys.argv[1]
    nodes = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    searches = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    options = sys.argv[4:] or ["BookFile=no_book", "Threads=1", "USI_Hash=16"]
    p = subprocess.Popen([engine], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True, bufsize=1)

    def send(line):
        p.stdin.write(line + "\n")
        p.stdin.flush()

    def until(prefix):
        while True:
            line = p.stdout.readline()
            if not line:
                raise SystemExit(f"the engine ended while we waited for `{prefix}`")
            if line.startswith(prefix):
                return line

    send("usi")
    known = set()
    while True:
        line = until("")
        if line.startswith("option name "):
            known.add(line.split()[2])
        if line.startswith("id name "):
            print(line.strip())
        if line.strip() == "usiok":
            break
    for option in options:
        name, _, value = option.partition("=")
        if name in known:
            send(f"setoption name {name} value {value}")
    send("isready")
    until("readyok")
    send("usinewgame")
    for mode in ("isready before each search", "no isready"):
        start = time.perf_counter()
        for _ in range(searches):
            if mode.startswith("isready"):
                send("isready")
                until("readyok")
            send("position startpos moves 7g7f 3c3d")
            send(f"go nodes {nodes}")
            until("bestmove")
        per = (time.perf_counter() - start) / searches * 1000
        print(f"{mode}: {per:.1f} ms per search ({searches} searches at {nodes} nodes)")
    send("quit")
    p.wait()


if __name__ == "__main__":
    main()
