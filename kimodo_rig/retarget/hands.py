"""Hands (and forearms) kept above the floor: the torso turned up, the wrist turned, the arm swung
up, the elbow folded last. Used by kimodo_rig.retarget.feet."""
from __future__ import annotations

import math
from typing import List, Optional, Sequence, Tuple

from ..model import Skeleton
from ..rotations import (
    Vec3,
    add,
    cross,
    dot,
    length,
    normalize,
    quat_from_axis_angle,
    quat_multiply,
    quat_normalize,
    quat_rotate,
    scale,
    subtract,
)
from .mapping import SIDES, HumanoidMap
from .solve import centred_average
from .soles import (
    _ease,
    _eased_from,
    hand_joint,
    _lowest,
    Point,
    posed_point,
    Soles,
    _solve_chain,
    subtree,
    _turn_rigidly,
    wrist_joints,
)
from .lock import LIFT_STEPS

PITCH_STEPS = 6
TORSO_LIFT_MAX_DEG = 80.0
TORSO_GRID = 32
TORSO_AXES = 36
WRIST_PITCH_MAX_DEG = 60.0
ARM_SWING_MAX_DEG = 90.0
ARM_EASE_FRAMES = 2
ARM_SWING_OUTWARD = 0.25  # of the arm's length: how far out to the side a hanging arm swings, against its own lean


def _lift_torso(skeleton: Skeleton, tmap: HumanoidMap, soles: Soles, poses, floor: float) -> None:
    """A hand that would go under the rest floor (a long-armed character picking something up) is lifted
    first by the torso: the body above the hips turns about the spine's base, about the horizontal axis
    (of TORSO_AXES) and by the least angle (at most TORSO_LIFT_MAX_DEG) that brings both hands onto the
    floor, or where none does, that brings the lower of them highest (a hand reaching down alone: the
    torso leans over to the other side), never bending the back further from upright than the clip has
    it; eased and averaged over ARM_EASE_FRAMES. The arms are carried along keeping their world
    directions, so the limbs stay as the clip has them and the back bends less deep; what is left the
    wrist (`_pitch_hand`) and the arm's swing (`_keep_above`) lift. A spine that carries the legs is
    not turned (the legs are the lock's)."""
    pivot = tmap.bones.get("spine_0")
    sides = [side for side in SIDES if tmap.has("upperarm_" + side) and soles.hands.get(side)]
    upper_body = subtree(skeleton, pivot) if pivot is not None else []
    if pivot is None or not sides or any(tmap.bones.get("thigh_" + side) in upper_body for side in SIDES):
        return
    shoulders = [tmap.bones["upperarm_" + side] for side in sides]
    turns = [_torso_turn(soles, sides, shoulders, pivot, rotations, positions, floor) for rotations, positions in poses]
    # Eased, then averaged over ARM_EASE_FRAMES either side, the axis too (as one rotation vector), so the
    # back does not wobble from frame to frame; what the average leaves the arm's swing lifts.
    angles = centred_average(_ease([angle for _, angle in turns], ARM_EASE_FRAMES), ARM_EASE_FRAMES)
    vectors = [scale(axis, angle) if axis is not None else (0.0, 0.0, 0.0) for axis, angle in turns]
    averaged = [centred_average([v[k] for v in vectors], ARM_EASE_FRAMES) for k in range(3)]
    eased = []
    for frame, angle in enumerate(angles):
        axis = (averaged[0][frame], averaged[1][frame], averaged[2][frame])
        eased.append((normalize(axis), angle) if angle > 1e-9 and length(axis) > 1e-12 else (None, 0.0))
    arms = {j: shoulder for shoulder in shoulders for j in subtree(skeleton, shoulder)}
    for (rotations, positions), (axis, angle) in zip(poses, eased):
        if axis is None:
            continue
        turn = quat_from_axis_angle(axis, angle)
        centre = positions[pivot]
        moved = {j: add(centre, quat_rotate(turn, subtract(positions[j], centre))) for j in shoulders}
        for j in upper_body:
            if j in arms:  # carried with its shoulder, its world rotation kept
                positions[j] = add(positions[j], subtract(moved[arms[j]], positions[arms[j]])) if j not in moved else positions[j]
                continue
            rotations[j] = quat_normalize(quat_multiply(turn, rotations[j]))
            positions[j] = add(centre, quat_rotate(turn, subtract(positions[j], centre)))
        for j, place in moved.items():
            positions[j] = place


