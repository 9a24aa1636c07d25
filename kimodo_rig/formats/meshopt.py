"""The meshopt attribute codec (mode 0, "ATTRIBUTES": version 0 of EXT_meshopt_compression, version 1 of
KHR_meshopt_compression) and its filters, decoded as the extensions' Appendix A and B specify them
(KhronosGroup/glTF, extensions/2.0/Vendor/EXT_meshopt_compression, Khronos/KHR_meshopt_compression): what
gltfpack -c writes for vertex data and a skin's inverse bind matrices. The index modes (triangles,
indices) are not decoded: kimodo-rig reads a character's vertices, never its faces."""
from __future__ import annotations

import math
import operator
import struct
import sys
from array import array
from itertools import accumulate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import List, Sequence, Tuple

ATTRIBUTES_HEADER = 0xA0  # | version: 0 (EXT_meshopt_compression) or 1 (KHR_meshopt_compression)
GROUP = 16  # elements per group of deltas
TAIL_MIN = {0: 32, 1: 24}  # bytes: the tail (baseline element, version 1's channel modes) is padded to at least this
# Bits per delta for a group's 2 header bits: version 0, then version 1 by the byte position's control mode
# (0 or 1; 2: all deltas 0, 3: literal bytes). 0 bits: all deltas 0; 8: one byte each.
BIT_LENGTHS = {None: (0, 2, 4, 8), 0: (0, 1, 2, 4), 1: (1, 2, 4, 8)}


class MeshoptError(ValueError):
    """The stream is not what its bufferView says it holds."""


