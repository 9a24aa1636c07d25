"""The foot lock for one-bone legs (Kenney's `leg-left`, hip to foot): the hips move by the least that
lets each planted rigid leg reach its pin, smoothed, the leg turned onto it within a budget. Used by
kimodo_rig.retarget.feet."""
from __future__ import annotations

import math
from array import array
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..model import Skeleton
from ..ops.derived_channels import least_acceleration
from ..ops.fk import rest_pose
from ..rotations import (
    Vec3,
    add,
    cross,
    dot,
    length,
    normalize,
    quat_angle,
    quat_between,
    quat_conjugate,
    quat_from_axis_angle,
    quat_multiply,
    quat_rotate,
    scale,
    subtract,
)
from .mapping import SIDES, HumanoidMap
from .soles import SOLE_BAND, _ease, _eased_from, _lowest, Point, posed_point, Soles, subtree, _turn_about
from .lock import _blend_offsets
from .solve import centred_average

ONE_BONE_HIPS_LEVEL = 4.0  # how much dearer the hips' horizontal moves are than their vertical ones
ONE_BONE_STEPS = 8
# m²/m²: what the hips' move costs beside the legs' misses of their pins (squared). Two parallel legs whose
# pins are a little apart in opposite directions make the fit ill-conditioned: at 0.001 the hips went 9.5 cm
# forward and 4 cm up for 1.6 cm (soma_04 standing on Kenney's block proportions).
ONE_BONE_STIFFNESS = 0.01
ONE_BONE_LOWEST_HIP = 0.8  # of the leg's reach to its pinned point: how low over the pin its hip may be moved
ONE_BONE_SETTLE = 3  # times the pin's height is set again after the turn
ONE_BONE_DAMPING = 0.5  # of the sole's miss the pin's height takes at a step (the hips' answer swings past it)
ONE_BONE_OUTWARD = 0.25  # of a swinging leg's reach: how far out to the side it swings where it hangs straight
ONE_BONE_CLEAR_MAX_DEG = 45.0
# Of the character's height: how much lower than its pinned point another point of a planted rigid sole
# must be, once the leg is turned onto its pin, before the foot rocks onto that point, and how many times
# that to rock straight back onto the point it just left (a block pitched near level would see-saw).
ONE_BONE_ROCK = 0.0027
ONE_BONE_ROCK_BACK = 4.0
ONE_BONE_ROCK_EASE = 2  # frames either side of a rock where the hips' path need not hold both pins exactly
ONE_BONE_SETTLED = 0.0013  # of the character's height: a turned sole's lowest point this near the floor is on it
ONE_BONE_SMOOTHING = 100.0  # frames^4: how much the hips' change of speed counts against their move's miss
# With no leg planted, how much the hips' height keeps to the floor pass's: held loosely (1) it swings on
# below it after the last planted frame and the swinging leg, reaching under the floor, is turned up
# (soma_01's left leg 0.9915 against 0.9923).
ONE_BONE_FREE = 100.0
ONE_BONE_HARD = 1e6  # the weight that holds the hips where both planted legs reach their pins
ONE_BONE_GAP = 2  # frames: the longest lift of a foot that lands again where it lifted that is held down
# Of the character's height: how far from its miss a planted rigid foot's last lift may stay (the bar is
# 0.0059: 1 cm per 1.7 m), and how many times the frames outside that are held harder.
ONE_BONE_STAND = 0.002
ONE_BONE_STAND_ROUNDS = 6
HIKE_FRAMES = 3  # a swinging leg's hike is the largest it needs this many frames either side, averaged as far
HIKE_MAX_DEG = 25.0  # the most the hip line is rolled off level