def _torso_turn(soles: Soles, sides: Sequence[str], shoulders: Sequence[int], pivot: int, rotations, positions,
                floor: float) -> Tuple[Optional[Vec3], float]:
    """The frame's torso turn (`_lift_torso`): its axis (None: none needed, or none helps) and angle."""
    depths = [floor - _lowest(soles.hands[side], rotations, positions) for side in sides]
    if max(depths) <= 1e-5:
        return None, 0.0
    centre = positions[pivot]
    arms = [subtract(positions[j], centre) for j in shoulders]
    lean = scale(add(arms[0], arms[-1]), 0.5)
    bent = math.atan2(math.hypot(lean[0], lean[2]), lean[1])
    reach = max(1e-12, length(lean))
    steps = [math.radians(TORSO_LIFT_MAX_DEG) * i / TORSO_GRID for i in range(TORSO_GRID + 1)]
    trig = [(math.cos(t) - 1.0, math.sin(t)) for t in steps]
    best = (-math.inf, 0.0, None)  # (the lower hand's height above the floor, capped at 0; -angle; axis)
    for k in range(TORSO_AXES):
        heading = 2.0 * math.pi * k / TORSO_AXES
        axis = (math.cos(heading), 0.0, math.sin(heading))
        # A point r turned by t about the horizontal axis rises r_y (cos t - 1) + (axis x r)_y sin t.
        terms = [(r[1], cross(axis, r)[1], depth) for r, depth in zip(arms, depths)]
        bow = cross(axis, lean)[1]
        count = 0  # the back no more bent than the clip has it: the grid's first `count` angles
        while count <= TORSO_GRID and math.acos(max(-1.0, min(1.0, (lean[1] * (trig[count][0] + 1.0) + bow * trig[count][1]) / reach))) <= bent + 1e-9:
            count += 1
        values = [min(a * c + b * s_ - depth for a, b, depth in terms) for c, s_ in trig[:count]]
        reached = next((i for i, value in enumerate(values) if value >= 0.0), None)
        if reached is not None and reached > 0:
            low, high = steps[reached - 1], steps[reached]
            for _ in range(LIFT_STEPS * 2):
                middle = (low + high) / 2.0
                if min(a * (math.cos(middle) - 1.0) + b * math.sin(middle) - depth for a, b, depth in terms) >= 0.0:
                    high = middle
                else:
                    low = middle
            candidate = (0.0, -high, axis)
        elif values:
            i = max(range(len(values)), key=lambda i: (values[i], -i))
            candidate = (min(0.0, values[i]), -steps[i], axis)
        else:
            continue
        best = max(best, candidate, key=lambda c: (c[0], c[1]))
    if best[2] is None or -best[1] <= 1e-9 or best[0] <= min(-depth for depth in depths) + 1e-9:
        return None, 0.0
    return best[2], -best[1]


def _pitch_hand(tmap: HumanoidMap, soles: Soles, side: str, poses, floor: float) -> None:
    """A hand still under the rest floor once the torso has lifted it (`_lift_torso`) is turned up at
    the wrist: the points it carries turned towards the horizontal the way they already lean from the
    wrist (a hand laid on the floor), by the least angle that brings them onto it (at most
    WRIST_PITCH_MAX_DEG), eased and averaged over ARM_EASE_FRAMES. The forearm's direction ends at the
    wrist, so the arm keeps Kimodo's; what is left (the wrist's limit, or what the forearm itself
    carries) the arm's swing lifts (`_keep_above`)."""
    joints = wrist_joints(tmap, side)
    turning = set(joints)
    points = [p for p in soles.hands.get(side, ()) if sum(w for j, w, _ in p if j in turning) >= 0.5]
    if not points:
        return
    under = [_lowest(points, rotations, positions) < floor - 1e-6 for rotations, positions in poses]
    near = 2 * ARM_EASE_FRAMES  # the frames the easing and the average reach
    axes = [_swing_axis(points, rotations, positions, joints[0], (0.0, 0.0, 0.0))
            if any(under[max(0, frame - near): frame + near + 1]) else None for frame, (rotations, positions) in enumerate(poses)]
    needs = [_swing_needed(joints, points, rotations, positions, axis, floor, WRIST_PITCH_MAX_DEG) if axis is not None else 0.0
             for (rotations, positions), axis in zip(poses, axes)]
    for (rotations, positions), axis, angle in zip(poses, axes, centred_average(_ease(needs, ARM_EASE_FRAMES), ARM_EASE_FRAMES)):
        if axis is not None and angle > 0.0:
            _turn_rigidly(joints, rotations, positions, axis, angle)


