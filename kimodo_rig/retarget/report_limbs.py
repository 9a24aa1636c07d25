"""The report's limbs, found from the character's own shape: which joints are each side's shoulder, elbow
and wrist, hip, knee and ankle, read from the skeleton's tree and its bind geometry alone, never from the
bone map the retarget used (a report measured on the map's own bones agrees with any map, a wrong one too).

Per limb: its extremity (an arm's: the leaf farthest out to that side; a leg's: the lowest leaf on that
side whose chain drops most of the way to the floor), the chain of joints from where the two sides' chains
meet (the chest, the pelvis) down to it, and along that chain the joints nearest where Kimodo's own
skeleton (SOMA, at rest) has them, in order. Positions are taken in the character's facing (+X its left,
+Z its forward, +Y up), as the report measures it from the bind geometry.
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple

from ..model import Skeleton
from ..ops.fk import rest_positions
from ..rotations import Quat, Vec3, quat_conjugate, quat_rotate

# Kimodo's SOMA skeleton at rest (somaskel77.json; a test holds these equal to it). Arms: the distance
# from the chain's first joint past the chest (the clavicle's start) as a fraction of its distance to the
# middle finger's end, for the shoulder, elbow and wrist; straight-line distances, so an A-pose and a
# T-pose read alike. Legs: (outward, forward, down) from where the legs meet (the pelvis), per metre the
# chain drops to its lowest leaf (the toe's end), for the hip, knee and ankle.
ARM_FRACTIONS = (0.177, 0.489, 0.789)
LEG_PLACES = ((0.100, 0.026, 0.084), (0.100, 0.018, 0.514), (0.100, -0.017, 0.933))
LEG_DROP = 0.1  # of the character's height: the legs reach at least this far below the hips (a skirt's bones may too)
FOOTLESS_SHIN = 0.25  # of the hips' height: a leg chain ending higher above the floor has no foot of its own
SAME_PLACE = 0.02  # of the height: two joints this near at bind are at one place (a shin's end and a foot's start)
ARM_RATIO = 0.962  # forearm to upper arm, shoulder to elbow to wrist as ARM_FRACTIONS have them
ARM_RATIO_WEIGHT = 0.5  # against the places: a robot's forearm may be twice its upper arm
ARM_PARTS = (("upperarm", "lowerarm"), ("lowerarm", "hand"))  # (segment, the part whose joint ends it)
LEG_PARTS = (("thigh", "calf"), ("calf", "foot"))
SIDES = (("l", 1.0), ("r", -1.0))


def find_limbs(skeleton: Skeleton, facing: Quat) -> Dict[str, Tuple[int, int]]:
    """Per limb segment ("upperarm_l", "lowerarm_l", "thigh_l", "calf_l", and _r): (the joint it starts
    at, the joint it ends at), found from `skeleton`'s tree and rest positions turned by the inverse of
    `facing` (the character's forward as a turn from +Z); a limb whose chain is not found is left out."""
    turn = quat_conjugate(facing)
    points = [quat_rotate(turn, p) for p in rest_positions(skeleton)]
    count = skeleton.joint_count
    children: Dict[int, List[int]] = {j: [] for j in range(count)}
    for joint, parent in enumerate(skeleton.parents):
        if parent >= 0:
            children[parent].append(joint)
    leaves = [j for j in range(count) if not children[j]]
    if len(leaves) < 4:
        return {}
    heights = [p[1] for p in points]
    height = max(heights) - min(heights)
    mid = (max(p[0] for p in points) + min(p[0] for p in points)) / 2.0
    found: Dict[str, Tuple[int, int]] = {}
    hands = {"l": max(leaves, key=lambda j: points[j][0]), "r": min(leaves, key=lambda j: points[j][0])}
    chest = -1
    if points[hands["l"]][0] > mid > points[hands["r"]][0]:
        chest = _meeting(skeleton.parents, hands["l"], hands["r"])
        arms = _chains(skeleton.parents, hands["l"], hands["r"])
        for (side, _), chain in zip(SIDES, arms):
            joints = _place_arm(chain, points)
            if joints is not None:
                _add(found, ARM_PARTS, side, joints)
    legs = _leg_chains(skeleton.parents, children, points, chest, mid, height) if chest >= 0 else None
    if legs is not None:
        meeting, chains = legs
        for (side, outward), chain in zip(SIDES, chains):
            joints = _place_leg(chain, points, points[meeting], outward)
            if joints is not None:
                _add(found, LEG_PARTS, side, joints[:2] + (_foot_at(joints[2], chain, children, points, height),))
    return found


def _add(found: Dict[str, Tuple[int, int]], parts, side: str, joints: Tuple[int, int, int]) -> None:
    (upper, _), (lower, _) = parts
    found[upper + "_" + side] = (joints[0], joints[1])
    found[lower + "_" + side] = (joints[1], joints[2])


def _path_up(parents: Sequence[int], joint: int) -> List[int]:
    path = []
    while joint >= 0:
        path.append(joint)
        joint = parents[joint]
    return path


def _chains(parents: Sequence[int], left: int, right: int) -> Tuple[List[int], List[int]]:
    """The two chains from below the joint where the paths up from `left` and `right` meet, down to
    each (the meeting joint itself left out; a chain is empty when one end is above the other)."""
    up_left, up_right = _path_up(parents, left), _path_up(parents, right)
    shared = set(up_left) & set(up_right)
    return ([j for j in reversed(up_left) if j not in shared], [j for j in reversed(up_right) if j not in shared])


def _meeting(parents: Sequence[int], left: int, right: int) -> int:
    shared = set(_path_up(parents, right))
    return next((j for j in _path_up(parents, left) if j in shared), -1)


def _place_arm(chain: List[int], points: Sequence[Vec3]) -> Optional[Tuple[int, int, int]]:
    """Shoulder, elbow and wrist: the joints in chain order whose distances from the chain's first joint,
    as fractions of the extremity's, come nearest ARM_FRACTIONS."""
    if len(chain) < 3:
        return None
    start, end = points[chain[0]], points[chain[-1]]
    reach = _distance(start, end)
    if reach <= 0.0:
        return None
    f = [_distance(start, points[j]) / reach for j in chain]
    # Each joint near its place, and the forearm as long against the upper arm as Kimodo's: a big hand's
    # knuckles lie nearer the wrist's place than its wrist does, but make a forearm far too long.
    return _in_order(chain, lambda k, slot: (f[k] - ARM_FRACTIONS[slot]) ** 2,
                     lambda a, b, c: ARM_RATIO_WEIGHT * ((f[c] - f[b]) - ARM_RATIO * (f[b] - f[a])) ** 2)


def _leg_chains(parents: Sequence[int], children: Dict[int, List[int]], points: Sequence[Vec3], chest: int,
                mid: float, height: float) -> Optional[Tuple[int, Tuple[List[int], List[int]]]]:
    """(where the legs meet, (left chain, right chain)). Down the spine from below the chest, the first
    joint whose other branches hold a leaf on each side at least LEG_DROP of the height below it: the
    legs are the chains from where those sides' lowest leaves meet down to them. A chain that ends well
    above the floor (a shin with no foot: the feet hang off a root bone, IK-style) gets the lowest joint
    under its end, near the floor, as its last joint: where the foot is."""
    floor = min(p[1] for p in points)
    on_spine = _path_up(parents, chest)
    for below, joint in zip(on_spine, on_spine[1:]):
        branches = [j for child in children[joint] if child != below for j in _subtree(children, child)]
        lowest = []
        for _, outward in SIDES:
            side = [j for j in branches if not children[j] and outward * (points[j][0] - mid) > 0.0]
            lowest.append(min(side, key=lambda j: points[j][1]) if side else -1)
        if -1 in lowest or any(points[joint][1] - points[j][1] < LEG_DROP * height for j in lowest):
            continue
        meeting = _meeting(parents, lowest[0], lowest[1])
        chains = _chains(parents, lowest[0], lowest[1])
        reach = points[meeting][1] - floor
        for (_, outward), chain in zip(SIDES, chains):
            end = points[chain[-1]][1]
            if end - floor > FOOTLESS_SHIN * reach:
                last = points[chain[-1]]
                feet = [j for j in range(len(points)) if j not in chain and points[j][1] - floor < FOOTLESS_SHIN * reach]
                if feet:  # the foot under the shin's end: the nearest seen from above
                    chain.append(min(feet, key=lambda j: math.hypot(points[j][0] - last[0], points[j][2] - last[2])))
        return meeting, chains
    return None


def _foot_at(ankle: int, chain: List[int], children: Dict[int, List[int]], points: Sequence[Vec3], height: float) -> int:
    """The ankle as the foot has it: where a shin ends in a bare end joint and a foot bone hanging off a
    root bone (IK-style) starts at that place at bind, the foot bone, which carries the foot and is what
    Kimodo's ankle is; else the ankle found on the chain."""
    if children[ankle]:
        return ankle
    near = [j for j in range(len(points)) if j not in chain and children[j]
            and _distance(points[j], points[ankle]) <= SAME_PLACE * height]
    return min(near, key=lambda j: _distance(points[j], points[ankle])) if near else ankle


def _subtree(children: Dict[int, List[int]], joint: int) -> List[int]:
    found, stack = [], [joint]
    while stack:
        j = stack.pop()
        found.append(j)
        stack.extend(children[j])
    return found


def _place_leg(chain: List[int], points: Sequence[Vec3], meeting: Vec3, outward: float) -> Optional[Tuple[int, int, int]]:
    """Hip, knee and ankle: the joints in chain order nearest LEG_PLACES, each joint taken relative to
    where the legs meet, per metre of the chain's drop."""
    if len(chain) < 3:
        return None
    drop = meeting[1] - points[chain[-1]][1]
    if drop <= 0.0:
        return None
    places = [(outward * (points[j][0] - meeting[0]) / drop, (points[j][2] - meeting[2]) / drop,
               (meeting[1] - points[j][1]) / drop) for j in chain]
    return _in_order(chain, lambda k, slot: sum((a - b) ** 2 for a, b in zip(places[k], LEG_PLACES[slot])))


def _in_order(chain: List[int], cost, joint_cost=None) -> Optional[Tuple[int, int, int]]:
    """The three joints of `chain`, in its order, that together cost least (cost(index, slot) each, plus
    joint_cost(a, b, c) of the three indices)."""
    best: Optional[Tuple[float, Tuple[int, int, int]]] = None
    n = len(chain)
    costs = [[cost(k, slot) for slot in range(3)] for k in range(n)]
    for a in range(n - 2):
        for b in range(a + 1, n - 1):
            ab = costs[a][0] + costs[b][1]
            for c in range(b + 1, n):
                total = ab + costs[c][2] + (joint_cost(a, b, c) if joint_cost else 0.0)
                if best is None or total < best[0]:
                    best = (total, (chain[a], chain[b], chain[c]))
    return best[1] if best is not None else None


def _distance(a: Vec3, b: Vec3) -> float:
    return math.sqrt((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2 + (a[2] - b[2]) ** 2)
