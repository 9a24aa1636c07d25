"""The humanoid parts of a skeleton from its shape at rest, with no word of its bone names.

Extremities are the leaves that carry the mesh (a leaf the rig reading added as a skinned bone's tip, or a
skinned leaf; any leaf when the file has no mesh): the feet are the two lowest that split above the knees,
farthest from the root along the bones; the head is the highest. The hips are where the legs and the trunk
meet (their common ancestor; where that stands at the floor, a root or an armature node carrying the legs
beside the body, the body joint above it). The arms are the chains from the trunk to the most lateral
extremities on each side. Along each chain the parts are placed by where their joints lie: on a leg by
height (the hip at the top, the ankle near the floor, the knee halfway), on an arm by length (the elbow
where upper arm and forearm take their usual shares, the wrist where the fingers fan out). Twist, roll,
IK and helper bones are never on these chains: a twist bone beside the chain leads to no extremity, one
inside it sits between the places a part takes, and IK bones carry no mesh. Left is up x forward, forward
from the feet (ankle to toe).
"""
from __future__ import annotations

import math
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

from ..errors import KimodoError
from ..model import Skeleton
from ..ops.fk import rest_positions
from ..rotations import Vec3
from .mapping import FINGER_JOINTS, FINGERS, finger_part

# The shape pass's constants: (value, unit, why). Heights are fractions of the character's height (floor to
# its highest joint) unless stated.
SHAPE_CONSTANTS = {
    "foot_height": (0.15, "of the height", "a foot's extremity (toe, heel, sole tip) lies this low; knees do not"),
    "legs_split": (0.30, "of the height", "two feet's chains part above this (at the hips); a foot's toes part below"),
    "hips_at_floor": (0.20, "of the height", "a common ancestor this low is a root or an armature node, not hips"),
    "ankle": (0.20, "of the hips' height above the floor", "an ankle is below it, a mid-shin twist bone is not"),
    "hip_joint": (0.85, "of the hips-to-ankle drop", "the thigh joint lies at the leg's top; a thigh twist lower"),
    "upright": (2.0, "rise per run", "a standing humanoid's trunk is within 27 degrees of vertical"),
    "arm_reach": (0.10, "of the height", "a hand's extremity lies at least this far to its side of the hips"),
    "forearm_share": (0.565, "of shoulder to wrist", "upper arm : forearm is about 0.188 : 0.145 of the height"),
    "shoulder_width": (0.05, "of the height", "a shoulder joint lies at least this far from the midline; a clavicle starts nearer"),
}


def _ancestors(skeleton: Skeleton, joint: int) -> List[int]:
    chain = [joint]
    while skeleton.parents[chain[-1]] >= 0:
        chain.append(skeleton.parents[chain[-1]])
    return chain


def _common(skeleton: Skeleton, *joints: int) -> int:
    shared = set(_ancestors(skeleton, joints[0]))
    for joint in joints[1:]:
        shared &= set(_ancestors(skeleton, joint))
    return max(shared, key=lambda j: len(_ancestors(skeleton, j)))


def _path(skeleton: Skeleton, top: int, joint: int) -> List[int]:
    """The joints below `top` down to `joint` (included), top first."""
    chain = _ancestors(skeleton, joint)
    return list(reversed(chain[: chain.index(top)]))


def _distance(a: Vec3, b: Vec3) -> float:
    return math.sqrt(sum((a[i] - b[i]) ** 2 for i in range(3)))


