"""Hands above the floor, one stage: a hand or forearm that would go under the character's rest floor is
lifted onto it by the least turn, each found in closed form, of first its back (never left further from
upright than the clip bends it), then its wrist, then its whole arm about the shoulder, each turn eased in
and out over ARM_EASE_S. Used by kimodo_rig.retarget.feet.

The constraint is one inequality per frame, the lowest hand point at or above the floor. Turned by t
about a unit axis k through a pivot, a point at r from the pivot stands at
    pivot_y + k_y (k.r) + (r_y - k_y (k.r)) cos t + (k x r)_y sin t,
so the least t that brings it onto the floor is an arccosine (`_least_turn`); the hand's is the largest
of its points'. The back goes first because it changes no limb direction (the arms ride along keeping
their world rotations), the wrist next because the forearm ends there, and the arm last, the one turn
the limb measure sees; the arm swings whole about the shoulder (the elbow's bend kept, so upper and
lower arm turn by the same least angle: folding the elbow turns the upper arm twice as far).
"""
from __future__ import annotations

import bisect
import math
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from ..model import Skeleton
from ..ops.fk import turn_joints
from ..rotations import (
    IDENTITY,
    Quat,
    Vec3,
    add,
    cross,
    dot,
    length,
    normalize,
    quat_conjugate,
    quat_from_axis_angle,
    quat_multiply,
    quat_normalize,
    quat_rotate,
    scale,
    subtract,
)
from .contacts import ARM_EASE_S, ARM_SWING_MAX_DEG, ARM_SWING_OUTWARD, HAND_SAMPLE_S, TORSO_LIFT_MAX_DEG, WRIST_PITCH_MAX_DEG
from .mapping import SIDES, HumanoidMap
from .soles import Point, hand_joint, posed_point, subtree, wrist_joints

# Float noise, not tunings (the stage's tunings are in contacts.py's table).
ON_FLOOR = 1e-6  # m: a point this close under the floor is on it (float noise, not a tuning)
BOUND_SLACK = 1e-9  # m: what a bound of a point's height keeps in hand for rounding (float noise, not a tuning)

Pose = Tuple[List[Quat], List[Vec3]]  # world rotations and positions of every joint, changed in place
UP = (0.0, 1.0, 0.0)


def keep_hands_above(skeleton: Skeleton, tmap: HumanoidMap, hands: Mapping[str, Sequence[Point]],
                     poses: Sequence[Pose], floor: float, fps: float, between: bool = False) -> None:
    """Lift every hand (`hands`: its points per side, forearm included) that would go under `floor`
    onto it, in `poses` (see the module's sentence). A clip whose hands stay above does no more than one
    bound per joint and frame. `between` (the plan's): every stage also reads and lifts instants between
    frames, every HAND_SAMPLE_S on poses interpolated before any lift, so each need and its ease are the
    same at any frame rate (those instants are lifted as the frames are, for the next stage to read, and
    then dropped)."""
    bounds = {side: _HandBound(points) for side, points in hands.items() if points}
    if not any(bound.under(pose, floor) for bound in bounds.values() for pose in poses):
        return
    sorted_points = {side: _HandPoints(hands[side]) for side in bounds}
    steps = max(1, int(round(1.0 / (HAND_SAMPLE_S * fps)))) if between else 1
    read = {joint for side in bounds for point in hands[side] for joint, _, _ in point}
    read.update(joint for side in bounds for joint in wrist_joints(tmap, side))
    read.update(tmap.bones[name] for name in ("spine_0", "upperarm_l", "upperarm_r") if name in tmap.bones)
    samples = _sampled(skeleton, poses, steps, lambda pose: any(bound.under(pose, floor) for bound in bounds.values()),
                       sorted(read))
    _lift_torso(skeleton, tmap, sorted_points, bounds, samples, floor, fps)
    for side in SIDES:
        if side in bounds:
            _pitch_hand(tmap, side, hands[side], bounds[side], samples, floor, fps)
    for side in SIDES:
        if side in bounds:
            _swing_arm(skeleton, tmap, side, sorted_points[side], bounds[side], samples, floor, fps)


