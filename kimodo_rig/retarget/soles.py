"""Where a character's feet and hands are (its soles and hand points riding on the working skeleton's
joints, the rest floor), Kimodo's foot contacts, and the small pose helpers the feet passes share
(two-bone IK, rigid turns). Used by kimodo_rig.retarget.feet."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Mapping, Optional, Sequence, Set, Tuple

from .. import skeletons
from ..model import Motion, Skeleton
from ..ops import derived_channels
from ..ops.fk import rest_pose, turn_joints
from ..rotations import (
    IDENTITY,
    Quat,
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
    quat_normalize,
    quat_rotate,
    quat_slerp,
    scale,
    sphere_directions,
    subtract,
)
from ..errors import KimodoError
from .mapping import SIDES, HumanoidMap, prop_joints
from .solve import RetargetInfo

BLEND_FRAMES = 4
# The sine of a leg's bend under which the hip line, not the pose, sets the plane its knee bends in
# (`two_bone`). Kimodo's standing leg is straight to a few degrees, bent any way; at 0.05 that noise
# set the plane: a footless shin's knee bent 24 deg sideways through a toe contact, then back into the
# hip line's plane in the frame the leg bent forward (g1_04: the shin 19 deg in a frame beyond Kimodo's).
KNEE_PLANE_LATERAL = 0.25
SOLE_BAND = 0.02  # of the character's height: vertices this close to the foot's lowest are its sole
DIRECTIONS = 96  # a foot or hand is the vertices farthest out in this many directions (fast on dense meshes)
Point = Tuple[Tuple[int, float, Vec3], ...]  # (joint, weight, offset in the joint's bind frame) terms
# The character's vertices at bind: (position in the glTF frame, metres; {joint name: weight}).
BindMesh = Sequence[Tuple[Sequence[float], Mapping[str, float]]]
FRONT_ASIDE_COST = 0.1  # how much a sole vertex's distance from the ankle's line counts against its reach ahead


@dataclass(frozen=True)
class Soles:
    """Points that ride on the working skeleton's joints, per side, and the rest floor (metres)."""

    rest_floor: float
    feet: Dict[str, Tuple[Point, ...]]
    hands: Dict[str, Tuple[Point, ...]]
    toe_points: Dict[str, Optional[Point]]  # where a toe contact pins, per side
    from_mesh: bool
    # Per side, a point 1 m ahead of the foot joint along the character's facing at rest, riding on it:
    # the foot's own heading however it turns, wherever its mesh hangs (the axis it pitches about).
    headings: Dict[str, Point] = field(default_factory=dict)


def subtree(skeleton: Skeleton, joint: int) -> List[int]:
    return list(_subtree(skeleton.parents, joint))


@functools.lru_cache(maxsize=4096)
def _subtree(parents: Tuple[int, ...], joint: int) -> Tuple[int, ...]:
    """The joint and all below it (parents come before their children). Kept: the feet and hands passes
    ask for the same few every frame, and a walk of every joint each time made a 700-bone character's
    retarget twice a 50-bone one's."""
    inside = {joint}
    for j in range(joint + 1, len(parents)):
        if parents[j] in inside:
            inside.add(j)
    return tuple(sorted(inside))


def foot_carriers(skeleton: Skeleton, foot: int) -> List[Tuple[int, FrozenSet[str]]]:
    """(top joint, the names of it and the bones below it) whose vertices are a foot's, in the order to
    try them: the foot; then, for when its bones carry none (a one-bone leg's or a shin's tip, no foot
    bone: the foot's mesh is on the bone above), the bone above it."""
    tops = [foot] + ([skeleton.parents[foot]] if skeleton.parents[foot] >= 0 else [])
    return [(top, frozenset(skeleton.joint_names[j] for j in subtree(skeleton, top))) for top in tops]


def hand_joint(tmap: HumanoidMap, side: str) -> Optional[int]:
    """The hand, or where the map names none, the forearm's first child (a palm bone by another name)."""
    if tmap.has("hand_" + side):
        return tmap.bones["hand_" + side]
    if not tmap.has("lowerarm_" + side):
        return None
    children = tmap.skeleton.children(tmap.bones["lowerarm_" + side])
    return children[0] if children else None


