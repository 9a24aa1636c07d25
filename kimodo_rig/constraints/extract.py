"""The constraints that would ask Kimodo for a motion.

A motion on a Kimodo skeleton is used as it is; any other humanoid is first retargeted onto SOMA 30 with
the retarget core (its floor: the lowest toe as far above y = 0 as the source's lowest toe).

Placement, as a Kimodo generation starts: the motion is turned about +Y and moved on the ground so that at
frame `start` Kimodo's smoothed root (ops/derived_channels.py, over the whole motion) is at x = z = 0 and
Kimodo's heading (from the hips) faces +Z; heights are kept. Written frames count from `start`, at 30 a
second (a 120 fps BVH's frame 120 is written as frame 30 after `start` = 0).

Each pose entry holds the motion's local rotations as rotation vectors (the root's turned by the
placement), the placed hips position and the placed smooth root; root2d entries hold the placed smooth
root and heading."""
from __future__ import annotations

import math
from array import array
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

from .. import skeletons
from ..errors import KimodoError
from ..formats.limits import whole_number
from ..model import Motion
from ..ops.derived_channels import root_headings, smooth_root_path
from ..ops.fk import pose_globals, rest_positions
from ..retarget.solve import retarget
from ..rotations import quat_from_axis_angle, quat_multiply, quat_rotate, quat_to_rotation_vector
from .model import FPS, BASE_OF_TYPE, ConstraintSet, Entry

KINDS = ("fullbody", "left-hand", "right-hand", "left-foot", "right-foot", "root2d")


@dataclass(frozen=True)
class Selection:
    """Which frames of the motion (its own numbering) each type constrains."""

    frames: Dict[str, Tuple[int, ...]]
    start: int = 0


def on_kimodo_skeleton(motion: Motion, source: str) -> Motion:
    """The motion itself on a Kimodo skeleton, else retargeted onto SOMA 30 standing on y = 0."""
    if motion.skeleton.name in skeletons.LABELS:
        return motion
    soma = skeletons.load("somaskel30")
    moved, _ = retarget(motion, soma, source_name=source, target_name="SOMA")
    order = [moved.skeleton.index(name) for name in soma.joint_names]
    if any(abs(q[3]) < 1.0 - 1e-12 for q in moved.skeleton.rest_rotations):
        raise ValueError("the retarget gave SOMA a rest rotation")
    feet = [soma.index(n) for group in ("left_foot_chain", "right_foot_chain")
            for n in skeletons.data("somaskel30")["semantic_groups"][group]]
    lift = -min(rest_positions(soma)[j][1] for j in feet)  # the retarget stands SOMA's rest toes on its floor
    rotations = array("d")
    for frame in range(moved.frame_count):
        current = moved.frame_rotations(frame)
        for joint in order:
            rotations.extend(current[joint])
    roots = array("d", moved.root_positions)
    for frame in range(moved.frame_count):
        roots[frame * 3 + 1] += lift
    return Motion(soma, rotations, roots, moved.fps, name=motion.name, prompt=motion.prompt)


def kimodo_frames(first: int, last: int, fps: float) -> Tuple[int, ...]:
    """The motion frames nearest to each 1/30 s from frame `first` to frame `last` (all of them at 30 fps)."""
    steps = int(math.floor((last - first) * FPS / fps + 1e-9))
    return tuple(sorted({first + int(round(i * fps / FPS)) for i in range(steps + 1)}))


def parse_frames(text: str, option: str, start: int, frame_count: int, fps: float = FPS) -> Tuple[int, ...]:
    """`F,F,...`, and for root2d also `all` (every Kimodo frame from `start`) and `every:N` (every N-th motion
    frame from `start`, and the last)."""
    if text == "all":
        return kimodo_frames(start, frame_count - 1, fps)
    if text.startswith("every:"):
        step = whole_number(text[len("every:"):], option, "every:N's N")
        if step < 1:
            raise KimodoError("{}: expected every:N with N a positive whole number, got {!r}".format(option, text))
        frames = list(range(start, frame_count, step))
        if frames and frames[-1] != frame_count - 1:
            frames.append(frame_count - 1)
        return tuple(frames)
    return tuple(whole_number(part, option, "a frame number") for part in text.split(","))


