"""Whole-or-nothing output: write beside the target, then rename over it."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Union

from .errors import KimodoError

PathLike = Union[str, "os.PathLike[str]"]


def write_bytes_atomic(path: PathLike, data: bytes) -> None:
    """Write `data` to `path` so that readers see the old file or the whole new one, never a part."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    try:
        handle, temporary = tempfile.mkstemp(prefix="." + target.name + ".", suffix=".part", dir=folder)
    except OSError as error:
        raise KimodoError("{}: cannot write output folder ({})".format(folder, error.strerror or error)) from error
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, _permissions_for_new_files())  # mkstemp makes 0600; users expect umask's say
        os.replace(temporary, target)
    except OSError as error:
        _remove_quietly(temporary)
        raise KimodoError("{}: cannot write ({})".format(target, error.strerror or error)) from error
    except BaseException:
        _remove_quietly(temporary)
        raise


def write_folder_atomic(path: PathLike, fill: Callable[[Path], None]) -> None:
    """Create folder `path` whole: `fill` writes into a temporary sibling that is then renamed into place.
    An existing folder at `path` is replaced only after the new one is complete."""
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    try:
        temporary = Path(tempfile.mkdtemp(prefix="." + target.name + ".", suffix=".part", dir=parent))
    except OSError as error:
        raise KimodoError("{}: cannot write output folder ({})".format(parent, error.strerror or error)) from error
    try:
        fill(temporary)
        os.chmod(temporary, _permissions_for_new_files() | 0o111)
        for written in temporary.iterdir():
            os.chmod(written, _permissions_for_new_files())
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix="." + target.name + ".", suffix=".old", dir=parent))
            os.rmdir(old)
            os.replace(target, old)
            os.replace(temporary, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(temporary, target)
    except OSError as error:
        shutil.rmtree(temporary, ignore_errors=True)
        raise KimodoError("{}: cannot write ({})".format(target, error.strerror or error)) from error
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


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
