"""How well a motion meets its constraints: per entry, the position error of the joints the type pins
(forward kinematics of the entry's pose against the motion's, as Kimodo's own metric measures it), the
smooth root's error against Kimodo's smoothed root of the motion (derived as Kimodo derives it,
ops/derived_channels.py), the heading error and the worst frame.

SOMA 30 and 77 are compared on SOMA 77: a SOMA 30 motion or pose is expanded as Kimodo expands it."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from .. import skeletons
from ..errors import KimodoError
from ..model import Motion
from ..ops.derived_channels import root_headings, smooth_root_path
from ..ops.expand import soma30_to_soma77
from ..ops.fk import pose_globals, rest_positions
from ..rotations import Vec3
from .check import family
from .convert import soma30_pose_to_77
from .model import ConstraintSet, Entry, entry_poses, pinned_joints

# Tuning constants.
# The mean miss (m per 1.7 m of character) above which the motion is taken for another than the one the
# constraints were made for. Kimodo meets its own constraints within a few cm (0-4 cm on the shipped
# clips); a motion measured against another clip's constraints misses by 2.5-9 m. A third of a body sits
# far from both: no motion made for these constraints misses them by that much on average.
OTHER_MOTION_MISS_M = 0.5
REFERENCE_HEIGHT_M = 1.7


@dataclass(frozen=True)
class Adherence:
    index: int
    type: str
    frames: Tuple[int, ...]
    position_error_cm_mean: Optional[float]
    position_error_cm_max: Optional[float]
    root_error_cm_mean: Optional[float]
    heading_error_deg_mean: Optional[float]
    worst_frame: int

    def to_json(self) -> Dict[str, object]:
        def rounded(value: Optional[float]) -> Optional[float]:
            return None if value is None else round(value, 4)
        return {"index": self.index, "type": self.type, "frames": list(self.frames),
                "position_error_cm_mean": rounded(self.position_error_cm_mean),
                "position_error_cm_max": rounded(self.position_error_cm_max),
                "root_error_cm_mean": rounded(self.root_error_cm_mean),
                "heading_error_deg_mean": rounded(self.heading_error_deg_mean), "worst_frame": self.worst_frame}


def _angle(heading: Sequence[float]) -> float:
    return math.atan2(heading[1], heading[0])


def _turn_degrees(a: float, b: float) -> float:
    return abs(math.degrees(math.remainder(a - b, 2.0 * math.pi)))


def _mean(values: Sequence[float]) -> Optional[float]:
    return sum(values) / len(values) if values else None


def measure(constraints: ConstraintSet, motion: Motion) -> List[Adherence]:
    """One Adherence per entry. Entries must have passed `check` against this motion."""
    if motion.skeleton.name not in skeletons.LABELS:
        raise KimodoError("{}: not on a Kimodo skeleton ({}): cannot measure adherence".format(motion.name or "motion", motion.skeleton.name))
    counts = {e.joint_count for e in constraints.entries if e.rotations} | ({77} if any(e.positions for e in constraints.entries) else set())
    work = motion
    if motion.skeleton.name == "somaskel30" and 77 in counts:
        work = soma30_to_soma77(motion)
    skeleton = work.skeleton
    smooth = smooth_root_path([work.root_position(f) for f in range(work.frame_count)])
    posed: Dict[int, List[Vec3]] = {}

    def positions(frame: int) -> List[Vec3]:
        if frame not in posed:
            posed[frame] = pose_globals(skeleton, work.frame_rotations(frame), work.root_position(frame))[1]
        return posed[frame]

    # An Animotive fullbody holds no smooth root: the 2d-root on its frame pins it (see convert.py).
    roots_at = {e.frames[0]: e.smooth_root[0] for e in constraints.entries if e.type == "root2d"} if constraints.format == "animotive" else None
    results = []
    for entry in constraints.entries:
        if entry.rotations and family(entry.joint_count) != skeletons.LABELS[skeleton.name]:
            raise KimodoError("{}: entry {} ({}): {} joints, the motion has {}".format(
                constraints.path, entry.index, entry.name, entry.joint_count, skeleton.joint_count))
        results.append(_entry(entry, skeleton, smooth, positions, roots_at))
    return results


def other_motion_warning(adherence: Sequence[Adherence], motion: Motion, source: str) -> Optional[str]:
    """One line when the constraints are missed by more than OTHER_MOTION_MISS_M (scaled to the motion's
    skeleton) on average over the entries (each by its pinned joints' mean, else its root's), else None."""
    misses = [a.position_error_cm_mean if a.position_error_cm_mean is not None else a.root_error_cm_mean
              for a in adherence]
    metres = [m / 100.0 for m in misses if m is not None]
    if not metres:
        return None
    heights = [p[1] for p in rest_positions(motion.skeleton)]
    height = max(heights) - min(heights)
    bar = OTHER_MOTION_MISS_M * height / REFERENCE_HEIGHT_M
    mean = sum(metres) / len(metres)
    if mean <= bar:
        return None
    return ("{}: the constraints are missed by {:.2f} m on average (over {:.2f} m for its {:.2f} m skeleton): the "
            "motion does not look like the one the constraints were made for").format(source, mean, bar, height)


def _entry(entry: Entry, skeleton, smooth, positions, roots_at: Optional[Dict[int, Tuple[float, float]]]) -> Adherence:
    frames = entry.frames
    joint_errors: List[float] = []
    worst_per_frame: List[float] = []
    root_errors: List[float] = []
    heading_errors: List[float] = []
    targets: List[Optional[List[Vec3]]] = [None] * len(frames)
    joints: List[int] = []
    if entry.rotations:
        on = entry
        if entry.joint_count == 30 and skeleton.joint_count == 77:
            on = Entry(entry.index, entry.type, frames, tuple(soma30_pose_to_77(p) for p in entry.rotations), entry.root_positions)
        targets = [p for _, p in entry_poses(on, skeleton)]
        joints = pinned_joints(on, skeleton)
    elif entry.positions:  # an Animotive hand or foot: its base joint's position
        joints = [skeleton.index(entry.base_names()[0])]
    for k, frame in enumerate(frames):
        actual = positions(frame)
        target = targets[k]
        if joints:
            wanted: Dict[int, Vec3] = {j: target[j] for j in joints} if target is not None else {joints[0]: entry.positions[k]}
            errors = [math.dist(actual[j], wanted[j]) for j in joints]
            joint_errors.extend(errors)
            worst_per_frame.append(max(errors))
        if entry.smooth_root:
            goal: Optional[Tuple[float, float]] = entry.smooth_root[k]
        elif roots_at is not None:
            goal = roots_at.get(frame) if entry.type == "fullbody" else None
        else:  # Kimodo's default for a pose without one: the hips' (x, z)
            goal = (entry.root_positions[k][0], entry.root_positions[k][2]) if entry.root_positions else None
        if goal is not None:
            root_errors.append(math.hypot(smooth[frame][0] - goal[0], smooth[frame][2] - goal[1]))
            if not joints:
                worst_per_frame.append(root_errors[-1])
        wanted_heading = None
        if entry.heading:
            wanted_heading = _angle(entry.heading[k])
        elif target is not None:
            wanted_heading = _angle(root_headings(skeleton, [target])[0])
        if wanted_heading is not None:
            heading_errors.append(_turn_degrees(_angle(root_headings(skeleton, [actual])[0]), wanted_heading))
    worst = frames[max(range(len(frames)), key=lambda k: worst_per_frame[k])] if worst_per_frame else frames[0]
    mean = _mean(joint_errors)
    return Adherence(
        entry.index, entry.name, frames,
        None if mean is None else mean * 100.0,
        max(joint_errors) * 100.0 if joint_errors else None,
        None if not root_errors else _mean(root_errors) * 100.0,  # type: ignore[operator]
        _mean(heading_errors), worst)
