"""EXT_meshopt_compression's attribute codec (mode 0, "ATTRIBUTES") and its filters, decoded as the
extension's Appendix A and B specify them (KhronosGroup/glTF, extensions/2.0/Vendor/EXT_meshopt_compression):
what gltfpack -c writes for vertex data and a skin's inverse bind matrices. The index modes (triangles,
indices) are not decoded: kimodo-rig reads a character's vertices, never its faces."""
from __future__ import annotations

import math
import struct

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import List

ATTRIBUTES_HEADER = 0xA0  # version 0, the only one the ratified extension allows
GROUP = 16  # elements per group of deltas
TAIL_MIN = 32  # bytes: the tail (the baseline element) is padded to at least this


class MeshoptError(ValueError):
    """The stream is not what its bufferView says it holds."""


def decode_attributes(data: bytes, count: int, stride: int) -> bytes:
    """`count` elements of `stride` bytes from an attribute stream (header 0xa0, attribute blocks, the
    baseline element in the tail)."""
    if not (0 < stride <= 256 and stride % 4 == 0):
        raise MeshoptError("byteStride {} is not a multiple of 4 up to 256".format(stride))
    tail = max(stride, TAIL_MIN)
    if len(data) < 1 + tail or data[0] != ATTRIBUTES_HEADER:
        raise MeshoptError("not an attribute stream of version 0 (header {})".format(
            "0x{:02x}".format(data[0]) if data else "missing"))
    if len(data) * 64 < count * stride:  # 2 header bits per 16 elements of each byte at the least
        raise MeshoptError("{} bytes cannot hold {} elements of {} bytes".format(len(data), count, stride))
    baseline = bytearray(data[len(data) - stride:])
    block_max = min((8192 // stride) & ~(GROUP - 1), 256)
    out = bytearray(count * stride)
    at = 1
    end = len(data) - tail
    done = 0
    while done < count:
        elements = min(block_max, count - done)
        padded = (elements + GROUP - 1) // GROUP * GROUP
        for byte in range(stride):
            deltas, at = _data_block(data, at, end, padded)
            value = baseline[byte]
            for i in range(elements):
                d = deltas[i]
                value = (value + ((d >> 1) ^ -(d & 1))) & 0xFF  # zigzag back to a signed delta, 8-bit wrap
                out[(done + i) * stride + byte] = value
            baseline[byte] = value
        done += elements
    if at != end:
        raise MeshoptError("the stream holds {} bytes more than {} elements need".format(end - at, count))
    return bytes(out)


def _data_block(data: bytes, at: int, end: int, padded: int) -> "tuple":
    """One byte position's deltas for `padded` elements: 2 header bits per group of 16, then the groups."""
    groups = padded // GROUP
    header_size = (groups + 3) // 4
    if at + header_size > end:
        raise MeshoptError("the stream ends inside a block header")
    header = data[at:at + header_size]
    at += header_size
    deltas: List[int] = []
    for g in range(groups):
        mode = (header[g // 4] >> ((g % 4) * 2)) & 3
        if mode == 0:
            deltas.extend([0] * GROUP)
            continue
        if mode == 3:
            if at + GROUP > end:
                raise MeshoptError("the stream ends inside a group")
            deltas.extend(data[at:at + GROUP])
            at += GROUP
            continue
        bits = 2 if mode == 1 else 4
        packed = GROUP * bits // 8
        sentinel = (1 << bits) - 1
        if at + packed > end:
            raise MeshoptError("the stream ends inside a group")
        extra = at + packed
        for k in range(packed):
            byte = data[at + k]
            for shift in range(8 - bits, -1, -bits):  # most significant first
                value = (byte >> shift) & sentinel
                if value == sentinel:  # the delta is the next explicit byte
                    if extra >= end:
                        raise MeshoptError("the stream ends inside a group")
                    value = data[extra]
                    extra += 1
                deltas.append(value)
        at = extra
    return deltas, at


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
