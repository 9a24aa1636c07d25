"""The report's limbs, found from the character's own shape: which joints are each side's shoulder, elbow
and wrist, hip, knee and ankle, read from the skeleton's tree and its bind geometry alone, never from the
bone map the retarget used (a report measured on the map's own bones agrees with any map, a wrong one too).

Per limb: its extremity (an arm's: a leaf far out to that side, the pair of them meeting highest on the
spine; a leg's: the lowest leaf on that side below the spine), the chain of joints from where the two
sides' chains meet (the chest, the pelvis) down to it, and along that chain the joints nearest where
Kimodo's own skeleton (SOMA, at rest) has them, in order. A limb whose joints so placed are out of any
human proportion (a one-bone arm: no elbow on the chain) is left out, for the report to say so. Positions are taken in the character's facing (+X its left,
+Z its forward, +Y up), as the report measures it from the bind geometry.
"""
from __future__ import annotations

import math
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

from ..model import Skeleton
from ..ops.fk import rest_positions
from ..rotations import Quat, Vec3, quat_conjugate, quat_rotate

# Kimodo's SOMA skeleton at rest (somaskel77.json; a test holds these equal to it). Arms: the length
# along the chain from its first joint past the chest (the clavicle's start) to the shoulder, elbow and
# wrist, as fractions of its length to the middle finger's end: lengths along the bones, so arms held out
# (a T-pose), down at 45 degrees (an A-pose) or hanging (a mocap skeleton's rest) read alike. Legs: (outward, forward, down) from where the legs meet (the pelvis), per metre the
# chain drops to its lowest leaf (the toe's end), for the hip, knee and ankle.
ARM_FRACTIONS = (0.175, 0.490, 0.788)
LEG_PLACES = ((0.100, 0.026, 0.084), (0.100, 0.018, 0.514), (0.100, -0.017, 0.933))
LEG_DROP = 0.1  # of the character's height: the legs reach at least this far below the hips (a skirt's bones may too)
FINGER_JOINTS = 3  # a finger is a chain of at least this many joints (with its tip)
FOREARM_LINK = 0.2  # of the arm chain's length: a link this long is a forearm, not a hand (SOMA's hand: 0.04)
LIMB_RATIO = 3.0  # forearm to upper arm, shin to thigh at most (or at least its inverse): SOMA's are 0.95 and 0.97,
# a robot's forearm 2.4; a one-bone arm's "upper arm" (its clavicle) is a quarter of the bone after it
ARM_PLACES_LIMIT = 0.02  # sum of squared fraction errors an arm without fingers may have: SOMA's own 0; a
# fingerless hand (SMPL-X, a mocap skeleton, a forearm carrying the hand) 0.045-0.067, too near a chain ending
# at the forearm's start (clavicle taken for the upper arm: 0.1) to tell apart, so those are left to the map
HAND_CANDIDATES = 8  # the leaves farthest out a side tried as an arm's extremity
SAME_PLACE = 0.02  # of the height: two joints this near at bind are at one place (a shin's end and a foot's start)
ARM_RATIO = 0.943  # forearm to upper arm, shoulder to elbow to wrist as ARM_FRACTIONS have them
ARM_RATIO_WEIGHT = 0.5  # against the places: a robot's forearm may be twice its upper arm
ARM_PARTS = (("upperarm", "lowerarm"), ("lowerarm", "hand"))  # (segment, the part whose joint ends it)
LEG_PARTS = (("thigh", "calf"), ("calf", "foot"))
SIDES = (("l", 1.0), ("r", -1.0))