def _pin_one_bone_legs(tmap: HumanoidMap, soles: Soles, sides: Sequence[str],
                       contacts: Dict[str, List[Tuple[bool, bool]]], poses, roots: array, floor: float,
                       budget: float) -> List[Vec3]:
    """A one-bone leg (Kenney's `leg-left`, hip to foot) cannot bend, so its planted foot is kept where
    it lands by what can move: each contact span pins its sole's lower end (back or front) where it
    lands, the foot's lowest point on the rest floor, and where the leg's turn onto that pin tilts another
    point of the sole lower, the foot rocks onto that point (`_rock`), pinned where the turn put it;
    the hips move by the least (vertical before horizontal, ONE_BONE_HIPS_LEVEL) that lets every planted leg's fixed length reach its pin,
    then that path is smoothed where fewer than two legs are planted (`_smooth_hips`: where one foot lands
    or lifts while the other stays down, the least move changes in a frame) and each planted leg turns
    about its hip onto its pin from where the hips are. The turns are eased in before and out after each
    span over BLEND_FRAMES; where the turns would take more than `budget`
    off a leg's mean cosine over the clip, the frames that turn it most turn it only so far (the pin
    missed by what is left). Returns the hips' move per frame."""
    skeleton = tmap.skeleton
    frames = len(poses)
    rest_rotations, rest_positions = rest_pose(skeleton)
    height = max(p[1] for p in rest_positions) - min(p[1] for p in rest_positions)
    heels = {side: _sole_back(soles, side, rest_rotations, rest_positions, height) for side in sides}
    pins: Dict[str, Tuple[Point, Tuple[float, float]]] = {}
    left: Dict[str, Point] = {}  # per side: the point the planted foot last rocked off
    planted = {side: [False] * frames for side in sides}
    rocked = [False] * frames
    moves: List[Optional[Vec3]] = [None] * frames
    turns: Dict[str, List[Optional[Vec3]]] = {side: [None] * frames for side in sides}
    settled: List[List[Tuple[str, Point, Vec3]]] = [[] for _ in range(frames)]  # per frame: the goals the move was solved for
    for frame in range(frames):
        rotations, positions = poses[frame]
        for side in sides:
            heel_on, toe_on = contacts[side][frame]
            if not (heel_on or toe_on):
                pins.pop(side, None)
                left.pop(side, None)
                continue
            planted[side][frame] = True
            if side not in pins:  # lands on whichever end of its sole is lower, pinned where that is now
                front = soles.toe_points.get(side) or heels[side]
                back_y, front_y = (posed_point(p, rotations, positions)[1] for p in (heels[side], front))
                point = front if front_y < back_y else heels[side]
                at = posed_point(point, rotations, positions)
                pins[side] = (point, (at[0], at[2]))
        for attempt in range(2):  # once more where a foot rocked: the frame solved on its new pin
            here = []
            for side in sides:
                if planted[side][frame]:
                    point, (x, z) = pins[side]
                    above = posed_point(point, rotations, positions)[1] - _lowest(soles.feet[side], rotations, positions)
                    here.append((side, point, (x, floor + above, z)))
            if not here:
                break
            here, moves[frame] = _settle_goals(tmap, soles, here, poses[frame], floor, ONE_BONE_SETTLED * height)
            settled[frame] = here
            if attempt or not _rock(tmap, soles, heels, here, moves[frame], poses[frame], pins, left, ONE_BONE_ROCK * height):
                break
            rocked[frame] = True
    moved = _smooth_hips(tmap, soles, settled, moves, poses, floor, [roots[f * 3 + 1] for f in range(frames)], rocked)
    for frame, here in enumerate(settled):  # each planted leg turned onto its pin from where the hips now are
        positions = poses[frame][1]
        for side, point, goal in here:
            hip = positions[tmap.bones["thigh_" + side]]
            aim = subtract(subtract(goal, moved[frame]), hip)
            turn = quat_between(subtract(posed_point(point, poses[frame][0], positions), hip), aim)
            turns[side][frame] = scale(normalize(turn[:3]), quat_angle(turn))
    for side in sides:
        eased = [v or (0.0, 0.0, 0.0) for v in _blend_offsets(turns[side], planted[side])]
        cap = _one_bone_cap([length(v) for v in eased], budget)
        joints = subtree(skeleton, tmap.bones["thigh_" + side])
        for frame, vector in enumerate(eased):
            angle = min(length(vector), cap)
            if angle > 0.0:
                rotations, positions = poses[frame]
                _turn_about(joints, rotations, positions, positions[joints[0]], quat_from_axis_angle(normalize(vector), angle))
    for frame, (dx, dy, dz) in enumerate(moved):
        if dx or dy or dz:
            roots[frame * 3] += dx
            roots[frame * 3 + 1] += dy
            roots[frame * 3 + 2] += dz
            positions = poses[frame][1]
            positions[:] = [(p[0] + dx, p[1] + dy, p[2] + dz) for p in positions]
    for frame, rise in enumerate(_stand_on_the_floor(tmap, soles, sides, planted, poses, floor, height)):
        roots[frame * 3 + 1] += rise
        moved[frame] = (moved[frame][0], moved[frame][1] + rise, moved[frame][2])
    for side in sides:
        _clear_the_floor(tmap, soles, side, planted[side], poses, floor, rest_rotations, ONE_BONE_SETTLED * height)
    return moved


def _sole_turned(tmap: HumanoidMap, soles: Soles, side: str, point: Point, goal: Vec3, move: Vec3, pose,
                 extras: Sequence[Optional[Point]] = ()) -> List[Tuple[Point, Vec3]]:
    """Each point of a planted rigid foot's sole (and of `extras`) where the hips' `move` and the leg's
    turn about its hip onto `goal` for `point` put it."""
    rotations, positions = pose
    hip = add(positions[tmap.bones["thigh_" + side]], move)
    turn = quat_between(subtract(add(posed_point(point, rotations, positions), move), hip), subtract(goal, hip))
    points = list(soles.feet[side])
    points += [p for p in extras if p is not None and all(p is not q for q in points)]
    return [(p, add(hip, quat_rotate(turn, subtract(add(posed_point(p, rotations, positions), move), hip)))) for p in points]


