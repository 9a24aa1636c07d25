"""Which joint of a skeleton plays which part of a humanoid, and what that implies at rest.

A HumanoidMap gives each canonical part ("hips", "spine_0".., "neck_0".., "head", "upperarm_l", "thigh_r",
"index_01_l", ...) the joint whose rotation drives it, the joint whose position starts its segment (they
differ on G1, whose hips and shoulders are three one-axis joints a few cm apart: the segment is measured
joint centre to joint centre, from the roll joint to the knee or elbow) and the joints whose positions end it. Kimodo's own
skeletons have explicit tables; every other rig is mapped by names under the common conventions, with the
rest geometry deciding what names leave open (+X is the character's left).

The pure functions here are shared by the offline retarget and the Unreal step: `map_humanoid`,
`retarget_chains`, `rest_leg_reach`, `rest_corrections`.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple, Union

from ..errors import KimodoError
from ..model import Skeleton
from ..rotations import (
    IDENTITY,
    Quat,
    Vec3,
    quat_angle,
    quat_between,
    quat_conjugate,
    quat_from_axis_angle,
    quat_multiply,
    quat_normalize,
    quat_rotate,
    subtract,
)
from ..ops.fk import rest_pose, rest_positions

SIDES = ("l", "r")
ARM_PARTS = ("clavicle", "upperarm", "lowerarm", "hand")
FINGERS = ("thumb", "index", "middle", "ring", "pinky")
FINGER_JOINTS = 3
# Parts that keep the target's own rest relation to the floor and the body: only the source's change
# from its rest is applied (re-aiming a foot tilts the sole and floats the toes).
DELTA_ONLY_PARTS = ("hips", "head", "foot_l", "foot_r", "toe_l", "toe_r")
# Limb parts whose directions the report compares.
ARM_REPORT_PARTS = ("upperarm_l", "lowerarm_l", "upperarm_r", "lowerarm_r")
LIMB_REPORT_PARTS = tuple(p + "_" + s for s in SIDES for p in ("clavicle", "upperarm", "lowerarm", "hand", "thigh", "calf"))


@dataclass(frozen=True)
class HumanoidMap:
    """Canonical part -> joint index on `skeleton`. `anchors` holds the joint that starts a part's segment
    where it is not the part's own joint; `ends` the joints whose mean rest position ends it."""

    skeleton: Skeleton
    bones: Dict[str, int]
    anchors: Dict[str, int] = field(default_factory=dict)
    ends: Dict[str, Tuple[int, ...]] = field(default_factory=dict)

    def has(self, part: str) -> bool:
        return part in self.bones

    def joint_name(self, part: str) -> str:
        return self.skeleton.joint_names[self.bones[part]]

    def anchor(self, part: str) -> int:
        return self.anchors.get(part, self.bones[part])

    def chain(self, prefix: str) -> List[str]:
        """Parts "spine_0", "spine_1", ... (or neck_, or a finger) present, in order."""
        parts = []
        while "{}_{}".format(prefix, len(parts)) in self.bones:
            parts.append("{}_{}".format(prefix, len(parts)))
        return parts

    def segment(self, part: str, positions: Sequence[Vec3]) -> Optional[Vec3]:
        """Direction (not normalised) of a part's segment from the given joint positions, or None."""
        ends = self.ends.get(part)
        if part not in self.bones or not ends:
            return None
        end = tuple(sum(positions[j][i] for j in ends) / len(ends) for i in range(3))
        vector = subtract(end, positions[self.anchor(part)])
        return vector if vector[0] ** 2 + vector[1] ** 2 + vector[2] ** 2 > 1e-12 else None


def finger_part(finger: str, index: int, side: str) -> str:
    return "{}_{:02d}_{}".format(finger, index + 1, side)


# --- Kimodo's own skeletons --------------------------------------------------------------------------

