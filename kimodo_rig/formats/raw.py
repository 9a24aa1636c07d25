"""kimodo.cpp's raw clip folder: local_rotations_xyzw.f32 [frames, joints, 4] and root_positions.f32
[frames, 3], little-endian float32, no header; prompt.txt optional (one prompt a line)."""
from __future__ import annotations

import math
import os
import sys
from array import array
TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Optional, Sequence, Tuple

from .. import skeletons
from ..errors import KimodoError
from ..files import file_name, folder_output_problem, write_folder_atomic
from ..model import Motion
from .limits import frame_rate
from .options import DEFAULT, WriteOptions

NAME = "raw"
DESCRIPTION = "kimodo.cpp clip folder (local_rotations_xyzw.f32, root_positions.f32, prompt.txt)"
EXTENSIONS = ()  # a folder, not an extension
ROTATIONS_FILE = "local_rotations_xyzw.f32"
ROOT_FILE = "root_positions.f32"
PROMPT_FILE = "prompt.txt"
UNIT_TOLERANCE = 1e-3


def clip_files(path) -> Optional[Tuple[str, str]]:
    """The rotation and root files of a clip folder (paths as text), or None. The plain names are
    preferred; otherwise one file ending in each name (e.g. `soma30_first90frames_root_positions.f32`)
    is accepted. By os.path, not pathlib: a .glb job never loads pathlib (see files.file_name)."""
    folder = os.fspath(path)
    if not os.path.isdir(folder):
        return None
    found = []
    names = None
    for wanted in (ROTATIONS_FILE, ROOT_FILE):
        exact = os.path.join(folder, wanted)
        if os.path.isfile(exact):
            candidates = [exact]
        else:
            if names is None:
                try:
                    names = os.listdir(folder)
                except OSError:
                    return None
            ending = os.path.normcase(wanted)  # as pathlib's glob matched: without case on Windows
            candidates = [os.path.join(folder, name) for name in names
                          if os.path.normcase(name).endswith(ending) and os.path.isfile(os.path.join(folder, name))]
        if len(candidates) != 1:
            return None
        found.append(candidates[0])
    return found[0], found[1]


def _read_float32(path: str) -> array:
    values = array("f")
    with open(path, "rb") as stream:
        data = stream.read()
    if len(data) % 4:
        data = data[: len(data) - len(data) % 4]  # the size check below reports the mismatch
    values.frombytes(data)
    if sys.byteorder == "big":
        values.byteswap()
    return values


_UNIT_CHUNK = 1 << 16  # quaternions checked at a time: a long clip's norms are never all held at once


def _all_unit(rotations: array) -> bool:
    """|1 - |q|| <= UNIT_TOLERANCE for every quaternion of the flat xyzw buffer, in C. |1 - n| only
    grows as n moves away from 1 on either side, so it holds for all of a chunk's norms exactly when it
    holds for the smallest and the largest; a NaN norm (which min and max may pass over) makes the sum NaN."""
    for start in range(0, len(rotations), 4 * _UNIT_CHUNK):
        chunk = rotations[start:start + 4 * _UNIT_CHUNK]
        norms = list(map(math.hypot, chunk[0::4], chunk[1::4], chunk[2::4], chunk[3::4]))
        if math.isnan(sum(norms)) or not (abs(1.0 - min(norms)) <= UNIT_TOLERANCE
                                          and abs(1.0 - max(norms)) <= UNIT_TOLERANCE):
            return False
    return True


def read(path, *, fps: Optional[float] = None) -> Motion:
    folder = os.fspath(path)
    files = clip_files(folder)
    if files is None:
        raise KimodoError("{}: not a kimodo clip directory".format(path))
    try:
        return _read_clip(path, folder, files, fps)
    except OSError as error:  # unreadable file (permissions, a vanished file, an I/O error)
        raise KimodoError("{}: cannot read {} ({})".format(path, file_name(error.filename or "") or "the clip",
                                                         error.strerror or error)) from error


def _read_clip(path, folder: str, files: Tuple[str, str], fps: Optional[float]) -> Motion:
    rotation_file, root_file = files
    rotation_bytes = os.stat(rotation_file).st_size
    root_bytes = os.stat(root_file).st_size
    frames = root_bytes // 12
    if root_bytes % 12 or frames == 0 or rotation_bytes % (frames * 16) or rotation_bytes == 0:
        raise KimodoError("{}: rotation and root files disagree".format(path))
    joints = rotation_bytes // (frames * 16)
    skeleton = skeletons.by_joint_count(joints)
    if skeleton is None:
        raise KimodoError("{}: {} joints matches no known skeleton".format(path, joints))
    # Kept float32 as read (the format's own precision; half the memory of float64 for long clips).
    rotations = _read_float32(rotation_file)
    roots = _read_float32(root_file)
    if not _all_unit(rotations):
        raise KimodoError("{}: rotations are not unit quaternions".format(path))
    if not all(map(math.isfinite, roots)):
        raise KimodoError("{}: root positions are not finite numbers".format(path))
    prompt = ""
    prompt_path = os.path.join(folder, PROMPT_FILE)
    if os.path.isfile(prompt_path):
        with open(prompt_path, encoding="utf-8", errors="replace") as stream:
            text = stream.read().strip()
        prompt = text.splitlines()[0].strip() if text else ""
    return Motion(
        skeleton, rotations, roots, frame_rate(fps, str(path)) if fps else 30.0,
        name=file_name(os.path.realpath(folder)), prompt=prompt
    )


def _float32_bytes(values) -> bytes:
    data = array("f", values)
    if sys.byteorder == "big":
        data.byteswap()
    return data.tobytes()


def write(motion: Motion, path, options: WriteOptions = DEFAULT) -> None:
    """Write a clip folder. Only Kimodo skeletons fit the format: the joint count is its only header."""
    if skeletons.by_joint_count(motion.joint_count) is None or motion.skeleton.name not in skeletons.BUILTIN:
        raise KimodoError(
            "{}: a raw clip holds only Kimodo skeletons, not {} ({} joints)".format(
                path, motion.skeleton.label, motion.joint_count
            )
        )

    def fill(folder: Path) -> None:
        (folder / ROTATIONS_FILE).write_bytes(_float32_bytes(motion.local_rotations))
        (folder / ROOT_FILE).write_bytes(_float32_bytes(motion.root_positions))
        if motion.prompt:
            (folder / PROMPT_FILE).write_text(motion.prompt + "\n", encoding="utf-8")

    write_folder_atomic(path, fill, stray_entry, REPLACES)


def stray_entry(name: str, names: Sequence[str]) -> str:
    """"" for a file of one clip (what `clip_files` reads, and its prompt), else why `name` is not: a raw
    output replaces a clip folder and nothing else (see files.folder_output_problem)."""
    if name == PROMPT_FILE:
        return ""
    for own in (ROTATIONS_FILE, ROOT_FILE):
        if os.path.normcase(name).endswith(own):
            alike = sum(1 for other in names if os.path.normcase(other).endswith(own))
            return "" if alike == 1 else "it holds {} files ending in {}, more than one clip's".format(alike, own)
    return "it holds {!r}, which is not a clip's file".format(name)


REPLACES = "a raw output replaces only a clip folder"


def output_problem(path) -> str:
    """The one line saying why a raw clip may not be written at `path`, or "" (files.folder_output_problem
    with a clip's files as the ones it may replace)."""
    return folder_output_problem(path, stray_entry, REPLACES)