def _settle_goals(tmap: HumanoidMap, soles: Soles, here: List[Tuple[str, Point, Vec3]], pose, floor: float,
                  tolerance: float) -> Tuple[List[Tuple[str, Point, Vec3]], Vec3]:
    """The hips' least move for the planted legs' goals, each goal's height set again (up to
    ONE_BONE_SETTLE times, ONE_BONE_DAMPING of the miss) until the turn onto it leaves its sole's lowest
    point within `tolerance` of the floor: the turn pitches the foot. Returns the goals the move was
    solved for, and the move."""
    for round_ in range(ONE_BONE_SETTLE):
        move = _hips_reaching(tmap, here, pose)
        again, off = [], 0.0
        for side, point, goal in here:
            low = min(at[1] for _, at in _sole_turned(tmap, soles, side, point, goal, move, pose))
            again.append((side, point, add(goal, (0.0, ONE_BONE_DAMPING * (floor - low), 0.0))))
            off = max(off, abs(floor - low))
        if off < tolerance or round_ == ONE_BONE_SETTLE - 1:
            break
        here = again
    return here, move


def _rock(tmap: HumanoidMap, soles: Soles, heels: Dict[str, Point], here: Sequence[Tuple[str, Point, Vec3]],
          move: Vec3, pose, pins: Dict[str, Tuple[Point, Tuple[float, float]]], left: Dict[str, Point],
          threshold: float) -> bool:
    """A planted rigid foot turned onto its pin may tilt onto another point of its sole, lower than the
    pinned one: the pin then moves to that point, where the turn put it (a block stands on a corner it
    turns onto; pinned on the other, the sole slid as the block pitched: g1_04 0.19, soma_04 0.27 cm a
    frame per 1.7 m). Rocking straight back needs ONE_BONE_ROCK_BACK times `threshold`. Returns whether
    any foot rocked; `pins` and `left` changed in place."""
    rocked = False
    for side, point, goal in here:
        placed = _sole_turned(tmap, soles, side, point, goal, move, pose, (heels[side], soles.toe_points.get(side)))
        pinned_y = next(at[1] for p, at in placed if p is point)
        lowest, at = min(placed, key=lambda item: item[1][1])
        need = threshold * (ONE_BONE_ROCK_BACK if left.get(side) is lowest else 1.0)
        if lowest is not point and pinned_y - at[1] > need:
            pins[side] = (lowest, (at[0], at[2]))
            left[side] = point
            rocked = True
    return rocked


def _stand_on_the_floor(tmap: HumanoidMap, soles: Soles, sides: Sequence[str], planted: Dict[str, List[bool]], poses,
                        floor: float, height: float) -> List[float]:
    """The planted rigid feet's lowest points set on the floor where the pins and turns left them a little
    off (the pair's reach is solved with misses allowed, and a turn tilts a block onto another corner):
    each thigh is lifted by its planted foot's miss (with one planted, both by its), the hips rising by
    the mean of the two and rolling by their difference, both moves nearly vertical at the feet so the
    pins hold. The lifts are the path that changes speed least (ONE_BONE_SMOOTHING) while staying within
    ONE_BONE_STAND (of the character's `height`) of each planted frame's miss and easing to none off the
    floor: exact per frame, the hips would follow every frame's tilt of a block onto another corner.
    A swinging rigid leg's thigh is also lifted at least as far as keeps its sole off the floor (the hip
    hiked over a stiff leg; in flight both thighs rise): the hips came down for the planted leg, and a
    rigid leg passing under them is longer than Kimodo's bent one. Left to `_clear_the_floor` alone, the
    leg swung up instead, and a block foot as long as the leg clears only past tens of degrees of swing
    whatever the depth (soma_06: 0.9 mm under, 40 deg in a frame).
    `poses` changed in place; returns the rise per frame."""
    skeleton = tmap.skeleton
    frames = len(poses)
    tolerance = ONE_BONE_STAND * height
    wanted = {side: [0.0] * frames for side in SIDES}
    standing = [False] * frames
    clearing: Dict[str, Dict[int, float]] = {side: {} for side in SIDES}  # the least lift that keeps a swinging sole up
    for frame, (rotations, positions) in enumerate(poses):
        on = [side for side in sides if planted[side][frame]]
        if on:
            standing[frame] = True
            misses = {side: floor - _lowest(soles.feet[side], rotations, positions) for side in on}
            for side in SIDES:  # a thigh over a swinging (or lockable) leg lifts with the planted one
                wanted[side][frame] = misses.get(side, sum(misses.values()) / len(misses))
        sinks = {side: floor - _lowest(soles.feet[side], rotations, positions) for side in sides if side not in on}
        if sinks and not on:  # in flight there is no standing hip to hike from: both rise for the lower sole
            sinks = dict.fromkeys(SIDES, max(sinks.values()))
        for side, sink in sinks.items():
            clearing[side][frame] = sink
    lifts = {}
    for side in SIDES:
        # A sole that must rise aims half the band over what clears it; a bound, not a band (held only below).
        raised = {f for f, sink in clearing[side].items() if sink > wanted[side][f]}
        aims = [clearing[side][f] + tolerance / 2.0 if f in raised else want for f, want in enumerate(wanted[side])]
        weights = [1.0] * frames
        for _ in range(ONE_BONE_STAND_ROUNDS):  # the frames left out of the band held harder, until none is
            lifts[side] = least_acceleration(aims, weights, ONE_BONE_SMOOTHING)
            out = [f for f, lift in enumerate(lifts[side]) if lift < clearing[side].get(f, -math.inf)
                   or (standing[f] and f not in raised and abs(lift - wanted[side][f]) > tolerance)]
            if not out:
                break
            for f in out:
                weights[f] *= 10.0
    rises = []
    for frame, (rotations, positions) in enumerate(poses):
        left, right = lifts["l"][frame], lifts["r"][frame]
        rise = (left + right) / 2.0
        rises.append(rise)
        width = length(subtract(positions[tmap.bones["thigh_l"]], positions[tmap.bones["thigh_r"]]))
        if width > 1e-9 and left != right:
            _roll_hips(skeleton, tmap, rotations, positions, math.asin(max(-1.0, min(1.0, (left - right) / width))))
        if rise:
            positions[:] = [(p[0], p[1] + rise, p[2]) for p in positions]
    return rises