def _kimodo_tables() -> Dict[str, Dict[str, object]]:
    soma: Dict[str, object] = {"hips": "Hips", "spine": ("Spine1", "Spine2", "Chest"), "neck": ("Neck1", "Neck2"), "head": "Head"}
    smplx: Dict[str, object] = {"hips": "pelvis", "spine": ("spine1", "spine2", "spine3"), "neck": ("neck",), "head": "head"}
    g1: Dict[str, object] = {"hips": "pelvis_skel", "spine": ("waist_pitch_skel",),
                             "anchor:spine_0": "waist_yaw_skel",
                             "end:spine_0": ("left_shoulder_pitch_skel", "right_shoulder_pitch_skel")}
    for side, word in (("l", "Left"), ("r", "Right")):
        soma.update({
            "clavicle_" + side: word + "Shoulder", "upperarm_" + side: word + "Arm",
            "lowerarm_" + side: word + "ForeArm", "hand_" + side: word + "Hand",
            "end:hand_" + side: (word + "HandMiddleEnd",),
            "thigh_" + side: word + "Leg", "calf_" + side: word + "Shin",
            "foot_" + side: word + "Foot", "toe_" + side: word + "ToeBase",
        })
        for finger in FINGERS:
            # SOMA77: Thumb1..3; Index/Middle/Ring/Pinky 1 is the metacarpal, 2..4 the phalanges.
            first = 1 if finger == "thumb" else 2
            for k in range(FINGER_JOINTS):
                soma["finger:" + finger_part(finger, k, side)] = "{}Hand{}{}".format(word, finger.capitalize(), first + k)
            soma["fingerend:" + finger + "_" + side] = "{}Hand{}End".format(word, finger.capitalize())
        lower = word.lower()
        smplx.update({
            "clavicle_" + side: lower + "_collar", "upperarm_" + side: lower + "_shoulder",
            "lowerarm_" + side: lower + "_elbow", "hand_" + side: lower + "_wrist",
            "thigh_" + side: lower + "_hip", "calf_" + side: lower + "_knee",
            "foot_" + side: lower + "_ankle", "toe_" + side: lower + "_foot",
        })
        g1.update({
            # The segment starts at the roll joint: from there to the next joint the vector runs along the
            # yaw axis, so it turns rigidly with the yaw joint whose rotation drives the part.
            "upperarm_" + side: lower + "_shoulder_yaw_skel", "anchor:upperarm_" + side: lower + "_shoulder_roll_skel",
            "lowerarm_" + side: lower + "_elbow_skel", "end:lowerarm_" + side: (lower + "_wrist_roll_skel",),
            "hand_" + side: lower + "_wrist_yaw_skel", "end:hand_" + side: (lower + "_hand_roll_skel",),
            "thigh_" + side: lower + "_hip_yaw_skel", "anchor:thigh_" + side: lower + "_hip_roll_skel",
            "calf_" + side: lower + "_knee_skel",
            "foot_" + side: lower + "_ankle_roll_skel", "anchor:foot_" + side: lower + "_ankle_pitch_skel",
            "toe_" + side: lower + "_toe_base",
        })
    return {"somaskel30": soma, "somaskel77": soma, "smplx22": smplx, "g1skel34": g1}


def _kimodo_skeleton_name(skeleton: Skeleton) -> Optional[str]:
    from .. import skeletons

    names = set(skeleton.joint_names)
    for name in skeletons.BUILTIN:
        if set(skeletons.data(name)["joint_names"]) == names:
            return name
    return None


def _map_from_table(skeleton: Skeleton, table: Dict[str, object]) -> HumanoidMap:
    index = {name: j for j, name in enumerate(skeleton.joint_names)}
    bones: Dict[str, int] = {}
    anchors: Dict[str, int] = {}
    explicit_ends: Dict[str, Tuple[int, ...]] = {}
    finger_ends: Dict[str, int] = {}
    for key, value in table.items():
        if key in ("spine", "neck"):
            for k, name in enumerate(value):  # type: ignore[arg-type]
                bones["{}_{}".format(key, k)] = index[name]
        elif key.startswith("anchor:"):
            anchors[key[7:]] = index[value]  # type: ignore[index]
        elif key.startswith("end:"):
            if all(n in index for n in value):  # type: ignore[union-attr]
                explicit_ends[key[4:]] = tuple(index[n] for n in value)  # type: ignore[union-attr]
        elif key.startswith("fingerend:"):
            if value in index:
                finger_ends[key[10:]] = index[value]  # type: ignore[index]
        elif key.startswith("finger:"):
            if value in index:
                bones[key[7:]] = index[value]  # type: ignore[index]
        else:
            bones[key] = index[value]  # type: ignore[index]
    return _complete(skeleton, bones, anchors, explicit_ends, finger_ends)


