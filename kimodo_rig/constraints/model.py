"""The constraints model both file formats read into and write from.

Conventions, stated once (Kimodo's, kimodo/constraints.py and docs/user_guide/constraints.md):
- Frames are absolute over the whole (multi-prompt) timeline, 30 a second, from 0.
- Kimodo's frame: +Y up, +Z forward, +X the character's left, metres. A generation starts with its smooth
  root at x = z = 0, facing +Z.
- A pose is one rotation vector (axis times angle, radians) per joint, relative to its parent; Kimodo's
  skeletons rest at identity, so this is also the change from rest. `root_positions` is the hips' world
  position (y the absolute height).
- The smooth root is Kimodo's smoothed hips path on the ground, (x, z). A heading is (cos a, sin a) of
  Kimodo's heading angle a = atan2(d.z, -d.x), d the vector from the left hip to the right hip: 0 faces +Z,
  positive turns towards +X.
- What a type pins (kimodo/skeleton/base.py expand_joint_names): `fullbody` every joint's position, the
  smooth root, the hips height and the heading; `left-hand` and the other end-effector types their chain's
  positions (the hand or foot and its end joints) and the chain base's rotation, plus the smooth root, the
  hips height and the heading; `end-effector` the same for each name in `joint_names` (Hips: the root
  alone); `root2d` the smooth root and, when given, the heading.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from .. import skeletons
from ..model import Skeleton
from ..ops.fk import pose_globals
from ..rotations import Quat, Vec3, rotation_vector_to_quat

FPS = 30.0
TYPES = ("root2d", "fullbody", "left-hand", "right-hand", "left-foot", "right-foot", "end-effector")
POSE_TYPES = TYPES[1:]
END_EFFECTOR_NAMES = ("LeftFoot", "RightFoot", "LeftHand", "RightHand", "Hips")
BASE_OF_TYPE = {"left-hand": "LeftHand", "right-hand": "RightHand", "left-foot": "LeftFoot", "right-foot": "RightFoot"}
MOST_KEYFRAMES = 20  # Kimodo's advice: fewer constrained frames than this per type (root2d excepted)
SKELETON_OF_JOINT_COUNT = {22: "smplx22", 30: "somaskel30", 34: "g1skel34", 77: "somaskel77"}
_CHAIN_GROUP = {"LeftFoot": "left_foot_chain", "RightFoot": "right_foot_chain",
                "LeftHand": "left_hand_chain", "RightHand": "right_hand_chain"}

Point2 = Tuple[float, float]


@dataclass(frozen=True)
class Entry:
    """One constraint entry: a type on some frames, with per-frame data (tuples as long as `frames`).
    `label` is the type as the file names it (Animotive's `2d-root` is the model's `root2d`)."""

    index: int  # position in the file's list
    type: str
    frames: Tuple[int, ...]
    rotations: Tuple[Tuple[Vec3, ...], ...] = ()  # rotation vectors [frame][joint]
    root_positions: Tuple[Vec3, ...] = ()
    smooth_root: Tuple[Point2, ...] = ()  # (x, z)
    heading: Tuple[Point2, ...] = ()  # (cos, sin)
    joint_names: Tuple[str, ...] = ()  # end-effector: which of END_EFFECTOR_NAMES
    positions: Tuple[Vec3, ...] = ()  # Animotive hand/foot: the target position alone
    planted: Tuple[Optional[bool], ...] = ()
    label: str = ""

    @property
    def name(self) -> str:
        return self.label or self.type

    @property
    def joint_count(self) -> int:
        return len(self.rotations[0]) if self.rotations else 0

    def base_names(self) -> Tuple[str, ...]:
        """The END_EFFECTOR_NAMES this entry pins (fullbody: all but Hips' separate meaning; root2d: none)."""
        if self.type in BASE_OF_TYPE:
            return (BASE_OF_TYPE[self.type],)
        if self.type == "end-effector":
            return self.joint_names
        return ()


@dataclass(frozen=True)
class Request:
    """The rest of an Animotive Kimodo request: what to generate, besides the constraints."""

    model: str
    texts: Tuple[str, ...]
    durations: Tuple[float, ...]  # seconds, one per text
    num_samples: int = 1
    diffusion_steps: int = 100
    seed: Optional[int] = None
    bvh_standard_tpose: Optional[bool] = None

    @property
    def total_frames(self) -> int:
        return int(round(sum(self.durations) * FPS))


@dataclass(frozen=True)
class Problem:
    """One line of `check`: an error (the file would fail or mislead Kimodo) or a warning."""

    severity: str  # "error" or "warning"
    path: str
    message: str
    entry: Optional[int] = None
    type: Optional[str] = None

    def line(self) -> str:
        where = "" if self.entry is None else "entry {} ({}): ".format(self.entry, self.type)
        text = "{}: {}{}".format(self.path, where, self.message)
        return text if self.severity == "error" else "warning: " + text

    def to_json(self) -> Dict[str, object]:
        return {"severity": self.severity, "entry": self.entry, "type": self.type, "message": self.message,
                "line": self.line()}


@dataclass(frozen=True)
class ConstraintSet:
    """What a constraints file holds. `problems` are those found while reading (entries with an error are
    left out of `entries`); `check` adds the rest."""

    path: str
    format: str  # "kimodo" or "animotive"
    entries: Tuple[Entry, ...]
    problems: Tuple[Problem, ...] = ()
    request: Optional[Request] = None

    def joint_counts(self) -> List[int]:
        """The joint counts the poses use; an Animotive request is SOMA 77 whatever it holds."""
        if self.format == "animotive":
            return [77]
        return sorted({e.joint_count for e in self.entries if e.rotations})


def skeleton_name(joint_counts: Sequence[int]) -> Optional[str]:
    """The built-in skeleton a set of entries is posed on (SOMA 30 and 77 together: 77), or None."""
    names = [SKELETON_OF_JOINT_COUNT[c] for c in joint_counts if c in SKELETON_OF_JOINT_COUNT]
    if not names:
        return None
    return "somaskel77" if "somaskel77" in names else names[0]


def skeleton_label(joint_counts: Sequence[int]) -> str:
    if not joint_counts:
        return "any (root2d only)"
    names = [SKELETON_OF_JOINT_COUNT.get(c) for c in joint_counts]
    label = skeletons.LABELS.get(names[0] or "", "unknown")
    return "{} ({} joints)".format(label, " and ".join(str(c) for c in joint_counts))


def chain_joints(skeleton: Skeleton, base: str) -> List[int]:
    """Joints whose positions an end-effector name pins on a built-in skeleton (Hips: the root)."""
    if base == "Hips":
        return [0]
    group = skeletons.data(skeleton.name)["semantic_groups"][_CHAIN_GROUP[base]]
    return [skeleton.index(name) for name in group]


def pinned_joints(entry: Entry, skeleton: Skeleton) -> List[int]:
    if entry.type == "fullbody":
        return list(range(skeleton.joint_count))
    joints: List[int] = []
    for base in entry.base_names():
        joints.extend(j for j in chain_joints(skeleton, base) if j not in joints)
    return joints


def pose_rotations(rotation_vectors: Sequence[Sequence[float]]) -> List[Quat]:
    return [rotation_vector_to_quat(v) for v in rotation_vectors]


def entry_poses(entry: Entry, skeleton: Skeleton) -> List[Tuple[List[Quat], List[Vec3]]]:
    """Global rotations and world positions of the entry's pose at each of its frames (forward kinematics
    of the rotation vectors from the root position, as Kimodo's from_dict does)."""
    return [pose_globals(skeleton, pose_rotations(rotations), root)
            for rotations, root in zip(entry.rotations, entry.root_positions)]
