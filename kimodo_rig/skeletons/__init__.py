"""Kimodo's built-in skeletons (data from nv-tlabs/kimodo, Apache-2.0; see NOTICE) and lookup by joint
count or joint names."""
from __future__ import annotations

import json
import os
from functools import lru_cache
TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    from typing import Dict, Optional, Sequence

from ..model import Skeleton

_FOLDER = os.path.dirname(os.path.realpath(__file__))

BUILTIN = ("smplx22", "somaskel30", "g1skel34", "somaskel77")
LABELS = {"smplx22": "SMPL-X", "somaskel30": "SOMA", "somaskel77": "SOMA", "g1skel34": "G1"}
# Each one's joint count (its data says so too; a test holds them equal), so that finding a skeleton by
# its count reads only that one's JSON, not all four (a one-clip job's largest input after the clip).
JOINT_COUNTS = {"smplx22": 22, "somaskel30": 30, "g1skel34": 34, "somaskel77": 77}

# SMPL-X joints under Unreal mannequin names (--names mannequin). SOMA keeps its Mixamo-style names and
# G1 its own: they already read as what they are in an engine.
MANNEQUIN_NAMES = {
    "smplx22": {
        "pelvis": "pelvis", "spine1": "spine_01", "spine2": "spine_02", "spine3": "spine_03",
        "neck": "neck_01", "head": "head",
        "left_collar": "clavicle_l", "left_shoulder": "upperarm_l", "left_elbow": "lowerarm_l",
        "left_wrist": "hand_l", "left_hip": "thigh_l", "left_knee": "calf_l", "left_ankle": "foot_l",
        "left_foot": "ball_l",
        "right_collar": "clavicle_r", "right_shoulder": "upperarm_r", "right_elbow": "lowerarm_r",
        "right_wrist": "hand_r", "right_hip": "thigh_r", "right_knee": "calf_r", "right_ankle": "foot_r",
        "right_foot": "ball_r",
    },
}


@lru_cache(maxsize=None)
def data(name: str) -> Dict:
    """The whole JSON record of a built-in skeleton (offsets, semantic groups, export extras)."""
    with open(os.path.join(_FOLDER, name + ".json"), encoding="utf-8") as handle:
        return json.load(handle)


@lru_cache(maxsize=None)
def load(name: str) -> Skeleton:
    record = data(name)
    offsets = tuple(tuple(float(c) for c in offset) for offset in record["rest_local_offsets_m"])
    return Skeleton(
        name=name,
        joint_names=tuple(record["joint_names"]),
        parents=tuple(int(p) for p in record["parents"]),
        rest_offsets=offsets,  # type: ignore[arg-type]
        label=LABELS[name],
    )


def by_joint_count(count: int) -> Optional[Skeleton]:
    for name in BUILTIN:
        if JOINT_COUNTS[name] == count and len(data(name)["joint_names"]) == count:
            return load(name)
    return None


def by_joint_names(names: Sequence[str]) -> Optional[Skeleton]:
    """The built-in skeleton with exactly these joint names, in any order."""
    wanted = set(names)
    for name in BUILTIN:
        if set(data(name)["joint_names"]) == wanted:
            return load(name)
    return None


def display_names(skeleton: Skeleton, style: str) -> Sequence[str]:
    """Joint names for output: style "native" keeps Kimodo's, "mannequin" renames SMPL-X to Unreal's."""
    if style == "mannequin" and skeleton.name in MANNEQUIN_NAMES:
        table = MANNEQUIN_NAMES[skeleton.name]
        return tuple(table.get(n, n) for n in skeleton.joint_names)
    return skeleton.joint_names
