"""Which joint of a skeleton plays which part of a humanoid, and what that implies at rest.

A HumanoidMap gives each canonical part ("hips", "spine_0".., "neck_0".., "head", "upperarm_l", "thigh_r",
"index_01_l", ...) the joint whose rotation drives it, the joint whose position starts its segment (they
differ on G1, whose hips and shoulders are three one-axis joints a few cm apart: the segment is measured
joint centre to joint centre, from the roll joint to the knee or elbow) and the joints whose positions end it. Kimodo's own
skeletons have explicit tables; a table the file states (VRM) or the user gives (--map) is the map
(`map_from_parts`); every other rig is mapped by its shape (`mapping_shape`) and by names under the common
conventions (numbered chains such as CesiumMan's ordered by depth, one-bone limbs, IK-style names as a last
resort), the names' map taken only where the shape agrees with it. Every map is checked against the rest
geometry before use (`mapping_check`). Facing is measured from the feet (heel to toe), and the character's left
is up x forward: where the names put left on the other side, geometry wins.

The pure functions here are shared by the offline retarget and the Unreal step: `map_humanoid`,
`retarget_chains`, `rest_leg_reach`, `rest_corrections`.
"""
from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple, Union

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

LOG = logging.getLogger("kimodo_rig")

SIDES = ("l", "r")
ARM_PARTS = ("clavicle", "upperarm", "lowerarm", "hand")
FINGERS = ("thumb", "index", "middle", "ring", "pinky")
FINGER_JOINTS = 3
# Parts that keep the target's own rest relation to the floor and the body: only the source's change
# from its rest is applied (re-aiming a foot tilts the sole and floats the toes).
DELTA_ONLY_PARTS = ("hips", "head", "foot_l", "foot_r", "toe_l", "toe_r")
# Limb parts whose directions the report compares: the limbs (thigh, shin, upper arm, forearm per
# side). The clavicles and hands are not limbs there: the arms' passes turn them on purpose (back lift,
# wrist turn) to keep the hands above the floor.
ARM_REPORT_PARTS = ("upperarm_l", "lowerarm_l", "upperarm_r", "lowerarm_r")
LEG_REPORT_PARTS = ("thigh_l", "calf_l", "thigh_r", "calf_r")
LIMB_REPORT_PARTS = ARM_REPORT_PARTS + LEG_REPORT_PARTS
CHECK_FIELD = "check"  # `kimodo-rig map --json` prints the check's verdict under this key; --map skips it


@dataclass(frozen=True)
class HumanoidMap:
    """Canonical part -> joint index on `skeleton`. `anchors` holds the joint that starts a part's segment
    where it is not the part's own joint; `ends` the joints whose mean rest position ends it."""

    skeleton: Skeleton
    bones: Dict[str, int]
    anchors: Dict[str, int] = field(default_factory=dict)
    ends: Dict[str, Tuple[int, ...]] = field(default_factory=dict)
    forward: Vec3 = (0.0, 0.0, 1.0)  # the rig's facing at rest, measured (horizontal, unit)
    whole_limbs: Tuple[str, ...] = ()  # one-bone limbs: "upperarm_l" runs shoulder to hand, "thigh_l" hip to ankle
    warnings: Tuple[str, ...] = ()  # what the mapping had to decide against the names

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
        vector = subtract(mean_point(positions, ends), positions[self.anchor(part)])
        return vector if vector[0] ** 2 + vector[1] ** 2 + vector[2] ** 2 > 1e-12 else None


def mean_point(positions: Sequence[Vec3], joints: Sequence[int]) -> Vec3:
    """The mean of the joints' positions: sum() per axis, divided by the count, written out (the report
    asks it per limb per frame)."""
    x = y = z = 0.0  # sum()'s start: 0 + v is 0.0 + v
    for joint in joints:
        p = positions[joint]
        x += p[0]
        y += p[1]
        z += p[2]
    count = len(joints)
    return (x / count, y / count, z / count)


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
_LETTER_SIDE = re.compile(r"^([LRlr])(?:[A-Z_.\- ]|(?=(?:hand|foot|thumb|fingers|shoulder|collar|hip|knee|ankle|toe|elbow|wrist|arm|leg)))")
# 3ds Max Biped: `Bip01 L Finger0` is the thumb .. `Finger4` the pinky, `Finger01`, `Finger02` its joints.
_BIPED_FINGER = re.compile(r"^finger([0-4])\d?$")
# Unity's humanoid names number the phalanges in words (LeftIndexProximal .. Distal), CC and Daz say Mid.
_FINGER_WORD = re.compile(r"^(?:hand)?f?(thumb|index|middle|mid|ring|pinky|little|pinkie)(\d*|proximal|intermediate|distal)$")

