"""Output file names derived from prompts and folder names: short, lowercase, and safe."""
from __future__ import annotations

import os
import re
TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    from typing import List, Sequence, Set

# Words that say nothing about the motion; the first few that remain name the clip.
_FILLER = frozenset(
    "a an the person man woman someone character is are be being they he she it its their them his her "
    "and then while with to of in on at up from onto into over by for as".split()
)
MAX_WORDS = 3
MAX_LENGTH = 40


def slug(text: str, fallback: str = "clip") -> str:
    """`"A person walks forward."` -> `"walks_forward"`; never empty, never a path, only [a-z0-9_]."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    kept = [w for w in words if w not in _FILLER][:MAX_WORDS] or words[:MAX_WORDS]
    name = "_".join(kept)[:MAX_LENGTH].strip("_")
    return name or fallback


def clip_stem(prompt: str, folder_name: str, frames: int) -> str:
    """The stem of a clip's output file: prompt slug (or folder name) plus the frame count."""
    base = slug(prompt, fallback="") or slug(folder_name)  # a prompt of punctuation alone names nothing
    return "{}_{}".format(base, frames)


def unique(stem: str, taken: Set[str]) -> str:
    """`stem`, or `stem_2`, `stem_3`, ... if a name is already taken in this batch; records the result."""
    name = stem
    counter = 2
    while name in taken:
        name = "{}_{}".format(stem, counter)
        counter += 1
    taken.add(name)
    return name


def input_names(paths: "Sequence[str]") -> "List[str]":
    """What names each input of a batch: a folder's own name, a file's stem, or, where several files of
    the batch share a stem in different folders, their folder's name (Kimodo writes `motion.npz` into
    each clip's folder: `clips/*/motion.npz` must not come out as motion, motion_2, ...)."""
    def parts(path: str):
        trimmed = path.rstrip("/\\") or path
        name = os.path.basename(trimmed)
        if os.path.isdir(trimmed):
            return name, name
        return os.path.splitext(name)[0], os.path.basename(os.path.dirname(os.path.abspath(trimmed)))

    split = [parts(path) for path in paths]
    stems, pairs = {}, {}  # type: dict, dict
    for pair in split:
        stems[pair[0]] = stems.get(pair[0], 0) + 1
        pairs[pair] = pairs.get(pair, 0) + 1
    return [folder if stems[stem] > 1 and folder and pairs[(stem, folder)] == 1 else stem for stem, folder in split]


def sanitise_asset_name(text: str, fallback: str = "clip") -> str:
    """An identifier safe as a file stem or an engine asset name: letters, digits and underscores."""
    name = re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_")
    return name[:64] or fallback


__all__ = ["slug", "clip_stem", "unique", "input_names", "sanitise_asset_name"]
