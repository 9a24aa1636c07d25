"""Kimodo constraints: read and write Kimodo's constraints.json and the Animotive request, check them,
measure how well a motion meets them, and make them from any motion."""
from __future__ import annotations

from typing import Any

from ..errors import KimodoError
from . import animotive, kimodo_json
from .fields import load_json
from .model import ConstraintSet


def read(path) -> ConstraintSet:
    """Either format, told apart by its shape (a list: Kimodo; an object with constraints: Animotive)."""
    data: Any = load_json(path)
    for module in (kimodo_json, animotive):
        if module.recognises(data):
            return module.from_json(data, str(path))
    raise KimodoError("{}: neither a Kimodo constraints list nor an Animotive request (an object with constraints)".format(path))


def encode(constraints: ConstraintSet) -> bytes:
    return (animotive if constraints.format == animotive.FORMAT else kimodo_json).encode(constraints)
