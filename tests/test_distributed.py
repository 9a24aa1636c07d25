"""The cluster path (kimodo_rig/distributed.py) on a real dask.distributed LocalCluster of two worker
processes: the same bytes as one process, idempotent reruns, failures collected and reported at the end."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import CLIPS, ROOT, run_cli

INVALID = Path(__file__).resolve().parent / "invalid"
SUMMARY = re.compile(r"^(\d+) converted, (\d+) skipped, (\d+) failed, \d+\.\d s$")


def _on_cluster(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kimodo_rig.distributed"] + [str(a) for a in args] + ["--workers", "2"],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=600)


def test_a_local_cluster_writes_the_single_process_bytes_and_reruns_skip_what_is_done(tmp_path):
    clips = sorted(p for p in CLIPS.iterdir() if p.is_dir())
    bad = INVALID / "nan_rotation"
    # One process, as users run it: outputs named after the prompts, one line per clip in input order.
    single = tmp_path / "single"
    result = run_cli(*clips, "--outdir", single, "--jobs", "1", script="kimodo_to_glb.py")
    assert result.returncode == 0, result.stderr
    single_bytes = {clip.name: (single / line.split(":")[0]).read_bytes()
                    for clip, line in zip(clips, result.stdout.splitlines())}

    outdir = tmp_path / "cluster" / "glb"
    inputs = clips[:4] + [bad] + clips[4:]
    result = _on_cluster(*inputs, "--outdir", outdir)
    assert result.returncode == 1
    assert result.stderr == "{}: rotations are not unit quaternions\n".format(bad)  # reported at the end
    assert SUMMARY.match(result.stdout.strip()).groups() == (str(len(clips)), "0", "1"), result.stdout
    assert sorted(p.name for p in outdir.iterdir()) == sorted(clip.name + ".glb" for clip in clips)  # no .part left
    for clip in clips:
        assert (outdir / (clip.name + ".glb")).read_bytes() == single_bytes[clip.name], clip.name

    # Run again: everything present and newer than its input is skipped, untouched.
    stamps = {p.name: p.stat().st_mtime_ns for p in outdir.iterdir()}
    result = _on_cluster(*inputs, "--outdir", outdir)
    assert SUMMARY.match(result.stdout.strip()).groups() == ("0", str(len(clips)), "1"), result.stdout
    assert {p.name: p.stat().st_mtime_ns for p in outdir.iterdir()} == stamps

    # An output older than its clip is converted again, and only that one.
    stale = outdir / (clips[2].name + ".glb")
    older = min(p.stat().st_mtime_ns for p in clips[2].iterdir()) - 10 ** 9
    os.utime(stale, ns=(older, older))
    result = _on_cluster(*clips, "--outdir", outdir)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert SUMMARY.match(result.stdout.strip()).groups() == ("1", str(len(clips) - 1), "0"), result.stdout
    assert stale.read_bytes() == single_bytes[clips[2].name]
    assert stale.stat().st_mtime_ns > older
    assert {p.name: p.stat().st_mtime_ns for p in outdir.iterdir() if p != stale} == \
        {name: stamp for name, stamp in stamps.items() if name != stale.name}
