"""Per frame, each leg reaches its goal with analytic two-bone IK (the knee in the retargeted leg's own
plane), its foot turned onto the floor about the heel or the toe its span pins, the toe bone flat while
the toe is down; a one-bone leg is the same chain with a lower bone of length 0."""
from __future__ import annotations

import math
from typing import List, Optional, Sequence, Tuple

from ..model import Skeleton
from ..ops.fk import turn_joints
from ..rotations import (
    IDENTITY,
    Quat,
    Vec3,
    add,
    bend_direction,
    cross,
    dot,
    length,
    normalize,
    quat_between,
    quat_conjugate,
    quat_from_axis_angle,
    quat_multiply,
    quat_normalize,
    quat_rotate,
    quat_slerp,
    scale,
    subtract,
    two_bone_points,
    yaw_rotation,
)
from .contacts import FOOT_PITCH_MAX_DEG, KNEE_FOLDEST_DEG, KNEE_LEAN_DEG, KNEE_STRAIGHTEST_DEG, TOE_ROLL_MAX_DEG, Foot, Span, foot_yaw
from .soles import posed_point, subtree

# A goal for one foot in one frame: the ankle's world position, the foot's world rotation, and the toe
# bone's rotation relative to the foot (None: the toe keeps the animation's).
Goal = Tuple[Vec3, Quat, Optional[Quat]]


def reach_limits(foot: Foot) -> Tuple[float, float]:
    """The nearest and farthest the ankle may be from the hip: the knee folded KNEE_FOLDEST_DEG and bent
    KNEE_STRAIGHTEST_DEG (a one-bone leg: its length, both)."""
    a, b = foot.thigh, foot.shin

    def apart(bend_deg: float) -> float:
        return math.sqrt(max(0.0, a * a + b * b + 2.0 * a * b * math.cos(math.radians(bend_deg))))

    return apart(KNEE_FOLDEST_DEG), apart(KNEE_STRAIGHTEST_DEG)


def pitch(foot: Foot, rotation: Quat, reference: Quat, yaw: float) -> float:
    """The angle the foot's world `rotation` is pitched from `reference` about the pinned foot's lateral
    axis (positive: toe down)."""
    axis = quat_rotate(yaw_rotation(yaw), foot.lateral)
    relative = quat_multiply(rotation, quat_conjugate(reference))
    if relative[3] < 0.0:
        relative = tuple(-c for c in relative)  # type: ignore[assignment]
    return 2.0 * math.atan2(dot(relative[:3], axis), relative[3])


def planned(foot: Foot, span: Span, frame: int, rotation: Quat, ankle: Vec3, flat: Optional[Tuple[Quat, Vec3]],
            risen: Optional[float] = None) -> Goal:
    """The foot as the span places it in `frame`: standing on its pin with heel and toe held; on its heel
    alone, turned about the pinned ankle as the animation turns it (its world `rotation`) from where it
    stands flat (`flat`: the animated foot's rotation and ankle on the span's flat frame nearest this
    one; none, from the pin's), or where that would put the toe point under its pin, pitched toe-up alone;
    on its toe alone, pitched heel-up about the pinned toe point as far as the animation's ankle (`ankle`)
    has turned about it since it stood flat, so the leg keeps its reach however long the foot, the toe
    bone staying put. Measured from the flat frame, the turn starts from nothing: no pop as a heel lifts.
    Given `risen` (how far the animated ankle has risen since the pin's frame), a foot bone with its toe
    held, flat or alone, rolls no further than lifts its ankle that much (`_rise_roll`): a foot long for
    its leg (RobotExpressive's, 0.55 of it) pitched as Kimodo's lifted its ankle three times as far as the
    animated one rises, and the hips rose with it."""
    k = frame - span.first
    heel, toe = span.heel[k], span.toe[k]
    axis = quat_rotate(yaw_rotation(span.yaw), foot.lateral)
    most = math.inf if risen is None or foot.body is not None else _rise_roll(foot, span, risen)
    if heel and toe:
        return rolled(foot, span, min(_heel_up(foot, span, rotation), most))
    if heel:
        reference = flat[0] if flat is not None else span.rotation
        turn = quat_normalize(quat_multiply(rotation, quat_conjugate(reference)))
        if quat_rotate(turn, subtract(span.toe_point, span.ankle))[1] < span.toe_point[1] - span.ankle[1]:
            turn = quat_from_axis_angle(axis, min(pitch(foot, rotation, reference, span.yaw), 0.0))
        return span.ankle, quat_normalize(quat_multiply(turn, span.rotation)), None
    pinned = subtract(span.ankle, span.toe_point)
    angle = _angle_about(axis, pinned, subtract(ankle, span.toe_point))
    if flat is not None:
        angle += _heel_up(foot, span, flat[0]) - _angle_about(axis, pinned, subtract(flat[1], span.toe_point))
    return rolled(foot, span, min(angle, most))


