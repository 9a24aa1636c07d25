"""Biovision hierarchy (.bvh): read any BVH, write Kimodo's SOMA layout or a clean BVH for any skeleton.

How a BVH is understood here:
- A joint's local transform is T(translation) R(rotation channels in the declared order, intrinsic: the
  first listed axis is outermost). Its translation is its OFFSET, or its position channels where it has
  them: position channels REPLACE the OFFSET, they are not added to it (Kimodo's Hips has OFFSET
  (0, 100, 0) and position channels holding the absolute root; Blender reads and writes them the same way).
- End Sites are bone ends, not joints.
- Units: BVH does not state them. Kimodo skeletons (recognised by joint names and bone lengths) are
  centimetres, as Kimodo writes them. The CMU skeleton (recognised by its LHipJoint/RHipJoint joints, when
  that unit gives it a human size) is in the CMU mocap unit, (1/0.45) inch = 5.644 cm, as cgspeed's BVH
  conversions of the CMU database keep it (its pelvis then stands 0.95 m high). Anything else is metres
  when the zero-channel figure spans at most 17 units (a figure up to 17 m), else centimetres (from
  17 cm); `read(..., units=)` overrides. We write centimetres.
- Axes: BVH is Y up. Kimodo skeletons are also recognised in Z up (Blender's export writes its armature
  space) and turned back; other rigs are read in the axes the file has.
- Kimodo's SOMA BVH has a `Root` wrapper above `Hips`; it is folded into Hips (so is any ROOT whose one
  child carries the motion in its position channels). Its default rest is the BONES-SEED rest (each joint's
  frame turned by standard_t_pose_global_offsets_rots); reading turns it back into Kimodo's identity rest,
  so both rests read to the same somaskel77 motion.

One idea carries every skeleton: the BVH's zero-channel pose has every joint frame aligned with the world,
so a skeleton whose rest global rotation is D[j] (identity for Kimodo rests, O[j]^T for the BONES-SEED
rest, the rest global rotation for other rigs) maps as L_bvh[j] = D[parent] L[j] D[j]^-1 and
bvh_offset[j] = D[parent] rest_offset[j].
"""
from __future__ import annotations

import logging
import math
import re
from array import array
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .. import skeletons
from ..errors import KimodoError
from ..files import read_input, write_bytes_atomic
from ..model import Motion, Skeleton
from ..ops.expand import soma30_to_soma77
from ..ops.fk import rest_global_rotations
from ..rotations import (
    IDENTITY, Quat, Vec3, add, euler_to_quat, length, quat_conjugate, quat_multiply, quat_rotate, quat_to_euler,
    scale, subtract,
)
from .limits import frame_rate, frame_rate_of_period
from .options import DEFAULT, WriteOptions

NAME = "bvh"
DESCRIPTION = "Biovision BVH: Kimodo's SOMA layout (BONES-SEED or T-pose rest) or a clean BVH for any rig"
EXTENSIONS = (".bvh",)

CENTIMETRE = 0.01
CMU_UNIT = 0.0254 / 0.45  # CMU ASF/AMC length unit, metres
CMU_JOINT_NAMES = {"lhipjoint", "rhipjoint"}  # the CMU skeleton's own names (cgspeed conversions keep them)
CMU_FIGURE_M = (0.5, 3.0)  # CMU names at a human size in CMU units (not a CMU rig rewritten in cm)
METRES_UP_TO = 17.0  # a figure this many units tall or less is in metres, else centimetres (17 m vs 17 cm)
OFFSET_TOLERANCE_M = 1e-4  # bone lengths this close to a built-in skeleton's are that skeleton
TRANSLATION_TOLERANCE_M = 1e-3  # position channels this close to the OFFSET are not a moving joint
Z_UP_TO_Y_UP = (-math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5))  # -90 deg about X: (x, y, z) -> (x, z, -y)
KIMODO_HIPS_OFFSET_CM = (0.0, 100.0, 0.0)  # Kimodo writes this when the pelvis rests at the origin
ROTATION_ORDER = "ZYX"  # what Kimodo writes; every order is read
MAX_NESTING = 256  # joint nesting depth refused beyond (a human rig is about 30 deep)