# --- any other rig, by names -------------------------------------------------------------------------

_PREFIX = re.compile(r"^(mixamorig\d*[:_]?|def[-_]|org[-_]|mch[-_]|bip\d*[ _]|b_|bn_|bone_|cc_base_|j_bip_[a-z]_|j_)", re.I)
_SUFFIX_SIDE = re.compile(r"(?:[._\- ])(l|r|left|right)$", re.I)
_WORD_SIDE = re.compile(r"^(left|right)", re.I)
_CAMEL_SIDE = re.compile(r"[a-z0-9]([LR])$")
_LETTER_SIDE = re.compile(r"^([LRlr])(?:[A-Z_.\-]|(?=(?:hand|foot|thumb|fingers|shoulder|collar|hip|knee|ankle|toe|elbow|wrist|arm|leg)))")
_FINGER_WORD = re.compile(r"^(?:hand)?f?(thumb|index|middle|ring|pinky|little|pinkie)(\d*)$")

_WORDS = {
    "thigh": "thigh", "upleg": "thigh", "upperleg": "thigh", "legupper": "thigh",
    "hip": "hip", "leg": "leg",
    "calf": "calf", "shin": "calf", "lowerleg": "calf", "leglower": "calf", "knee": "calf", "crus": "calf",
    "foot": "foot", "ankle": "foot",
    "toe": "toe", "toes": "toe", "toebase": "toe", "ball": "toe", "toe0": "toe",
    "clavicle": "clavicle", "collar": "clavicle", "collarbone": "clavicle",
    "shoulder": "shoulder", "arm": "arm",
    "upperarm": "upperarm", "uparm": "upperarm", "armupper": "upperarm",
    "forearm": "lowerarm", "lowerarm": "lowerarm", "elbow": "lowerarm", "armlower": "lowerarm",
    "hand": "hand", "wrist": "hand",
}
_CENTRE_WORDS = {
    "hips": "hips", "pelvis": "hips", "hip": "hips",
    "head": "head",
}


def split_side(name: str) -> Tuple[Optional[str], str]:
    """(side "l"/"r"/None, base word lower-case without separators) of a bone name."""
    text = _PREFIX.sub("", name.strip())
    text = re.sub(r"\.\d{3}$", "", text) if not re.search(r"\.\d{3}\.", text) else text
    side: Optional[str] = None
    match = _SUFFIX_SIDE.search(text)
    if match:
        side = match.group(1)[0].lower()
        text = text[: match.start()]
    else:
        match = _WORD_SIDE.match(text)
        if match:
            side = match.group(1)[0].lower()
            text = text[match.end():]
        else:
            match = _CAMEL_SIDE.search(text)
            if match:
                side = match.group(1).lower()
                text = text[:-1]
            else:
                match = _LETTER_SIDE.match(text)
                if match:
                    side = match.group(1).lower()
                    text = text[1:]
    base = re.sub(r"[^a-z0-9]", "", text.lower())
    return side, base


def _depth(skeleton: Skeleton, joint: int) -> int:
    depth = 0
    while skeleton.parents[joint] >= 0:
        joint = skeleton.parents[joint]
        depth += 1
    return depth


def _ancestors(skeleton: Skeleton, joint: int) -> List[int]:
    """joint, its parent, ... up to the root."""
    chain = [joint]
    while skeleton.parents[chain[-1]] >= 0:
        chain.append(skeleton.parents[chain[-1]])
    return chain


def _common_ancestor(skeleton: Skeleton, a: int, b: int) -> int:
    above_a = set(_ancestors(skeleton, a))
    for joint in _ancestors(skeleton, b):
        if joint in above_a:
            return joint
    return 0