_WORDS = {
    "thigh": "thigh", "upleg": "thigh", "upperleg": "thigh", "legupper": "thigh",
    "hip": "hip", "leg": "leg",
    "calf": "calf", "shin": "calf", "lowerleg": "calf", "leglower": "calf", "knee": "calf", "crus": "calf",
    "foot": "foot", "ankle": "foot",
    "toe": "toe", "toes": "toe", "toebase": "toe", "ball": "toe", "toe0": "toe",
    "thighbend": "thigh",  # Daz Genesis 8: lThighBend > lThighTwist > lShin (the twist is in the chain)
    # Auto-Rig Pro's deforming bones: thigh_stretch.l, leg_stretch.l (the shin), arm_stretch.l, forearm_stretch.l
    "thighstretch": "thigh", "legstretch": "calf", "armstretch": "upperarm", "forearmstretch": "lowerarm", "toes01": "toe",
    "clavicle": "clavicle", "collar": "clavicle", "collarbone": "clavicle",
    "shoulder": "shoulder", "arm": "arm",
    "upperarm": "upperarm", "uparm": "upperarm", "armupper": "upperarm", "shldr": "upperarm", "shldrbend": "upperarm",
    "forearm": "lowerarm", "lowerarm": "lowerarm", "elbow": "lowerarm", "armlower": "lowerarm", "forearmbend": "lowerarm",
    "hand": "hand", "wrist": "hand",
}
_CENTRE_WORDS = {
    "hips": "hips", "pelvis": "hips", "hip": "hips",
    "head": "head",
}


_INDEX_SUFFIX = re.compile(r"(?<=[A-Za-z0-9])[_ ]\d+$")  # Sketchfab's re-export: `LeftUpLeg_03`, `Bip01 L Thigh_46`


def split_side(name: str) -> Tuple[Optional[str], str]:
    """(side "l"/"r"/None, base word lower-case without separators) of a bone name. An exporter's node
    index after the name (Sketchfab: `LeftLeg_02`) is dropped where the name without it is a known word."""
    side, base = _split_side(name)
    if base not in _WORDS and base not in _CENTRE_WORDS and _INDEX_SUFFIX.search(name.strip()):
        plain = _split_side(_INDEX_SUFFIX.sub("", name.strip()))
        if plain[1] in _WORDS or plain[1] in _CENTRE_WORDS or _FINGER_WORD.match(plain[1]) or _BIPED_FINGER.match(plain[1]):
            return plain
    return side, base


def _split_side(name: str) -> Tuple[Optional[str], str]:
    text = _PREFIX.sub("", name.strip())
    text = re.sub(r"\.x$", "", text)  # Auto-Rig Pro's centre bones: root.x, spine_01.x, head.x
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


# Words that name a socket or a prop a limb carries (Soldier's ShieldSlot on the forearm, WeaponSlot on the
# hand): its vertices are not the body's (kept above the floor, they lifted the whole arm off the clip).
_PROP_WORDS = frozenset("slot socket weapon weapons prop props holster sheath scabbard shield sword gun rifle "
                        "pistol attach attachment".split())


def prop_joints(skeleton: Skeleton) -> FrozenSet[int]:
    """The joints named as a socket or prop (_PROP_WORDS, a word of the name) and every joint below them."""
    props = set()
    for joint, name in enumerate(skeleton.joint_names):
        words = {t.lower() for t in re.split(r"[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])|\d+", name)}
        if words & _PROP_WORDS or joint in props or skeleton.parents[joint] in props:
            props.add(joint)
    return frozenset(props)


_HELPER = re.compile(r"^(ik|fk|ctrl|ctl|control)|(ik|fk|ctrl|ctl|control|target|goal)$")
_NUMBERED_NOISE = {"skeleton", "joint", "jnt", "bone", "bn", "def", ""}
# Limb words that number a whole chain (Khronos CesiumMan: leg_joint_L_1.._5, Skeleton_arm_joint_L__4_..),
# and the parts the chain's joints take, root to tip, by how many it has.
_NUMBERED_CHAINS = {
    "arm": {2: ("upperarm", "lowerarm"), 3: ("upperarm", "lowerarm", "hand"), 4: ("clavicle", "upperarm", "lowerarm", "hand")},
    "leg": {2: ("thigh", "calf"), 3: ("thigh", "calf", "foot"), 4: ("thigh", "calf", "foot", "toe")},
}


def _numbered_limb(name: str) -> Optional[Tuple[str, str]]:
    """(side, "arm"/"leg") for a numbered chain joint such as `leg_joint_L_1` or `Skeleton_arm_joint_R__2_`."""
    tokens = [t.lower() for t in re.split(r"[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])", name)]
    tokens = [t for t in tokens if t not in _NUMBERED_NOISE and not t.isdigit()]
    sides = [t for t in tokens if t in ("l", "r", "left", "right")]
    words = [t for t in tokens if t not in ("l", "r", "left", "right")]
    if len(sides) == 1 and len(words) == 1 and words[0] in _NUMBERED_CHAINS and re.search(r"\d", name):
        return sides[0][0], words[0]
    return None


