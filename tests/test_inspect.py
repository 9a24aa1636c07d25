"""`kimodo-rig inspect`: text and --json on real files, every number recomputed here with numpy from the
files themselves or Kimodo's reference NPZ."""
from __future__ import annotations

import json

import numpy as np
import pytest

from bvh_judge import CMU_UNIT_M, BvhFile, motion_positions, skeleton_record
from conftest import CLIPS, REFERENCE, RIGS, run_cli

JSON_KEYS = ["skeleton", "joints", "frames", "fps", "duration_s", "travelled_m", "lowest_foot_m", "max_quat_norm_error"]


def horizontal_path(roots: np.ndarray) -> float:
    return float(np.linalg.norm(np.diff(roots[:, [0, 2]], axis=0), axis=1).sum())


def foot_indices(name: str):
    record = skeleton_record(name)
    groups = record["semantic_groups"]
    return [record["joint_names"].index(n) for n in groups["left_foot_chain"] + groups["right_foot_chain"]]


def inspect_json(path) -> dict:
    result = run_cli("inspect", path, "--json")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return json.loads(result.stdout)


def expected_reference_bvh():
    with np.load(REFERENCE / "soma_01_single_text_prompt_somaskel77.npz", allow_pickle=False) as npz:
        posed = npz["posed_joints"].astype(np.float64)
        roots = npz["root_positions"].astype(np.float64)
    return {
        "skeleton": "somaskel77", "joints": 77, "frames": 150, "fps": 30.0, "duration_s": 149 / 30,
        "travelled_m": horizontal_path(roots), "lowest_foot_m": float(posed[:, foot_indices("somaskel77"), 1].min()),
    }


def expected_raw_clip(clip: str, skeleton: str, joints: int):
    folder = CLIPS / clip
    rotations = np.fromfile(folder / "local_rotations_xyzw.f32", dtype="<f4").reshape(-1, joints, 4).astype(np.float64)
    roots = np.fromfile(folder / "root_positions.f32", dtype="<f4").reshape(-1, 3).astype(np.float64)
    record = skeleton_record(skeleton)
    positions = motion_positions(record["parents"], record["rest_local_offsets_m"], rotations, roots)
    return {
        "skeleton": skeleton, "joints": joints, "frames": len(roots), "fps": 30.0, "duration_s": (len(roots) - 1) / 30,
        "travelled_m": horizontal_path(roots), "lowest_foot_m": float(positions[:, foot_indices(skeleton), 1].min()),
        "max_quat_norm_error": float(np.abs(np.linalg.norm(rotations, axis=-1) - 1.0).max()),
    }


def expected_cmu():
    judge = BvhFile(RIGS / "cmu" / "resources_131_01.bvh")
    positions = judge.positions(CMU_UNIT_M)
    feet = [judge.names.index(n) for n in ("LeftAnkle", "LeftToe", "RightAnkle", "RightToe")]
    return {
        "skeleton": "resources_131_01", "joints": 31, "frames": 994, "fps": 120.0, "duration_s": 993 / 120,
        "travelled_m": horizontal_path(positions[:, 0]), "lowest_foot_m": float(positions[:, feet, 1].min()),
    }


def check(report: dict, expected: dict, tolerance: float) -> None:
    assert list(report) == JSON_KEYS
    for key in ("skeleton", "joints", "frames", "fps"):
        assert report[key] == expected[key], key
    for key in ("duration_s", "travelled_m", "lowest_foot_m"):
        assert abs(report[key] - expected[key]) < tolerance, (key, report[key], expected[key])
    if "max_quat_norm_error" in expected:
        assert abs(report["max_quat_norm_error"] - expected["max_quat_norm_error"]) < 1e-12
    else:
        assert 0.0 <= report["max_quat_norm_error"] < 1e-12  # rotations we built from Euler angles


def test_inspect_json_on_kimodo_reference_bvh():
    check(inspect_json(REFERENCE / "soma_01_single_text_prompt.bvh"), expected_reference_bvh(), 1e-3)


def test_inspect_json_on_cmu_bvh():
    check(inspect_json(RIGS / "cmu" / "resources_131_01.bvh"), expected_cmu(), 1e-9)


@pytest.mark.parametrize("clip, skeleton, joints", [
    ("soma_02_multi_text_prompt", "somaskel30", 30), ("g1_01_single_text_prompt", "g1skel34", 34)])
def test_inspect_json_on_raw_clips(clip, skeleton, joints):
    check(inspect_json(CLIPS / clip), expected_raw_clip(clip, skeleton, joints), 1e-6)


