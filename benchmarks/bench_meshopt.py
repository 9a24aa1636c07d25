"""The meshopt attribute decoder (kimodo_rig/formats/meshopt.py) at N and 10N elements, and against the
decoder before issue 38 (per-byte Python loops), taken from git and run in this process.

    python3 benchmarks/bench_meshopt.py [--repeats 3] [--elements 20000] [--old-commit 2156062]

Streams: tests/meshopt_streams.py (random deltas, mostly small as smooth vertex data gives, or of any group
size; version 0 and version 1), stride 16
(a position and a packed normal, or a joint/weight pair). CPU seconds, medians of the repeats; MB is of
the stream (the file's bytes). The ratio 10N/N near 10 is linear."""
from __future__ import annotations

import argparse
import subprocess
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from kimodo_rig.formats import meshopt  # noqa: E402
from bench_linear import median_seconds  # noqa: E402 - CPU seconds, median of the repeats
from meshopt_streams import random_stream  # noqa: E402

STRIDE = 16


def old_decoder(commit: str):
    """meshopt.py as it was at `commit`, as a module; None when git cannot give it."""
    try:
        source = subprocess.run(["git", "-C", str(ROOT), "show", "{}:kimodo_rig/formats/meshopt.py".format(commit)],
                                capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    module = types.ModuleType("meshopt_before")
    exec(compile(source, "meshopt_before.py", "exec"), module.__dict__)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--elements", type=int, default=20000)
    parser.add_argument("--old-commit", default="2156062")
    args = parser.parse_args()
    before = old_decoder(args.old_commit)
    print("{:<14} {:>8} {:>7} {:>9} {:>8} {:>9} {:>9}".format("version, deltas", "elements", "MB", "s", "s/MB", "before s", "speedup"))
    for version, small in ((0, True), (1, True), (0, False), (1, False)):
        timed = []
        label = "{}, {}".format(version, "small" if small else "any")
        for count in (args.elements, 10 * args.elements):
            stream = random_stream(count, STRIDE, version, seed=count, small_deltas=small)
            ours = median_seconds(lambda: meshopt.decode_attributes(stream, count, STRIDE), args.repeats)
            old = "-"
            speedup = "-"
            if before is not None and count == args.elements:  # the old decoder once, at N: it is slow
                seconds = median_seconds(lambda: before.decode_attributes(stream, count, STRIDE), 1)
                assert before.decode_attributes(stream, count, STRIDE) == meshopt.decode_attributes(stream, count, STRIDE)
                old, speedup = "{:.3f}".format(seconds), "{:.1f}x".format(seconds / ours)
            megabytes = len(stream) / 1e6
            timed.append(ours)
            print("{:<14} {:>8} {:>7.2f} {:>9.3f} {:>8.2f} {:>9} {:>9}".format(label, count, megabytes, ours, ours / megabytes, old, speedup))
        print("{:<14} 10N/N = {:.1f}".format(label, timed[1] / timed[0]))


if __name__ == "__main__":
    main()
