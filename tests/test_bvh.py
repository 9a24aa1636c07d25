"""BVH in and out, judged by Kimodo's own numbers (reference NPZ posed_joints), an independent numpy BVH
parser with FK (bvh_judge.py), and Blender's own BVH importer and exporter."""
from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from bvh_judge import (
    CMU_UNIT_M, BvhFile, euler_matrices, matrices_to_euler, motion_positions, motion_positions_of,
    skeleton_record,
)
from conftest import CLIPS, REFERENCE, RIGS, run_blender, run_cli

from kimodo_rig import KimodoError, formats
from kimodo_rig.formats import bvh, raw
from kimodo_rig.formats.options import WriteOptions
from kimodo_rig.model import Skeleton, make_motion

SOMA_CLIPS = ("soma_01_single_text_prompt", "soma_02_multi_text_prompt")
REFERENCE_BVHS = [clip + suffix for clip in SOMA_CLIPS for suffix in ("", "_tpose_rest")]
CMU_BVH = RIGS / "cmu" / "resources_131_01.bvh"
POSITION_TOLERANCE_M = 1e-3


def reference_posed_joints(stem: str) -> np.ndarray:
    clip = stem.replace("_tpose_rest", "")
    with np.load(REFERENCE / (clip + "_somaskel77.npz"), allow_pickle=False) as npz:
        return npz["posed_joints"].astype(np.float64)


def model_positions(motion) -> np.ndarray:
    """numpy FK of our motion on the skeleton JSON's own offsets (not our Skeleton's)."""
    record = skeleton_record(motion.skeleton.name)
    assert list(record["joint_names"]) == list(motion.skeleton.joint_names)
    rotations = np.array(motion.local_rotations).reshape(motion.frame_count, motion.joint_count, 4)
    roots = np.array(motion.root_positions).reshape(motion.frame_count, 3)
    return motion_positions(record["parents"], record["rest_local_offsets_m"], rotations, roots)


# ------------------------------------------------------------------------------------ Kimodo's reference

@pytest.mark.parametrize("stem", REFERENCE_BVHS)
def test_reference_bvh_reads_to_kimodo_posed_joints(stem):
    motion = bvh.read(REFERENCE / (stem + ".bvh"))
    expected = reference_posed_joints(stem)
    assert motion.skeleton.name == "somaskel77"
    assert (motion.frame_count, motion.fps) == (len(expected), 30.0)
    error = np.abs(model_positions(motion) - expected).max(axis=(1, 2))
    assert error.max() < POSITION_TOLERANCE_M, "worst frame {} off by {:.2e} m".format(error.argmax(), error.max())


def test_reference_bvh_is_kimodo_rest_identity_not_seed_rest():
    """The two rests of the same clip are the same motion: locals agree, not just positions."""
    seed = bvh.read(REFERENCE / "soma_01_single_text_prompt.bvh")
    tpose = bvh.read(REFERENCE / "soma_01_single_text_prompt_tpose_rest.bvh")
    a = np.array(seed.local_rotations).reshape(-1, 4)
    b = np.array(tpose.local_rotations).reshape(-1, 4)
    assert np.abs(np.abs((a * b).sum(axis=1)) - 1.0).max() < 1e-6


# ------------------------------------------------------------------------------------------ variants

def _split(path):
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    motion = lines.index("MOTION")
    return lines[: motion + 3], lines[motion + 3:]


def _frames_text(frames: np.ndarray):
    return [" ".join("%.6f" % v for v in row) for row in frames]


def variant_tabs(source, target):
    header, data = _split(source)
    header = [line.replace("  ", "\t") for line in header]
    target.write_text("\n".join(header + [line.replace(" ", "\t") for line in data]) + "\n", encoding="utf-8")


def variant_crlf(source, target):
    header, data = _split(source)
    target.write_bytes(("\r\n".join(header + data) + "\r\n").encode("utf-8"))


