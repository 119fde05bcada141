"""Cost of recording debug replay steps against the number of steps (issue 39, item 9: each step
rewrote and fsynced the whole replay, so n steps cost O(n^2); the journal makes them O(n)).

    python bench/debug_replay_steps.py [--build build/release] [--steps 1000,4000] [--before PARITY]

For each count N: `parity debug repeat --until N --save-debug-replay replay.json --check true` (every
check passes, so N checks and N steps; debug repeat always saves a replay), timed, with the bytes the
process wrote (/proc's wchar of the child, read by a small launcher). Prints per N the seconds and
bytes written per step, and the ratio of the per-step cost at the largest N to the smallest: ~1 when
recording is linear (each check costs the same), ~N ratio when quadratic. --before runs another
parity binary (main's, say) the same way, side by side.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Runs argv[1:] and prints the child's wchar (bytes passed to write) read from /proc before it is reaped.
LAUNCHER = r"""
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
wchar = 0
with open(f"/proc/{pid}/io") as io:
    for line in io:
        if line.startswith("wchar:"):
            wchar = int(line.split()[1])
_, status = os.waitpid(pid, 0)
print(wchar, os.waitstatus_to_exitcode(status))
"""


def run(command, cwd):
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", LAUNCHER, *command], cwd=cwd, capture_output=True, text=True,
                         check=True)
    seconds = time.perf_counter() - start
    wchar, code = (int(v) for v in out.stdout.split()[-2:])
    if code != 0:
        raise SystemExit(f"{' '.join(command)} exited {code}")
    return seconds, wchar


def measure(parity, steps, folder):
    replay = os.path.join(folder, "replay.json")
    seconds, written = run([parity, "debug", "repeat", "--until", str(steps), "--save-debug-replay", replay,
                            "--check", "true"], folder)
    return seconds / steps, written / steps, os.path.getsize(replay)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--steps", default="1000,4000")
    parser.add_argument("--before", help="another parity binary, run the same way")
    args = parser.parse_args()
    counts = [int(v) for v in args.steps.split(",")]
    binaries = [("this build", os.path.join(args.build, "tools", "parity", "parity"))]
    if args.before:
        binaries.append(("--before", args.before))
    with tempfile.TemporaryDirectory() as folder:
        for label, parity in binaries:
            per_step = {}
            for steps in counts:
                seconds, written, size = measure(parity, steps, folder)
                per_step[steps] = (seconds, written)
                print(f"{label}: {steps} steps: replay {size} bytes | per step {seconds * 1e3:.2f} ms, "
                      f"{written:.0f} bytes written per step ({written * steps / size:.1f}x the replay)")
            small, large = counts[0], counts[-1]
            print(f"{label}: per-step cost at {large} / at {small} steps: time x{per_step[large][0] / per_step[small][0]:.2f}, "
                  f"bytes x{per_step[large][1] / per_step[small][1]:.2f} (linear recording: ~1; quadratic: ~{large / small:.0f})")


if __name__ == "__main__":
    main()
