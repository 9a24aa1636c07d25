"""Unitree G1 MuJoCo qpos CSV <-> g1skel34, as Kimodo's kimodo/exports/mujoco.py (Apache-2.0) lays it out.

A row is 36 numbers: root position (MuJoCo frame: z up, +x forward, +y left), root quaternion w, x, y, z,
then the 29 hinge angles in g1.xml order (radians). No header. Kimodo's frame is v_kimodo = M v_mujoco
with M = mujoco_to_kimodo_matrix from g1skel34.json.

Reading is exactly MuJoCo's kinematics: a hinge joint's local rotation is its MJCF body rotation (the
skeleton's rest_pose_local_rot) followed by the hinge angle about its axis; the four end joints without a
MuJoCo joint take the identity. A file named *_mujoco_rest_zero.csv is Kimodo's rest-relative variant (its
angles are offset so that Kimodo's identity rest reads 0); its offsets are added back.

Writing projects each joint's rotation onto its one hinge axis. Joints are solved parent before child
against the target world pose, so a joint absorbs what its parent's projection lost, and each angle is the
one that best places the joint's whole subtree (closed-form least squares about the axis).
"""
from __future__ import annotations

import logging
import math
from array import array
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .. import skeletons
from ..errors import KimodoError
from ..files import read_input, write_bytes_atomic
from ..model import Motion
from ..ops.fk import global_rotations_and_positions
from ..rotations import (
    Quat, Vec3, add, cross, dot, matrix_apply, matrix_multiply, matrix_to_quat, matrix_transpose, quat_conjugate,
    quat_from_axis_angle, quat_multiply, quat_norm, quat_rotate, quat_to_matrix, subtract,
)
from .limits import frame_rate
from .options import DEFAULT, WriteOptions

NAME = "csv"
DESCRIPTION = "Unitree G1 MuJoCo qpos CSV (36 columns; z-up, +x forward)"
EXTENSIONS = (".csv",)
COLUMNS = 36
REST_ZERO_SUFFIX = "_mujoco_rest_zero.csv"
_LOG = logging.getLogger("kimodo_rig")


class _G1:
    """The MuJoCo data of g1skel34.json, in the shapes reading and writing need."""

    def __init__(self) -> None:
        record = skeletons.data("g1skel34")
        self.skeleton = skeletons.load("g1skel34")
        mujoco = record["mujoco"]
        self.to_kimodo = tuple(tuple(float(c) for c in row) for row in mujoco["mujoco_to_kimodo_matrix"])
        self.to_mujoco = matrix_transpose(self.to_kimodo)
        self.hinges = mujoco["hinge_joints_in_qpos_order"]
        self.hinge_of_joint: Dict[int, int] = {h["kimodo_joint_index"]: i for i, h in enumerate(self.hinges)}
        self.rest = [matrix_to_quat(m) for m in record["rest_pose_local_rot"]["matrices"]]
        self.axes = [tuple(float(c) for c in h["axis_kimodo"]) for h in self.hinges]
        self.ranges = [tuple(h["range_rad"]) for h in self.hinges]
        self.rest_zero_offsets = [float(h["rest_dof_euler_rad"]) for h in self.hinges]
        self.names = [h["mujoco_joint"] for h in self.hinges]


_DATA: List[_G1] = []


def _g1() -> _G1:
    if not _DATA:
        _DATA.append(_G1())
    return _DATA[0]


def _parse_rows(path) -> List[List[float]]:
    try:
        text = read_input(path, str(path)).decode("utf-8")
    except UnicodeDecodeError as error:
        raise KimodoError("{}: cannot be read as text ({})".format(path, error)) from error
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cells = line.split(",")
        if len(cells) != COLUMNS:
            raise KimodoError("{}: line {}: expected {} columns (G1 qpos), got {}".format(path, number, COLUMNS, len(cells)))
        try:
            values = [float(cell) for cell in cells]
        except ValueError:
            raise KimodoError("{}: line {}: not a row of numbers".format(path, number)) from None
        if not all(math.isfinite(v) for v in values):
            raise KimodoError("{}: line {}: value is not a finite number".format(path, number))
        rows.append(values)
    if not rows:
        raise KimodoError("{}: holds no rows".format(path))
    return rows


def read(path, *, fps: Optional[float] = None) -> Motion:
    g1 = _g1()
    rows = _parse_rows(path)
    rest_zero = str(path).lower().endswith(REST_ZERO_SUFFIX)
    count = g1.skeleton.joint_count
    rotations = array("d")
    roots = array("d")
    for number, row in enumerate(rows, 1):
        roots.extend(matrix_apply(g1.to_kimodo, row[0:3]))
        w, x, y, z = row[3:7]
        norm = quat_norm((x, y, z, w))
        if abs(norm - 1.0) > 1e-3:
            raise KimodoError("{}: line {}: root quaternion is not unit length ({:.4f})".format(path, number, norm))
        root_mujoco = quat_to_matrix((x / norm, y / norm, z / norm, w / norm))
        frame = [(0.0, 0.0, 0.0, 1.0)] * count
        frame[0] = matrix_to_quat(matrix_multiply(matrix_multiply(g1.to_kimodo, root_mujoco), g1.to_mujoco))
        for hinge, info in enumerate(g1.hinges):
            angle = row[7 + hinge] + (g1.rest_zero_offsets[hinge] if rest_zero else 0.0)
            joint = info["kimodo_joint_index"]
            frame[joint] = quat_multiply(g1.rest[joint], quat_from_axis_angle(g1.axes[hinge], angle))
        for q in frame:
            rotations.extend(q)
    name = Path(path).stem
    return Motion(g1.skeleton, rotations, roots, frame_rate(fps, str(path)) if fps else 30.0, name=name)


