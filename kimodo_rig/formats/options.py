"""Writer options, one frozen record instead of a dict of strings."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WriteOptions:
    names: str = "mannequin"  # glb: "mannequin" (Unreal names for SMPL-X) or "native"
    rest: str = "seed"  # bvh for SOMA: "seed" (Kimodo's BONES-SEED rest) or "tpose"


DEFAULT = WriteOptions()
