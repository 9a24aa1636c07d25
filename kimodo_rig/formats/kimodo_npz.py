"""Kimodo's NPZ, both layouts, on every Kimodo skeleton (chosen by joint count).

- Current layout (kimodo/exports/motion_io.py): local_rot_mats [T,J,3,3], root_positions [T,3],
  global_rot_mats [T,J,3,3], posed_joints [T,J,3], foot_contacts bool, smooth_root_pos [T,3],
  global_root_heading [T,2]; float32. foot_contacts is [T,4] (left heel, left toe, right heel, right toe:
  what Kimodo's models label) or [T,6] (left heel, toe, toe end, then the right: every joint of the
  somaskel77 foot chain, as the current exporter labels them). The model keeps Kimodo's four channels, so
  a [T,6] file reads with each toe in contact when its toe or its toe end is.
- Older layout (the demo clips' motion.npz): posed_joints, global_rot_mats, foot_contacts; the local
  rotation is G[parent]^T G[j] and the root position is posed_joints[:, 0].
The writer writes the current layout with all seven keys, a SOMA 30 motion expanded to SOMA 77 first, as
Kimodo's export does.
"""
from __future__ import annotations

import math
from array import array
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .. import skeletons
from ..errors import KimodoError
from ..files import read_input
from ..model import Motion
from ..ops import derived_channels
from ..ops.expand import soma30_to_soma77
from ..ops.fk import global_rotations_and_positions
from ..rotations import matrices_to_quats, quat_to_matrix
from . import npy
from .limits import frame_rate, parse_json
from .options import DEFAULT, WriteOptions

NAME = "kimodo-npz"
DESCRIPTION = "Kimodo NPZ (local_rot_mats, root_positions, posed_joints, foot_contacts, ...)"
EXTENSIONS = (".npz",)
CURRENT_KEYS = ("local_rot_mats", "root_positions")
OLDER_KEYS = ("posed_joints", "global_rot_mats")
KEY_ORDER = ("local_rot_mats", "global_rot_mats", "posed_joints", "root_positions", "smooth_root_pos",
             "foot_contacts", "global_root_heading")  # as Kimodo's files list them
ORTHONORMAL_TOLERANCE = 1e-3
# [T,6] channels (heel, toe, toe end per side) behind each of the model's four (heel, toe per side).
SIX_TO_FOUR = ((0,), (1, 2), (3,), (4, 5))


def holds(names: Sequence[str]) -> bool:
    """True when arrays with these names are a Kimodo NPZ of either layout."""
    present = set(names)
    return set(CURRENT_KEYS) <= present or set(OLDER_KEYS) <= present


def recognises(path) -> bool:
    """For the registry: is this .npz a Kimodo NPZ (judged by its array names)?"""
    return holds(npy.npz_names(path))


def matrices(path, name: str, values: Sequence[float], count: int) -> List[Tuple[float, ...]]:
    """`count` row-major 3x3 rotation matrices from flat values, each as its 9 values (m00, m01, ... m22);
    refuses non-finite values or non-rotations (columns orthonormal within ORTHONORMAL_TOLERANCE, no
    mirror), naming the first matrix that holds either. The test is written out in the loop (it runs per
    joint per frame), each abs(x) <= t as -t <= x <= t (the same for every float, NaN included)."""
    flat = values[:count * 9]
    items = list(zip(*[iter(flat.tolist() if isinstance(flat, array) else flat)] * 9))
    finite = math.isfinite(sum(flat))  # else a NaN or an infinity somewhere (or finite values past 1e308)
    high = ORTHONORMAL_TOLERANCE
    low = -high
    for index, m in enumerate(items):
        if not finite and not all(math.isfinite(c) for c in m):
            raise KimodoError("{}: {}: matrix {} holds a value that is not a finite number".format(path, name, index))
        a, b, c, d, e, f, g, h, i = m
        if not (low <= a * a + d * d + g * g - 1.0 <= high and low <= b * b + e * e + h * h - 1.0 <= high
                and low <= c * c + f * f + i * i - 1.0 <= high and low <= a * b + d * e + g * h <= high
                and low <= a * c + d * f + g * i <= high and low <= b * c + e * f + h * i <= high
                and not a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g) < 0.0):
            raise KimodoError("{}: {}: matrix {} is not a rotation".format(path, name, index))
    return items


