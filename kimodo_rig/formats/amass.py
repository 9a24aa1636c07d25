"""SMPL-X motion as an AMASS-style NPZ, the way Kimodo's kimodo/exports/smplx.py (Apache-2.0) writes and
reads it, on the smplx22 skeleton.

AMASS is z-up with the body facing +Y; Kimodo is y-up facing +Z. Kimodo maps a Kimodo vector v to AMASS
as Y v with Y = [[-1, 0, 0], [0, 0, 1], [0, 1, 0]], and defines
  trans       = Y root_position - pelvis_rest       (pelvis_rest = smplx22's root_rest_position_m,
                                                     the SMPL-X pelvis of the zero pose, y = -0.372)
  root_orient = axis-angle of Y R_root               (the body's own frame stays y-up)
  pose_body   = axis-angle of the 21 local rotations after the pelvis, in joint order.
Reading inverts that. `poses` (the older AMASS key, root + body + hands) is read when root_orient and
pose_body are absent.
"""
from __future__ import annotations

from array import array
from pathlib import Path
from typing import List, Optional

from .. import skeletons
from ..errors import KimodoError
from ..model import Motion
from ..rotations import (
    matrix_apply, matrix_multiply, matrix_to_quat, matrix_transpose, quat_to_matrix, quat_to_rotation_vector,
    rotation_vector_to_quat,
)
from . import npy
from .kimodo_npz import require_finite
from .limits import frame_rate
from .options import DEFAULT, WriteOptions

NAME = "amass"
DESCRIPTION = "SMPL-X AMASS NPZ (trans, root_orient, pose_body, mocap_frame_rate; z-up)"
EXTENSIONS = (".npz",)
KIMODO_TO_AMASS = ((-1.0, 0.0, 0.0), (0.0, 0.0, 1.0), (0.0, 1.0, 0.0))
BODY_JOINTS = 21
# Kimodo fills these from its smplx22 assets (beta.npy, mean_hands.npy) and falls back to zeros when the
# files are missing; the assets are not redistributable here, so the fallback is what we write.
BETA_COUNT = 16
HAND_VALUES = 90
MAX_ROTATION_VECTOR = 1e4  # radians; AMASS angles are below 2 pi, and 1e154 overflows squaring


def recognises(path) -> bool:
    names = set(npy.npz_names(path))
    return "trans" in names and ({"root_orient", "pose_body"} <= names or "poses" in names)