def shape_parts(skeleton: Skeleton, source: str, skinned: Optional[FrozenSet[int]] = None,
                left_hint: Optional[Vec3] = None) -> Dict[str, int]:
    """Canonical part -> joint from the rest shape alone. `skinned`: the joints that carry vertices (None:
    no mesh). `left_hint`: right to left as the names have it, used only where the feet give no facing.
    Raises KimodoError naming `source` where the shape is not a standing humanoid's."""
    positions = rest_positions(skeleton)
    count = len(skeleton.parents)
    children: Dict[int, List[int]] = {}
    for joint, parent in enumerate(skeleton.parents):
        children.setdefault(parent, []).append(joint)
    heights = [p[1] for p in positions]

    def constant(name: str) -> float:
        return SHAPE_CONSTANTS[name][0]

    def carries(leaf: int) -> bool:
        if not skinned:
            return True
        parent = skeleton.parents[leaf]
        return leaf in skinned or (parent >= 0 and parent in skinned)

    leaves = [j for j in range(count) if j not in children and carries(j)]
    # The body's extent: the joints that carry the mesh and their tips (an IK bone's tip may hang far below).
    body = [j for j in range(count) if not skinned or j in skinned] + leaves
    floor = min(heights[j] for j in body)
    height = max(max(heights[j] for j in body) - floor, 1e-9)
    arc = [0.0] * count
    for joint in range(count):  # parents come before children
        parent = skeleton.parents[joint]
        if parent >= 0:
            arc[joint] = arc[parent] + _distance(positions[joint], positions[parent])
    low = [j for j in leaves if heights[j] - floor < constant("foot_height") * height]
    if len(low) < 2:
        raise KimodoError("{}: no humanoid shape: fewer than two extremities reach the floor".format(source))
    first = max(low, key=lambda j: (arc[j], -j))
    split = [j for j in low if heights[_common(skeleton, first, j)] - floor > constant("legs_split") * height]
    if not split:
        raise KimodoError("{}: no humanoid shape: no two legs part above the knees".format(source))
    second = max(split, key=lambda j: (arc[j], -j))
    def rising(leaf: int) -> bool:
        """The chain from where it leaves the legs up to `leaf` never turns down (hair falls from the head)."""
        chain = _path(skeleton, _common(skeleton, first, second, leaf), leaf)
        return bool(chain) and all(heights[j] >= heights[skeleton.parents[j]] - 0.01 * height for j in chain)

    # The head's end: the highest joint carrying the mesh that the trunk rises to (a head whose children
    # are eyes carrying nothing is no leaf).
    tops = [j for j in body if rising(j)] or body
    top = max(tops, key=lambda j: (heights[j], -j))
    hips = _common(skeleton, first, second, top)
    if heights[hips] - floor < constant("hips_at_floor") * height:
        hips = _path(skeleton, hips, top)[0]  # a root carrying legs and body side by side: the body's joint
    trunk = _path(skeleton, hips, top)
    rise = positions[top][1] - positions[hips][1]
    run = math.hypot(positions[top][0] - positions[hips][0], positions[top][2] - positions[hips][2])
    if not trunk or rise < constant("upright") * run:
        raise KimodoError("{}: no humanoid shape: the body runs level from the hips ({}) to the head (a "
                          "four-legged animal?)".format(source, skeleton.joint_names[hips]))

    bones: Dict[str, int] = {"hips": hips}
    legs = {}
    for leaf in (first, second):
        legs[leaf] = _place_leg(skeleton, positions, hips, leaf, floor, skinned, constant)
    # Facing as mapping.measure_forward has it: the foot joint to its toe joint (else the joint after it, a
    # tip). Not to the extremity: a tip the reading added where the foot's mesh ends lies behind the toes when
    # that mesh hangs off its bones, and the names' sides would be swapped for it.
    forward = [0.0, 0.0]
    for leaf, parts in legs.items():
        foot = parts["foot"]
        toe = parts.get("toe", leaf)
        forward[0] += positions[toe][0] - positions[foot][0]
        forward[1] += positions[toe][2] - positions[foot][2]
    size = math.hypot(*forward)
    across = (positions[first][0] - positions[second][0], positions[first][2] - positions[second][2])
    if size > 1e-3 * height:
        left = (forward[1] / size, -forward[0] / size)  # up x forward
    elif left_hint is not None:
        left = (left_hint[0], left_hint[2])
    else:
        left = (1.0, 0.0)  # Kimodo's frame: +X is the left of a character facing +Z

    def side_of(joint: int) -> str:
        offset = (positions[joint][0] - positions[hips][0], positions[joint][2] - positions[hips][2])
        return "l" if offset[0] * left[0] + offset[1] * left[1] > 0.0 else "r"

    if side_of(first) == side_of(second):
        raise KimodoError("{}: no humanoid shape: both legs on one side of the hips".format(source))
    for leaf, parts in legs.items():
        side = side_of(leaf)
        for part, joint in parts.items():
            bones[part + "_" + side] = joint

    # Arms: the most lateral extremities whose chains leave the trunk above the hips.
    on_trunk = set(trunk)
    lateral_axis = (across[0], across[1])
    norm = math.hypot(*lateral_axis) or 1.0
    arms: Dict[str, Tuple[float, int, int]] = {}
    for leaf in leaves:
        branch = _common(skeleton, leaf, top)
        if branch not in on_trunk or branch == top or leaf in legs:
            continue
        offset = (positions[leaf][0] - positions[hips][0], positions[leaf][2] - positions[hips][2])
        reach = abs(offset[0] * lateral_axis[0] + offset[1] * lateral_axis[1]) / norm
        if reach < constant("arm_reach") * height:
            continue
        side = side_of(leaf)
        if side not in arms or reach > arms[side][0]:
            arms[side] = (reach, leaf, branch)
    if set(arms) != {"l", "r"}:
        raise KimodoError("{}: no humanoid shape: no arm reaches out on {}".format(
            source, "either side" if not arms else "the " + ("right" if "l" in arms else "left")))
    chest = max((arms[s][2] for s in arms), key=lambda j: len(_ancestors(skeleton, j)))
    for k, joint in enumerate(trunk[: trunk.index(chest) + 1]):
        bones["spine_{}".format(k)] = joint
    # Up from the chest, the neck runs on while one bone follows another; the head is where it ends or
    # fans out (hair, eyes, jaw), never its end marker.
    carrying = set(body)
    for joint in body:
        carrying.update(_ancestors(skeleton, joint))
    above = trunk[trunk.index(chest) + 1:]
    for k, joint in enumerate(above):
        onward = [c for c in children.get(joint, []) if c in carrying]
        lone_end = len(onward) == 1 and onward[0] not in children and (
            _is_tip(onward[0], skinned, children, skeleton) or not skinned)
        if len(onward) != 1 or lone_end:
            bones["head"] = joint
            for n, neck in enumerate(above[:k]):
                bones["neck_{}".format(n)] = neck
            break
    for side, (_, leaf, branch) in arms.items():
        for part, joint in _place_arm(skeleton, positions, branch, leaf, hips, (left[0], 0.0, left[1]), height,
                                      skinned, children, constant).items():
            bones[part + "_" + side] = joint
        hand = bones.get("hand_" + side)
        if hand is not None:
            bones.update(_fingers(skeleton, positions, hand, side, skinned, children))
    return bones


