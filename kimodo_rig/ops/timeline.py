"""Longer motion out of clips: join with cross-fades, trim, and seamless loops. Pure functions: every
result is a new Motion; the inputs are never changed.

Conventions, stated once:
- A *placement* is one rigid move of a whole clip that leaves its height alone: a turn about +Y through the
  world origin, then a move on the floor plane, p' = R p + move with move[1] = 0. Only the root's rotation
  and position change, so every joint moves by the same turn and move.
- *Heading*: on Kimodo's skeletons the angle Kimodo stores as `global_root_heading` (its left-to-right hip
  line, `derived_channels.root_headings`); on any other rig the heading of the first joint where the
  skeleton branches (the hips of every humanoid rig), relative to its rest. 0 faces +Z; positive turns
  towards +X.
- A *blend* of N frames: the last N frames of one clip and the first N of the next play at once, the
  weight of the next rising as smoothstep((m + 1) / (N + 1)) over m = 0..N-1; local rotations are slerped,
  root positions interpolated linearly, and a foot contact holds only where both clips have it.
"""
from __future__ import annotations

import math
import operator
from array import array
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from .. import skeletons
from ..errors import KimodoError
from ..model import Motion, Skeleton
from ..rotations import Quat, Vec3, quat_multiply, quat_rotate, quat_slerp, quat_conjugate, wrap_angle, yaw_angle, yaw_rotation
from . import derived_channels
from .fk import global_rotations_and_positions, pose_globals, rest_global_rotations, rest_positions, world_positions

DEFAULT_BLEND_S = 1.0 / 3.0  # s: the cross-fade at a seam when none is asked (10 frames at Kimodo's 30 fps)
DEFAULT_LOOP_SECONDS = 1.0
VELOCITY_WEIGHT_S = 0.1  # loop search: a 1 m/s velocity difference weighs as much as 0.1 m of pose difference
SEARCH_JOINT_SPACING_M = 0.05  # loop search: joints closer than this at rest to one already compared are skipped
SEARCH_FRAMES = 150  # loop search: candidate frames compared in the first, coarse pass
SAME_SKELETON_TOLERANCE_M = 1e-4


@dataclass(frozen=True)
class Placement:
    """The rigid turn-and-move given to a whole clip (see the module docstring)."""

    turn: float = 0.0  # radians about +Y
    move: Vec3 = (0.0, 0.0, 0.0)  # metres, move[1] == 0

    @property
    def rotation(self) -> Quat:
        return yaw_rotation(self.turn)

    def point(self, p: Sequence[float]) -> Vec3:
        x, y, z = quat_rotate(self.rotation, p)
        return (x + self.move[0], y, z + self.move[2])


@dataclass(frozen=True)
class Joined:
    motion: Motion
    placements: Tuple[Placement, ...]  # one per input clip; the first is the identity
    seams: Tuple[int, ...]  # output frame where each blend window starts (or each next clip, for no blend)


@dataclass(frozen=True)
class Loop:
    motion: Motion
    start: int  # the loop plays source frames start .. end-1 and runs from its last frame back into start
    end: int
    pose_error_m: float  # RMS over joints of the root-relative, heading-aligned positions at start vs end
    velocity_error_m_s: float  # the same for joint velocities
    cycle: Placement  # the root motion one cycle makes: the turn and move taking frame start onto frame end
    in_place: bool


# --- placing and heading --------------------------------------------------------------------------------

def place(motion: Motion, placement: Placement) -> Motion:
    """The whole clip turned and moved rigidly (the root's rotation and position; nothing else changes)."""
    rotations = array("d", motion.local_rotations)
    roots = array("d")
    turn = placement.rotation
    stride = motion.joint_count * 4
    for frame in range(motion.frame_count):
        base = frame * stride
        rotations[base:base + 4] = array("d", quat_multiply(turn, rotations[base:base + 4]))
        roots.extend(placement.point(motion.root_position(frame)))
    return Motion(motion.skeleton, rotations, roots, motion.fps, foot_contacts=motion.foot_contacts,
                  name=motion.name, prompt=motion.prompt)


def _branching_joint(skeleton: Skeleton) -> int:
    for joint in range(skeleton.joint_count):
        if len(skeleton.children(joint)) >= 2:
            return joint
    return 0