_CHANNELS = {
    "xposition": ("position", 0), "yposition": ("position", 1), "zposition": ("position", 2),
    "xrotation": ("rotation", "X"), "yrotation": ("rotation", "Y"), "zrotation": ("rotation", "Z"),
}
_TOKEN = re.compile(r"[{}]|[^\s{}]+")
_COUNT = re.compile(r"[0-9]{1,9}")  # ASCII digits only: str.isdigit() takes '²', which int() refuses
MAX_CHANNELS = 6  # three positions and three rotations
_LOG = logging.getLogger("kimodo_rig")


class BvhJoint:
    """One JOINT/ROOT as declared: offset and channels in file units, first value column in a frame."""

    __slots__ = ("name", "parent", "offset", "channels", "first_value", "end_sites", "line", "_plan")

    def __init__(self, name: str, parent: int, line: int) -> None:
        self.name = name
        self.parent = parent
        self.offset: Vec3 = (0.0, 0.0, 0.0)
        self.channels: Tuple[str, ...] = ()
        self.first_value = 0
        self.end_sites: List[Vec3] = []
        self.line = line
        self._plan: Optional[Tuple] = None  # local_transform's channel plan, for these channels and columns

    @property
    def rotation_order(self) -> str:
        return "".join(_CHANNELS[c.lower()][1] for c in self.channels if _CHANNELS[c.lower()][0] == "rotation")

    @property
    def has_position(self) -> bool:
        return any(_CHANNELS[c.lower()][0] == "position" for c in self.channels)

    def local_transform(self, values: Sequence[float]) -> Tuple[Vec3, Quat]:
        """Translation (file units) and rotation of this joint for one frame's values."""
        plan = self._plan
        if plan is None or plan[0] is not self.channels or plan[1] != self.first_value:
            kinds = [(_CHANNELS[channel.lower()], self.first_value + i) for i, channel in enumerate(self.channels)]
            plan = self._plan = (self.channels, self.first_value, self.rotation_order,
                                 tuple((axis, column) for (kind, axis), column in kinds if kind == "position"),
                                 tuple(column for (kind, _), column in kinds if kind == "rotation"))
        order, positions, rotations = plan[2:]
        translation = list(self.offset)
        for axis, column in positions:
            translation[axis] = values[column]
        rotation = euler_to_quat(order, [values[column] for column in rotations]) if rotations else IDENTITY
        return (translation[0], translation[1], translation[2]), rotation


class BvhDocument:
    """A parsed BVH: joints in file order (parent before child), frames of channel values, frame time."""

    def __init__(self, joints: List[BvhJoint], frames: List[List[float]], frame_time: float) -> None:
        self.joints = joints
        self.frames = frames
        self.frame_time = frame_time

    def children(self, joint: int) -> List[int]:
        return [j for j, bvh_joint in enumerate(self.joints) if bvh_joint.parent == joint]


# ----------------------------------------------------------------------------------------------- parsing

def parse(text: str, source: str) -> BvhDocument:
    """Parse BVH text (tabs or spaces, any line ending); every problem is a KimodoError naming `source`."""
    lines = text.splitlines()
    motion_line = next((i for i, line in enumerate(lines) if line.strip().upper() == "MOTION"), None)
    tokens = [(token, number + 1) for number, line in enumerate(lines[:motion_line]) for token in _TOKEN.findall(line)]
    joints = _parse_hierarchy(tokens, source, len(lines))
    if motion_line is None:
        raise KimodoError("{}: no MOTION section (truncated?)".format(source))
    value_count = 0
    for joint in joints:
        joint.first_value = value_count
        value_count += len(joint.channels)
    frame_count, frame_time, first_data_line = _parse_motion_header(lines, motion_line, source)
    frames: List[List[float]] = []
    number = first_data_line
    while number < len(lines) and len(frames) < frame_count:
        line = lines[number]
        number += 1
        if not line.strip():
            continue
        if number == len(lines) and not text.endswith(("\n", "\r")) and len(line.split()) < value_count:
            raise KimodoError("{}: line {}: file ends inside frame {} ({} of {} values; truncated?)".format(
                source, number, len(frames) + 1, len(line.split()), value_count))
        frames.append(_parse_frame(line, number, value_count, source))
    if len(frames) < frame_count:
        raise KimodoError("{}: {} frames declared, {} found (truncated?)".format(source, frame_count, len(frames)))
    extra = sum(1 for line in lines[number:] if line.strip())
    if extra:
        _LOG.warning("%s: %d lines after the %d declared frames ignored", source, extra, frame_count)
    return BvhDocument(joints, frames, frame_time)