def _spread_numbered_chain(skeleton: Skeleton, words: Dict[Tuple[str, str], List[int]], side: str) -> None:
    """Several joints of one side called `arm` (or `leg`) and no other arm words: they are the limb's
    chain; depth, not their numbers (CesiumMan counts down on one side and up on the other), orders them."""
    for limb, layouts in _NUMBERED_CHAINS.items():
        joints = sorted(words.get((side, limb), []), key=lambda j: _depth(skeleton, j))
        parts = {part for layout in layouts.values() for part in layout}
        if len(joints) < 2 or any((side, part) in words for part in parts):
            continue
        if any(skeleton.parents[b] != a for a, b in zip(joints, joints[1:])):
            continue
        layout = layouts[min(len(joints), max(layouts))]
        for part, joint in zip(layout, joints):
            words[(side, part)] = [joint]
        words.pop((side, limb))


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


_DEFORM_RANK = ((re.compile(r"^def[-_.]", re.I), 0), (re.compile(r"^org[-_.]", re.I), 2), (re.compile(r"^mch[-_.]", re.I), 3))


def _preference(skeleton: Skeleton, joint: int, skinned: Optional[FrozenSet[int]]) -> Tuple[int, int]:
    """Which of several bones with the same part's name plays it, best first: one that carries skinned
    vertices (where the file has a mesh), then by Blender's prefixes a deform bone (Rigify's DEF-) before a
    plain one (a control) before an original (ORG-) before a mechanism bone (MCH-)."""
    name = skeleton.joint_names[joint]
    rank = next((rank for pattern, rank in _DEFORM_RANK if pattern.match(name)), 1)
    return (0 if skinned is None or joint in skinned else 1, rank)


def _map_by_names(skeleton: Skeleton, skinned: Optional[FrozenSet[int]] = None) -> Tuple[Dict[str, int], Dict[str, int]]:
    """Canonical part -> joint from names; also finger end joints. Missing parts are simply absent.
    `skinned`: the joints that carry vertices (None: not known), preferred where names tie."""
    positions = rest_positions(skeleton)
    words: Dict[Tuple[str, str], List[int]] = {}
    centre: Dict[str, List[int]] = {}
    fingers: Dict[Tuple[str, str], List[Tuple[int, str]]] = {}
    unsided: Dict[str, List[int]] = {}
    helpers: Dict[Tuple[str, str], List[int]] = {}
    for joint, name in enumerate(skeleton.joint_names):
        side, base = split_side(name)
        word = _WORDS.get(base)
        finger = _FINGER_WORD.match(base)
        biped_finger = _BIPED_FINGER.match(base)
        if word is None and not finger and not biped_finger:
            numbered = _numbered_limb(name)
            if numbered is not None:
                side, word = numbered
            else:
                helper = _HELPER.sub("", base)
                if side is not None and helper != base and helper in _WORDS:
                    # FootIK.L: an IK helper's name, taken as the part only where no plain one exists.
                    helpers.setdefault((side, _WORDS[helper]), []).append(joint)
                    continue
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
            kind = {"little": "pinky", "pinkie": "pinky", "mid": "middle"}.get(finger.group(1), finger.group(1))
            fingers.setdefault((side, kind), []).append((joint, base))
        elif biped_finger:
            fingers.setdefault((side, FINGERS[int(biped_finger.group(1))]), []).append((joint, base))
        elif re.match(r"^(?:hand)?f?(thumb|index|middle|ring|pinky)\w*(end|nub|tip)$", base):
            kind = re.match(r"^(?:hand)?f?(thumb|index|middle|ring|pinky)", base).group(1)  # type: ignore[union-attr]
            fingers.setdefault((side, kind + ":end"), []).append((joint, base))
    # Names without a side (a rig that says "UpperArm" twice): the rest geometry decides, +X is left.
    for word, joints in unsided.items():
        if len(joints) == 2:
            left, right = sorted(joints, key=lambda j: -positions[j][0])
            words.setdefault(("l", word), []).append(left)
            words.setdefault(("r", word), []).append(right)

    for key, joints in helpers.items():
        words.setdefault(key, joints)
    bones: Dict[str, int] = {}
    finger_ends: Dict[str, int] = {}

    def first(side: str, *kinds: str) -> Optional[int]:
        found = [j for kind in kinds for j in words.get((side, kind), [])]
        return min(found, key=lambda j: (_preference(skeleton, j, skinned), _depth(skeleton, j))) if found else None

    for side in SIDES:
        _spread_numbered_chain(skeleton, words, side)
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
            if chain:  # the finger's deform chain only (Rigify's DEF-f_index.01.L .. beside ORG- copies)
                best = min(_preference(skeleton, j, skinned) for j in chain)
                chain = [j for j in chain if _preference(skeleton, j, skinned) == best]
            if len(chain) > FINGER_JOINTS:
                chain = chain[-FINGER_JOINTS:]  # a metacarpal first
            for k, joint in enumerate(chain):
                bones[finger_part(finger, k, side)] = joint
            ends = [j for j, base in joints if base.endswith(("end", "nub", "tip"))]
            ends += [j for j, _ in fingers.get((side, finger + ":end"), [])]
            if ends:
                finger_ends[finger + "_" + side] = ends[0]
    def hips_above(joint: int) -> int:
        """The hips: the named hips bone at or above `joint` (the deepest, skinned first), else `joint`."""
        named = [j for j in centre.get("hips", []) if j in _ancestors(skeleton, joint)]
        if not named:
            return joint
        return min(named, key=lambda j: (_preference(skeleton, j, skinned), -_depth(skeleton, j)))

    thighs = [bones.get("thigh_l"), bones.get("thigh_r")]
    if None not in thighs:
        bones["hips"] = hips_above(_common_ancestor(skeleton, thighs[0], thighs[1]))  # type: ignore[arg-type]
    arms = [bones.get("clavicle_l", bones.get("upperarm_l")), bones.get("clavicle_r", bones.get("upperarm_r"))]
    if "hips" in bones and None not in arms:
        chest = _common_ancestor(skeleton, arms[0], arms[1])  # type: ignore[arg-type]
        path = _ancestors(skeleton, chest)
        if bones["hips"] not in path:
            # The thighs hang off a pelvis bone beside the spine (Character Creator's CC_Base_Hip >
            # CC_Base_Pelvis > thighs and CC_Base_Hip > CC_Base_Waist > spine; Daz's hip > pelvis): the hips
            # are the bone that carries both.
            bones["hips"] = hips_above(_common_ancestor(skeleton, bones["hips"], chest))
        floor = min(p[1] for p in positions)  # the rig's lowest joint: a file may stand anywhere in its scene
        tops = [positions[j][1] - floor for j in thighs]  # type: ignore[index]
        if bones["hips"] in path and path.index(bones["hips"]) > 0 and positions[bones["hips"]][1] - floor < 0.5 * min(tops):
            # The bone carrying the legs stands at the floor (Kenney's platformer characters: `root` carries
            # `leg-left`, `leg-right` and `torso`): a root, not hips. The hips are the body above it, at the
            # legs' top; the legs join it in the working skeleton.
            bones["hips"] = path[path.index(bones["hips"]) - 1]
        if bones["hips"] in path:
            spine = list(reversed(path[: path.index(bones["hips"])]))
            # 3ds Max Biped hangs the clavicles off `Bip01 Neck`: a bone named neck there starts the neck.
            neck_at_chest = len(spine) > 1 and split_side(skeleton.joint_names[chest])[1].startswith("neck")
            for k, joint in enumerate(spine[:-1] if neck_at_chest else spine):
                bones["spine_{}".format(k)] = joint
            heads = [j for j in centre.get("head", []) if chest in _ancestors(skeleton, j) and j != chest]
            if heads:
                head = min(heads, key=lambda j: _depth(skeleton, j))
                bones["head"] = head
                neck = list(reversed(_ancestors(skeleton, head)[1: _ancestors(skeleton, head).index(chest)]))
                for k, joint in enumerate(([chest] if neck_at_chest else []) + neck):
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


