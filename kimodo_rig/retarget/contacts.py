"""The contact plan: per foot, the spans in which Kimodo has its heel or toe down (held through the step out
of the last contact frame, which Kimodo's skate measure counts), each with one pin, the foot standing as
the retargeted one stands over the span, its lowest sole point on the rest floor (docs/leg-solver.md).

This module also holds the leg solver's one table of constants (contacts, hips, legs, ease, hands), in
seconds, degrees and shares; nothing is counted in frames."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from ..ops.fk import rest_pose
from ..rotations import (Quat, Vec3, add, cross, length, normalize, quat_conjugate, quat_from_axis_angle, quat_multiply,
                         quat_normalize, quat_rotate, quat_to_rotation_vector, subtract, yaw_rotation)
from .mapping import SIDES, HumanoidMap
from .soles import Point, Soles, posed_point, subtree

# The leg solver's constants: name, value, unit, why.
STEP_OUT_S = 1.0 / 30.0  # s: a pin holds this long past a contact, at least a frame (Kimodo's skate counts the step out of its last contact frame; its clips' frame is 1/30 s: a frame at 60-120 fps held 1/60-1/120 s, the 30 fps clip's 1/30)
CONTACT_GAP_S = 0.1  # s: a heel or toe lifted for less than this between two contacts stays pinned (speed-detected contacts flicker at 60-120 fps)
EASE_S = 0.15  # s: a foot's goal eases from the animated foot to its pin this long before a span and back after (a step's landing)
HIPS_WINDOW_S = 0.12  # s: half-width of the one smoothing of the hips' path and of the planted feet's carry (a stride's beat)
HIPS_TURN_SHARE = 0.75  # of the turn that keeps both planted feet where they landed, the hips take while a foot is on its heel or toe alone (the legs take the rest, rather than the far knee; a kneel's toe behind); both flat, all of it
HIPS_ROLL_MAX_DEG = 25.0  # deg: the most the pelvis rolls beyond the retargeted pose's so both legs reach (a stiff leg's hip hike) or both pins hold (a kneel)
HIPS_TURN_RETURN_DEG = 60.0  # deg a second: how fast that turn goes back to the clip's with one foot down
TOE_ROLL_MAX_DEG = 90.0  # deg: the most a foot on its toe alone rolls up from its pin (a toe-off; a kneel's foot stands on end)
KNEE_STRAIGHTEST_DEG = 12.0  # deg: the least a locked knee stays bent (a leg pulled straight on its pin snaps its knee as the pin lets go)
FOOT_PITCH_MAX_DEG = 60.0  # deg: the most a free foot turns about its ankle (toward flat over a swing; toe-up in a frame) to keep its sole above the floor (then the leg lifts it)
KNEE_FOLDEST_DEG = 150.0  # deg: the most a locked knee folds (a deep squat) before the hips rise, unless the retargeted leg folds further (a kneel)
RIGID_EASE_S = 0.3  # s: a foot that is the leg's last bone eases from standing as its pin has it to the leg's own reach this long before and after a span (its knee takes all the hips' move while it stands)
KNEE_LEAN_DEG = 3.0  # deg: a knee bent less than about this leans on the hips' forward for its plane (smoothly: a straight leg has none)
# The hands kept above the floor (hands.py):
ARM_EASE_S = 0.1  # s: each lift eases in before and out after the frames that need it over this long (2 frames
#                   either side at 30 fps, as the 2-frame ease before), so the arm does not jump; the hand rides
#                   a little above the floor there
TORSO_LIFT_MAX_DEG = 80.0  # deg: the most the back turns up (and never so far its lean ends further from upright)
WRIST_PITCH_MAX_DEG = 60.0  # deg: the most the hand turns up at the wrist (a hand laid flat on the floor)
ARM_SWING_MAX_DEG = 90.0  # deg: the most the whole arm swings up about its shoulder
ARM_SWING_OUTWARD = 0.25  # of the arm's reach (a ratio): how far out to the side a hanging arm's swing leans,
#                           against its own lean, so an arm hanging straight down swings out, not into the body
HAND_SAMPLE_S = 1.0 / 120.0  # s: with the plan, how often each stage's need is read and lifted whatever the frame rate (between a clip's frames on poses interpolated): steeper than a frame where two hands' depths cross (the robot's back on g1_01: 27 deg at 60 fps between 30 fps samples of 20 and 17), it read otherwise at 30, 60 and 120 fps


@dataclass(frozen=True)
class Foot:
    """One side's leg and foot as the solver turns them: joints, sole points, lengths and axes at bind."""

    side: str
    hip: int  # the thigh
    knee: int  # the shin; the foot itself for a one-bone leg (no knee: a lower bone of length 0)
    ankle: int  # the foot joint, Kimodo's heel contact
    toe: Optional[int]  # the toe bone, when the foot has one
    toe_point: Point  # Kimodo's toe contact: the toe joint, or the sole's front
    sole: Tuple[Point, ...]  # the foot's points that can be lowest (soles.Soles.feet)
    bind_rotation: Quat  # the foot's world rotation at bind, whose heading is the character's forward
    lateral: Vec3  # the foot's pitch axis at bind (the character's left), horizontal
    forward: Vec3  # the character's facing at bind, horizontal
    thigh: float  # metres: hip to knee, knee to ankle
    shin: float
    # The leg's last bone where the sole rides on it (a one-bone leg, a shin with no foot bone): the foot
    # is that bone, turned with it, its ankle the joint ending the bone's line; None for a foot bone.
    body: Optional[int] = None
    standing: float = 0.0  # metres: the ankle over the sole's lowest point, the foot standing as at bind


