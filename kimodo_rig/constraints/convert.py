"""Kimodo constraints.json <-> Animotive request.

Kimodo -> Animotive: each frame of an entry becomes one request constraint, in file order. Poses go onto
SOMA 77 as Kimodo saves them (SOMA 30's joints keep their rotation vectors unchanged, the fingers take
Kimodo's relaxed-hands rest). A fullbody entry's smooth root becomes a `2d-root` right after it on the same
frame, unless a 2d-root already pins that frame (Kimodo pins the smooth root either way). Hand and foot
entries become the world position of the hand or foot (from the pose); Kimodo's hand/foot pose, smooth
root and heading have no Animotive field and are dropped. G1 and SMPL-X have no Animotive form.

Animotive -> Kimodo: runs of consecutive constraints of one type become one entry; a fullbody takes its
smooth root from the 2d-root on its frame (which is then not repeated as a root2d). Hand and foot
constraints hold only a position, while Kimodo's hold a whole pose: each frame's hands and feet are put on
their positions together, in one pose solved by two-bone IK (reach.py) from the request's nearest fullbody,
else from the rest pose; the entry keeps the type (`left-hand`, ...) and takes the smooth root of a 2d-root
on its frame. Kimodo -> Animotive -> Kimodo keeps every entry: fullbody and root2d exactly (SOMA 30 poses
come back on SOMA 77, their 30 joints bit for bit), hands and feet at their positions (their poses and
smooth roots are new)."""
from __future__ import annotations

import logging
from typing import Dict, List, Optional, Sequence, Tuple

from .. import skeletons
from ..errors import KimodoError
from ..rotations import Quat, Vec3, quat_to_rotation_vector
from . import animotive
from .model import BASE_OF_TYPE, ConstraintSet, Entry, Request, entry_poses, pose_rotations
from .reach import Target, reach, rest_start

LOG = logging.getLogger("kimodo_rig")
LIMB_OF_TYPE = {"left-hand": "hand", "right-hand": "hand", "left-foot": "foot", "right-foot": "foot"}
HIPS_MOVE_SHOWN_M = 0.001  # metres per 1.7 m: a smaller move of the hips into reach is not worth a warning
MISSED_M = 0.005  # metres per 1.7 m: an effector further than this from its target is reported
FARTHEST_M = 1e4  # metres per 1.7 m: a target or start further from the origin (where a generation starts) is refused; the IK's squares stay finite


def relaxed_rest() -> List[Quat]:
    """Kimodo's SOMA 77 rest with relaxed hands (what a SOMA 30 pose's fingers take, too)."""
    return [tuple(q) for q in skeletons.data("somaskel77")["relaxed_hands_rest_pose"]["quat_xyzw"]]  # type: ignore[misc]


def soma30_pose_to_77(pose: Sequence[Vec3]) -> Tuple[Vec3, ...]:
    """A SOMA 30 pose (rotation vectors) on SOMA 77: the 30 joints as they are, the rest relaxed hands."""
    relaxed = relaxed_rest()
    index77 = skeletons.data("somaskel30")["somaskel77_index_of_each_joint"]
    full: List[Vec3] = [tuple(quat_to_rotation_vector(q)) for q in relaxed]  # type: ignore[misc]
    for joint30, joint77 in enumerate(index77):
        full[joint77] = tuple(pose[joint30])  # type: ignore[assignment]
    return tuple(full)


def _on_soma77(entry: Entry, path: str) -> Entry:
    joints = entry.joint_count
    if joints == 77:
        return entry
    if joints != 30:
        raise KimodoError("{}: entry {} ({}): {} joints: the Animotive request is SOMA 77; G1 and SMPL-X constraints have no Animotive form".format(
            path, entry.index, entry.name, joints))
    return Entry(entry.index, entry.type, entry.frames, tuple(soma30_pose_to_77(p) for p in entry.rotations),
                 entry.root_positions, entry.smooth_root, entry.heading, entry.joint_names)


def to_animotive(constraints: ConstraintSet, request: Request) -> ConstraintSet:
    rooted = {f for e in constraints.entries if e.type == "root2d" for f in e.frames}
    out: List[Entry] = []
    soma77 = skeletons.load("somaskel77")

    def add(entry: Entry) -> None:
        out.append(Entry(len(out), entry.type, entry.frames, entry.rotations, entry.root_positions, entry.smooth_root,
                         entry.heading, positions=entry.positions, planted=entry.planted,
                         label=animotive.LABEL_OF_TYPE[entry.type]))

    for entry in constraints.entries:
        if entry.type == "root2d":
            for k, frame in enumerate(entry.frames):
                add(Entry(0, "root2d", (frame,), smooth_root=(entry.smooth_root[k],),
                          heading=(entry.heading[k],) if entry.heading else ()))
            continue
        entry = _on_soma77(entry, constraints.path)
        if entry.type == "fullbody":
            for k, frame in enumerate(entry.frames):
                add(Entry(0, "fullbody", (frame,), (entry.rotations[k],), (entry.root_positions[k],)))
                if entry.smooth_root and frame not in rooted:
                    add(Entry(0, "root2d", (frame,), smooth_root=(entry.smooth_root[k],)))
                    rooted.add(frame)
            continue
        poses = entry_poses(entry, soma77)
        kept = [b for b in entry.base_names() if b != "Hips"]
        if len(kept) < len(entry.base_names()):
            LOG.warning("%s: entry %d (%s): Hips has no Animotive constraint; left out", constraints.path, entry.index, entry.name)
        for base in kept:
            kind = next(t for t, name in BASE_OF_TYPE.items() if name == base)
            joint = soma77.index(base)
            for k, frame in enumerate(entry.frames):
                add(Entry(0, kind, (frame,), positions=(poses[k][1][joint],), planted=(None,)))
    return ConstraintSet(constraints.path, animotive.FORMAT, tuple(out), (), request)