def variant_order(order):
    """Every joint's ZYX channels re-encoded in `order` with numpy (not our writer)."""
    def make(source, target):
        judge = BvhFile(source)
        header, _ = _split(source)
        frames = judge.frames.copy()
        column = 0
        for channels in judge.channels:
            rotation_columns = [column + i for i, c in enumerate(channels) if c.endswith("rotation")]
            old_order = "".join(channels[i - column][0] for i in rotation_columns)
            matrices = euler_matrices(old_order, frames[:, rotation_columns])
            angles = matrices_to_euler(order, matrices)
            assert np.abs(euler_matrices(order, angles) - matrices).max() < 1e-9  # the judge's own check
            frames[:, rotation_columns] = angles
            column += len(channels)
        channel_words = " ".join(axis + "rotation" for axis in order)
        header = [line.replace("Zrotation Yrotation Xrotation", channel_words) for line in header]
        target.write_text("\n".join(header + _frames_text(frames)) + "\n", encoding="utf-8")
    return make


def variant_end_sites_and_six_channels(source, target):
    """End Sites under every leaf, and six channels on Spine1 (its positions = its OFFSET)."""
    judge = BvhFile(source)
    header, _ = _split(source)
    leaves = {n for j, n in enumerate(judge.names) if j not in judge.parents}
    spine = judge.names.index("Spine1")
    insert_at = sum(len(c) for c in judge.channels[:spine])
    frames = np.insert(judge.frames, [insert_at] * 3, judge.offsets[spine], axis=1)
    out, current = [], None
    for line in header:
        out.append(line)
        words = line.split()
        if words[:1] == ["JOINT"]:
            current = words[1]
        if words[:1] == ["CHANNELS"] and current == "Spine1":
            out[-1] = line.replace("CHANNELS 3", "CHANNELS 6 Xposition Yposition Zposition")
        if words[:1] == ["CHANNELS"] and current in leaves:
            indent = line[: len(line) - len(line.lstrip())]
            out += [indent + "End Site", indent + "{", indent + "  OFFSET 0.0 0.0 3.0", indent + "}"]
    target.write_text("\n".join(out + _frames_text(frames)) + "\n", encoding="utf-8")


VARIANTS = {"tabs": variant_tabs, "crlf": variant_crlf, "yxz": variant_order("YXZ"), "zxy": variant_order("ZXY"),
            "end_sites_six_channels": variant_end_sites_and_six_channels}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("stem", ["soma_01_single_text_prompt", "soma_01_single_text_prompt_tpose_rest"])
def test_variants_read_to_the_same_pose(tmp_path, stem, variant):
    source = REFERENCE / (stem + ".bvh")
    target = tmp_path / (stem + ".bvh")
    VARIANTS[variant](source, target)
    motion = bvh.read(target)
    assert motion.skeleton.name == "somaskel77"
    positions = model_positions(motion)
    assert np.abs(positions - model_positions(bvh.read(source))).max() < 1e-5
    assert np.abs(positions - reference_posed_joints(stem)).max() < POSITION_TOLERANCE_M
    # the judge agrees that the variant file itself holds that pose (Root wrapper included)
    judge = BvhFile(target)
    order = [judge.names.index(n) for n in motion.skeleton.joint_names]
    assert np.abs(judge.positions(0.01)[:, order] - positions).max() < 1e-5


# ----------------------------------------------------------------------------------------- other rigs

def test_cmu_bvh_reads_31_joints_at_120_fps_in_cmu_units():
    motion = bvh.read(CMU_BVH)
    judge = BvhFile(CMU_BVH)
    assert (motion.joint_count, motion.fps, motion.frame_count) == (31, 120.0, 994)
    assert list(motion.skeleton.joint_names) == judge.names
    assert np.abs(motion_positions_of(motion) - judge.positions(CMU_UNIT_M)).max() < 1e-9
    hips_height = judge.frames[:, 1].mean() * CMU_UNIT_M
    assert 0.85 < hips_height < 1.05  # a standing adult's pelvis: the unit is right