def read(path, *, fps: Optional[float] = None) -> Motion:
    if not recognises(path):
        raise KimodoError("{}: not an AMASS NPZ (needs trans, and root_orient with pose_body or poses)".format(path))
    arrays = npy.read_npz(path, ("trans", "root_orient", "pose_body", "poses", "mocap_frame_rate", "mocap_framerate"),
                          numbers=True)
    trans = arrays["trans"]
    if len(trans.shape) != 2 or trans.shape[1] != 3 or trans.shape[0] == 0:
        raise KimodoError("{}: trans has shape {}, expected [frames, 3]".format(path, list(trans.shape)))
    frames = trans.shape[0]
    if "root_orient" in arrays and "pose_body" in arrays:
        root_orient, pose_body = arrays["root_orient"], arrays["pose_body"]
        if root_orient.shape != (frames, 3) or pose_body.shape != (frames, BODY_JOINTS * 3):
            raise KimodoError("{}: root_orient {} and pose_body {} do not match trans [{}, 3]".format(
                path, list(root_orient.shape), list(pose_body.shape), frames))
        root_values, body_values, stride, body_start = root_orient.values, pose_body.values, None, 0
    else:
        poses = arrays["poses"]
        if len(poses.shape) != 2 or poses.shape[0] != frames or poses.shape[1] < 3 + BODY_JOINTS * 3:
            raise KimodoError("{}: poses has shape {}, expected [{}, at least 66]".format(path, list(poses.shape), frames))
        root_values = body_values = poses.values
        stride, body_start = poses.shape[1], 3
    for key in ("trans", "root_orient", "pose_body", "poses"):
        if key in arrays:
            require_finite(path, key, arrays[key].values)
            if key != "trans" and any(abs(v) > MAX_ROTATION_VECTOR for v in arrays[key].values):
                raise KimodoError("{}: {} holds an angle beyond {:g} radians: not a rotation vector".format(
                    path, key, MAX_ROTATION_VECTOR))
    rate = arrays.get("mocap_frame_rate") or arrays.get("mocap_framerate")
    file_fps = frame_rate(rate.values[0], str(path), "mocap_frame_rate") if rate is not None and rate.size == 1 else None

    skeleton = skeletons.load("smplx22")
    pelvis_rest = skeletons.data("smplx22")["root_rest_position_m"]
    to_kimodo = matrix_transpose(KIMODO_TO_AMASS)
    rotations = array("d")
    roots = array("d")
    for frame in range(frames):
        t = trans.values[frame * 3:frame * 3 + 3]
        roots.extend(matrix_apply(to_kimodo, [t[k] + pelvis_rest[k] for k in range(3)]))
        root_start = frame * (stride or 3)
        root_amass = quat_to_matrix(rotation_vector_to_quat(root_values[root_start:root_start + 3]))
        rotations.extend(matrix_to_quat(matrix_multiply(to_kimodo, root_amass)))
        body = frame * (stride or BODY_JOINTS * 3) + body_start
        for joint in range(BODY_JOINTS):
            rotations.extend(rotation_vector_to_quat(body_values[body + joint * 3:body + joint * 3 + 3]))
    chosen_fps = file_fps or (frame_rate(fps, str(path)) if fps else 30.0)  # --fps only where the file carries none
    return Motion(skeleton, rotations, roots, chosen_fps, name=Path(path).stem)


def write(motion: Motion, path, options: WriteOptions = DEFAULT) -> None:
    if motion.skeleton.name != "smplx22":
        raise KimodoError("{}: AMASS holds SMPL-X motion; {} ({} joints) to SMPL-X is retargeting, not "
                          "conversion".format(path, motion.skeleton.label, motion.joint_count))
    pelvis_rest = skeletons.data("smplx22")["root_rest_position_m"]
    frames = motion.frame_count
    trans: List[float] = []
    root_orient: List[float] = []
    pose_body: List[float] = []
    for frame in range(frames):
        root = matrix_apply(KIMODO_TO_AMASS, motion.root_position(frame))
        trans.extend(root[k] - pelvis_rest[k] for k in range(3))
        rotations = motion.frame_rotations(frame)
        root_amass = matrix_multiply(KIMODO_TO_AMASS, quat_to_matrix(rotations[0]))
        root_orient.extend(quat_to_rotation_vector(matrix_to_quat(root_amass)))
        for q in rotations[1:]:
            pose_body.extend(quat_to_rotation_vector(q))
    zeros = lambda width: npy.float64((frames, width), [0.0] * (frames * width))  # noqa: E731
    npy.write_npz(path, [
        ("trans", npy.float32((frames, 3), trans)),
        ("root_orient", npy.float32((frames, 3), root_orient)),
        ("pose_body", npy.float32((frames, BODY_JOINTS * 3), pose_body)),
        ("gender", npy.NpyArray("<U7", (), ("neutral",))),
        ("surface_model_type", npy.NpyArray("<U5", (), ("smplx",))),
        ("betas", npy.float64((BETA_COUNT,), [0.0] * BETA_COUNT)),
        ("num_betas", npy.NpyArray("<i8", (), array("d", [BETA_COUNT]))),
        ("mocap_frame_rate", npy.float64((), [motion.fps])),
        ("pose_jaw", zeros(3)),
        ("pose_eye", zeros(6)),
        ("pose_hand", zeros(HAND_VALUES)),
        ("mocap_time_length", npy.float64((), [frames / motion.fps])),
    ])
