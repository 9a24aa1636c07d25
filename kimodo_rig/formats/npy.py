"""NumPy's .npy arrays inside .npz zip archives, read and written with the standard library only.

Reads format versions 1.0, 2.0 and 3.0: float16/32/64, bool, signed and unsigned integers of either byte
order, unicode strings, C or Fortran order. Refuses object arrays and structured dtypes: those are
pickled, and kimodo-rig never unpickles. Writes format 1.0 (what `numpy.save` writes for small headers),
which `numpy.load(..., allow_pickle=False)` reads.
"""
from __future__ import annotations

import ast
import bz2
import contextlib
import copy
import io
import math
import struct
import sys
import zipfile
import zlib
from array import array
from dataclasses import dataclass
from typing import Dict, Iterable, Iterator, List, Sequence, Tuple, Union

from ..errors import KimodoError
from ..files import open_input, write_bytes_atomic

try:
    import lzma
except ImportError:  # some Python builds lack it; LZMA members are then refused
    lzma = None  # type: ignore[assignment]

MAGIC = b"\x93NUMPY"
MAX_HEADER_BYTES = 10000  # numpy's own cap (numpy.lib.format: max_header_size); literal_eval is not for megabytes
MAX_MEMBER_BYTES = 128 << 20  # one array, decompressed: a 77-joint clip of 45,000 frames fits
MAX_ARCHIVE_BYTES = 256 << 20  # all arrays read from one archive, decompressed
_DEFLATE_MAX_RATIO = 1100  # deflate expands at most about 1032-fold; a zip declaring more is lying
_CHUNK = 1 << 16  # compressed bytes fed to a decompressor at a time; its output is capped as well
_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate", zipfile.ZIP_BZIP2: "bzip2",
            zipfile.ZIP_LZMA: "lzma"}
_DECOMPRESSION_ERRORS = (zlib.error, OSError, EOFError, ValueError) + ((lzma.LZMAError,) if lzma else ())
_HEADER_ALIGNMENT = 64  # numpy pads headers so the data starts 64-byte aligned
_FLOAT_CODES = {2: "e", 4: "f", 8: "d"}
_INT_CODES = {1: "b", 2: "h", 4: "i", 8: "q"}


@dataclass(frozen=True)
class NpyArray:
    """One array: `dtype` as numpy spells it ('<f4', '|b1', '<U6', ...), C-order `shape`, and `values`,
    flat in C order: array('d') for numbers and booleans (0.0/1.0), a tuple of str for strings."""

    dtype: str
    shape: Tuple[int, ...]
    values: Union[array, Tuple[str, ...]]

    @property
    def kind(self) -> str:
        return self.dtype[1]

    @property
    def size(self) -> int:
        count = 1
        for extent in self.shape:
            count *= extent
        return count

    def scalar(self) -> Union[float, str]:
        """The single value of a 0-d (or one-element) array."""
        return self.values[0]


def _fail(path, member: str, message: str) -> KimodoError:
    return KimodoError("{}: {}: {}".format(path, member, message))


def _header_span(data: bytes, path, member: str) -> Tuple[int, int]:
    """Where the header text starts and how long it is, from the first 12 bytes of a .npy file."""
    if not data.startswith(MAGIC) or len(data) < 10:
        raise _fail(path, member, "not a .npy array (bad magic)")
    major = data[6]
    if major == 1:
        start, length = 10, struct.unpack_from("<H", data, 8)[0]
    elif major in (2, 3):
        if len(data) < 12:
            raise _fail(path, member, "truncated .npy header")
        start, length = 12, struct.unpack_from("<I", data, 8)[0]
    else:
        raise _fail(path, member, ".npy format version {}.{} is not supported".format(major, data[7]))
    if length > MAX_HEADER_BYTES:
        raise _fail(path, member, ".npy header of {} bytes is longer than numpy allows ({})".format(length, MAX_HEADER_BYTES))
    return start, length


def _parse_header(data: bytes, path, member: str) -> Tuple[dict, int]:
    start, length = _header_span(data, path, member)
    major = data[6]
    raw = data[start:start + length]
    if len(raw) != length:
        raise _fail(path, member, "truncated .npy header")
    try:
        text = raw.decode("utf-8" if major == 3 else "latin-1")
        header = ast.literal_eval(text.strip())  # a Python literal, never code
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as error:  # TypeError: {{}: 1}
        raise _fail(path, member, "unreadable .npy header") from error
    if (not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"}
            or not isinstance(header["fortran_order"], bool)):
        raise _fail(path, member, "unreadable .npy header")
    return header, start + length