def hand_joints(tmap: HumanoidMap, side: str) -> List[int]:
    """The joints whose vertices are kept above the floor: the forearm and all below it (a hand of
    several palm bones, each the forearm's child, as RobotExpressive's Palm1L..Palm3L and ThumbL: its
    lowest finger is on any of them; and the forearm itself, which a kneel brings to the ground), or
    where the map names no forearm, the hand and all below it; never a prop either carries
    (`prop_joints`: Soldier's ShieldSlot)."""
    props = prop_joints(tmap.skeleton)
    for part in ("lowerarm_", "hand_"):
        if tmap.has(part + side):
            return [j for j in subtree(tmap.skeleton, tmap.bones[part + side]) if j not in props]
    return []


def standing_joint(tmap: HumanoidMap, side: str) -> int:
    """The joint one side of the body stands on: its foot, else its toe, else the lowest bone of its leg
    (the map always has a thigh, or a one-bone leg's, on each side)."""
    for part in ("foot_", "toe_", "calf_", "thigh_"):
        if tmap.has(part + side):
            return tmap.bones[part + side]
    raise KimodoError("{}: no leg on the {} side".format(tmap.skeleton.name, "left" if side == "l" else "right"))


def leg_chain(tmap: HumanoidMap, side: str) -> Optional[Tuple[int, int, int]]:
    """Thigh, shin and foot, each below the one before: a leg two-bone IK can lock. None for a one-bone
    leg (Kenney's `leg-left`) or a leg without a foot: such a leg stands on the floor but is not locked."""
    joints = [tmap.bones.get(part + "_" + side) for part in ("thigh", "calf", "foot")]
    if any(j is None for j in joints):
        return None
    thigh, calf, foot = joints  # type: ignore[misc]
    skeleton = tmap.skeleton
    if calf not in subtree(skeleton, thigh) or foot not in subtree(skeleton, calf) or calf == thigh or foot == calf:
        return None
    return thigh, calf, foot  # type: ignore[return-value]


def added_tip(skeleton: Skeleton, joint: int) -> bool:
    """A tip joint the rig reading added where a childless bone ends (`<bone>_tip`): a guess from the
    bone's vertices or axis, not a joint of the character, so soles are not stood on it."""
    parent = skeleton.parents[joint]
    return parent >= 0 and skeleton.joint_names[joint] == skeleton.joint_names[parent] + "_tip"


def own_joints(skeleton: Skeleton, joint: int) -> List[int]:
    """The joint and those below it that are the character's own (no added tips; the joint itself
    always, a one-bone leg's foot being its tip)."""
    return [j for j in subtree(skeleton, joint) if j == joint or not added_tip(skeleton, j)]


def posed_point(point: Point, rotations: Sequence[Quat], positions: Sequence[Vec3]) -> Vec3:
    """The point's world place: the weighted sum of add(position, quat_rotate(rotation, offset)) of its
    terms, written out in place (the same arithmetic: it runs per sole and hand point per frame)."""
    x = y = z = 0.0
    for joint, weight, (vx, vy, vz) in point:
        qx, qy, qz, qw = rotations[joint]
        tx = 2.0 * (qy * vz - qz * vy)
        ty = 2.0 * (qz * vx - qx * vz)
        tz = 2.0 * (qx * vy - qy * vx)
        px, py, pz = positions[joint]
        x += weight * (px + (vx + qw * tx + (qy * tz - qz * ty)))
        y += weight * (py + (vy + qw * ty + (qz * tx - qx * tz)))
        z += weight * (pz + (vz + qw * tz + (qx * ty - qy * tx)))
    return (x, y, z)


def _as_point(world: Vec3, weights: Dict[int, float], rotations: Sequence[Quat], positions: Sequence[Vec3]) -> Point:
    return tuple((j, w, quat_rotate(quat_conjugate(rotations[j]), subtract(world, positions[j])))
                 for j, w in sorted(weights.items()))