def test_inspect_text_on_reference_bvh():
    path = REFERENCE / "soma_01_single_text_prompt.bvh"
    expected = expected_reference_bvh()
    result = run_cli("inspect", path)
    assert result.returncode == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == str(path)
    assert lines[1] == "  skeleton     SOMA (somaskel77), 77 joints"
    assert lines[2] == "  frames       150 at 30 fps, 4.97 s"
    assert lines[3] == "  travel       {:.3f} m (horizontal path of the root)".format(expected["travelled_m"])
    assert lines[4].startswith("  lowest foot  {:.3f} m (".format(expected["lowest_foot_m"]))
    assert lines[5].startswith("  health       max quaternion norm error ")
    assert len(lines) == 6


def test_inspect_bad_file_is_one_line(tmp_path):
    path = tmp_path / "walk.bvh"
    path.write_text("HIERARCHY\nROOT Hips\n{\n  OFFSET 0 0 0\n", encoding="utf-8")
    result = run_cli("inspect", path, "--json")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == "{}: line 4: file ends inside the HIERARCHY, expected '}}' (truncated?)\n".format(path)


@pytest.mark.parametrize("target", ["mannequin", "RobotExpressive.glb", "quaternius_female_dress.glb"])
def test_inspect_reads_a_retarget_output_as_a_rig_with_its_bones(target, tmp_path):
    """`inspect` refused the .glb `retarget` had just written ("joints match no Kimodo skeleton"). It now
    reads any rigged glTF: its skin's bones, frames, fps and the health figures, each recomputed here by
    pygltflib and numpy FK of the file (the travel: the root's, or down the trunk, the first joint that moves)."""
    from gltf_judge import Glb

    rig = target if target == "mannequin" else str(RIGS / "quaternius" / target)
    output = tmp_path / "walk.glb"
    made = run_cli("retarget", CLIPS / "soma_02_multi_text_prompt", "--target", rig, "-o", output)
    assert made.returncode == 0, made.stderr
    shown = run_cli("inspect", output)
    assert shown.returncode == 0 and shown.stderr == "", shown.stderr
    report = inspect_json(output)
    judge = Glb(output)
    names = judge.joint_names
    times = judge.key_times()
    positions = judge.animated_world_matrices()[:, :, :3, 3]
    parents = judge.parents()
    joints = judge.joint_nodes
    below = {n: [c for c in joints if parents[c] == n] for n in joints}
    size = lambda n: 1 + sum(size(c) for c in below[n])  # noqa: E731
    trunk = [next(n for n in joints if parents[n] not in joints)]
    while below[trunk[-1]]:
        trunk.append(max(below[trunk[-1]], key=size))
    paths = [horizontal_path(positions[:, n]) for n in trunk]
    travelled = next(p for p in paths if p > 0.001)  # the root's, else the first trunk joint's that moves
    feet = [n for n, name in zip(joints, names) if any(w in name.lower() for w in ("foot", "toe", "ankle", "heel", "ball"))]
    assert report["skeleton"] == "walk" and report["bones"] == names and report["joints"] == len(names)
    assert report["frames"] == len(times) == 227 and report["fps"] == 30.0
    assert abs(report["duration_s"] - (times[-1] - times[0])) < 1e-6
    assert abs(report["travelled_m"] - travelled) < 1e-4
    assert report["travelled_m"] > 8  # the clip walks 9 m (more for a bigger character)
    assert abs(report["lowest_foot_m"] - positions[:, feet, 1].min()) < 1e-5
    text = shown.stdout.splitlines()
    assert text[0] == str(output) and text[-1] == "  bones        " + ", ".join(names)
    assert "227 at 30 fps, 7.53 s" in shown.stdout


def test_inspect_reads_a_characters_own_clip():
    """RobotExpressive carries 14 clips of its own: the first is read at its key rate."""
    from gltf_judge import Glb

    path = RIGS / "quaternius" / "RobotExpressive.glb"
    report = inspect_json(path)
    judge = Glb(path)
    animation = judge.gltf.animations[0]
    grids = [judge.accessor(s.input)[:, 0] for s in animation.samplers]
    longest = max(grids, key=len)
    rate = round((len(longest) - 1) / (longest[-1] - longest[0]), 3)
    span = max(g[-1] for g in grids) - min(g[0] for g in grids)
    assert report["fps"] == rate and report["frames"] == round(span * rate) + 1
    assert report["bones"] == judge.joint_names and report["joints"] == 43