def map_humanoid(skeleton: Skeleton, source: str = "",
                 feet_from_mesh: Optional[Callable[["HumanoidMap"], Optional[Vec3]]] = None,
                 skinned: Optional[FrozenSet[int]] = None, checked: bool = True) -> HumanoidMap:
    """The humanoid parts of `skeleton`, checked by `mapping_check.check_map` unless `checked` is False
    (`kimodo-rig map` prints a failing map with the check's verdict, for the user to edit). Raises
    KimodoError (naming `source`) when no two arms and two legs can be found.

    Two readings: the rig's shape (`mapping_shape.shape_parts`: chains from the hips to the extremities,
    parts placed along them) and its bone names. The names' map is taken where it passes the check and
    puts each limb part where the shape does (names then tell twins apart: a DEF- bone from its ORG- copy,
    a toe from a metatarsal); otherwise the shape's, with the names' fingers where they hang below its
    hands. The rest geometry decides which way the rig faces and which side is its left. `feet_from_mesh`
    (map -> heel-to-toe direction of the feet's mesh, or None) speaks for feet whose joints say nothing;
    `skinned` (the joints that carry vertices, None where not known) picks the deform bone among bones
    of the same name (a Rigify rig's DEF- bones beside its ORG- copies and controls) and tells the
    extremities that carry the mesh from IK and helper bones."""
    from .mapping_check import check_map, map_problem
    from .mapping_shape import shape_parts

    kimodo = _kimodo_skeleton_name(skeleton)
    if kimodo is not None:
        # Kimodo's skeletons face +Z by definition (model.py); their feet need not say it exactly (SMPL-X's
        # rest feet average 2 degrees off).
        return _map_from_table(skeleton, _kimodo_tables()[kimodo])
    source = source or skeleton.name
    named: Optional[HumanoidMap] = None
    named_error: Optional[KimodoError] = None
    try:
        bones, finger_ends = _map_by_names(skeleton, skinned)
        named = _finish_map(skeleton, bones, finger_ends, source, skinned, feet_from_mesh,
                            "bone names tried: Unreal, Mixamo, Blender/Rigify, CMU, Quaternius, CesiumMan, Kenney, "
                            "VRM, Left/Right words")
    except KimodoError as error:
        named_error = error
    try:
        shape: Optional[Dict[str, int]] = shape_parts(skeleton, source, skinned, _named_left(named) if named else None)
        shape_error: Optional[KimodoError] = None
    except KimodoError as error:
        shape, shape_error = None, error
    named_sound = named is not None and map_problem(named) is None
    if named_sound and shape is not None:
        named = _shape_fills_in(named, shape, bool(skinned))  # type: ignore[arg-type]
        named_sound = map_problem(named) is None
    hmap = named
    # Sound names that put a limb part elsewhere than the shape are overruled only where the mesh tells the
    # extremities from helper bones (without one, an ORG- copy's or a bone axis' tip is a leaf like a toe's).
    if shape is not None and not (named_sound and (not skinned or _limbs_agree(named, shape))):  # type: ignore[arg-type]
        if named is not None:
            for part, joint in named.bones.items():
                hand = shape.get("hand_" + part[-1])
                if part.split("_")[0] in FINGERS and hand is not None and hand in _ancestors(skeleton, joint)[1:]:
                    shape[part] = joint
            shape = _consistent_fingers(shape)
        try:
            by_shape = _finish_map(skeleton, shape, {}, source, skinned, feet_from_mesh, "the rig's shape")
        except KimodoError:
            by_shape = None
        if by_shape is not None and (not named_sound or map_problem(by_shape) is None):
            hmap = by_shape
    if hmap is None:
        raise named_error or shape_error  # type: ignore[misc]
    for message in hmap.warnings:
        LOG.warning("%s", message)
    return check_map(hmap, source) if checked else hmap