def _clear_the_floor(tmap: HumanoidMap, soles: Soles, side: str, planted: Sequence[bool], poses, floor: float,
                     rest_rotations: Sequence[Sequence[float]], on_floor: float) -> None:
    """The last resort for a swinging one-bone leg that would still reach under the floor once the hips
    have lifted it (`_stand_on_the_floor` holds that bound to a band, by rolls that are exact only where
    the hips joint lies between the thighs; on the shared clips and Kenney rigs it leaves at most 1.1 mm,
    within `on_floor`, and this turns no leg): it swings up about its hip by the
    least that keeps its lowest sole point on the floor, further along its own lean and out to the side
    (ONE_BONE_OUTWARD of its lean where it hangs straight down) or back (`_clearing_angle`); where no
    such turn clears, towards hanging straight down with its sole level, where that lifts it more (a
    foot as long as the leg, rolled: the turn about the lean's axis does not pass through it). Eased over
    BLEND_FRAMES about the axis of the frame whose need it eases (`_eased_from`), unless that sinks the
    sole (a long foot dipped 3.5 cm): then by the nearest turn about it that keeps the sole up, or about
    the frame's own axis, whichever leaves the leg nearer its neighbours. An eased frame is never lower
    than its own turn would leave it (past hanging straight, 1.7 cm on g1_04); not in contact. A sole
    within `on_floor` under the floor is on it, as a planted one is (ONE_BONE_SETTLED): the least turn
    that clears a long block can be tens of degrees whatever the depth (what the hips' lift in
    `_stand_on_the_floor` left, 0.2 mm under on raw g1_02: 38 deg in one frame)."""
    skeleton = tmap.skeleton
    thigh = tmap.bones["thigh_" + side]
    joints = subtree(skeleton, thigh)
    lateral = 1.0 if side == SIDES[0] else -1.0
    rest_from = quat_conjugate(rest_rotations[thigh])  # the leg's world rest rotation undone: its rest column is straight down
    needs: List[float] = []
    axes: List[Optional[Vec3]] = []
    before: Optional[Vec3] = None  # the frame before's turn (axis times angle), where it had one
    for frame, (rotations, positions) in enumerate(poses):
        hip = positions[thigh]
        placed = [posed_point(p, rotations, positions) for p in soles.feet[side]]
        low = min(placed, key=lambda q: q[1])
        axes.append(None)
        needs.append(0.0)
        if planted[frame]:
            before = None
            continue
        outward = normalize(subtract(positions[tmap.bones["thigh_" + SIDES[0]]], positions[tmap.bones["thigh_" + SIDES[1]]]))
        lean = subtract(low, hip)
        reach = length(lean)
        lean = (lean[0] + lateral * outward[0] * ONE_BONE_OUTWARD * reach, 0.0, lean[2] + lateral * outward[2] * ONE_BONE_OUTWARD * reach)
        axis = normalize(cross((0.0, -1.0, 0.0), normalize(lean)))
        if length(axis) < 0.5:
            continue
        axes[frame] = axis  # every swinging frame's own: the ease turns a frame about the axis that lifts its foot
        if low[1] >= floor - on_floor:
            continue

        # Of the two ways that clear, the one nearer the frame before's turn: each frame's least went
        # forward, back, forward as a leg hanging nearly straight swung its lean about (Kenney's block
        # proportions, soma_03: 42 deg one way, 40 the other, then back).
        near = dot(before, axis) if before is not None else None
        angle = _clearing_angle(lambda a: _lowest_turned(placed, hip, axis, a), floor, near)  # noqa: B023
        if angle < 0.0:  # back towards hanging straight: a foot long beside the leg dips at both ends
            axes[frame], angle = scale(axis, -1.0), -angle
        # Or towards hanging straight down, its sole level: a foot long beside its leg reaches highest
        # there, and no turn about the lean's axis passes through it when the leg is also rolled.
        column = quat_rotate(quat_multiply(rotations[thigh], rest_from), (0.0, -1.0, 0.0))
        straight = cross(column, (0.0, -1.0, 0.0))
        reached = _lowest_turned(placed, hip, axes[frame], angle)
        if length(straight) > 1e-6 and reached < floor:
            upright = math.atan2(length(straight), dot(column, (0.0, -1.0, 0.0)))
            straight = normalize(straight)
            tilt = _last_true(lambda a: _lowest_turned(placed, hip, straight, a) >= floor, upright, 0.0)  # noqa: B023
            if _lowest_turned(placed, hip, straight, tilt) > reached:
                axes[frame], angle = straight, tilt
        needs[frame] = angle
        before = scale(axes[frame], angle) if angle > 0.0 else None  # type: ignore[arg-type]
    for frame, (eased, source) in enumerate(_eased_from(needs)):
        if eased <= 0.0 or planted[frame]:
            continue
        rotations, positions = poses[frame]
        hip = positions[thigh]
        placed = [posed_point(p, rotations, positions) for p in soles.feet[side]]
        own = axes[frame] or next((axes[u] for u in sorted(range(len(axes)), key=lambda u: abs(u - frame)) if axes[u]), None)
        turns: List[Tuple[Vec3, float]] = []
        axis = axes[source]
        if axis is not None and source != frame:
            keep = min(floor, _lowest_turned(placed, hip, axis, 0.0)) if needs[frame] <= 0.0 else floor
            if _lowest_turned(placed, hip, axis, eased) >= keep - 1e-9:
                turns.append((axis, eased))
            else:
                # About its own axis, or about that one still by the turn nearest the eased one that keeps
                # the sole up, whichever leaves the leg nearer its neighbours (below): about its own axis
                # alone, a leg hanging nearly straight (its lean's direction wandering) swung 45 deg in a
                # frame between two eased frames (Kenney's block proportions, raw soma_03).
                clearing = _nearest_clearing(lambda a: _lowest_turned(placed, hip, axis, a), keep, eased)  # noqa: B023
                if clearing is not None:
                    turns.append((axis, clearing))
                if own is not None:
                    turns.append((own, eased))
        elif axis or own:
            turns.append((axis or own, eased))  # type: ignore[arg-type]
        turns = [(axis, _kept_up(placed, hip, axis, angle, needs[frame], floor)) for axis, angle in turns]
        if not turns:
            continue
        if len(turns) > 1:
            # Nearest the leg the frame before and the one its ease heads for (or came from: turned already).
            ends = [poses[source][0][thigh] if source < frame else
                    quat_multiply(quat_from_axis_angle(axes[source], needs[source]), poses[source][0][thigh])]  # type: ignore[arg-type]
            if frame > 0:
                ends.append(poses[frame - 1][0][thigh])
            turns.sort(key=lambda t: sum(quat_angle(quat_multiply(quat_multiply(quat_from_axis_angle(*t), rotations[thigh]), quat_conjugate(end)))
                                         for end in ends))
        _turn_about(joints, rotations, positions, hip, quat_from_axis_angle(*turns[0]))


