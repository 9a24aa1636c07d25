"""The format registry: each module declares NAME, DESCRIPTION, EXTENSIONS, read(path, *, fps=None) and
write(motion, path, options), and `recognises(path)` where it shares an extension with another (.npz);
this file merges them explicitly and picks one by name, by extension, or by `recognises`."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional

from ..errors import KimodoError
from ..model import Motion
from . import amass, bvh, g1_csv, glb, kimodo_npz, raw
from .options import DEFAULT, WriteOptions

# Order matters for help text and for extensions two formats share: reading, the first module whose
# `recognises(path)` accepts the file wins (an .npz is told apart by its array names); writing, the first.
# A folder is always `raw`.
_MODULES = (raw, glb, bvh, kimodo_npz, amass, g1_csv)
FORMATS = {module.NAME: module for module in _MODULES}
FLOAT32_MAX = 3.4028234663852886e38


def available_formats() -> Dict[str, str]:
    """Format name -> one-line description, for the CLI's help."""
    return {name: module.DESCRIPTION for name, module in FORMATS.items()}


def format_for(path, forced: Optional[str] = None, *, reading: bool = True):
    """The format module for `path`: `forced` by name, else a folder (or a path ending in a separator,
    or with no extension when writing) is `raw`, else by extension."""
    if forced:
        if forced not in FORMATS:
            raise KimodoError("unknown format {!r} (known: {})".format(forced, ", ".join(sorted(FORMATS))))
        return FORMATS[forced]
    text = str(path)
    candidate = Path(text)
    if candidate.is_dir() or text.endswith(("/", "\\")) or (not reading and not candidate.suffix):
        return raw
    extension = candidate.suffix.lower()
    claimants = [module for module in _MODULES if extension in module.EXTENSIONS]
    if reading and len(claimants) > 1 and candidate.is_file():
        for module in claimants:
            if module.recognises(candidate):
                return module
    if claimants:
        return claimants[0]
    if reading and not candidate.exists():
        raise KimodoError("{}: no such file or folder".format(path))
    raise KimodoError("{}: unknown file type {!r} (known: {})".format(
        path, extension or "(none)", ", ".join(dict.fromkeys(e for m in _MODULES for e in m.EXTENSIONS)) + ", or a clip folder"))


def read_file(path, *, format: Optional[str] = None, fps: Optional[float] = None) -> Motion:
    motion = format_for(path, format).read(path, fps=fps)
    _require_float32_range(motion, path)
    return motion


def _require_float32_range(motion: Motion, path) -> None:
    """Every format but the text ones stores float32: a value beyond its range (1e308 in a BVH or a
    float64 NPZ) would become inf in the output, or stop a float32 writer mid-way."""
    offsets = (abs(c) for offset in motion.skeleton.rest_offsets for c in offset)
    largest = max(max(map(abs, motion.root_positions), default=0.0), max(map(abs, motion.local_rotations), default=0.0),
                  max(offsets, default=0.0))
    if largest > FLOAT32_MAX:
        raise KimodoError("{}: holds a value too large for float32 ({:g}): not a motion".format(path, largest))


def write_file(motion: Motion, path, *, format: Optional[str] = None, options: WriteOptions = DEFAULT):
    return format_for(path, format, reading=False).write(motion, path, options)