def headings(motion: Motion, frames: Sequence[int]) -> List[float]:
    """The heading (radians, see the module docstring) of each of the given frames."""
    skeleton = motion.skeleton
    poses = [pose_globals(skeleton, motion.frame_rotations(f), motion.root_position(f)) for f in frames]
    return _headings_of(skeleton, [p[0] for p in poses], [p[1] for p in poses])


def _headings_of(skeleton: Skeleton, global_rotations: Sequence[Sequence[Quat]],
                 positions: Sequence[Sequence[Vec3]]) -> List[float]:
    if skeleton.name in skeletons.BUILTIN:
        return [math.atan2(s, c) for c, s in derived_channels.root_headings(skeleton, positions)]
    joint = _branching_joint(skeleton)
    inverse_rest = quat_conjugate(rest_global_rotations(skeleton)[joint])
    return [yaw_angle(quat_multiply(frame[joint], inverse_rest)) for frame in global_rotations]


def _mean_angle(angles: Sequence[float]) -> float:
    return math.atan2(sum(math.sin(a) for a in angles), sum(math.cos(a) for a in angles))


def placement_after(previous: Motion, following: Motion, blend: int) -> Placement:
    """Where `following` goes so it continues `previous`: with a blend, the heading over its first `blend`
    frames matches the heading over the last `blend` frames of `previous` (mean of the differences) and its
    root path over those frames lies on theirs (least squares on the floor plane); without one, its first
    frame takes the heading of the last and the root goes on by the last frame's step."""
    count = previous.frame_count
    if blend:
        a_frames, b_frames = list(range(count - blend, count)), list(range(blend))
        turn = _mean_angle([a - b for a, b in zip(headings(previous, a_frames), headings(following, b_frames))])
        rotation = yaw_rotation(turn)
        a_points = [previous.root_position(f) for f in a_frames]
        b_points = [quat_rotate(rotation, following.root_position(f)) for f in b_frames]
        move = tuple((sum(p[k] for p in a_points) - sum(p[k] for p in b_points)) / blend for k in (0, 2))
        return Placement(turn, (move[0], 0.0, move[1]))
    turn = wrap_angle(headings(previous, [count - 1])[0] - headings(following, [0])[0])
    last = previous.root_position(count - 1)
    before = previous.root_position(count - 2) if count > 1 else last
    start = quat_rotate(yaw_rotation(turn), following.root_position(0))
    return Placement(turn, (2 * last[0] - before[0] - start[0], 0.0, 2 * last[2] - before[2] - start[2]))


# --- blending -------------------------------------------------------------------------------------------

def blend_weight(m: int, blend: int) -> float:
    """The following clip's weight at frame m of a blend of `blend` frames (smoothstep, never 0 or 1)."""
    x = (m + 1) / (blend + 1)
    return x * x * (3.0 - 2.0 * x)


class _Builder:
    """Output buffers filled frame by frame from the input clips."""

    def __init__(self, skeleton: Skeleton, with_contacts: bool) -> None:
        self.stride = skeleton.joint_count * 4
        self.rotations = array("d")
        self.roots = array("d")
        self.contacts: Optional[array] = array("d") if with_contacts else None

    @property
    def frame_count(self) -> int:
        return len(self.roots) // 3

    def copy(self, motion: Motion, start: int, end: int, contacts: Optional[Sequence[float]]) -> None:
        # Readers may keep float32 buffers ('f'); the joined motion is double: copy values, not arrays.
        self.rotations.extend(motion.local_rotations[start * self.stride:end * self.stride].tolist())
        self.roots.extend(motion.root_positions[start * 3:end * 3].tolist())
        if self.contacts is not None and contacts is not None:
            self.contacts.extend(list(contacts[start * 4:end * 4]))

    def blend(self, a: Motion, a_frame: int, a_contacts, b: Motion, b_frame: int, b_contacts, weight: float) -> None:
        ra, rb = a.local_rotations, b.local_rotations
        for i in range(0, self.stride, 4):
            ia, ib = a_frame * self.stride + i, b_frame * self.stride + i
            self.rotations.extend(quat_slerp(ra[ia:ia + 4], rb[ib:ib + 4], weight))
        pa, pb = a.root_position(a_frame), b.root_position(b_frame)
        self.roots.extend(pa[k] + (pb[k] - pa[k]) * weight for k in range(3))
        if self.contacts is not None:
            self.contacts.extend(1.0 if a_contacts[a_frame * 4 + k] >= 0.5 and b_contacts[b_frame * 4 + k] >= 0.5
                                 else 0.0 for k in range(4))