def _map_by_names(skeleton: Skeleton) -> Tuple[Dict[str, int], Dict[str, int]]:
    """Canonical part -> joint from names; also finger end joints. Missing parts are simply absent."""
    positions = rest_positions(skeleton)
    words: Dict[Tuple[str, str], List[int]] = {}
    centre: Dict[str, List[int]] = {}
    fingers: Dict[Tuple[str, str], List[Tuple[int, str]]] = {}
    unsided: Dict[str, List[int]] = {}
    for joint, name in enumerate(skeleton.joint_names):
        side, base = split_side(name)
        word = _WORDS.get(base)
        finger = _FINGER_WORD.match(base)
        if side is None:
            if base in _CENTRE_WORDS:
                centre.setdefault(_CENTRE_WORDS[base], []).append(joint)
                continue
            if word:
                unsided.setdefault(word, []).append(joint)
                continue
        if side is None:
            continue
        if word:
            words.setdefault((side, word), []).append(joint)
        elif finger:
            kind = "pinky" if finger.group(1) in ("little", "pinkie") else finger.group(1)
            fingers.setdefault((side, kind), []).append((joint, base))
        elif re.match(r"^(?:hand)?f?(thumb|index|middle|ring|pinky)\w*(end|nub|tip)$", base):
            kind = re.match(r"^(?:hand)?f?(thumb|index|middle|ring|pinky)", base).group(1)  # type: ignore[union-attr]
            fingers.setdefault((side, kind + ":end"), []).append((joint, base))
    # Names without a side (a rig that says "UpperArm" twice): the rest geometry decides, +X is left.
    for word, joints in unsided.items():
        if len(joints) == 2:
            left, right = sorted(joints, key=lambda j: -positions[j][0])
            words.setdefault(("l", word), []).append(left)
            words.setdefault(("r", word), []).append(right)

    bones: Dict[str, int] = {}
    finger_ends: Dict[str, int] = {}

    def first(side: str, *kinds: str) -> Optional[int]:
        found = [j for kind in kinds for j in words.get((side, kind), [])]
        return min(found, key=lambda j: _depth(skeleton, j)) if found else None

    for side in SIDES:
        thigh = first(side, "thigh")
        calf = first(side, "calf")
        leg = first(side, "leg")
        hip = first(side, "hip")
        if thigh is None and hip is not None and (calf is not None or leg is not None):
            thigh = hip  # SMPL-X / CMU: left_hip, LeftHip is the thigh
        # The trap both ways: Mixamo LeftLeg is the shin (beside LeftUpLeg); SOMA LeftLeg is the thigh
        # (beside LeftShin).
        if leg is not None:
            if thigh is not None and calf is None:
                calf = leg
            elif calf is not None and thigh is None:
                thigh = leg
            elif thigh is None and calf is None:
                thigh = leg
        for part, joint in (("thigh", thigh), ("calf", calf), ("foot", first(side, "foot")), ("toe", first(side, "toe"))):
            if joint is not None:
                bones[part + "_" + side] = joint
        clavicle = first(side, "clavicle")
        upperarm = first(side, "upperarm")
        arm = first(side, "arm")
        shoulder = first(side, "shoulder")
        if upperarm is None:
            upperarm = arm
        if shoulder is not None:
            # Mixamo/Rigify/Quaternius shoulder = clavicle (beside an arm bone); CMU/SMPL-X shoulder = upper
            # arm (beside a collar).
            if upperarm is not None and clavicle is None:
                clavicle = shoulder
            elif upperarm is None:
                upperarm = shoulder
        for part, joint in (("clavicle", clavicle), ("upperarm", upperarm), ("lowerarm", first(side, "lowerarm")),
                            ("hand", first(side, "hand"))):
            if joint is not None:
                bones[part + "_" + side] = joint
        for finger in FINGERS:
            joints = sorted(fingers.get((side, finger), []), key=lambda item: _depth(skeleton, item[0]))
            chain = [j for j, base in joints if not base.endswith(("end", "nub", "tip"))]
            if len(chain) > FINGER_JOINTS:
                chain = chain[-FINGER_JOINTS:]  # a metacarpal first
            for k, joint in enumerate(chain):
                bones[finger_part(finger, k, side)] = joint
            ends = [j for j, base in joints if base.endswith(("end", "nub", "tip"))]
            ends += [j for j, _ in fingers.get((side, finger + ":end"), [])]
            if ends:
                finger_ends[finger + "_" + side] = ends[0]
    thighs = [bones.get("thigh_l"), bones.get("thigh_r")]
    if None not in thighs:
        lca = _common_ancestor(skeleton, thighs[0], thighs[1])  # type: ignore[arg-type]
        named = [j for j in centre.get("hips", []) if j in _ancestors(skeleton, lca)]
        bones["hips"] = max(named, key=lambda j: _depth(skeleton, j)) if named else lca
    arms = [bones.get("clavicle_l", bones.get("upperarm_l")), bones.get("clavicle_r", bones.get("upperarm_r"))]
    if "hips" in bones and None not in arms:
        chest = _common_ancestor(skeleton, arms[0], arms[1])  # type: ignore[arg-type]
        path = _ancestors(skeleton, chest)
        if bones["hips"] in path:
            spine = list(reversed(path[: path.index(bones["hips"])]))
            for k, joint in enumerate(spine):
                bones["spine_{}".format(k)] = joint
            heads = [j for j in centre.get("head", []) if chest in _ancestors(skeleton, j) and j != chest]
            if heads:
                head = min(heads, key=lambda j: _depth(skeleton, j))
                bones["head"] = head
                neck = list(reversed(_ancestors(skeleton, head)[1: _ancestors(skeleton, head).index(chest)]))
                for k, joint in enumerate(neck):
                    bones["neck_{}".format(k)] = joint
            else:
                _map_head_by_geometry(skeleton, positions, chest, bones)
    return bones, finger_ends


