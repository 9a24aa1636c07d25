"""Kimodo's own constraints.json (what `generate.py --constraints` and the demo load and save): a JSON list
of entries, each `{"type", "frame_indices": [K]}` plus, by type, `smooth_root_2d` [K, 2] and optional
`global_root_heading` [K, 2] (root2d), or `local_joints_rot` [K, J, 3], `root_positions` [K, 3], optional
`smooth_root_2d` [K, 2] and, for `end-effector`, `joint_names` (the pose types)."""
from __future__ import annotations

import json
from typing import Any, Dict, Tuple

from ..errors import KimodoError
from .fields import FieldError, count, describe, kind as kind_of, listed, load_json, pose_rows, read_entries, require, rows
from .model import END_EFFECTOR_NAMES, SKELETON_OF_JOINT_COUNT, TYPES, ConstraintSet, Entry

FORMAT = "kimodo"


def recognises(data: Any) -> bool:
    return isinstance(data, list)


def read(path) -> ConstraintSet:
    return from_json(load_json(path), str(path))


def from_json(data: Any, path: str) -> ConstraintSet:
    if not isinstance(data, list):
        raise KimodoError("{}: not a Kimodo constraints list (a JSON list of entries)".format(path))
    entries, problems = read_entries(data, path, _entry)
    return ConstraintSet(path, FORMAT, tuple(entries), tuple(problems))


def frame_list(value: Any, name: str) -> Tuple[int, ...]:
    frames = []
    seen = set()
    for i, item in enumerate(listed(value, name)):
        frame = count(item, "{}[{}]".format(name, i))
        if frame in seen:
            raise FieldError("frame {} is listed twice".format(frame))
        seen.add(frame)
        frames.append(frame)
    if not frames:
        raise FieldError("{} is empty".format(name))
    return tuple(frames)


def _entry(index: int, record: Any) -> Entry:
    if not isinstance(record, dict):
        raise FieldError("not an object ({})".format(describe(record)))
    kind = kind_of(record, TYPES)
    frames = frame_list(require(record, "frame_indices"), "frame_indices")
    k = len(frames)
    smooth = rows(record["smooth_root_2d"], "smooth_root_2d", 2, k) if "smooth_root_2d" in record else ()
    if kind == "root2d":
        if not smooth:
            require(record, "smooth_root_2d")
        heading = rows(record["global_root_heading"], "global_root_heading", 2, k) if "global_root_heading" in record else ()
        return Entry(index, kind, frames, smooth_root=smooth, heading=heading)  # type: ignore[arg-type]
    rotations = pose_rows(require(record, "local_joints_rot"), "local_joints_rot", k)
    joints = len(rotations[0])
    if joints not in SKELETON_OF_JOINT_COUNT:
        raise FieldError("local_joints_rot has {} joints: no Kimodo skeleton has {} (22 SMPL-X, 30 or 77 SOMA, 34 G1)".format(joints, joints))
    roots = rows(require(record, "root_positions"), "root_positions", 3, k)
    names: Tuple[str, ...] = ()
    if kind == "end-effector":
        names = tuple(listed(require(record, "joint_names"), "joint_names"))
        if not names:
            raise FieldError("joint_names is empty")
        for name in names:
            if name not in END_EFFECTOR_NAMES:
                raise FieldError("joint_names: unknown name {} (known: {})".format(describe(name), ", ".join(END_EFFECTOR_NAMES)))
    return Entry(index, kind, frames, rotations=rotations, root_positions=roots,  # type: ignore[arg-type]
                 smooth_root=smooth, joint_names=names)  # type: ignore[arg-type]


def entry_json(entry: Entry) -> Dict[str, Any]:
    record: Dict[str, Any] = {"type": entry.type, "frame_indices": list(entry.frames)}
    if entry.type == "root2d":
        record["smooth_root_2d"] = [list(p) for p in entry.smooth_root]
        if entry.heading:
            record["global_root_heading"] = [list(h) for h in entry.heading]
        return record
    record["local_joints_rot"] = [[list(v) for v in pose] for pose in entry.rotations]
    record["root_positions"] = [list(p) for p in entry.root_positions]
    if entry.smooth_root:
        record["smooth_root_2d"] = [list(p) for p in entry.smooth_root]
    if entry.type == "end-effector":
        record["joint_names"] = list(entry.joint_names)
    return record


def encode(constraints: ConstraintSet) -> bytes:
    """The file's bytes: Kimodo's layout, numbers as Python writes them (they read back bit for bit)."""
    text = json.dumps([entry_json(e) for e in constraints.entries], indent=1, allow_nan=False)
    return (text + "\n").encode("utf-8")