def _best_hinge_angle(axis: Vec3, sources: Sequence[Vec3], targets: Sequence[Vec3], fallback: Quat) -> float:
    """The angle about `axis` that best turns `sources` onto `targets` (least squares over the points);
    with nothing to turn (every point on the axis), the twist of `fallback` about the axis."""
    sine = cosine = 0.0
    for u, s in zip(sources, targets):
        u_perp = subtract(u, tuple(c * dot(u, axis) for c in axis))
        s_perp = subtract(s, tuple(c * dot(s, axis) for c in axis))
        sine += dot(axis, cross(u_perp, s_perp))
        cosine += dot(u_perp, s_perp)
    if abs(sine) + abs(cosine) > 1e-9:
        return math.atan2(sine, cosine)
    twist = dot(fallback[:3], axis)
    return 2.0 * math.atan2(twist, fallback[3])


def _subtrees(parents: Sequence[int]) -> List[List[int]]:
    members: List[List[int]] = [[j] for j in range(len(parents))]
    for joint in range(len(parents) - 1, 0, -1):
        members[parents[joint]].extend(members[joint])
    return [sorted(m) for m in members]


def project(motion: Motion) -> Tuple[List[List[float]], Dict[str, float], List[str]]:
    """Rows of MuJoCo qpos for a g1skel34 motion, the largest loss per hinge (radians between the full
    local rotation and its hinge projection), and the hinges whose angle leaves the XML range."""
    g1 = _g1()
    skeleton = motion.skeleton
    parents = skeleton.parents
    subtree = _subtrees(parents)
    global_rotations, positions = global_rotations_and_positions(motion)
    losses = {name: 0.0 for name in g1.names}
    out_of_range = set()
    rows = []
    for frame in range(motion.frame_count):
        target_rotations, target_positions = global_rotations[frame], positions[frame]
        solved_rotations: List[Quat] = [target_rotations[0]] + [None] * (skeleton.joint_count - 1)  # type: ignore[list-item]
        solved_positions: List[Vec3] = [target_positions[0]] + [None] * (skeleton.joint_count - 1)  # type: ignore[list-item]
        angles = [0.0] * len(g1.hinges)
        for joint in range(1, skeleton.joint_count):
            parent = parents[joint]
            position = add(solved_positions[parent], quat_rotate(solved_rotations[parent], skeleton.rest_offsets[joint]))
            solved_positions[joint] = position  # type: ignore[assignment]
            hinge = g1.hinge_of_joint.get(joint)
            if hinge is None:  # an end joint: no MuJoCo DoF, it takes the rest
                solved_rotations[joint] = solved_rotations[parent]
                continue
            frame_of_hinge = quat_multiply(solved_rotations[parent], g1.rest[joint])  # before the hinge turns
            inverse_hinge_frame = quat_conjugate(frame_of_hinge)
            inverse_target = quat_conjugate(target_rotations[joint])
            sources, aims = [], []
            for member in subtree[joint][1:]:
                sources.append(quat_rotate(inverse_target, subtract(target_positions[member], target_positions[joint])))
                aims.append(quat_rotate(inverse_hinge_frame, subtract(target_positions[member], position)))
            wanted_local = quat_multiply(inverse_hinge_frame, target_rotations[joint])
            angle = _best_hinge_angle(g1.axes[hinge], sources, aims, wanted_local)
            angles[hinge] = angle
            solved_rotations[joint] = quat_multiply(frame_of_hinge, quat_from_axis_angle(g1.axes[hinge], angle))
            # The loss reported is the input's own local rotation against its best single-axis match.
            local = quat_multiply(quat_conjugate(g1.rest[joint]), motion.rotation(frame, joint))
            twist = 2.0 * math.atan2(dot(local[:3], g1.axes[hinge]), local[3])
            residual = quat_multiply(quat_conjugate(quat_from_axis_angle(g1.axes[hinge], twist)), local)
            losses[g1.names[hinge]] = max(losses[g1.names[hinge]], 2.0 * math.acos(min(1.0, abs(residual[3]))))
            low, high = g1.ranges[hinge]
            if not low <= angle <= high:
                out_of_range.add(g1.names[hinge])
        root = matrix_apply(g1.to_mujoco, motion.root_position(frame))
        root_matrix = matrix_multiply(matrix_multiply(g1.to_mujoco, quat_to_matrix(target_rotations[0])), g1.to_kimodo)
        x, y, z, w = matrix_to_quat(root_matrix)
        rows.append(list(root) + [w, x, y, z] + angles)
    return rows, losses, sorted(out_of_range, key=g1.names.index)


def write(motion: Motion, path, options: WriteOptions = DEFAULT) -> None:
    if motion.skeleton.name != "g1skel34":
        raise KimodoError("{}: a G1 qpos CSV holds G1 motion; {} ({} joints) to G1 is retargeting, not "
                          "conversion".format(path, motion.skeleton.label, motion.joint_count))
    rows, losses, out_of_range = project(motion)
    if out_of_range:
        _LOG.warning("%s: joints leave the G1 XML range: %s", path, ", ".join(out_of_range))
    worst = max(losses, key=lambda name: losses[name])
    _LOG.warning("%s: largest loss projecting onto hinge axes: %s, %.1f degrees", path, worst, math.degrees(losses[worst]))
    text = "".join(",".join("{:.18e}".format(v) for v in row) + "\n" for row in rows)
    write_bytes_atomic(path, text.encode("ascii"))