class _HandBound:
    """A cheap lower bound of a hand's points' heights: each joint's height less the farthest any point
    it carries sits from it (a point is a weighted mean of such places), so most frames are cleared
    without posing a single point."""

    def __init__(self, points: Sequence[Point]) -> None:
        reach: Dict[int, float] = {}
        for point in points:
            for joint, _, offset in point:
                reach[joint] = max(reach.get(joint, 0.0), length(offset))
        self.reach = sorted(reach.items())

    def under(self, pose: Pose, floor: float) -> bool:
        """Whether some point may be under `floor` in `pose`."""
        positions = pose[1]
        return any(positions[joint][1] - reach < floor for joint, reach in self.reach)


class _HandPoints:
    """A hand's points grouped by the joints that carry them, each group in order of how far its points
    may sit below the lowest of those joints (the weighted lengths of their offsets), so a pose poses
    only the points a bound leaves possibly under the floor: a few in a hundred where a hand nears it."""

    def __init__(self, points: Sequence[Point]) -> None:
        self.points = list(points)
        groups: Dict[Tuple[int, ...], List[Tuple[float, int]]] = {}
        for index, point in enumerate(self.points):
            drop = sum(weight * length(offset) for _, weight, offset in point)
            groups.setdefault(tuple(sorted(joint for joint, _, _ in point)), []).append((drop, index))
        self.groups = [(joints, sorted(members, reverse=True)) for joints, members in groups.items()]
        self.joints = sorted({joint for point in self.points for joint, _, _ in point})
        # Each term's weight and weighted offset: a point's height estimated as the sum over its terms of
        # weight * y + row . weighted offset (`_rows`, once per pose), the same arithmetic's terms in
        # another order: within rounding of `_height` at a third of its cost, so the exact height is worked
        # out only where the estimate is within BOUND_SLACK of the threshold it is held against.
        self.weighted = [tuple((joint, weight, weight * vx, weight * vy, weight * vz) for joint, weight, (vx, vy, vz) in point)
                         for point in self.points]

    def _rows(self, rotations: Sequence[Quat], positions: Sequence[Vec3]) -> Dict[int, Tuple[float, float, float, float]]:
        """Per joint the points hang from, its height and its rotation's middle matrix row, for the estimates."""
        rows = {}
        for joint in self.joints:
            x, y, z, w = rotations[joint]
            rows[joint] = (positions[joint][1], 2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w))
        return rows

    def _candidates(self, rows: Dict[int, Tuple[float, float, float, float]], below: float) -> List[int]:
        """The indices (in order) of the points that may stand under `below`: no point stands lower
        than its group's lowest joint less its drop."""
        limit = below + BOUND_SLACK
        chosen = []
        for joints, members in self.groups:
            lowest = min([rows[j][0] for j in joints]) if len(joints) > 1 else rows[joints[0]][0]
            for drop, index in members:
                if lowest - drop >= limit:
                    break
                chosen.append(index)
        chosen.sort()
        return chosen

    def under(self, pose: Pose, floor: float) -> List[Vec3]:
        """Where the points under `floor` are in `pose`, in their order (posing only the candidates)."""
        rotations, positions = pose
        points = self.points
        threshold = floor - ON_FLOOR
        rows = self._rows(rotations, positions)
        candidates = self._candidates(rows, threshold)
        if not candidates:
            return []
        weighted, below, above = self.weighted, threshold - BOUND_SLACK, threshold + BOUND_SLACK
        found = []
        for index in candidates:
            estimate = 0.0  # (`weighted`)
            for joint, weight, ux, uy, uz in weighted[index]:
                py, r0, r1, r2 = rows[joint]
                estimate += weight * py + (r0 * ux + r1 * uy + r2 * uz)
            if estimate < below or (estimate < above and _height(points[index], rotations, positions) < threshold):
                found.append(posed_point(points[index], rotations, positions))
        return found

    def lowest(self, pose: Pose, ceiling: float = math.inf) -> float:
        """The lowest point's height in `pose` where it is under `ceiling` (else some height at or above
        it, or inf): the groups in order of their least bound, each point's bound first, until no bound
        is lower (the least of the heights, whatever order they come in)."""
        rotations, positions = pose
        rows = self._rows(rotations, positions)
        weighted, points = self.weighted, self.points
        ordered = []
        for joints, members in self.groups:
            floor_of_group = min([positions[j][1] for j in joints]) if len(joints) > 1 else positions[joints[0]][1]
            ordered.append((floor_of_group - members[0][0], floor_of_group, members))
        ordered.sort(key=_first)
        best, limit = math.inf, ceiling + BOUND_SLACK
        for least, floor_of_group, members in ordered:
            if least >= limit:
                break  # so is every later group's
            for drop, index in members:
                if floor_of_group - drop >= limit:
                    break
                estimate = 0.0
                for joint, weight, ux, uy, uz in weighted[index]:
                    py, r0, r1, r2 = rows[joint]
                    estimate += weight * py + (r0 * ux + r1 * uy + r2 * uz)
                if estimate >= limit:
                    continue  # surely higher than the lowest so far (or than the ceiling)
                height = _height(points[index], rotations, positions)
                if height < best:
                    best = height
                    if best < ceiling:
                        limit = best + BOUND_SLACK
        return best