def find_limbs(skeleton: Skeleton, facing: Quat, carriers: Optional[FrozenSet[int]] = None) -> Dict[str, Tuple[int, int]]:
    """Per limb segment ("upperarm_l", "lowerarm_l", "thigh_l", "calf_l", and _r): (the joint it starts
    at, the joint it ends at), found from `skeleton`'s tree and rest positions turned by the inverse of
    `facing` (the character's forward as a turn from +Z); a limb whose chain is not found is left out.
    With `carriers` (the joints that carry the mesh), an extremity is a leaf that carries it or ends a
    bone that does: a rig's mechanism chains (Rigify's ORG- bones beside its DEF- ones) lie in the same
    places but are not what the user sees move."""
    turn = quat_conjugate(facing)
    points = [quat_rotate(turn, p) for p in rest_positions(skeleton)]
    count = skeleton.joint_count
    children: Dict[int, List[int]] = {j: [] for j in range(count)}
    for joint, parent in enumerate(skeleton.parents):
        if parent >= 0:
            children[parent].append(joint)
    leaves = [j for j in range(count) if not children[j]
              and (carriers is None or j in carriers or skeleton.parents[j] in carriers)]
    if len(leaves) < 4:
        return {}
    heights = [p[1] for p in points]
    height = max(heights) - min(heights)
    mid = (max(p[0] for p in points) + min(p[0] for p in points)) / 2.0
    found: Dict[str, Tuple[int, int]] = {}

    def stand_in(joint: int) -> int:
        """A joint that carries nothing stands for the one at its place that carries the mesh (Rigify's
        DEF- fingers hang off its ORG- hand, so the chain to them runs through the ORG- arm, whose DEF-
        twins at the same places are what moves the arm the user sees)."""
        if carriers is None or joint in carriers:
            return joint
        near = [j for j in carriers if _distance(points[j], points[joint]) <= SAME_PLACE * height]
        return min(near, key=lambda j: _distance(points[j], points[joint])) if near else joint

    hands = _hands(skeleton.parents, points, leaves, mid)
    chest = -1
    if hands is not None:
        chest = _meeting(skeleton.parents, *hands)
        arms = _chains(skeleton.parents, *hands)
        for (side, _), chain in zip(SIDES, arms):
            joints = _place_arm(chain, points, children)
            if joints is not None:
                _add(found, ARM_PARTS, side, joints, points, stand_in)
    legs = _leg_chains(skeleton.parents, children, points, chest, mid, height) if chest >= 0 else None
    if legs is not None:
        meeting, chains = legs
        for (side, outward), chain in zip(SIDES, chains):
            joints = _place_leg(chain, points, points[meeting], outward)
            if joints is not None:
                _add(found, LEG_PARTS, side, joints[:2] + (_foot_at(joints[2], chain, children, points, height),), points,
                     stand_in)
    return found


def _hands(parents: Sequence[int], points: Sequence[Vec3], leaves: Sequence[int], mid: float) -> Optional[Tuple[int, int]]:
    """The arms' extremities (left, right): of the leaves farthest out on each side (HAND_CANDIDATES a
    side), the pair farthest apart whose chains meet above where another such pair's meet: with arms hanging
    down and legs apart (a mocap skeleton at rest) the toes are farther out, but the legs meet lower, at
    the hips, of which the chest is a descendant. With only one place of meeting (a T-pose), the widest."""
    sides = [sorted((j for j in leaves if outward * (points[j][0] - mid) > 0.0), key=lambda j: -outward * points[j][0])
             [:HAND_CANDIDATES] for _, outward in SIDES]
    pairs = [(a, b, _meeting(parents, a, b)) for a in sides[0] for b in sides[1]]
    meetings = {m for _, _, m in pairs if m >= 0}
    above = [pair for pair in pairs if any(m != pair[2] and m in _path_up(parents, pair[2]) for m in meetings)]
    if not pairs:
        return None
    left, right, _ = max(above or pairs, key=lambda pair: points[pair[0]][0] - points[pair[1]][0])
    return left, right


def _add(found: Dict[str, Tuple[int, int]], parts, side: str, joints: Tuple[int, int, int],
         points: Sequence[Vec3], stand_in) -> None:
    """The limb's two segments, unless the lower is more than LIMB_RATIO times the upper's length or less
    than its inverse: then the chain has no joint where the knee or elbow is (a one-bone limb)."""
    upper_length = _distance(points[joints[0]], points[joints[1]])
    lower_length = _distance(points[joints[1]], points[joints[2]])
    if not upper_length / LIMB_RATIO <= lower_length <= LIMB_RATIO * upper_length:
        return
    joints = tuple(stand_in(j) for j in joints)  # type: ignore[assignment]
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