def _kept_up(placed: Sequence[Vec3], hip: Vec3, axis: Vec3, angle: float, need: float, floor: float) -> float:
    """`angle` about `axis`, where it is eased in or out further than the frame's own `need`: never lower
    than that need leaves the sole (a foot long beside a rigid leg lifts at one end and dips at the other;
    a leg turned towards hanging straight by a neighbour's larger angle swings past it)."""
    if angle <= need:
        return angle
    keep = min(floor, _lowest_turned(placed, hip, axis, need))
    if _lowest_turned(placed, hip, axis, angle) >= keep:
        return angle
    return _last_true(lambda a: _lowest_turned(placed, hip, axis, a) >= keep, need, angle)


def _nearest_clearing(lowest: Callable[[float], float], floor: float, angle: float) -> Optional[float]:
    """The turn nearest `angle` (radians, 0 to ONE_BONE_CLEAR_MAX_DEG) at which `lowest` is on or above
    `floor`, by degree steps out from it, then bisection; None where none is."""
    step = math.radians(1.0)
    top = math.radians(ONE_BONE_CLEAR_MAX_DEG)
    for k in range(1, int(ONE_BONE_CLEAR_MAX_DEG) + 1):
        for sign in (1.0, -1.0):
            tried = angle + sign * k * step
            if 0.0 <= tried <= top and lowest(tried) >= floor:
                return _last_true(lambda a: lowest(a) >= floor, tried, tried - sign * step)
    return None


def _clearing_angle(lowest: Callable[[float], float], floor: float, near: Optional[float] = None) -> float:
    """The turn (radians, signed about the lean's axis: + further along the lean and up) of least size up to
    ONE_BONE_CLEAR_MAX_DEG that keeps `lowest(angle)` on or above `floor`, of each sign; of the two the
    smaller, or with `near` (the frame before's turn, along this axis) the nearer to it; where none does,
    the one that lifts it most (0 when no turn lifts it). A foot short beside its leg clears by swinging
    on; a long one (Kenney's, longer than the leg) dips at whichever end goes down, and clears nearest
    hanging straight."""
    step = math.radians(1.0)
    best, best_low = 0.0, lowest(0.0)
    found: Dict[float, float] = {}
    for k in range(1, int(ONE_BONE_CLEAR_MAX_DEG) + 1):
        for sign in (1.0, -1.0):
            if sign in found:
                continue
            angle = sign * k * step
            low = lowest(angle)
            if low >= floor:
                found[sign] = _last_true(lambda a: lowest(a) >= floor, angle, sign * (k - 1) * step)
            elif low > best_low:
                best, best_low = angle, low
        if len(found) == 2 or (found and near is None):
            break
    if not found:
        return best
    return min(found.values(), key=lambda a: abs(a - near) if near is not None else abs(a))