def _first(item: Tuple) -> float:
    return item[0]


def _height(point: Point, rotations: Sequence[Quat], positions: Sequence[Vec3]) -> float:
    """`posed_point(...)[1]` alone (quat_rotate's y written out): a third of the work, and most points
    need no more."""
    y = 0.0
    for joint, weight, (vx, vy, vz) in point:
        qx, qy, qz, qw = rotations[joint]
        tx = 2.0 * (qy * vz - qz * vy)
        ty = 2.0 * (qz * vx - qx * vz)
        tz = 2.0 * (qx * vy - qy * vx)
        y += weight * (positions[joint][1] + vy + qw * ty + (qz * tx - qx * tz))
    return y


def _least_turn(points: Sequence[Vec3], pivot: Vec3, axis: Vec3, floor: float, limit: float) -> float:
    """The least turn (radians, at most `limit`) about the unit `axis` through `pivot` that brings every
    one of `points` onto `floor` or above; a point no turn brings there asks for the turn that raises
    it highest. Closed form per point (the module's formula); the largest of them."""
    turn = 0.0
    kx, ky, kz = axis
    cx, cy, cz = pivot
    for p in points:
        if p[1] >= floor - ON_FLOOR:
            continue
        rx, ry, rz = p[0] - cx, p[1] - cy, p[2] - cz  # subtract, dot and cross written out (hot)
        along = ky * (kx * rx + ky * ry + kz * rz)
        a, b = ry - along, kz * rx - kx * rz
        rise = math.hypot(a, b)
        if rise < 1e-12:
            continue
        highest = math.atan2(b, a) % (2.0 * math.pi)
        wanted = (floor - pivot[1] - along) / rise
        angle = (highest - math.acos(wanted)) % (2.0 * math.pi) if wanted < 1.0 else highest
        if angle > limit:  # out of reach: as high as the turns up to `limit` take it
            angle = highest if highest <= limit else (limit if math.cos(limit - highest) > math.cos(highest) else 0.0)
        turn = max(turn, angle)
    return turn


def _eased(needs: Mapping[float, float], times: Sequence[float], fps: float) -> List[Tuple[float, float]]:
    """Per instant of `times` (in frames, ascending; a fraction between frames), the largest of the needs
    (time -> angle) eased in and out over ARM_EASE_S either side of their times (smoothstep), with the
    time whose need it is (its own where none reaches it)."""
    window = ARM_EASE_S * fps
    eased = [(0.0, when) for when in times]  # type: List[Tuple[float, float]]
    for source, need in needs.items():
        if need <= 0.0:
            continue
        for index in range(bisect.bisect_right(times, source - window), bisect.bisect_left(times, source + window)):
            x = 1.0 - abs(times[index] - source) / window
            value = need * x * x * (3.0 - 2.0 * x)
            if value > eased[index][0]:
                eased[index] = (value, source)
    return eased


