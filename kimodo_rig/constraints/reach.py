"""Whole poses that put hands and feet on given world positions (an Animotive hand or foot constraint holds
the position alone; Kimodo's holds a pose). See docs/constraints.md.

Each limb is a two-bone chain found from the skeleton's parents: the effector (hand or foot), its parent
(forearm or shin: the elbow or knee) and that one's parent (upper arm or thigh). The chain is solved
analytically: the elbow or knee stays in the limb's own bending plane (a straight limb bends towards
BEND_TOWARDS in the hips' frame), the upper bone and then the lower bone turn by the shortest rotation, and
the effector keeps its world rotation from the start pose (a planted foot is levelled: its yaw alone, its
toes at rest). When a position is out of a limb's reach the hips alone move, as little as reaches every
limb of the frame."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from ..model import Skeleton
from ..ops.derived_channels import root_headings
from ..ops.fk import pose_globals
from ..rotations import (
    Quat,
    Vec3,
    add,
    length,
    quat_between,
    quat_conjugate,
    quat_multiply,
    quat_normalize,
    quat_rotate,
    scale,
    subtract,
    two_bone_points,
    yaw_angle,
    yaw_rotation,
)

# Tuning constants
REACH_SLACK = 1e-3  # fraction of a limb's length kept bent at full reach: a straight limb has no bending plane
BEND_TOWARDS = {"hand": (0.0, -1.0, -1.0), "foot": (0.0, 0.0, 1.0)}  # direction, hips' frame: elbows back and down, knees forward
ROOT_PASSES = 200  # rounds of moving the hips into each limb's reach in turn (a count of rounds, not frames)
ROOT_SETTLED_M = 1e-7  # metres per 1.7 m: a round that moves the hips less than this ends the search


@dataclass(frozen=True)
class Target:
    """One hand or foot held to a world position. `limb` is "hand" or "foot"."""

    effector: int  # joint index
    limb: str
    position: Vec3
    planted: Optional[bool] = None


@dataclass(frozen=True)
class Reached:
    """A solved pose: local rotations, the hips' position, how far the hips moved from the start to bring
    the targets into reach and the largest distance left between an effector and its target (metres)."""

    rotations: Tuple[Quat, ...]
    root: Vec3
    root_moved: float
    miss: float


def _chain(skeleton: Skeleton, effector: int) -> Tuple[int, int]:
    middle = skeleton.parents[effector]
    top = skeleton.parents[middle] if middle > 0 else -1
    if top <= 0:
        raise ValueError("joint {} has no two-bone chain below the root".format(skeleton.joint_names[effector]))
    return top, middle


def _limits(positions: Sequence[Vec3], top: int, middle: int, effector: int) -> Tuple[float, float]:
    """The nearest and furthest the effector may be from the chain's top."""
    upper = length(subtract(positions[middle], positions[top]))
    lower = length(subtract(positions[effector], positions[middle]))
    return abs(upper - lower) * (1.0 + REACH_SLACK), (upper + lower) * (1.0 - REACH_SLACK)


def _into_reach(skeleton: Skeleton, positions: Sequence[Vec3], targets: Sequence[Target]) -> Vec3:
    """The smallest move of the hips (and everything on them) that brings every target within its limb's
    reach: each limb's reach is a shell about its top joint, and the move is found by projecting onto each
    shell in turn until none asks for more."""
    shift = (0.0, 0.0, 0.0)
    limbs = []
    for target in targets:
        top, middle = _chain(skeleton, target.effector)
        limbs.append((positions[top], _limits(positions, top, middle, target.effector), target.position))
    for _ in range(ROOT_PASSES):
        moved = 0.0
        for top_position, (near, far), goal in limbs:
            apart = subtract(goal, add(top_position, shift))
            distance = length(apart)
            wanted = min(max(distance, near), far)
            if distance > 0.0 and wanted != distance:
                step = scale(apart, 1.0 - wanted / distance)
                shift = add(shift, step)
                moved = max(moved, length(step))
        if moved < ROOT_SETTLED_M:
            break
    return shift