@dataclass(frozen=True)
class Span:
    """Frames first..last (inclusive) a foot is held: per frame whether its heel and its toe are pinned;
    the pin: the standing foot's ankle and toe point (world), its world rotation and heading from bind,
    and its toe bone's rotation relative to it."""

    first: int
    last: int
    heel: Tuple[bool, ...]
    toe: Tuple[bool, ...]
    ankle: Vec3
    toe_point: Vec3
    yaw: float  # radians about +Y
    rotation: Quat
    toe_local: Optional[Quat]
    # Per frame the lowest the knee may stand (Kimodo's knee, under its floor in a kneel, as deep per the
    # knee's height at rest; `feet._knees_kept` sets it from the source): none, no bound.
    knee_lowest: Tuple[float, ...] = ()


def feet(tmap: HumanoidMap, soles: Soles, forward: Vec3) -> Dict[str, Foot]:
    """The sides whose leg ends in a foot: a thigh and a foot below it (a shin between them or not)."""
    skeleton = tmap.skeleton
    rotations, positions = rest_pose(skeleton)
    result = {}
    for side in SIDES:
        hip, ankle = tmap.bones.get("thigh_" + side), tmap.bones.get("foot_" + side)
        if hip is None or ankle is None or ankle == hip or ankle not in subtree(skeleton, hip):
            continue
        knee = tmap.bones.get("calf_" + side)
        if knee is None or knee in (hip, ankle) or knee not in subtree(skeleton, hip) or ankle not in subtree(skeleton, knee):
            knee = ankle
        toe = tmap.bones.get("toe_" + side)
        toe = toe if toe is not None and toe != ankle and toe in subtree(skeleton, ankle) else None
        body = None
        below = set(subtree(skeleton, ankle))
        if not any(term[0] in below for point in soles.feet[side] for term in point):
            body = skeleton.parents[ankle]
            ends = [tmap.ends.get(part) for part in ("calf_" + side, "thigh_" + side) if tmap.bones.get(part) == body]
            if ends and ends[0] and len(ends[0]) == 1 and skeleton.parents[ends[0][0]] == body:
                ankle = ends[0][0]  # the ankle ankles.with_ankles measured from the mesh, not the tip
        toe_point = soles.toe_points.get(side) or ((ankle, 1.0, (0.0, 0.0, 0.0)),)
        lateral = normalize(cross((0.0, 1.0, 0.0), forward))
        if body is not None:  # the thigh reaches the rigid foot's top (none for a one-bone leg), the rest is rigid
            knee = body
        result[side] = Foot(side, hip, knee, ankle, toe, toe_point, soles.feet[side], rotations[ankle], lateral, forward,
                            length(subtract(positions[knee], positions[hip])), length(subtract(positions[ankle], positions[knee])),
                            body, positions[ankle][1] - min(posed_point(p, rotations, positions)[1] for p in soles.feet[side]))
    return result