def _parse_hierarchy(tokens: List[Tuple[str, int]], source: str, line_count: int) -> List[BvhJoint]:
    position = 0
    joints: List[BvhJoint] = []
    depths = [0]  # nesting depth of each joint, root first

    def take(what: str) -> Tuple[str, int]:
        nonlocal position
        if position >= len(tokens):
            raise KimodoError("{}: line {}: file ends inside the HIERARCHY, expected {} (truncated?)".format(
                source, tokens[-1][1] if tokens else line_count, what))
        token = tokens[position]
        position += 1
        return token

    def number(what: str) -> float:
        token, line = take(what)
        value = _float(token)
        if value is None:
            if _is_number(token):
                raise KimodoError("{}: line {}: {} is not a finite number".format(source, line, what))
            raise KimodoError("{}: line {}: expected a number for {}, got {!r}".format(source, line, what, token))
        return value

    def expect(word: str) -> None:
        token, line = take(repr(word))
        if token.upper() != word.upper():
            raise KimodoError("{}: line {}: expected {!r}, got {!r}".format(source, line, word, token))

    def block(parent: int, keyword_line: int) -> None:
        name_parts = []
        while True:
            token, line = take("'{'")
            if token == "{":
                break
            name_parts.append(token)
        if not name_parts:
            raise KimodoError("{}: line {}: joint without a name".format(source, keyword_line))
        joint = BvhJoint(" ".join(name_parts), parent, keyword_line)
        index = len(joints)
        joints.append(joint)
        while True:
            token, line = take("'}'")
            keyword = token.upper()
            if keyword == "}":
                return
            if keyword == "OFFSET":
                joint.offset = (number("OFFSET x"), number("OFFSET y"), number("OFFSET z"))
            elif keyword == "CHANNELS":
                count_token, count_line = take("a channel count")
                channel_count = _count(count_token)
                if channel_count is None or channel_count > MAX_CHANNELS:
                    raise KimodoError("{}: line {}: expected a channel count (0 to {}), got {!r}".format(
                        source, count_line, MAX_CHANNELS, count_token))
                channels = []
                for _ in range(channel_count):
                    channel, channel_line = take("a channel name")
                    if channel.lower() not in _CHANNELS:
                        if channel_line != count_line or channel in "{}" or channel.upper() in ("JOINT", "END", "OFFSET"):
                            raise KimodoError("{}: line {}: CHANNELS {} for {} lists {} names".format(
                                source, count_line, count_token, joint.name, len(channels)))
                        raise KimodoError("{}: line {}: unknown channel {!r} for {}".format(
                            source, channel_line, channel, joint.name))
                    channels.append(channel)
                joint.channels = tuple(channels)
            elif keyword == "JOINT":
                depth = depths[index] + 1
                if depth > MAX_NESTING:  # each level is a Python call: refuse before the stack runs out
                    raise KimodoError("{}: line {}: joints nested more than {} deep".format(source, line, MAX_NESTING))
                depths.append(depth)
                block(index, line)
            elif keyword == "END":
                expect("Site")
                while True:  # a name after 'End Site' is sometimes written; it means nothing
                    token, _ = take("'{'")
                    if token == "{":
                        break
                expect("OFFSET")
                joint.end_sites.append((number("OFFSET x"), number("OFFSET y"), number("OFFSET z")))
                expect("}")
            else:
                raise KimodoError("{}: line {}: unexpected {!r} in {}".format(source, line, token, joint.name))

    if not tokens or tokens[0][0].upper() != "HIERARCHY":
        raise KimodoError("{}: not a BVH file (no HIERARCHY at the start)".format(source))
    position = 1
    token, line = take("ROOT")
    if token.upper() != "ROOT":
        raise KimodoError("{}: line {}: expected ROOT, got {!r}".format(source, line, token))
    block(-1, line)
    if position < len(tokens):
        token, line = tokens[position]
        if token.upper() == "ROOT":
            raise KimodoError("{}: line {}: more than one ROOT is not supported".format(source, line))
        raise KimodoError("{}: line {}: unexpected {!r} after the hierarchy".format(source, line, token))
    return joints