def local_rotations_from_globals(globals_: Sequence[Tuple[float, ...]],
                                 parents: Sequence[int]) -> List[Tuple[float, ...]]:
    """Each joint's rotation in its parent's frame, G[parent]^T G[joint] (flat row-major 3x3s, frame after
    frame): matrix_multiply(matrix_transpose(...), ...) written out, with its sum()'s leading 0 kept
    (0 + -0.0 is 0.0: the quaternions come out the same to the sign of a zero)."""
    joints = len(parents)
    result = []
    for base in range(0, len(globals_), joints):
        for joint, parent in enumerate(parents):
            g = globals_[base + joint]
            if parent < 0:
                result.append(g)
                continue
            p0, p1, p2, p3, p4, p5, p6, p7, p8 = globals_[base + parent]
            g0, g1, g2, g3, g4, g5, g6, g7, g8 = g
            result.append((0 + p0 * g0 + p3 * g3 + p6 * g6, 0 + p0 * g1 + p3 * g4 + p6 * g7,
                           0 + p0 * g2 + p3 * g5 + p6 * g8, 0 + p1 * g0 + p4 * g3 + p7 * g6,
                           0 + p1 * g1 + p4 * g4 + p7 * g7, 0 + p1 * g2 + p4 * g5 + p7 * g8,
                           0 + p2 * g0 + p5 * g3 + p8 * g6, 0 + p2 * g1 + p5 * g4 + p8 * g7,
                           0 + p2 * g2 + p5 * g5 + p8 * g8))
    return result


def require_finite(path, name: str, values: Sequence[float]) -> None:
    for index, value in enumerate(values):
        if not math.isfinite(value):
            raise KimodoError("{}: {}: value {} is not a finite number".format(path, name, index))


def _shape(path, arrays: Dict[str, npy.NpyArray], name: str, expected: Sequence[Optional[int]]):
    shape = arrays[name].shape
    if len(shape) != len(expected) or any(e is not None and e != s for e, s in zip(expected, shape)):
        wanted = "[" + ", ".join("?" if e is None else str(e) for e in expected) + "]"
        raise KimodoError("{}: {} has shape {}, expected {}".format(path, name, list(shape), wanted))
    return shape


def _skeleton_for(path, joints: int):
    skeleton = skeletons.by_joint_count(joints)
    if skeleton is None:
        raise KimodoError("{}: {} joints matches no Kimodo skeleton (22, 30, 34 or 77)".format(path, joints))
    return skeleton


def _prompt_beside(path: Path) -> str:
    """The (first) prompt of a demo clip folder's meta.json ("text", or "texts" for multi-prompt clips),
    if there is one beside the NPZ."""
    meta = path.parent / "meta.json"
    try:
        record = parse_json(read_input(meta), str(meta), "meta.json") if meta.is_file() else {}
        text = record.get("text") or (record.get("texts") or [""])[0]
    except (KimodoError, ValueError, AttributeError, IndexError, TypeError, KeyError):  # no prompt, not an error
        return ""
    return text.strip().splitlines()[0].strip() if isinstance(text, str) and text.strip() else ""


