"""Forward kinematics on the model (see model.py for the formula)."""
from __future__ import annotations

from typing import List, Sequence, Tuple

from ..model import Motion, Skeleton
from ..rotations import Quat, Vec3, quat_multiply, quat_rotate


def pose_globals(
    skeleton: Skeleton, local_rotations: Sequence[Sequence[float]], root_position: Sequence[float]
) -> Tuple[List[Quat], List[Vec3]]:
    """Global rotations and world positions of every joint for one frame."""
    parents = skeleton.parents
    offsets = skeleton.rest_offsets
    rotations: List[Quat] = []
    positions: List[Vec3] = []
    for joint, parent in enumerate(parents):
        if parent < 0:
            rotations.append(tuple(local_rotations[joint]))  # type: ignore[arg-type]
            positions.append((root_position[0], root_position[1], root_position[2]))
            continue
        parent_rotation = rotations[parent]
        offset = quat_rotate(parent_rotation, offsets[joint])
        p = positions[parent]
        positions.append((p[0] + offset[0], p[1] + offset[1], p[2] + offset[2]))
        rotations.append(quat_multiply(parent_rotation, local_rotations[joint]))
    return rotations, positions


def global_rotations_and_positions(motion: Motion) -> Tuple[List[List[Quat]], List[List[Vec3]]]:
    """Per frame: global rotations and world positions of every joint."""
    all_rotations = []
    all_positions = []
    for frame in range(motion.frame_count):
        rotations, positions = pose_globals(
            motion.skeleton, motion.frame_rotations(frame), motion.root_position(frame)
        )
        all_rotations.append(rotations)
        all_positions.append(positions)
    return all_rotations, all_positions


def world_positions(motion: Motion) -> List[List[Vec3]]:
    """Per frame, the world position of every joint, metres."""
    return global_rotations_and_positions(motion)[1]


def rest_pose(skeleton: Skeleton) -> Tuple[List[Quat], List[Vec3]]:
    """Global rotations and world positions of the rest pose with the root at its rest offset."""
    return pose_globals(skeleton, skeleton.rest_rotations, skeleton.rest_offsets[0])


def rest_positions(skeleton: Skeleton) -> List[Vec3]:
    """World positions of the rest pose with the root at its rest offset."""
    return rest_pose(skeleton)[1]


def rest_global_rotations(skeleton: Skeleton) -> List[Quat]:
    return rest_pose(skeleton)[0]