def held(flags: Sequence[Tuple[bool, bool]], fps: float) -> List[Tuple[bool, bool]]:
    """Per frame (heel, toe) pinned: in contact, or lifted for less than CONTACT_GAP_S between two contacts
    (contacts detected from speeds flicker at high frame rates), or either within STEP_OUT_S after, and at
    least the frame after (the step out of a contact frame is part of Kimodo's skate measure, so the pin
    holds through it; in seconds, so a 60 fps clip holds as long as its 30 fps original: held a frame,
    the dress's toe left the floor 1/60 s earlier at 60 fps and stood 21 cm higher at 6.47 s of g1_02)."""
    down = list(zip(*[_bridged([f[c] for f in flags], CONTACT_GAP_S * fps) for c in (0, 1)]))
    after = max(1, int(math.floor(STEP_OUT_S * fps + 1e-6)))
    return [tuple(any(down[u][c] for u in range(max(0, t - after), t + 1)) for c in (0, 1)) for t in range(len(down))]


def _bridged(down: Sequence[bool], longest: float) -> List[bool]:
    """`down` with each run of False shorter than `longest` frames between two True runs made True."""
    result = list(down)
    last = None  # the last True frame so far
    for t, value in enumerate(down):
        if value:
            if last is not None and 1 < t - last and t - last - 1 < longest:
                for u in range(last + 1, t):
                    result[u] = True
            last = t
    return result


def foot_yaw(foot: Foot, rotation: Quat) -> float:
    """The heading the foot's world `rotation` gives it, from its heading at bind (radians about +Y)."""
    turned = quat_rotate(quat_multiply(rotation, quat_conjugate(foot.bind_rotation)), foot.forward)
    return math.atan2(turned[0], turned[2]) - math.atan2(foot.forward[0], foot.forward[2])


