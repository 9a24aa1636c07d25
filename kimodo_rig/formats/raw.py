"""kimodo.cpp's raw clip folder: local_rotations_xyzw.f32 [frames, joints, 4] and root_positions.f32
[frames, 3], little-endian float32, no header; prompt.txt optional (one prompt a line)."""
from __future__ import annotations

import math
import sys
from array import array
from pathlib import Path
TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    from typing import Optional, Tuple

from .. import skeletons
from ..errors import KimodoError
from ..files import write_folder_atomic
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


def clip_files(path: Path) -> Optional[Tuple[Path, Path]]:
    """The rotation and root files of a clip folder, or None. The plain names are preferred; otherwise one
    file ending in each name (e.g. `soma30_first90frames_root_positions.f32`) is accepted."""
    if not path.is_dir():
        return None
    found = []
    for wanted in (ROTATIONS_FILE, ROOT_FILE):
        exact = path / wanted
        candidates = [exact] if exact.is_file() else sorted(p for p in path.glob("*" + wanted) if p.is_file())
        if len(candidates) != 1:
            return None
        found.append(candidates[0])
    return found[0], found[1]


def _read_float32(path: Path) -> array:
    values = array("f")
    with open(path, "rb") as stream:
        data = stream.read()
    if len(data) % 4:
        data = data[: len(data) - len(data) % 4]  # the size check below reports the mismatch
    values.frombytes(data)
    if sys.byteorder == "big":
        values.byteswap()
    return values


def read(path, *, fps: Optional[float] = None) -> Motion:
    folder = Path(path)
    files = clip_files(folder)
    if files is None:
        raise KimodoError("{}: not a kimodo clip directory".format(path))
    try:
        return _read_clip(path, folder, files, fps)
    except OSError as error:  # unreadable file (permissions, a vanished file, an I/O error)
        raise KimodoError("{}: cannot read {} ({})".format(path, Path(error.filename or "").name or "the clip",
                                                         error.strerror or error)) from error


def _read_clip(path, folder: Path, files: Tuple[Path, Path], fps: Optional[float]) -> Motion:
    rotation_file, root_file = files
    rotation_bytes = rotation_file.stat().st_size
    root_bytes = root_file.stat().st_size
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
    norms = map(math.hypot, rotations[0::4], rotations[1::4], rotations[2::4], rotations[3::4])
    # |1 - norm| <= UNIT_TOLERANCE for every quaternion, in C (map over map); NaN fails the comparison
    if not all(map(UNIT_TOLERANCE.__ge__, map(abs, map((1.0).__sub__, norms)))):
        raise KimodoError("{}: rotations are not unit quaternions".format(path))
    if not all(map(math.isfinite, roots)):
        raise KimodoError("{}: root positions are not finite numbers".format(path))
    prompt = ""
    prompt_path = folder / PROMPT_FILE
    if prompt_path.is_file():
        text = prompt_path.read_text(encoding="utf-8", errors="replace").strip()
        prompt = text.splitlines()[0].strip() if text else ""
    return Motion(
        skeleton, rotations, roots, frame_rate(fps, str(path)) if fps else 30.0, name=folder.resolve().name, prompt=prompt
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

    write_folder_atomic(path, fill)