def _map_head_by_geometry(skeleton: Skeleton, positions: Sequence[Vec3], chest: int, bones: Dict[str, int]) -> None:
    """No bone is called head (Rigify: spine.004-.006): walk up from the chest through the child that
    rises most; the last bone of the walk is the head (the one before, if the last is a childless tip),
    the ones before it the neck."""
    taken = set(bones.values())
    walk: List[int] = []
    joint = chest
    while True:
        children = [c for c in skeleton.children(joint) if c not in taken and positions[c][1] > positions[joint][1] + 1e-3]
        if not children:
            break
        joint = max(children, key=lambda c: positions[c][1])
        walk.append(joint)
    if len(walk) >= 2:
        # A childless last joint is the head's tip (an end bone); otherwise the last joint is the head.
        head = walk[-2] if len(walk) >= 3 and not skeleton.children(walk[-1]) else walk[-1]
        bones["head"] = head
        for k, joint in enumerate(walk[: walk.index(head)]):
            bones["neck_{}".format(k)] = joint


def _complete(skeleton: Skeleton, bones: Dict[str, int], anchors: Dict[str, int],
              explicit_ends: Dict[str, Tuple[int, ...]], finger_ends: Dict[str, int]) -> HumanoidMap:
    """Fill in where each part's segment ends: at the next part's start (the hand at its middle finger)."""
    ends: Dict[str, Tuple[int, ...]] = dict(explicit_ends)

    def start(part: str) -> Optional[int]:
        if part not in bones:
            return None
        return anchors.get(part, bones[part])

    def set_end(part: str, *candidates: str) -> None:
        if part in ends or part not in bones:
            return
        for candidate in candidates:
            joint = start(candidate)
            if joint is not None:
                ends[part] = (joint,)
                return

    for side in SIDES:
        set_end("clavicle_" + side, "upperarm_" + side)
        set_end("upperarm_" + side, "lowerarm_" + side)
        set_end("lowerarm_" + side, "hand_" + side)
        set_end("hand_" + side, "middle_01_" + side, "index_01_" + side, "ring_01_" + side)
        set_end("thigh_" + side, "calf_" + side)
        set_end("calf_" + side, "foot_" + side)
        for finger in FINGERS:
            k = 0
            while finger_part(finger, k, side) in bones:
                part = finger_part(finger, k, side)
                if finger_part(finger, k + 1, side) in bones:
                    set_end(part, finger_part(finger, k + 1, side))
                elif finger + "_" + side in finger_ends:
                    ends[part] = (finger_ends[finger + "_" + side],)
                k += 1
    positions = rest_positions(skeleton)
    for side in SIDES:
        for part in (p + "_" + side for p in ("clavicle", "upperarm", "lowerarm", "hand", "thigh", "calf")):
            if part in bones and part not in ends:
                # No next part (a robot without hand bones): the segment ends at the children's mean.
                joint = bones[part]
                children = tuple(c for c in skeleton.children(joint)
                                 if sum((positions[c][i] - positions[joint][i]) ** 2 for i in range(3)) > 1e-8)
                if children:
                    ends[part] = children
    for prefix, after in (("spine", ("neck_0", "head")), ("neck", ("head",))):
        k = 0
        while "{}_{}".format(prefix, k) in bones:
            part = "{}_{}".format(prefix, k)
            following = "{}_{}".format(prefix, k + 1)
            if following in bones:
                set_end(part, following)
            else:
                set_end(part, *after)
                if part not in ends and prefix == "spine":
                    shoulders = [start(p + "_" + s) for s in SIDES for p in ("clavicle",)]
                    if None in shoulders:
                        shoulders = [start("upperarm_" + s) for s in SIDES]
                    if None not in shoulders:
                        ends[part] = tuple(shoulders)  # type: ignore[arg-type]
            k += 1
    return HumanoidMap(skeleton, dict(bones), dict(anchors), ends)


