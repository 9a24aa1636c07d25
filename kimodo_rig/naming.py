"""Output file names derived from prompts and folder names: short, lowercase, and safe."""
from __future__ import annotations

import re
TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    from typing import Set

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


def sanitise_asset_name(text: str, fallback: str = "clip") -> str:
    """An identifier safe as a file stem or an engine asset name: letters, digits and underscores."""
    name = re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_")
    return name[:64] or fallback


__all__ = ["slug", "clip_stem", "unique", "sanitise_asset_name"]
