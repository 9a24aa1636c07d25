"""Binary FBX 7.x node records, in and out: the file as a tree of named nodes, each with a list of typed
properties and its child nodes. What the nodes mean (models, deformers, curves) is formats/fbx.py's.

Layout (FBX 7.4 and 7.5, little-endian): a 27-byte header (magic, 0x1a 0x00, the version as uint32), then
node records to a null record, then a footer. A record is end offset, property count, property bytes
(uint32 each before 7.5, uint64 from 7.5), the name's length (uint8) and name, the properties, the child
records and, where there are children, a null record. A property is a type code and its value:
  Y int16, C bool (1 byte), I int32, F float32, D float64, L int64, S and R a uint32 length and bytes;
  f d l i b arrays: count, encoding (0 raw, 1 zlib deflate), byte length, the bytes.

Values in Python: int (I), Long/Short subclasses of int for L and Y, bool (C), float (D), Single for F,
str (S, UTF-8; FBX joins an object's name and class with "\\x00\\x01"), bytes (R), and array('f' 'd' 'q'
'i' 'b') for the arrays (array('B') writes as b too). Reading gives the same kinds back, so a file read
and written again keeps its property types.

Reading is bounded: every offset and length is checked against the bytes before use, an array's declared
size against the file's budget before it is inflated, inflation is capped at the declared size, and nodes
nest at most MAX_DEPTH deep. Any problem is one KimodoError line naming the file.
"""
from __future__ import annotations

import struct
import zlib
from array import array
TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ..errors import KimodoError

MAGIC = b"Kaydara FBX Binary  \x00\x1a\x00"
HEADER_BYTES = len(MAGIC) + 4
MIN_VERSION = 7000
MAX_VERSION = 7999
WIDE_VERSION = 7500  # from 7.5 on, record offsets and counts are uint64
MAX_DEPTH = 32  # FBX nests about 6 deep (Objects > Geometry > LayerElement > ...)
# Bytes all arrays of one file may inflate to: no character or motion needs more (a 1 M-vertex mesh's
# positions, normals, UVs and weights are about 100 MB), and a deflate bomb stops here.
MAX_ARRAY_BYTES = 1 << 28
# Bytes a file's compressed arrays may inflate to, all told: this many times the file's own size (with a
# floor for small files). Real files inflate to at most about 1x (Quaternius 0.25x, Blender's exporter
# 0.8x), while a 98 KB file of zeros deflated at 1028:1 (within DEFLATE_MAX_RATIO) claimed 100 MB of
# vertices and took 48 s and 2.3 GB before it was refused further on.
INFLATE_BYTES_PER_FILE_BYTE = 64
INFLATE_BYTES_FLOOR = 1 << 22
# Deflate never expands more than 1032:1: a compressed array claiming more than this per stored byte
# is refused before inflating.
DEFLATE_MAX_RATIO = 1032
COMPRESS_FROM_BYTES = 128  # arrays this large or larger are written deflated (as the FBX SDK does)
ARRAY_ITEM = {"f": ("f", 4), "d": ("d", 8), "l": ("q", 8), "i": ("i", 4), "b": ("b", 1)}
ARRAY_CODE = {"f": "f", "d": "d", "q": "l", "i": "i", "b": "b", "B": "b"}
SCALAR = {"Y": struct.Struct("<h"), "C": struct.Struct("<?"), "I": struct.Struct("<i"), "F": struct.Struct("<f"),
          "D": struct.Struct("<d"), "L": struct.Struct("<q")}