def _check_dtype(descr, path, member: str) -> Tuple[str, str, int]:
    """(byte order, kind, item size) of a supported plain dtype; anything pickled is refused."""
    if isinstance(descr, str) and descr[1:2] == "O":
        raise _fail(path, member, "holds Python objects (pickled data); refusing to unpickle")
    if not isinstance(descr, str) or len(descr) < 3 or descr[0] not in "<>|=":
        raise _fail(path, member, "structured arrays are not supported (they may hold pickled data)")
    order, kind, size_text = descr[0], descr[1], descr[2:]
    try:
        size = int(size_text)
    except ValueError:
        raise _fail(path, member, "unsupported dtype {!r}".format(descr)) from None
    if order == "=":
        order = "<" if sys.byteorder == "little" else ">"
    supported = (
        (kind == "f" and size in _FLOAT_CODES)
        or (kind in "iu" and size in _INT_CODES)
        or (kind == "b" and size == 1)
        or (kind == "U" and size > 0)
    )
    if not supported:
        raise _fail(path, member, "unsupported dtype {!r}".format(descr))
    return order, kind, size


def _decode_values(body: bytes, order: str, kind: str, size: int, count: int):
    if kind == "U":
        characters = size
        text = body.decode("utf-32-be" if order == ">" else "utf-32-le")
        return tuple(text[i * characters:(i + 1) * characters].rstrip("\x00") for i in range(count))
    if kind == "b":
        return array("d", (1.0 if byte else 0.0 for byte in body))
    code = _FLOAT_CODES[size] if kind == "f" else _INT_CODES[size]
    if kind == "u":
        code = code.upper()
    if code == "e":  # array has no half floats; struct does
        return array("d", struct.unpack(order + "{}e".format(count), body))
    values = array(code)
    if values.itemsize != size:
        return array("d", struct.unpack(order + "{}{}".format(count, code), body))
    values.frombytes(body)
    if (order == ">") != (sys.byteorder == "big") and size > 1:
        values.byteswap()
    return array("d", values)


def _fortran_to_c(values, shape: Tuple[int, ...]):
    """Reorder values stored column-major (Fortran) into row-major (C) order."""
    if len(shape) < 2:
        return values
    fortran_strides = []
    stride = 1
    for extent in shape:  # the first axis varies fastest in Fortran order
        fortran_strides.append(stride)
        stride *= extent
    ordered = []
    index = [0] * len(shape)
    for _ in range(len(values)):
        ordered.append(values[sum(i * s for i, s in zip(index, fortran_strides))])
        for axis in range(len(shape) - 1, -1, -1):  # C order: the last axis varies fastest
            index[axis] += 1
            if index[axis] < shape[axis]:
                break
            index[axis] = 0
    return array("d", ordered) if isinstance(values, array) else tuple(ordered)


def _layout(data: bytes, path, member: str):
    """(header, offset, dtype parts, shape, body byte count) from the start of a .npy file."""
    header, offset = _parse_header(data, path, member)
    order, kind, size = _check_dtype(header["descr"], path, member)
    shape = header["shape"]
    if not isinstance(shape, tuple) or not all(isinstance(e, int) and e >= 0 for e in shape):
        raise _fail(path, member, "unreadable .npy header")
    count = 1
    for extent in shape:
        count *= extent
    itemsize = size * 4 if kind == "U" else size
    return header, offset, (order, kind, size), shape, count * itemsize


def _shorter(path, member: str, present: int, declared: int) -> KimodoError:
    return _fail(path, member, "data is shorter than its header declares ({} of {} bytes)".format(present, declared))