def _solve_limb(skeleton: Skeleton, rotations: List[Quat], root: Vec3, target: Target) -> None:
    """Turn the limb's upper and lower bones (local rotations, in place) so its effector reaches the target."""
    top, middle = _chain(skeleton, target.effector)
    effector = target.effector
    globals_, positions = pose_globals(skeleton, rotations, root)
    towards = quat_rotate(globals_[0], BEND_TOWARDS[target.limb])
    new_middle, new_end = two_bone_points(positions[top], positions[middle], positions[effector], target.position, towards)
    swing_upper = quat_between(subtract(positions[middle], positions[top]), subtract(new_middle, positions[top]))
    top_global = quat_normalize(quat_multiply(swing_upper, globals_[top]))
    middle_global = quat_multiply(swing_upper, globals_[middle])
    lower_now = quat_rotate(swing_upper, subtract(positions[effector], positions[middle]))
    middle_global = quat_normalize(quat_multiply(quat_between(lower_now, subtract(new_end, new_middle)), middle_global))
    effector_global = globals_[effector]
    if target.planted and target.limb == "foot":  # a planted foot stands level, its toes flat as at rest: its heading alone
        effector_global = yaw_rotation(yaw_angle(effector_global))
        below = list(skeleton.children(effector))
        while below:
            joint = below.pop()
            rotations[joint] = skeleton.rest_rotations[joint]
            below.extend(skeleton.children(joint))
    parent_global = globals_[skeleton.parents[top]]
    rotations[top] = quat_normalize(quat_multiply(quat_conjugate(parent_global), top_global))
    rotations[middle] = quat_normalize(quat_multiply(quat_conjugate(top_global), middle_global))
    rotations[effector] = quat_normalize(quat_multiply(quat_conjugate(middle_global), effector_global))


def reach(skeleton: Skeleton, rotations: Sequence[Quat], root: Vec3, targets: Sequence[Target]) -> Reached:
    """The start pose (local rotations, hips position) changed so each target's effector lands on it."""
    solved = [tuple(q) for q in rotations]
    _, positions = pose_globals(skeleton, solved, root)
    shift = _into_reach(skeleton, positions, targets)
    placed: Vec3 = add(root, shift)
    for target in targets:
        _solve_limb(skeleton, solved, placed, target)  # type: ignore[arg-type]
    _, positions = pose_globals(skeleton, solved, placed)
    miss = max((length(subtract(positions[t.effector], t.position)) for t in targets), default=0.0)
    return Reached(tuple(solved), placed, length(shift), miss)  # type: ignore[arg-type]


def rest_start(skeleton: Skeleton, rest_rotations: Sequence[Quat], targets: Sequence[Target],
               smooth_root: Optional[Tuple[float, float]], heading: Optional[Tuple[float, float]]) -> Tuple[Quat, Vec3]:
    """The root's rotation and position for a pose started from rest (`rest_rotations`, its root unturned).
    It faces Kimodo's `heading` (measured across the hips) when the request gives one, else across the line
    from the left to the right foot target (else hand target), else +Z. The hips stand at rest height
    (the lowest joint on y = 0), over `smooth_root` when the request pins it, else where each foot target
    (else each target) is straight below or above its limb's top joint (the mean): over the feet."""
    _, positions = pose_globals(skeleton, rest_rotations, (0.0, 0.0, 0.0))
    angle = 0.0
    if heading is not None:
        angle = math.atan2(heading[1], heading[0])
    else:
        for limb in ("foot", "hand"):
            sides = sorted((positions[t.effector][0], t.position) for t in targets if t.limb == limb)
            if len(sides) == 2:  # rest +X is the character's left
                across = subtract(sides[0][1], sides[1][1])  # left to right
                if math.hypot(across[0], across[2]) > 0.0:
                    angle = math.atan2(across[2], -across[0])
                    break
    rest = root_headings(skeleton, [positions])[0]  # the rest hips are a hair off square to +Z
    turn = yaw_rotation(angle - math.atan2(rest[1], rest[0]))
    height = -min(p[1] for p in positions)
    if smooth_root is not None:
        return turn, (smooth_root[0], height, smooth_root[1])
    xs, zs = [], []
    for target in [t for t in targets if t.limb == "foot"] or targets:
        top, _ = _chain(skeleton, target.effector)
        offset = quat_rotate(turn, positions[top])
        xs.append(target.position[0] - offset[0])
        zs.append(target.position[2] - offset[2])
    return turn, (sum(xs) / len(xs), height, sum(zs) / len(zs))