_UINT32 = struct.Struct("<I")
_ARRAY_HEAD = struct.Struct("<III")
_RECORD_HEAD = {False: struct.Struct("<IIIB"), True: struct.Struct("<QQQB")}
# The footer the FBX SDK writes and Blender copies; readers ignore it, but some check its magic tail.
_FOOTER_ID = b"\xfa\xbc\xab\x09\xd0\xc8\xd4\x66\xb1\x76\xfb\x83\x1c\xf7\x26\x7e"
_FOOTER_MAGIC = b"\xf8\x5a\x8c\x6a\xde\xf5\xd9\x7e\xec\xe9\x0c\xe3\x75\x8f\x29\x0b"
# The FileId every file carries (the value Blender's exporter writes; readers do not check it).
FILE_ID = b"\x28\xb3\x2a\xeb\xb6\x24\xcc\xc2\xbf\xc8\xb0\x2a\xa9\x2b\xfc\xf1"
_SWAP = struct.pack("=H", 1) != struct.pack("<H", 1)  # a big-endian host swaps arrays to and from disk


class Long(int):
    """An int written as FBX L (int64): object ids, times."""


class Short(int):
    """An int written as FBX Y (int16)."""


class Single(float):
    """A float written as FBX F (float32)."""


_READ_AS = {"Y": Short, "C": bool, "I": int, "F": Single, "D": float, "L": Long}
_SCALAR_OF_BYTE = {ord(code): (SCALAR[code], kind) for code, kind in _READ_AS.items()}  # type byte -> reading
_STRING = ord("S")
# Scalars written by their exact Python type: type code and packing (_write_property's order for others).
_SCALAR_OF_TYPE = {kind: (code.encode("ascii"), SCALAR[code].pack) for code, kind in _READ_AS.items()}


class Node:
    """One FBX node record: its name, its properties and its child nodes."""

    __slots__ = ("name", "properties", "children")

    def __init__(self, name: str, properties: Sequence[Any] = (), children: Sequence["Node"] = ()) -> None:
        self.name = name
        self.properties = list(properties)
        self.children = list(children)

    def add(self, name: str, *properties: Any) -> "Node":
        """Append a child node and return it."""
        child = Node(name, properties)
        self.children.append(child)
        return child

    def find(self, name: str) -> Optional["Node"]:
        """The first child named `name`, or None."""
        for child in self.children:
            if child.name == name:
                return child
        return None

    def find_all(self, name: str) -> Iterator["Node"]:
        return (child for child in self.children if child.name == name)

    def __repr__(self) -> str:
        return "Node({!r}, {} properties, {} children)".format(self.name, len(self.properties), len(self.children))


# --- writing ---------------------------------------------------------------------------------------

def encode(nodes: Sequence[Node], version: int = 7400) -> bytes:
    """The bytes of a binary FBX file holding the top-level `nodes`."""
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise ValueError("FBX version {} is not 7.x".format(version))
    wide = version >= WIDE_VERSION
    out = bytearray(MAGIC)
    out += _UINT32.pack(version)
    write_node = _node_writer(out, wide)
    for node in nodes:
        write_node(node)
    out += _null_record(wide)
    out += _FOOTER_ID + bytes(4)
    out += bytes(16 - len(out) % 16)  # to 16-byte alignment (a whole 16 when already aligned, as the SDK does)
    out += _UINT32.pack(version) + bytes(120) + _FOOTER_MAGIC
    return bytes(out)


def _null_record(wide: bool) -> bytes:
    return bytes(_RECORD_HEAD[wide].size)


_NULL_RECORD = {wide: _null_record(wide) for wide in (False, True)}


# Nodes the FBX SDK always closes with a null record, even without children (Blender's writer does too).
_ALWAYS_CLOSED = frozenset(("AnimationStack", "AnimationLayer"))