def parse_npy(data: bytes, path="", member: str = "array") -> NpyArray:
    """One .npy file's bytes -> NpyArray. `path` and `member` only name the source in errors."""
    header, offset, (order, kind, size), shape, body_bytes = _layout(data, path, member)
    body = data[offset:offset + body_bytes]
    if len(body) != body_bytes:
        raise _shorter(path, member, len(body), body_bytes)
    count = body_bytes // (size * 4 if kind == "U" else size)
    try:
        values = _decode_values(body, order, kind, size, count)
    except UnicodeDecodeError:  # a '<U' array holding code points beyond Unicode
        raise _fail(path, member, "holds text that is not valid UTF-32") from None
    if header["fortran_order"]:
        values = _fortran_to_c(values, shape)
    canonical = "|b1" if kind == "b" else ("<" if size > 1 or kind == "U" else "|") + kind + str(size)
    return NpyArray(canonical, shape, values)


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path, budget: int) -> NpyArray:
    """One archive member, its sizes checked before anything is decompressed: the zip's declared size
    against `budget` (and, for stored and deflated members, against the bytes stored), then the .npy
    header's declared data against the zip's size. Decompression is streamed and capped at the declared
    size, whatever the compressed data would expand to."""
    member = info.filename
    if info.compress_type not in _METHODS or (info.compress_type == zipfile.ZIP_LZMA and lzma is None):
        raise _fail(path, member, "compression method {} is not supported".format(info.compress_type))
    if info.flag_bits & 0x1:
        raise _fail(path, member, "is encrypted")
    stored_limit = info.compress_size * (1 if info.compress_type == zipfile.ZIP_STORED else _DEFLATE_MAX_RATIO)
    if info.compress_type in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED) and info.file_size > stored_limit:
        raise _fail(path, member, "the archive declares {} bytes but stores {}".format(info.file_size, info.compress_size))
    if info.file_size > budget:
        raise _fail(path, member, "declares {} bytes, more than kimodo-rig reads from an .npz ({} bytes)".format(
            info.file_size, budget))
    with _MemberReader(archive, info) as stream:
        data = stream.read(12)
        start, length = _header_span(data, path, member)
        data += stream.read(max(0, min(start + length, info.file_size) - len(data)))
        _, offset, _, _, body_bytes = _layout(data, path, member)
        if offset + body_bytes > info.file_size:
            raise _shorter(path, member, info.file_size - offset, body_bytes)
        data += stream.read(info.file_size - len(data))
        if len(data) != info.file_size:
            raise _fail(path, member, "holds {} bytes, not the {} the archive declares".format(len(data), info.file_size))
        if stream.read(1):
            raise _fail(path, member, "holds more than the {} bytes the archive declares".format(info.file_size))
        if zlib.crc32(data) != info.CRC:
            raise _fail(path, member, "is damaged (its CRC-32 does not match)")
    return parse_npy(data, path, member)


class _MemberReader:
    """A zip member's bytes, decompressed by us rather than by zipfile: zipfile hands bzip2 and lzma
    whole compressed chunks with no output cap (177 bytes of bzip2 expand to 200 MB). Here every
    decompressor call asks for at most what `read` still wants."""

    def __init__(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
        raw = copy.copy(info)  # the member's stored bytes, as if it were not compressed
        raw.compress_type, raw.file_size, raw.CRC = zipfile.ZIP_STORED, info.compress_size, None
        self._raw = archive.open(raw)
        self._method = info.compress_type
        self._declared = info.file_size
        self._decompressor = None  # type: ignore[var-annotated]
        if self._method == zipfile.ZIP_DEFLATED:
            self._decompressor = zlib.decompressobj(-15)
        elif self._method == zipfile.ZIP_BZIP2:
            self._decompressor = bz2.BZ2Decompressor()
        self._tail = b""  # deflate's input not consumed yet

    def __enter__(self) -> "_MemberReader":
        return self

    def __exit__(self, *exc) -> None:
        self._raw.close()

    def read(self, size: int) -> bytes:
        parts = []
        while size > 0:
            part = self._next(size)
            if not part:
                break
            parts.append(part)
            size -= len(part)
        return b"".join(parts)

    def _next(self, size: int) -> bytes:
        """Up to `size` decompressed bytes; b"" at the end of the data."""
        if self._method == zipfile.ZIP_STORED:
            return self._raw.read(min(size, _CHUNK))
        if self._method == zipfile.ZIP_LZMA and self._decompressor is None:
            self._decompressor = _lzma_decompressor(self._raw, self._declared)
        decompressor = self._decompressor
        while True:
            if decompressor.eof:
                return b""
            if self._method == zipfile.ZIP_DEFLATED:
                data = self._tail or self._raw.read(_CHUNK)
                out = decompressor.decompress(data, size)  # b"" in: what zlib still holds comes out
                self._tail = decompressor.unconsumed_tail
            else:
                data = self._raw.read(_CHUNK) if decompressor.needs_input else b""
                if decompressor.needs_input and not data:
                    return b""
                out = decompressor.decompress(data, size)
            if out or not data:
                return out


def _lzma_decompressor(raw, declared: int):
    """Zip's LZMA member: a 4-byte header (version, properties size), LZMA1 properties, the raw stream.
    The dictionary the properties ask for (up to 4 GiB, allocated up front) is capped at the declared
    size: no match can reach further back than the output, which stops there."""
    header = raw.read(4)
    if len(header) != 4:
        raise EOFError("truncated LZMA header")
    properties = raw.read(struct.unpack("<H", header[2:4])[0])
    if len(properties) != 5 or properties[0] >= 9 * 5 * 5:
        raise ValueError("bad LZMA properties")
    position, literal = divmod(properties[0], 9)
    position_bits, literal_position_bits = divmod(position, 5)
    return lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=[{
        "id": lzma.FILTER_LZMA1, "dict_size": max(4096, min(struct.unpack("<I", properties[1:5])[0], declared)),
        "lc": literal, "lp": literal_position_bits, "pb": position_bits}])