def map_humanoid(skeleton: Skeleton, source: str = "") -> HumanoidMap:
    """The humanoid parts of `skeleton`. Raises KimodoError (naming `source`) when no two arms and two
    legs can be found."""
    kimodo = _kimodo_skeleton_name(skeleton)
    if kimodo is not None:
        return _map_from_table(skeleton, _kimodo_tables()[kimodo])
    bones, finger_ends = _map_by_names(skeleton)
    missing = [p + "_" + s for s in SIDES for p in ("thigh", "calf", "upperarm", "lowerarm") if p + "_" + s not in bones]
    if "hips" not in bones and not missing:
        missing.append("hips")
    if missing:
        raise KimodoError("{}: no humanoid legs and arms found (missing {}); bone names tried: Unreal, Mixamo, "
                          "Blender/Rigify, CMU, Quaternius, Left/Right words".format(source or skeleton.name, ", ".join(missing)))
    return _complete(skeleton, bones, {}, {}, finger_ends)


# --- chain tables for IK rigs --------------------------------------------------------------------------

@dataclass(frozen=True)
class Chain:
    name: str  # as Unreal's IK_Mannequin names it
    start: str  # bone names on the skeleton
    end: str


def retarget_chains(humanoid: Union[HumanoidMap, Skeleton]) -> Tuple[List[Chain], str]:
    """The IK-Rig chain table (Root where a bone sits above the hips, Spine, Neck, Head,
    Left/RightClavicle, Left/RightArm, Left/RightLeg, fingers where present) and the retarget root bone
    (the hips)."""
    hmap = humanoid if isinstance(humanoid, HumanoidMap) else map_humanoid(humanoid)
    name = hmap.joint_name
    chains: List[Chain] = []
    root = find_root_bone(hmap.skeleton, hmap.bones["hips"])
    if root is not None:  # Unreal's IK_Mannequin has a Root chain too; it carries root motion when asked
        chains.append(Chain("Root", hmap.skeleton.joint_names[root], hmap.skeleton.joint_names[root]))
    for chain_name, parts in (("Spine", hmap.chain("spine")), ("Neck", hmap.chain("neck")),
                              ("Head", ["head"] if hmap.has("head") else [])):
        if parts:
            chains.append(Chain(chain_name, name(parts[0]), name(parts[-1])))
    for side, word in (("l", "Left"), ("r", "Right")):
        if hmap.has("clavicle_" + side):
            chains.append(Chain(word + "Clavicle", name("clavicle_" + side), name("clavicle_" + side)))
        arm_end = "hand_" + side if hmap.has("hand_" + side) else "lowerarm_" + side
        chains.append(Chain(word + "Arm", name("upperarm_" + side), name(arm_end)))
        leg_end = next(p + "_" + side for p in ("toe", "foot", "calf") if hmap.has(p + "_" + side))
        chains.append(Chain(word + "Leg", name("thigh_" + side), name(leg_end)))
        for finger in FINGERS:
            parts = [finger_part(finger, k, side) for k in range(FINGER_JOINTS) if hmap.has(finger_part(finger, k, side))]
            if parts:
                chains.append(Chain(word + finger.capitalize(), name(parts[0]), name(parts[-1])))
    return chains, name("hips")


