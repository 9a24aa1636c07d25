"""The floor and the feet, as a pass after the solve: where the character's soles are, Kimodo's foot
contacts, the feet placed on the floor and locked where they land.

- Soles: with a mesh, each foot's vertices at bind (linear blend skinning of the vertices the foot's
  joints carry, or meshes hung rigidly under a foot bone), kept as the few farthest out in DIRECTIONS
  directions per bone; without one, the foot's joints. The character's REST FLOOR is their lowest at bind.
- Contacts: the clip's own (Kimodo NPZ, [T,4] or [T,6]), else labelled as Kimodo labels them: a foot
  joint slower than 0.15 m/s and lower than 0.10 m.
- Floor: every frame the hips move up or down so the lowest sole sits on the rest floor while a foot is
  planted, and as far above it as Kimodo's lowest foot joint rises above its own planted height (scaled
  by the leg ratio) while none is; the change is eased over BLEND_FRAMES.
- Foot lock: while heel and toe are both down the foot keeps its world rotation (`_held`). Each contact
  span pins its contact point (heel: the foot joint; toe: the toe joint, or the sole's front without one)
  where it lands, the sole on the rest floor in every contact frame; on its toe alone the foot rolls on
  the pinned toe so the ankle stays near where the leg has it (at most TOE_ROLL_MAX_DEG); the leg reaches it with two-bone IK (thigh
  and shin turned, the knee kept in the leg's own plane, the foot keeping its world rotation), the hips
  coming down where a leg cannot reach and up where it cannot fold so far, and up or down by what turns
  the legs least where both feet are planted at different heights (a kneel); where the lock would still
  take more than its budget (`_reach_budget`: 0.01, 0.02 on a G1 clip) off a thigh's or shin's mean
  cosine over the clip, the hips first drop on the side of the foot that must come down (`_drop_hip`, a
  kneel on a long shin), then the frames that still turn them most let the pin's height go (the sole
  floats there); eased in before and out after each span over BLEND_FRAMES. Nothing ends under the rest
  floor; no knee goes deeper under it than Kimodo's own. Before that the hips are carried horizontally by
  the planted feet, and with both down also turned about the vertical by most of what keeps both where
  they landed (hips wider than Kimodo's, turned as its own are, swing the feet round with them).
- Hands: a hand (or forearm) that would go under the rest floor (a long-armed character, in a walk as
  much as picking something up) is lifted onto it, first by what the limbs' directions do not include:
  the torso turned up about the spine's base, then the hand turned up at the wrist; then by the whole
  arm swinging up about its shoulder, and only what is left by folding the elbow (each eased over
  ARM_EASE_FRAMES).
"""
from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, replace
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from .. import skeletons
from ..model import Motion, Skeleton
from ..ops import derived_channels
from ..ops.derived_channels import least_acceleration
from ..ops.fk import global_rotations_and_positions, pose_globals, rest_pose
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
from .mapping import SIDES, HumanoidMap
from .solve import RetargetInfo, centred_average, retarget

BLEND_FRAMES = 4
SOLE_BAND = 0.02  # of the character's height: vertices this close to the foot's lowest are its sole
DIRECTIONS = 96  # a foot or hand is the vertices farthest out in this many directions (fast on dense meshes)
LEASH = 0.05  # of the leg's reach: how far Kimodo's planted foot may drift before the pin follows it
REACH_LIMIT = 0.995  # of the leg's length: a locked leg never snaps fully straight

Point = Tuple[Tuple[int, float, Vec3], ...]  # (joint, weight, offset in the joint's bind frame) terms


# The character's vertices at bind: (position in the glTF frame, metres; {joint name: weight}).
BindMesh = Sequence[Tuple[Sequence[float], Mapping[str, float]]]


@dataclass(frozen=True)
class Soles:
    """Points that ride on the working skeleton's joints, per side, and the rest floor (metres)."""

    rest_floor: float
    feet: Dict[str, Tuple[Point, ...]]
    hands: Dict[str, Tuple[Point, ...]]
    toe_points: Dict[str, Optional[Point]]  # where a toe contact pins, per side
    from_mesh: bool


def subtree(skeleton: Skeleton, joint: int) -> List[int]:
    inside = {joint}
    for j in range(joint + 1, skeleton.joint_count):
        if skeleton.parents[j] in inside:
            inside.add(j)
    return sorted(inside)


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
    where the map names no forearm, the hand and all below it."""
    if tmap.has("lowerarm_" + side):
        return subtree(tmap.skeleton, tmap.bones["lowerarm_" + side])
    return subtree(tmap.skeleton, tmap.bones["hand_" + side]) if tmap.has("hand_" + side) else []


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


def unlocked_legs(tmap: HumanoidMap, locked: bool = True) -> List[str]:
    """The sides whose leg two-bone IK cannot lock, in words for the report: a one-bone leg is locked by
    the hips and its own direction (`_pin_one_bone_legs`) when the lock ran, a leg without a foot is not."""
    return ["{}: one-bone leg (no thigh-shin-foot chain): foot-locked by the hips and the leg's own direction, "
            "its sole rocking heel to toe".format(tmap.joint_name("thigh_" + side))
            if locked and not tmap.has("calf_" + side) and tmap.has("foot_" + side) else
            "{}: {} leg (no thigh-shin-foot chain): stands on the floor, not foot-locked".format(
                tmap.joint_name("thigh_" + side), "one-bone" if not tmap.has("calf_" + side) else "footless")
            for side in SIDES if leg_chain(tmap, side) is None]


def posed_point(point: Point, rotations: Sequence[Quat], positions: Sequence[Vec3]) -> Vec3:
    x = y = z = 0.0
    for joint, weight, offset in point:
        p = add(positions[joint], quat_rotate(rotations[joint], offset))
        x += weight * p[0]
        y += weight * p[1]
        z += weight * p[2]
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
        groups.setdefault(max(weights, key=lambda j: weights[j]), []).append(index)
    chosen = set()
    directions = sphere_directions(count)
    for members in groups.values():
        for direction in directions:
            chosen.add(max(members, key=lambda i: dot(items[i][0], direction)))
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


FRONT_ASIDE_COST = 0.1  # how much a sole vertex's distance from the ankle's line counts against its reach ahead


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
    for side in SIDES:
        foot = standing_joint(tmap, side)
        foot_joints = set(subtree(skeleton, foot))
        hand = hand_joint(tmap, side)
        on_foot = [(v, w) for v, w in vertices if sum(w.get(j, 0.0) for j in foot_joints) >= 0.5]
        if not on_foot and leg_chain(tmap, side) is None and skeleton.parents[foot] >= 0:
            # A one-bone leg ends at a tip no vertex follows: the leg bone's own vertices carry its sole.
            leg_joints = set(subtree(skeleton, skeleton.parents[foot]))
            on_foot = [(v, w) for v, w in vertices if sum(w.get(j, 0.0) for j in leg_joints) >= 0.5]
        carrying = set(hand_joints(tmap, side))
        on_hand = [(v, w) for v, w in vertices if sum(w.get(j, 0.0) for j in carrying) >= 0.5]
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
    return Soles(rest_floor, feet, hands, toes, from_mesh)


# --- contacts -------------------------------------------------------------------------------------

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


# --- two-bone IK ------------------------------------------------------------------------------------

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
    normal = normalize(add(bend_normal, scale(normalize(lateral), 0.05 * a * b)))
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


# --- the pass ---------------------------------------------------------------------------------------

def _planted_heights(source_positions, contacts, source_map: HumanoidMap) -> Dict[int, float]:
    """Each source foot joint's height when Kimodo has it planted (median over its contact frames), so
    the source's clearance is measured from its own sole, not from its joints."""
    heights = {}
    for side in SIDES:
        heel = standing_joint(source_map, side)
        toe = source_map.bones.get("toe_" + side)
        for joint, channel in ((heel, 0), (toe, 1)):
            if joint is None or joint in heights:
                continue
            values = sorted(source_positions[f][joint][1] for f, flags in enumerate(contacts[side]) if flags[channel])
            heights[joint] = values[len(values) // 2] if values else min(
                p[joint][1] for p in source_positions) if source_positions else 0.0
    return heights


def retarget_onto(motion: Motion, target: Skeleton, *, bind_mesh: BindMesh = (), in_place: bool = False,
                  root_motion: str = "hips", foot_lock: bool = True, target_map: Optional[HumanoidMap] = None,
                  target_name: str = "", source_name: str = "") -> Tuple[Motion, RetargetInfo]:
    """`motion` on the humanoid `target`: the solve, then this pass. The one retarget every front end
    calls (`kimodo-rig retarget`, the preview, the Blender add-on through api.retarget_motion), so they
    all put the same motion on a character. `bind_mesh`: the character's vertices at bind (soles on the
    mesh; none: on the joints). With --in-place and the lock, the travel taken out is in
    `info.removed_travel` (locked feet walk a treadmill, locked on the travelling motion)."""
    retargeted, info = retarget(motion, target, in_place=in_place, root_motion=root_motion,
                                target_map=target_map, target_name=target_name, source_name=source_name)
    treadmill = None
    if in_place and foot_lock:
        travelling, _ = retarget(motion, target, root_motion=root_motion, target_map=target_map,
                                 target_name=target_name, source_name=source_name)
        treadmill = removed_travel(travelling, retargeted)
        retargeted = travelling
    placed, moved, treadmill = place_feet(retargeted, motion, info, bind_mesh, lock=foot_lock, treadmill=treadmill)
    root_track = info.root_track
    if root_track is not None:  # the root bone travels with the hips
        root_track = tuple(((p[0] + d[0], p[1], p[2] + d[1]), q) for (p, q), d in zip(root_track, moved))
    return placed, replace(info, removed_travel=tuple(treadmill) if treadmill is not None else None, root_track=root_track,
                           foot_locked=foot_lock)