def _sampled(skeleton: Skeleton, poses: Sequence[Pose], steps: int, near, read: Sequence[int]) -> List[Tuple[float, Pose]]:
    """(time in frames, pose) of every frame and, with `steps` > 1, of `steps - 1` instants evenly
    between each two frames that `near` (a pose -> bool) holds for at either end: their world rotations
    slerped, the roots on straight lines, every other joint where its parent puts it (its place in its
    parent's frame on a straight line), so a hand swinging between frames follows the arc, not the chord.
    Only the joints `read` (with their parents: the stages read nothing else) are placed so; every other
    joint of an instant keeps the earlier frame's place (read by nobody, it is dropped with the instant)."""
    result = []  # type: List[Tuple[float, Pose]]
    count = len(poses)
    parents = skeleton.parents
    placed_joints = set()  # type: set
    for joint in read:
        while joint >= 0 and joint not in placed_joints:
            placed_joints.add(joint)
            joint = parents[joint]
    order = [(joint, parents[joint]) for joint in sorted(placed_joints)]
    offsets = {}  # type: Dict[int, Dict[int, Vec3]]

    def offsets_of(frame: int) -> Dict[int, Vec3]:
        """Each placed joint's place in its parent's frame at `frame` (shared by the instants either side)."""
        found = offsets.get(frame)
        if found is None:
            rotations, positions = poses[frame]
            found = offsets[frame] = {
                joint: quat_rotate(quat_conjugate(rotations[parent]), subtract(positions[joint], positions[parent]))
                for joint, parent in order if parent >= 0}
        return found

    sqrt, acos, sin = math.sqrt, math.acos, math.sin
    for frame, pose in enumerate(poses):
        result.append((frame, pose))
        if steps > 1 and frame + 1 < count and (near(pose) or near(poses[frame + 1])):
            (rotations, positions), (next_rotations, next_positions) = pose, poses[frame + 1]
            heres, theres = offsets_of(frame), offsets_of(frame + 1)
            # Per joint what every instant between the two frames shares: quat_slerp's and the straight
            # lines' terms that do not depend on the instant (the same arithmetic, written out).
            spans = []
            for joint, parent in order:
                ax, ay, az, aw = rotations[joint]
                bx, by, bz, bw = next_rotations[joint]
                cosine = ax * bx + ay * by + az * bz + aw * bw
                if cosine < 0.0:
                    bx, by, bz, bw = -bx, -by, -bz, -bw
                    cosine = -cosine
                theta = acos(cosine) if cosine <= 0.9995 else None
                if parent < 0:
                    start, end = positions[joint], next_positions[joint]
                else:
                    start, end = heres[joint], theres[joint]
                sx, sy, sz = start
                spans.append((joint, parent, ax, ay, az, aw, bx, by, bz, bw, theta, sin(theta) if theta is not None else 0.0,
                              sx, sy, sz, end[0] - sx, end[1] - sy, end[2] - sz))
            for step in range(1, steps):
                u = step / float(steps)
                turned, placed = list(rotations), list(positions)
                for joint, parent, ax, ay, az, aw, bx, by, bz, bw, theta, s, sx, sy, sz, dx, dy, dz in spans:
                    if theta is None:
                        x, y, z, w = ax + (bx - ax) * u, ay + (by - ay) * u, az + (bz - az) * u, aw + (bw - aw) * u
                        n = sqrt(x * x + y * y + z * z + w * w)
                        turned[joint] = IDENTITY if n == 0.0 else (x / n, y / n, z / n, w / n)
                    else:
                        wa = sin((1.0 - u) * theta) / s
                        wb = sin(u * theta) / s
                        turned[joint] = (ax * wa + bx * wb, ay * wa + by * wb, az * wa + bz * wb, aw * wa + bw * wb)
                    vx, vy, vz = sx + dx * u, sy + dy * u, sz + dz * u
                    if parent < 0:
                        placed[joint] = (vx, vy, vz)
                        continue
                    qx, qy, qz, qw = turned[parent]
                    tx = 2.0 * (qy * vz - qz * vy)
                    ty = 2.0 * (qz * vx - qx * vz)
                    tz = 2.0 * (qx * vy - qy * vx)
                    px, py, pz = placed[parent]
                    placed[joint] = (px + (vx + qw * tx + (qy * tz - qz * ty)), py + (vy + qw * ty + (qz * tx - qx * tz)),
                                     pz + (vz + qw * tz + (qx * ty - qy * tx)))
                result.append((frame + u, (turned, placed)))
            del offsets[frame]
    return result


def _turn_about(joints: Sequence[int], pose: Pose, pivot: Vec3, turn: Quat) -> None:
    """Turn `joints` as one piece by the world rotation `turn` about the point `pivot`."""
    rotations, positions = pose
    turn_joints(joints, rotations, positions, pivot, turn)