def _is_tip(joint: int, skinned: Optional[FrozenSet[int]], children: Dict[int, List[int]],
            skeleton: Optional[Skeleton] = None) -> bool:
    """A leaf that only marks where its bone ends: one the rig reading added from a skinned bone's vertices
    (it carries none itself; the reading names it after its bone, `<bone>_tip`, which is how a skeleton
    handed on without its mesh, to the Unreal step, still tells it)."""
    if joint in children:
        return False
    if skinned:
        return joint not in skinned
    if skeleton is None or skeleton.parents[joint] < 0:
        return False
    return skeleton.joint_names[joint].rstrip("_") == skeleton.joint_names[skeleton.parents[joint]] + "_tip"


def _place_leg(skeleton: Skeleton, positions: Sequence[Vec3], hips: int, leaf: int, floor: float,
               skinned: Optional[FrozenSet[int]], constant) -> Dict[str, int]:
    """thigh, calf, foot, toe on the chain from the hips to a foot's extremity, by height."""
    # Where the mesh says which bones deform, a joint on the way that carries none (a foot control at the
    # floor the foot hangs from) plays no part.
    chain = [j for j in _path(skeleton, hips, leaf) if not skinned or j in skinned or j == leaf]
    top = positions[hips][1] - floor
    foot_at = next((k for k, j in enumerate(chain) if k > 0 and positions[j][1] - floor <= constant("ankle") * top), len(chain) - 1)
    foot = chain[foot_at]
    above = chain[:foot_at]
    if not above:
        raise KimodoError("{}: no humanoid shape: a leg has no joint above its foot".format(skeleton.name))
    highest = max(positions[j][1] for j in above)
    line = positions[foot][1] + constant("hip_joint") * (highest - positions[foot][1])
    thigh_at = max(k for k, j in enumerate(above) if positions[j][1] >= line)
    parts = {"thigh": above[thigh_at], "foot": foot}
    between = above[thigh_at + 1:]
    if between:
        middle = (positions[above[thigh_at]][1] + positions[foot][1]) / 2.0
        parts["calf"] = min(between, key=lambda j: abs(positions[j][1] - middle))
    if foot_at + 1 < len(chain):
        toe = chain[foot_at + 1]
        leaf_tip = toe == leaf and _is_tip(toe, skinned, {}, skeleton)
        if not leaf_tip:
            parts["toe"] = toe
    return parts