def _contacts_of(motions: Sequence[Motion]) -> Optional[List[Sequence[float]]]:
    """Each clip's foot contacts when any clip carries them; the others get Kimodo's derived contacts."""
    if all(m.foot_contacts is None for m in motions):
        return None
    if motions[0].skeleton.name not in skeletons.BUILTIN:
        return None
    return [m.foot_contacts if m.foot_contacts is not None
            else derived_channels.detect_foot_contacts(m.skeleton, world_positions(m), m.fps) for m in motions]


# --- join -----------------------------------------------------------------------------------------------

def _describe(motion: Motion) -> str:
    return "{} ({} joints)".format(motion.skeleton.label, motion.joint_count)


def _same_skeleton(a: Skeleton, b: Skeleton) -> bool:
    if a.joint_names != b.joint_names or a.parents != b.parents:
        return False
    pairs = list(zip(a.rest_offsets, b.rest_offsets)) + list(zip(a.rest_rotations, b.rest_rotations))
    return all(abs(x - y) <= SAME_SKELETON_TOLERANCE_M for p, q in pairs for x, y in zip(p, q))


def check_joinable(motions: Sequence[Motion], sources: Sequence[str]) -> None:
    """One KimodoError line naming both clips when two are of different skeletons or frame rates."""
    first, first_source = motions[0], sources[0]
    for motion, source in zip(motions[1:], sources[1:]):
        if not _same_skeleton(first.skeleton, motion.skeleton):
            a, b = _describe(first), _describe(motion)
            if a == b:
                a, b = first.skeleton.name, motion.skeleton.name + " (other joints or bone lengths)"
            raise KimodoError("{} is {} but {} is {}: clips of different skeletons cannot be joined".format(
                source, b, first_source, a))
        if abs(motion.fps - first.fps) > 1e-9 * max(motion.fps, first.fps):
            raise KimodoError("{} is {:g} fps but {} is {:g} fps: clips of different frame rates cannot be "
                              "joined".format(source, motion.fps, first_source, first.fps))


def default_blend(fps: float) -> int:
    """Frames of the default cross-fade (DEFAULT_BLEND_S) at this frame rate."""
    return max(1, int(round(DEFAULT_BLEND_S * fps)))


def join(motions: Sequence[Motion], *, blend: Optional[int] = None, sources: Sequence[str] = ()) -> Joined:
    """The clips one after another, each placed where the one before ends (`placement_after`) and
    cross-faded with it over `blend` frames (None: `default_blend` of the first's rate):
    sum(len) - blend * (len(motions) - 1) frames."""
    if not motions:
        raise ValueError("join needs at least one motion")
    if blend is None:
        blend = default_blend(motions[0].fps)
    if blend < 0:
        raise ValueError("blend must be 0 or more frames")
    names = list(sources) or [m.name or m.skeleton.name for m in motions]
    check_joinable(motions, names)
    last = len(motions) - 1
    for index, (motion, source) in enumerate(zip(motions, names)):
        ends = (index > 0) + (index < last)
        if motion.frame_count < blend * ends or motion.frame_count < 1:
            raise KimodoError("{}: {} frames cannot hold a {}-frame blend{} (needs {} frames)".format(
                source, motion.frame_count, blend, " at both ends" if ends == 2 else "", max(1, blend * ends)))
    placed = [motions[0]]
    placements = [Placement()]
    for motion in motions[1:]:
        placement = placement_after(placed[-1], motion, blend)
        placements.append(placement)
        placed.append(place(motion, placement))
    contacts = _contacts_of(motions)
    out = _Builder(motions[0].skeleton, contacts is not None)
    seams = []
    for index, motion in enumerate(placed):
        own = contacts[index] if contacts else None
        start = blend if index > 0 else 0
        end = motion.frame_count - (blend if index < last else 0)
        out.copy(motion, start, end, own)
        if index < last:
            seams.append(out.frame_count)
            following = placed[index + 1]
            following_contacts = contacts[index + 1] if contacts else None
            for m in range(blend):
                out.blend(motion, end + m, own, following, m, following_contacts, blend_weight(m, blend))
    prompts = [m.prompt for m in motions if m.prompt]
    result = Motion(motions[0].skeleton, out.rotations, out.roots, motions[0].fps, foot_contacts=out.contacts,
                    name="+".join(m.name for m in motions if m.name), prompt=" / ".join(prompts))
    return Joined(result, tuple(placements), tuple(seams))