def _heel_up(foot: Foot, span: Span, rotation: Quat) -> float:
    """How far the animated foot (its world `rotation`) is pitched heel-up from the pin's (radians, 0 if
    toe-up): a foot held flat rolls on its toe by that much, a foot bone that is not the leg's last (a
    long foot scaled from Kimodo's heel lift under its contact threshold lifts its heel several cm; held
    flat, the hips dived for it and the knees bent 20 deg more than Kimodo's)."""
    return 0.0 if foot.body is not None else max(0.0, pitch(foot, rotation, span.rotation, span.yaw))


def _rise_roll(foot: Foot, span: Span, risen: float) -> float:
    """The least heel-up roll about the span's toe point that lifts its ankle `risen` over the pin's
    (radians; the arc's top where none does; inf where the heel lifting does not lift the ankle, a toe
    point behind it). Closed form: the ankle's height over the toe point turned by t is a cos t + b sin t."""
    axis = quat_rotate(yaw_rotation(span.yaw), foot.lateral)
    arm = subtract(span.ankle, span.toe_point)
    a, b = arm[1], cross(axis, arm)[1]
    if b <= 0.0:
        return math.inf
    if risen <= 0.0:
        return 0.0
    radius = math.hypot(a, b)
    return math.atan2(b, a) - math.acos(min(1.0, (a + risen) / radius))


def rolled(foot: Foot, span: Span, angle: float) -> Goal:
    """The span's pin pitched heel-up by `angle` (radians; clamped to 0..TOE_ROLL_MAX_DEG) about its toe
    point, the toe bone staying put."""
    axis = quat_rotate(yaw_rotation(span.yaw), foot.lateral)
    if angle <= 0.0:
        return span.ankle, span.rotation, span.toe_local
    turn = quat_from_axis_angle(axis, min(angle, math.radians(TOE_ROLL_MAX_DEG)))
    turned = quat_normalize(quat_multiply(turn, span.rotation))
    toe_local = None if span.toe_local is None else quat_normalize(
        quat_multiply(quat_conjugate(turned), quat_multiply(span.rotation, span.toe_local)))
    return add(span.toe_point, quat_rotate(turn, subtract(span.ankle, span.toe_point))), turned, toe_local


def rolled_within(foot: Foot, span: Span, goal: Goal, hip: Vec3, reach: float) -> Goal:
    """A goal on the toe alone rolled further heel-up about the pinned toe point, as far as puts the ankle
    within `reach` of the `hip` (the animated leg's own extension: the body moves on while the toe holds,
    and the leg pulled straight on it snaps its knee as the pin lets go), at most TOE_ROLL_MAX_DEG from the
    pin. Closed form: the ankle turned by t about the axis through the toe point is toe + p + cos t q +
    sin t (axis x q) (p along the axis, q across), so its squared distance to the hip is linear in cos t
    and sin t, and the least t >= 0 at which it equals `reach` squared ends a circle's arc."""
    ankle, rotation, toe_local = goal
    axis = quat_rotate(yaw_rotation(span.yaw), foot.lateral)
    pivot = goal_toe_point(span, goal)
    arm = subtract(ankle, pivot)
    apart = subtract(pivot, hip)
    along = dot(arm, axis)
    across = subtract(arm, tuple(along * a for a in axis))
    side = cross(axis, across)
    fixed = dot(apart, apart) + dot(arm, arm) + 2.0 * along * dot(apart, axis)
    a, b = 2.0 * dot(apart, across), 2.0 * dot(apart, side)
    wanted = reach * reach - fixed  # a cos t + b sin t must come down to this
    if a <= wanted or b >= 0.0:
        return goal  # within reach, or a heel lifting about the toe would take the ankle further first
    radius = math.hypot(a, b)
    middle = math.atan2(b, a)  # in (-pi, 0): the distance falls from t = 0 on
    angle = middle + (math.acos(wanted / radius) if wanted > -radius else math.pi)
    limit = math.radians(TOE_ROLL_MAX_DEG) - pitch(foot, rotation, span.rotation, span.yaw)
    angle = min(max(angle, 0.0), max(0.0, limit))
    turn = quat_from_axis_angle(axis, angle)
    turned = quat_normalize(quat_multiply(turn, rotation))
    if toe_local is not None:
        toe_local = quat_normalize(quat_multiply(quat_conjugate(turned), quat_multiply(rotation, toe_local)))
    return add(pivot, quat_rotate(turn, arm)), turned, toe_local