def read(path, *, fps: Optional[float] = None) -> Motion:
    names = npy.npz_names(path)
    if not holds(names):
        raise KimodoError("{}: not a Kimodo NPZ (needs local_rot_mats and root_positions, or posed_joints "
                          "and global_rot_mats; has {})".format(path, ", ".join(names) or "no arrays"))
    current = set(CURRENT_KEYS) <= set(names)
    wanted = CURRENT_KEYS + ("foot_contacts",) if current else OLDER_KEYS + ("foot_contacts",)
    arrays = npy.read_npz(path, wanted, numbers=True)
    if current:
        frames, joints = _shape(path, arrays, "local_rot_mats", (None, None, 3, 3))[:2]
        _shape(path, arrays, "root_positions", (frames, 3))
        locals_ = matrices(path, "local_rot_mats", arrays["local_rot_mats"].values, frames * joints)
        roots = array("d", arrays["root_positions"].values)
        require_finite(path, "root_positions", roots)
        skeleton = _skeleton_for(path, joints)
        rotations = array("d", matrices_to_quats(locals_))
    else:
        frames, joints = _shape(path, arrays, "posed_joints", (None, None, 3))[:2]
        _shape(path, arrays, "global_rot_mats", (frames, joints, 3, 3))
        globals_ = matrices(path, "global_rot_mats", arrays["global_rot_mats"].values, frames * joints)
        posed = arrays["posed_joints"].values
        require_finite(path, "posed_joints", posed)
        skeleton = _skeleton_for(path, joints)
        rotations = array("d", matrices_to_quats(local_rotations_from_globals(globals_, skeleton.parents)))
        roots = array("d")
        for frame in range(frames):
            base = frame * joints
            roots.extend(posed[base * 3:base * 3 + 3])
    if frames == 0:
        raise KimodoError("{}: holds no frames".format(path))
    contacts = None
    if "foot_contacts" in arrays:
        shape = arrays["foot_contacts"].shape
        if len(shape) != 2 or shape[0] != frames or shape[1] not in (4, 6):
            raise KimodoError("{}: foot_contacts has shape {}, expected [{}, 4] or [{}, 6]".format(
                path, list(shape), frames, frames))
        contacts = array("d", arrays["foot_contacts"].values)
        require_finite(path, "foot_contacts", contacts)
        if shape[1] == 6:
            contacts = array("d", (max(contacts[f * 6 + k] for k in toes) if len(toes) > 1 else contacts[f * 6 + toes[0]]
                                   for f in range(frames) for toes in SIX_TO_FOUR))
    source = Path(path)
    name = source.parent.resolve().name if source.stem == "motion" else source.stem
    return Motion(skeleton, rotations, roots, frame_rate(fps, str(path)) if fps else 30.0, foot_contacts=contacts,
                  name=name, prompt=_prompt_beside(source))


def write(motion: Motion, path, options: WriteOptions = DEFAULT) -> None:
    if motion.skeleton.name not in skeletons.BUILTIN:
        raise KimodoError("{}: a Kimodo NPZ holds only Kimodo skeletons, not {} ({} joints)".format(
            path, motion.skeleton.label, motion.joint_count))
    if motion.skeleton.name == "somaskel30":
        motion = soma30_to_soma77(motion)
    npy.write_npz(path, arrays_of(motion))


def arrays_of(motion: Motion) -> List:
    """The seven named float32/bool arrays of Kimodo's current NPZ layout, in Kimodo's order."""
    skeleton = motion.skeleton
    frames, joints = motion.frame_count, motion.joint_count
    global_rotations, positions = global_rotations_and_positions(motion)
    local_values = array("d")
    for frame in range(frames):
        for q in motion.frame_rotations(frame):
            local_values.extend(c for row in quat_to_matrix(q) for c in row)
    global_values = array("d", (c for frame in global_rotations for q in frame for row in quat_to_matrix(q) for c in row))
    posed = array("d", (c for frame in positions for p in frame for c in p))
    roots = [motion.root_position(frame) for frame in range(frames)]
    if motion.foot_contacts is not None:
        contacts = array("d", (1.0 if c >= 0.5 else 0.0 for c in motion.foot_contacts))
    else:
        contacts = array("d", derived_channels.detect_foot_contacts(skeleton, positions, motion.fps))
    smooth = derived_channels.smooth_root_path(roots)
    headings = derived_channels.root_headings(skeleton, positions)
    by_name = {
        "posed_joints": npy.float32((frames, joints, 3), posed),
        "global_rot_mats": npy.float32((frames, joints, 3, 3), global_values),
        "local_rot_mats": npy.float32((frames, joints, 3, 3), local_values),
        "foot_contacts": npy.NpyArray("|b1", (frames, 4), contacts),
        "smooth_root_pos": npy.float32((frames, 3), (c for p in smooth for c in p)),
        "root_positions": npy.float32((frames, 3), motion.root_positions),
        "global_root_heading": npy.float32((frames, 2), (c for h in headings for c in h)),
    }
    return [(key, by_name[key]) for key in KEY_ORDER]