SPIKE = 0.01  # of the leg's reach: a floor shift this far from its neighbours' median is a one-frame jump
SPIKE_FRAMES = 2  # either side: the neighbours a frame's floor shift is judged against


def _despiked(values: Sequence[float], tolerance: float) -> List[float]:
    """`values` with each that lies more than `tolerance` from the median of its SPIKE_FRAMES
    neighbours either side replaced by that median (a jump of a frame or two); the rest as they are."""
    result = list(values)
    for frame, value in enumerate(values):
        window = sorted(values[max(0, frame - SPIKE_FRAMES):frame + SPIKE_FRAMES + 1])
        middle = window[len(window) // 2] if len(window) % 2 else 0.5 * (window[len(window) // 2 - 1] + window[len(window) // 2])
        if abs(value - middle) > tolerance:
            result[frame] = middle
    return result


def _eased_steps(values: Sequence[float], tolerance: float, over: int = BLEND_FRAMES) -> List[float]:
    """`values` with each step between two frames larger than `tolerance` spread over `over` frames either
    side of it (a smoothstep), so what follows a change of the feet that stand is reached, not jumped to."""
    result = list(values)
    count = len(values)
    for frame in range(1, count):
        step = values[frame] - values[frame - 1]
        if abs(step) <= tolerance:
            continue
        for other in range(max(0, frame - over), min(count, frame + over)):
            t = (other - (frame - over) + 0.5) / (2.0 * over)
            eased = t * t * (3.0 - 2.0 * t)
            result[other] += step * (eased - (1.0 if other >= frame else 0.0))
    return result


def removed_travel(travelling: Motion, in_place: Motion) -> List[Tuple[float, float]]:
    """Per frame, the horizontal travel --in-place took out of the hips (the same retarget with and without)."""
    return [(travelling.root_positions[f * 3] - in_place.root_positions[f * 3],
             travelling.root_positions[f * 3 + 2] - in_place.root_positions[f * 3 + 2])
            for f in range(travelling.frame_count)]


def place_feet(retargeted: Motion, source: Motion, info: RetargetInfo, bind_mesh: BindMesh = (), *,
               lock: bool = True, treadmill: Optional[Sequence[Tuple[float, float]]] = None
               ) -> Tuple[Motion, List[Tuple[float, float]], Optional[List[Tuple[float, float]]]]:
    """The retargeted motion with its soles on the character's rest floor and, with `lock`, its
    planted feet pinned where they land (the hips carried with them). `treadmill` (--in-place:
    `removed_travel`) is taken out of the hips afterwards, with the travel the feet carried, so the feet
    are locked to a floor that moves with the travel removed. Returns the motion, the horizontal change
    (x, z) its hips got per frame, and the travel taken out (None without `treadmill`)."""
    skeleton = retargeted.skeleton
    tmap = info.target_map
    smap = info.source_map
    soles = find_soles(bind_mesh, info)
    floor = soles.rest_floor
    frames = retargeted.frame_count
    if not frames:
        return retargeted, [], treadmill
    ratio = info.reach_target / info.reach_source
    source_positions = global_rotations_and_positions(source)[1]
    contacts = source_contacts(source, smap, source_positions)
    planted = _planted_heights(source_positions, contacts, smap)
    any_contact = [any(contacts[s][f][0] or contacts[s][f][1] for s in SIDES) for f in range(frames)]
    planted_weight = _ramp(any_contact, BLEND_FRAMES)

    lockable = [side for side in SIDES if leg_chain(tmap, side) is not None]
    roots = array("d", retargeted.root_positions)
    poses = []
    shifts = []
    for frame in range(frames):
        rotations, positions = pose_globals(skeleton, retargeted.frame_rotations(frame), retargeted.root_position(frame))
        clearance = max(0.0, min(source_positions[frame][j][1] - h for j, h in planted.items())) * ratio
        # The feet that stand: heels down first (a foot on its toes pitches, its sole's front reaching
        # far below the ankle on a long foot: it is turned up onto the floor below, not stood on); a leg
        # the lock cannot turn (one bone) always.
        standing = [side for side in SIDES if contacts[side][frame][0]] or [
            side for side in SIDES if contacts[side][frame][1]] or list(SIDES)
        standing = sorted(set(standing) | {side for side in SIDES if side not in lockable})
        lowest = min(posed_point(p, rotations, positions)[1] for side in standing for p in soles.feet[side])
        shifts.append(floor + (1.0 - planted_weight[frame]) * clearance - lowest)
        poses.append((list(rotations), list(positions)))
    # The feet that stand change from one frame to the next (a heel lifts and the foot on its toes, pitched
    # far down, is lowest for a frame): the body must not jump with them. Not with a one-bone leg: its pins
    # move the hips by what each rigid leg needs from this height, and eased, its leg turns past the bar.
    if all(side in lockable for side in SIDES):
        shifts = _eased_steps(_despiked(shifts, SPIKE * info.reach_target), SPIKE * info.reach_target)
    for frame, shift in enumerate(shifts):
        roots[frame * 3 + 1] += shift
        rotations, positions = poses[frame]
        poses[frame] = (rotations, [add(p, (0.0, shift, 0.0)) for p in positions])

    carried = [(0.0, 0.0)] * frames
    if lock:
        # A one-bone leg cannot bend to stay pinned, but its planted foot still carries the hips (its
        # direction stays Kimodo's): it slides only as far as its rigid length differs from Kimodo's leg.
        carrying = [side for side in SIDES if tmap.has("foot_" + side)]
        one_bone = [side for side in carrying if side not in lockable]
        held = contacts
        if one_bone:  # a foot Kimodo lifts for a frame or two and sets down where it was stays pinned
            held = {side: _bridged(contacts[side], source_positions, standing_joint(smap, side),
                                   smap.bones.get("toe_" + side, standing_joint(smap, side)), ONE_BONE_SLIP * info.reach_source)
                    for side in SIDES}
        carried = _follow_planted_feet(tmap, soles, carrying, held, poses, roots)
        if one_bone:
            moved = _pin_one_bone_legs(tmap, soles, one_bone, held, poses, roots, floor,
                                       ONE_BONE_BUDGETS.get(source.skeleton.name, ONE_BONE_BUDGET))
            carried = [(c[0] + m[0], c[1] + m[2]) for c, m in zip(carried, moved)]
        for side in lockable:
            _hold_flat_feet(skeleton, tmap, soles, side, contacts[side], poses)
    for side in lockable:
        _pitch_onto_floor(skeleton, tmap, soles, side, contacts[side], poses, floor)
    leash = LEASH * info.reach_target
    facing = info.corrections.facing
    tracks = {side: [quat_rotate(facing, scale(positions[standing_joint(smap, side)], ratio)) for positions in source_positions]
              for side in SIDES}
    goals = {side: _foot_goals(tmap, soles, side, contacts[side], poses, floor, leash, tracks[side]) if lock and side in lockable
             else [None] * frames for side in SIDES}
    # How low each knee may go: under the floor only as far as Kimodo's own does (G1 kneels with its
    # knee joint 11 cm under its floor), scaled by the legs' length.
    knee_floors = {}
    for side in lockable:
        if smap.has("calf_" + side) and leg_chain(smap, side) is not None:
            legs = _leg_length(tmap, side) / max(1e-9, _leg_length(smap, side))
            knee = smap.bones["calf_" + side]
            knee_floors[side] = [floor + min(0.0, positions[knee][1] * legs) for positions in source_positions]
    _reach_goals(skeleton, tmap, soles, goals, poses, roots, floor, _reach_budget(source.skeleton.name), knee_floors)
    _lift_torso(skeleton, tmap, soles, poses, floor)
    for side in SIDES:
        _pitch_hand(tmap, soles, side, poses, floor)
    for side in SIDES:
        _keep_above(skeleton, tmap, soles, side, poses, floor)

    local_rotations = array("d")
    for rotations, _ in poses:
        for q in _locals(skeleton, rotations):
            local_rotations.extend(q)
    moved = carried
    if treadmill is not None:
        # In place: the solve's travel out, and the travel the planted feet carried the hips (its smooth
        # part; the sway stays), so the character walks a treadmill where it stands.
        window = max(1, int(round(retargeted.fps * 0.5)))
        smooth = [centred_average([c[axis] for c in carried], window) for axis in (0, 1)]
        removed = [(dx + smooth[0][f] - smooth[0][0], dz + smooth[1][f] - smooth[1][0]) for f, (dx, dz) in enumerate(treadmill)]
        moved = [(c[0] - r[0] + t[0], c[1] - r[1] + t[1]) for c, r, t in zip(carried, removed, treadmill)]
        for frame, (dx, dz) in enumerate(removed):
            roots[frame * 3] -= dx
            roots[frame * 3 + 2] -= dz
        treadmill = removed
    placed = Motion(skeleton, local_rotations, roots, retargeted.fps, name=retargeted.name, prompt=retargeted.prompt)
    return placed, moved, treadmill


HIPS_TURN_SHARE = 0.75  # of the turn that would keep both planted feet exactly where they were pinned
HIPS_TURN_RETURN_DEG = 2.0  # a frame: how fast the hips' turn goes back to the clip's with one foot down


def _follow_planted_feet(tmap: HumanoidMap, soles: Soles, sides: Sequence[str],
                         contacts: Dict[str, List[Tuple[bool, bool]]], poses, roots: array) -> List[Tuple[float, float]]:
    """The hips carried horizontally by the planted feet, so the legs keep the clip's directions: a foot
    that lands is pinned where it is (its heel, or its toe when only the toe is down), and while it stays
    planted the body moves so that point stays put (held through flight). A leg of other proportions
    than Kimodo's then strides its own length instead of sliding. While both feet are planted the hips
    also turn about the vertical through the middle of the thighs' roots, the legs carried along
    keeping their world directions (and the body above the hips its world rotations), by HIPS_TURN_SHARE
    of the turn that keeps both feet where they were pinned: hips wider than Kimodo's for their legs,
    turned as Kimodo turns its own with both feet down, swing the feet round with them (RobotExpressive
    on soma_04: 40 cm each way). What the turn leaves, the legs take (`_foot_goals`' leash): turned
    wholly, the feet's distance apart (which no turn changes) went to the legs, and the hips coming down
    for one of them bent the other more. With one foot down the turn goes back to the clip's (at most
    HIPS_TURN_RETURN_DEG a frame, about that foot's thigh root). Eased over BLEND_FRAMES either side;
    returns the horizontal change (x, z) the hips got in each frame."""
    skeleton = tmap.skeleton
    frames = len(poses)
    thighs = [tmap.bones["thigh_" + side] for side in SIDES]
    pins: Dict[str, Tuple[bool, Tuple[float, float]]] = {}
    turn, offset = 0.0, (0.0, 0.0)
    back = math.radians(HIPS_TURN_RETURN_DEG)
    raw = []
    for frame in range(frames):
        rotations, positions = poses[frame]
        centre = _middle(positions, thighs)
        wants = {}
        for side in sides:
            heel_on, toe_on = contacts[side][frame]
            toe_point = soles.toe_points.get(side)
            if toe_point is None:
                heel_on, toe_on = heel_on or toe_on, False
            if not (heel_on or toe_on):
                pins.pop(side, None)
                continue
            point = positions[tmap.bones["foot_" + side]] if heel_on else posed_point(toe_point, rotations, positions)  # type: ignore[arg-type]
            root = positions[tmap.bones["thigh_" + side]]
            pin = pins.get(side)
            if pin is None or pin[0] != heel_on:  # lands, or rolls onto its toe: pinned where it is now
                moved = _carried(root, centre, turn, offset)
                pins[side] = (heel_on, (point[0] + moved[0], point[2] + moved[1]))
                continue
            wants[side] = ((root[0] - centre[0], root[2] - centre[1]), (pin[1][0] - point[0], pin[1][1] - point[2]))
        if len(wants) == 2:
            # The turn that points the line between the thighs' roots where the pins want it, and the
            # shift that puts the middle of the two where they want it.
            (ra, wa), (rb, wb) = wants[SIDES[0]], wants[SIDES[1]]
            base = (ra[0] - rb[0], ra[1] - rb[1])
            wanted = (base[0] + wa[0] - wb[0], base[1] + wa[1] - wb[1])
            turn = HIPS_TURN_SHARE * math.atan2(base[1] * wanted[0] - base[0] * wanted[1], base[0] * wanted[0] + base[1] * wanted[1])
            offset = ((wa[0] + wb[0]) / 2.0, (wa[1] + wb[1]) / 2.0)
        else:
            turn -= max(-back, min(back, turn))
            if wants:
                (r, w), = wants.values()
                swing = _carried((r[0], 0.0, r[1]), (0.0, 0.0), turn, (0.0, 0.0))
                offset = (w[0] - swing[0], w[1] - swing[1])
        raw.append((turn, offset[0], offset[1]))
    eased = [centred_average([r[k] for r in raw], BLEND_FRAMES) for k in range(3)]
    # The hips and any joint between them and a thigh turn; every other joint moves with the first joint
    # below those (a thigh, the spine: its subtree keeps its world rotations).
    turned = set()
    for thigh in thighs:
        joint = skeleton.parents[thigh]
        while joint >= 0:
            turned.add(joint)
            joint = skeleton.parents[joint]
    anchor: Dict[int, int] = {}
    for j in range(skeleton.joint_count):  # parents before children
        if j not in turned:
            anchor[j] = j if skeleton.parents[j] in turned else anchor[skeleton.parents[j]]
    carried = []
    for frame in range(frames):
        rotations, positions = poses[frame]
        turn, offset = eased[0][frame], (eased[1][frame], eased[2][frame])
        centre = _middle(positions, thighs)
        moves = {j: _carried(positions[j], centre, turn, offset) for j in turned | set(anchor.values())}
        hips = moves[0]
        carried.append(hips)
        roots[frame * 3] += hips[0]
        roots[frame * 3 + 2] += hips[1]
        if turn != 0.0:
            yaw = quat_from_axis_angle((0.0, 1.0, 0.0), turn)
            for j in turned:
                rotations[j] = quat_normalize(quat_multiply(yaw, rotations[j]))
        positions[:] = [(p[0] + d[0], p[1], p[2] + d[1]) for p, d in
                        zip(positions, [moves[j] if j in turned else moves[anchor[j]] for j in range(skeleton.joint_count)])]
    return carried


# --- one-bone legs ----------------------------------------------------------------------------------

# The most the pin takes off a one-bone leg's mean cosine over a clip (its bar: 0.99 on SOMA, 0.97 on G1),
# per Kimodo skeleton; the rest of the bar is left for what the solve and the measure differ by.
ONE_BONE_BUDGETS = {"g1skel34": 0.02}
ONE_BONE_BUDGET = 0.005
ONE_BONE_HIPS_LEVEL = 4.0  # how much dearer the hips' horizontal moves are than their vertical ones
ONE_BONE_STEPS = 8
ONE_BONE_STIFFNESS = 0.001  # m²/m²: what the hips' move costs beside the legs' misses of their pins (squared)
ONE_BONE_SETTLE = 3  # times the pin's height is set again after the turn
ONE_BONE_DAMPING = 0.5  # of the sole's miss the pin's height takes at a step (the hips' answer swings past it)
ONE_BONE_OUTWARD = 0.25  # of a swinging leg's reach: how far out to the side it swings where it hangs straight
ONE_BONE_CLEAR_MAX_DEG = 45.0
ONE_BONE_ROCK = 0.002  # metres: how much lower a flat foot's other end must go before it rocks onto it


def _pin_one_bone_legs(tmap: HumanoidMap, soles: Soles, sides: Sequence[str],
                       contacts: Dict[str, List[Tuple[bool, bool]]], poses, roots: array, floor: float,
                       budget: float) -> List[Vec3]:
    """A one-bone leg (Kenney's `leg-left`, hip to foot) cannot bend, so its planted foot is kept where
    it lands by what can move: each contact span pins its sole's back (heel down) or front (toe alone)
    where it lands, the foot's lowest point on the rest floor; the hips move by the least (vertical
    before horizontal, ONE_BONE_HIPS_LEVEL) that lets every planted leg's fixed length reach its pin,
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
    last: Dict[str, Dict[int, Vec3]] = {}  # per side: where the last frame's correction left each end of the sole
    planted = {side: [False] * frames for side in sides}
    moves: List[Optional[Vec3]] = [None] * frames
    turns: Dict[str, List[Optional[Vec3]]] = {side: [None] * frames for side in sides}
    settled: List[List[Tuple[str, Point, Vec3]]] = [[] for _ in range(frames)]  # per frame: the goals the move was solved for
    for frame in range(frames):
        rotations, positions = poses[frame]
        here = []
        for side in sides:
            heel_on, toe_on = contacts[side][frame]
            if not (heel_on or toe_on):
                pins.pop(side, None)
                last.pop(side, None)
                continue
            front = soles.toe_points.get(side) or heels[side]
            pin = pins.get(side)
            point = heels[side] if heel_on else front
            if heel_on and toe_on:  # flat: the foot rocks on whichever end is lower (a rigid leg cannot stay flat)
                back_y, front_y = (posed_point(p, rotations, positions)[1] for p in (heels[side], front))
                held = pin[0] if pin is not None else None
                point = front if front_y < back_y - (ONE_BONE_ROCK if held is not front else -ONE_BONE_ROCK) else heels[side]
            at = posed_point(point, rotations, positions)  # type: ignore[arg-type]
            if pin is None:  # lands: pinned where it is now
                pin = pins[side] = (point, (at[0], at[2]))  # type: ignore[assignment]
            elif pin[0] is not point:  # rocks onto its other end: pinned where the last frame left that end
                was = last[side][id(point)]
                pin = pins[side] = (point, (was[0], was[2]))  # type: ignore[assignment]
            above = at[1] - _lowest(soles.feet[side], rotations, positions)
            here.append((side, point, (pin[1][0], floor + above, pin[1][1])))
            planted[side][frame] = True
        if not here:
            continue
        for _ in range(ONE_BONE_SETTLE):  # the turn pitches the foot: its lowest point goes back onto the floor
            settled[frame] = here
            move = moves[frame] = _hips_reaching(tmap, here, poses[frame])
            again, off = [], 0.0
            for side, point, goal in here:
                hip = add(positions[tmap.bones["thigh_" + side]], move)
                turn = quat_between(subtract(add(posed_point(point, rotations, positions), move), hip), subtract(goal, hip))
                turns[side][frame] = scale(normalize(turn[:3]), quat_angle(turn))
                ends = (heels[side], soles.toe_points.get(side) or heels[side])
                last[side] = {id(end): add(hip, quat_rotate(turn, subtract(add(posed_point(end, rotations, positions), move), hip)))
                              for end in ends}
                low = min(hip[1] + quat_rotate(turn, subtract(add(posed_point(p, rotations, positions), move), hip))[1]
                          for p in soles.feet[side])
                again.append((side, point, add(goal, (0.0, ONE_BONE_DAMPING * (floor - low), 0.0))))
                off = max(off, abs(floor - low))
            if off < 1e-3:
                break
            here = again
    moved = _smooth_hips(tmap, soles, settled, moves, poses, floor, [roots[f * 3 + 1] for f in range(frames)])
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
    for side in sides:
        _clear_the_floor(tmap, soles, side, planted[side], poses, floor)
    return moved


def _clear_the_floor(tmap: HumanoidMap, soles: Soles, side: str, planted: Sequence[bool], poses, floor: float) -> None:
    """A swinging one-bone leg that would reach under the floor (the hips came down for the planted one,
    and a rigid leg passing under them is longer than Kimodo's bent one) swings up about its hip by the
    least that keeps its lowest sole point on the floor, further along its own lean and out to the side
    (ONE_BONE_OUTWARD of its lean where it hangs straight down), eased over BLEND_FRAMES; not in contact."""
    skeleton = tmap.skeleton
    thigh = tmap.bones["thigh_" + side]
    joints = subtree(skeleton, thigh)
    lateral = 1.0 if side == SIDES[0] else -1.0
    needs, axes = [], []
    for frame, (rotations, positions) in enumerate(poses):
        hip = positions[thigh]
        placed = [posed_point(p, rotations, positions) for p in soles.feet[side]]
        low = min(placed, key=lambda q: q[1])
        axes.append(None)
        needs.append(0.0)
        if planted[frame] or low[1] >= floor:
            continue
        outward = normalize(subtract(positions[tmap.bones["thigh_" + SIDES[0]]], positions[tmap.bones["thigh_" + SIDES[1]]]))
        lean = subtract(low, hip)
        reach = length(lean)
        lean = (lean[0] + lateral * outward[0] * ONE_BONE_OUTWARD * reach, 0.0, lean[2] + lateral * outward[2] * ONE_BONE_OUTWARD * reach)
        axis = normalize(cross((0.0, -1.0, 0.0), normalize(lean)))
        if length(axis) < 0.5:
            continue

        def lowest(angle: float) -> float:
            turn = quat_from_axis_angle(axis, angle)
            return min(hip[1] + quat_rotate(turn, subtract(q, hip))[1] for q in placed)

        low_angle, high_angle = 0.0, math.radians(ONE_BONE_CLEAR_MAX_DEG)
        if lowest(high_angle) < floor:
            low_angle = high_angle
        for _ in range(20):
            middle = (low_angle + high_angle) / 2.0
            if lowest(middle) >= floor:
                high_angle = middle
            else:
                low_angle = middle
        needs[frame], axes[frame] = high_angle, axis
    eased = _ease(needs)
    for frame, angle in enumerate(eased):
        if angle <= 0.0 or planted[frame]:
            continue
        axis = axes[frame] or next((axes[u] for u in sorted(range(len(axes)), key=lambda u: abs(u - frame)) if axes[u]), None)
        if axis is None:
            continue
        rotations, positions = poses[frame]
        _turn_about(joints, rotations, positions, positions[thigh], quat_from_axis_angle(axis, angle))


ONE_BONE_SMOOTHING = 100.0  # frames^4: how much the hips' change of speed counts against their move's miss
# With no leg planted, how much the hips' height keeps to the floor pass's: held loosely (1) it swings on
# below it after the last planted frame and the swinging leg, reaching under the floor, is turned up
# (soma_01's left leg 0.9915 against 0.9923).
ONE_BONE_FREE = 100.0
ONE_BONE_HARD = 1e6  # the weight that holds the hips where both planted legs reach their pins
ONE_BONE_GAP = 2  # frames: the longest lift of a foot that lands again where it lifted that is held down
# Of Kimodo's leg reach: how far its heel or toe may be from where it lifted for the lift to be held down
# (g1_02's kneeling toe 0.6 cm, the bridge helping; raw g1_02's walk labels heels lifting 1.3-1.5 cm, held
# down there the kneel that follows was pinned that far off and turned its leg 1 degree more).
ONE_BONE_SLIP = 0.01


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
                 moves: Sequence[Optional[Vec3]], poses, floor: float, heights_before: Sequence[float]) -> List[Vec3]:
    """The hips' move per frame, changing speed least: where both legs are planted it is the one that lets
    both reach their pins (a rigid pair leaves the hips a circle), elsewhere it may differ from the least
    move, so where one foot lands or lifts while the other stays down the hips get there over several
    frames instead of in one; with one leg planted the height is then set again so that leg reaches its
    pin exactly (it turns onto it). The hips' height itself (`heights_before`, the floor pass's, plus the
    move) is then smoothed where no leg is planted: in flight the floor pass follows Kimodo's lowest foot
    joint and the rigid legs' lowest sole, each turning a corner where another joint or leg becomes the
    lowest (soma_01's leap: 19.7 cm a frame per frame, against Kimodo's own 4.6)."""
    weights = [ONE_BONE_HARD if len(here) > 1 else 1.0 for here in settled]
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
    weighted least-norm kind on |goal - hip - move| = length, one equation per planted leg."""
    rotations, positions = pose
    legs = []
    for side, point, goal in wanted:
        hip = positions[tmap.bones["thigh_" + side]]
        legs.append((subtract(goal, hip), length(subtract(posed_point(point, rotations, positions), hip))))
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
        gram = [[dot(a, b) + (ONE_BONE_STIFFNESS if i == j else 0.0) for j, b in enumerate(rows)] for i, a in enumerate(weighted)]
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


def _middle(positions: Sequence[Vec3], joints: Sequence[int]) -> Tuple[float, float]:
    return (sum(positions[j][0] for j in joints) / len(joints), sum(positions[j][2] for j in joints) / len(joints))


def _carried(point: Vec3, centre: Tuple[float, float], turn: float, offset: Tuple[float, float]) -> Tuple[float, float]:
    """How far (x, z) a point moves when the body turns by `turn` about the vertical through `centre`
    and shifts by `offset`."""
    x, z = point[0] - centre[0], point[2] - centre[1]
    c, s = math.cos(turn), math.sin(turn)
    return (x * c + z * s - x + offset[0], -x * s + z * c - z + offset[1])


def _lowest(points: Sequence[Point], rotations, positions, lift: Vec3 = (0.0, 0.0, 0.0)) -> float:
    return min(posed_point(p, rotations, positions)[1] for p in points) + lift[1]


PITCH_STEPS = 6
FOOT_PITCH_MAX_DEG = 90.0


def _pitch_onto_floor(skeleton: Skeleton, tmap: HumanoidMap, soles: Soles, side: str,
                      flags: Sequence[Tuple[bool, bool]], poses, floor: float) -> None:
    """A foot whose heel is up (on its toes, or in the air) and that reaches under the floor is turned
    about its ankle until its lowest sole point is on the floor: a long foot pitched as
    Kimodo's short one is would push its toes through the ground (or lift the body off it).

    One turn, solved in closed form (`_least_pitch`) about one level axis: across the foot, as the
    points under the floor reach out from the ankle, each by how deep it is. Both go to nothing as
    the depth does, with no cut-off and no choice of one point among near-equals, so a pose a hair
    different (Blender's float32 rest) gives a foot a hair different."""
    foot = tmap.bones["foot_" + side]
    chain = subtree(skeleton, foot)
    for frame, (rotations, positions) in enumerate(poses):
        if flags[frame][0] or flags[frame][1]:  # in contact: the lock grounds it (pinned, its sole on the floor)
            continue
        ankle = positions[foot]
        arms = [subtract(posed_point(p, rotations, positions), ankle) for p in soles.feet[side]]
        height = floor - ankle[1]  # of the floor above the ankle
        depths = [height - arm[1] for arm in arms]
        total = sum(d for d in depths if d > 0.0)
        if not total > 0.0:
            continue
        out = (sum(d * arm[0] for d, arm in zip(depths, arms) if d > 0.0), 0.0,
               sum(d * arm[2] for d, arm in zip(depths, arms) if d > 0.0))
        size = math.hypot(out[0], out[2])
        if size < 1e-9 * total:  # the points under sit right below the ankle: no turn lifts them
            continue
        forward = (out[0] / size, 0.0, out[2] / size)
        angle = _least_pitch([(arm[1], dot(arm, forward)) for arm in arms], height, math.radians(FOOT_PITCH_MAX_DEG))
        if angle > 0.0:
            axis = (-forward[2], 0.0, forward[0])  # (0, -1, 0) x forward: turning about it lifts what is ahead
            _turn_about(chain, rotations, positions, ankle, quat_from_axis_angle(axis, angle))


def _least_pitch(points: Sequence[Tuple[float, float]], floor: float, limit: float) -> float:
    """The least turn t in [0, limit] after which every point is at or above `floor`, each point given
    as (up, ahead) from the pivot, its height turned being up cos t + ahead sin t; where none gets them
    all there, the t in that range that brings the lowest of them highest."""
    def lowest(t: float) -> float:
        c, s = math.cos(t), math.sin(t)
        return min(up * c + ahead * s for up, ahead in points)

    slack = 1e-12 * (1.0 + abs(floor))  # rounding: a point put exactly on the floor is on it
    starts = [0.0]
    for up, ahead in points:
        radius = math.hypot(up, ahead)
        if radius > 0.0 and -1.0 < floor / radius <= 1.0:
            # Heights above the floor form one arc of turns, centred where the point is highest.
            start = (math.atan2(ahead, up) - math.acos(floor / radius)) % (2.0 * math.pi)
            if start <= limit:
                starts.append(start)
    for t in sorted(starts):
        if lowest(t) >= floor - slack:
            return t
    # No turn clears them all: the best is at an end, where two points cross, or at a point's highest.
    candidates = [0.0, limit]
    for i, (up, ahead) in enumerate(points):
        candidates.append(math.atan2(ahead, up))
        for up2, ahead2 in points[i + 1:]:
            crossing = math.atan2(up - up2, ahead2 - ahead)
            candidates += [crossing, crossing + math.pi]
    inside = sorted(t % (2.0 * math.pi) for t in candidates)
    return max((t for t in inside if t <= limit), key=lowest)


HOLD_CANDIDATES = 8  # rotations tried per flat span (its frames' own, evenly spread, and their mean)
HOLD_SAMPLES = 16  # frames per flat span the candidates are judged on


def _hold_flat_feet(skeleton: Skeleton, tmap: HumanoidMap, soles: Soles, side: str, flags: Sequence[Tuple[bool, bool]],
                    poses) -> None:
    """While heel and toe are both in contact the foot is flat on the floor: its world rotation is held
    through each such span (turned about the ankle), eased from and back to the animation's over
    BLEND_FRAMES before and after. The rotation held is the span's first unless that turns the leg too
    much (`_held`): a big sole held as the animation has it on the span's first frame, while Kimodo's
    small foot still rolls down onto the floor, lifts the ankle by the roll all span long."""
    foot = tmap.bones["foot_" + side]
    chain = subtree(skeleton, foot)
    frames = len(poses)
    deltas: List[Optional[Quat]] = [None] * frames
    start = None
    for frame in range(frames + 1):
        flat = frame < frames and flags[frame][0] and flags[frame][1]
        if flat and start is None:
            start = frame
        if flat or start is None:
            continue
        held = _held(tmap, side, soles.feet[side], poses[start:frame])
        for f in range(start, frame):
            deltas[f] = quat_normalize(quat_multiply(held, quat_conjugate(poses[f][0][foot])))
        start = None
    for frame, delta in enumerate(_eased_turns(deltas, [d is None for d in deltas])):
        if delta is not None:
            rotations, positions = poses[frame]
            _turn_about(chain, rotations, positions, positions[foot], delta)


def _eased_turns(turns: Sequence[Optional[Quat]], free: Sequence[bool]) -> List[Optional[Quat]]:
    """The frames' turns, the `free` frames without one given the nearest's eased in before it and out
    after it over BLEND_FRAMES (between two, the two eased turns weighed by their weights)."""
    frames = len(turns)
    out = list(turns)
    given = [t is not None for t in turns]
    for frame in range(frames):
        if turns[frame] is not None or not free[frame]:
            continue
        near = [(w, turns[u]) for w, u in _blend_neighbours(frame, given)]
        if not near:
            continue
        turn = quat_slerp(IDENTITY, near[0][1], near[0][0])  # type: ignore[arg-type]
        if len(near) == 2:
            turn = quat_slerp(turn, quat_slerp(IDENTITY, near[1][1], near[1][0]), near[1][0] / (near[0][0] + near[1][0]))  # type: ignore[arg-type]
        out[frame] = turn
    return out


def _held(tmap: HumanoidMap, side: str, sole: Sequence[Point], span) -> Quat:
    """The foot's world rotation to hold over a flat span (its poses): the span's first (the foot as it
    lands), unless the ankle moving for that sole to stay on the floor would take more than
    LOCK_COSINE_BUDGET off the leg's cosines (thigh and shin, over HOLD_SAMPLES of the span's frames);
    then of the span's own rotations (HOLD_CANDIDATES of them, evenly spread, and their mean) the one that
    turns the leg least (a turn about the vertical moves no ankle: the heading is the animation's)."""
    foot = tmap.bones["foot_" + side]
    count = len(span)
    picks = sorted({round(k * (count - 1) / max(1, HOLD_CANDIDATES - 2)) for k in range(HOLD_CANDIDATES - 1)})
    candidates = [span[k][0][foot] for k in picks] + [_mean_rotation([rotations[foot] for rotations, _ in span])]
    samples = []
    for k in sorted({round(k * (count - 1) / max(1, HOLD_SAMPLES - 1)) for k in range(HOLD_SAMPLES)}):
        rotations, positions = span[k]
        ankle, inverse = positions[foot], quat_conjugate(rotations[foot])
        local = [quat_rotate(inverse, subtract(posed_point(p, rotations, positions), ankle)) for p in sole]
        samples.append((positions, local, min(quat_rotate(rotations[foot], q)[1] for q in local)))

    def turned(held: Quat) -> float:
        total = 0.0
        for positions, local, low in samples:
            rise = low - min(quat_rotate(held, q)[1] for q in local)
            ankle = positions[foot]
            total += sum(1.0 - c for c in _leg_turns(tmap, side, positions, (ankle[0], ankle[1] + rise, ankle[2])))
        return total

    first = span[0][0][foot]
    if turned(first) <= LOCK_COSINE_BUDGET * len(samples):
        return first
    return min(candidates, key=turned)


def _mean_rotation(rotations: Sequence[Quat]) -> Quat:
    """The rotation nearest to all of `rotations` (their sum, signs aligned with the first, normalised)."""
    first = rotations[0]
    total = [0.0, 0.0, 0.0, 0.0]
    for q in rotations:
        sign = 1.0 if sum(a * b for a, b in zip(q, first)) >= 0.0 else -1.0
        for i in range(4):
            total[i] += sign * q[i]
    return quat_normalize(tuple(total))  # type: ignore[arg-type]


def _foot_goals(tmap: HumanoidMap, soles: Soles, side: str, flags: Sequence[Tuple[bool, bool]], poses,
                floor: float, leash: float, source_track: Sequence[Vec3]) -> List[Optional[Vec3]]:
    """Per frame, where the foot joint must be (None: where the animation has it). A contact span pins
    the heel (the foot joint) or the toe point where it lands; when the heel lifts the toe stays, when it
    comes down it stays where the toe put it; the foot's lowest sole point is on the floor throughout.
    On its toe alone the foot (in `poses`) rolls on the pinned toe, turned about the ankle towards where
    the leg has the ankle (at most TOE_ROLL_MAX_DEG; eased out into the air over BLEND_FRAMES).
    Where Kimodo's own planted foot drifts on the ground (`source_track`: its foot joint, in the
    character's frame and scale) more than `leash` from where it landed (turning on the spot), the pin
    is dragged by the drift beyond it: a long drift bent into the legs would fold them."""
    foot = tmap.bones["foot_" + side]
    toe_point = soles.toe_points.get(side)
    frames = len(poses)
    offsets: List[Optional[Vec3]] = [None] * frames  # ankle goal minus animated ankle, in contact frames
    rolls: List[Optional[Quat]] = [None] * frames  # the foot's turn about the ankle, on its toe alone
    chain = subtree(tmap.skeleton, foot)
    pin_heel: Optional[Vec3] = None
    pin_toe: Optional[Vec3] = None
    lifted: Optional[Tuple[Vec3, int]] = None  # the heel's pin when it last lifted off its toe, and the frame
    anchor: Vec3 = (0.0, 0.0, 0.0)
    dragged: Vec3 = (0.0, 0.0, 0.0)
    for frame in range(frames):
        rotations, positions = poses[frame]
        heel_on, toe_on = flags[frame]
        if toe_point is None:
            heel_on, toe_on = heel_on or toe_on, False
        if not (heel_on or toe_on):
            pin_heel = pin_toe = lifted = None
            continue
        ankle = positions[foot]
        toe = posed_point(toe_point, rotations, positions) if toe_point is not None else ankle
        if pin_heel is None and pin_toe is None:
            # Where it lands, on the floor: the foot's lowest sole point brought to the rest floor.
            start: Vec3 = (0.0, floor - _lowest(soles.feet[side], rotations, positions), 0.0)
            anchor, dragged = source_track[frame], (0.0, 0.0, 0.0)
        else:
            start = offsets[frame - 1] or (0.0, 0.0, 0.0)
        if heel_on:
            if pin_heel is None:
                # Where it lands; or down from its toe, where the pinned toe keeps it (the foot turns about
                # the toe, which stays: a sole's front far from the ankle swung 5 cm as the foot came flat);
                # a toe-less foot back where it stood when it was up on its front only a moment (a one-frame
                # toe-only label in a stance: re-placed about that front, the Blender robot's heel moved 4 cm
                # and stayed there, bending its leg; kept to toe-less feet, whose front is wherever their mesh
                # is: with toe bones, as before, the mannequin's outputs unchanged).
                if pin_toe is None:
                    pin_heel = add(ankle, start)
                elif lifted is not None and frame - lifted[1] <= BLEND_FRAMES and not tmap.has("toe_" + side):
                    pin_heel = lifted[0]
                else:
                    pin_heel = add(pin_toe, subtract(ankle, toe))
            goal = pin_heel
        else:
            if pin_toe is None:
                pin_toe = add(toe, start)
            # The foot rolls on its pinned toe: turned about the ankle so that the ankle stays as near
            # where the leg has it as the foot's length allows (grounding a big sole as Kimodo's small
            # foot pitches on its toes took the ankle far down, and the hips with it).
            wanted = quat_between(subtract(toe, ankle), subtract(pin_toe, ankle))
            if tmap.has("toe_" + side):
                rolls[frame] = _at_most(wanted, TOE_ROLL_MAX_DEG)
            else:  # the whole foot rolls where a toe would bend, standing on its front
                rolls[frame] = _standing_on_front(chain, rotations, positions, _at_most(wanted, FRONT_ROLL_MAX_DEG),
                                                  toe_point, soles.feet[side])  # type: ignore[arg-type]
            _turn_about(chain, rotations, positions, ankle, rolls[frame])  # type: ignore[arg-type]
            toe = posed_point(toe_point, rotations, positions)  # type: ignore[arg-type]
            goal = add(pin_toe, subtract(ankle, toe))
        # Horizontally where the pins say; vertically with the sole on the floor in every contact frame
        # (a foot that rolls or pitches on the ground keeps touching it, never floats off it).
        grounded = ankle[1] + floor - _lowest(soles.feet[side], rotations, positions)
        drift = (source_track[frame][0] - anchor[0], 0.0, source_track[frame][2] - anchor[2])
        away = math.hypot(drift[0], drift[2])
        excess = scale(drift, 1.0 - leash / away) if away > leash else (0.0, 0.0, 0.0)
        drag = subtract(excess, dragged)
        dragged = excess
        # And never more than `leash` from where the legs put the foot (two planted feet Kimodo slides
        # apart, which the hips cannot both follow).
        held = add(goal, drag)
        off = math.hypot(held[0] - ankle[0], held[2] - ankle[2])
        if off > leash:
            pull = 1.0 - leash / off
            drag = add(drag, (pull * (ankle[0] - held[0]), 0.0, pull * (ankle[2] - held[2])))
        if drag != (0.0, 0.0, 0.0):
            goal = add(goal, drag)
            if heel_on:
                pin_heel = add(pin_heel, drag)  # type: ignore[arg-type]
            else:
                pin_toe = add(pin_toe, drag)  # type: ignore[arg-type]
        offset = (goal[0] - ankle[0], grounded - ankle[1], goal[2] - ankle[2])
        offsets[frame] = offset
        if heel_on and toe_on:
            pin_toe = add(toe, offset)
        elif toe_on:
            if pin_heel is not None:
                lifted = (pin_heel, frame)
            pin_heel = None
    for frame, roll in enumerate(_eased_turns(rolls, [o is None for o in offsets])):
        if roll is not None and offsets[frame] is None:  # eased out into the air (and in from it)
            rotations, positions = poses[frame]
            _turn_about(chain, rotations, positions, positions[foot], roll)
    blended = _blend_offsets(offsets, [o is not None for o in offsets])
    return [None if o is None else add(poses[f][1][foot], o) for f, o in enumerate(blended)]


TOE_ROLL_MAX_DEG = 30.0  # the most a foot on its toe alone rolls from the animation's rotation
# A foot with no toe bone rolls as one piece on its sole's front, where Kimodo bends its toe (in a kneel,
# the toes tucked under, 60-90 deg): it may roll further, never off its front (`_standing_on_front`). With
# TOE_ROLL_MAX_DEG (30) the mannequin-shaped foot whose mesh hangs 25 cm behind its ankle kneels (g1_02)
# with its toe 10 cm per 1.7 m up; with 90, on the floor.
FRONT_ROLL_MAX_DEG = 90.0
FRONT_ROLL_STEPS = 24  # bisection steps: 90 deg / 2**24, so float noise between two readers of one rig turns no foot visibly


def _standing_on_front(chain: Sequence[int], rotations: Sequence[Quat], positions: Sequence[Vec3], roll: Quat,
                       front: Point, sole: Sequence[Point]) -> Quat:
    """As far along `roll` (about the foot's joint, the chain's first) as keeps a toe-less foot's front,
    its toe point, no higher over the foot's lowest point than it is unrolled: a foot on its toe alone
    stands on that toe. Pointed at its pin, a foot whose mesh lies behind its ankle would turn heel-down,
    come down on its heel's back and lift the toe off the floor (4.6 cm in a frame)."""
    ankle = positions[chain[0]]

    def gap(fraction: float) -> float:
        turned_rotations, turned_positions = list(rotations), list(positions)
        _turn_about(chain, turned_rotations, turned_positions, ankle, quat_slerp(IDENTITY, roll, fraction))
        return posed_point(front, turned_rotations, turned_positions)[1] - _lowest(sole, turned_rotations, turned_positions)

    allowed = gap(0.0) + 1e-6
    if gap(1.0) <= allowed:
        return roll
    low, high = 0.0, 1.0
    for _ in range(FRONT_ROLL_STEPS):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if gap(middle) <= allowed else (low, middle)
    return quat_slerp(IDENTITY, roll, low)


def _at_most(turn: Quat, degrees: float) -> Quat:
    """`turn`, or as far along it as `degrees`."""
    angle = quat_angle(turn)
    return turn if angle <= math.radians(degrees) else quat_slerp(IDENTITY, turn, math.radians(degrees) / angle)


def _reach_goals(skeleton: Skeleton, tmap: HumanoidMap, soles: Soles, goals: Dict[str, List[Optional[Vec3]]],
                 poses, roots: array, floor: float, budget: float, knee_floors: Mapping[str, Sequence[float]]) -> None:
    """Bring each foot to its goal with two-bone IK, turning the legs as little as the goals allow:
    where both feet have goals at different heights (one on its heel, the other on its toes or kneeling
    behind it) the hips first go up or down by what turns the legs least (`_shared_lift`). Where the
    lock would still take more than `budget` off a thigh's or shin's mean cosine over the
    clip, the hips first drop the side of the foot that must come down most (`_drop_hip`), then the
    frames that still turn them most have their goals' heights let go towards where the legs have the
    feet (`_loosened`: there a planted sole floats, still pinned horizontally). Where a leg cannot
    reach its goal the hips come down, where it cannot fold so far they go up; the hips' changes and the
    letting go are eased over BLEND_FRAMES either side; no foot ends under the floor."""
    frames = len(poses)
    sides = [side for side in SIDES if leg_chain(tmap, side) is not None]

    def let_go_amounts() -> List[float]:
        settled = [_settle(tmap, soles, sides, goals, poses[frame], frame, floor, 0.0) for frame in range(frames)]
        bar = _turn_bar([turns for _, turns in settled], budget)
        return [_let_go(tmap, soles, sides, goals, poses[frame], frame, floor, bar) if min(settled[frame][1], default=1.0) < bar else 0.0
                for frame in range(frames)]

    amounts = let_go_amounts()
    if _drop_hip(skeleton, tmap, sides, goals, poses, roots, amounts, knee_floors):
        amounts = let_go_amounts()  # the hips rolled: what the lock must still let go
    for frame, amount in enumerate(centred_average(_ease(amounts), BLEND_FRAMES)):
        if amount > 0.0:
            for side in sides:
                goal = goals[side][frame]
                if goal is not None:
                    goals[side][frame] = _loosened(goal, poses[frame][1][tmap.bones["foot_" + side]], amount)
    lifts = centred_average([_shared_lift(tmap, soles, sides, {side: goals[side][frame] for side in sides}, poses[frame], floor)
                             for frame in range(frames)], BLEND_FRAMES)
    reach = [_hips_reach(tmap, sides, {side: goals[side][frame] for side in sides}, poses[frame][1], lifts[frame])
             for frame in range(frames)]
    downs, ups = _ease([down for down, _ in reach]), _ease([up for _, up in reach])
    eased = [lift + b - a for lift, a, b in zip(lifts, downs, ups)]  # the hips' change: negative comes down
    for frame in range(frames):
        rotations, positions = poses[frame]
        if eased[frame] != 0.0:
            roots[frame * 3 + 1] += eased[frame]
            positions[:] = [(p[0], p[1] + eased[frame], p[2]) for p in positions]
        for side in SIDES:
            chain = leg_chain(tmap, side)
            if chain is None:  # a one-bone leg: the floor pass above has it on the floor
                continue
            thigh, calf, foot = chain
            goal = goals[side][frame] or positions[foot]
            low = _lowest(soles.feet[side], rotations, positions, subtract(goal, positions[foot]))
            if low < floor:  # nothing under the floor, locked or not
                goal = add(goal, (0.0, floor - low, 0.0))
            if length(subtract(goal, positions[foot])) < 1e-7:
                continue
            _solve_chain(skeleton, rotations, positions, thigh, calf, foot, goal, _lateral(tmap, side, positions),
                         subtree(skeleton, calf), subtree(skeleton, foot))


def _leg_length(hmap: HumanoidMap, side: str) -> float:
    """Thigh and shin, hip to ankle, at rest."""
    hip, knee, ankle = leg_chain(hmap, side)  # type: ignore[misc]
    positions = rest_pose(hmap.skeleton)[1]
    return length(subtract(positions[knee], positions[hip])) + length(subtract(positions[ankle], positions[knee]))


HIP_DROP_MAX_DEG = 35.0  # the most the hips roll to bring one leg's hip down (a kneel)


def _drop_hip(skeleton: Skeleton, tmap: HumanoidMap, sides: Sequence[str], goals: Dict[str, List[Optional[Vec3]]],
              poses, roots: array, amounts: Sequence[float], knee_floors: Mapping[str, Sequence[float]]) -> bool:
    """On the frames whose goals the lock would let go (`amounts`), the hips roll about the other leg's
    hip so that the hip of the leg whose foot must come down most drops by as much, at most
    HIP_DROP_MAX_DEG and never taking its knee lower than `knee_floors` (as deep as Kimodo's own); the
    spine and both thighs keep their world rotations, so the legs and the back stay as Kimodo has them
    and that foot comes down with its hip. A kneel on a character whose shin is long for its thigh: the
    kneeling knee is on the floor and the foot behind it points straight down, still above the floor
    (the Quaternius female's toe floated 13 cm per 1.7 m); one hip lower than the other grounds it.
    Eased (and averaged) over BLEND_FRAMES like the letting go; True if any frame rolled."""
    hips = tmap.bones["hips"]
    if len(sides) < 2 or hips != 0 or not any(amount > 0.0 for amount in amounts):
        return False
    frames = len(poses)
    thighs = {side: tmap.bones["thigh_" + side] for side in sides}
    limit = math.radians(HIP_DROP_MAX_DEG)
    raw = [0.0] * frames
    lowered: List[Optional[str]] = [None] * frames
    for frame in range(frames):
        if amounts[frame] <= 0.0:
            continue
        positions = poses[frame][1]
        gaps = {side: positions[tmap.bones["foot_" + side]][1] - goals[side][frame][1]  # type: ignore[index]
                for side in sides if goals[side][frame] is not None and side in knee_floors}
        if not gaps:
            continue
        side = max(gaps, key=lambda s: gaps[s])
        knee = positions[leg_chain(tmap, side)[1]]  # type: ignore[index]
        drop = min(gaps[side], knee[1] - knee_floors[side][frame])
        width = length(subtract(positions[thighs["l"]], positions[thighs["r"]]))
        if drop > 0.0 and width > 0.0:
            raw[frame] = min(limit, math.asin(min(1.0, drop / width)))
            lowered[frame] = side
    rolling = [u for u in range(frames) if lowered[u] is not None]
    if not rolling:
        return False
    # What keeps its world rotation: the thighs, and whatever else hangs off the hips (the spine).
    keep = [j for j in range(skeleton.joint_count) if skeleton.parents[j] == hips
            and not any(t in subtree(skeleton, j) for t in thighs.values())] + list(thighs.values())
    for frame, angle in enumerate(centred_average(_ease(raw), BLEND_FRAMES)):
        if angle <= 0.0:
            continue
        side = lowered[min(rolling, key=lambda u: abs(u - frame))]  # eased in or out: the nearest's side
        rotations, positions = poses[frame]
        room = positions[leg_chain(tmap, side)[1]][1] - knee_floors[side][frame]  # type: ignore[index]
        width = length(subtract(positions[thighs["l"]], positions[thighs["r"]]))
        angle = min(angle, math.asin(max(0.0, min(1.0, room / width))))  # the easing never takes a knee deeper
        if angle <= 0.0:
            continue
        other = thighs["r" if side == "l" else "l"]
        pivot, line = positions[other], subtract(positions[thighs[side]], positions[other])  # type: ignore[index]
        turn = quat_from_axis_angle(normalize(cross((0.0, 1.0, 0.0), line)), angle)  # brings `line`'s end down
        before = positions[hips]
        _turn_about(subtree(skeleton, hips), rotations, positions, pivot, turn)
        for k in range(3):
            roots[frame * 3 + k] += positions[hips][k] - before[k]
        back = quat_conjugate(turn)
        for joint in keep:
            _turn_about(subtree(skeleton, joint), rotations, positions, positions[joint], back)
    return True


def _lateral(tmap: HumanoidMap, side: str, positions: Sequence[Vec3]) -> Vec3:
    """The leg's plane normal where it is straight: the hip line (the knee bends forward)."""
    other = tmap.bones["thigh_" + ("r" if side == "l" else "l")]
    return scale(subtract(positions[tmap.bones["thigh_" + side]], positions[other]), 1.0 if side == "l" else -1.0)


LOCK_COSINE_BUDGET = 0.01  # the most the lock takes off a thigh's or a shin's mean cosine over a clip
# Per Kimodo skeleton, the most the lock's reach may take (`_reach_budget`): G1's legs are judged at 0.97
# (its hips, knees and feet are not a human's), SOMA's at 0.99, so on a G1 clip the lock may spend 0.02
# and still keep 0.01 over that bar: a kneeling toe then floats 13 cm per 1.7 m on the long-shinned
# Quaternius female instead of 17 (measured; every segment stays >= 0.98 on the shared rigs). 0.021 since
# the estimate counts the other leg's fold as the hips come down (`_turns_at`): a kneel's front thigh
# cost 0.0007 more than it was estimated at, and at 0.02 the now honest estimate let the kneeling toe of
# the mannequin with its feet's mesh behind the ankles float 8.6 cm instead of 7.9 (thigh 0.9784 -> 0.9793).
REACH_BUDGETS = {"g1skel34": 0.021}
LIFT_GRID = 12
LIFT_STEPS = 8
LET_GO_STEPS = 10


def _hips_reach(tmap: HumanoidMap, sides: Sequence[str], goals: Mapping[str, Optional[Vec3]], positions: Sequence[Vec3],
                lift: float) -> Tuple[float, float]:
    """How far the hips, risen by `lift`, must still come down for every locked leg to reach its goal,
    and how far go up for none to fold further than it can (both >= 0)."""
    down = up = 0.0
    for side in sides:
        goal = goals[side]
        chain = leg_chain(tmap, side)
        if goal is None or chain is None:
            continue
        hip, knee, ankle = (positions[j] for j in chain)
        upper, lower = length(subtract(knee, hip)), length(subtract(ankle, knee))
        # No straighter than REACH_LIMIT, or than the animation has it (a leg standing straight
        # bent by a few millimetres of hips turns its thigh by degrees).
        longest = max((upper + lower) * REACH_LIMIT, min(length(subtract(ankle, hip)), (upper + lower) * (1.0 - 1e-6)))
        shortest = abs(upper - lower) + (upper + lower) * (1.0 - REACH_LIMIT)
        dx, dy, dz = subtract(goal, hip)
        dy -= lift
        horizontal = dx * dx + dz * dz
        if horizontal + dy * dy > longest * longest:
            # Lower the hip so that |goal - hip| = longest (the goal is below the hip).
            down = max(down, max(0.0, -dy - math.sqrt(max(0.0, longest * longest - horizontal))))
        elif horizontal + dy * dy < shortest * shortest and dy < 0.0:
            # A leg that cannot fold so far (a shin longer than its thigh, deep in a crouch): raise it.
            up = max(up, math.sqrt(shortest * shortest - horizontal) + dy)
    return down, up


def _leg_turns(tmap: HumanoidMap, side: str, positions: Sequence[Vec3], goal: Vec3) -> Tuple[float, float]:
    """Cosines between the thigh's and the shin's direction now and after the IK brings the foot to `goal`."""
    hip, knee, ankle = (positions[j] for j in leg_chain(tmap, side))  # type: ignore[union-attr]
    swing, bend = two_bone(hip, knee, ankle, goal, _lateral(tmap, side, positions))
    upper, lower = subtract(knee, hip), subtract(ankle, knee)
    return tuple(dot(before, after) / max(1e-12, length(before) * length(after))  # type: ignore[return-value]
                 for before, after in ((upper, quat_rotate(swing, upper)), (lower, quat_rotate(quat_multiply(swing, bend), lower))))


def _turns_at(tmap: HumanoidMap, sides: Sequence[str], goals: Mapping[str, Optional[Vec3]], positions: Sequence[Vec3],
              lift: float, *, reached: bool = False) -> List[float]:
    """Per locked leg, thigh and shin: their cosines after the hips rise by `lift` and the IK (1: no goal).
    `reached`: the hips then also come down or go up as far as a leg that cannot reach its goal (or fold
    so far) takes them (`_hips_reach`, as `_reach_goals` moves them). Without it a goal out of one leg's
    reach costs only that leg straightening, not the other's folding as the hips come down for it
    (RobotExpressive on soma_04: its wide hips rolled as Kimodo's leave the planted left foot 4% of the
    leg under its reach; the right thigh lost 0.011 of its mean cosine, estimated at 0.002). Not in
    `_shared_lift`'s search: every rise above the reach would cost the same there, and which of them
    it picked moved with the last bits of the input (Blender's armature against the file's)."""
    if reached:
        down, up = _hips_reach(tmap, sides, goals, positions, lift)
        lift += up - down
    lifted = [(p[0], p[1] + lift, p[2]) for p in positions] if lift else positions
    turns: List[float] = []
    for side in sides:
        goal = goals[side]
        turns.extend(_leg_turns(tmap, side, lifted, goal) if goal is not None else (1.0, 1.0))
    return turns


def _shared_lift(tmap: HumanoidMap, soles: Soles, sides: Sequence[str], goals: Mapping[str, Optional[Vec3]], pose,
               floor: float) -> float:
    """Where both feet have goals (planted, or easing in or out), the hips' rise (negative: down) that
    turns the two legs least on their way to them (the sum over thighs and shins of 1 - cosine, as the
    judges add it up), searched between the rises that leave one leg or the other nothing to reach
    vertically; never so far down that a hand goes under the floor. A foot kneeling behind on its toes,
    whose sole the character's proportions put above the floor, comes down with the hips as much as by
    its own leg."""
    if len(sides) < 2 or any(goals[side] is None for side in sides):
        return 0.0
    rotations, positions = pose
    needs = [goals[side][1] - positions[tmap.bones["foot_" + side]][1] for side in sides]  # type: ignore[index]
    hands = [_lowest(soles.hands[side], rotations, positions) - floor for side in SIDES if soles.hands.get(side)]
    low, high = max(min(needs + [0.0]), -max(0.0, min(hands or [math.inf]))), max(needs + [0.0])
    if high - low < 1e-6:
        return 0.0

    def turned(lift: float) -> float:
        return sum(1.0 - c for c in _turns_at(tmap, sides, goals, positions, lift))

    grid = [low + (high - low) * k / (LIFT_GRID - 1) for k in range(LIFT_GRID)]
    costs = [turned(lift) for lift in grid]
    best = min(range(LIFT_GRID), key=lambda k: (costs[k], abs(grid[k])))
    a, b = grid[max(0, best - 1)], grid[min(LIFT_GRID - 1, best + 1)]
    golden = (math.sqrt(5.0) - 1.0) / 2.0  # golden-section search between the best's grid neighbours
    c, d = b - golden * (b - a), a + golden * (b - a)
    fc, fd = turned(c), turned(d)
    for _ in range(LIFT_STEPS):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - golden * (b - a)
            fc = turned(c)
        else:
            a, c, fc = c, d, fd
            d = a + golden * (b - a)
            fd = turned(d)
    refined = (a + b) / 2.0
    return refined if turned(refined) < costs[best] else grid[best]


def _settle(tmap: HumanoidMap, soles: Soles, sides: Sequence[str], goals: Dict[str, List[Optional[Vec3]]], pose,
            frame: int, floor: float, amount: float) -> Tuple[float, List[float]]:
    """The frame's goals let go by `amount` (`_loosened`), the hips' best rise for them, and the legs'
    cosines (thigh and shin per locked leg) there, the hips' reach included (`_turns_at`)."""
    positions = pose[1]
    loosened = {side: None if goals[side][frame] is None else
                _loosened(goals[side][frame], positions[tmap.bones["foot_" + side]], amount)  # type: ignore[arg-type]
                for side in sides}
    lift = _shared_lift(tmap, soles, sides, loosened, pose, floor)
    return lift, _turns_at(tmap, sides, loosened, positions, lift, reached=True)


def _loosened(goal: Vec3, ankle: Vec3, amount: float) -> Vec3:
    """The goal's height let go by `amount` (0..1) towards the ankle's where the leg has it; it stays
    pinned horizontally."""
    return (goal[0], goal[1] + amount * (ankle[1] - goal[1]), goal[2])


def _reach_budget(source_skeleton: str) -> float:
    """The most the lock's reach takes off a thigh's or shin's mean cosine over a clip of that skeleton."""
    return REACH_BUDGETS.get(source_skeleton, LOCK_COSINE_BUDGET)


def _turn_bar(turns: Sequence[Sequence[float]], budget: float) -> float:
    """The cosine no frame's thigh or shin may turn below so that the lock takes no more than `budget`
    off any one's mean cosine over the clip (-1: the lock as it is takes less)."""
    frames = max(1, len(turns))
    segments = len(turns[0]) if turns else 0

    def cost(bar: float) -> float:
        return max([sum(1.0 - max(t[k], bar) for t in turns) / frames for k in range(segments)] or [0.0])

    if cost(-1.0) <= budget:
        return -1.0
    low, high = -1.0, 1.0
    for _ in range(30):
        middle = (low + high) / 2.0
        if cost(middle) <= budget:
            high = middle
        else:
            low = middle
    return high


def _let_go(tmap: HumanoidMap, soles: Soles, sides: Sequence[str], goals: Dict[str, List[Optional[Vec3]]], pose,
            frame: int, floor: float, bar: float) -> float:
    """How far (`_loosened`'s amount, 0..1) the frame's goals must be let go for no thigh or shin to turn
    below the cosine `bar` (1 where even letting go wholly does not get there)."""
    def worst(amount: float) -> float:
        return min(_settle(tmap, soles, sides, goals, pose, frame, floor, amount)[1], default=1.0)

    if worst(1.0) < bar:
        return 1.0
    low, high = 0.0, 1.0
    for _ in range(LET_GO_STEPS):
        middle = (low + high) / 2.0
        if worst(middle) >= bar:
            high = middle
        else:
            low = middle
    return high


def _ease(needs: Sequence[float], over: int = BLEND_FRAMES) -> List[float]:
    """Each frame's need, eased in and out over `over` frames either side (the largest that reaches it)."""
    frames = len(needs)
    eased = []
    for t in range(frames):
        best = 0.0
        for u in range(max(0, t - over), min(frames, t + over + 1)):
            x = 1.0 - abs(t - u) / float(over + 1)
            best = max(best, needs[u] * x * x * (3.0 - 2.0 * x))
        eased.append(best)
    return eased


def _blend_neighbours(frame: int, held: Sequence[bool]) -> List[Tuple[float, int]]:
    """(smoothstep weight, frame) of the nearest `held` frame within BLEND_FRAMES before `frame`, then
    after it: what a frame next to a held span eases from."""
    near = []
    for direction in (-1, 1):
        for step in range(1, BLEND_FRAMES + 1):
            u = frame + direction * step
            if 0 <= u < len(held) and held[u]:
                x = 1.0 - step / float(BLEND_FRAMES + 1)
                near.append((x * x * (3.0 - 2.0 * x), u))
                break
    return near


def _blend_offsets(offsets: Sequence[Optional[Vec3]], in_contact: Sequence[bool]) -> List[Optional[Vec3]]:
    """Contact frames keep their offset; the BLEND_FRAMES either side of a span ease from it to none."""
    count = len(offsets)
    out: List[Optional[Vec3]] = list(offsets)
    for t in range(count):
        if in_contact[t]:
            continue
        total = (0.0, 0.0, 0.0)
        weight_sum = 0.0
        for w, u in _blend_neighbours(t, in_contact):
            total = add(total, scale(offsets[u], w))  # type: ignore[arg-type]
            weight_sum += w
        if weight_sum > 0.0:
            out[t] = scale(total, 1.0 / max(1.0, weight_sum))
    return out


TORSO_LIFT_MAX_DEG = 80.0
TORSO_GRID = 32
TORSO_AXES = 36


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


WRIST_PITCH_MAX_DEG = 60.0


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


ARM_SWING_MAX_DEG = 90.0
ARM_EASE_FRAMES = 2
ARM_SWING_OUTWARD = 0.25  # of the arm's length: how far out to the side a hanging arm swings, against its own lean


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
    for (rotations, positions), axis, angle in zip(poses, axes, _ease(needs, ARM_EASE_FRAMES)):
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


def _turn_rigidly(joints: List[int], rotations: List[Quat], positions: List[Vec3], axis: Vec3, angle: float) -> None:
    """Turn `joints` (a joint and everything below it, the first the pivot) as one piece about `axis`."""
    _turn_about(joints, rotations, positions, positions[joints[0]], quat_from_axis_angle(axis, angle))


def _turn_about(joints: Sequence[int], rotations: List[Quat], positions: List[Vec3], pivot: Vec3, turn: Quat) -> None:
    """Turn `joints` as one piece by the world rotation `turn` about the point `pivot`."""
    for j in joints:
        rotations[j] = quat_normalize(quat_multiply(turn, rotations[j]))
        positions[j] = add(pivot, quat_rotate(turn, subtract(positions[j], pivot)))
