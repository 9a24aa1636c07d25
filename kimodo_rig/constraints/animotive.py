"""The Animotive Kimodo request: `{"model", "meta": {"texts", "durations" (seconds, one per text),
"num_samples", "diffusion_steps", "seed"}, "constraints": [{"type", "frame", "pose"}, ...]}` and optional
`bvh_standard_tpose`. Constraint types: `fullbody` (`pose.rotvecs` [77, 3] on SOMA 77, `pose.root_pos`
[3]), `left-hand`, `right-hand`, `left-foot`, `right-foot` (`pose.position` [3], optional `pose.planted`)
and `2d-root` (`pose.xy` [2] = the smooth root's (x, z), optional `pose.facing_deg` = Kimodo's heading
angle in degrees).

Each request constraint is one single-frame Entry of the model (its index is its place in
`constraints[]`); `to_kimodo`/`from_kimodo` in convert.py regroup them."""
from __future__ import annotations

import json
import math
from typing import Any, Dict, List, Optional, Tuple

from ..errors import KimodoError
from .fields import FieldError, count, describe, kind as kind_of, listed, load_json, number, pose_rows, read_entries, require, vector
from .model import BASE_OF_TYPE, ConstraintSet, Entry, Problem, Request

FORMAT = "animotive"
JOINTS = 77
TYPE_OF_LABEL = {"fullbody": "fullbody", "2d-root": "root2d", **{t: t for t in BASE_OF_TYPE}}
LABEL_OF_TYPE = {v: k for k, v in TYPE_OF_LABEL.items()}


def recognises(data: Any) -> bool:
    return isinstance(data, dict) and "constraints" in data


def read(path) -> ConstraintSet:
    return from_json(load_json(path), str(path))


def from_json(data: Any, path: str) -> ConstraintSet:
    if not recognises(data):
        raise KimodoError("{}: not an Animotive Kimodo request (a JSON object with constraints)".format(path))
    problems: List[Problem] = []
    request = None
    try:
        request = parse_request(data)
    except FieldError as error:
        problems.append(Problem("error", path, str(error)))
    try:
        records = listed(data["constraints"], "constraints")
    except FieldError as error:
        problems.append(Problem("error", path, str(error)))
        records = []
    entries, entry_problems = read_entries(records, path, _entry)
    problems.extend(entry_problems)
    return ConstraintSet(path, FORMAT, tuple(entries), tuple(problems), request)


def parse_request(data: Dict[str, Any]) -> Request:
    """The request's model and meta (raises FieldError naming the field)."""
    model = require(data, "model")
    if not isinstance(model, str) or not model:
        raise FieldError("model is not a model name ({})".format(describe(model)))
    meta = require(data, "meta")
    if not isinstance(meta, dict):
        raise FieldError("meta is not an object ({})".format(describe(meta)))
    texts = listed(require(meta, "texts"), "meta.texts")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise FieldError("meta.texts[{}] is not text ({})".format(i, describe(text)))
    durations = [number(d, "meta.durations[{}]".format(i)) for i, d in enumerate(listed(require(meta, "durations"), "meta.durations"))]
    for i, duration in enumerate(durations):
        if not duration > 0:
            raise FieldError("meta.durations[{}] is not a positive number of seconds ({})".format(i, describe(duration)))
    if len(texts) != len(durations):
        raise FieldError("meta.texts has {} entries, meta.durations has {}".format(len(texts), len(durations)))
    if not texts:
        raise FieldError("meta.texts is empty")
    samples = count(meta.get("num_samples", 1), "meta.num_samples", least=1)
    steps = count(meta.get("diffusion_steps", 100), "meta.diffusion_steps", least=1)
    seed = meta.get("seed")
    if seed is not None:
        seed = count(seed, "meta.seed")
    tpose = data.get("bvh_standard_tpose")
    if tpose is not None and not isinstance(tpose, bool):
        raise FieldError("bvh_standard_tpose is not true or false ({})".format(describe(tpose)))
    return Request(model, tuple(texts), tuple(durations), samples, steps, seed, tpose)


def _entry(index: int, record: Any) -> Entry:
    if not isinstance(record, dict):
        raise FieldError("not an object ({})".format(describe(record)))
    label = kind_of(record, tuple(TYPE_OF_LABEL))
    kind = TYPE_OF_LABEL[label]
    frame = count(require(record, "frame"), "frame")
    pose = require(record, "pose")
    if not isinstance(pose, dict):
        raise FieldError("pose is not an object ({})".format(describe(pose)))
    if kind == "fullbody":
        rotations = pose_rows([require(pose, "rotvecs")], "pose.rotvecs", None)[0]
        if len(rotations) != JOINTS:
            raise FieldError("pose.rotvecs has {} joints, expected {} (SOMA 77)".format(len(rotations), JOINTS))
        root = vector(require(pose, "root_pos"), "pose.root_pos", 3)
        return Entry(index, kind, (frame,), rotations=(rotations,), root_positions=(root,), label=label)  # type: ignore[arg-type]
    if kind == "root2d":
        xy = vector(require(pose, "xy"), "pose.xy", 2)
        heading: Tuple[Tuple[float, float], ...] = ()
        if "facing_deg" in pose:
            angle = math.radians(number(pose["facing_deg"], "pose.facing_deg"))
            heading = ((math.cos(angle), math.sin(angle)),)
        return Entry(index, kind, (frame,), smooth_root=(xy,), heading=heading, label=label)  # type: ignore[arg-type]
    position = vector(require(pose, "position"), "pose.position", 3)
    planted: Optional[bool] = None
    if "planted" in pose:
        planted = pose["planted"]
        if not isinstance(planted, bool):
            raise FieldError("pose.planted is not true or false ({})".format(describe(planted)))
    return Entry(index, kind, (frame,), positions=(position,), planted=(planted,), label=label)  # type: ignore[arg-type]


def facing_degrees(heading: Tuple[float, float]) -> float:
    return math.degrees(math.atan2(heading[1], heading[0]))


def constraint_json(entry: Entry) -> Dict[str, Any]:
    """One request constraint from a single-frame entry."""
    pose: Dict[str, Any]
    if entry.type == "fullbody":
        pose = {"rotvecs": [list(v) for v in entry.rotations[0]], "root_pos": list(entry.root_positions[0])}
    elif entry.type == "root2d":
        pose = {"xy": list(entry.smooth_root[0])}
        if entry.heading:
            pose["facing_deg"] = facing_degrees(entry.heading[0])
    else:
        pose = {"position": list(entry.positions[0])}
        if entry.planted and entry.planted[0] is not None:
            pose["planted"] = entry.planted[0]
    return {"type": LABEL_OF_TYPE[entry.type], "frame": entry.frames[0], "pose": pose}


def encode(constraints: ConstraintSet) -> bytes:
    request = constraints.request
    if request is None:
        raise ValueError("an Animotive request needs its Request")
    meta: Dict[str, Any] = {"texts": list(request.texts), "durations": list(request.durations),
                            "num_samples": request.num_samples, "diffusion_steps": request.diffusion_steps,
                            "seed": request.seed}
    document: Dict[str, Any] = {"model": request.model, "meta": meta,
                                "constraints": [constraint_json(e) for e in constraints.entries]}
    if request.bvh_standard_tpose is not None:
        document["bvh_standard_tpose"] = request.bvh_standard_tpose
    return (json.dumps(document, indent=1, allow_nan=False) + "\n").encode("utf-8")