def _near_enough(path: str, entry: Entry, point: Vec3, field: str) -> Vec3:
    if max(abs(c) for c in point) > FARTHEST_M:
        raise KimodoError("{}: constraints[{}] ({}): {} is more than {:g} m from the origin, where a Kimodo generation starts".format(
            path, entry.index, entry.name, field, FARTHEST_M))
    return point


def effector_poses(constraints: ConstraintSet, roots_at: Dict[int, Entry]) -> Dict[int, Tuple[Tuple[Vec3, ...], Vec3]]:
    """Frame -> (rotation vectors, hips position) of one SOMA 77 pose that puts every hand and foot the
    request constrains on that frame on its position."""
    soma77 = skeletons.load("somaskel77")
    by_frame: Dict[int, List[Entry]] = {}
    for entry in constraints.entries:
        if entry.type in BASE_OF_TYPE:
            by_frame.setdefault(entry.frames[0], []).append(entry)
    fullbodies = [e for e in constraints.entries if e.type == "fullbody"]
    poses: Dict[int, Tuple[Tuple[Vec3, ...], Vec3]] = {}
    for frame, limbs in sorted(by_frame.items()):
        for entry in limbs:
            _near_enough(constraints.path, entry, entry.positions[0], "pose.position")
        targets = [Target(soma77.index(BASE_OF_TYPE[e.type]), LIMB_OF_TYPE[e.type], e.positions[0],
                          e.planted[0] if e.planted else None) for e in limbs]
        nearest = min(fullbodies, key=lambda e: (abs(e.frames[0] - frame), e.frames[0]), default=None)
        if nearest is not None:
            rotations = pose_rotations(nearest.rotations[0])
            root = _near_enough(constraints.path, nearest, nearest.root_positions[0], "pose.root_pos")
            start = "the fullbody on frame {}".format(nearest.frames[0])
        else:
            root2d = roots_at.get(frame)
            heading = root2d.heading[0] if root2d is not None and root2d.heading else None
            rotations = relaxed_rest()
            rotations[0], root = rest_start(soma77, rotations, targets, root2d.smooth_root[0] if root2d is not None else None, heading)
            start = "the rest pose"
        reached = reach(soma77, rotations, root, targets)
        where = "{}: frame {} (constraints[{}])".format(constraints.path, frame, ", ".join(str(e.index) for e in limbs))
        if reached.root_moved > HIPS_MOVE_SHOWN_M:
            LOG.warning("%s: out of reach from %s: the hips moved %.1f cm", where, start, reached.root_moved * 100.0)
        if reached.miss > MISSED_M:
            LOG.warning("%s: out of reach from any hips position: a hand or foot stays %.1f cm from its position", where, reached.miss * 100.0)
        poses[frame] = (tuple(tuple(quat_to_rotation_vector(q)) for q in reached.rotations), reached.root)  # type: ignore[misc]
    return poses


def to_kimodo(constraints: ConstraintSet) -> ConstraintSet:
    entries = list(constraints.entries)
    roots_at: Dict[int, Entry] = {}
    for entry in entries:
        if entry.type == "root2d":
            roots_at.setdefault(entry.frames[0], entry)
    consumed = set()
    for i, entry in enumerate(entries):
        if entry.type == "fullbody" and i + 1 < len(entries):
            following = entries[i + 1]
            if following.type == "root2d" and following.frames == entry.frames and not following.heading:
                consumed.add(i + 1)
    posed = effector_poses(constraints, roots_at)
    runs: List[List[Entry]] = []
    for i, entry in enumerate(entries):
        if i in consumed:
            continue
        key = (entry.type, bool(entry.heading))
        if runs and (runs[-1][0].type, bool(runs[-1][0].heading)) == key and entry.frames[0] not in {r.frames[0] for r in runs[-1]}:
            runs[-1].append(entry)
        else:
            runs.append([entry])
    out: List[Entry] = []
    for run in runs:
        frames = tuple(e.frames[0] for e in run)
        if run[0].type == "root2d":
            out.append(Entry(len(out), "root2d", frames, smooth_root=tuple(e.smooth_root[0] for e in run),
                             heading=tuple(e.heading[0] for e in run) if run[0].heading else ()))
            continue
        smooth: Optional[List] = []
        for e in run:
            root = roots_at.get(e.frames[0])
            if root is None:
                smooth = None
                break
            smooth.append(root.smooth_root[0])  # type: ignore[union-attr]
        if run[0].type in BASE_OF_TYPE:
            rotations = tuple(posed[f][0] for f in frames)
            roots = tuple(posed[f][1] for f in frames)
        else:
            rotations = tuple(e.rotations[0] for e in run)
            roots = tuple(e.root_positions[0] for e in run)
        out.append(Entry(len(out), run[0].type, frames, rotations, roots, tuple(smooth) if smooth else ()))
    return ConstraintSet(constraints.path, "kimodo", tuple(out))