def find_root_bone(skeleton: Skeleton, hips: int) -> Optional[int]:
    """A bone above the hips to carry root motion: one called root, else the armature's top bone."""
    above = []
    joint = skeleton.parents[hips]
    while joint >= 0:
        above.append(joint)
        joint = skeleton.parents[joint]
    for joint in above:
        if split_side(skeleton.joint_names[joint])[1] == "root":
            return joint
    return above[-1] if above else None


# --- rest measurements --------------------------------------------------------------------------------

def floor_parts(hmap: HumanoidMap) -> List[int]:
    """The joints that touch the floor: toes, or feet where a side has no toe."""
    joints = []
    for side in SIDES:
        for part in ("toe_" + side, "foot_" + side):
            if hmap.has(part):
                joints.append(hmap.bones[part])
                break
    return joints


def rest_leg_reach(humanoid: Union[HumanoidMap, Skeleton]) -> float:
    """Metres from the hips down to the lowest foot or toe joint, in the rest pose."""
    hmap = humanoid if isinstance(humanoid, HumanoidMap) else map_humanoid(humanoid)
    positions = rest_positions(hmap.skeleton)
    feet = [hmap.bones[p + "_" + s] for s in SIDES for p in ("foot", "toe") if hmap.has(p + "_" + s)]
    if not feet:
        feet = [hmap.bones["calf_" + s] for s in SIDES]
    return positions[hmap.bones["hips"]][1] - min(positions[j][1] for j in feet)


# --- pairing source parts with target parts -------------------------------------------------------------

@dataclass(frozen=True)
class Link:
    """One target bone driven by the source: the target part and joint, the source joints whose world
    change from rest drives it (blended with `weight` towards the second where chains differ in length),
    the source part whose rest segment it is aimed along, and whether it is aimed at all."""

    part: str
    target_joint: int
    source_joints: Tuple[int, int]
    weight: float
    source_part: str
    aim: bool


def link_parts(source: HumanoidMap, target: HumanoidMap) -> List[Link]:
    """Target part -> source part(s), ordered parent before child on the target. Spine and neck chains of
    different lengths are spread: each target bone follows the source at the same fraction of the chain."""
    links: List[Link] = []
    for part, joint in target.bones.items():
        prefix = part.rsplit("_", 1)[0]
        if prefix in ("spine", "neck"):
            target_chain = target.chain(prefix)
            source_chain = source.chain(prefix)
            if not source_chain:
                continue
            k = int(part.rsplit("_", 1)[1])
            at = (k + 0.5) / len(target_chain) * len(source_chain) - 0.5
            at = min(max(at, 0.0), len(source_chain) - 1.0)
            low = int(math.floor(at))
            high = min(low + 1, len(source_chain) - 1)
            nearest = source_chain[int(round(at))]
            links.append(Link(part, joint, (source.bones[source_chain[low]], source.bones[source_chain[high]]),
                              at - low, nearest, True))
        elif source.has(part):
            source_joint = source.bones[part]
            links.append(Link(part, joint, (source_joint, source_joint), 0.0, part, part not in DELTA_ONLY_PARTS))
    links.sort(key=lambda link: link.target_joint)
    return links


# --- the rest-pose correction ---------------------------------------------------------------------------