def _last_true(holds: Callable[[float], bool], good: float, bad: float, steps: int = 16) -> float:
    """Bisection between `good` (holds) and `bad` (does not): the value nearest `bad` found to hold."""
    for _ in range(steps):
        middle = (good + bad) / 2.0
        if holds(middle):
            good = middle
        else:
            bad = middle
    return good


def _lowest_turned(points: Sequence[Vec3], pivot: Vec3, axis: Vec3, angle: float) -> float:
    """The lowest of `points` turned by `angle` about `axis` through `pivot`."""
    turn = quat_from_axis_angle(axis, angle)
    return min(pivot[1] + quat_rotate(turn, subtract(q, pivot))[1] for q in points)


def _bridged(flags: Sequence[Tuple[bool, bool]], positions: Sequence[Sequence[Vec3]], heel: int, toe: int,
             reach: float) -> List[Tuple[bool, bool]]:
    """Contact flags with a lift of at most ONE_BONE_GAP frames held down as the frame before it was, where
    Kimodo's heel and toe that were down then (`positions`, its joints) are again within `reach` of where
    they lifted (g1_02's kneeling toe flickers off for two frames: let go and pinned again, the rigid legs'
    hips jumped 9 cm and back)."""
    result = list(flags)
    last = None  # the last frame in contact
    for frame, (heel_on, toe_on) in enumerate(flags):
        if not (heel_on or toe_on):
            continue
        if last is not None and 1 < frame - last <= ONE_BONE_GAP + 1 and all(
                length(subtract(positions[frame][j], positions[last][j])) <= reach
                for j, down in ((heel, flags[last][0]), (toe, flags[last][1])) if down):
            result[last + 1:frame] = [flags[last]] * (frame - last - 1)
        last = frame
    return result


def _smooth_hips(tmap: HumanoidMap, soles: Soles, settled: Sequence[List[Tuple[str, Point, Vec3]]],
                 moves: Sequence[Optional[Vec3]], poses, floor: float, heights_before: Sequence[float],
                 rocked: Sequence[bool]) -> List[Vec3]:
    """The hips' move per frame, changing speed least: where both legs are planted it is the one that lets
    both reach their pins (a rigid pair leaves the hips a circle), elsewhere it may differ from the least
    move, so where one foot lands or lifts while the other stays down the hips get there over several
    frames instead of in one; with one leg planted the height is then set again so that leg reaches its
    pin exactly (it turns onto it). The hips' height itself (`heights_before`, the floor pass's, plus the
    move) is then smoothed where no leg is planted: in flight the floor pass follows Kimodo's lowest foot
    joint and the rigid legs' lowest sole, each turning a corner where another joint or leg becomes the
    lowest (soma_01's leap: 19.7 cm a frame per frame, against Kimodo's own 4.6). Within ONE_BONE_ROCK_EASE
    frames of a foot rocking onto another point (`rocked`), both planted legs' move is not held hard
    either: the pin steps there, and so would the hips (the torso's hardest change 4.2-6.7 against a bar
    of 5.0)."""
    near_rock = [any(rocked[max(0, f - ONE_BONE_ROCK_EASE): f + ONE_BONE_ROCK_EASE + 1]) for f in range(len(settled))]
    weights = [ONE_BONE_HARD if len(here) > 1 and not near else 1.0 for here, near in zip(settled, near_rock)]
    wanted = [m or (0.0, 0.0, 0.0) for m in moves]
    path = [least_acceleration([m[k] for m in wanted], weights, ONE_BONE_SMOOTHING) for k in range(3)]
    heights, held = [], []
    for frame, here in enumerate(settled):
        height = path[1][frame]
        if len(here) == 1:
            (side, point, goal), = here
            rotations, positions = poses[frame]
            hip = positions[tmap.bones["thigh_" + side]]
            reach = length(subtract(posed_point(point, rotations, positions), hip))
            aside = (goal[0] - hip[0] - path[0][frame], goal[2] - hip[2] - path[2][frame])
            height = goal[1] + math.sqrt(max(0.0, reach * reach - aside[0] ** 2 - aside[1] ** 2)) - hip[1]
            # Turned onto its pin from elsewhere the foot pitches otherwise: its lowest point back onto the floor
            # (hips and pin up or down together, so the turn stays).
            turn = quat_between(subtract(posed_point(point, rotations, positions), hip), (aside[0], goal[1] - hip[1] - height, aside[1]))
            low = min(quat_rotate(turn, subtract(posed_point(p, rotations, positions), hip))[1] for p in soles.feet[side])
            rise = floor - (hip[1] + height + low)
            height += rise
            here[0] = (side, point, (goal[0], goal[1] + rise, goal[2]))
        heights.append(heights_before[frame] + (height if here else wanted[frame][1]))
        held.append(ONE_BONE_HARD if here else ONE_BONE_FREE)
    path[1] = [h - b for h, b in zip(least_acceleration(heights, held, ONE_BONE_SMOOTHING), heights_before)]
    return list(zip(*path))


