"""Reading JSON values into the model's tuples, with one exact message per kind of problem. Both file
formats use these; `FieldError` carries the message to the reader, which makes it a Problem."""
from __future__ import annotations

import json
import math
from typing import Any, Callable, List, Optional, Sequence, Tuple

from ..errors import KimodoError
from ..files import read_input
from ..formats.limits import parse_json
from .model import Entry, Problem


# The largest value any field holds (metres, radians, degrees, seconds): far beyond a motion's, and small
# enough that squares and frame counts stay finite (a rotation vector of 1e200 overflowed, a duration of
# 1e308 s had no frame count).
MAX_VALUE = 1e6


class FieldError(Exception):
    """One problem with one value; the reader adds the file and the entry."""


def load_json(path) -> Any:
    data = read_input(path, str(path))  # a regular file only: a FIFO or /dev/zero would block or never end
    try:
        # a byte-order mark (Notepad adds one) is skipped; nesting and integers bounded as every reader's
        return parse_json(data, str(path))
    except UnicodeDecodeError as error:
        raise KimodoError("{}: not UTF-8 text".format(path)) from error
    except json.JSONDecodeError as error:
        raise KimodoError("{}: not JSON (line {} column {}: {})".format(path, error.lineno, error.colno, error.msg)) from error
    except RecursionError as error:
        raise KimodoError("{}: JSON nested too deeply".format(path)) from error


def describe(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else repr(value)
    return text if len(text) <= 24 else text[:21] + "..."


def number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FieldError("{} is not a number ({})".format(where, describe(value)))
    result = float(value)  # JSON integers of more than 40 digits are read as floats (limits.parse_json)
    if not math.isfinite(result):
        raise FieldError("{} is not a finite number ({})".format(where, describe(value)))
    if abs(result) > MAX_VALUE:
        raise FieldError("{} is outside {:g} to {:g} ({})".format(where, -MAX_VALUE, MAX_VALUE, describe(value)))
    return result


def count(value: Any, where: str, *, least: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        kind = "a non-negative integer" if least == 0 else "an integer of at least {}".format(least)
        raise FieldError("{} is not {} ({})".format(where, kind, describe(value)))
    return value


def listed(value: Any, where: str) -> List[Any]:
    if not isinstance(value, list):
        raise FieldError("{} is not a list ({})".format(where, describe(value)))
    return value


def vector(value: Any, where: str, width: int) -> Tuple[float, ...]:
    items = listed(value, where)
    if len(items) != width:
        raise FieldError("{} has {} values, expected {}".format(where, len(items), width))
    return tuple(number(item, "{}[{}]".format(where, i)) for i, item in enumerate(items))


def rows(value: Any, name: str, width: int, frames: int) -> Tuple[Tuple[float, ...], ...]:
    """A [frames, width] array."""
    items = listed(value, name)
    if len(items) != frames:
        raise FieldError("{} has {} rows, frame_indices has {}".format(name, len(items), frames))
    return tuple(vector(item, "{}[{}]".format(name, i), width) for i, item in enumerate(items))


def pose_rows(value: Any, name: str, frames: Optional[int]) -> Tuple[Tuple[Tuple[float, float, float], ...], ...]:
    """A [frames, joints, 3] array of rotation vectors, the same joint count on every frame."""
    items = listed(value, name)
    if frames is not None and len(items) != frames:
        raise FieldError("{} has {} rows, frame_indices has {}".format(name, len(items), frames))
    poses = []
    joints = None
    for i, item in enumerate(items):
        pose = listed(item, "{}[{}]".format(name, i))
        if joints is None:
            joints = len(pose)
        elif len(pose) != joints:
            raise FieldError("{}[{}] has {} joints, {}[0] has {}".format(name, i, len(pose), name, joints))
        poses.append(tuple(vector(v, "{}[{}][{}]".format(name, i, j), 3) for j, v in enumerate(pose)))
    return tuple(poses)  # type: ignore[return-value]


def kind(record: dict, known: Sequence[str]) -> str:
    """The record's "type", one of `known` (a list or an object there is unknown, not unhashable)."""
    value = require(record, "type")
    if not isinstance(value, str) or value not in known:
        raise FieldError("unknown type {} (known: {})".format(describe(value), ", ".join(known)))
    return value


def require(record: dict, key: str) -> Any:
    if key not in record:
        raise FieldError("no {}".format(key))
    return record[key]


def read_entries(records: Sequence[Any], path: str, parse: Callable[[int, Any], Entry]) -> Tuple[List[Entry], List[Problem]]:
    """Each record parsed on its own: the first problem in one becomes its Problem and leaves it out."""
    entries: List[Entry] = []
    problems: List[Problem] = []
    for index, record in enumerate(records):
        kind = record.get("type") if isinstance(record, dict) else None
        try:
            entries.append(parse(index, record))
        except FieldError as error:
            problems.append(Problem("error", path, str(error), index, kind if isinstance(kind, str) else "?"))
    return entries, problems
