"""SMPL-X AMASS NPZ: what we write, read back by numpy and checked against Kimodo's definitions
(kimodo/exports/smplx.py) recomputed here with numpy; round trips; the registry tells AMASS from Kimodo
NPZ by content."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from conftest import CLIPS
from kimodo_rig import skeletons
from kimodo_rig.errors import KimodoError
from kimodo_rig.formats import amass, format_for, kimodo_npz, raw, read_file, write_file
from kimodo_rig.model import make_motion
from kimodo_rig.ops.fk import world_positions
from gltf_judge import quats_to_matrices
from test_npz import assert_cli_refuses

# Kimodo (y-up, +z forward) -> AMASS (z-up, +y forward), as kimodo_y_up_to_amass_coord_rotation_matrix.
Y = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]])
Y = np.diag([-1.0, -1.0, 1.0]) @ Y


def synthetic_smplx_motion(frames=24, fps=30.0, seed=7):
    """A made-up SMPL-X walk: smooth random joint rotations up to ~50 degrees, a turning root."""
    rng = random.Random(seed)
    skeleton = skeletons.load("smplx22")
    phases = [(rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(0, 6)) for _ in range(22)]
    rotations, roots = [], []
    for frame in range(frames):
        t = frame / fps
        pose = []
        for joint, (ax, ay, az, phase) in enumerate(phases):
            angle = 0.9 * math.sin(2.0 * t + phase) if joint else 1.5 * t
            axis = (ax, ay, az) if joint else (0.0, 1.0, 0.0)
            n = math.sqrt(sum(c * c for c in axis))
            s = math.sin(angle / 2) / n
            pose.append((axis[0] * s, axis[1] * s, axis[2] * s, math.cos(angle / 2)))
        rotations.append(pose)
        roots.append((0.3 * t, 0.92 + 0.02 * math.sin(5 * t), 1.1 * t))
    return make_motion(skeleton, rotations, roots, fps, name="synthetic_smplx")


def rodrigues(vectors):
    angle = np.linalg.norm(vectors, axis=-1, keepdims=True)
    axis = np.where(angle > 0, vectors / np.where(angle > 0, angle, 1), 0)
    x, y, z = axis[..., 0], axis[..., 1], axis[..., 2]
    zero = np.zeros_like(x)
    k = np.stack([np.stack([zero, -z, y], -1), np.stack([z, zero, -x], -1), np.stack([-y, x, zero], -1)], -2)
    a = angle[..., None]
    return np.eye(3) + np.sin(a) * k + (1 - np.cos(a)) * (k @ k)


def test_written_amass_has_kimodos_keys_and_definitions(tmp_path):
    motion = synthetic_smplx_motion()
    output = tmp_path / "walk.npz"
    amass.write(motion, output)
    data = np.load(output, allow_pickle=False)
    frames = motion.frame_count
    expected = {
        "trans": ((frames, 3), np.float32), "root_orient": ((frames, 3), np.float32),
        "pose_body": ((frames, 63), np.float32), "betas": ((16,), np.float64), "num_betas": ((), np.int64),
        "mocap_frame_rate": ((), np.float64), "pose_jaw": ((frames, 3), np.float64),
        "pose_eye": ((frames, 6), np.float64), "pose_hand": ((frames, 90), np.float64),
        "mocap_time_length": ((), np.float64),
    }
    for key, (shape, dtype) in expected.items():
        assert data[key].shape == shape and data[key].dtype == dtype, key
    assert str(data["gender"]) == "neutral" and str(data["surface_model_type"]) == "smplx"
    assert float(data["mocap_frame_rate"]) == 30.0 and int(data["num_betas"]) == 16
    assert abs(float(data["mocap_time_length"]) - frames / 30.0) < 1e-12

    quats = np.array(motion.local_rotations).reshape(frames, 22, 4)
    local = quats_to_matrices(quats)
    roots = np.array(motion.root_positions).reshape(frames, 3)
    pelvis = np.array(skeletons.data("smplx22")["root_rest_position_m"])
    # trans = Y root - pelvis_rest; root_orient = Y R_root; pose_body = the 21 local rotations
    assert np.abs(data["trans"] - (roots @ Y.T - pelvis)).max() < 1e-6
    assert np.abs(rodrigues(data["root_orient"].astype(np.float64)) - Y @ local[:, 0]).max() < 1e-5
    body = rodrigues(data["pose_body"].astype(np.float64).reshape(frames, 21, 3))
    assert np.abs(body - local[:, 1:]).max() < 1e-5
    # z is up in AMASS: the character stands with its head above its pelvis in +z
    head = np.array(world_positions(motion))[0, skeletons.data("smplx22")["joint_names"].index("head")]
    assert (Y @ head)[2] > (Y @ roots[0])[2] + 0.3


def test_amass_round_trip_on_smplx(tmp_path):
    motion = synthetic_smplx_motion()
    amass.write(motion, tmp_path / "walk.npz")
    back = read_file(tmp_path / "walk.npz")
    assert back.skeleton.name == "smplx22" and back.fps == 30.0 and back.frame_count == motion.frame_count
    before, after = np.array(world_positions(motion)), np.array(world_positions(back))
    assert np.abs(before - after).max() < 1e-5  # float32 in the file
    a = np.array(motion.local_rotations).reshape(-1, 4)
    b = np.array(back.local_rotations).reshape(-1, 4)
    assert np.abs(np.abs((a * b).sum(-1)) - 1).max() < 1e-6


def test_raw_amass_raw_round_trip(tmp_path):
    motion = synthetic_smplx_motion(frames=12)
    raw.write(motion, tmp_path / "clip")
    write_file(raw.read(tmp_path / "clip"), tmp_path / "clip.npz", format="amass")
    raw.write(read_file(tmp_path / "clip.npz"), tmp_path / "back")
    back = raw.read(tmp_path / "back")
    assert np.abs(np.array(world_positions(back)) - np.array(world_positions(motion))).max() < 1e-5


def test_registry_tells_amass_from_kimodo_npz_by_content(tmp_path):
    amass.write(synthetic_smplx_motion(frames=4), tmp_path / "a.npz")
    kimodo_npz.write(synthetic_smplx_motion(frames=4), tmp_path / "k.npz")
    assert format_for(tmp_path / "a.npz") is amass
    assert format_for(tmp_path / "k.npz") is kimodo_npz
    assert format_for(tmp_path / "new.npz", reading=False) is kimodo_npz
    assert read_file(tmp_path / "k.npz").foot_contacts is not None


def test_older_amass_poses_key_and_fps(tmp_path):
    """Original AMASS files hold `poses` (root, body, hands) and `mocap_framerate`."""
    motion = synthetic_smplx_motion(frames=6)
    amass.write(motion, tmp_path / "new.npz")
    new = np.load(tmp_path / "new.npz", allow_pickle=False)
    poses = np.concatenate([new["root_orient"], new["pose_body"], np.zeros((6, 90), np.float32)], axis=1)
    np.savez(tmp_path / "old.npz", trans=new["trans"], poses=poses, mocap_framerate=np.array(120.0),
             gender=np.array("female"), betas=np.zeros(16))
    old = read_file(tmp_path / "old.npz")
    assert old.fps == 120.0
    assert np.abs(np.array(world_positions(old)) - np.array(world_positions(motion))).max() < 1e-5


def test_soma_to_amass_is_refused(tmp_path):
    output = tmp_path / "out.npz"
    assert_cli_refuses(CLIPS / "soma_01_single_text_prompt", output, "{}: AMASS holds SMPL-X motion; SOMA (30 "
                       "joints) to SMPL-X is retargeting, not conversion".format(output), "--format", "amass")


def test_mismatched_amass_arrays_are_refused(tmp_path):
    np.savez(tmp_path / "bad.npz", trans=np.zeros((4, 3)), root_orient=np.zeros((4, 3)), pose_body=np.zeros((3, 63)))
    with pytest.raises(KimodoError) as error:
        read_file(tmp_path / "bad.npz")
    assert str(error.value) == "{}: root_orient [4, 3] and pose_body [3, 63] do not match trans [4, 3]".format(
        tmp_path / "bad.npz")