def decode_attributes(data: bytes, count: int, stride: int) -> bytes:
    """`count` elements of `stride` bytes from an attribute stream: header 0xa0 or 0xa1, attribute blocks,
    and the tail (the baseline element; in version 1 also one channel mode per 4 bytes). Each block is
    decoded a byte position, then a channel, at a time with bytes.translate, slices and map/accumulate (C
    loops): the per-byte Python loops this replaced took 20 s per MB of file."""
    if not (0 < stride <= 256 and stride % 4 == 0):
        raise MeshoptError("byteStride {} is not a multiple of 4 up to 256".format(stride))
    version = data[0] - ATTRIBUTES_HEADER if data else -1
    if version not in (0, 1):
        raise MeshoptError("not an attribute stream of version 0 or 1 (header {})".format(
            "0x{:02x}".format(data[0]) if data else "missing"))
    channels = stride // 4 if version == 1 else 0
    tail = max(stride + channels, TAIL_MIN[version])
    if len(data) < 1 + tail:
        raise MeshoptError("{} bytes hold no tail".format(len(data)))
    block_max = min((8192 // stride) & ~(GROUP - 1), 256)
    blocks = (count + block_max - 1) // block_max
    # Each block takes a byte at the least per byte position (version 0) or per 4 (version 1's controls).
    if len(data) < blocks * (stride // 4 if version == 1 else stride):
        raise MeshoptError("{} bytes cannot hold {} elements of {} bytes".format(len(data), count, stride))
    baseline = bytearray(data[len(data) - stride - channels:len(data) - channels])
    modes = data[len(data) - channels:] if channels else bytes(stride // 4)
    for mode in modes:
        if (mode & 15) > 2 or ((mode & 15) < 2 and mode >> 4):
            raise MeshoptError("channel mode 0x{:02x} is none the format has".format(mode))
    out = bytearray(count * stride)
    at = 1
    end = len(data) - tail
    done = 0
    while done < count:
        elements = min(block_max, count - done)
        padded = (elements + GROUP - 1) // GROUP * GROUP
        controls = b""
        if version == 1:
            if at + stride // 4 > end:
                raise MeshoptError("the stream ends inside a block's control bytes")
            controls, at = data[at:at + stride // 4], at + stride // 4
        deltas: List[bytes] = []
        for byte in range(stride):
            control = (controls[byte // 4] >> ((byte % 4) * 2)) & 3 if version == 1 else None
            if control == 2:
                deltas.append(bytes(elements))
            elif control == 3:  # the block's deltas as they are, one byte each (no padding to a group)
                if at + elements > end:
                    raise MeshoptError("the stream ends inside literal deltas")
                deltas.append(data[at:at + elements])
                at += elements
            else:
                column, at = _data_block(data, at, end, padded, BIT_LENGTHS[control])
                deltas.append(column[:elements])
        for channel in range(stride // 4):
            _undelta(out, stride, done, elements, channel * 4, deltas, baseline, modes[channel])
        done += elements
    if at != end:
        raise MeshoptError("the stream holds {} bytes more than {} elements need".format(end - at, count))
    return bytes(out)


_ZIGZAG8 = tuple((d >> 1) ^ -(d & 1) for d in range(256))
_HALVED = (1).__rrshift__  # v >> 1
_LOWEST_BIT = (1).__and__
_LOW_BYTE = (0xFF).__and__
_LOW_TWO_BYTES = (0xFFFF).__and__
_LOW_FOUR_BYTES = (0xFFFFFFFF).__and__
_WORD_CODES = {size: next(code for code in "HILQ" if array(code).itemsize == size) for size in (2, 4)}


def _undelta(out: bytearray, stride: int, done: int, elements: int, first: int, deltas: "List[bytes]",
             baseline: bytearray, mode: int) -> None:
    """One channel's 4 bytes of a block's elements from their deltas: byte deltas (mode 0), 2-byte deltas
    (1) or 4-byte XOR deltas rotated by the mode's high 4 bits (2), each from the element before (the
    baseline before the first), which the baseline then becomes. Running sums and XORs by accumulate;
    2- and 4-byte words by interleaving the byte columns into an array."""
    width = (1, 2, 4)[mode & 15]
    rotation = mode >> 4
    for part in range(first, first + 4, width):
        start = int.from_bytes(baseline[part:part + width], "little")
        if width == 1:
            decoded = bytes(map(_LOW_BYTE, accumulate(map(_ZIGZAG8.__getitem__, deltas[part]), initial=start)))[1:]
        else:
            words = _words(deltas[part:part + width])
            if width == 2:  # zigzag back to signed, (d >> 1) ^ -(d & 1), and wrapped
                signed = map(operator.xor, map(_HALVED, words), map(operator.neg, map(_LOWEST_BIT, words)))
                sums = accumulate(signed, initial=start)
                next(sums)
                values = array(_WORD_CODES[2], map(_LOW_TWO_BYTES, sums))
            else:
                if rotation:  # the encoder rotated left
                    words = map(operator.or_, map((rotation).__rrshift__, words),
                                map(_LOW_FOUR_BYTES, map((32 - rotation).__rlshift__, words)))
                xors = accumulate(words, operator.xor, initial=start)
                next(xors)
                values = array(_WORD_CODES[4], xors)
            if sys.byteorder == "big":
                values.byteswap()
            decoded = values.tobytes()
        for j in range(width):
            column = decoded[j::width]
            out[done * stride + part + j:(done + elements) * stride:stride] = column
            baseline[part + j] = column[-1]


def _words(columns: "Sequence[bytes]") -> "array":
    """Little-endian words of len(columns) bytes, byte j of each from columns[j]."""
    width = len(columns)
    joined = bytearray(width * len(columns[0]))
    for j, column in enumerate(columns):
        joined[j::width] = column
    words = array(_WORD_CODES[width], bytes(joined))
    if sys.byteorder == "big":
        words.byteswap()
    return words


def _splitters(bits: int) -> "Tuple[bytes, ...]":
    """For packed deltas of `bits` bits, one table per place in a byte (the first delta in the most
    significant bits; 1-bit deltas from the least): byte -> that place's delta, for bytes.translate."""
    shifts = range(0, 8) if bits == 1 else range(8 - bits, -1, -bits)
    mask = (1 << bits) - 1
    return tuple(bytes((b >> shift) & mask for b in range(256)) for shift in shifts)


_SPLITTERS = {bits: _splitters(bits) for bits in (1, 2, 4)}


def _data_block(data: bytes, at: int, end: int, padded: int, lengths: "Tuple[int, ...]") -> "tuple":
    """One byte position's deltas for `padded` elements, as bytes: 2 header bits per group of 16 (picking
    the bits per delta from `lengths`), then the groups; a packed delta of all ones (the sentinel) stands
    for the next explicit byte after the group's packed bytes."""
    groups = padded // GROUP
    header_size = (groups + 3) // 4
    if at + header_size > end:
        raise MeshoptError("the stream ends inside a block header")
    header = data[at:at + header_size]
    at += header_size
    deltas = bytearray(padded)
    for g in range(groups):
        bits = lengths[(header[g // 4] >> ((g % 4) * 2)) & 3]
        if bits == 0:
            continue
        first = g * GROUP
        if bits == 8:
            if at + GROUP > end:
                raise MeshoptError("the stream ends inside a group")
            deltas[first:first + GROUP] = data[at:at + GROUP]
            at += GROUP
            continue
        packed = GROUP * bits // 8
        if at + packed > end:
            raise MeshoptError("the stream ends inside a group")
        chunk = data[at:at + packed]
        per_byte = 8 // bits
        for place, table in enumerate(_SPLITTERS[bits]):
            deltas[first + place:first + GROUP:per_byte] = chunk.translate(table)
        at += packed
        sentinel = (1 << bits) - 1
        found = deltas.find(sentinel, first, first + GROUP)
        while found >= 0:  # each sentinel takes the next explicit byte, in element order
            if at >= end:
                raise MeshoptError("the stream ends inside a group")
            deltas[found] = data[at]
            at += 1
            found = deltas.find(sentinel, found + 1, first + GROUP)
    return bytes(deltas), at


def apply_filter(raw: bytes, count: int, stride: int, name: str) -> bytes:
    """The filter (Appendix B) applied to decoded elements: NONE, OCTAHEDRAL, QUATERNION, EXPONENTIAL."""
    if name in ("", "NONE"):
        return raw
    if name == "EXPONENTIAL":
        if stride % 4:
            raise MeshoptError("the exponential filter needs a stride that is a multiple of 4")
        words = struct.unpack("<{}i".format(len(raw) // 4), raw)
        if any(not -100 <= w >> 24 <= 100 for w in words):  # the range the extension allows
            raise MeshoptError("an exponent outside -100..100")
        values = [math.ldexp(((w & 0xFFFFFF) ^ 0x800000) - 0x800000, w >> 24) for w in words]
        return struct.pack("<{}f".format(len(values)), *values)
    if name == "OCTAHEDRAL":
        if stride not in (4, 8):
            raise MeshoptError("the octahedral filter needs a stride of 4 or 8")
        fmt, top = ("b", 127) if stride == 4 else ("h", 32767)
        items = struct.unpack("<{}{}".format(4 * count, fmt), raw)
        out = []
        for i in range(count):
            x, y, one, w = items[4 * i:4 * i + 4]
            one = float(one) or 1.0
            x, y = x / one, y / one
            z = 1.0 - abs(x) - abs(y)
            t = min(z, 0.0)
            x -= math.copysign(t, x)
            y -= math.copysign(t, y)
            size = math.sqrt(x * x + y * y + z * z) or 1.0
            out += [int(round(x / size * top)), int(round(y / size * top)), int(round(z / size * top)), w]
        return struct.pack("<{}{}".format(len(out), fmt), *out)
    if name == "QUATERNION":
        if stride != 8:
            raise MeshoptError("the quaternion filter needs a stride of 8")
        items = struct.unpack("<{}h".format(4 * count), raw)
        out = [0] * (4 * count)
        scale = 1.0 / math.sqrt(2.0)
        for i in range(count):
            a, b, c, last = items[4 * i:4 * i + 4]
            one = float(last | 3)
            x, y, z = a / one * scale, b / one * scale, c / one * scale
            w = math.sqrt(max(0.0, 1.0 - x * x - y * y - z * z))
            big = last & 3
            for k, v in ((1, x), (2, y), (3, z), (0, w)):
                out[4 * i + (big + k) % 4] = int(round(v * 32767.0))
        return struct.pack("<{}h".format(len(out)), *out)
    raise MeshoptError("unknown filter {!r}".format(name))