def npz_names(path) -> List[str]:
    """Array names in an .npz (member names without `.npy`)."""
    with _open_zip(path) as archive:
        return [_array_name(name) for name in archive.namelist() if name.endswith(".npy")]


def read_npz(path, names: Iterable[str] = (), *, numbers: bool = False) -> Dict[str, NpyArray]:
    """Arrays of an .npz by name; `names` limits reading to those present among them (all if empty).
    `numbers`: refuse text arrays among them (every array a motion reader takes holds numbers)."""
    wanted = set(names)
    arrays = {}
    budget = MAX_ARCHIVE_BYTES
    with _open_zip(path) as archive:
        for info in archive.infolist():
            member = info.filename
            name = _array_name(member)
            if not member.endswith(".npy") or (wanted and name not in wanted):
                continue
            try:
                arrays[name] = _read_member(archive, info, path, min(budget, MAX_MEMBER_BYTES))
            except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError) + _DECOMPRESSION_ERRORS as error:
                # RuntimeError: an encrypted member; ValueError: a name that is not UTF-8
                raise _fail(path, member, "cannot be read from the archive ({})".format(error)) from error
            budget -= info.file_size
            if numbers and arrays[name].kind == "U":
                raise _fail(path, member, "holds text ({}) where numbers are expected".format(arrays[name].dtype))
    return arrays


def _array_name(member: str) -> str:
    return member[:-4] if member.endswith(".npy") else member


@contextlib.contextmanager
def _open_zip(path) -> Iterator[zipfile.ZipFile]:
    with open_input(path, str(path)) as stream:
        try:
            archive = zipfile.ZipFile(stream)
        except (zipfile.BadZipFile, OSError) as error:
            raise KimodoError("{}: not an .npz file (not a zip archive)".format(path)) from error
        except (NotImplementedError, ValueError, EOFError) as error:  # e.g. a damaged version or name field
            raise KimodoError("{}: unreadable .npz (zip) archive ({})".format(path, error)) from error
        with archive:
            yield archive


# ---- writing ---------------------------------------------------------------------------------------------

def npy_bytes(array_: NpyArray) -> bytes:
    """A .npy file (format 1.0) holding `array_`; dtype one of <f4, <f8, |b1, <i4, <i8, <U<n>."""
    dtype = array_.dtype
    shape_text = "({},)".format(array_.shape[0]) if len(array_.shape) == 1 else "({})".format(
        ", ".join(str(e) for e in array_.shape))
    header = "{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}".format(dtype, shape_text)
    padding = _HEADER_ALIGNMENT - (len(MAGIC) + 4 + len(header) + 1) % _HEADER_ALIGNMENT
    header_bytes = (header + " " * (padding % _HEADER_ALIGNMENT) + "\n").encode("latin-1")
    return MAGIC + b"\x01\x00" + struct.pack("<H", len(header_bytes)) + header_bytes + _encode_values(array_)


def _encode_values(array_: NpyArray) -> bytes:
    kind, size = array_.dtype[1], int(array_.dtype[2:])
    if kind == "U":
        return b"".join(text[:size].ljust(size, "\x00").encode("utf-32-le") for text in array_.values)
    if kind == "b":
        return bytes(1 if v else 0 for v in array_.values)
    if kind == "f":
        values = array(_FLOAT_CODES[size], array_.values)
    elif kind == "i":
        values = array("q" if size == 8 else "i", (int(v) for v in array_.values))
        if values.itemsize != size:
            return struct.pack("<{}{}".format(len(values), "q" if size == 8 else "i"), *values)
    else:
        raise ValueError("cannot write dtype " + array_.dtype)
    if sys.byteorder == "big":
        values.byteswap()
    return values.tobytes()


def npz_bytes(arrays: Sequence[Tuple[str, NpyArray]]) -> bytes:
    """An .npz archive (stored, uncompressed, as numpy.savez writes it) of named arrays, in order."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, value in arrays:
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            archive.writestr(info, npy_bytes(value))
    return buffer.getvalue()


def write_npz(path, arrays: Sequence[Tuple[str, NpyArray]]) -> None:
    for name, value in arrays:
        if isinstance(value.values, array) and not all(math.isfinite(v) for v in value.values):
            raise KimodoError("{}: {} would hold values that are not finite numbers".format(path, name))
    write_bytes_atomic(path, npz_bytes(arrays))


def float32(shape: Tuple[int, ...], values: Iterable[float]) -> NpyArray:
    return NpyArray("<f4", tuple(shape), array("d", values))


def float64(shape: Tuple[int, ...], values: Iterable[float]) -> NpyArray:
    return NpyArray("<f8", tuple(shape), array("d", values))