def extract(motion: Motion, selection: Selection, source: str) -> ConstraintSet:
    motion = on_kimodo_skeleton(motion, source)
    count = motion.frame_count
    start = selection.start
    if not 0 <= start < count:
        raise KimodoError("{}: --start {} is outside the motion (frames 0-{})".format(source, start, count - 1))
    for kind, frames in selection.frames.items():
        for frame in frames:
            if not start <= frame < count:
                raise KimodoError("{}: --{} frame {} is outside the motion from --start {} (frames {}-{})".format(
                    source, kind, frame, start, start, count - 1))
    skeleton = motion.skeleton
    smooth = smooth_root_path([motion.root_position(f) for f in range(count)])
    posed: Dict[int, list] = {}

    def positions(frame: int):
        if frame not in posed:
            posed[frame] = pose_globals(skeleton, motion.frame_rotations(frame), motion.root_position(frame))[1]
        return posed[frame]

    heading = root_headings(skeleton, [positions(start)])[0]
    angle = math.atan2(heading[1], heading[0])
    turn = quat_from_axis_angle((0.0, 1.0, 0.0), -angle)
    origin = smooth[start]

    def place(point: Sequence[float]) -> Tuple[float, float, float]:
        return quat_rotate(turn, (point[0] - origin[0], point[1], point[2] - origin[2]))

    def written(frame: int) -> int:
        return int(round((frame - start) * FPS / motion.fps))

    entries: List[Entry] = []
    for kind in KINDS:
        frames = selection.frames.get(kind, ())
        if not frames:
            continue
        out = tuple(written(f) for f in frames)
        if len(set(out)) != len(out):
            raise KimodoError("{}: --{}: two frames land on one frame at {:g} fps".format(source, kind, FPS))
        smooth_root = tuple((place(smooth[f])[0], place(smooth[f])[2]) for f in frames)
        if kind == "root2d":
            headings = []
            for f in frames:
                h = root_headings(skeleton, [positions(f)])[0]
                a = math.atan2(h[1], h[0]) - angle
                headings.append((math.cos(a), math.sin(a)))
            entries.append(Entry(len(entries), kind, out, smooth_root=smooth_root, heading=tuple(headings)))
            continue
        poses = []
        for f in frames:
            rotations = list(motion.frame_rotations(f))
            rotations[0] = quat_multiply(turn, rotations[0])
            poses.append(tuple(tuple(quat_to_rotation_vector(q)) for q in rotations))
        roots = tuple(place(motion.root_position(f)) for f in frames)
        entries.append(Entry(len(entries), kind, out, rotations=tuple(poses), root_positions=roots,  # type: ignore[arg-type]
                             smooth_root=smooth_root))
    if not entries:
        raise KimodoError("{}: nothing to extract: give --fullbody, --{}, --root2d or --tail".format(source, "/--".join(BASE_OF_TYPE)))
    return ConstraintSet(source, "kimodo", tuple(entries))


def tail(motion: Motion, frames: int, source: str) -> ConstraintSet:
    """The last `frames` Kimodo frames (1/30 s apart) as fullbody constraints at frames 0..frames-1 of a new
    generation."""
    motion = on_kimodo_skeleton(motion, source)
    last = motion.frame_count - 1
    # An int compared with a float is exact: a count of 400 digits is refused before it meets a float.
    if frames < 1 or frames > last * FPS / motion.fps + 2 or int(round((frames - 1) * motion.fps / FPS)) > last:
        raise KimodoError("{}: --tail {}: the motion has {} frames".format(source, frames, motion.frame_count))
    chosen = tuple(last - int(round((frames - 1 - i) * motion.fps / FPS)) for i in range(frames))
    return extract(motion, Selection({"fullbody": chosen}, chosen[0]), source)
