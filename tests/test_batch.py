"""Size and batches: a 30,250-frame clip converts and self-checks, key times hold far into a clip,
`--jobs N` writes exactly what `--jobs 1` writes, a missing `--outdir` is created, and a batch closes
with its summary line. (Speed is measured in benchmarks/, never here.)"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import CLIPS, NPZ, REFERENCE, ROOT, run_cli
from gltf_judge import long_clip_world_positions, matrices_to_quats, write_raw_clip
from kimodo_rig import KimodoError, Motion
from kimodo_rig.formats import glb, raw
from test_cli_glb import _clip, _float_view, _join_glb, _split_glb

SOMA77_REFERENCES = sorted(REFERENCE.glob("*_somaskel77.npz"))
LONG_FRAMES = 30250
SUMMARY = re.compile(r"^(\d+) converted, (\d+) failed, \d+\.\d s$")


def _soma77(path: Path):
    with np.load(path) as npz:
        return matrices_to_quats(npz["local_rot_mats"]), npz["root_positions"], npz["posed_joints"].astype(np.float64)


def _tiled(array: np.ndarray, frames: int) -> np.ndarray:
    return np.concatenate([array] * (frames // len(array) + 1))[:frames]


def _digests(folder: Path):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_30250_frame_soma77_clip_converts_and_self_checks_into_a_new_folder(tmp_path):
    quats, roots, posed = _soma77(SOMA77_REFERENCES[0])
    clip = write_raw_clip(tmp_path / "marathon", _tiled(quats, LONG_FRAMES), _tiled(roots, LONG_FRAMES),
                          prompt="A person runs forward and leaps")
    outdir = tmp_path / "not" / "yet" / "there"
    result = run_cli(clip, "--outdir", outdir, script="kimodo_to_glb.py")
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert re.match(r"^runs_forward_leaps_30250\.glb: SOMA, 77 joints, 30250 frames, worst joint disagreement "
                    r"\d\.\de-0[6-9] m\n$", result.stdout), result.stdout
    assert [p.name for p in outdir.iterdir()] == ["runs_forward_leaps_30250.glb"]
    # Judged from the file by numpy: every joint at every frame on Kimodo's own posed_joints.
    times, positions = long_clip_world_positions(outdir / "runs_forward_leaps_30250.glb")
    reference = _tiled(posed, LONG_FRAMES)
    assert positions.shape == reference.shape
    assert np.linalg.norm(positions - reference, axis=-1).max() < 1e-5
    # Keys at frame/30 as float32 stores them: the nearest float32, which by 1008 s lies further from
    # frame/30 than the old fixed 1e-5 s tolerance allowed.
    exact = np.arange(LONG_FRAMES) / 30.0
    np.testing.assert_array_equal(times, exact.astype(np.float32).astype(np.float64))
    assert np.abs(times - exact).max() > 1e-5


def test_key_times_are_checked_to_half_a_float32_step_however_far_into_the_clip(tmp_path):
    """At 0.03 fps thirty frames reach 967 s, where float32 steps are 61 us: the written keys pass, and a
    key moved by one float32 step is refused."""
    clip = _clip(tmp_path / "clip", frames=30, prompt="A person runs")
    read = raw.read(clip)
    motion = Motion(read.skeleton, read.local_rotations, read.root_positions, 0.03)  # readers refuse 0.03 fps (issue 9); the writer is tested
    good = glb.encode(motion)
    assert glb.self_check(good, motion) < 1e-6
    document, binary = _split_glb(good)
    times = _float_view(document, binary, document["animations"][0]["samplers"][0]["input"], 1)
    assert float(times[-1, 0]) == pytest.approx(29 / 0.03)
    times[-1, 0] = np.nextafter(times[-1, 0], np.float32(np.inf), dtype=np.float32)
    document["accessors"][document["animations"][0]["samplers"][0]["input"]]["max"] = [float(times[-1, 0])]
    with pytest.raises(KimodoError, match="does not key the motion's 30 frames at frame/fps"):
        glb.self_check(_join_glb(document, binary), motion)


def test_jobs_write_byte_for_byte_what_one_process_writes(tmp_path):
    clips = [CLIPS / name for name in sorted(p.name for p in CLIPS.iterdir())]
    for reference in SOMA77_REFERENCES:
        quats, roots, _ = _soma77(reference)
        clips.append(write_raw_clip(tmp_path / "in" / reference.stem, quats, roots))
    clips.append(clips[0])  # a name the batch already holds: `_2`, whichever worker finishes first
    runs = {}
    for jobs in ("1", "2", "3"):
        outdir = tmp_path / ("jobs" + jobs)
        result = run_cli(*clips, "--outdir", outdir, "--jobs", jobs, script="kimodo_to_glb.py")
        assert (result.returncode, result.stderr) == (0, ""), result.stderr
        lines = result.stdout.splitlines()
        assert SUMMARY.match(lines[-1]).groups() == (str(len(clips)), "0"), lines[-1]
        runs[jobs] = (lines[:-1], _digests(outdir))
    assert len(runs["1"][1]) == len(clips)
    assert runs["2"] == runs["1"] and runs["3"] == runs["1"]


def test_convert_takes_many_inputs_into_a_new_outdir_and_jobs_change_no_byte(tmp_path):
    inputs = sorted(str(NPZ / name / "motion.npz") for name in ("soma_01_single_text_prompt", "g1_01_single_text_prompt"))
    inputs.append(str(CLIPS / "soma_02_multi_text_prompt"))
    outputs = {}
    for jobs in ("1", "2"):
        outdir = tmp_path / "made" / jobs
        result = run_cli("convert", *inputs, "--outdir", outdir, "--format", "bvh", "--jobs", jobs)
        assert (result.returncode, result.stderr) == (0, ""), result.stderr
        lines = result.stdout.splitlines()
        assert lines[:-1] == ["{}: {} -> {}".format(source, what, outdir / name) for source, what, name in (
            (inputs[0], "G1, 34 joints, 150 frames", "g1_01_single_text_prompt.bvh"),
            (inputs[1], "SOMA, 30 joints, 150 frames", "soma_01_single_text_prompt.bvh"),
            (inputs[2], "SOMA, 30 joints, 227 frames", "soma_02_multi_text_prompt.bvh"))]
        assert SUMMARY.match(lines[-1]).groups() == ("3", "0")
        outputs[jobs] = _digests(outdir)
    assert sorted(outputs["1"]) == ["g1_01_single_text_prompt.bvh", "soma_01_single_text_prompt.bvh",
                                    "soma_02_multi_text_prompt.bvh"]
    assert outputs["2"] == outputs["1"]


def test_retarget_takes_many_inputs_on_every_core_into_a_new_outdir_and_jobs_change_no_byte(tmp_path):
    """`kimodo-rig retarget clips/* --target RIG --outdir NEW`: every core by default, one line per clip in
    input order, a bad clip its one error line, the summary, exit 1; --jobs 1 and 2 write the same bytes."""
    bad = tmp_path / "broken_clip"
    bad.mkdir()
    (bad / "local_rotations_xyzw.f32").write_bytes(b"\0" * 7)
    (bad / "root_positions.f32").write_bytes(b"\0" * 12)
    inputs = [CLIPS / "soma_01_single_text_prompt", bad, CLIPS / "g1_01_single_text_prompt",
              NPZ / "soma_01_single_text_prompt" / "motion.npz"]
    names = ["soma_01_single_text_prompt.glb", "g1_01_single_text_prompt.glb", "motion.glb"]
    outputs = {}
    for jobs in ((), ("--jobs", "1"), ("--jobs", "2")):
        outdir = tmp_path / "new" / (jobs[-1] if jobs else "default")
        result = run_cli("retarget", *inputs, "--target", "mixamo", "--outdir", outdir, *jobs)
        assert result.returncode == 1
        assert result.stderr == "{}: rotation and root files disagree\n".format(bad), result.stderr
        lines = result.stdout.splitlines()
        assert [line.split(":")[0] for line in lines[:-1]] == [n[:-4] for n in names], lines
        assert [line.rsplit(" -> ", 1)[1] for line in lines[:-1]] == [str(outdir / n) for n in names]
        assert SUMMARY.match(lines[-1]).groups() == ("3", "1"), lines[-1]
        outputs[jobs] = ([line.replace(str(outdir), "OUT") for line in lines[:-1]], _digests(outdir))
    assert sorted(outputs[()][1]) == sorted(names)
    assert outputs[("--jobs", "1")] == outputs[()] and outputs[("--jobs", "2")] == outputs[()]


def test_a_batch_names_kimodo_s_motion_npz_files_by_their_clip_folders(tmp_path):
    """Kimodo writes `motion.npz` into each clip's folder: `clips/*/motion.npz` comes out named by the
    clips, not motion, motion_2, ...; a stem shared within one folder keeps the stem and a suffix."""
    from kimodo_rig import naming
    (tmp_path / "walk").mkdir()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "motion.npz").write_bytes(b"")
    (tmp_path / "walk" / "motion.npz").write_bytes(b"")
    (tmp_path / "walk" / "motion.bvh").write_bytes(b"")
    (tmp_path / "walk" / "jump.bvh").write_bytes(b"")
    got = naming.input_names([str(tmp_path / "run" / "motion.npz"), str(tmp_path / "walk" / "motion.npz"),
                              str(tmp_path / "walk" / "jump.bvh"), str(tmp_path / "walk") + os.sep])
    assert got == ["run", "walk", "jump", "walk"]
    got = naming.input_names([str(tmp_path / "walk" / "motion.npz"), str(tmp_path / "walk" / "motion.bvh")])
    assert got == ["motion", "motion"]
    inputs = [str(NPZ / name / "motion.npz") for name in ("soma_01_single_text_prompt", "g1_01_single_text_prompt")]
    outdir = tmp_path / "out"
    result = run_cli("retarget", *inputs, "--target", "mixamo", "--outdir", outdir, "--jobs", "1")
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert sorted(p.name for p in outdir.iterdir()) == ["g1_01_single_text_prompt.glb", "soma_01_single_text_prompt.glb"]


def test_convert_refuses_several_inputs_without_outdir_and_outdir_without_format(tmp_path):
    clip = str(CLIPS / "soma_02_multi_text_prompt")
    result = run_cli("convert", clip, clip, str(tmp_path / "x.bvh"))
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "kimodo-rig convert: give INPUT OUTPUT, or several inputs with --outdir DIR --format FORMAT\n"
    result = run_cli("convert", clip, "--outdir", str(tmp_path / "out"))
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "kimodo-rig convert: --outdir needs --format (the outputs' format)\n"
    assert list(tmp_path.iterdir()) == []


def test_a_batch_closes_with_its_summary_and_one_clip_prints_none(tmp_path):
    good = _clip(tmp_path / "good", prompt="A person waves")
    bad = tmp_path / "not_a_clip"
    bad.mkdir()
    result = run_cli("glb", good, bad, good, "--outdir", tmp_path / "out", "--jobs", "2")
    assert result.returncode == 1
    assert result.stderr == "{}: not a kimodo clip directory\n".format(bad)
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:-1]] == ["waves_2.glb", "waves_2_2.glb"]
    assert SUMMARY.match(lines[-1]).groups() == ("2", "1"), lines[-1]
    result = run_cli("glb", good, "--outdir", tmp_path / "one")
    assert result.returncode == 0 and len(result.stdout.splitlines()) == 1
    assert not SUMMARY.match(result.stdout.splitlines()[0])


@pytest.mark.parametrize("front_end", ["kimodo_to_glb.py", "kimodo-rig glb"])
def test_a_glb_job_imports_only_what_it_needs(tmp_path, front_end):
    clip = _clip(tmp_path / "clip", prompt="A person waves")
    if front_end == "kimodo_to_glb.py":
        argv = [str(ROOT / "kimodo_to_glb.py"), str(clip), "--outdir", str(tmp_path)]
        run = "runpy.run_path(sys.argv[0], run_name='__main__')"
    else:
        argv = ["kimodo-rig", "glb", str(clip), "--outdir", str(tmp_path)]
        run = "runpy.run_module('kimodo_rig', run_name='__main__')"
    probe = ("import atexit, runpy, sys\n"
             "atexit.register(lambda: print(' '.join(sorted(sys.modules)), file=sys.stderr))\n"
             "sys.argv = {!r}\n{}\n").format(argv, run)
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("waves_2.glb: SOMA, 30 joints, 2 frames")
    loaded = set(result.stderr.split())
    assert {"kimodo_rig.formats.glb", "kimodo_rig.formats.raw"} <= loaded
    assert not loaded & {"kimodo_rig.formats.bvh", "kimodo_rig.formats.npy", "kimodo_rig.formats.kimodo_npz",
                         "kimodo_rig.formats.amass", "kimodo_rig.formats.g1_csv", "kimodo_rig.retarget",
                         "kimodo_rig.cli.convert", "kimodo_rig.cli.retarget", "kimodo_rig.cli.inspect",
                         "concurrent.futures.process", "multiprocessing", "zipfile",
                         # the standard library's heavier corners a glb job does without (issue 11)
                         "dataclasses", "inspect", "ast", "tempfile", "random"}, sorted(loaded)
    if front_end == "kimodo_to_glb.py":  # nothing in it warns, so logging is never loaded
        assert "logging" not in loaded


def test_the_script_alone_loads_neither_pathlib_nor_argparse(tmp_path):
    """Run as a user runs it (no runpy probe, which loads importlib and pathlib itself): -X importtime
    names every module the process imports."""
    clip = _clip(tmp_path / "clip", prompt="A person waves")
    result = subprocess.run([sys.executable, "-X", "importtime", str(ROOT / "kimodo_to_glb.py"), str(clip),
                             "--outdir", str(tmp_path)], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.startswith("waves_2.glb: SOMA, 30 joints, 2 frames"), result
    loaded = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert {"kimodo_rig.formats.glb", "kimodo_rig.formats.raw", "json"} <= loaded
    # pathlib brings fnmatch, urllib.parse and ipaddress; argparse brings gettext and locale
    assert not loaded & {"pathlib", "fnmatch", "urllib.parse", "ipaddress", "importlib", "warnings",
                         "argparse", "gettext", "locale", "logging"}, sorted(loaded)


def test_the_self_checks_flat_quaternion_fk_agrees_with_4x4_matrices_on_any_hierarchy(tmp_path):
    """gltf_document's fast evaluation against its 4x4 one: on our file, with a translated and rotated
    node added above the skeleton, and (through its fallback) with a scaled node."""
    from kimodo_rig.formats import gltf_document as gd

    motion = raw.read(_clip(tmp_path / "clip", frames=5, prompt="A person runs"))
    document = gd.parse_glb(glb.encode(motion), "walk.glb")
    gltf = document.gltf
    joints = gltf["skins"][0]["joints"]
    _, channels = gd.animation_arrays(document)
    tuples = gd.animation_keyframes(document)[1]

    def agree():
        fast = list(gd.world_positions_by_frame(gltf, channels, 5, joints))
        for frame in range(5):
            matrices = gd.world_matrices(gltf, gd.keyframe_overrides(tuples, frame), joints)
            slow = [(m[12], m[13], m[14]) for m in matrices]
            # float32 quaternions are unit to ~1e-7: the two formulas part by about that along a chain
            assert np.abs(np.array(fast[frame]) - np.array(slow)).max() < 1e-6
        return fast

    plain = agree()
    gltf["nodes"].append({"name": "offset", "translation": [0.5, -1.0, 2.0], "rotation": [0.0, 0.6, 0.0, 0.8],
                          "children": [0]})
    moved = agree()
    assert np.abs(np.array(moved) - np.array(plain)).max() > 0.4
    gltf["nodes"][-1]["scale"] = [1.0, 2.0, 1.0]
    scaled = agree()
    assert np.abs(np.array(scaled) - np.array(moved)).max() > 0.1