def _keep_above(skeleton: Skeleton, tmap: HumanoidMap, soles: Soles, side: str, poses, floor: float) -> None:
    """A hand that would go under the rest floor is lifted onto it: the whole arm swings up about its
    shoulder as one piece (its elbow's bend kept, so upper and lower arm turn by the same least angle:
    folding the elbow instead turns the upper arm twice as far), out to the side and along the way it
    already leans (at most ARM_SWING_MAX_DEG), the swing eased in and out over ARM_EASE_FRAMES so the arm
    does not jump (eased, the hand rides a little above the floor either side); what is left, two-bone
    IK on the arm (the elbow bends in the arm's plane, the hand keeps its world rotation)."""
    upper, lower = "upperarm_" + side, "lowerarm_" + side
    hand = hand_joint(tmap, side)
    if not (tmap.has(upper) and tmap.has(lower) and hand is not None and soles.hands.get(side)):
        return
    shoulder, elbow = tmap.bones[upper], tmap.bones[lower]
    other = "upperarm_" + ("r" if side == "l" else "l")
    arm = subtree(skeleton, shoulder)
    points = soles.hands[side]
    axes = []
    for rotations, positions in poses:
        outward = subtract(positions[shoulder], positions[tmap.bones[other]]) if tmap.has(other) else (0.0, 0.0, 0.0)
        axes.append(_swing_axis(points, rotations, positions, shoulder, (outward[0], 0.0, outward[2])))
    needs = [_swing_needed(arm, points, rotations, positions, axis, floor) if axis is not None else 0.0
             for (rotations, positions), axis in zip(poses, axes)]
    # Each eased frame turns about the axis of the frame whose need it eases: about its own, a hand
    # passing under the shoulder (its axis a quarter turn on in a frame) swung the arm 37 deg in one
    # (the robot, soma_01: Kimodo's turned 16).
    for (rotations, positions), (angle, source) in zip(poses, _eased_from(needs, ARM_EASE_FRAMES)):
        axis = axes[source]
        if axis is not None and angle > 0.0:
            _turn_rigidly(arm, rotations, positions, axis, angle)
        low = _lowest(points, rotations, positions)
        if low >= floor - 1e-6:
            continue
        goal = add(positions[hand], (0.0, floor - low, 0.0))
        lateral = cross(subtract(positions[elbow], positions[shoulder]), (0.0, 1.0, 0.0))
        if length(lateral) < 1e-9:
            lateral = (1.0, 0.0, 0.0)
        _solve_chain(skeleton, rotations, positions, shoulder, elbow, hand, goal, lateral,
                     subtree(skeleton, elbow), subtree(skeleton, hand))


def _swing_axis(hand: Sequence[Point], rotations, positions, shoulder: int, outward: Vec3) -> Optional[Vec3]:
    """The axis through the shoulder (or the wrist) about which an arm (or a hand) swings its hand up: the shoulder-to-lowest-point
    line turned towards the horizontal it leans to, pushed out along `outward` (ARM_SWING_OUTWARD of the
    arm's length), so an arm hanging straight down swings out to the side; None for a degenerate arm."""
    lowest = min((posed_point(p, rotations, positions) for p in hand), key=lambda q: q[1])
    r = subtract(lowest, positions[shoulder])
    reach = length(r)
    side_out = normalize(outward) if length(outward) > 1e-9 else (0.0, 0.0, 0.0)
    axis = cross(r, add((r[0], 0.0, r[2]), scale(side_out, ARM_SWING_OUTWARD * reach)))
    return normalize(axis) if reach > 1e-9 and length(axis) > 1e-9 * reach * reach else None


def _swing_needed(arm: List[int], hand: Sequence[Point], rotations, positions, axis: Vec3, floor: float,
                  limit_deg: float = ARM_SWING_MAX_DEG) -> float:
    """The least turn of the joints `arm` (a shoulder and all below it, or a wrist and the hand) about
    `axis` through the first that brings the lowest of the `hand` points onto the floor (at most
    `limit_deg`); the pose is left as it is."""
    rotations, positions = list(rotations), list(positions)
    pivot = positions[arm[0]]
    limit = math.radians(limit_deg)
    turned = 0.0
    for _ in range(PITCH_STEPS):
        lowest = min((posed_point(p, rotations, positions) for p in hand), key=lambda q: q[1])
        depth = floor - lowest[1]
        if depth <= 1e-6 or turned >= limit - 1e-9:
            break
        # The lowest point's height turned by t about the axis: along + rise cos(t - highest).
        r = subtract(lowest, pivot)
        along = scale(axis, dot(r, axis))
        a, b = r[1] - along[1], cross(axis, r)[1]
        rise = math.hypot(a, b)
        if rise < 1e-9:
            break
        highest = math.atan2(b, a) % (2.0 * math.pi)
        wanted = (r[1] + depth - along[1]) / rise
        angle = (highest - math.acos(wanted)) % (2.0 * math.pi) if wanted < 1.0 else highest
        angle = min(angle, limit - turned)
        if angle <= 1e-9:
            break
        turned += angle
        _turn_rigidly(arm, rotations, positions, axis, angle)
    return turned