def goal_toe_point(span: Span, goal: Goal) -> Vec3:
    """Where `goal` puts the foot's toe point: the span's pinned one as the goal turns and moves the foot
    (moved in height where it was stood on the floor)."""
    return add(goal[0], quat_rotate(quat_multiply(goal[1], quat_conjugate(span.rotation)), subtract(span.toe_point, span.ankle)))


def _angle_about(axis: Vec3, a: Vec3, b: Vec3) -> float:
    """The angle from `a` to `b` about `axis` (unit), both seen along it."""
    return math.atan2(dot(cross(a, b), axis), dot(a, b) - dot(a, axis) * dot(b, axis))


def solve(skeleton: Skeleton, foot: Foot, rotations: List[Quat], positions: List[Vec3], goal: Goal,
          towards: Vec3, floor: Optional[float] = None, standing: float = 1.0) -> None:
    """Turn the leg in place (world rotations and positions of the thigh's subtree) so the ankle reaches
    `goal`'s position, the knee in the leg's plane (`towards` where the leg is straight), then the foot
    and toe to `goal`'s rotations; every other joint below keeps its rotation relative to its parent.
    With `floor`, a sole that ends under it is turned up about the ankle (`clearing_pitch`), and what that
    leaves is reached again that much higher. A foot that is the leg's last bone stands as `goal` turns it
    by the share `standing` (1 on a pin, easing to 0 off it: `ease.standing_shares`), the rest of the way
    reached by the leg as a free foot's is (`_reach`). Each solve reaches once from the pose it was given
    (a reach leans the knee's plane on `towards`, so a second reach on top of the first would lean it
    twice: a sole a hair under the floor moved the knee 1.4 mm where one a hair over it did not)."""
    given = leg_pose(skeleton, foot, rotations, positions)
    _reach(skeleton, foot, rotations, positions, goal, towards, floor is None, standing)
    if floor is None:
        return
    under = floor - min(posed_point(p, rotations, positions)[1] for p in foot.sole)
    if under <= 0.0:
        return
    axis = quat_rotate(yaw_rotation(foot_yaw(foot, rotations[foot.ankle])), foot.lateral)
    angle = clearing_pitch([subtract(posed_point(p, rotations, positions), positions[foot.ankle]) for p in foot.sole],
                           axis, floor - positions[foot.ankle][1])
    _turn(skeleton, foot.ankle, rotations, positions, quat_from_axis_angle(axis, angle))
    under = floor - min(posed_point(p, rotations, positions)[1] for p in foot.sole)
    if under > 0.0:
        toe = None if foot.toe is None else quat_multiply(quat_conjugate(rotations[foot.ankle]), rotations[foot.toe])
        lifted = (add(positions[foot.ankle], (0.0, under, 0.0)), rotations[foot.ankle], toe)
        # A rigid foot is lifted from where its first reach stood it: reached again from the given pose, its
        # rock turned the sole back under the floor (footless shins 3.8 cm under on soma_01).
        if foot.body is None:
            restore(given, rotations, positions)
        _reach(skeleton, foot, rotations, positions, lifted, towards, False, standing)