def _extremes(items: List, count: int) -> List:
    """The items (vertex, weights) farthest out in `count` directions, per bone that carries them most
    (a toe turns against its foot): the lowest point of a foot or a hand, however it turns, is one of
    them (nearly: skinning bends a little)."""
    groups: Dict[int, List[int]] = {}
    for index, (_, weights) in enumerate(items):
        groups.setdefault(max(weights, key=weights.__getitem__), []).append(index)
    chosen = set()
    directions = sphere_directions(count)
    for members in groups.values():
        places = [items[i][0] for i in members]
        for dx, dy, dz in directions:  # dot(place, direction), the first of the farthest
            along = [p[0] * dx + p[1] * dy + p[2] * dz for p in places]
            chosen.add(members[along.index(max(along))])
    return [items[i] for i in sorted(chosen)]


def _on_working_skeleton(mesh: BindMesh, skeleton: Skeleton) -> List[Tuple[Vec3, Dict[int, float]]]:
    """The mesh's vertices with their weights on the working skeleton's joints (influences outside it
    dropped, the rest renormalised; vertices it does not carry dropped)."""
    by_name = {name: j for j, name in enumerate(skeleton.joint_names)}
    result = []
    for position, weights in mesh:
        terms = {by_name[name]: w for name, w in weights.items() if name in by_name and w > 0.0}
        total = sum(terms.values())
        if 1e-6 < total < math.inf and len(position) == 3 and all(math.isfinite(c) for c in position):
            result.append(((float(position[0]), float(position[1]), float(position[2])),
                           {j: w / total for j, w in terms.items()}))
    return result


def sole_front(sole: Sequence[Sequence[float]], ankle: Sequence[float], forward: Vec3) -> int:
    """Index of the sole's front among `sole` (points at bind): the one a foot pitched toe-down onto the
    floor stands on, found along the character's FORWARD (its measured facing, horizontal), never as
    the point farthest from the ankle (a foot whose mesh hangs behind its ankle has its heel there).
    Each point scores its reach ahead of the ankle less its height over the lowest (a 45 deg pitch) and
    a tenth of its distance aside from the ankle's line (the toe's middle, not a corner: the score has
    no exact ties between the corners of a flat toe, so float noise picks no other vertex)."""
    lowest = min(p[1] for p in sole)
    side = (forward[2], 0.0, -forward[0])

    def score(k: int) -> float:
        p = sole[k]
        offset = (p[0] - ankle[0], 0.0, p[2] - ankle[2])
        return dot(offset, forward) - (p[1] - lowest) - FRONT_ASIDE_COST * abs(dot(offset, side))

    return max(range(len(sole)), key=score)


def _weighed_by(vertices: Sequence[Tuple[Vec3, Dict[int, float]]], joints: Set[int]) -> List[Tuple[Vec3, Dict[int, float]]]:
    """The vertices `joints` carry at least half of (a vertex none of them weighs is skipped unsummed)."""
    return [(v, w) for v, w in vertices if not joints.isdisjoint(w) and sum(w.get(j, 0.0) for j in joints) >= 0.5]