# --- trim -----------------------------------------------------------------------------------------------

def trim(motion: Motion, start: int, end: Optional[int] = None, *, source: str = "") -> Motion:
    """Frames start .. end-1 (end defaults to the clip's end)."""
    name = source or motion.name or motion.skeleton.name
    count = motion.frame_count
    stop = count if end is None else end
    if start < 0 or stop < 0:
        raise KimodoError("{}: frames are counted from 0 (got {}..{})".format(name, start, stop))
    if start >= count:
        raise KimodoError("{}: start frame {} is past the end ({} frames)".format(name, start, count))
    if stop > count:
        raise KimodoError("{}: end frame {} is past the end ({} frames)".format(name, stop, count))
    if stop <= start:
        raise KimodoError("{}: frames {}..{} is an empty range".format(name, start, stop))
    stride = motion.joint_count * 4
    contacts = motion.foot_contacts[start * 4:stop * 4] if motion.foot_contacts is not None else None
    return Motion(motion.skeleton, motion.local_rotations[start * stride:stop * stride],
                  motion.root_positions[start * 3:stop * 3], motion.fps, foot_contacts=contacts,
                  name=motion.name, prompt=motion.prompt)


# --- loop -----------------------------------------------------------------------------------------------

def _search_joints(skeleton: Skeleton) -> List[int]:
    """The root and every joint not within SEARCH_JOINT_SPACING_M of one already taken, at rest (fingers
    and the stacked one-axis joints of a robot count once)."""
    rest = rest_positions(skeleton)
    taken: List[int] = []
    for joint, p in enumerate(rest):
        if all(sum((p[k] - rest[t][k]) ** 2 for k in range(3)) >= SEARCH_JOINT_SPACING_M ** 2 for t in taken):
            taken.append(joint)
    return taken


def _turned(angle: float, v: Sequence[float]) -> Vec3:
    """v turned by `angle` about +Y."""
    c, s = math.cos(angle), math.sin(angle)
    return (v[0] * c + v[2] * s, v[1], -v[0] * s + v[2] * c)


def _frame_features(positions: Sequence[Sequence[Vec3]], heading: Sequence[float], fps: float, frame: int,
                    joints: Sequence[int]) -> Tuple[List[float], List[float]]:
    """One frame's joint positions relative to the root and joint velocities (m/s, forward difference, the
    last frame backward), both turned so the frame's heading faces +Z."""
    count = len(positions)
    a, b = (frame, frame + 1) if frame + 1 < count else (frame - 1, frame)
    root = positions[frame][0]
    relative: List[float] = []
    velocity: List[float] = []
    for j in joints:
        relative.extend(_turned(-heading[frame], [positions[frame][j][k] - root[k] for k in range(3)]))
        if count > 1:
            velocity.extend(_turned(-heading[frame], [(positions[b][j][k] - positions[a][j][k]) * fps for k in range(3)]))
        else:
            velocity.extend((0.0, 0.0, 0.0))
    return relative, velocity


