#!/usr/bin/env python3
"""A hostile USI engine for scripts/hostile-pass.sh: each mode misbehaves in
one way a real engine (or a broken build of one) can, so that the search
timeout, the line cap, the handshake timeout and the `info` cap of the USI
reader are tried against real processes.

Modes (the first argument):
  flood-info               handshake, then on `go` `info` lines as fast as it can, never `bestmove`
  trickle-info             handshake, then on `go` one `info` line a millisecond, never `bestmove`
  endless-line             handshake, then on `go` one line that never ends
  silent-go                handshake, then silence after `go`
  flood-stderr             handshake, then on `go` endless bytes on stderr, never `bestmove`
  no-usiok                 never answers `usi`
  flood-options            answers `usi` with `option` lines without end (no `usiok`)
  flood-info-before-usiok  answers `usi` with `info string` lines without end
  endless-id               answers `usi` with an `id name` line that never ends
"""
import os
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "flood-info"
OUT = sys.stdout.buffer


def send(line):
    OUT.write(line.encode() + b"\n")
    OUT.flush()


def forever(stream, chunk):
    """Writes `chunk` until the reader goes away (the engine was killed or its pipe closed)."""
    try:
        while True:
            stream.write(chunk)
    except OSError:
        os._exit(0)


def answer_usi():
    if MODE == "no-usiok":
        return
    if MODE == "flood-options":
        forever(OUT, b"option name Junk type spin default 1 min 0 max 9\n" * 2000)
    if MODE == "flood-info-before-usiok":
        forever(OUT, b"info string hello\n" * 4000)
    if MODE == "endless-id":
        OUT.write(b"id name ")
        forever(OUT, b"x" * 65536)
    send("id name hostile-fake")
    send("id author nobody")
    send("usiok")


def answer_go():
    if MODE == "flood-info":
        forever(OUT, b"info depth 1 seldepth 1 score cp 10 nodes 1 nps 1 pv 7g7f\n" * 2000)
    if MODE == "trickle-info":
        try:
            while True:
                send("info depth 1 score cp 10 nodes 1 pv 7g7f")
                time.sleep(0.001)
        except OSError:
            os._exit(0)
    if MODE == "endless-line":
        OUT.write(b"info string ")
        forever(OUT, b"y" * 65536)
    if MODE == "silent-go":
        return
    if MODE == "flood-stderr":
        forever(sys.stderr.buffer, b"z" * 65536)
    send("bestmove resign")


def main():
    for raw in sys.stdin:
        cmd = raw.strip()
        if cmd == "usi":
            answer_usi()
        elif cmd == "isready":
            send("readyok")
        elif cmd.startswith("go"):
            answer_go()
        elif cmd == "quit":
            return


if __name__ == "__main__":
    try:
        main()
    except OSError:
        pass
