#!/usr/bin/env python3
"""Small helpers of scripts/hostile-pass.sh (one subcommand each).

  games FILE                 5,184 distinct legal games as USI lines (4 pawn moves each)
  data-end FILE              offset after the last byte that is not zero (sled preallocates)
  closed-stdout CMD...       run CMD with standard output a pipe whose reader has already
                             closed it (what `| head` does, without the race); exit with its status
  closed-stderr CMD...       the same with standard error (a log pipe whose reader died)
  slow-writer FILE N SECS    write FILE's first N bytes to stdout, wait SECS, write the rest
  tree-sum DIR               one digest of every name, link target and file content under DIR
  json-field URL FIELD       GET URL (JSON) and print FIELD
  metric URL NAME            GET URL (Prometheus text) and print the value of the line NAME
  longest-line FILE          length of FILE's longest line
"""
import hashlib
import json
import os
import subprocess
import sys
import time
import urllib.request


def games(path):
    black = [f"{f}g{f}f" for f in range(1, 10)]
    white = [f"{f}c{f}d" for f in range(1, 10)]
    lines = []
    for b1 in black:
        for w1 in white:
            for b2 in black:
                if b2 == b1:
                    continue
                for w2 in white:
                    if w2 == w1:
                        continue
                    lines.append(f"startpos moves {b1} {w1} {b2} {w2}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(len(lines))


def data_end(path):
    with open(path, "rb") as f:
        data = f.read()
    print(len(data.rstrip(b"\0")))


def closed_pipe(cmd, stream):
    read_end, write_end = os.pipe()
    os.close(read_end)
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, **{stream: write_end})
    os.close(write_end)
    code = proc.returncode
    sys.exit(128 - code if code < 0 else code)


def slow_writer(path, first, pause):
    with open(path, "rb") as f:
        data = f.read()
    out = sys.stdout.buffer
    try:
        out.write(data[:first])
        out.flush()
        time.sleep(pause)
        out.write(data[first:])
        out.flush()
    except BrokenPipeError:
        pass


def tree_sum(root):
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]):
            path = os.path.join(dirpath, name)
            digest.update(os.path.relpath(path, root).encode() + b"\0")
            if os.path.islink(path):
                digest.update(b"link:" + os.readlink(path).encode())
            else:
                with open(path, "rb") as f:
                    digest.update(f.read())
        for name in dirnames:
            digest.update(b"dir:" + os.path.relpath(os.path.join(dirpath, name), root).encode())
    print(digest.hexdigest())


def get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def json_field(url, field):
    print(json.loads(get(url))[field])


def metric(url, name):
    for line in get(url).splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            print(line.rsplit(" ", 1)[1])
            return
    print("none")


def longest_line(path):
    with open(path, "rb") as f:
        print(max((len(line) for line in f), default=0))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "games":
        games(args[0])
    elif cmd == "data-end":
        data_end(args[0])
    elif cmd == "closed-stdout":
        closed_pipe(args, "stdout")
    elif cmd == "closed-stderr":
        closed_pipe(args, "stderr")
    elif cmd == "slow-writer":
        slow_writer(args[0], int(args[1]), float(args[2]))
    elif cmd == "tree-sum":
        tree_sum(args[0])
    elif cmd == "json-field":
        json_field(args[0], args[1])
    elif cmd == "metric":
        metric(args[0], args[1])
    elif cmd == "longest-line":
        longest_line(args[0])
    else:
        sys.exit(f"unknown helper command {cmd}")


if __name__ == "__main__":
    main()
