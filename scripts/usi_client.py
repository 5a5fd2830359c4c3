"""A minimal USI client for the measurement scripts: start an engine, set its
options, ask for its best move in a position at a node or depth limit."""
import os
import subprocess


def engine_command(engine):
    """The command line of ENGINE: the built-in engine's `worker` binary runs
    with `--usi`; any other command is a USI engine as it is."""
    command = [engine]
    if os.path.basename(engine) == "worker":
        command.append("--usi")
    return command


class Engine:
    def __init__(self, command, options=(), go="nodes"):
        self.go = go
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self.send("usi")
        self.wait("usiok")
        for option in options:
            name, _, value = option.partition("=")
            self.send(f"setoption name {name} value {value}")
        self.send("isready")
        self.wait("readyok")

    def send(self, line):
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def wait(self, token):
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise SystemExit("the engine ended")
            if line.startswith(token):
                return line

    def best_at(self, position, limit):
        """Best move at `position` (a USI position argument: `startpos moves ...`
        or `sfen ...`) with `go nodes|depth limit`."""
        self.send("usinewgame")
        self.send(f"position {position}")
        self.send(f"go {self.go} {limit}")
        return self.wait("bestmove").split()[1]

    def best(self, moves, limit):
        """Best move after `moves` from the start position."""
        return self.best_at("startpos" + (" moves " + " ".join(moves) if moves else ""), limit)

    def value_at(self, position, limit, mate=30000):
        """The engine's value of `position` (a USI position argument) from its side
        to move, in centipawns: the last `score` printed before `bestmove` in a
        search at `go nodes|depth limit`; a mate is +-`mate`; None without a score."""
        self.send(f"position {position}")
        self.send(f"go {self.go} {limit}")
        score = None
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise SystemExit("the engine ended")
            words = line.split()
            if "score" in words[:-2]:
                kind, value = words[words.index("score") + 1: words.index("score") + 3]
                if kind == "cp":
                    score = int(value)
                elif kind == "mate":
                    score = -mate if value.startswith("-") else mate
            if line.startswith("bestmove"):
                return score