def _place_arm(chain: List[int], points: Sequence[Vec3], children: Dict[int, List[int]]) -> Optional[Tuple[int, int, int]]:
    """Shoulder, elbow and wrist: the joints in chain order whose distances along the chain from its first
    joint, as fractions of its length, come nearest ARM_FRACTIONS (the wrist, where the fingers show it,
    there: `_wrist`)."""
    if len(chain) < 3:
        return None
    along = [0.0]
    for a, b in zip(chain, chain[1:]):
        along.append(along[-1] + _distance(points[a], points[b]))
    if along[-1] <= 0.0:
        return None
    f = [length / along[-1] for length in along]
    wrist = _wrist(chain, children, along)

    def place(k: int, slot: int) -> float:
        if slot == 2 and wrist is not None:
            return 0.0 if k == wrist else math.inf
        return (f[k] - ARM_FRACTIONS[slot]) ** 2

    # Each joint near its place, and the forearm as long against the upper arm as Kimodo's: a big hand's
    # knuckles lie nearer the wrist's place than its wrist does, but make a forearm far too long.
    found = _in_order(chain, place, lambda a, b, c: ARM_RATIO_WEIGHT * ((f[c] - f[b]) - ARM_RATIO * (f[b] - f[a])) ** 2)
    if found is None or wrist is not None:
        return found
    # No fingers say where the hand is: only a chain whose joints lie where SOMA's do is taken (a forearm
    # that ends the chain with no hand nor tip would be taken for the wrist, the clavicle for the upper arm).
    a, b, c = (chain.index(j) for j in found)
    cost = sum((f[k] - ARM_FRACTIONS[slot]) ** 2 for slot, k in enumerate((a, b, c)))
    return found if cost <= ARM_PLACES_LIMIT else None


def _wrist(chain: List[int], children: Dict[int, List[int]], along: List[float]) -> Optional[int]:
    """Where the hand starts, as an index into `chain`, when the chain shows it: the first joint from which
    two fingers branch (children with chains of FINGER_JOINTS joints below them; twist bones are single
    joints, or a joint and its tip) is the wrist, or, where the link to its next joint on the chain is a
    whole forearm long (more than FOREARM_LINK of the chain: a robot's palms start at its elbow's
    bone's end), that next joint. None when no fingers branch."""
    for k, joint in enumerate(chain[:-1]):
        if sum(1 for child in children[joint] if _depth(children, child) >= FINGER_JOINTS) >= 2:
            return k + 1 if along[k + 1] - along[k] > FOREARM_LINK * along[-1] else k
    return None


def _depth(children: Dict[int, List[int]], joint: int) -> int:
    """The joints on the longest chain down from `joint`, itself included."""
    depth, level = 0, [joint]
    while level:
        depth += 1
        level = [c for j in level for c in children[j]]
    return depth


def _leg_chains(parents: Sequence[int], children: Dict[int, List[int]], points: Sequence[Vec3], chest: int,
                mid: float, height: float) -> Optional[Tuple[int, Tuple[List[int], List[int]]]]:
    """(where the legs meet, (left chain, right chain)). Down the spine from below the chest, the first
    joint whose other branches hold a leaf on each side at least LEG_DROP of the height below it: the
    legs are the chains from where those sides' lowest leaves meet down to them. A chain of a thigh and
    a shin alone (no foot, no end joint: the feet hang off a root bone, IK-style) gets the joint nearest
    under its end as its last joint: where the foot is."""
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
        for chain in chains:
            if len(chain) < 3:  # a thigh and a shin with no end of its own: the foot is elsewhere
                last = points[chain[-1]]
                feet = [j for j in range(len(points)) if j not in chain and points[j][1] < last[1]]
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