def leg_pose(skeleton: Skeleton, foot: Foot, rotations: Sequence[Quat], positions: Sequence[Vec3]) -> List[Tuple[int, Quat, Vec3]]:
    """The leg's joints (the thigh's subtree) as they stand, for `restore`."""
    return [(j, rotations[j], positions[j]) for j in subtree(skeleton, foot.hip)]


def restore(pose: Sequence[Tuple[int, Quat, Vec3]], rotations: List[Quat], positions: List[Vec3]) -> None:
    for j, rotation, position in pose:
        rotations[j], positions[j] = rotation, position


def clearing_pitch(points: Sequence[Vec3], axis: Vec3, floor: float, toe_down: bool = False) -> float:
    """The smallest toe-up turn about `axis` (the foot's left; radians, at most FOOT_PITCH_MAX_DEG;
    toe-down would flip a foot whose heel dips from frame to frame) that puts every point (from the pivot)
    at or above `floor` (from the pivot): a point's height after a turn by t is c + (y - c) cos t + x sin t
    (c its height's share along the axis, 0 about a level one), so the turns that clear it end where that
    equals `floor`; the nearest such end that clears them all, or where none does, the one of them that
    leaves the lowest point highest. `toe_down`: the same the other way (`hips.cleared_swings` turns a
    free foot toward flat about the axis that takes it there, `contacts` a pin back toward level across)."""
    terms = [(p[1] - axis[1] * dot(axis, p), cross(axis, p)[1], axis[1] * dot(axis, p)) for p in points]
    limit = math.radians(FOOT_PITCH_MAX_DEG)
    low, high = (0.0, limit) if toe_down else (-limit, 0.0)
    candidates = [low, high]
    for y, x, c in terms:
        radius = math.hypot(y, x)
        if radius > 0.0 and abs(floor - c) <= radius:
            middle, half = math.atan2(x, y), math.acos((floor - c) / radius)
            candidates += [math.remainder(middle - half, 2.0 * math.pi), math.remainder(middle + half, 2.0 * math.pi)]

    def lowest(angle: float) -> float:
        cosine, sine = math.cos(angle), math.sin(angle)
        return min([c + y * cosine + x * sine for y, x, c in terms])

    allowed = sorted((a for a in candidates if low <= a <= high), key=abs)
    clearing = [a for a in allowed if lowest(a) >= floor - 1e-9]
    return clearing[0] if clearing else _highest_lowest(terms, low, high)


def _highest_lowest(terms: Sequence[Tuple[float, float, float]], low: float, high: float) -> float:
    """The turn in [low, high] that leaves the lowest of the points (y, x, c: height c + y cos t + x sin t)
    highest, walking the lowest point's curve from `low`: the best is at an end, at a lowest point's own
    peak, or where another point's curve crosses under it."""
    def height(term, angle):
        return term[2] + term[0] * math.cos(angle) + term[1] * math.sin(angle)

    at = low
    best, best_height = low, -math.inf
    for _ in range(4 * len(terms) + 2):  # each piece of the lowest curve once
        under = min(range(len(terms)), key=lambda k: height(terms[k], at + 1e-12))
        y, x, c = terms[under]
        following = high
        for k, (yk, xk, ck) in enumerate(terms):  # the first crossing after `at` where point k goes under
            dy, dx, dc = yk - y, xk - x, ck - c
            radius = math.hypot(dy, dx)
            if k == under or radius == 0.0 or abs(dc) > radius:
                continue
            phase, half = math.atan2(dx, dy), math.acos(-dc / radius)
            for zero in (phase + half, phase - half):
                zero = at + (zero - at) % (2.0 * math.pi)
                if at + 1e-12 < zero < following and -dy * math.sin(zero) + dx * math.cos(zero) < 0.0:
                    following = zero
        peak = at + (math.atan2(x, y) - at) % (2.0 * math.pi)
        for angle in (at, following) + ((peak,) if peak < following else ()):
            if height(terms[under], angle) > best_height + 1e-15:
                best, best_height = angle, height(terms[under], angle)
        if following >= high:
            return best
        at = following
    return best