def test_cmu_rig_round_trips_through_our_bvh_in_centimetres(tmp_path):
    motion = bvh.read(CMU_BVH)
    bvh.write(motion, tmp_path / "cmu.bvh")
    judge = BvhFile(tmp_path / "cmu.bvh")
    expected = motion_positions_of(motion)
    assert np.abs(judge.positions(0.01) - expected).max() < 1e-6
    back = bvh.read(tmp_path / "cmu.bvh")
    assert back.fps == 120.0 and np.abs(motion_positions_of(back) - expected).max() < 1e-6


def test_units_override_and_metres_for_small_numbers(tmp_path):
    motion = bvh.read(CMU_BVH, units=0.01)
    assert np.abs(motion_positions_of(motion) - BvhFile(CMU_BVH).positions(0.01)).max() < 1e-9
    small = tmp_path / "small.bvh"
    small.write_text("HIERARCHY\nROOT a\n{\n OFFSET 0 0 0\n CHANNELS 3 Xposition Yposition Zposition\n"
                     " JOINT b\n {\n  OFFSET 0 1.5 0\n  CHANNELS 3 Xrotation Yrotation Zrotation\n"
                     "  End Site\n  {\n   OFFSET 0 0.2 0\n  }\n }\n}\nMOTION\nFrames: 1\nFrame Time: 0.04\n"
                     "0 0.5 0 90 0 0\n", encoding="utf-8")
    motion = bvh.read(small)
    assert motion.fps == 25.0 and motion.skeleton.joint_names == ("a", "b")
    assert np.allclose(motion_positions_of(motion)[0], [[0, 0.5, 0], [0, 2.0, 0]])


