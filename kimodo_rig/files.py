"""Inputs read only from regular files, within a size budget; whole-or-nothing output: write beside the
target, then rename over it."""
from __future__ import annotations

import io
import os
import stat
TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import BinaryIO, Callable, Sequence, Union

from .errors import KimodoError

PathLike = Union[str, "os.PathLike[str]"] if TYPE_CHECKING else str
MAX_INPUT_BYTES = 1 << 30  # no motion or character file is a gigabyte; a device or a runaway file is refused
_CHUNK = 1 << 20


def file_name(path: PathLike) -> str:
    """`pathlib.Path(path).name` (the last part, "" for a root), by os.path: a .glb job never imports
    pathlib, whose own imports (re's fnmatch, urllib.parse, ipaddress) weigh on a one-clip job's start-up."""
    rest = os.path.splitdrive(os.fspath(path))[1]
    if os.altsep:
        rest = rest.replace(os.altsep, os.sep)
    parts = [part for part in rest.split(os.sep) if part not in ("", ".")]
    return parts[-1] if parts else ""


def open_input(path: PathLike, source: str = "") -> BinaryIO:
    """`path` opened for binary reading, refused unless it is a regular file (after symlinks) of at most
    MAX_INPUT_BYTES: a symlink to /dev/zero would read forever, a FIFO would block forever. The file is
    opened non-blocking and checked again by its descriptor, so a swap after the first look changes nothing."""
    source = source or str(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise KimodoError("{}: no such file".format(source)) from None
    except (OSError, ValueError) as error:  # ValueError: a NUL in the path
        raise KimodoError("{}: cannot read ({})".format(source, getattr(error, "strerror", None) or error)) from error
    _require_regular(info, source)
    try:
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as error:
        raise KimodoError("{}: cannot read ({})".format(source, error.strerror or error)) from error
    try:
        _require_regular(os.fstat(handle), source)
    except BaseException:
        os.close(handle)
        raise
    return io.open(handle, "rb")


def read_input(path: PathLike, source: str = "") -> bytes:
    """The bytes of regular file `path` (see open_input), read in chunks up to its size as opened."""
    source = source or str(path)
    with open_input(path, source) as stream:
        size = os.fstat(stream.fileno()).st_size
        parts = []
        left = size + 1  # one byte more: a file that grows while read is noticed, not read without end
        try:
            while left > 0:
                part = stream.read(min(_CHUNK, left))
                if not part:
                    break
                parts.append(part)
                left -= len(part)
        except OSError as error:
            raise KimodoError("{}: cannot read ({})".format(source, error.strerror or error)) from error
    if left <= 0:
        raise KimodoError("{}: the file grew while it was read".format(source))
    return b"".join(parts)


def _require_regular(info: os.stat_result, source: str) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise KimodoError("{}: is a folder, not a file".format(source))
    if not stat.S_ISREG(info.st_mode):
        raise KimodoError("{}: not a regular file (a device, pipe or socket); not read".format(source))
    if info.st_size > MAX_INPUT_BYTES:
        raise KimodoError("{}: {} bytes is more than a motion or character file may hold ({})".format(
            source, info.st_size, MAX_INPUT_BYTES))


def write_bytes_atomic(path: PathLike, data: bytes) -> None:
    """Write `data` to `path` so that readers see the old file or the whole new one, never a part."""
    target = os.fspath(path)
    folder, name = os.path.split(target)
    try:
        handle, temporary = _new_file_beside(folder or ".", name)
    except OSError as error:
        raise KimodoError("{}: cannot write output folder ({})".format(folder or ".", error.strerror or error)) from error
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(temporary, target)
    except OSError as error:
        _remove_quietly(temporary)
        raise KimodoError("{}: cannot write ({})".format(target, error.strerror or error)) from error
    except BaseException:
        _remove_quietly(temporary)
        raise


def _new_file_beside(folder: str, name: str):
    """A new, empty `.NAME.<random>.part` in `folder`, opened for writing: (descriptor, path). Made here
    rather than by tempfile.mkstemp, whose import (random, shutil) weighs on a one-clip job's start-up;
    created exclusively, with the permissions open() would give (0o666 less the umask)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(100):
        temporary = os.path.join(folder, ".{}.{}.part".format(name, os.urandom(6).hex()))
        try:
            return os.open(temporary, flags, 0o666), temporary
        except FileExistsError:
            continue
    raise FileExistsError("no unused temporary name in {}".format(folder))


def folder_output_problem(path: PathLike, stray_entry: Callable[[str, Sequence[str]], str], rule: str) -> str:
    """Whether a folder may be written at `path` (write_folder_atomic replaces what is there): "" when
    nothing is there, or an empty folder, or a real folder (not a link) of regular files only, none of
    which `stray_entry(name, names)` calls foreign ("" for a file the writer owns, else what it is);
    else the one line saying why it is not replaced, ending in `rule` (what such an output replaces).
    One rule for every output that is a folder: a raw clip replaced whatever folder it was given, with
    its other files, its subfolders and the inputs in them."""
    target = os.fspath(path)
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        return ""
    except (OSError, ValueError) as error:
        return "{}: cannot write ({})".format(target, getattr(error, "strerror", None) or error)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "a file"
        return "{}: not replaced: it is {} ({})".format(target, what, rule)
    try:
        names = sorted(os.listdir(target))
    except OSError as error:
        return "{}: cannot read the folder ({})".format(target, error.strerror or error)
    for name in names:
        try:
            mode = os.lstat(os.path.join(target, name)).st_mode
        except OSError:
            mode = 0
        if stat.S_ISREG(mode):
            why = stray_entry(name, names)
        elif stat.S_ISDIR(mode):
            why = "it holds the folder {!r}".format(name)
        else:
            why = "it holds {!r}, which is not a regular file".format(name)
        if why:
            return "{}: not replaced: {} ({})".format(target, why, rule)
    return ""


def write_folder_atomic(path: PathLike, fill: Callable[[Path], None],
                        stray_entry: Callable[[str, Sequence[str]], str], rule: str) -> None:
    """Create folder `path` whole: `fill` writes into a temporary sibling that is then renamed into place.
    What is at `path` must pass `folder_output_problem` (checked before, and again once set aside); an
    existing folder is replaced only after the new one is complete."""
    import shutil  # raw clips only: a .glb job does not load these
    import tempfile
    from pathlib import Path

    target = Path(os.path.abspath(os.fspath(path)))  # "." and "name/.." have a real name and parent
    parent = target.parent
    problem = folder_output_problem(path, stray_entry, rule)
    if problem:
        raise KimodoError(problem)
    try:
        temporary = Path(tempfile.mkdtemp(prefix="." + target.name + ".", suffix=".part", dir=parent))
    except OSError as error:
        raise KimodoError("{}: cannot write output folder ({})".format(parent, error.strerror or error)) from error
    try:
        fill(temporary)
        os.chmod(temporary, _permissions_for_new_files() | 0o111)
        for written in temporary.iterdir():
            os.chmod(written, _permissions_for_new_files())
        if not os.path.lexists(target):
            os.replace(temporary, target)  # a folder made there meanwhile is replaced only if empty
            return
        old = Path(tempfile.mkdtemp(prefix="." + target.name + ".", suffix=".old", dir=parent))
        os.rmdir(old)
        os.replace(target, old)
        # What was set aside is looked at again, under a name nobody else writes to: a file added since
        # the first look puts everything back instead of being removed with the old clip.
        problem = folder_output_problem(old, stray_entry, rule)
        if problem:
            os.replace(old, target)
            raise KimodoError(folder_output_problem(path, stray_entry, rule) or problem)
        try:
            os.replace(temporary, target)
        except OSError:
            os.replace(old, target)
            raise
        shutil.rmtree(old, ignore_errors=True)
    except OSError as error:
        shutil.rmtree(temporary, ignore_errors=True)
        raise KimodoError("{}: cannot write ({})".format(path, error.strerror or error)) from error
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


def refuse_output_over_input(output: PathLike, inputs: Sequence[PathLike]) -> None:
    """KimodoError when `output` names one of `inputs` (the same file or folder, by any path): an output
    is written whole and renamed into place, which would replace the input it was made from."""
    for source in inputs:
        try:
            same = os.path.samefile(output, source)
        except (OSError, ValueError):  # either is missing or unreadable: not the same existing thing
            same = False
        if same:
            named = "" if os.fspath(source) == os.fspath(output) else " " + os.fspath(source)
            raise KimodoError("{}: not replaced: it is the input{} (write the output elsewhere)".format(
                os.fspath(output), named))


def _permissions_for_new_files() -> int:
    """What open() would give a new file here: 0o666 less the process umask."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _remove_quietly(path: PathLike) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