def stand_on(skeleton: Skeleton, foot: Foot, rotations: List[Quat], positions: List[Vec3], towards: Vec3,
             floor: float, given: Sequence[Tuple[int, Quat, Vec3]]) -> None:
    """A foot held on its heel or its toe alone, turned about its pin (the ankle, the toe point), reached
    again up or down by what puts its lowest sole point on `floor`: a heel struck toe-up turns about its
    ankle, which lifts the heel's own sole; a toe rolled heel-up lifts the ball behind it. Only the height
    moves, so the pinned point does not slide. Reached from `given` (the leg as `solve` was given it,
    `leg_pose`), so the knee's plane leans once whatever the shift."""
    shift = floor - min(posed_point(p, rotations, positions)[1] for p in foot.sole)
    if shift != 0.0:
        toe = None if foot.toe is None else quat_multiply(quat_conjugate(rotations[foot.ankle]), rotations[foot.toe])
        shifted = (add(positions[foot.ankle], (0.0, shift, 0.0)), rotations[foot.ankle], toe)
        restore(given, rotations, positions)
        _reach(skeleton, foot, rotations, positions, shifted, towards)


def lift_above(skeleton: Skeleton, foot: Foot, rotations: List[Quat], positions: List[Vec3], towards: Vec3,
               floor: float) -> None:
    """A free foot whose sole is under `floor` reached that much higher, its rotations kept; one above it
    is left as it is."""
    if min(posed_point(p, rotations, positions)[1] for p in foot.sole) >= floor:
        return
    toe = None if foot.toe is None else quat_multiply(quat_conjugate(rotations[foot.ankle]), rotations[foot.toe])
    solve(skeleton, foot, rotations, positions, (positions[foot.ankle], rotations[foot.ankle], toe), towards, floor, 0.0)


def _reach(skeleton: Skeleton, foot: Foot, rotations: List[Quat], positions: List[Vec3], goal: Goal,
           towards: Vec3, pinned: bool = False, standing: float = 1.0) -> None:
    ankle_goal, foot_rotation, toe_local = goal
    if foot.body is not None and standing > 0.0:
        rigid = (list(rotations), list(positions))
        _reach_rigid(skeleton, foot, rigid[0], rigid[1], goal, towards, pinned)
        if standing < 1.0:  # the leg's own reach, turned the `standing` share of the way to the rigid foot's
            _reach(skeleton, foot, rotations, positions, goal, towards, pinned, 0.0)
            for joint in sorted({foot.hip, foot.body}):  # parents first
                turn = quat_normalize(quat_multiply(rigid[0][joint], quat_conjugate(rotations[joint])))
                _turn(skeleton, joint, rotations, positions, quat_slerp(IDENTITY, turn, standing))
            return
        rotations[:], positions[:] = rigid
        return
    hip, knee, ankle = foot.hip, foot.knee, foot.ankle
    lean = math.sin(math.radians(KNEE_LEAN_DEG))
    new_knee, new_ankle = two_bone_points(positions[hip], positions[knee], positions[ankle], ankle_goal, towards, lean)
    _turn(skeleton, hip, rotations, positions, quat_between(subtract(positions[knee], positions[hip]),
                                                            subtract(new_knee, positions[hip])))
    if knee != ankle:
        _turn(skeleton, knee, rotations, positions, quat_between(subtract(positions[ankle], positions[knee]),
                                                                 subtract(new_ankle, positions[knee])))
    _turn(skeleton, ankle, rotations, positions, quat_multiply(foot_rotation, quat_conjugate(rotations[ankle])))
    if foot.toe is not None and toe_local is not None:
        wanted = quat_multiply(rotations[ankle], toe_local)
        _turn(skeleton, foot.toe, rotations, positions, quat_multiply(wanted, quat_conjugate(rotations[foot.toe])))


def rigid_top(foot: Foot, rotations: Sequence[Quat], positions: Sequence[Vec3], goal: Goal) -> Vec3:
    """Where a rigid foot's top (its knee; a one-bone leg's hip) is with the foot standing as `goal` has it."""
    offset = quat_rotate(quat_conjugate(rotations[foot.ankle]), subtract(positions[foot.knee], positions[foot.ankle]))
    return add(goal[0], quat_rotate(goal[1], offset))