def test_blender_style_dummy_root_braces_on_joint_lines_and_moving_joint_warning(tmp_path, caplog):
    """A ROOT with CHANNELS 0 above two roots (what Blender writes for several root bones), '{' on the
    JOINT line, and a non-root joint whose position channels move it: kept at its OFFSET, with a warning."""
    path = tmp_path / "two_roots.bvh"
    path.write_text(
        "HIERARCHY\nROOT __0 {\n OFFSET 0 0 0\n CHANNELS 0\n"
        " JOINT a {\n  OFFSET 0 100 0\n  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation\n"
        "  End Site {\n   OFFSET 0 10 0\n  }\n }\n"
        " JOINT b {\n  OFFSET 20 0 0\n  CHANNELS 3 Yrotation Xrotation Zrotation\n }\n}\n"
        "MOTION\nFrames: 2\nFrame Time: 0.033333\n0 100 0 0 0 90 0 0 0\n5 100 0 0 0 0 0 0 0\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="kimodo_rig"):
        motion = bvh.read(path)
    assert motion.skeleton.joint_names == ("__0", "a", "b") and motion.fps == 30.0
    assert caplog.messages == ["{}: position channels move 1 joint(s) off their OFFSET (most: a, 0.050 m); bones "
                               "keep their length here, so they stay at the OFFSET".format(path)]
    assert np.allclose(motion_positions_of(motion)[:, 1], [[0, 1, 0], [0, 1, 0]])
    judge = BvhFile(path)
    assert np.allclose(judge.positions(0.01)[0], motion_positions_of(motion)[0])


def test_unknown_rig_with_a_moving_root_wrapper_folds_it(tmp_path):
    """Kimodo's file with every joint renamed is just a rig: its Root wrapper is folded into the hips
    (the motion is in the hips' position channels) and the pose is the file's own."""
    source = REFERENCE / "soma_01_single_text_prompt.bvh"
    text = source.read_text(encoding="utf-8")
    for name in skeleton_record("somaskel77")["joint_names"]:
        text = text.replace("JOINT {}\n".format(name), "JOINT x_{}\n".format(name))
    path = tmp_path / "renamed.bvh"
    path.write_text(text, encoding="utf-8")
    motion = bvh.read(path)
    assert motion.skeleton.name == "renamed" and motion.joint_count == 77
    assert motion.skeleton.joint_names[0] == "x_Hips"
    judge = BvhFile(path)
    assert np.abs(motion_positions_of(motion) - judge.positions(0.01)[:, 1:]).max() < 1e-9
    order = [motion.skeleton.joint_names.index("x_" + n) for n in skeleton_record("somaskel77")["joint_names"]]
    assert np.abs(motion_positions_of(motion)[:, order] - reference_posed_joints("soma_01_single_text_prompt")).max() \
        < POSITION_TOLERANCE_M


def test_more_than_one_root_is_refused(tmp_path):
    path = tmp_path / "roots.bvh"
    path.write_text("HIERARCHY\nROOT a\n{\n OFFSET 0 0 0\n CHANNELS 0\n}\nROOT b\n{\n OFFSET 0 0 0\n"
                    " CHANNELS 0\n}\nMOTION\nFrames: 1\nFrame Time: 0.1\n\n", encoding="utf-8")
    with pytest.raises(KimodoError) as caught:
        bvh.read(path)
    assert str(caught.value) == "{}: line 7: more than one ROOT is not supported".format(path)


def generic_skeleton():
    """A rig with non-identity rest rotations, as a retarget output has (names with a space too)."""
    rng = np.random.default_rng(7)
    rest = [tuple(q / np.linalg.norm(q)) for q in rng.normal(size=(6, 4))]
    return Skeleton("robot", ("root", "spine", "head", "arm l", "hand", "leg"), (-1, 0, 1, 1, 3, 0),
                    ((0, 0.9, 0), (0, 0.2, 0.01), (0, 0.5, 0), (0.2, 0.4, 0), (0.3, 0, 0), (0.1, -0.4, 0)),
                    tuple(rest))


def random_motion(skeleton, frames=12, seed=3, fps=24.0):
    rng = np.random.default_rng(seed)
    rotations = rng.normal(size=(frames, skeleton.joint_count, 4))
    rotations /= np.linalg.norm(rotations, axis=-1, keepdims=True)
    roots = rng.normal(size=(frames, 3))
    return make_motion(skeleton, rotations.tolist(), roots.tolist(), fps=fps), rotations, roots


def test_generic_rig_with_rest_rotations_round_trips(tmp_path):
    skeleton = generic_skeleton()
    motion, rotations, roots = random_motion(skeleton)
    path = tmp_path / "robot.bvh"
    bvh.write(motion, path)
    expected = motion_positions(skeleton.parents, skeleton.rest_offsets, rotations, roots)
    judge = BvhFile(path)
    assert judge.names == ["root", "spine", "head", "arm_l", "hand", "leg"]
    assert np.abs(judge.positions(0.01) - expected).max() < 1e-6
    assert np.abs(judge.positions(0.01)[0, 0] - expected[0, 0]).max() < 1e-6
    # zero channels = the rig's rest: the OFFSETs are the rest pose's world offsets
    rest = motion_positions(skeleton.parents, skeleton.rest_offsets, np.array([skeleton.rest_rotations]),
                            np.zeros((1, 3)))[0]
    for j, p in enumerate(skeleton.parents[1:], start=1):
        assert np.abs(judge.offsets[j] * 0.01 - (rest[j] - rest[p])).max() < 1e-7
    back = bvh.read(path)
    assert back.fps == 24.0
    assert np.abs(motion_positions_of(back) - expected).max() < 1e-6


# ------------------------------------------------------------------------------------------- writing

@pytest.mark.parametrize("rest", ["seed", "tpose"])
def test_soma_writer_matches_kimodo_layout_and_pose(tmp_path, rest):
    """Our SOMA BVH of Kimodo's motion: Kimodo's header (names, nesting, channels, offsets of that rest)
    and, read by the numpy judge, Kimodo's posed_joints."""
    clip = "soma_01_single_text_prompt"
    reference = REFERENCE / (clip + ("" if rest == "seed" else "_tpose_rest") + ".bvh")
    motion = bvh.read(reference)
    path = tmp_path / "ours.bvh"
    formats.write_file(motion, path, options=WriteOptions(rest=rest))
    ours, theirs = BvhFile(path), BvhFile(reference)
    assert ours.names == theirs.names and ours.parents == theirs.parents and ours.channels == theirs.channels
    assert np.abs(ours.offsets - theirs.offsets).max() < 1e-5  # centimetres: last of 6 decimals
    assert ours.frame_count == theirs.frame_count and abs(ours.frame_time - theirs.frame_time) < 1e-12
    order = [ours.names.index(n) for n in skeleton_record("somaskel77")["joint_names"]]
    assert np.abs(ours.positions(0.01)[:, order] - reference_posed_joints(clip)).max() < POSITION_TOLERANCE_M
    assert np.abs(ours.positions(0.01) - theirs.positions(0.01)).max() < 1e-5


def read_raw_folder(folder, joints):
    rotations = np.fromfile(folder / "local_rotations_xyzw.f32", dtype="<f4").reshape(-1, joints, 4)
    roots = np.fromfile(folder / "root_positions.f32", dtype="<f4").reshape(-1, 3)
    return rotations.astype(np.float64), roots.astype(np.float64)


def same_rotations(a, b):
    return np.abs(np.abs((a * b).sum(axis=-1)) - 1.0).max()


def raw_through_bvh(folder, tmp_path, skeleton_name, joints):
    """raw folder -> our BVH -> read back (must be `skeleton_name`) -> raw folder, read with numpy."""
    bvh.write(raw.read(folder), tmp_path / "clip.bvh")
    back = bvh.read(tmp_path / "clip.bvh")
    assert back.skeleton.name == skeleton_name
    raw.write(back, tmp_path / "back")
    return read_raw_folder(tmp_path / "back", joints)


def test_raw_soma30_round_trips_through_bvh_via_77(tmp_path):
    clip = CLIPS / "soma_01_single_text_prompt"
    rotations30, roots30 = read_raw_folder(clip, 30)
    rotations77, roots77 = raw_through_bvh(clip, tmp_path, "somaskel77", 77)
    index77 = skeleton_record("somaskel30")["somaskel77_index_of_each_joint"]
    assert same_rotations(rotations77[:, index77], rotations30) < 1e-6
    assert np.abs(roots77 - roots30).max() < 1e-6
    # the fingers Kimodo adds are its relaxed hands
    relaxed = np.array(skeleton_record("somaskel77")["relaxed_hands_rest_pose"]["quat_xyzw"])
    others = [j for j in range(77) if j not in index77]
    assert same_rotations(rotations77[:, others], relaxed[None, others]) < 1e-6


def test_raw_g1_round_trips_through_bvh(tmp_path):
    clip = CLIPS / "g1_01_single_text_prompt"
    rotations, roots = read_raw_folder(clip, 34)
    rotations_back, roots_back = raw_through_bvh(clip, tmp_path, "g1skel34", 34)
    assert same_rotations(rotations_back, rotations) < 1e-6
    assert np.abs(roots_back - roots).max() < 1e-6


def test_synthetic_smplx_round_trips_through_bvh(tmp_path):
    """SMPL-X has no public clip: a smooth synthetic one written with numpy as a raw folder."""
    frames = 40
    t = np.linspace(0, 1, frames)[:, None]
    rng = np.random.default_rng(11)
    axes = rng.normal(size=(22, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    angles = np.sin(2 * np.pi * t + rng.uniform(0, 6, 22)) * rng.uniform(0.2, 1.4, 22)  # (frames, 22) radians
    rotations = np.concatenate([axes[None] * np.sin(angles / 2)[..., None], np.cos(angles / 2)[..., None]], -1)
    roots = np.concatenate([np.sin(t) * 0.3, 0.9 + 0.05 * t, 2.0 * t], axis=1)
    folder = tmp_path / "smplx_clip"
    folder.mkdir()
    rotations.astype("<f4").tofile(folder / "local_rotations_xyzw.f32")
    roots.astype("<f4").tofile(folder / "root_positions.f32")
    motion = raw.read(folder)
    assert motion.skeleton.name == "smplx22"
    bvh.write(motion, tmp_path / "smplx.bvh")
    judge = BvhFile(tmp_path / "smplx.bvh")
    record = skeleton_record("smplx22")
    order = [judge.names.index(n) for n in record["joint_names"]]
    expected = motion_positions(record["parents"], record["rest_local_offsets_m"], rotations.astype("<f4"),
                                roots.astype("<f4"))
    assert np.abs(judge.positions(0.01)[:, order] - expected).max() < 1e-6
    rotations_back, roots_back = raw_through_bvh(folder, tmp_path, "smplx22", 22)
    assert same_rotations(rotations_back, rotations.astype("<f4")) < 1e-6
    assert np.abs(roots_back - roots.astype("<f4")).max() < 1e-6


def test_convert_cli_writes_bvh(tmp_path):
    result = run_cli("convert", CLIPS / "g1_01_single_text_prompt", tmp_path / "g1.bvh")
    assert result.returncode == 0, result.stderr
    assert BvhFile(tmp_path / "g1.bvh").names[0] == "pelvis_skel"


# ---------------------------------------------------------------------------------------- bad input

REFERENCE_SEED = REFERENCE / "soma_01_single_text_prompt.bvh"
FIRST_FRAME_LINE = 395  # HIERARCHY..} is 391 lines, then MOTION, Frames, Frame Time
VALUES_PER_FRAME = 6 + 6 + 76 * 3  # Root wrapper, Hips, 76 joints


def bad_files(tmp_path):
    """name -> (file, exact message)."""
    lines = REFERENCE_SEED.read_text(encoding="utf-8").splitlines()
    assert lines[FIRST_FRAME_LINE - 2] == "Frame Time: 0.03333333333333333"
    assert len(lines[FIRST_FRAME_LINE - 1].split()) == VALUES_PER_FRAME
    cases = {}

    def make(name, new_lines, message, end="\n"):
        path = tmp_path / (name + ".bvh")
        path.write_text("\n".join(new_lines) + end, encoding="utf-8")
        cases[name] = (path, message.format(path=path))

    make("truncated_hierarchy", lines[:120],
         "{path}: line 120: file ends inside the HIERARCHY, expected '}}' (truncated?)")
    cut = FIRST_FRAME_LINE + 40
    partial = lines[cut - 1].split()[:100]
    make("truncated_motion", lines[: cut - 1] + [" ".join(partial)[:-2]],
         "{path}: line " + str(cut) + ": file ends inside frame 41 (100 of 240 values; truncated?)", end="")
    wrong = list(lines)
    wrong[411] = " ".join(wrong[411].split()[:-1])
    make("wrong_channel_count", wrong, "{path}: line 412: expected 240 values, got 239")
    make("fewer_frames", lines[:-10], "{path}: 150 frames declared, 140 found (truncated?)")
    nan = list(lines)
    values = nan[499].split()
    values[9] = "nan"
    nan[499] = " ".join(values)
    make("nan", nan, "{path}: line 500: value 10 is nan")
    channel = list(lines)
    channel[12] = channel[12].replace("Xrotation", "Wrotation")
    make("unknown_channel", channel, "{path}: line 13: unknown channel 'Wrotation' for Spine1")
    return cases


BAD_CASES = ["truncated_hierarchy", "truncated_motion", "wrong_channel_count", "fewer_frames", "nan",
             "unknown_channel"]


@pytest.mark.parametrize("case", BAD_CASES)
def test_bad_bvh_one_line_error_and_no_output(tmp_path, case):
    inputs = tmp_path / "in"
    inputs.mkdir()
    path, message = bad_files(inputs)[case]
    with pytest.raises(KimodoError) as caught:
        bvh.read(path)
    assert str(caught.value) == message
    out = tmp_path / "out"
    out.mkdir()
    for target in ("walk.glb", "walk.bvh", "clip_folder"):
        result = run_cli("convert", path, out / target)
        assert result.returncode == 1
        assert result.stderr == message + "\n"
        assert result.stdout == ""
    assert list(out.iterdir()) == []


def test_more_frames_than_declared_warns(tmp_path, caplog):
    lines = REFERENCE_SEED.read_text(encoding="utf-8").splitlines()
    path = tmp_path / "extra.bvh"
    path.write_text("\n".join(lines + lines[-2:]) + "\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="kimodo_rig"):
        motion = bvh.read(path)
    assert motion.frame_count == 150
    assert caplog.messages == ["{}: 2 lines after the 150 declared frames ignored".format(path)]


# ------------------------------------------------------------------------------------------ Blender

def test_blender_imports_our_bvh_and_exports_bvh_we_read(tmp_path):
    """One Blender process: import our SOMA (both rests), G1 and generic BVH, compare bone heads; export
    the imported SOMA and a posed Rigify metarig with Blender, read both, compare with Blender's heads."""
    cases = {}
    soma = raw.read(CLIPS / "soma_01_single_text_prompt")
    for rest in ("seed", "tpose"):
        cases["soma_" + rest] = (soma, WriteOptions(rest=rest))
    cases["g1"] = (raw.read(CLIPS / "g1_01_single_text_prompt"), WriteOptions())
    cases["robot"] = (random_motion(generic_skeleton())[0], WriteOptions())
    spec = {"imports": [], "metarig": {"path": str(tmp_path / "metarig_blender.bvh"), "frames": [0, 5, 11]}}
    expected = {}
    for name, (motion, options) in cases.items():
        path = tmp_path / (name + ".bvh")
        bvh.write(motion, path, options)
        written = bvh.read(path)  # somaskel30 comes back as 77: compare with what the file holds
        expected[name] = (written.skeleton.joint_names, motion_positions_of(written))
        frames = [0, written.frame_count // 2, written.frame_count - 1]
        item = {"path": str(path), "scale": 0.01, "frames": frames}
        if name == "soma_seed":
            item["export"] = {"path": str(tmp_path / "soma_blender.bvh"), "scale": 100.0}
        spec["imports"].append(item)
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    result = run_blender("bvh_judge.py", spec_path)

    for (name, (names, positions)), report in zip(expected.items(), result["imports"]):
        assert report["bones"] == len(names) + (1 if name.startswith("soma") else 0)  # + Kimodo's Root
        for frame, heads in report["heads"].items():
            blender = np.array([heads[n.replace(" ", "_")] for n in names])
            error = np.abs(blender - positions[int(frame)]).max()
            assert error < POSITION_TOLERANCE_M, "{} frame {}: {:.2e} m".format(name, frame, error)

    # Blender's export of the SOMA it imported: Z-up armature space; we recognise somaskel77 in it
    exported = bvh.read(tmp_path / "soma_blender.bvh")
    assert exported.skeleton.name == "somaskel77"
    assert exported.frame_count == 150 and exported.fps == 30.0
    ours = motion_positions_of(exported)
    for frame, heads in result["imports"][0]["exported_heads"].items():
        blender = np.array([[h[0], h[2], -h[1]] for h in (heads[n] for n in exported.skeleton.joint_names)])
        assert np.abs(ours[int(frame)] - blender).max() < POSITION_TOLERANCE_M
        assert np.abs(ours[int(frame)] - expected["soma_seed"][1][int(frame)]).max() < POSITION_TOLERANCE_M

    # Blender's export of a rig it built: read as a rig of its own, in metres, as Blender had it
    metarig = result["metarig"]
    rig = bvh.read(tmp_path / "metarig_blender.bvh")
    assert metarig["matrix_world_is_identity"]
    assert rig.joint_count == metarig["bones"] and rig.skeleton.joint_names[0] == metarig["root"]
    positions = motion_positions_of(rig)
    for frame, heads in metarig["heads"].items():
        blender = np.array([heads[n] for n in rig.skeleton.joint_names])
        assert np.abs(positions[int(frame)] - blender).max() < POSITION_TOLERANCE_M