def find_soles(mesh: BindMesh, info: RetargetInfo) -> Soles:
    """The character's soles, hands and rest floor on the retarget's working skeleton, from its bind mesh
    (`character.bind_mesh`, or a host's own: positions in the glTF frame, weights by joint name)."""
    tmap = info.target_map
    skeleton = tmap.skeleton
    rotations, positions = rest_pose(skeleton)
    height = max(p[1] for p in positions) - min(p[1] for p in positions)
    vertices = _on_working_skeleton(mesh, skeleton)
    feet: Dict[str, Tuple[Point, ...]] = {}
    hands: Dict[str, Tuple[Point, ...]] = {}
    toes: Dict[str, Optional[Point]] = {}
    from_mesh = True
    props = prop_joints(skeleton)
    for side in SIDES:
        foot = standing_joint(tmap, side)
        foot_joints = set(subtree(skeleton, foot)) - props
        hand = hand_joint(tmap, side)
        on_foot = _weighed_by(vertices, foot_joints)
        if not on_foot and skeleton.parents[foot] >= 0:
            # A one-bone leg, or a shin with no foot bone, ends at a tip no vertex follows: the bone's own
            # vertices carry its sole.
            on_foot = _weighed_by(vertices, set(subtree(skeleton, skeleton.parents[foot])))
        on_hand = _weighed_by(vertices, set(hand_joints(tmap, side)))
        toes[side] = ((tmap.bones["toe_" + side], 1.0, (0.0, 0.0, 0.0)),) if tmap.has("toe_" + side) else None
        if on_foot:
            lowest = min(v[1] for v, _ in on_foot)
            sole = sorted((item for item in on_foot if item[0][1] <= lowest + SOLE_BAND * height), key=lambda i: i[0][1])
            feet[side] = tuple(_as_point(v, w, rotations, positions) for v, w in _extremes(on_foot, DIRECTIONS))
            if toes[side] is None:  # no toe bone: a toe contact pins the sole's front (a rigid foot rolls on it)
                front = sole[sole_front([v for v, _ in sole], positions[foot], info.forward)]
                toes[side] = _as_point(front[0], front[1], rotations, positions)
        else:
            from_mesh = False
            feet[side] = tuple(((j, 1.0, (0.0, 0.0, 0.0)),) for j in own_joints(skeleton, foot))
        if on_hand:
            hands[side] = tuple(_as_point(v, w, rotations, positions) for v, w in _extremes(on_hand, DIRECTIONS))
        else:
            hands[side] = tuple(((j, 1.0, (0.0, 0.0, 0.0)),) for j in (own_joints(skeleton, hand) if hand is not None else []))
    rest_floor = min(posed_point(p, rotations, positions)[1] for side in SIDES for p in feet[side])
    headings = {side: ((tmap.bones["foot_" + side], 1.0, quat_rotate(quat_conjugate(rotations[tmap.bones["foot_" + side]]),
                                                                     info.forward)),)
                for side in SIDES if tmap.has("foot_" + side)}
    return Soles(rest_floor, feet, hands, toes, from_mesh, headings)


def source_contacts(motion: Motion, source_map: HumanoidMap,
                    positions: Sequence[Sequence[Vec3]]) -> Dict[str, List[Tuple[bool, bool]]]:
    """Per side, per frame: (heel, toe) in contact. The clip's own labels where it has them (a [T,6] NPZ
    reads with the toe in contact when its toe or toe end is), else Kimodo's rule on the foot and toe joints."""
    frames = motion.frame_count
    if motion.foot_contacts is not None:
        values = motion.foot_contacts
        return {side: [(values[f * 4 + 2 * s] >= 0.5, values[f * 4 + 2 * s + 1] >= 0.5) for f in range(frames)]
                for s, side in enumerate(SIDES)}
    if motion.skeleton.name in skeletons.BUILTIN:
        labels = derived_channels.detect_foot_contacts(motion.skeleton, positions, motion.fps)
        return {side: [(labels[f * 4 + 2 * s] >= 0.5, labels[f * 4 + 2 * s + 1] >= 0.5) for f in range(frames)]
                for s, side in enumerate(SIDES)}
    result = {}
    for side in SIDES:
        heel = standing_joint(source_map, side)
        toe = source_map.bones.get("toe_" + side, heel)
        result[side] = [(_touching(positions, heel, f, motion.fps), _touching(positions, toe, f, motion.fps))
                        for f in range(frames)]
    return result


def _touching(positions: Sequence[Sequence[Vec3]], joint: int, frame: int, fps: float) -> bool:
    count = len(positions)
    a, b = (frame, frame + 1) if frame + 1 < count else (frame - 1, frame)
    speed = length(subtract(positions[b][joint], positions[a][joint])) * fps if count > 1 else 0.0
    return speed < derived_channels.CONTACT_SPEED_M_S and positions[frame][joint][1] < derived_channels.CONTACT_HEIGHT_M


def _ramp(flags: Sequence[bool], frames: int) -> List[float]:
    """1 on flagged frames, falling smoothly to 0 over `frames` frames either side."""
    count = len(flags)
    weights = []
    for t in range(count):
        if flags[t]:
            weights.append(1.0)
            continue
        near = min([abs(t - u) for u in range(max(0, t - frames), min(count, t + frames + 1)) if flags[u]] or [frames + 1])
        x = max(0.0, 1.0 - near / float(frames + 1))
        weights.append(x * x * (3.0 - 2.0 * x))
    return weights