def _place_arm(skeleton: Skeleton, positions: Sequence[Vec3], branch: int, leaf: int, hips: int, left: Vec3,
               height: float, skinned: Optional[FrozenSet[int]], children: Dict[int, List[int]], constant) -> Dict[str, int]:
    """clavicle, upperarm, lowerarm, hand on the chain from the trunk to a hand's extremity: the wrist where
    the fingers fan out (the deepest joint above three extremities), else the joint before a tip; the
    shoulder and elbow where upper arm and forearm take their usual shares of shoulder to wrist."""
    chain = _path(skeleton, branch, leaf)
    leaves_below: Dict[int, int] = {}
    for joint in chain:
        stack, found = [joint], 0
        while stack:
            j = stack.pop()
            kids = children.get(j, [])
            parent = skeleton.parents[j]
            if not kids and (not skinned or j in skinned or parent in skinned):
                found += 1
            stack.extend(kids)
        leaves_below[joint] = found
    start = positions[branch]
    span = _distance(start, positions[leaf])
    fans = [k for k, j in enumerate(chain) if leaves_below[j] >= 3 and _distance(start, positions[j]) >= 0.5 * span]
    if fans:
        wrist_at = max(fans)
    elif _is_tip(leaf, skinned, children, skeleton) and len(chain) > 1:
        wrist_at = len(chain) - 2
    else:
        wrist_at = len(chain) - 1
    wrist = chain[wrist_at]
    best: Optional[Tuple[float, int, int]] = None
    for s in range(wrist_at):
        width = abs(sum((positions[chain[s]][i] - positions[hips][i]) * left[i] for i in (0, 2)))
        for e in range(s + 1, wrist_at):
            reach = _distance(positions[chain[s]], positions[wrist])
            if reach < 1e-9:
                continue
            share = _distance(positions[chain[s]], positions[chain[e]]) / reach
            cost = (share - constant("forearm_share")) ** 2
            if width < constant("shoulder_width") * height:
                cost += 0.05
            if best is None or cost < best[0]:
                best = (cost, s, e)
    parts = {"hand": wrist}
    if best is None:
        if wrist_at >= 1:
            parts["upperarm"] = chain[wrist_at - 1]  # one bone from the shoulder to the hand
            if wrist_at >= 2:
                parts["clavicle"] = chain[0]
        return parts
    _, s, e = best
    parts.update(upperarm=chain[s], lowerarm=chain[e])
    if s >= 1:
        parts["clavicle"] = chain[0]
    return parts


def _fingers(skeleton: Skeleton, positions: Sequence[Vec3], hand: int, side: str,
             skinned: Optional[FrozenSet[int]], children: Dict[int, List[int]]) -> Dict[str, int]:
    """Five chains off the hand: the thumb the one starting nearest the wrist, the others index to pinky by
    how far from the thumb they start. Anything but five chains maps no finger."""
    chains = []
    for child in children.get(hand, []):
        chain = [child]
        while children.get(chain[-1]):
            kids = children[chain[-1]]
            chain.append(max(kids, key=lambda c: _distance(positions[c], positions[hand])))
        if _is_tip(chain[-1], skinned, children, skeleton):
            chain.pop()
        if chain:
            chains.append(chain)
    if len(chains) != len(FINGERS):
        return {}

    # The thumb starts nearest the wrist; index to pinky follow away from it.
    thumb = min(chains, key=lambda c: _distance(positions[c[0]], positions[hand]))
    others = sorted((c for c in chains if c is not thumb), key=lambda c: _distance(positions[c[0]], positions[thumb[0]]))
    bones = {}
    for finger, chain in zip(FINGERS, [thumb] + others):
        for k, joint in enumerate(chain[-FINGER_JOINTS:]):
            bones[finger_part(finger, k, side)] = joint
    return bones