def _shape_fills_in(named: HumanoidMap, shape: Dict[str, int], meshed: bool) -> HumanoidMap:
    """The names' map with what the shape sees better: where a mesh tells the head's end (`meshed`; without
    one a face rig's bones continue it), a head below the one the names found (a head the names do not
    know, such as MMD's 頭, below its neck) with the neck up to it; and each hand's fingers where the names
    found none (VRoid's J_Bip_L_Index1 names no side the tables know)."""
    skeleton = named.skeleton
    bones = dict(named.bones)
    head = shape.get("head")
    named_head = "head" in bones and _CENTRE_WORDS.get(split_side(skeleton.joint_names[bones["head"]])[1]) == "head"
    if meshed and head is not None and not named_head and "head" in bones and bones["head"] in _ancestors(skeleton, head)[1:]:
        for part in [p for p in bones if p.startswith("neck_")] + ["head"]:
            bones.pop(part)
        bones.update({p: j for p, j in shape.items() if p.startswith("neck_") or p == "head"})
    for side in SIDES:
        if not any(p.split("_")[0] in FINGERS and p.endswith("_" + side) for p in bones) and \
                shape.get("hand_" + side) == bones.get("hand_" + side):
            bones.update({p: j for p, j in shape.items() if p.split("_")[0] in FINGERS and p.endswith("_" + side)})
    if bones == named.bones:
        return named
    completed = _complete(skeleton, bones, dict(named.anchors), {}, {})
    return replace(named, bones=completed.bones, ends=completed.ends)


# How near (of the character's height) a named limb joint must lie to the shape's for the two to agree:
# a twin at the same place (DEF- beside ORG-) agrees, the next joint of the chain (>= 5 %) does not.
AGREE = 0.02


def _limbs_agree(named: HumanoidMap, shape: Dict[str, int]) -> bool:
    """Each limb part the shape places is one the names put at the same place."""
    positions = rest_positions(named.skeleton)
    heights = [p[1] for p in positions]
    tolerance = AGREE * (max(heights) - min(heights))
    for side in SIDES:
        for part in ("thigh", "calf", "foot", "upperarm", "lowerarm", "hand"):
            key = part + "_" + side
            if key not in shape:
                continue
            if key not in named.bones:
                return False
            a, b = positions[shape[key]], positions[named.bones[key]]
            if sum((a[i] - b[i]) ** 2 for i in range(3)) > tolerance ** 2:
                return False
    return True


def _consistent_fingers(bones: Dict[str, int]) -> Dict[str, int]:
    """Each finger's joints numbered from _01 without gaps (names may have given a finger in part)."""
    for side in SIDES:
        for finger in FINGERS:
            present = [k for k in range(FINGER_JOINTS) if finger_part(finger, k, side) in bones]
            if present and present != list(range(len(present))):
                for k in present:
                    bones.pop(finger_part(finger, k, side))
    return bones