def two_bone(root: Vec3, middle: Vec3, end: Vec3, goal: Vec3, lateral: Vec3) -> Tuple[Quat, Quat]:
    """Rotations (world, about `root` and about `middle`) that bring `end` to `goal` (or as near as the
    chain reaches): the middle joint bends in the chain's own plane (its normal from the pose, leaning
    on `lateral` where the chain is straight), then the whole chain swings about the root."""
    upper = subtract(middle, root)
    lower = subtract(end, middle)
    a, b = length(upper), length(lower)
    if a < 1e-9 or b < 1e-9:
        return (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0, 1.0)
    bend_normal = cross(upper, lower)
    normal = normalize(add(bend_normal, scale(normalize(lateral), KNEE_PLANE_LATERAL * a * b)))
    reach = length(subtract(goal, root))
    reach = min(max(reach, abs(a - b) + 1e-6 * (a + b)), (a + b) * (1.0 - 1e-6))
    now = math.acos(max(-1.0, min(1.0, dot(scale(upper, -1.0 / a), scale(lower, 1.0 / b)))))
    wanted = math.acos(max(-1.0, min(1.0, (a * a + b * b - reach * reach) / (2.0 * a * b))))
    knee = quat_from_axis_angle(normal, now - wanted)
    new_end = add(middle, quat_rotate(knee, lower))
    swing = quat_between(subtract(new_end, root), subtract(goal, root))
    return swing, knee


def _solve_chain(skeleton: Skeleton, rotations: List[Quat], positions: List[Vec3], top: int, middle: int,
                 effector: int, goal: Vec3, lateral: Vec3, middle_chain: List[int], effector_chain: List[int]) -> None:
    """Turn the joints in place so `effector` reaches `goal`; the effector's subtree keeps its world
    rotations. Positions are recomputed for every joint below `top`."""
    swing, knee = two_bone(positions[top], positions[middle], positions[effector], goal, lateral)
    effector_set = set(effector_chain)
    middle_set = set(middle_chain)
    for j in subtree(skeleton, top):
        if j in effector_set:
            continue
        turn = quat_multiply(swing, knee) if j in middle_set else swing
        rotations[j] = quat_normalize(quat_multiply(turn, rotations[j]))
    for j in subtree(skeleton, top):
        if j == top:
            continue
        parent = skeleton.parents[j]
        positions[j] = add(positions[parent], quat_rotate(rotations[parent], skeleton.rest_offsets[j]))


def _locals(skeleton: Skeleton, rotations: Sequence[Quat]) -> List[Quat]:
    out = []
    for j, parent in enumerate(skeleton.parents):
        out.append(rotations[j] if parent < 0 else quat_normalize(quat_multiply(quat_conjugate(rotations[parent]), rotations[j])))
    return out


def _middle(positions: Sequence[Vec3], joints: Sequence[int]) -> Tuple[float, float]:
    return (sum(positions[j][0] for j in joints) / len(joints), sum(positions[j][2] for j in joints) / len(joints))


def _carried(point: Vec3, centre: Tuple[float, float], turn: float, offset: Tuple[float, float]) -> Tuple[float, float]:
    """How far (x, z) a point moves when the body turns by `turn` about the vertical through `centre`
    and shifts by `offset`."""
    x, z = point[0] - centre[0], point[2] - centre[1]
    c, s = math.cos(turn), math.sin(turn)
    return (x * c + z * s - x + offset[0], -x * s + z * c - z + offset[1])


def _lowest(points: Sequence[Point], rotations, positions, lift: Vec3 = (0.0, 0.0, 0.0)) -> float:
    return min(_posed_height(p, rotations, positions) for p in points) + lift[1]


def _posed_height(point: Point, rotations: Sequence[Quat], positions: Sequence[Vec3]) -> float:
    """`posed_point(...)[1]`, the same sums in the same order (quat_rotate's y written out): `_lowest`
    asks it for every sole and hand point of every pose the feet and hands passes try."""
    y = 0.0
    for joint, weight, (vx, vy, vz) in point:
        qx, qy, qz, qw = rotations[joint]
        tx = 2.0 * (qy * vz - qz * vy)
        ty = 2.0 * (qz * vx - qx * vz)
        tz = 2.0 * (qx * vy - qy * vx)
        y += weight * (positions[joint][1] + (vy + qw * ty + (qz * tx - qx * tz)))
    return y


