"""The fuzzer (scripts/fuzz.py) runs a bounded, seeded sample of cases on every test run, over every surface
(motion readers, constraints, --map files, .vrm tables, hostile skins, timeline options, folder outputs), and
is shown to report each kind of failure it guards against. The longer runs are in the README."""
from __future__ import annotations

import re
import subprocess
import sys

from conftest import ROOT

CASES = 2000
SEED = 20261201
NEWER_SURFACES = ("constraints_kimodo", "constraints_animotive", "map", "vrm0", "vrm1", "skin", "timeline", "folder")


def _fuzz(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "fuzz.py")] + list(args),
                          capture_output=True, text=True, timeout=1200)


def test_fuzzer_finds_no_failure_in_2000_cases():
    result = _fuzz("--cases", str(CASES), "--seed", str(SEED))
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    summary = result.stdout.strip().splitlines()[-1]
    match = re.match(r"fuzz: {} cases \(seed {}\), (\d+) read, (\d+) refused in one line, 0 failures".format(CASES, SEED),
                     summary)
    assert match, summary
    read, refused = int(match.group(1)), int(match.group(2))
    assert read + refused == CASES
    assert read > CASES // 10 and refused > CASES // 10, summary  # the mutations neither all pass nor all break
    kinds = dict((kind, int(count)) for kind, count in re.findall(r"(\w+) (\d+)", result.stdout.strip().splitlines()[-2]))
    for kind in NEWER_SURFACES:  # each surface gets its share (2,000 cases over 22 kinds: about 90)
        assert kinds.get(kind, 0) >= 40, (kind, kinds)


def test_fuzzer_reports_a_crash_a_slow_case_a_memory_hog_a_hang_a_deletion_and_a_changed_input():
    """--plant makes cases 3, 6, 9 and 12 raise ValueError, burn CPU past the limit, allocate past the
    memory cap and sleep; after cases 15 and 18 it deletes a bystander file beside the output and appends
    to the input. Each must be reported, and the cases after the hang must still run. Seed 254: the other
    cases are motion readers and constraints that pass on their own."""
    result = _fuzz("--plant", "--cases", "20", "--case-seconds", "0.5", "--hang-seconds", "8", "--seed", "254")
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    for number, words in ((3, "ValueError: planted crash"), (6, "slow: "), (9, "MemoryError"), (12, "hang: "),
                          (15, "outside the output (exit 0): deleted keep/bystander.txt"),
                          (18, "input changed: case/m.bvh")):
        assert any(line.startswith("case {} (".format(number)) and words in line for line in lines), (number, lines)
    summary = re.match(r"fuzz: 20 cases \(seed 254\), (\d+) read, (\d+) refused in one line, 6 failures", lines[-1])
    assert summary and int(summary.group(1)) + int(summary.group(2)) == 14, lines[-1]