def standing_sole(foot: Foot, rotations: Sequence[Quat], positions: Sequence[Vec3], goal: Goal) -> List[Vec3]:
    """The foot's sole points (world) with the foot standing as `goal` has it, carried rigidly by its ankle."""
    inverse = quat_conjugate(rotations[foot.ankle])
    return [add(goal[0], quat_rotate(goal[1], quat_rotate(inverse, subtract(posed_point(p, rotations, positions), positions[foot.ankle]))))
            for p in foot.sole]


def goal_sole(skeleton: Skeleton, foot: Foot, rotations: Sequence[Quat], positions: Sequence[Vec3], goal: Goal) -> List[Vec3]:
    """The foot's sole points (world) with the foot standing as `goal` has it: the ankle's subtree carried
    rigidly onto the goal, the toe bone's turned to the goal's toe rotation where it gives one."""
    rotations, positions = list(rotations), list(positions)
    ankle = foot.ankle
    turn = quat_multiply(goal[1], quat_conjugate(rotations[ankle]))
    pivot = positions[ankle]
    for j in subtree(skeleton, ankle):
        rotations[j] = quat_multiply(turn, rotations[j])
        positions[j] = add(goal[0], quat_rotate(turn, subtract(positions[j], pivot)))
    if foot.toe is not None and goal[2] is not None:
        _turn(skeleton, foot.toe, rotations, positions, quat_multiply(quat_multiply(goal[1], goal[2]), quat_conjugate(rotations[foot.toe])))
    return [posed_point(p, rotations, positions) for p in foot.sole]


def stood_on(skeleton: Skeleton, foot: Foot, rotations: Sequence[Quat], positions: Sequence[Vec3], goal: Goal,
             floor: float) -> Goal:
    """`goal` moved up or down by what puts its lowest sole point on `floor` (a foot held on its heel or
    its toe alone: a heel struck toe-up lifts the heel's own sole, a toe rolled heel-up the ball behind
    it). Only the height moves, so the pinned point does not slide; moved in the goal, before the hips'
    path and the toe's roll, both reckon with the reach the leg will be asked for."""
    shift = floor - min(p[1] for p in goal_sole(skeleton, foot, rotations, positions, goal))
    return add(goal[0], (0.0, shift, 0.0)), goal[1], goal[2]


def rigid_knee(foot: Foot, rotations: Sequence[Quat], positions: Sequence[Vec3], goal: Goal, hip: Vec3,
               pivot: Vec3, towards: Optional[Vec3] = None) -> Tuple[Vec3, Quat]:
    """Where a rigid foot's top (its knee; a one-bone leg's hip) goes and the foot's world rotation, the
    foot standing on `goal` turned by the least about `pivot` (a point of it, world) that puts its top at
    the thigh's length from `hip` (no turn where the goal does; the top toward `hip` where none reaches),
    the knee off the line from `pivot` to `hip` as the goal has it (with `towards`, leaning on it by
    KNEE_LEAN_DEG, so that a swinging leg's knee never switches sides as that line passes through it)."""
    top = rigid_top(foot, rotations, positions, goal)
    wanted = subtract(top, pivot)
    span = subtract(hip, pivot)
    distance = length(span)
    radius, thigh = length(wanted), foot.thigh
    if distance < 1e-9 or radius < 1e-9:
        return add(pivot, wanted), goal[1]
    axis = scale(span, 1.0 / distance)
    distance = min(max(distance, abs(radius - thigh)), radius + thigh)
    side = bend_direction(pivot, top, hip, towards, math.sin(math.radians(KNEE_LEAN_DEG))) if towards is not None else wanted
    side = subtract(side, scale(axis, dot(side, axis)))
    if length(side) < 1e-9 * radius:
        side = cross(axis, (1.0, 0.0, 0.0) if abs(axis[0]) < 0.9 else (0.0, 1.0, 0.0))
    side = normalize(side)
    cosine = min(1.0, max(-1.0, (radius * radius + distance * distance - thigh * thigh) / (2.0 * radius * distance)))
    top = add(scale(axis, radius * cosine), scale(side, radius * math.sqrt(1.0 - cosine * cosine)))
    return add(pivot, top), quat_normalize(quat_multiply(quat_between(wanted, top), goal[1]))