def _sole_back(soles: Soles, side: str, rotations, positions, height: float) -> Point:
    """Where a one-bone leg's heel contact pins: its sole's back, the sole point (within SOLE_BAND of
    the foot's lowest at rest) farthest from the sole's front; the foot joint without a front."""
    feet = soles.feet[side]
    front = soles.toe_points.get(side)
    if front is None:
        return feet[0]
    ahead = posed_point(front, rotations, positions)
    placed = [(posed_point(p, rotations, positions), p) for p in feet]
    lowest = min(at[1] for at, _ in placed)
    sole = [(at, p) for at, p in placed if at[1] <= lowest + SOLE_BAND * height]
    return max(sole, key=lambda item: math.hypot(item[0][0] - ahead[0], item[0][2] - ahead[2]))[1]


def _hips_reaching(tmap: HumanoidMap, wanted: Sequence[Tuple[str, Point, Vec3]], pose) -> Vec3:
    """The least move of the hips (horizontal ONE_BONE_HIPS_LEVEL times dearer than vertical) that puts
    each planted one-bone leg's pinned point its own length from its hip: Gauss-Newton steps of the
    weighted least-norm kind on |goal - hip - move| = length, one equation per planted leg. Where that
    move takes a hip down to less than ONE_BONE_LOWEST_HIP of its leg over its pin, the move is made
    dearer beside the misses until it does not (two near parallel legs pinned slightly closer than their
    hips leave the hips a circle through the floor: soma_06 on block legs, the hips 26 cm down on 20 cm
    legs); the legs' turns onto their pins take the rest."""
    rotations, positions = pose
    legs = []
    for side, point, goal in wanted:
        hip = positions[tmap.bones["thigh_" + side]]
        legs.append((subtract(goal, hip), length(subtract(posed_point(point, rotations, positions), hip))))
    stiffness = ONE_BONE_STIFFNESS
    while True:
        move = _least_reaching_move(legs, stiffness)
        # (hip - goal) = -(towards - move): its height is the hip's over the pin after the move
        if move[1] >= 0.0 or all(move[1] - towards[1] >= ONE_BONE_LOWEST_HIP * reach for towards, reach in legs) or stiffness > 1e3:
            return move
        stiffness *= 4.0


def _least_reaching_move(legs: Sequence[Tuple[Vec3, float]], stiffness: float) -> Vec3:
    """`_hips_reaching`'s Gauss-Newton steps for legs [(hip to goal, length)] at a given stiffness."""
    inverse = (1.0 / ONE_BONE_HIPS_LEVEL, 1.0, 1.0 / ONE_BONE_HIPS_LEVEL)
    move = (0.0, 0.0, 0.0)
    for _ in range(ONE_BONE_STEPS):
        rows, rests = [], []
        for towards, reach in legs:
            gap = subtract(towards, move)
            distance = length(gap)
            if distance < 1e-9:
                continue
            row = scale(gap, -1.0 / distance)  # d|towards - move| / d move
            rows.append(row)
            rests.append(distance - reach - dot(row, move))  # the miss, linear in the move, at no move
        if not rows:
            break
        weighted = [tuple(r[k] * inverse[k] for k in range(3)) for r in rows]
        gram = [[dot(a, b) + (stiffness if i == j else 0.0) for j, b in enumerate(rows)] for i, a in enumerate(weighted)]
        if len(rows) == 1:
            factors = [-rests[0] / gram[0][0]]
        else:
            (a, b), (c, d) = gram
            det = a * d - b * c
            factors = [(-rests[0] * d + rests[1] * b) / det, (rests[0] * c - rests[1] * a) / det]
        previous, move = move, (0.0, 0.0, 0.0)
        for f, w in zip(factors, weighted):
            move = add(move, scale(w, f))
        if length(subtract(move, previous)) < 1e-6:
            break
    return move


def _one_bone_cap(angles: Sequence[float], budget: float) -> float:
    """The largest turn (radians) a frame may get so that the turns take no more than `budget` off the
    leg's mean cosine over the clip."""
    count = max(1, len(angles))
    if sum(1.0 - math.cos(a) for a in angles) / count <= budget:
        return math.inf
    low, high = 0.0, max(angles)
    for _ in range(30):
        middle = (low + high) / 2.0
        if sum(1.0 - math.cos(min(a, middle)) for a in angles) / count <= budget:
            low = middle
        else:
            high = middle
    return low