def _node_writer(out: bytearray, wide: bool) -> Callable[[Node], None]:
    """A function that appends a node's record (its children's inside) to `out`. What a file repeats is
    encoded once (writing speed): each node name, each string value (object classes, a Properties70
    row's type names), each array's deflated bytes (a take's key times recur in every curve)."""
    head = _RECORD_HEAD[wide]
    null = _NULL_RECORD[wide]
    put = out.extend
    openings: Dict[str, Tuple[bytes, int]] = {}  # name -> the record's start (head to fill in, name), name's length
    strings: Dict[str, bytes] = {}  # value -> its S property
    deflated: Dict[bytes, bytes] = {}
    scalar_of_type = _SCALAR_OF_TYPE

    def write_node(node: Node) -> None:
        opening = openings.get(node.name)
        if opening is None:
            name = node.name.encode("utf-8")
            if len(name) > 255:
                raise ValueError("FBX node name longer than 255 bytes: {!r}".format(node.name))
            opening = openings[node.name] = (null + name, len(name))
        start = len(out)
        put(opening[0])
        properties = node.properties
        properties_start = len(out)
        for value in properties:
            kind = type(value)
            if kind is str:
                packed = strings.get(value)
                if packed is None:
                    data = value.encode("utf-8")
                    packed = strings[value] = b"S" + _UINT32.pack(len(data)) + data
                put(packed)
                continue
            scalar = scalar_of_type.get(kind)  # the common kinds by their exact type
            if scalar is not None:
                put(scalar[0])
                put(scalar[1](value))
            else:
                _write_property(out, value, deflated)
        properties_length = len(out) - properties_start
        children = node.children
        for child in children:
            write_node(child)
        if children or not properties or node.name in _ALWAYS_CLOSED:
            put(null)
        head.pack_into(out, start, len(out), len(properties), properties_length, opening[1])

    return write_node


def _write_property(out: bytearray, value: Any, deflated: Optional[Dict[bytes, bytes]] = None) -> None:
    if isinstance(value, array) and value.typecode in ARRAY_CODE:  # first: the encoder's fast path takes the rest
        _write_array(out, value, deflated)
    elif isinstance(value, bool):
        out += b"C" + SCALAR["C"].pack(value)
    elif isinstance(value, Long):
        out += b"L" + SCALAR["L"].pack(value)
    elif isinstance(value, Short):
        out += b"Y" + SCALAR["Y"].pack(value)
    elif isinstance(value, int):
        out += b"I" + SCALAR["I"].pack(value)
    elif isinstance(value, Single):
        out += b"F" + SCALAR["F"].pack(value)
    elif isinstance(value, float):
        out += b"D" + SCALAR["D"].pack(value)
    elif isinstance(value, str):
        data = value.encode("utf-8")
        out += b"S" + _UINT32.pack(len(data)) + data
    elif isinstance(value, (bytes, bytearray)):
        out += b"R" + _UINT32.pack(len(value)) + bytes(value)
    else:
        raise TypeError("no FBX property type for {!r}".format(type(value).__name__))


def _write_array(out: bytearray, value: array, deflated: Optional[Dict[bytes, bytes]]) -> None:
    code = ARRAY_CODE[value.typecode]
    if value.typecode == "B":
        value = array("b", value.tobytes())
    if _SWAP:
        value = array(value.typecode, value)
        value.byteswap()
    raw = value.tobytes()
    if len(raw) >= COMPRESS_FROM_BYTES:
        packed = deflated.get(raw) if deflated is not None else None
        if packed is None:
            packed = zlib.compress(raw, 6)
            if deflated is not None:
                deflated[raw] = packed
        out += code.encode("ascii") + _ARRAY_HEAD.pack(len(value), 1, len(packed)) + packed
    else:
        out += code.encode("ascii") + _ARRAY_HEAD.pack(len(value), 0, len(raw)) + raw


# --- reading ---------------------------------------------------------------------------------------

def is_ascii_fbx(data: bytes) -> bool:
    """Whether `data` looks like an ASCII FBX (a `; FBX 7.x` comment or a FBXHeaderExtension block)."""
    head = data[:1024].lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith(b";") or head.startswith(b"FBXHeaderExtension")