def _mean_rotation(rotations: Sequence[Quat]) -> Quat:
    """The rotation nearest to all of `rotations` (their sum, signs aligned with the first, normalised)."""
    first = rotations[0]
    total = [0.0, 0.0, 0.0, 0.0]
    for q in rotations:
        sign = 1.0 if sum(a * b for a, b in zip(q, first)) >= 0.0 else -1.0
        for i in range(4):
            total[i] += sign * q[i]
    return quat_normalize(tuple(total))  # type: ignore[arg-type]


def _at_most(turn: Quat, degrees: float) -> Quat:
    """`turn`, or as far along it as `degrees`."""
    angle = quat_angle(turn)
    return turn if angle <= math.radians(degrees) else quat_slerp(IDENTITY, turn, math.radians(degrees) / angle)


def _leg_length(hmap: HumanoidMap, side: str) -> float:
    """Thigh and shin, hip to ankle, at rest."""
    hip, knee, ankle = leg_chain(hmap, side)  # type: ignore[misc]
    positions = rest_pose(hmap.skeleton)[1]
    return chain_length(positions[hip], positions[knee], positions[ankle])


def chain_length(hip: Vec3, knee: Vec3, ankle: Vec3) -> float:
    """Thigh and shin, hip to ankle, as the joints stand."""
    return length(subtract(knee, hip)) + length(subtract(ankle, knee))


def _ease(needs: Sequence[float], over: int = BLEND_FRAMES) -> List[float]:
    """Each frame's need, eased in and out over `over` frames either side (the largest that reaches it)."""
    return [value for value, _ in _eased_from(needs, over)]


def _eased_from(needs: Sequence[float], over: int = BLEND_FRAMES) -> List[Tuple[float, int]]:
    """`_ease`, each frame's value with the frame whose need it is (its own where none reaches it)."""
    frames = len(needs)
    eased = []
    for t in range(frames):
        best = (0.0, t)
        for u in range(max(0, t - over), min(frames, t + over + 1)):
            x = 1.0 - abs(t - u) / float(over + 1)
            value = needs[u] * x * x * (3.0 - 2.0 * x)
            if value > best[0]:
                best = (value, u)
        eased.append(best)
    return eased


def wrist_joints(tmap: HumanoidMap, side: str) -> List[int]:
    """The joints that turn at the wrist, the wrist first: the hand and all below it, or where the map
    names no hand, the forearm's children that start where its first one does, with all below them
    (RobotExpressive's Palm1L..Palm3L and their fingers; not its ThumbL, which starts on the forearm
    before them and stays with it)."""
    hand = hand_joint(tmap, side)
    if hand is None:
        return []
    skeleton = tmap.skeleton
    if tmap.has("hand_" + side):
        return subtree(skeleton, hand)
    forearm = tmap.bones["lowerarm_" + side]
    positions = rest_pose(skeleton)[1]
    reach = length(subtract(positions[hand], positions[forearm]))
    starts = [c for c in skeleton.children(forearm) if length(subtract(positions[c], positions[hand])) <= 0.01 * reach]
    return [hand] + sorted(j for c in starts for j in subtree(skeleton, c) if j != hand)


def _turn_rigidly(joints: List[int], rotations: List[Quat], positions: List[Vec3], axis: Vec3, angle: float) -> None:
    """Turn `joints` (a joint and everything below it, the first the pivot) as one piece about `axis`."""
    _turn_about(joints, rotations, positions, positions[joints[0]], quat_from_axis_angle(axis, angle))


def _turn_about(joints: Sequence[int], rotations: List[Quat], positions: List[Vec3], pivot: Vec3, turn: Quat) -> None:
    """Turn `joints` as one piece by the world rotation `turn` about the point `pivot`."""
    turn_joints(joints, rotations, positions, pivot, turn)