def plan(foot: Foot, flags: Sequence[Tuple[bool, bool]], poses, floor: float, fps: float) -> List[Span]:
    """The foot's spans: maximal runs of frames whose heel or toe is held (`held`), each pinned at the
    median over its flat frames (heel and toe both held; else its heel frames, else its toe frames) of the
    retargeted foot's ankle (or toe point), the foot turned as in the middle one of them, its lowest point
    on the `floor`: with frames evenly spaced in time, that median is the time-weighted one, so the pin
    does not depend on the frame rate."""
    pinned = held(flags, fps)
    spans = []
    frame = 0
    count = len(pinned)
    while frame < count:
        if not (pinned[frame][0] or pinned[frame][1]):
            frame += 1
            continue
        first = frame
        while frame < count and (pinned[frame][0] or pinned[frame][1]):
            frame += 1
        last = frame - 1
        heel = tuple(pinned[t][0] for t in range(first, last + 1))
        toe = tuple(pinned[t][1] for t in range(first, last + 1))
        on_toe = not any(heel)
        chosen = _pin_frames(first, heel, toe)
        # The foot stands as the retargeted one does in the middle of those frames, its lowest sole point
        # on the rest floor, where the median of those frames has it; a foot bone held flat (heel and
        # toe) rolled across no higher than the animation holds its ankle (`_rolled_as_high`: the knee
        # would bend for the rest).
        rotations, positions = poses[chosen[len(chosen) // 2]]
        rotation = rotations[foot.ankle]
        arms = [subtract(posed_point(p, rotations, positions), positions[foot.ankle]) for p in foot.sole + (foot.toe_point,)]
        if foot.body is None and not on_toe and heel[chosen[0] - first] and toe[chosen[0] - first]:
            rotation = _rolled_as_high(foot, rotation, positions[foot.ankle][1] - floor, arms[:-1])
            turn = quat_multiply(rotation, quat_conjugate(rotations[foot.ankle]))
            arms = [quat_rotate(turn, arm) for arm in arms]
        toe_local = None if foot.toe is None else quat_multiply(quat_conjugate(rotations[foot.ankle]), rotations[foot.toe])
        toe_offset = arms[-1]
        ankle_height = floor - min(arm[1] for arm in arms[:-1])
        if on_toe:
            points = [posed_point(foot.toe_point, *poses[t]) for t in chosen]
            toe_point = (_median([p[0] for p in points]), ankle_height + toe_offset[1], _median([p[2] for p in points]))
            ankle = subtract(toe_point, toe_offset)
        else:
            points = [poses[t][1][foot.ankle] for t in chosen]
            ankle = (_median([p[0] for p in points]), ankle_height, _median([p[2] for p in points]))
            toe_point = add(ankle, toe_offset)
        yaw = foot_yaw(foot, rotation)
        spans.append(Span(first, last, heel, toe, ankle, toe_point, yaw, rotation, toe_local))
    return spans


def _unrolled(foot: Foot, rotation: Quat) -> Quat:
    """The foot's world `rotation` with its roll about its own length taken out: pointing where it points
    (heading and pitch from bind kept), level across as at bind."""
    pointing = quat_rotate(quat_multiply(rotation, quat_conjugate(foot.bind_rotation)), foot.forward)
    heading = yaw_rotation(foot_yaw(foot, rotation))
    pitch = math.atan2(pointing[1], math.hypot(pointing[0], pointing[2]))
    return quat_normalize(quat_multiply(quat_from_axis_angle(quat_rotate(heading, foot.lateral), -pitch),
                                        quat_multiply(heading, foot.bind_rotation)))


def _rolled_as_high(foot: Foot, rotation: Quat, height: float, arms: Sequence[Vec3]) -> Quat:
    """The foot's world `rotation` rolled back toward level across (`_unrolled`) by the least that keeps its
    sole (`arms`: its points from the ankle) on or above a floor `height` under the ankle, at most all the
    way. A foot held flat on its edge keeps as much roll as holds its ankle where the animation has it: a
    human's narrow foot all of it; stood on its edge, RobotExpressive's 50 cm wide one (as Blender imports
    it) raised its ankle 13 cm over Kimodo's 18 deg roll on soma_04, and its knee bent 35 deg more than
    Kimodo's for it."""
    from .legs import clearing_pitch  # legs imports this module
    back = quat_to_rotation_vector(quat_multiply(_unrolled(foot, rotation), quat_conjugate(rotation)))
    angle = length(back)
    if angle <= 0.0:
        return rotation
    axis = tuple(c / angle for c in back)
    if min(quat_rotate(quat_from_axis_angle(axis, angle), arm)[1] for arm in arms) < -height:  # level, and still too high
        return _unrolled(foot, rotation)
    turn = min(angle, clearing_pitch(arms, axis, -height, True))
    return quat_normalize(quat_multiply(quat_from_axis_angle(axis, turn), rotation))


def _pin_frames(first: int, heel: Sequence[bool], toe: Sequence[bool]) -> List[int]:
    """The frames a span's pin stands as the retargeted foot over: its flat frames (heel and toe held),
    else its heel frames, else all of them."""
    frames = range(first, first + len(heel))
    return [t for t in frames if heel[t - first] and toe[t - first]] or [t for t in frames if heel[t - first]] or list(frames)


def pin_frame(span: Span) -> int:
    """The frame whose retargeted foot the span's pin stands as (the middle one of `_pin_frames`)."""
    chosen = _pin_frames(span.first, span.heel, span.toe)
    return chosen[len(chosen) // 2]


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else 0.5 * (ordered[middle - 1] + ordered[middle])