def decode(data: bytes, source: str) -> List[Node]:
    """The top-level nodes of binary FBX `data`; `source` names the file in errors."""
    if not data.startswith(MAGIC):
        if is_ascii_fbx(data):
            raise KimodoError("{}: ASCII FBX is not read; save it as binary FBX".format(source))
        if len(data) < len(MAGIC) and MAGIC.startswith(data):
            raise KimodoError("{}: truncated FBX: {} bytes, shorter than the header".format(source, len(data)))
        raise KimodoError("{}: not a binary FBX file (no 'Kaydara FBX Binary' header)".format(source))
    if len(data) < HEADER_BYTES:
        raise KimodoError("{}: truncated FBX: {} bytes, shorter than the header".format(source, len(data)))
    version = _UINT32.unpack_from(data, len(MAGIC))[0]
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise KimodoError("{}: FBX version {} is not read (binary FBX 7.x only)".format(source, version))
    return _Reader(data, source, version >= WIDE_VERSION).top_level()


def version_of(data: bytes) -> int:
    """The version number in a binary FBX header (decode checks it)."""
    return _UINT32.unpack_from(data, len(MAGIC))[0]


class _Reader:
    def __init__(self, data: bytes, source: str, wide: bool) -> None:
        self.bytes = bytes(data)
        self.data = memoryview(self.bytes)
        self.size = len(data)
        self.source = source
        self.head = _RECORD_HEAD[wide]
        self.array_bytes_left = MAX_ARRAY_BYTES
        self.inflate_budget = max(INFLATE_BYTES_FLOOR, INFLATE_BYTES_PER_FILE_BYTE * self.size)
        self.inflate_bytes_left = self.inflate_budget

    def fail(self, offset: int, what: str) -> KimodoError:
        return KimodoError("{}: corrupt FBX at byte {}: {}".format(self.source, offset, what))

    def top_level(self) -> List[Node]:
        nodes: List[Node] = []
        offset = HEADER_BYTES
        while True:
            node, offset = self.record(offset, self.size, 0)
            if node is None:  # the null record that ends the top level
                return nodes
            nodes.append(node)

    def record(self, offset: int, limit: int, depth: int):
        """The node at `offset` (which must end by `limit`) and the offset after it; (None, next) for a
        null record."""
        head = self.head
        if offset + head.size > limit:
            if limit == self.size and offset >= self.size - 1:
                raise self.fail(offset, "the file ends before its last node record (truncated)")
            raise self.fail(offset, "a node record runs past the end of its parent or the file")
        end, count, properties_length, name_length = head.unpack_from(self.data, offset)
        if end == 0:
            if count or properties_length or name_length:
                raise self.fail(offset, "a null record holds values")
            return None, offset + head.size
        if depth >= MAX_DEPTH:
            raise self.fail(offset, "nodes nest more than {} deep".format(MAX_DEPTH))
        name_start = offset + head.size
        properties_start = name_start + name_length
        children_start = properties_start + properties_length
        if not (name_start <= properties_start <= children_start <= end <= limit):
            raise self.fail(offset, "a node record's lengths point past its end or the end of the file")
        if count > properties_length:  # each property takes at least one byte (its type code)
            raise self.fail(offset, "a node claims {} properties in {} bytes".format(count, properties_length))
        raw = self.bytes
        try:
            name = raw[name_start:properties_start].decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(name_start, "a node name is not UTF-8") from None
        properties = []
        at = properties_start
        for _ in range(count):
            # A scalar or a string that fits is read here (most of a file's values: reading speed);
            # anything else, and every problem, by self.property.
            if at < children_start:
                scalar = _SCALAR_OF_BYTE.get(raw[at])
                if scalar is not None:
                    packing, kind = scalar
                    if at + 1 + packing.size <= children_start:
                        properties.append(kind(packing.unpack_from(raw, at + 1)[0]))
                        at += 1 + packing.size
                        continue
                elif raw[at] == _STRING and at + 5 <= children_start:
                    end_of_text = at + 5 + _UINT32.unpack_from(raw, at + 1)[0]
                    if end_of_text <= children_start:
                        properties.append(raw[at + 5:end_of_text].decode("utf-8", "surrogateescape"))
                        at = end_of_text
                        continue
            value, at = self.property(at, children_start)
            properties.append(value)
        if at != children_start:
            raise self.fail(at, "node {!r}'s properties do not fill their declared {} bytes".format(name, properties_length))
        node = Node(name, properties)
        if children_start < end:
            at = children_start
            while True:
                child, at = self.record(at, end, depth + 1)
                if child is None:
                    break
                node.children.append(child)
            if at != end:
                raise self.fail(at, "node {!r}'s children do not end where the node does".format(name))
        return node, end

    def property(self, at: int, limit: int):
        if at >= limit:
            raise self.fail(at, "a property runs past its node's property bytes")
        code = chr(self.data[at])
        at += 1
        scalar = SCALAR.get(code)
        if scalar is not None:
            if at + scalar.size > limit:
                raise self.fail(at, "a {} property runs past its node's property bytes".format(code))
            value = scalar.unpack_from(self.data, at)[0]
            return _READ_AS[code](value), at + scalar.size
        if code in "SR":
            if at + 4 > limit:
                raise self.fail(at, "a string's length runs past its node's property bytes")
            length = _UINT32.unpack_from(self.data, at)[0]
            at += 4
            if at + length > limit:
                raise self.fail(at, "a string of {} bytes runs past its node's property bytes".format(length))
            raw = bytes(self.data[at:at + length])
            if code == "R":
                return raw, at + length
            return raw.decode("utf-8", "surrogateescape"), at + length
        item = ARRAY_ITEM.get(code)
        if item is None:
            raise self.fail(at - 1, "unknown property type {!r}".format(code))
        if at + _ARRAY_HEAD.size > limit:
            raise self.fail(at, "an array's header runs past its node's property bytes")
        count, encoding, stored = _ARRAY_HEAD.unpack_from(self.data, at)
        at += _ARRAY_HEAD.size
        if at + stored > limit:
            raise self.fail(at, "an array of {} bytes runs past its node's property bytes".format(stored))
        typecode, width = item
        expected = count * width
        if expected > self.array_bytes_left:
            raise self.fail(at, "an array of {} elements is more than a file may hold ({} bytes of arrays)".format(
                count, MAX_ARRAY_BYTES))
        raw = self.data[at:at + stored]
        if encoding == 0:
            if stored != expected:
                raise self.fail(at, "an array of {} elements holds {} bytes, not {}".format(count, stored, expected))
            raw = bytes(raw)
        elif encoding == 1:
            if expected > DEFLATE_MAX_RATIO * stored + 64:
                raise self.fail(at, "a compressed array claims {} elements, more than its {} bytes can hold".format(
                    count, stored))
            if expected > self.inflate_bytes_left:
                raise self.fail(at, "compressed arrays of a {}-byte file inflate to more than {} bytes "
                                    "(one of {} elements)".format(self.size, self.inflate_budget, count))
            self.inflate_bytes_left -= expected
            inflater = zlib.decompressobj()
            try:
                # Capped one byte past the declared size: a bomb stops there, and a stream that fits
                # exactly is read to its end (so a missing end or checksum is noticed).
                raw = inflater.decompress(raw, expected + 1)
            except zlib.error as error:
                raise self.fail(at, "a compressed array does not inflate ({})".format(error)) from None
            if len(raw) != expected or inflater.unconsumed_tail or not inflater.eof:
                raise self.fail(at, "a compressed array does not inflate to its declared {} elements".format(count))
        else:
            raise self.fail(at - _ARRAY_HEAD.size, "unknown array encoding {}".format(encoding))
        self.array_bytes_left -= expected
        values = array(typecode, raw)
        if _SWAP:
            values.byteswap()
        return values, at + stored