@dataclass(frozen=True)
class RestCorrections:
    """Per target joint (index order = parent before child): `offsets[j]` the local rotation offset D
    (new local rest = local rest * D), `globals[j]` the corrected global rest rotation, `angles_deg[j]`
    how far the bone itself was turned (0 where it only follows its parent or was not aimed)."""

    offsets: Tuple[Quat, ...]
    globals: Tuple[Quat, ...]
    angles_deg: Tuple[float, ...]
    links: Tuple[Link, ...]
    facing: Quat  # yaw taking the source's facing onto the target's
    max_deg: float
    arm_max_deg: float

    def named_offsets(self, skeleton: Skeleton, *, only_turned: bool = True) -> List[Tuple[str, Quat]]:
        """(bone name, D) parent before child; with only_turned, the bones the correction aims."""
        aimed = {link.target_joint for link in self.links if link.aim}
        return [(skeleton.joint_names[j], d) for j, d in enumerate(self.offsets) if not only_turned or j in aimed]


def facing_between(source: HumanoidMap, target: HumanoidMap) -> Quat:
    """The yaw taking the source's left-to-right hip line onto the target's (identity when both face +Z)."""
    ps = rest_positions(source.skeleton)
    pt = rest_positions(target.skeleton)
    vs = subtract(ps[source.bones["thigh_l"]], ps[source.bones["thigh_r"]])
    vt = subtract(pt[target.bones["thigh_l"]], pt[target.bones["thigh_r"]])
    # Always about +Y (quat_between would pick any axis for opposite lines: a rig facing -Z).
    turn = math.atan2(vt[0], vt[2]) - math.atan2(vs[0], vs[2])
    return quat_from_axis_angle((0.0, 1.0, 0.0), turn)


def rest_corrections(source: Union[HumanoidMap, Skeleton], target: Union[HumanoidMap, Skeleton],
                     links: Optional[Sequence[Link]] = None) -> RestCorrections:
    """Turn each aimed target bone at rest, parent before child, so its segment points where the source's
    segment points at rest (measured, never a T-pose assumed). D = Rg^-1 G Rg with Rg the bone's global
    rest rotation after its parent's offset and G the world rotation aiming it. Feet, toes, head and hips
    keep their own global rest (their D cancels what the parents' offsets did to them)."""
    smap = source if isinstance(source, HumanoidMap) else map_humanoid(source)
    tmap = target if isinstance(target, HumanoidMap) else map_humanoid(target)
    links = list(links) if links is not None else link_parts(smap, tmap)
    facing = facing_between(smap, tmap)
    source_positions = rest_positions(smap.skeleton)
    skeleton = tmap.skeleton
    rest_globals, target_positions = rest_pose(skeleton)
    by_joint = {link.target_joint: link for link in links}
    offsets: List[Quat] = []
    corrected: List[Quat] = []
    angles: List[float] = []
    for joint, parent in enumerate(skeleton.parents):
        local = skeleton.rest_rotations[joint]
        after_parent = local if parent < 0 else quat_multiply(corrected[parent], local)
        link = by_joint.get(joint)
        turn = IDENTITY
        if link is not None and link.aim:
            wanted = smap.segment(link.source_part, source_positions)
            have = tmap.segment(link.part, target_positions)
            if wanted is not None and have is not None:
                # The segment as the parents' offsets have already carried it.
                carried = quat_rotate(quat_multiply(after_parent, quat_conjugate(rest_globals[joint])), have)
                turn = quat_between(carried, quat_rotate(facing, wanted))
            global_rest = quat_normalize(quat_multiply(turn, after_parent))
        elif link is not None:
            global_rest = rest_globals[joint]
        else:
            global_rest = after_parent
        offsets.append(quat_normalize(quat_multiply(quat_conjugate(after_parent), global_rest)))
        corrected.append(global_rest)
        angles.append(math.degrees(quat_angle(turn)))
    arm_joints = {tmap.bones[p + "_" + s] for s in SIDES for p in ARM_PARTS if tmap.has(p + "_" + s)}
    return RestCorrections(
        offsets=tuple(offsets), globals=tuple(corrected), angles_deg=tuple(angles), links=tuple(links),
        facing=facing, max_deg=max(angles) if angles else 0.0,
        arm_max_deg=max([angles[j] for j in arm_joints] or [0.0]),
    )