def hike_hips(skeleton: Skeleton, tmap: HumanoidMap, soles: Soles, contacts: Dict[str, List[Tuple[bool, bool]]],
              poses) -> List[float]:
    """Rigid legs set the hips' roll, as a person with a stiff knee hikes the hip. Kimodo rolls its hips
    for legs whose knees bend: a one-bone leg cannot shorten, so that roll takes one foot under the floor
    and holds the other above it (soma_03's lunge on Kenney's block proportions: 18 deg, 3 cm under and
    11 cm over on 20 cm legs), and a swinging leg cannot fold to pass over the floor. So in every frame of
    `poses` (world rotations, positions: changed in place) the line between the thighs is first levelled,
    then rolled: with one foot planted, up on the swinging side by what that foot lacks to be as high as
    the standing one's lowest point (the largest need within HIKE_FRAMES, averaged over as many, so it is
    there in time and eases); with both planted, exactly so that both soles stand equally low; in flight,
    level.
    The hips turn about their joint; every bone under them keeps its world rotation (legs, arms and head
    keep Kimodo's directions). Returns the roll per frame, radians about the hips' forward (+ lifts the
    left side)."""
    frames = len(poses)
    on = {side: [heel or toe for heel, toe in contacts[side]] for side in SIDES}
    cap = math.radians(HIKE_MAX_DEG)
    needs: List[float] = []
    both: List[bool] = []
    for frame in range(frames):
        rotations, positions = poses[frame]
        _roll_hip_line(skeleton, tmap, rotations, positions, 0.0)
        left, right = on["l"][frame], on["r"][frame]
        both.append(left and right)
        if not (left or right):
            needs.append(0.0)
            continue
        low = {side: _lowest(soles.feet[side], rotations, positions) for side in SIDES}
        width = length(subtract(positions[tmap.bones["thigh_l"]], positions[tmap.bones["thigh_r"]]))
        # Rolled by a, the left sole rises against the right one by the thighs' distance times sin(a).
        if left and right:
            rise = low["r"] - low["l"]
        elif right:  # the left swings: it rises by what it lacks, the right by nothing
            rise = max(0.0, low["r"] - low["l"])
        else:
            rise = -max(0.0, low["l"] - low["r"])
        needs.append(max(-cap, min(cap, math.asin(max(-1.0, min(1.0, rise / width))))) if width > 1e-9 else 0.0)
    held = []
    for frame in range(frames):
        if both[frame]:
            held.append(needs[frame])
            continue
        near = [n for n, b in zip(needs[max(0, frame - HIKE_FRAMES): frame + HIKE_FRAMES + 1],
                                  both[max(0, frame - HIKE_FRAMES): frame + HIKE_FRAMES + 1]) if not b]
        held.append(max(near, key=abs) if near else 0.0)
    # Both planted, the roll is exactly what stands both soles equally low, not eased with the hike
    # before: at a landing the pins would otherwise take the hips down until the lower sole sank (soma_01,
    # soma_06: 3.4 cm per 1.7 m). The torso's hardest change of turn stays that of the hike-less one.
    rolls = [need if planted else eased for need, planted, eased in zip(held, both, centred_average(held, HIKE_FRAMES))]
    for frame, roll in enumerate(rolls):
        if roll:
            rotations, positions = poses[frame]
            _roll_hip_line(skeleton, tmap, rotations, positions, roll)
    return rolls


def _roll_hip_line(skeleton: Skeleton, tmap: HumanoidMap, rotations, positions, roll: float) -> None:
    """Turn the hips joint about itself so that the line from its right thigh to its left is level, then
    by `roll` (radians) about the hips' forward (+ lifts the left); each child of the hips is carried round
    with it, keeping its world rotation."""
    line = subtract(positions[tmap.bones["thigh_l"]], positions[tmap.bones["thigh_r"]])
    level = (line[0], 0.0, line[2])
    if length(level) < 1e-9:
        return
    _turn_hips(skeleton, tmap, rotations, positions,
               quat_multiply(quat_from_axis_angle(normalize(cross(level, (0.0, 1.0, 0.0))), roll), quat_between(line, level)))


def _roll_hips(skeleton: Skeleton, tmap: HumanoidMap, rotations, positions, roll: float) -> None:
    """Turn the hips joint about itself by `roll` (radians, + lifts the left thigh) about the level line
    square to its thighs', each child of the hips keeping its world rotation."""
    line = subtract(positions[tmap.bones["thigh_l"]], positions[tmap.bones["thigh_r"]])
    level = (line[0], 0.0, line[2])
    if length(level) > 1e-9:
        _turn_hips(skeleton, tmap, rotations, positions, quat_from_axis_angle(normalize(cross(level, (0.0, 1.0, 0.0))), roll))


def _turn_hips(skeleton: Skeleton, tmap: HumanoidMap, rotations, positions, turn) -> None:
    """Turn the hips joint about itself by `turn`; each child of the hips is carried round with it,
    keeping its world rotation."""
    hips = tmap.bones["hips"]
    _turn_about(subtree(skeleton, hips), rotations, positions, positions[hips], turn)
    back = quat_conjugate(turn)  # as lock._drop_hip keeps the thighs and spine: each child turned back about itself
    for child in skeleton.children(hips):
        _turn_about(subtree(skeleton, child), rotations, positions, positions[child], back)
