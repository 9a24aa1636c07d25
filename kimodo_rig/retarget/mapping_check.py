"""Is a humanoid map right for its skeleton? Every map is checked before it is used, whether the mapper
found it, the user gave it (--map) or the file states it (a VRM humanoid table): a map with two parts
swapped made the retarget loop for ever (hips and a hand) or run to the end with an arm pointing elsewhere
(left and right upper arms), and the report could not tell.

The check is the skeleton's own geometry at rest, not the names: the parts lie along one tree in chain
order (thigh above shin, upper arm above forearm above hand), left and right mirror each other about the
body's midplane, each side lies on the character's geometric left or right (left = up x forward, forward
from the feet), and each limb ends at an extremity. A map that fails is one line naming the part, the bone,
the reason and the fix.
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import KimodoError
from ..model import Skeleton
from ..ops.fk import rest_positions
from ..rotations import Vec3, subtract
from .mapping import SIDES, HumanoidMap, facing_label, measure_forward

# Tolerances of the check: (value, unit, why).
CHECK_TOLERANCES = {
    # Left and right reaches of one limb differ by less than this, relative: how far each part's end (the
    # elbow, the wrist, the knee, the ankle) lies from the joint both sides hang from (the chest, the hips).
    # Measured on the rigs of tests/data/rigs, the built-ins and the CMU BVH: 5.5 % at most (CMU's wrists);
    # a chain mapped one bone up or down on one side: 32 % or more. Not each segment's own length: one
    # side's joint may sit elsewhere along a symmetric limb (Quaternius' robot's right shoulder joint 7 cm
    # farther out than its left, the elbows mirrored within 1 cm: upper arms 66 and 58 cm, 12 %, reaches
    # 1.6 %), and a segment one bone off can match its other side (the female dress's forearm taken for the
    # upper arm: 4 %).
    "mirror_length": (0.10, "relative", "symmetric characters reach within 5.5 %; one bone off is 32 % off or more"),
    # A part's joint and its mirror image on the other side lie closer than this (m per 1.7 m of
    # character): room for rigs whose rest is not quite symmetric, far below a clavicle's length (~15 cm).
    "mirror_position": (0.10, "m per 1.7 m", "asymmetric rests stay within a few cm; a shifted chain is 15 cm+"),
    # What hangs below the limb's last part (a hand's fingers, a foot's toes) reaches beyond it by less than
    # this fraction of the limb (shoulder to wrist, hip to ankle): a hand is a third of the arm, while a
    # "hand" at the elbow carries a whole forearm and hand below it.
    "extremity_reach": (0.75, "of the limb's length", "a hand or foot is about a third of its limb"),
    # The trunk (hips to head) rises at least this many times as much as it runs level: an upright body
    # leans a few degrees at rest, a four-legged animal's runs level (rise / run about 0.25).
    "upright": (2.0, "rise per run", "a standing humanoid's trunk is within 27 degrees of vertical"),
    # Heights (and the tolerances in m per 1.7 m) are measured on this character height.
    "reference_height": (1.7, "m", "the tolerances are stated for a 1.7 m character"),
}

LIMB_CHAINS = (("clavicle", "upperarm", "lowerarm", "hand"), ("thigh", "calf"))
MIRRORED_LENGTHS = ("upperarm", "lowerarm", "thigh", "calf")
MIRRORED_POSITIONS = ("clavicle", "upperarm", "lowerarm", "hand", "thigh", "calf", "foot")
SEE = "see kimodo-rig map RIG --json and --map"


def _ancestors(skeleton: Skeleton, joint: int) -> List[int]:
    chain = [joint]
    while skeleton.parents[chain[-1]] >= 0:
        chain.append(skeleton.parents[chain[-1]])
    return chain


def _below(skeleton: Skeleton, joint: int, ancestor: int) -> bool:
    """`joint` hangs strictly below `ancestor`."""
    return joint != ancestor and ancestor in _ancestors(skeleton, joint)


def _subtree(skeleton: Skeleton, joint: int) -> List[int]:
    found, stack = [], [joint]
    while stack:
        j = stack.pop()
        found.append(j)
        stack.extend(skeleton.children(j))
    return found


def _distance(a: Vec3, b: Vec3) -> float:
    return math.sqrt(sum((a[i] - b[i]) ** 2 for i in range(3)))


def map_problem(hmap: HumanoidMap) -> Optional[Tuple[str, str]]:
    """(part, what is wrong with it) for the first problem the geometry finds, or None for a sound map."""
    skeleton = hmap.skeleton
    bones = hmap.bones
    positions = rest_positions(skeleton)
    heights = [positions[j][1] for j in bones.values()]  # the mapped body's (an end bone may stand far off)
    scale = max(max(heights) - min(heights), 1e-6) / CHECK_TOLERANCES["reference_height"][0]

    roots = {_ancestors(skeleton, j)[-1] for j in bones.values()}
    if len(roots) > 1:
        part = next(p for p, j in bones.items() if _ancestors(skeleton, j)[-1] != _ancestors(skeleton, bones["hips"])[-1])
        return part, "is in another joint tree than the hips"
    hips = bones["hips"]
    for part, joint in bones.items():
        if part != "hips" and not part.startswith(("spine_", "neck_", "head")) and _below(skeleton, hips, joint):
            return "hips", "hangs below {} ({}): the hips must carry the limbs".format(part, skeleton.joint_names[joint])
    problem = _upright_problem(hmap, positions)
    if problem is not None:
        return problem
    trunk = ["hips"] + hmap.chain("spine") + hmap.chain("neck") + (["head"] if "head" in bones else [])
    for upper, lower in zip(trunk, trunk[1:]):
        if not _below(skeleton, bones[lower], bones[upper]):
            return lower, "does not hang below {} ({})".format(upper, skeleton.joint_names[bones[upper]])
    for side in SIDES:
        for chain in LIMB_CHAINS:
            present = [p + "_" + side for p in chain if p + "_" + side in bones]
            for upper, lower in zip(present, present[1:]):
                if not _below(skeleton, bones[lower], bones[upper]):
                    return lower, "does not hang below {} ({})".format(upper, skeleton.joint_names[bones[upper]])
        for upper, lower in (("calf_" + side, "foot_" + side), ("thigh_" + side, "foot_" + side), ("foot_" + side, "toe_" + side)):
            if upper in bones and lower in bones and _below(skeleton, bones[upper], bones[lower]):
                return lower, "is above {} ({}) in the tree".format(upper, skeleton.joint_names[bones[upper]])
        if "foot_" + side in bones and "toe_" + side in bones and not _below(skeleton, bones["toe_" + side], bones["foot_" + side]):
            return "toe_" + side, "does not hang below foot_{} ({})".format(side, hmap.joint_name("foot_" + side))
    problem = _sides_problem(hmap, positions)
    if problem is not None:
        return problem
    problem = _mirror_problem(hmap, positions, scale)
    if problem is not None:
        return problem
    return _extremity_problem(hmap, positions, scale)


def _upright_problem(hmap: HumanoidMap, positions: Sequence[Vec3]) -> Optional[Tuple[str, str]]:
    """A humanoid stands: its trunk rises from the hips, its legs hang below them. A four-legged animal's
    spine runs level from the hips to the head."""
    top = next((p for p in (["head"] + list(reversed(hmap.chain("neck") + hmap.chain("spine")))) if p in hmap.bones), None)
    if top is None:
        return None
    rise = subtract(positions[hmap.bones[top]], positions[hmap.bones["hips"]])
    level = math.hypot(rise[0], rise[2])
    if rise[1] < CHECK_TOLERANCES["upright"][0] * level:
        return top, ("is not above the hips ({}): the body runs {:.0f} cm level and {:.0f} cm up; not a humanoid "
                     "standing upright (a four-legged animal?)".format(hmap.joint_name("hips"), 100 * level, 100 * rise[1]))
    return None


def _sides_problem(hmap: HumanoidMap, positions: Sequence[Vec3]) -> Optional[Tuple[str, str]]:
    """Each side's hip and shoulder on the character's own left or right (left = up x forward, forward
    from the feet: heel to toe); nothing to say where the feet give no facing."""
    forward = measure_forward(hmap)
    if forward is None:
        return None
    left = (forward[2], 0.0, -forward[0])
    hips = positions[hmap.bones["hips"]]
    for part in ("thigh", "upperarm"):  # a clavicle starts at the midline, on either side of it
        for side, sign, word in (("l", 1.0, "left"), ("r", -1.0, "right")):
            name = part + "_" + side
            if name not in hmap.bones:
                continue
            offset = subtract(positions[hmap.anchor(name)], hips)
            if sign * (offset[0] * left[0] + offset[2] * left[2]) < 0.0:
                return name, "is on the character's {} (its feet face {}), not its {}".format(
                    "right" if word == "left" else "left", facing_label(forward), word)
    return None


def _mirror_problem(hmap: HumanoidMap, positions: Sequence[Vec3], scale: float) -> Optional[Tuple[str, str]]:
    """Left and right chains mapped alike: where the skeleton has a joint at the mirror image (about the
    body's midplane: through the hips, across the facing) of each side's part, the other side's part is
    that joint, and the segments of a part are of one length. A rig that is itself lopsided (an arm that
    lost a bone) has no mirror twin there, and says nothing against the map."""
    # The midplane is the facing's (left = up x forward), not the mapped hip line's, which a shifted leg skews.
    normal = (hmap.forward[2], 0.0, -hmap.forward[0])
    middle = sum(positions[hmap.bones["hips"]][i] * normal[i] for i in range(3))
    tolerance = CHECK_TOLERANCES["mirror_position"][0] * scale
    twins: Dict[int, Optional[int]] = {}  # each joint's twin, searched for once (a search visits every joint)

    def twin(joint: int) -> Optional[int]:
        """The joint at `joint`'s mirror image, or None."""
        if joint in twins:
            return twins[joint]
        at = positions[joint]
        along = sum(at[i] * normal[i] for i in range(3)) - middle
        mx, my, mz = (at[i] - 2.0 * along * normal[i] for i in range(3))
        # _distance to every joint, written out (sum() of the three squares: 0 + s is s for s >= 0)
        distances = [math.sqrt((p[0] - mx) ** 2 + (p[1] - my) ** 2 + (p[2] - mz) ** 2) for p in positions]
        best = min(range(len(positions)), key=distances.__getitem__)
        twins[joint] = best if distances[best] <= tolerance else None
        return twins[joint]

    def mirrored_pair(left: int, right: int) -> bool:
        """Both joints have mirror twins (the rig is symmetric there)."""
        return twin(left) is not None and twin(right) is not None

    for part in MIRRORED_POSITIONS:
        if not all(part + "_" + s in hmap.bones for s in SIDES):
            continue
        left, right = hmap.anchor(part + "_l"), hmap.anchor(part + "_r")
        if mirrored_pair(left, right) and _distance(positions[twin(left)], positions[right]) > tolerance:  # type: ignore[index]
            return part + "_r", "is not the mirror image of {} ({}): left and right must mirror each other".format(
                part + "_l", hmap.joint_name(part + "_l"))
    for part in MIRRORED_LENGTHS:
        if None in (hmap.segment(part + "_" + side, positions) for side in SIDES) or \
                not mirrored_pair(hmap.anchor(part + "_l"), hmap.anchor(part + "_r")):
            continue
        root = _limb_root(hmap, part)
        reaches = [_distance(_end(hmap, part + "_" + side, positions), positions[root]) for side in SIDES]
        if abs(reaches[0] - reaches[1]) > CHECK_TOLERANCES["mirror_length"][0] * max(reaches):
            shorter = SIDES[0] if reaches[0] < reaches[1] else SIDES[1]
            return part + "_" + shorter, ("ends {:.0f} cm from {}, its other side {:.0f} cm: left and right must mirror "
                                          "each other".format(100 * min(reaches), hmap.skeleton.joint_names[root], 100 * max(reaches)))
    return None


def _limb_root(hmap: HumanoidMap, part: str) -> int:
    """The joint both sides of `part`'s limb hang from (the chest for the arms, the hips for the legs): the
    nearest common ancestor of the limb's first mapped parts."""
    chain = next(chain for chain in LIMB_CHAINS if part in chain)
    first = next((p for p in chain if all(p + "_" + side in hmap.bones for side in SIDES)), part)
    left = _ancestors(hmap.skeleton, hmap.bones[first + "_l"])
    return next(j for j in _ancestors(hmap.skeleton, hmap.bones[first + "_r"]) if j in left)


def _end(hmap: HumanoidMap, part: str, positions: Sequence[Vec3]) -> Vec3:
    """Where `part`'s segment ends (the mean of its end joints, as HumanoidMap.segment has it)."""
    ends = hmap.ends[part]
    return tuple(sum(positions[j][i] for j in ends) / len(ends) for i in range(3))  # type: ignore[return-value]


def _extremity_problem(hmap: HumanoidMap, positions: Sequence[Vec3], scale: float) -> Optional[Tuple[str, str]]:
    """Each limb ends at an extremity: below its last part hangs no more than a hand or a foot."""
    skeleton = hmap.skeleton
    for side in SIDES:
        for start, ends in (("upperarm", ("hand", "lowerarm")), ("thigh", ("foot", "calf"))):
            first = start + "_" + side
            last = next((e + "_" + side for e in ends if e + "_" + side in hmap.bones), None)
            if first not in hmap.bones or last is None or first in hmap.whole_limbs:
                continue
            origin, end = positions[hmap.anchor(first)], positions[hmap.bones[last]]
            if not last.startswith(("hand", "foot")) and hmap.ends.get(last):
                # No hand or foot part (a palm bone the names do not know): the forearm's end is the wrist.
                ends = hmap.ends[last]
                end = tuple(sum(positions[j][i] for j in ends) / len(ends) for i in range(3))
            limb = _distance(origin, end)
            if limb < 1e-9:
                return first, "has no length: it starts where {} ({}) is".format(last, hmap.joint_name(last))
            # The extremity's reach, along the limb's own line: a finger or a toe, not a forearm or a shin.
            # A bone farther off than the character is tall is none of its body (an exporter's end bone
            # placed in another space).
            beyond = max([d for d in (_distance(positions[j], end) for j in _subtree(skeleton, hmap.bones[last]))
                          if d <= scale * CHECK_TOLERANCES["reference_height"][0]] or [0.0])
            if beyond > CHECK_TOLERANCES["extremity_reach"][0] * limb:
                return last, "is not at the limb's end: {:.0f} cm of bones hang beyond it, the limb from {} is {:.0f} cm".format(
                    100 * beyond, first, 100 * limb)
    return None


def map_problem_line(hmap: HumanoidMap, source: str) -> Optional[str]:
    """The one line `check_map` refuses `hmap` with (naming `source`, the part, its bone, what is wrong
    and how to fix it), or None for a sound map."""
    problem = map_problem(hmap)
    if problem is None:
        return None
    part, reason = problem
    return "{}: map: {} ({}) {}; {}".format(source, part, hmap.joint_name(part), reason, SEE)


def check_map(hmap: HumanoidMap, source: str) -> HumanoidMap:
    """`hmap` when the geometry agrees with it; else KimodoError with `map_problem_line`."""
    line = map_problem_line(hmap, source)
    if line is not None:
        raise KimodoError(line)
    return hmap