def rocking_pivot(foot: Foot, rotations: Sequence[Quat], positions: Sequence[Vec3], goal: Goal, hip: Vec3) -> Tuple[Goal, Vec3]:
    """The point of a rigid foot's sole (world, standing as `goal` has it) it turns about to reach `hip`
    (`rigid_knee`): its lowest, or where the least turn about that one presses another lower, that one (a
    block's sole turned toward its front rocks on its front edge: turned about its middle, the front went
    2 cm under the floor). Returned with `goal` lowered by what puts that point as low as the lowest one
    (`_rocked_onto`): the foot rests on the point it rocks on (turned about a point over the floor, a
    block's sole floated 2.5 cm, 5.7 per 1.7 m, over its pin)."""
    standing = standing_sole(foot, rotations, positions, goal)
    pivot = min(standing, key=lambda p: p[1])
    _, rotation = rigid_knee(foot, rotations, positions, goal, hip, pivot)
    turn = quat_multiply(rotation, quat_conjugate(goal[1]))
    return _rocked_onto(goal, standing, min(standing, key=lambda p: quat_rotate(turn, subtract(p, pivot))[1]))


def _rocked_onto(goal: Goal, standing: Sequence[Vec3], pivot: Vec3) -> Tuple[Goal, Vec3]:
    """`goal` lowered by what puts `pivot` (a point of its sole, `standing`) as low as the sole's lowest
    point, and `pivot` lowered with it."""
    drop = min(p[1] for p in standing) - pivot[1]
    return ((goal[0][0], goal[0][1] + drop, goal[0][2]), goal[1], goal[2]), (pivot[0], pivot[1] + drop, pivot[2])


def _reach_rigid(skeleton: Skeleton, foot: Foot, rotations: List[Quat], positions: List[Vec3], goal: Goal, towards: Vec3,
                 pinned: bool) -> None:
    """A foot that is the leg's last bone (`Foot.body`) onto `goal`, turned about the point of its sole
    `rocking_pivot` picks (`rigid_knee`; the same point whether pinned or easing to or from a pin, so
    the foot turns on smoothly), and `pinned`, as `rigid_rest` stands it: the thigh turned to its top,
    the bone as the foot."""
    hip, body = foot.hip, foot.body
    if pinned:
        top, rotation, _ = rigid_rest(foot, rotations, positions, goal, positions[hip])
    else:
        rocked, pivot = rocking_pivot(foot, rotations, positions, goal, positions[hip])
        top, rotation = rigid_knee(foot, rotations, positions, rocked, positions[hip], pivot, towards)
    if body != hip:
        _turn(skeleton, hip, rotations, positions, quat_between(subtract(positions[body], positions[hip]), subtract(top, positions[hip])))
    _turn(skeleton, body, rotations, positions, quat_multiply(rotation, quat_conjugate(rotations[foot.ankle])))