def _finish_map(skeleton: Skeleton, bones: Dict[str, int], finger_ends: Dict[str, int], source: str,
                skinned: Optional[FrozenSet[int]], feet_from_mesh: Optional[Callable[["HumanoidMap"], Optional[Vec3]]],
                tried: str) -> HumanoidMap:
    """A map from part -> joint: one-bone limbs, segment ends, facing and sides from the geometry, and the
    warnings it gives (in `warnings`, logged by the caller for the map it takes)."""
    bones = dict(bones)
    whole = _one_bone_limbs(skeleton, bones)
    _check_complete(bones, source, tried, whole)
    hmap = replace(_complete(skeleton, bones, {}, {}, finger_ends), whole_limbs=whole)
    unaimed = [p + "_" + s for s in SIDES for p in ("upperarm", "lowerarm", "thigh", "calf") if p + "_" + s in hmap.bones
               and p + "_" + s not in hmap.ends]
    if unaimed:
        # Never a direction from nothing: such a bone keeps its rest direction and says so.
        message = ("{}: {} {} no child joint, no skinned vertices and no stated bone axis: kept at {} rest "
                   "direction".format(source, ", ".join(hmap.joint_name(p) for p in unaimed),
                                      "has" if len(unaimed) == 1 else "have", "its" if len(unaimed) == 1 else "their"))
        hmap = replace(hmap, warnings=hmap.warnings + (message,))
    if skinned:
        stranded = _stranded_skinned(hmap, skinned)
        if stranded:
            names = [skeleton.joint_names[j] for j in stranded]
            message = ("{}: {} skinned bone{} outside the bones the map drives (the hips {} and the mapped parts, "
                       "with all below them) will not move: {}{} (deform bones that hang off control bones: parent "
                       "each to the deform bone above it before exporting)".format(
                           source, len(names), "" if len(names) == 1 else "s", hmap.joint_name("hips"),
                           ", ".join(names[:6]), ", ..." if len(names) > 6 else ""))
            hmap = replace(hmap, warnings=hmap.warnings + (message,))
    return _with_geometry(hmap, source, check_sides=True, feet_from_mesh=feet_from_mesh)


_TWIN = re.compile(r"^(def|org)([-_.].+)$", re.I)


def twin_followers(names: Sequence[str], moving: Sequence[str]) -> Dict[str, str]:
    """{bone: the bone it follows}: Rigify's DEF-x and ORG-x are one bone twice (in Blender the DEF copies
    the ORG's transform by a constraint, which glTF does not keep), so of the two the one the retarget does
    not move follows the one it moves (its world = the leader's world times their bind offset). A rig
    whose DEF- bones hang off ORG- bones (the deform bones not one tree) then moves as one body."""
    driven = set(moving)
    by_lower = {name.lower(): name for name in driven}
    followers: Dict[str, str] = {}
    for name in names:
        match = _TWIN.match(name)
        if name in driven or not match:
            continue
        twin = ("org" if match.group(1).lower() == "def" else "def") + match.group(2)
        leader = by_lower.get(twin.lower())
        if leader is not None:
            followers[name] = leader
    return followers


def _add_subtrees(skeleton: Skeleton, starts, into: set) -> None:
    stack = list(starts)
    while stack:
        joint = stack.pop()
        if joint not in into:
            into.add(joint)
            stack.extend(skeleton.children(joint))


def _stranded_skinned(hmap: HumanoidMap, skinned: FrozenSet[int]) -> List[int]:
    """Skinned joints that nothing the retarget drives moves: neither a mapped part nor below one, nor
    below a twin that follows one (`twin_followers`), nor above the hips (a root bone carries the root
    motion)."""
    skeleton = hmap.skeleton
    names = skeleton.joint_names
    moving: set = set()
    _add_subtrees(skeleton, hmap.bones.values(), moving)
    _add_subtrees(skeleton, [names.index(name) for name in twin_followers(names, [names[j] for j in moving])], moving)
    above = set(_ancestors(skeleton, hmap.bones["hips"]))
    return [j for j in sorted(skinned, key=lambda j: (_depth(skeleton, j), j)) if j not in moving and j not in above]


def _one_bone_limbs(skeleton: Skeleton, bones: Dict[str, int]) -> Tuple[str, ...]:
    """Kenney-style limbs: one bone from shoulder to hand (`arm-left`) or hip to foot (`leg-left`). The
    bone is the upper arm or thigh spanning the whole limb; a leg's end (its tip joint, or its lowest
    child) is its foot, so the character has something to stand on."""
    positions = rest_positions(skeleton)
    whole = []
    for side in SIDES:
        if "upperarm_" + side in bones and not any(p + "_" + side in bones for p in ("lowerarm", "hand")):
            whole.append("upperarm_" + side)
        thigh = bones.get("thigh_" + side)
        foot = bones.get("foot_" + side)
        if thigh is not None and "calf_" + side not in bones and (foot is None or skeleton.parents[foot] == thigh):
            children = skeleton.children(thigh)
            if children:
                whole.append("thigh_" + side)
                if foot is None:
                    bones["foot_" + side] = min(children, key=lambda c: positions[c][1])
        elif "calf_" + side in bones and not any(p + "_" + side in bones for p in ("foot", "toe")):
            # A shin without a foot joint: where it ends (its tip from its vertices) is what it stands on.
            children = skeleton.children(bones["calf_" + side])
            if children:
                bones["foot_" + side] = min(children, key=lambda c: positions[c][1])
    return tuple(whole)


