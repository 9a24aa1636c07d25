"""The format registry: each module declares NAME, DESCRIPTION, EXTENSIONS, read(path, *, fps=None) and
write(motion, path, options), and `recognises(path)` where it shares an extension with another (.npz);
this file merges them explicitly and picks one by name, by extension, or by `recognises`."""
from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    from typing import Any, Dict, Optional, Tuple

from ..errors import KimodoError
from ..model import Motion
from .options import DEFAULT, WriteOptions

# Order matters for help text and for extensions two formats share: reading, the first module whose
# `recognises(path)` accepts the file wins (an .npz is told apart by its array names); writing, the first.
# A folder is always `raw`. The modules are imported when the registry is first used, so a job that
# imports one format (`kimodo_to_glb.py`: raw and glb) does not load the others.
_MODULE_NAMES = ("raw", "glb", "bvh", "fbx", "kimodo_npz", "amass", "g1_csv")
FLOAT32_MAX = 3.4028234663852886e38


def _modules() -> Tuple[Any, ...]:
    import importlib  # here, not at the top: importlib loads warnings, which a .glb job never needs

    return tuple(importlib.import_module("." + name, __name__) for name in _MODULE_NAMES)


def __getattr__(name: str) -> Any:  # PEP 562: `formats.FORMATS`, name -> module, built on first use
    if name == "FORMATS":
        return {module.NAME: module for module in _modules()}
    raise AttributeError("module {!r} has no attribute {!r}".format(__name__, name))


def available_formats() -> Dict[str, str]:
    """Format name -> one-line description, for the CLI's help."""
    return {module.NAME: module.DESCRIPTION for module in _modules()}


def format_for(path, forced: Optional[str] = None, *, reading: bool = True):
    """The format module for `path`: `forced` by name, else a folder (or a path ending in a separator,
    or with no extension when writing) is `raw`, else by extension."""
    from pathlib import Path  # here, not at the top: a .glb job never picks a format by path

    modules = _modules()
    if forced:
        known = {module.NAME: module for module in modules}
        if forced not in known:
            raise KimodoError("unknown format {!r} (known: {})".format(forced, ", ".join(sorted(known))))
        return known[forced]
    text = str(path)
    candidate = Path(text)
    if candidate.is_dir() or text.endswith(("/", "\\")) or (not reading and not candidate.suffix):
        return modules[0]  # raw
    extension = candidate.suffix.lower()
    claimants = [module for module in modules if extension in module.EXTENSIONS]
    if reading and len(claimants) > 1 and candidate.is_file():
        for module in claimants:
            if module.recognises(candidate):
                return module
    if claimants:
        return claimants[0]
    if reading and not candidate.exists():
        raise KimodoError("{}: no such file or folder".format(path))
    raise KimodoError("{}: unknown file type {!r} (known: {})".format(
        path, extension or "(none)", ", ".join(dict.fromkeys(e for m in modules for e in m.EXTENSIONS)) + ", or a clip folder"))


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
