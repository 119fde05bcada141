#!/usr/bin/env python3
"""Cold compile cost of a build: the CPU seconds (user + sys) each translation unit takes to compile.

Compiles every C/C++ object that a ninja target needs (from `ninja -t commands TARGET`, default
`all`) again without ccache, writing the objects to a scratch folder (the build's own objects are
not touched), and prints the heaviest units and the sum. CPU time, unlike wall time, barely changes
with the machine's load, so a figure measured on a busy machine still compares with another.

    python3 scripts/compile_cpu_time.py build/release --target parity -j 2
    python3 scripts/compile_cpu_time.py build/asan --match src/statistics/ --top 10
    python3 scripts/compile_cpu_time.py build/release --match src/ops/rnn/ --sources-from ../main

(--sources-from compiles another checkout's sources, e.g. the commit before a change, with this
build's commands: every occurrence of this checkout's path in them is replaced.)

The build folder must have been configured (and its generated sources built) first; for a target
with a precompiled header, its .gch too (its own compile is then measured as one of the units).
Linking is not measured; it is a small part of a cold build.
"""

import argparse
import os
import random
import re
import shlex
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

LAUNCHERS = {"ccache", "sccache", "cmake"}


def compile_commands(build: Path, target: str) -> list[list[str]]:
    """The compiler invocations (argv, launcher removed) that building TARGET runs, objects only."""
    text = subprocess.run(["ninja", "-C", str(build), "-t", "commands", target], check=True,
                          capture_output=True, text=True).stdout
    commands = []
    for line in text.splitlines():
        argv = shlex.split(line)
        if "-c" not in argv or "-o" not in argv:
            continue
        # Drop the launcher: `ccache`, or `cmake -E env VAR=value ... ccache`.
        while argv and (os.path.basename(argv[0]) in LAUNCHERS or argv[0] in ("-E", "env")
                        or "=" in argv[0]):
            argv = argv[1:]
        commands.append(argv)
    return commands


def source_of(argv: list[str]) -> str:
    return argv[argv.index("-c") + 1]


def measure(argv: list[str], build: Path, scratch: Path, index: int) -> tuple[float, float, str]:
    """Compiles one unit into SCRATCH; returns (cpu seconds, wall seconds, source)."""
    argv = list(argv)
    argv[argv.index("-o") + 1] = str(scratch / f"{index}.o")
    if "-MF" in argv:
        argv[argv.index("-MF") + 1] = str(scratch / f"{index}.d")
    env = dict(os.environ, CCACHE_DISABLE="1")
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=build, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"compiling {source_of(argv)} failed:\n{err}")
    return usage.ru_utime + usage.ru_stime, wall, source_of(argv)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build", type=Path, help="configured build folder (build/release)")
    parser.add_argument("--target", default="all", help="ninja target whose objects to compile")
    parser.add_argument("--match", default="", help="only sources whose path matches this regex")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="compilers at once (default 1)")
    parser.add_argument("--top", type=int, default=25, help="heaviest units to list")
    parser.add_argument("--sample", type=int, default=0,
                        help="compile only this many units drawn at random (fixed seed) and scale the sum up")
    parser.add_argument("--sources-from", type=Path, help="another checkout whose sources to compile")
    args = parser.parse_args()

    build = args.build.resolve()
    commands = [c for c in compile_commands(build, args.target)
                if re.search(args.match, source_of(c))]
    root = str(Path(__file__).resolve().parents[1])
    if args.sources_from:
        other = str(args.sources_from.resolve())
        commands = [[a.replace(root, other) for a in c] for c in commands]
        commands = [c for c in commands if Path(source_of(c)).exists()]
    if not commands:
        print(f"no compile commands for target {args.target!r} matching {args.match!r}",
              file=sys.stderr)
        return 1
    population = len(commands)
    if 0 < args.sample < population:
        commands = random.Random(1).sample(commands, args.sample)
    print(f"{len(commands)} translation unit(s) of {args.target} in {build}, -j{args.jobs}",
          flush=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="parity-cpu-time-") as tmp, \
            ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda ic: measure(ic[1], build, Path(tmp), ic[0]),
                                enumerate(commands)))
    elapsed = time.monotonic() - started
    results.sort(reverse=True)
    total = sum(r[0] for r in results)
    for cpu, wall, src in results[:args.top]:
        print(f"{cpu:8.1f} s cpu {wall:8.1f} s wall  {src}")
    print(f"total: {total:.1f} CPU s over {len(results)} unit(s); {elapsed:.0f} s wall at -j{args.jobs}")
    if len(results) < population:
        print(f"estimate for all {population} unit(s): {total * population / len(results):.0f} CPU s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
