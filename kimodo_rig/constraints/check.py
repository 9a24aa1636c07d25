"""What `kimodo-rig constraints check` finds in a constraints file, beyond what reading it found: entries
on different skeletons or on another skeleton than the motion's, frames beyond the motion or the request,
a frame a request constrains twice with one type, two entries pinning one joint on one frame to different
places (warning), and more constrained frames of one type than Kimodo advises (warning)."""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple

from .. import skeletons
from ..model import Motion
from .model import (
    MOST_KEYFRAMES,
    SKELETON_OF_JOINT_COUNT,
    ConstraintSet,
    Entry,
    Problem,
    entry_poses,
    pinned_joints,
)

CONFLICT_M = 0.01  # two pins of one joint on one frame further apart than this disagree
SMOOTH_ROOT = "the smooth root"


def family(joint_count: int) -> str:
    """SOMA 30 and 77 are one family: Kimodo converts between them when it loads constraints."""
    return skeletons.LABELS[SKELETON_OF_JOINT_COUNT[joint_count]]


def check(constraints: ConstraintSet, motion: Optional[Motion] = None) -> List[Problem]:
    path = constraints.path
    problems = list(constraints.problems)

    def error(entry: Entry, message: str) -> None:
        problems.append(Problem("error", path, message, entry.index, entry.name))

    valid: List[Entry] = []
    first_posed: Optional[Entry] = None
    motion_family = skeletons.LABELS.get(motion.skeleton.name) if motion is not None else None
    if motion is not None and motion_family is None:
        problems.append(Problem("error", path, "the motion's skeleton ({}) is not a Kimodo skeleton".format(motion.skeleton.name)))
    seen_frames: Dict[Tuple[str, int], Entry] = {}
    for entry in constraints.entries:
        if entry.rotations:
            joints = entry.joint_count
            if motion_family is not None and family(joints) != motion_family:
                error(entry, "{} joints ({}); the motion is {} ({} joints)".format(
                    joints, family(joints), motion_family, motion.skeleton.joint_count))  # type: ignore[union-attr]
                continue
            if first_posed is not None and family(joints) != family(first_posed.joint_count):
                error(entry, "{} joints ({}), entry {} has {} ({})".format(
                    joints, family(joints), first_posed.index, first_posed.joint_count, family(first_posed.joint_count)))
                continue
            first_posed = first_posed or entry
        beyond = _beyond(entry, constraints, motion)
        if beyond:
            error(entry, beyond)
            continue
        if constraints.format == "animotive":
            key = (entry.type, entry.frames[0])
            if key in seen_frames:
                other = seen_frames[key]
                error(entry, "frame {} is already constrained by entry {} ({})".format(entry.frames[0], other.index, other.name))
                continue
            seen_frames[key] = entry
        valid.append(entry)
    problems.extend(_conflicts(path, valid, constraints.format == "kimodo"))
    problems.extend(_crowded(path, valid))
    return problems


def _beyond(entry: Entry, constraints: ConstraintSet, motion: Optional[Motion]) -> str:
    last = max(entry.frames)
    if motion is not None:
        if last >= motion.frame_count:
            return "frame {} is beyond the motion ({} frames)".format(last, motion.frame_count)
    elif constraints.request is not None and last >= constraints.request.total_frames:
        request = constraints.request
        return "frame {} is beyond the request's {:.2f} s ({} frames)".format(last, sum(request.durations), request.total_frames)
    return ""


def _pins(entry: Entry, hips_are_smooth_root: bool) -> Dict[Tuple[int, str], Tuple[float, ...]]:
    """(frame, joint name) -> the point this entry holds that joint to on that frame; the smooth root as
    (x, z). Joint names are compared only within one joint count (SOMA 30's hand end is not 77's). A Kimodo
    pose entry without a smooth root pins it to the hips' (x, z); an Animotive fullbody takes it from the
    2d-root on its frame."""
    pins: Dict[Tuple[int, str], Tuple[float, ...]] = {}
    for k, frame in enumerate(entry.frames):
        if entry.smooth_root:
            pins[(frame, SMOOTH_ROOT)] = tuple(entry.smooth_root[k])
        elif entry.root_positions and hips_are_smooth_root:
            pins[(frame, SMOOTH_ROOT)] = (entry.root_positions[k][0], entry.root_positions[k][2])
    if entry.positions:  # Animotive hand/foot
        base = entry.base_names()[0]
        for k, frame in enumerate(entry.frames):
            pins[(frame, "{}@77".format(base))] = tuple(entry.positions[k])
    if entry.rotations:
        skeleton = skeletons.load(SKELETON_OF_JOINT_COUNT[entry.joint_count])
        joints = pinned_joints(entry, skeleton)
        for k, (_, positions) in enumerate(entry_poses(entry, skeleton)):
            for joint in joints:
                pins[(entry.frames[k], "{}@{}".format(skeleton.joint_names[joint], entry.joint_count))] = positions[joint]
    return pins


def _distance(a: Tuple[float, ...], b: Tuple[float, ...]) -> float:
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))


def _conflicts(path: str, entries: List[Entry], hips_are_smooth_root: bool) -> List[Problem]:
    problems: List[Problem] = []
    held: Dict[Tuple[int, str], Tuple[Entry, Tuple[float, ...]]] = {}
    for entry in entries:
        worst: Optional[Tuple[float, int, str, Entry]] = None
        for key, point in _pins(entry, hips_are_smooth_root).items():
            if key not in held:
                held[key] = (entry, point)
                continue
            other, other_point = held[key]
            apart = _distance(point, other_point)
            if apart > CONFLICT_M and (worst is None or apart > worst[0]):
                worst = (apart, key[0], key[1].split("@")[0], other)
        if worst is not None:
            apart, frame, joint, other = worst
            problems.append(Problem("warning", path, "pins {} on frame {} {:.1f} cm from where entry {} ({}) pins it".format(
                joint, frame, apart * 100.0, other.index, other.name), entry.index, entry.name))
    return problems


def _crowded(path: str, entries: List[Entry]) -> List[Problem]:
    frames: Dict[str, set] = {}
    for entry in entries:
        if entry.type != "root2d":
            frames.setdefault(entry.name, set()).update(entry.frames)
    return [Problem("warning", path, "{} frames constrained by {}: Kimodo advises at most {} per type (root2d excepted)".format(
        len(found), name, MOST_KEYFRAMES)) for name, found in frames.items() if len(found) > MOST_KEYFRAMES]

