"""The fuzzer (scripts/fuzz.py) runs a bounded, seeded sample of cases on every test run, and is shown to
report each kind of failure it guards against. The longer runs are in the README."""
from __future__ import annotations

import re
import subprocess
import sys

from conftest import ROOT

CASES = 2000
SEED = 20261201


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


def test_fuzzer_reports_a_crash_a_slow_case_a_memory_hog_and_a_hang():
    """--plant makes cases 3, 6, 9 and 12 raise ValueError, burn CPU past the limit, allocate past the
    memory cap and sleep; each must be reported, and the cases after the hang must still run."""
    result = _fuzz("--plant", "--cases", "16", "--case-seconds", "0.5", "--hang-seconds", "8", "--seed", "1")
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    for number, words in ((3, "ValueError: planted crash"), (6, "slow: "), (9, "MemoryError"), (12, "hang: ")):
        assert any(line.startswith("case {} (".format(number)) and words in line for line in lines), (number, lines)
    summary = re.match(r"fuzz: 16 cases \(seed 1\), (\d+) read, (\d+) refused in one line, 4 failures", lines[-1])
    assert summary and int(summary.group(1)) + int(summary.group(2)) == 12, lines[-1]