def _lift_torso(skeleton: Skeleton, tmap: HumanoidMap, hands: Mapping[str, _HandPoints],
                bounds: Mapping[str, _HandBound], samples: Sequence[Tuple[float, Pose]], floor: float,
                fps: float) -> None:
    """The back's share: the body above the spine's base turns about it, about the horizontal axis that
    raises the shoulders of the hands under the floor fastest (across their lean from the base, each
    weighted by its hand's depth: a hand reaching down alone leans the back over to the other side), by
    the least angle that brings both hands onto the floor (at most TORSO_LIFT_MAX_DEG, and never leaving
    the back further from upright than the clip has it); the arms ride along keeping their world
    rotations. An eased frame turns about the axis of the frame whose need it eases. A spine that
    carries the legs is not turned (the legs are the lock's). `samples`: (time in frames, pose), the
    frames and any instants between them (`_sampled`)."""
    pivot = tmap.bones.get("spine_0")
    sides = [side for side in SIDES if tmap.has("upperarm_" + side) and side in bounds]
    upper_body = subtree(skeleton, pivot) if pivot is not None else []
    if pivot is None or not sides or any(tmap.bones.get("thigh_" + side) in upper_body for side in SIDES):
        return
    shoulders = [tmap.bones["upperarm_" + side] for side in sides]
    carried = {j: shoulder for shoulder in shoulders for j in subtree(skeleton, shoulder)}
    needs, axes = {}, {}
    for frame, pose in samples:
        depths = {}
        for side, shoulder in zip(sides, shoulders):
            if bounds[side].under(pose, floor):
                depth = floor - hands[side].lowest(pose, floor)  # a hand at or above the floor is no depth
                if depth > ON_FLOOR:
                    depths[shoulder] = depth
        if not depths:
            continue
        positions = pose[1]
        centre = positions[pivot]
        towards = (0.0, 0.0, 0.0)
        for shoulder, depth in depths.items():
            towards = add(towards, scale(subtract(positions[shoulder], centre), depth))
        axis = cross(towards, UP)
        if length(axis) < 1e-9 * max(1e-12, length(towards)):
            continue
        axis = normalize(axis)
        most = _most_back_turn(shoulders, pivot, positions, axis)
        # Riding along, a hand rises as its shoulder does: the least turn that raises each shoulder by
        # its hand's depth.
        need = max(_least_turn([positions[j]], centre, axis, positions[j][1] + depth, most)
                   for j, depth in depths.items())
        if need > 0.0:
            needs[frame], axes[frame] = need, axis
    for (_, pose), (angle, source) in zip(samples, _eased(needs, [when for when, _ in samples], fps)):
        if angle <= 0.0:
            continue
        rotations, positions = pose
        angle = min(angle, _most_back_turn(shoulders, pivot, positions, axes[source]))
        if angle <= 0.0:
            continue
        turn = quat_from_axis_angle(axes[source], angle)
        centre = positions[pivot]
        shifts = {j: subtract(add(centre, quat_rotate(turn, subtract(positions[j], centre))), positions[j])
                  for j in shoulders}
        for j in upper_body:
            if j in carried:  # carried with its shoulder, its world rotation kept
                positions[j] = add(positions[j], shifts[carried[j]])
                continue
            rotations[j] = quat_normalize(quat_multiply(turn, rotations[j]))
            positions[j] = add(centre, quat_rotate(turn, subtract(positions[j], centre)))


def _most_back_turn(shoulders: Sequence[int], pivot: int, positions: Sequence[Vec3], axis: Vec3) -> float:
    """The most the back may turn about the horizontal `axis`: TORSO_LIFT_MAX_DEG, and no further than
    leaves its lean (base to the shoulders' middle, height h and rise b = (axis x lean)_y) as far from
    upright as it is: h (cos t - 1) + b sin t >= 0, so t <= 2 atan2(b, h)."""
    centre = positions[pivot]
    lean = scale(add(subtract(positions[shoulders[0]], centre), subtract(positions[shoulders[-1]], centre)), 0.5)
    rise = cross(axis, lean)[1]
    return min(math.radians(TORSO_LIFT_MAX_DEG), 2.0 * math.atan2(rise, lean[1])) if rise > 0.0 else 0.0