def rigid_rest(foot: Foot, rotations: Sequence[Quat], positions: Sequence[Vec3], goal: Goal, hip: Vec3) -> Tuple[Vec3, Quat, float]:
    """A pinned rigid foot's top and world rotation with the thigh's root at `hip`, and how far its sole's
    lowest point then is over the goal's (negative: under). It rests on the point of its sole that leaves
    that lowest point where the goal has it (`rocking_pivot`'s, or another that is lowest after its turn:
    the path's bounds pick theirs for another height of the hip, and a block's other front corner, picked
    here, left it 7 mm under the floor); where the hip is out of the leg's reach from there (two rigid
    legs wanting the hips at heights the pelvis' roll cannot join: a one-bone leg kneeling beside a stiff
    one on its toe), that point slides along the floor, toward or away from the hip by the least that lets
    it reach, rather than float or sink the sole (8 cm over the floor on g1_02's kneel)."""
    standing = standing_sole(foot, rotations, positions, goal)
    floor = min(p[1] for p in standing)

    def rested(moved: Goal, about: Vec3) -> Tuple[float, Vec3, Quat, bool]:
        placed, turned = rigid_knee(foot, rotations, positions, moved, hip, about)
        reached = hip
        if foot.thigh > 0.0:
            apart = length(subtract(placed, hip))
            reached = add(hip, scale(subtract(placed, hip), foot.thigh / apart)) if apart > 1e-12 else placed
        turn = quat_multiply(turned, quat_conjugate(goal[1]))
        moved_top = rigid_top(foot, rotations, positions, moved)
        shift = subtract(moved[0], goal[0])
        heights = [reached[1] + quat_rotate(turn, subtract(add(p, shift), moved_top))[1] for p in standing]
        own = reached[1] + quat_rotate(turn, subtract(about, moved_top))[1]
        return min(heights) - floor, placed, turned, min(heights) >= own - 1e-6

    rocked, pivot = rocking_pivot(foot, rotations, positions, goal, hip)
    best = rested(rocked, pivot) + (rocked, pivot)
    for point in standing:
        moved, about = _rocked_onto(goal, standing, point)
        other = rested(moved, about)
        if other[3] and abs(other[0]) < abs(best[0]) - 1e-6:
            best = other + (moved, about)
    miss, top, rotation, _, moved, about = best
    radius = length(subtract(rigid_top(foot, rotations, positions, moved), about))
    apart = length(subtract(hip, about))
    reach = min(max(apart, abs(radius - foot.thigh)), radius + foot.thigh)
    rise = about[1] - hip[1]
    across = math.hypot(about[0] - hip[0], about[2] - hip[2])
    if abs(reach - apart) > 1e-9 * radius and reach > abs(rise) and across > 1e-9:
        wanted = math.sqrt(reach * reach - rise * rise) / across
        shift = ((about[0] - hip[0]) * (wanted - 1.0), 0.0, (about[2] - hip[2]) * (wanted - 1.0))
        moved, about = (add(moved[0], shift), moved[1], moved[2]), add(about, shift)
        miss, top, rotation, _ = rested(moved, about)
    return top, rotation, miss


def rested(foot: Foot, rotations: Sequence[Quat], positions: Sequence[Vec3], goal: Goal, hip: Vec3) -> Tuple[Goal, Vec3]:
    """`goal` as `rigid_rest` leaves a pinned rigid foot with the thigh's root at `hip` (its ankle and world
    rotation after the rock), and where its knee's plane then is: the knee's offset from the line from
    `hip` to that ankle."""
    top, rotation, _ = rigid_rest(foot, rotations, positions, goal, hip)
    offset = quat_rotate(quat_conjugate(rotations[foot.ankle]), subtract(positions[foot.knee], positions[foot.ankle]))
    ankle = subtract(top, quat_rotate(rotation, offset))
    return (ankle, rotation, goal[2]), _off_line(subtract(top, hip), subtract(ankle, hip))


def swivel(skeleton: Skeleton, foot: Foot, rotations: List[Quat], positions: List[Vec3], plane: Vec3, share: float) -> None:
    """Turn the leg about the line from its hip to its ankle by `share` of the turn that puts its knee's
    offset from that line along `plane` (`rested`): the ankle stays, the knee's plane moves."""
    line = subtract(positions[foot.ankle], positions[foot.hip])
    own = _off_line(subtract(positions[foot.knee], positions[foot.hip]), line)
    wanted = _off_line(plane, line)
    if share <= 0.0 or length(line) < 1e-12 or length(own) < 1e-12 or length(wanted) < 1e-12:
        return
    axis = normalize(line)
    _turn(skeleton, foot.hip, rotations, positions, quat_from_axis_angle(axis, share * _angle_about(axis, own, wanted)))


def _off_line(point: Vec3, line: Vec3) -> Vec3:
    """`point`'s offset, square to `line`, from the line through the origin along `line`."""
    along = dot(line, line)
    return point if along < 1e-24 else subtract(point, scale(line, dot(point, line) / along))


def _turn(skeleton: Skeleton, joint: int, rotations: List[Quat], positions: List[Vec3], turn: Quat) -> None:
    """Turn `joint` and everything below it as one piece by the world rotation `turn` about the joint."""
    turn_joints(subtree(skeleton, joint), rotations, positions, positions[joint], turn, joint)


def leg_towards(rotations: Sequence[Quat], rest_hips: Quat, forward: Vec3) -> Vec3:
    """Where a straight leg's knee bends: the character's forward, turned as its hips are from bind."""
    return quat_rotate(quat_multiply(rotations[0], quat_conjugate(rest_hips)), forward)