def _rms(a: Sequence[float], b: Sequence[float]) -> float:
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)) / max(1, len(a) // 3))


def _best_pair(features: Sequence[Sequence[float]], first: int, last: int, gap: int) -> Tuple[int, int]:
    """(i, j) with first <= i, i + gap <= j <= last whose feature vectors are closest: a coarse pass over
    about SEARCH_FRAMES frames, then every pair near the best one."""
    squares = [sum(map(operator.mul, f, f)) for f in features]

    def cost(i: int, j: int) -> float:
        return squares[i] + squares[j] - 2.0 * sum(map(operator.mul, features[i], features[j]))

    stride = max(1, -(-(last - first + 1) // SEARCH_FRAMES))
    best = None
    for i in range(first, last - gap + 1, stride):
        for j in range(i + gap, last + 1, stride):
            c = cost(i, j)
            if best is None or c < best[0]:
                best = (c, i, j)
    assert best is not None
    _, i0, j0 = best
    for i in range(max(first, i0 - stride), i0 + stride + 1):
        for j in range(max(i + gap, j0 - stride), min(last, j0 + stride) + 1):
            c = cost(i, j)
            if c < best[0]:
                best = (c, i, j)
    return best[1], best[2]


def find_loop(motion: Motion, *, min_length_s: float = DEFAULT_LOOP_SECONDS, blend: Optional[int] = None,
              in_place: bool = False, source: str = "") -> Loop:
    """A seamless loop cut from `motion`: the frames i < j at least `min_length_s` apart (and `blend` frames
    after the start, for the seam) whose poses are most alike; the loop plays i .. j-1 and its last `blend`
    frames are cross-faded into the frames before i, placed by the cycle's own turn and move, so its last
    frame runs into its first. That turn and move (frame i onto frame j) is kept as root motion, or taken
    out evenly over the cycle with `in_place`, so the loop starts and ends on one spot. `blend` None:
    `default_blend` of the motion's rate."""
    name = source or motion.name or motion.skeleton.name
    count, fps = motion.frame_count, motion.fps
    if blend is None:
        blend = default_blend(fps)
    if not math.isfinite(min_length_s * fps):  # 1e308 s or inf: no frame count to compare
        raise KimodoError("{}: {} frames ({:.2f} s) hold no loop of at least {:g} s".format(
            name, count, motion.duration, min_length_s))
    gap = max(int(math.ceil(min_length_s * fps - 1e-9)), blend + 1, 1)
    if blend + gap > count - 1:
        raise KimodoError("{}: {} frames ({:.2f} s) hold no loop of at least {:g} s with {} frames before it for "
                          "the seam (needs {} frames)".format(name, count, motion.duration, min_length_s, blend,
                                                              blend + gap + 1))
    global_rotations, positions = global_rotations_and_positions(motion)
    heading = _headings_of(motion.skeleton, global_rotations, positions)
    joints = _search_joints(motion.skeleton)
    features = []
    for frame in range(count):
        relative, velocity = _frame_features(positions, heading, fps, frame, joints)
        features.append(relative + [v * VELOCITY_WEIGHT_S for v in velocity])
    start, end = _best_pair(features, blend, count - 1, gap)

    every = list(range(motion.joint_count))
    rel_a, vel_a = _frame_features(positions, heading, fps, start, every)
    rel_b, vel_b = _frame_features(positions, heading, fps, end, every)
    turn = wrap_angle(heading[end] - heading[start])
    a, b = motion.root_position(start), motion.root_position(end)
    turned_start = _turned(turn, a)
    cycle = Placement(turn, (b[0] - turned_start[0], 0.0, b[2] - turned_start[2]))

    before = place(trim(motion, start - blend, start), cycle)  # the frames that lead into frame j = cycle(i)
    contacts = _contacts_of([motion])
    own = contacts[0] if contacts else None
    before_contacts = own[(start - blend) * 4:start * 4] if own is not None else None
    out = _Builder(motion.skeleton, own is not None)
    out.copy(motion, start, end - blend, own)
    for m in range(blend):
        out.blend(motion, end - blend + m, own, before, m, before_contacts, blend_weight(m, blend))
    looped = Motion(motion.skeleton, out.rotations, out.roots, fps, foot_contacts=out.contacts,
                    name=(motion.name + "_loop") if motion.name else "", prompt=motion.prompt)
    if in_place:
        looped = _without_cycle_travel(looped, cycle, a, b)
    return Loop(looped, start, end, _rms(rel_a, rel_b), _rms(vel_a, vel_b), cycle, in_place)


def _without_cycle_travel(motion: Motion, cycle: Placement, start_root: Vec3, end_root: Vec3) -> Motion:
    """Frame k turned back by k/L of the cycle's turn about the start's root and moved back by k/L of its
    move, so the frame after the last (the next cycle's first) lands on the first."""
    length = motion.frame_count
    centre = (start_root[0], 0.0, start_root[2])
    travel = (end_root[0] - start_root[0], 0.0, end_root[2] - start_root[2])
    rotations = array("d", motion.local_rotations)
    roots = array("d")
    stride = motion.joint_count * 4
    for frame in range(length):
        s = frame / length
        back = Placement(-cycle.turn * s, (0.0, 0.0, 0.0))
        shifted = back.point((centre[0] + s * travel[0], 0.0, centre[2] + s * travel[2]))
        undo = Placement(-cycle.turn * s, (centre[0] - shifted[0], 0.0, centre[2] - shifted[2]))
        base = frame * stride
        rotations[base:base + 4] = array("d", quat_multiply(undo.rotation, rotations[base:base + 4]))
        roots.extend(undo.point(motion.root_position(frame)))
    return Motion(motion.skeleton, rotations, roots, motion.fps, foot_contacts=motion.foot_contacts,
                  name=motion.name, prompt=motion.prompt)