def _parse_motion_header(lines: List[str], motion_line: int, source: str) -> Tuple[int, float, int]:
    """Frames and Frame Time after MOTION; returns (frames, frame time, index of the first data line)."""
    found: Dict[str, Tuple[str, int]] = {}
    number = motion_line + 1
    while number < len(lines) and len(found) < 2:
        line = lines[number].strip()
        number += 1
        if not line:
            continue
        match = re.match(r"(?i)(frames|frame\s+time)\s*:\s*(\S*)\s*$", line)
        if not match:
            raise KimodoError("{}: line {}: expected 'Frames:' and 'Frame Time:', got {!r}".format(source, number, line[:40]))
        found[match.group(1).lower().split()[-1]] = (match.group(2), number)
    if len(found) < 2:
        raise KimodoError("{}: line {}: MOTION lacks 'Frames:' or 'Frame Time:' (truncated?)".format(source, number))
    frames_text, frames_line = found["frames"]
    time_text, time_line = found["time"]
    frame_count = _count(frames_text)
    if frame_count is None:
        raise KimodoError("{}: line {}: bad frame count {!r}".format(source, frames_line, frames_text))
    frame_time = _float(time_text)
    if frame_time is None or not frame_time > 0.0:
        raise KimodoError("{}: line {}: bad frame time {!r}".format(source, time_line, time_text))
    if frame_count == 0:
        raise KimodoError("{}: line {}: the clip has no frames".format(source, frames_line))
    return frame_count, frame_time, number


def _count(text: str) -> Optional[int]:
    """A count written in ASCII digits (at most nine), else None."""
    return int(text) if _COUNT.fullmatch(text) else None