def _pitch_hand(tmap: HumanoidMap, side: str, points: Sequence[Point], bound: _HandBound,
                samples: Sequence[Tuple[float, Pose]], floor: float, fps: float) -> None:
    """The wrist's share: the hand turns up about the wrist, the points it carries towards the
    horizontal the way they already lean from it (a hand laid on the floor), by the least angle that
    brings them onto the floor (at most WRIST_PITCH_MAX_DEG). The axis is kept in the hand's own frame,
    so an eased frame turns the hand as the frame it eases does."""
    joints = wrist_joints(tmap, side)
    turning = set(joints)
    points = [p for p in points if sum(w for j, w, _ in p if j in turning) >= 0.5]
    if not points:
        return
    carried = _HandPoints(points)
    wrist = joints[0]
    limit = math.radians(WRIST_PITCH_MAX_DEG)
    needs, axes = {}, {}
    for frame, pose in samples:
        if not bound.under(pose, floor):
            continue
        under = carried.under(pose, floor)
        axis = _swing_axis(min(under, key=lambda q: q[1]), pose[1][wrist], (0.0, 0.0, 0.0)) if under else None
        if axis is None:
            continue
        need = _least_turn(under, pose[1][wrist], axis, floor, limit)
        if need > 0.0:
            needs[frame] = need
            axes[frame] = quat_rotate(quat_conjugate(pose[0][wrist]), axis)
    for (_, pose), (angle, source) in zip(samples, _eased(needs, [when for when, _ in samples], fps)):
        if angle > 0.0:
            axis = quat_rotate(pose[0][wrist], axes[source])
            _turn_about(joints, pose, pose[1][wrist], quat_from_axis_angle(axis, angle))


def _swing_arm(skeleton: Skeleton, tmap: HumanoidMap, side: str, points: _HandPoints, bound: _HandBound,
               samples: Sequence[Tuple[float, Pose]], floor: float, fps: float) -> None:
    """The arm's share: the whole arm swings up about its shoulder as one piece, out to the side and along
    the way it already leans, by the least angle that brings the hand onto the floor (at most
    ARM_SWING_MAX_DEG). An eased frame turns about the world axis of the frame whose need it eases: about
    its own, a hand passing under the shoulder (its axis a quarter turn on in a frame) swung the arm
    37 deg in one (the robot, soma_01: Kimodo's turned 16). Where that other axis leaves the hand under,
    the frame's own axis lifts the rest."""
    upper, other = "upperarm_" + side, "upperarm_" + ("r" if side == "l" else "l")
    if not (tmap.has(upper) and hand_joint(tmap, side) is not None):
        return
    shoulder = tmap.bones[upper]
    arm = subtree(skeleton, shoulder)
    limit = math.radians(ARM_SWING_MAX_DEG)

    def own_need(pose: Pose) -> Tuple[Optional[Vec3], float]:
        positions = pose[1]
        under = points.under(pose, floor)
        if not under:
            return None, 0.0
        outward = subtract(positions[shoulder], positions[tmap.bones[other]]) if tmap.has(other) else (0.0, 0.0, 0.0)
        axis = _swing_axis(min(under, key=lambda q: q[1]), positions[shoulder], (outward[0], 0.0, outward[2]))
        return axis, (_least_turn(under, positions[shoulder], axis, floor, limit) if axis is not None else 0.0)

    needs, axes = {}, {}
    for frame, pose in samples:
        if bound.under(pose, floor):
            axis, need = own_need(pose)
            if need > 0.0:
                needs[frame], axes[frame] = need, axis
    for (_, pose), (angle, source) in zip(samples, _eased(needs, [when for when, _ in samples], fps)):
        if angle <= 0.0:
            continue  # untouched since its own need was read, and that was none (a need eases to itself)
        _turn_about(arm, pose, pose[1][shoulder], quat_from_axis_angle(axes[source], angle))
        if bound.under(pose, floor):
            axis, rest = own_need(pose)
            if axis is not None and rest > 0.0:
                _turn_about(arm, pose, pose[1][shoulder], quat_from_axis_angle(axis, rest))


def _swing_axis(lowest: Vec3, pivot: Vec3, outward: Vec3) -> Optional[Vec3]:
    """The axis through `pivot` (a shoulder or a wrist) about which a limb swings its lowest point up:
    the pivot-to-lowest line turned towards the horizontal it leans to, pushed out along `outward`
    (ARM_SWING_OUTWARD of the reach); None for a degenerate limb."""
    r = subtract(lowest, pivot)
    reach = length(r)
    side_out = normalize(outward) if length(outward) > 1e-9 else (0.0, 0.0, 0.0)
    axis = cross(r, add((r[0], 0.0, r[2]), scale(side_out, ARM_SWING_OUTWARD * reach)))
    return normalize(axis) if reach > 1e-9 and length(axis) > 1e-9 * reach * reach else None