def _check_complete(bones: Dict[str, int], source: str, tried: str, whole_limbs: Sequence[str] = ()) -> None:
    spanned = {"lowerarm_" + p[-1] for p in whole_limbs if p.startswith("upperarm")}
    spanned |= {"calf_" + p[-1] for p in whole_limbs if p.startswith("thigh")}
    missing = [p + "_" + s for s in SIDES for p in ("thigh", "calf", "upperarm", "lowerarm")
               if p + "_" + s not in bones and p + "_" + s not in spanned]
    if "hips" not in bones and not missing:
        missing.append("hips")
    if missing:
        raise KimodoError("{}: no humanoid legs and arms found (missing {}); {}".format(source, ", ".join(missing), tried))
    if not any(p + "_" + s in bones for s in SIDES for p in ("foot", "toe")):
        raise KimodoError("{}: no feet found (missing foot_l, foot_r): the legs end at {} with nothing below "
                          "to stand on".format(source, "the shins"))


def known_parts() -> Tuple[str, ...]:
    """Every canonical part a map may name, in the order maps are printed."""
    parts = ["hips"] + ["spine_{}".format(k) for k in range(6)] + ["neck_{}".format(k) for k in range(3)] + ["head"]
    for side in SIDES:
        parts += [p + "_" + side for p in ARM_PARTS + ("thigh", "calf", "foot", "toe")]
    for side in SIDES:
        parts += [finger_part(f, k, side) for f in FINGERS for k in range(FINGER_JOINTS)]
    return tuple(parts)


def map_from_parts(skeleton: Skeleton, parts: Dict[str, str], source: str, checked: bool = True) -> HumanoidMap:
    """The map a table states (canonical part -> bone name: a user's --map file, a VRM humanoid table).
    Unknown parts or bones, a table without two arms and two legs, and (unless `checked` is False) a map
    the geometry refutes (`mapping_check.check_map`) are one KimodoError naming `source`. The "check" entry
    `kimodo-rig map --json` adds is not a part."""
    known = set(known_parts())
    index = {name: j for j, name in enumerate(skeleton.joint_names)}
    bones: Dict[str, int] = {}
    for part, name in parts.items():
        if part == CHECK_FIELD:
            continue
        if part not in known:
            raise KimodoError("{}: unknown part {!r} (parts are hips, spine_0.., neck_0.., head, clavicle_l, upperarm_l, "
                              "lowerarm_l, hand_l, thigh_l, calf_l, foot_l, toe_l, index_01_l.. and the _r side)".format(source, part))
        if not isinstance(name, str) or name not in index:
            raise KimodoError("{}: {}: no bone named {!r} in {}".format(source, part, name, skeleton.name))
        bones[part] = index[name]
    for prefix in ("spine", "neck"):
        numbers = sorted(int(p.rsplit("_", 1)[1]) for p in bones if p.startswith(prefix + "_"))
        if numbers != list(range(len(numbers))):
            raise KimodoError("{}: {} parts must run {}_0, {}_1, ... without gaps".format(source, prefix, prefix, prefix))
    whole = _one_bone_limbs(skeleton, bones)
    _check_complete(bones, source, "the table names them", whole)
    hmap = _with_geometry(replace(_complete(skeleton, bones, {}, {}, {}), whole_limbs=whole), source, check_sides=False)
    from .mapping_check import check_map

    return check_map(hmap, source) if checked else hmap


def parts_by_name(hmap: HumanoidMap) -> Dict[str, str]:
    """The map as `map_from_parts` reads it: canonical part -> bone name, in the printed order."""
    return in_printed_order({part: hmap.joint_name(part) for part in hmap.bones})


def in_printed_order(parts: Dict[str, str]) -> Dict[str, str]:
    """A part -> bone table with its parts in the order maps are printed (unknown parts last)."""
    order = {part: k for k, part in enumerate(known_parts())}
    return {part: parts[part] for part in sorted(parts, key=lambda p: order.get(p, len(order)))}


# --- which way the rig faces, and which side is its left ----------------------------------------------

def measure_forward(hmap: HumanoidMap) -> Optional[Vec3]:
    """The rig's facing at rest from its feet, heel to toe (the foot joint to its toe joint, or to the
    foot's own children), both sides averaged, on the floor plane; None when the feet say nothing."""
    positions = rest_positions(hmap.skeleton)
    total = [0.0, 0.0, 0.0]
    for side in SIDES:
        if not hmap.has("foot_" + side):
            continue
        foot = hmap.bones["foot_" + side]
        ends: Tuple[int, ...] = (hmap.bones["toe_" + side],) if hmap.has("toe_" + side) else hmap.skeleton.children(foot)
        if not ends:
            continue
        start = positions[hmap.anchor("foot_" + side)]
        for j in ends:
            vector = subtract(positions[j], start)
            total[0] += vector[0] / len(ends)
            total[2] += vector[2] / len(ends)
    size = math.hypot(total[0], total[2])
    if size < 1e-6:
        return None
    return (total[0] / size, 0.0, total[2] / size)


