"""Writer options, one frozen record instead of a dict of strings."""
from __future__ import annotations

from ..model import FrozenRecord


class WriteOptions(FrozenRecord):
    FIELDS = ("names", "rest")
    names: str  # glb: "mannequin" (Unreal names for SMPL-X) or "native"
    rest: str  # bvh for SOMA: "seed" (Kimodo's BONES-SEED rest) or "tpose"

    def __init__(self, names: str = "mannequin", rest: str = "seed") -> None:
        self._set("names", names)
        self._set("rest", rest)


DEFAULT = WriteOptions()