def _float(text: str) -> Optional[float]:
    """A finite number as BVH writes it (ASCII, no '_' digit grouping, no 'nan' or 'inf'), else None.
    float() alone takes Arabic-Indic digits, '1_0' and 'infinity'."""
    if not _is_number(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def _parse_frame(line: str, number: int, expected: int, source: str) -> List[float]:
    words = line.split()
    if len(words) != expected:
        raise KimodoError("{}: line {}: expected {} values, got {}".format(source, number, expected, len(words)))
    try:
        # What float() takes beyond BVH's numbers; _is_number says which. Whitespace that is not ASCII
        # (a no-break space) separates values, as str.split and the hierarchy's tokens have it.
        if "_" in line or not line.isascii() and not all(map(str.isascii, words)):
            raise ValueError
        values = [float(word) for word in words]
    except ValueError:
        bad = next(w for w in words if not _is_number(w))
        raise KimodoError("{}: line {}: {!r} is not a number".format(source, number, bad)) from None
    if not all(map(math.isfinite, values)):
        column = next(i for i, v in enumerate(values) if not math.isfinite(v))
        raise KimodoError("{}: line {}: value {} is {}".format(source, number, column + 1, words[column]))
    return values


def _is_number(word: str) -> bool:
    """Number syntax as BVH writes it, finite or not (ASCII, no '_' grouping)."""
    if not word.isascii() or "_" in word:
        return False
    try:
        float(word)
    except ValueError:
        return False
    return True


# ----------------------------------------------------------------------------------------------- reading

def read(path, *, fps: Optional[float] = None, units: Optional[float] = None) -> Motion:
    """Read any BVH into a Motion: Kimodo skeletons onto the built-in skeleton (SOMA in either rest),
    anything else onto a skeleton made from the file. `units` = metres per file unit (default: see module
    docstring); `fps` overrides the file's frame time."""
    source = str(path)
    data = read_input(path, source)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("latin-1")  # old exporters write joint names in a local code page
    document = parse(text, source)
    rate = frame_rate(fps, source) if fps else _rate(document.frame_time, source)
    name = Path(path).stem
    builtin = _match_builtin(document, units, source)
    if builtin is not None:
        skeleton, wrapper, frame, rest_rotations, unit = builtin
        return _to_motion(document, skeleton, wrapper, (frame, rest_rotations), unit, rate, name, source)
    unit = units if units else _guess_unit(document, source)
    wrapper = _moving_wrapper(document, unit)
    skeleton = _file_skeleton(document, wrapper, unit, name, source)
    return _to_motion(document, skeleton, wrapper, None, unit, rate, name, source)


def _rate(frame_time: float, source: str) -> float:
    """Frames per second; 1/0.0083333 is CMU's 120 fps, not 120.0005."""
    rate = frame_rate_of_period(frame_time, source, "Frame Time")
    return float(round(rate)) if abs(rate - round(rate)) < 0.01 else rate


def _wrapper_candidate(document: BvhDocument) -> Optional[int]:
    """The ROOT if it has exactly one child joint (a possible `Root` wrapper above the hips), else None."""
    return 0 if len(document.children(0)) == 1 else None


def _match_builtin(document: BvhDocument, units: Optional[float], source: str):
    """(skeleton, wrapper joint or None, file frame, BVH rest rotations, unit) when the file holds a Kimodo
    skeleton: same joint names and parents, bone lengths of one of its rests in centimetres (or metres)."""
    names = [joint.name for joint in document.joints]
    wrapper = _wrapper_candidate(document)
    for skip in ((wrapper,) if wrapper is not None else ()) + (None,):
        kept = [n for i, n in enumerate(names) if i != skip]
        skeleton = skeletons.by_joint_names(kept)
        if skeleton is None or len(kept) != skeleton.joint_count:
            continue
        bvh_index = {n: i for i, n in enumerate(names)}
        parents_agree = all(
            (skeleton.parents[j] < 0 and document.joints[bvh_index[n]].parent in (-1, skip))
            or (skeleton.parents[j] >= 0
                and document.joints[bvh_index[n]].parent == bvh_index[skeleton.joint_names[skeleton.parents[j]]])
            for j, n in enumerate(skeleton.joint_names))
        if not parents_agree:
            continue
        for frame, rest_rotations in _known_rests(skeleton):
            expected = bvh_offsets(skeleton, rest_rotations)
            for unit in ((units,) if units else (CENTIMETRE, 1.0)):
                worst = max(
                    length([document.joints[bvh_index[n]].offset[k] * unit - expected[j][k] for k in range(3)])
                    for j, n in enumerate(skeleton.joint_names) if skeleton.parents[j] >= 0)
                if worst <= OFFSET_TOLERANCE_M:
                    return skeleton, skip, frame, rest_rotations, unit
        _LOG.warning("%s: joint names are Kimodo's %s but the bone lengths differ: read as a rig of its own",
                     source, skeleton.name)
    return None


def _known_rests(skeleton: Skeleton) -> List[Tuple[Quat, List[Quat]]]:
    """(file frame F, BVH rest rotations D' in F) of every way a Kimodo skeleton is written: rests identity
    (T-pose / zero pose) and, for SOMA 77, BONES-SEED; frames Y up (ours) and Z up (what Blender exports:
    its armature space). A file in frame F: D' = F^-1 D, and the root's rotation and position get F."""
    rests = [[IDENTITY] * skeleton.joint_count]
    if skeleton.name == "somaskel77":
        rests.insert(0, seed_rest_rotations())
    return [(frame, [quat_multiply(quat_conjugate(frame), d) for d in rest])
            for frame in (IDENTITY, Z_UP_TO_Y_UP) for rest in rests]


def seed_rest_rotations() -> List[Quat]:
    """D[j] of the BONES-SEED rest: G_kimodo = G_seed O^T (kimodo/skeleton/transforms.py), so at zero
    channels (G_seed = identity) Kimodo's global rotation is O[j]^T."""
    offsets = skeletons.data("somaskel77")["standard_t_pose_global_offsets_rots"]["quat_xyzw"]
    return [quat_conjugate(q) for q in offsets]


def seed_offsets_cm() -> List[Vec3]:
    """The BONES-SEED rig's OFFSETs exactly as Kimodo writes them: differences of its bvh_joints positions
    (equal to bvh_offsets(somaskel77, seed_rest_rotations()) within 3e-8 m)."""
    skeleton = skeletons.load("somaskel77")
    positions = skeletons.data("somaskel77")["bvh_joints"]["positions_m"]
    return [
        tuple((positions[j][k] - positions[p][k]) / CENTIMETRE for k in range(3)) if p >= 0 else (0.0, 0.0, 0.0)
        for j, p in enumerate(skeleton.parents)
    ]  # type: ignore[misc]


def bvh_offsets(skeleton: Skeleton, rest_rotations: Sequence[Quat]) -> List[Vec3]:
    """Each joint's BVH OFFSET in metres for a BVH rest with global rotations D: D[parent] rest_offset."""
    return [
        quat_rotate(rest_rotations[parent], offset) if parent >= 0 else tuple(offset)
        for offset, parent in zip(skeleton.rest_offsets, skeleton.parents)
    ]


def _figure_size(document: BvhDocument) -> float:
    """Largest extent, in file units, of the zero-channel pose including End Sites."""
    positions: List[Vec3] = []
    for joint in document.joints:
        base = positions[joint.parent] if joint.parent >= 0 else (0.0, 0.0, 0.0)
        positions.append(add(base, joint.offset) if joint.parent >= 0 else (0.0, 0.0, 0.0))
    points = positions + [add(positions[i], end) for i, joint in enumerate(document.joints) for end in joint.end_sites]
    return max(max(p[k] for p in points) - min(p[k] for p in points) for k in range(3))


def _guess_unit(document: BvhDocument, source: str) -> float:
    names = {joint.name.lower() for joint in document.joints}
    size = _figure_size(document)
    if CMU_JOINT_NAMES <= names and CMU_FIGURE_M[0] <= size * CMU_UNIT <= CMU_FIGURE_M[1]:
        return CMU_UNIT
    unit = 1.0 if size <= METRES_UP_TO else CENTIMETRE
    _LOG.info("%s: read in %s (a %.2f m figure; BVH does not state its unit)",
              source, "metres" if unit == 1.0 else "centimetres", size * unit)
    return unit


def _moving_wrapper(document: BvhDocument, unit: float) -> Optional[int]:
    """The ROOT when it only wraps one child whose position channels carry the motion (Kimodo's Root
    above Hips): that child becomes the skeleton's root. A ROOT whose child keeps its OFFSET stays a joint."""
    wrapper = _wrapper_candidate(document)
    if wrapper is None:
        return None
    child = document.children(wrapper)[0]
    if not document.joints[child].has_position:
        return None
    return wrapper if _largest_translation(document, child) * unit > TRANSLATION_TOLERANCE_M else None


def _largest_translation(document: BvhDocument, joint: int) -> float:
    """How far (file units) a joint's position channels take it from its OFFSET over the clip."""
    bvh_joint = document.joints[joint]
    return max(length(subtract(bvh_joint.local_transform(values)[0], bvh_joint.offset))
               for values in document.frames)


def _file_skeleton(document: BvhDocument, wrapper: Optional[int], unit: float, name: str, source: str) -> Skeleton:
    kept = [j for j in range(len(document.joints)) if j != wrapper]
    index_of = {bvh: i for i, bvh in enumerate(kept)}
    parents = []
    offsets = []
    for bvh in kept:
        joint = document.joints[bvh]
        parent = joint.parent if joint.parent != wrapper or wrapper is None else -1
        parents.append(index_of[parent] if parent >= 0 else -1)
        offset = joint.offset
        if parent < 0 and wrapper is not None:
            offset = add(document.joints[wrapper].offset, offset)
        offsets.append(scale(offset, unit))
    names = [document.joints[j].name for j in kept]
    seen = set()
    for duplicate in names:  # one pass: a rig of 60,000 joints is checked as fast as one of 60
        if duplicate in seen:
            raise KimodoError("{}: joint name {!r} is used twice".format(source, duplicate))
        seen.add(duplicate)
    return Skeleton(name, tuple(names), tuple(parents), tuple(offsets))  # type: ignore[arg-type]


def _to_motion(document: BvhDocument, skeleton: Skeleton, wrapper: Optional[int],
               rest: Optional[Tuple[Quat, Sequence[Quat]]], unit: float, rate: float, name: str, source: str) -> Motion:
    """Frames -> Motion. Joint j of `skeleton` is the BVH joint of the same name; the wrapper (if any) is
    folded into the root; `rest` = (file frame F, rest rotations D) maps BVH locals to identity-rest locals
    as L = D[parent]^-1 L_bvh D[j], with F in front of the root (None: take the locals as they are)."""
    bvh_index = {joint.name: i for i, joint in enumerate(document.joints)}
    order = [bvh_index[n] for n in skeleton.joint_names]
    parents = skeleton.parents
    _warn_moving_joints(document, order[1:], unit, source)
    rotations = array("d")
    roots = array("d")
    for values in document.frames:
        for j, bvh in enumerate(order):
            translation, rotation = document.joints[bvh].local_transform(values)
            if parents[j] < 0:
                position = scale(translation, unit)
                if wrapper is not None:
                    wrapper_translation, wrapper_rotation = document.joints[wrapper].local_transform(values)
                    position = add(scale(wrapper_translation, unit), quat_rotate(wrapper_rotation, position))
                    rotation = quat_multiply(wrapper_rotation, rotation)
                roots.extend(position)
            if rest is not None:
                frame, rest_rotations = rest
                parent_rest = rest_rotations[parents[j]] if parents[j] >= 0 else quat_conjugate(frame)
                rotation = quat_multiply(quat_multiply(quat_conjugate(parent_rest), rotation), rest_rotations[j])
                if parents[j] < 0:
                    roots[-3:] = array("d", quat_rotate(frame, roots[-3:]))
            rotations.extend(rotation)
    return Motion(skeleton, rotations, roots, rate, name=name)


def _warn_moving_joints(document: BvhDocument, joints: Sequence[int], unit: float, source: str) -> None:
    """Bones have fixed lengths in the model: say so when a non-root joint's position channels move it."""
    moving = [(document.joints[j].name, _largest_translation(document, j) * unit)
              for j in joints if document.joints[j].has_position]
    moving = [(n, d) for n, d in moving if d > TRANSLATION_TOLERANCE_M]
    if moving:
        worst = max(moving, key=lambda item: item[1])
        _LOG.warning("%s: position channels move %d joint(s) off their OFFSET (most: %s, %.3f m); "
                     "bones keep their length here, so they stay at the OFFSET", source, len(moving), worst[0], worst[1])


# ----------------------------------------------------------------------------------------------- writing

def encode(motion: Motion, *, rest: str = "seed") -> str:
    """BVH text. SOMA (30 is expanded to 77 as Kimodo does): Kimodo's own layout, a `Root` wrapper above
    Hips, centimetres, ZYX channels, in the BONES-SEED rest (`rest="seed"`) or the T-pose (`"tpose"`).
    Any other skeleton: its own joints, centimetres, ZYX, zero channels = the skeleton's rest pose."""
    if rest not in ("seed", "tpose"):
        raise ValueError("rest must be 'seed' or 'tpose'")
    if motion.skeleton.name == "somaskel30":
        motion = soma30_to_soma77(motion)
    skeleton = motion.skeleton
    soma = skeleton.name == "somaskel77"
    if soma:
        rest_rotations = seed_rest_rotations() if rest == "seed" else [IDENTITY] * skeleton.joint_count
    else:
        rest_rotations = rest_global_rotations(skeleton)
    if soma and rest == "seed":
        offsets = seed_offsets_cm()
    else:
        offsets = [scale(o, 1.0 / CENTIMETRE) for o in bvh_offsets(skeleton, rest_rotations)]
    if soma and not any(offsets[0]):
        offsets[0] = KIMODO_HIPS_OFFSET_CM
    names = [re.sub(r"\s+", "_", n) for n in skeleton.joint_names]
    order = _depth_first(skeleton)
    rotation_channels = " ".join(axis + "rotation" for axis in ROTATION_ORDER)
    root_channels = "CHANNELS 6 Xposition Yposition Zposition " + rotation_channels
    lines = ["HIERARCHY"]
    depth_of: Dict[int, int] = {}
    if soma:
        lines += ["ROOT Root", "{", "  OFFSET 0.0 0.0 0.0", "  " + root_channels]
    open_joints: List[int] = []
    for joint in order:
        parent = skeleton.parents[joint]
        while open_joints and open_joints[-1] != parent:
            closed = open_joints.pop()
            lines.append("  " * depth_of[closed] + "}")
        depth = (depth_of[parent] + 1) if parent >= 0 else (1 if soma else 0)
        depth_of[joint] = depth
        indent = "  " * depth
        keyword = "JOINT" if (parent >= 0 or soma) else "ROOT"
        lines.append("{}{} {}".format(indent, keyword, names[joint]))
        lines.append(indent + "{")
        lines.append("{}  OFFSET {}".format(indent, " ".join(_number(c) for c in offsets[joint])))
        lines.append(indent + "  " + (root_channels if parent < 0 else "CHANNELS 3 " + rotation_channels))
        open_joints.append(joint)
    while open_joints:
        lines.append("  " * depth_of[open_joints.pop()] + "}")
    if soma:
        lines.append("}")
    lines += ["MOTION", "Frames: {}".format(motion.frame_count), "Frame Time: {!r}".format(1.0 / motion.fps)]
    angles = _channel_angles(motion, rest_rotations, order)
    wrapper_values = "0.0 0.0 0.0 0.0 0.0 0.0 " if soma else ""
    for frame in range(motion.frame_count):
        root = scale(motion.root_position(frame), 1.0 / CENTIMETRE)
        values = [_number(c) for c in root]
        values += [_number(a) for a in angles[frame]]
        lines.append(wrapper_values + " ".join(values))
    return "\n".join(lines) + "\n"


def _depth_first(skeleton: Skeleton) -> List[int]:
    """Joints in the order a BVH lists them: each joint followed by its subtree, children by index."""
    order: List[int] = []
    stack = [j for j in reversed(range(skeleton.joint_count)) if skeleton.parents[j] < 0]
    while stack:
        joint = stack.pop()
        order.append(joint)
        stack.extend(reversed(skeleton.children(joint)))
    return order


def _channel_angles(motion: Motion, rest_rotations: Sequence[Quat], order: Sequence[int]) -> List[List[float]]:
    """Per frame, the Euler angles (degrees, ROTATION_ORDER) of every joint in `order`, each channel kept
    continuous over time (as numpy.unwrap does in Kimodo's writer)."""
    parents = motion.skeleton.parents
    inverse_rest = [quat_conjugate(q) for q in rest_rotations]
    previous: Optional[List[float]] = None
    frames = []
    for frame in range(motion.frame_count):
        local = motion.frame_rotations(frame)
        angles: List[float] = []
        for joint in order:
            parent_rest = rest_rotations[parents[joint]] if parents[joint] >= 0 else IDENTITY
            bvh_rotation = quat_multiply(quat_multiply(parent_rest, local[joint]), inverse_rest[joint])
            angles.extend(quat_to_euler(ROTATION_ORDER, bvh_rotation))
        if previous is not None:
            angles = [a + 360.0 * round((p - a) / 360.0) for a, p in zip(angles, previous)]
        previous = angles
        frames.append(angles)
    return frames


def _number(value: float) -> str:
    """Six decimals (1e-8 m in centimetres, 2e-8 rad in degrees), trailing zeros dropped."""
    text = ("%.6f" % value).rstrip("0")
    text = text + "0" if text.endswith(".") else text
    return "0.0" if text == "-0.0" else text


def write(motion: Motion, path, options: WriteOptions = DEFAULT) -> None:
    write_bytes_atomic(path, encode(motion, rest=options.rest).encode("utf-8"))