def _named_left(hmap: HumanoidMap) -> Optional[Vec3]:
    """Right to left as the names have it: the hip line (thighs), else the shoulder line."""
    positions = rest_positions(hmap.skeleton)
    for part in ("thigh", "upperarm"):
        if hmap.has(part + "_l") and hmap.has(part + "_r"):
            vector = subtract(positions[hmap.anchor(part + "_l")], positions[hmap.anchor(part + "_r")])
            if math.hypot(vector[0], vector[2]) > 1e-6:
                return vector
    return None


def _swap_sides(hmap: HumanoidMap) -> HumanoidMap:
    def swapped(part: str) -> str:
        if part.endswith("_l"):
            return part[:-2] + "_r"
        if part.endswith("_r"):
            return part[:-2] + "_l"
        return part

    return replace(hmap, bones={swapped(p): j for p, j in hmap.bones.items()},
                   anchors={swapped(p): j for p, j in hmap.anchors.items()},
                   ends={swapped(p): j for p, j in hmap.ends.items()})


def _with_geometry(hmap: HumanoidMap, source: str, *, check_sides: bool,
                   feet_from_mesh: Optional[Callable[[HumanoidMap], Optional[Vec3]]] = None) -> HumanoidMap:
    """The map with its measured facing; with `check_sides`, left and right taken from the geometry
    (+X-of-the-rig = up x forward) where the names disagree, with one warning."""
    forward = measure_forward(hmap)
    named_left = _named_left(hmap)
    if forward is None:
        if named_left is None:
            return hmap
        # No foot joints to measure: the named hip line gives the facing's axis (forward = left x up), and
        # the feet's mesh (when there is one) which way along it.
        size = math.hypot(named_left[0], named_left[2])
        forward = (-named_left[2] / size, 0.0, named_left[0] / size)
        toes = feet_from_mesh(hmap) if feet_from_mesh is not None else None
        if not (check_sides and toes is not None and forward[0] * toes[0] + forward[2] * toes[2] < 0.0):
            return replace(hmap, forward=forward)
        hmap = _sides_from_geometry(hmap, source)  # the hip line named the viewer's way faces backwards
        return replace(hmap, forward=(-forward[0], 0.0, -forward[2]))
    hmap = replace(hmap, forward=forward)
    if check_sides and named_left is not None:
        geometric_left = (forward[2], 0.0, -forward[0])
        if named_left[0] * geometric_left[0] + named_left[2] * geometric_left[2] < 0.0:
            hmap = _sides_from_geometry(hmap, source)
    return hmap


def _sides_from_geometry(hmap: HumanoidMap, source: str) -> HumanoidMap:
    message = ("{}: the bones named left are on the character's right (viewer-side names?); "
               "sides are taken from the rig's geometry".format(source))  # logged by map_humanoid
    return replace(_swap_sides(hmap), warnings=hmap.warnings + (message,))


def facing_label(forward: Vec3) -> str:
    """"+Z", "-Z", "+X", "-X" within 5 degrees of an axis, else the yaw from +Z in degrees."""
    yaw = math.degrees(math.atan2(forward[0], forward[2]))
    for angle, label in ((0.0, "+Z"), (90.0, "+X"), (-90.0, "-X"), (180.0, "-Z"), (-180.0, "-Z")):
        if abs(yaw - angle) <= 5.0:
            return label
    return "{:.0f} deg".format(yaw)


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
        arm_end = next(p + "_" + side for p in ("hand", "lowerarm", "upperarm") if hmap.has(p + "_" + side))
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
    span: Tuple[int, ...] = ()  # a one-bone limb: the source joints its direction runs between (start, end)


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
        elif part in target.whole_limbs and source.has(part):
            # The whole limb follows the source's root-to-end line (shoulder to wrist, hip to ankle).
            end = ("hand_" if part.startswith("upperarm") else "foot_") + part[-1]
            source_joint = source.bones[part]
            if source.has(end):
                span = (source.anchor(part), source.anchor(end))
                links.append(Link(part, joint, (source_joint, source_joint), 0.0, part, True, span))
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
    """The yaw taking the source's measured facing onto the target's (identity when both face +Z)."""
    # Always about +Y (quat_between would pick any axis for opposite directions: a rig facing -Z).
    turn = math.atan2(target.forward[0], target.forward[2]) - math.atan2(source.forward[0], source.forward[2])
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
            wanted = (subtract(source_positions[link.span[1]], source_positions[link.span[0]]) if link.span
                      else smap.segment(link.source_part, source_positions))
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
