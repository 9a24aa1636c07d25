"""glTF 2.0 binary container: build one (JSON + one BIN buffer), parse one, read accessors, and evaluate
a node hierarchy at a keyframe. No Kimodo knowledge here: glb.py maps the model onto it."""
from __future__ import annotations

import json
import math
import os
import struct
import sys
from array import array
TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from ..errors import KimodoError
from ..files import read_input
from ..rotations import Quat, Vec3, rotation_quat
from . import draco, meshopt
from .limits import parse_json

GLB_MAGIC = 0x46546C67  # "glTF"
CHUNK_JSON = 0x4E4F534A
CHUNK_BIN = 0x004E4942

FLOAT = 5126
UNSIGNED_BYTE = 5121
UNSIGNED_SHORT = 5123
UNSIGNED_INT = 5125
ARRAY_BUFFER = 34962
ELEMENT_ARRAY_BUFFER = 34963

_COMPONENT_FORMATS = {5120: "b", 5121: "B", 5122: "h", 5123: "H", 5125: "I", 5126: "f"}
_TYPE_SIZES = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}
# An accessor without a buffer view is all zeros: no bytes back its count, so cap it (animation keys and
# bind matrices never come this way in practice).
MAX_ZERO_ITEMS = 1 << 16
# Items all accessors of one document may decode together, beyond one per byte of the binary chunk:
# accessors may overlap (or have no data at all), so without a budget a small file decodes to gigabytes.
DECODE_BUDGET_ITEMS = 1 << 20
# Bytes all meshopt-compressed views of one document may decode to, per byte of its binary chunk, and
# beyond that for any file. gltfpack's vertex streams decode to 2-5 times their size (tests/data/rigs/
# meshopt: 3-4), a version 0 stream to 64 times at most; a version 1 stream of all-zero blocks claims
# 1,024 times its size, a gigabyte from a 1 MB file.
MESHOPT_EXPANSION = 64
MESHOPT_BUDGET_BYTES = 1 << 20


class DocumentBuilder:
    """Accumulates accessors into one binary buffer, each 4-byte aligned, one bufferView each."""

    def __init__(self) -> None:
        self.gltf: Dict[str, Any] = {"asset": {"version": "2.0", "generator": "kimodo-rig"}}
        self.binary = bytearray()

    def add_accessor(
        self,
        values: Sequence[Sequence[float]],
        accessor_type: str,
        component_type: int = FLOAT,
        target: Optional[int] = None,
        with_bounds: bool = False,
    ) -> int:
        width = _TYPE_SIZES[accessor_type]
        flat = [c for item in values for c in item]
        if len(flat) != width * len(values):
            raise ValueError("accessor items must all have {} components".format(width))
        return self.add_components(flat, accessor_type, component_type, target, with_bounds)

    def add_components(self, flat: Sequence[float], accessor_type: str, component_type: int = FLOAT,
                       target: Optional[int] = None, with_bounds: bool = False) -> int:
        """`add_accessor` of items laid end to end in one flat list (no per-item tuples to build)."""
        width = _TYPE_SIZES[accessor_type]
        fmt = _COMPONENT_FORMATS[component_type]
        if len(flat) % width:
            raise ValueError("accessor items must all have {} components".format(width))
        packed = struct.pack("<{}{}".format(len(flat), fmt), *flat)
        stored = struct.unpack("<{}{}".format(len(flat), fmt), packed) if with_bounds else ()
        return self._add_packed(packed, len(flat) // width, accessor_type, component_type, target, stored)

    def add_floats(self, flat: array, accessor_type: str, target: Optional[int] = None,
                   with_bounds: bool = False) -> int:
        """A float32 accessor from a flat array('f') of items laid end to end (no per-item tuples: long
        animation channels go in as they are)."""
        width = _TYPE_SIZES[accessor_type]
        if flat.typecode != "f" or len(flat) % width:
            raise ValueError("add_floats takes array('f') of whole {}-component items".format(width))
        if sys.byteorder == "big":
            flat = array("f", flat)
            flat.byteswap()
            packed = flat.tobytes()
            flat.byteswap()
        else:
            packed = flat.tobytes()
        return self._add_packed(packed, len(flat) // width, accessor_type, FLOAT, target, flat if with_bounds else ())

    def _add_packed(self, packed: bytes, count: int, accessor_type: str, component_type: int,
                    target: Optional[int], stored: Sequence[float]) -> int:
        """Append one accessor's bytes (4-byte aligned) with its own bufferView; `stored`, when given, are
        the values as stored (float32), whose bounds go in min/max, which is what validators compare."""
        while len(self.binary) % 4:
            self.binary.append(0)
        offset = len(self.binary)
        self.binary += packed
        view: Dict[str, Any] = {"buffer": 0, "byteOffset": offset, "byteLength": len(packed)}
        if target is not None:
            view["target"] = target
        views = self.gltf.setdefault("bufferViews", [])
        views.append(view)
        accessor: Dict[str, Any] = {
            "bufferView": len(views) - 1,
            "componentType": component_type,
            "count": count,
            "type": accessor_type,
        }
        if len(stored):
            width = _TYPE_SIZES[accessor_type]
            accessor["min"] = [min(stored[i::width]) for i in range(width)]
            accessor["max"] = [max(stored[i::width]) for i in range(width)]
        accessors = self.gltf.setdefault("accessors", [])
        accessors.append(accessor)
        return len(accessors) - 1

    def _close_buffer(self) -> None:
        while len(self.binary) % 4:
            self.binary.append(0)
        # Buffer 0 is the binary chunk; any others (a meshopt fallback buffer, which holds no bytes) stay.
        self.gltf["buffers"] = [{"byteLength": len(self.binary)}] + list(self.gltf.get("buffers") or [])[1:]

    def to_document(self, source: str) -> "Document":
        """The document parse_glb reads from to_glb's bytes (its structure checked as parse_glb checks it),
        without writing and parsing them: for a writer of another container (.fbx). The builder's JSON
        becomes the document's: build no more with it."""
        self._close_buffer()
        check_structure(self.gltf, source)
        return Document(self.gltf, bytes(self.binary), source)

    def to_glb(self) -> bytes:
        self._close_buffer()
        text = json.dumps(self.gltf, separators=(",", ":")).encode("utf-8")
        text += b" " * (-len(text) % 4)
        total = 12 + 8 + len(text) + 8 + len(self.binary)
        return b"".join(
            (
                struct.pack("<III", GLB_MAGIC, 2, total),
                struct.pack("<II", len(text), CHUNK_JSON),
                text,
                struct.pack("<II", len(self.binary), CHUNK_BIN),
                self.binary,  # joined as it is: no second copy of a long clip's keys
            )
        )


class Document:
    """A parsed GLB: its JSON and its binary chunk, with accessor reading."""

    def __init__(self, gltf: Dict[str, Any], binary: bytes, source: str) -> None:
        self.gltf = gltf
        self.binary = binary
        self.source = source
        self._decoded: Dict[int, List[Tuple[float, ...]]] = {}
        self._budget = DECODE_BUDGET_ITEMS + len(binary)
        self._unpacked: Dict[int, bytes] = {}  # meshopt-compressed buffer views, decoded
        self._meshopt_budget = MESHOPT_EXPANSION * len(binary) + MESHOPT_BUDGET_BYTES
        self._draco_meshes: Dict[int, Any] = {}  # Draco streams (by buffer view), decoded
        self._compressed: Optional[Dict[int, Tuple[int, Optional[int]]]] = None

    def draco_source(self, index: int) -> Optional[Tuple[int, Optional[int]]]:
        """(buffer view of the Draco stream, attribute id; None for the indices) that accessor `index`
        stands for in a KHR_draco_mesh_compression primitive, else None."""
        if self._compressed is None:
            self._compressed = {}
            for mesh in self.gltf.get("meshes", []):
                for primitive in mesh.get("primitives", []) if isinstance(mesh, dict) else []:
                    stream = (primitive.get("extensions") or {}).get(draco.EXTENSION) if isinstance(primitive, dict) else None
                    if not isinstance(stream, dict) or not _is_int(stream.get("bufferView")):
                        continue
                    ids = stream.get("attributes") if isinstance(stream.get("attributes"), dict) else {}
                    for name, accessor in (primitive.get("attributes") or {}).items():
                        if _is_int(ids.get(name)):
                            self._compressed[accessor] = (stream["bufferView"], ids[name])
                    if "indices" in primitive:
                        self._compressed[primitive["indices"]] = (stream["bufferView"], None)
        return self._compressed.get(index)

    def _decode_draco(self, index: int, view: int, unique_id: Optional[int]) -> List[Tuple[float, ...]]:
        accessor = self.gltf["accessors"][index]
        where = "{}: accessor {}'s Draco stream (buffer view {})".format(self.source, index, view)
        if not 0 <= view < len(self.gltf.get("bufferViews", [])):
            raise KimodoError("{} is not a buffer view".format(where))
        try:
            if view not in self._draco_meshes:
                data, start = self._view_bytes(view)
                length = self.gltf["bufferViews"][view]["byteLength"]
                self._draco_meshes[view] = draco.decode(data[start:start + length])
            self._spend(index, accessor["count"])
            items = draco.attribute(self._draco_meshes[view], unique_id, accessor["count"])
        except draco.DracoError as error:
            raise KimodoError("{}: {}".format(where, error)) from error
        if accessor.get("normalized"):
            size = struct.calcsize("<" + _COMPONENT_FORMATS[accessor["componentType"]])
            scale = float((1 << (8 * size - (1 if _COMPONENT_FORMATS[accessor["componentType"]].islower() else 0))) - 1)
            items = [tuple(max(c / scale, -1.0) for c in item) for item in items]
        return items

    def accessor(self, index: int) -> List[Tuple[float, ...]]:
        """The items of accessor `index` (indices and types already checked by check_structure); the bytes
        it reads must lie inside its buffer view and the view inside the binary chunk. Each accessor is
        decoded once (channels share their key times), and all of them together within a budget."""
        if index not in self._decoded:
            self._decoded[index] = self._decode(index)
        return self._decoded[index]

    def _spend(self, index: int, count: int) -> None:
        if count > self._budget:
            raise KimodoError("{}: accessor {} takes the items decoded past {} (accessors overlap or have no "
                              "data)".format(self.source, index, DECODE_BUDGET_ITEMS + len(self.binary)))
        self._budget -= count

    def _decode(self, index: int) -> List[Tuple[float, ...]]:
        accessor = self.gltf["accessors"][index]
        width = _TYPE_SIZES[accessor["type"]]
        fmt = _COMPONENT_FORMATS[accessor["componentType"]]
        count = accessor["count"]
        size = struct.calcsize("<" + fmt)
        if "bufferView" not in accessor and self.draco_source(index) is not None and draco.available():
            return self._decode_draco(index, *self.draco_source(index))  # type: ignore[misc]
        if "bufferView" not in accessor:
            if count > MAX_ZERO_ITEMS:
                raise KimodoError("{}: accessor {} declares {} items without data".format(self.source, index, count))
            self._spend(index, count)
            return [tuple(0.0 for _ in range(width))] * count
        view = self.gltf["bufferViews"][accessor["bufferView"]]
        if accessor["type"].startswith("MAT") and size < 4:
            raise KimodoError("{}: padded matrix accessors are not supported".format(self.source))
        data, view_start = self._view_bytes(accessor["bufferView"])
        view_length = view["byteLength"]
        stride = view.get("byteStride") or size * width
        start = accessor.get("byteOffset", 0)
        end = start + stride * (count - 1) + size * width if count else start
        if stride < size * width or end > view_length:
            raise KimodoError("{}: accessor {} reads {} items past the end of buffer view {} ({} of {} bytes)".format(
                self.source, index, count, accessor["bufferView"], end, view_length))
        self._spend(index, count)
        if stride == size * width:  # items end to end: one unpack, cut into items
            flat = struct.unpack_from("<{}{}".format(count * width, fmt), data, view_start + start)
            items = list(zip(*[iter(flat)] * width)) if width > 1 else [(c,) for c in flat]
        else:
            items = [struct.unpack_from("<{}{}".format(width, fmt), data, view_start + start + i * stride)
                     for i in range(count)]
        if accessor.get("normalized"):
            scale = float((1 << (8 * size - (1 if fmt.islower() else 0))) - 1)
            items = [tuple(max(c / scale, -1.0) for c in item) for item in items]
        return items

    def _view_bytes(self, index: int) -> "Tuple[bytes, int]":
        """(bytes, offset of the view in them) of buffer view `index`: the GLB's binary chunk, or the view
        decoded from its EXT_ or KHR_meshopt_compression stream (gltfpack -c) where it has one."""
        view = self.gltf["bufferViews"][index]
        extensions = view.get("extensions")
        compressed = None
        if isinstance(extensions, dict):
            compressed = extensions.get("EXT_meshopt_compression") or extensions.get("KHR_meshopt_compression")
        if compressed is None:
            if view.get("buffer", 0) != 0:
                raise KimodoError("{}: only the GLB's own binary buffer is supported".format(self.source))
            start, length = view.get("byteOffset", 0), view["byteLength"]
            if start + length > len(self.binary):
                raise KimodoError("{}: buffer view {} ends at byte {}, past the {}-byte binary chunk".format(
                    self.source, index, start + length, len(self.binary)))
            return self.binary, start
        if index not in self._unpacked:
            self._unpacked[index] = self._unpack(index, view, compressed)
        return self._unpacked[index], 0

    def _unpack(self, index: int, view: Dict[str, Any], compressed: Any) -> bytes:
        where = "{}: buffer view {}'s meshopt stream".format(self.source, index)
        fields = compressed if isinstance(compressed, dict) else {}
        count, stride, length = fields.get("count"), fields.get("byteStride"), fields.get("byteLength")
        start = fields.get("byteOffset", 0)
        if not all(_is_int(v) and v >= 0 for v in (count, stride, length, start)) or fields.get("buffer", 0) != 0:
            raise KimodoError("{} is not in the GLB's own binary buffer with its count, stride and length".format(where))
        if fields.get("mode") != "ATTRIBUTES":
            raise KimodoError("{} holds {} (only vertex and matrix data, mode ATTRIBUTES, is read)".format(where, fields.get("mode")))
        if count * stride != view["byteLength"] or start + length > len(self.binary):
            raise KimodoError("{} does not fit its buffer view or the binary chunk".format(where))
        self._spend(index, count)
        if count * stride > self._meshopt_budget:
            raise KimodoError("{} would decode to {} bytes, past the {} this file's compressed views may take together "
                              "({} per byte of its binary chunk, and 1 MiB)".format(
                                  where, count * stride, MESHOPT_EXPANSION * len(self.binary) + MESHOPT_BUDGET_BYTES,
                                  MESHOPT_EXPANSION))
        self._meshopt_budget -= count * stride
        try:
            raw = meshopt.decode_attributes(self.binary[start:start + length], count, stride)
            return meshopt.apply_filter(raw, count, stride, fields.get("filter", "NONE"))
        except meshopt.MeshoptError as error:
            raise KimodoError("{}: {}".format(where, error)) from error

    def floats(self, index: int) -> Sequence[float]:
        """The components of accessor `index` laid end to end. A plain, tightly packed float32 accessor
        (animation keys of long clips) is read straight from the bytes: on little-endian machines as a
        float view of the binary chunk itself (no copy), else into array('f'); any other goes through
        `accessor`, which also checks its bounds."""
        accessor = self.gltf["accessors"][index]
        width = _TYPE_SIZES[accessor["type"]]
        view = self.gltf["bufferViews"][accessor["bufferView"]] if "bufferView" in accessor else None
        if (view is not None and accessor["componentType"] == FLOAT and not accessor.get("normalized")
                and view.get("buffer", 0) == 0 and view.get("byteStride", 4 * width) == 4 * width):
            start = view.get("byteOffset", 0) + accessor.get("byteOffset", 0)
            end = start + 4 * width * accessor["count"]
            if end - view.get("byteOffset", 0) <= view["byteLength"] and view.get("byteOffset", 0) + view["byteLength"] <= len(self.binary):
                if sys.byteorder == "little":
                    return memoryview(self.binary)[start:end].cast("f")
                values = array("f")
                values.frombytes(self.binary[start:end])
                values.byteswap()
                return values
        return array("d", [c for item in self.accessor(index) for c in item])

def parse_glb(data: bytes, source: str, folder: Optional[str] = None) -> Document:
    """Split a .glb into its JSON and BIN chunks; a .gltf is accepted too, its buffers and images read
    from data: URIs or, given the `folder` it lies in, from the files beside it (gltf_files)."""
    if data[:4] != b"glTF":
        try:
            gltf = parse_json(data, source, "the glTF JSON")
        except (UnicodeDecodeError, ValueError) as error:
            raise KimodoError("{}: not a glTF file".format(source)) from error
        if not isinstance(gltf, dict):
            raise KimodoError("{}: not a glTF file".format(source))
        check_structure(gltf, source)
        from .gltf_files import embed_resources  # a .glb job does not load it

        return Document(gltf, embed_resources(gltf, folder, source), source)
    try:
        magic, version, total = struct.unpack_from("<III", data, 0)
        if version != 2:
            raise KimodoError("{}: glTF version {} is not supported (2 is)".format(source, version))
        at = 12
        gltf = None
        binary = b""
        while at + 8 <= min(total, len(data)):
            length, kind = struct.unpack_from("<II", data, at)
            chunk = data[at + 8 : at + 8 + length]
            if len(chunk) != length:
                raise KimodoError("{}: truncated GLB chunk".format(source))
            if kind == CHUNK_JSON:
                gltf = parse_json(chunk, source, "the GLB's JSON chunk")
            elif kind == CHUNK_BIN:
                binary = chunk
            at += 8 + length
    except (struct.error, UnicodeDecodeError, ValueError) as error:
        raise KimodoError("{}: broken GLB ({})".format(source, error)) from error
    if not isinstance(gltf, dict):
        raise KimodoError("{}: GLB has no JSON chunk".format(source))
    check_structure(gltf, source)
    return Document(gltf, binary, source)


def check_structure(gltf: Dict[str, Any], source: str) -> None:
    """Refuse glTF JSON whose parts this package reads (nodes, skins, accessors, buffer views, animations,
    scenes, meshes, images) have the wrong types, indices out of range, non-finite transforms or a node
    hierarchy that is not a forest, so that later code can index it freely."""

    def fail(where: str, what: str) -> KimodoError:
        return KimodoError("{}: {} {}".format(source, where, what))

    def records(key: str) -> List[Dict[str, Any]]:
        value = gltf.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            raise fail(key, "is not a list of objects")
        return value

    def index(value: Any, limit: int, where: str) -> int:
        if not _is_int(value) or not 0 <= value < limit:
            raise fail(where, "is not a valid index ({!r}; {} available)".format(value, limit))
        return value

    def count(value: Any, where: str) -> int:
        if not _is_int(value) or value < 0:
            raise fail(where, "is not a count ({!r})".format(value))
        return value

    def numbers(record: Dict[str, Any], key: str, length: int, where: str) -> None:
        if key in record:
            value = record[key]
            if (not isinstance(value, list) or len(value) != length
                    or not all(_is_number(c) and math.isfinite(c) for c in value)):
                raise fail("{}.{}".format(where, key), "is not {} finite numbers".format(length))

    if not isinstance(gltf.get("asset", {}), dict):
        raise fail("asset", "is not an object")
    extensions = gltf.get("extensionsUsed", [])
    if not isinstance(extensions, list) or not all(isinstance(name, str) for name in extensions):
        raise fail("extensionsUsed", "is not a list of names")
    if not isinstance(gltf.get("extensions", {}), dict):
        raise fail("extensions", "is not an object")
    accessors, views, nodes = records("accessors"), records("bufferViews"), records("nodes")
    skin_count, mesh_count = len(records("skins")), len(records("meshes"))
    for i, view in enumerate(views):
        where = "bufferViews[{}]".format(i)
        count(view.get("byteLength"), where + ".byteLength")
        count(view.get("byteOffset", 0), where + ".byteOffset")
        count(view.get("byteStride", 0), where + ".byteStride")
        count(view.get("buffer", 0), where + ".buffer")
    for i, accessor in enumerate(accessors):
        where = "accessors[{}]".format(i)
        if "bufferView" in accessor:
            index(accessor["bufferView"], len(views), where + ".bufferView")
        component, kind = accessor.get("componentType"), accessor.get("type")
        if not (_is_int(component) and component in _COMPONENT_FORMATS and isinstance(kind, str) and kind in _TYPE_SIZES):
            raise fail(where, "has an unknown componentType or type")
        count(accessor.get("count"), where + ".count")
        count(accessor.get("byteOffset", 0), where + ".byteOffset")
        if "sparse" in accessor:
            sparse = accessor["sparse"]
            parts = [sparse.get(part) for part in ("indices", "values")] if isinstance(sparse, dict) else [None]
            if not all(isinstance(part, dict) for part in parts):
                raise fail(where + ".sparse", "lacks its indices and values")
            for part in parts:
                index(part.get("bufferView"), len(views), where + ".sparse")
    parents = [-1] * len(nodes)
    for i, node in enumerate(nodes):
        where = "nodes[{}]".format(i)
        if not isinstance(node.get("name", ""), str):
            raise fail(where + ".name", "is not text")
        children = node.get("children", [])
        if not isinstance(children, list):
            raise fail(where + ".children", "is not a list")
        for child in children:
            index(child, len(nodes), where + ".children")
            if parents[child] >= 0 or child == i:
                raise fail("nodes[{}]".format(child), "has more than one parent")
            parents[child] = i
        if "mesh" in node:
            index(node["mesh"], mesh_count, where + ".mesh")
        if "skin" in node:
            index(node["skin"], skin_count, where + ".skin")
        numbers(node, "translation", 3, where)
        numbers(node, "rotation", 4, where)
        numbers(node, "scale", 3, where)
        numbers(node, "matrix", 16, where)
    state = [0] * len(nodes)  # 0 not walked, 1 on the walk now, 2 known to reach a root
    for i in range(len(nodes)):  # each node has one parent at most, so a walk up ends or loops
        walk, node = [], i
        while node >= 0 and state[node] == 0:
            state[node] = 1
            walk.append(node)
            node = parents[node]
        if node >= 0 and state[node] == 1:
            raise fail("nodes[{}]".format(node), "is its own ancestor (the node hierarchy has a cycle)")
        for walked in walk:  # each node is walked once: linear in the node count
            state[walked] = 2
    for i, skin in enumerate(records("skins")):
        where = "skins[{}]".format(i)
        joints = skin.get("joints", [])
        if not isinstance(joints, list):
            raise fail(where + ".joints", "is not a list")
        for joint in joints:
            index(joint, len(nodes), where + ".joints")
        if "inverseBindMatrices" in skin:
            index(skin["inverseBindMatrices"], len(accessors), where + ".inverseBindMatrices")
        if "skeleton" in skin:
            index(skin["skeleton"], len(nodes), where + ".skeleton")
    for i, animation in enumerate(records("animations")):
        where = "animations[{}]".format(i)
        samplers, channels = animation.get("samplers"), animation.get("channels")
        if not isinstance(samplers, list) or not all(isinstance(s, dict) for s in samplers):
            raise fail(where + ".samplers", "is not a list of objects")
        if not isinstance(channels, list) or not all(isinstance(c, dict) for c in channels):
            raise fail(where + ".channels", "is not a list of objects")
        for j, sampler in enumerate(samplers):
            index(sampler.get("input"), len(accessors), "{}.samplers[{}].input".format(where, j))
            index(sampler.get("output"), len(accessors), "{}.samplers[{}].output".format(where, j))
            if not isinstance(sampler.get("interpolation", "LINEAR"), str):
                raise fail("{}.samplers[{}].interpolation".format(where, j), "is not text")
        for j, channel in enumerate(channels):
            index(channel.get("sampler"), len(samplers), "{}.channels[{}].sampler".format(where, j))
            target = channel.get("target")
            if not isinstance(target, dict) or not isinstance(target.get("path"), str):
                raise fail("{}.channels[{}].target".format(where, j), "is not an object with a path")
            if "node" in target:
                index(target["node"], len(nodes), "{}.channels[{}].target.node".format(where, j))
    for i, scene in enumerate(records("scenes")):
        scene_nodes = scene.get("nodes", [])
        if not isinstance(scene_nodes, list):
            raise fail("scenes[{}].nodes".format(i), "is not a list")
        for node in scene_nodes:
            index(node, len(nodes), "scenes[{}].nodes".format(i))
    for i, mesh in enumerate(records("meshes")):
        primitives = mesh.get("primitives", [])
        if not isinstance(primitives, list) or not all(isinstance(p, dict) for p in primitives):
            raise fail("meshes[{}].primitives".format(i), "is not a list of objects")
        for j, primitive in enumerate(primitives):
            where = "meshes[{}].primitives[{}]".format(i, j)
            targets = primitive.get("targets", [])
            if not isinstance(targets, list):
                raise fail(where + ".targets", "is not a list")
            for table in [primitive.get("attributes", {})] + targets:
                if not isinstance(table, dict):
                    raise fail(where, "has attributes that are not an object")
                for name, value in table.items():
                    index(value, len(accessors), where + ".attributes")
                    if str(name).startswith("JOINTS_") and accessors[value].get("componentType") not in (UNSIGNED_BYTE, UNSIGNED_SHORT):
                        raise fail("{}.attributes.{}".format(where, name), "is not unsigned bytes or shorts (joint slots)")
            if "indices" in primitive:
                index(primitive["indices"], len(accessors), where + ".indices")
    for i, image in enumerate(records("images")):
        if "bufferView" in image:
            index(image["bufferView"], len(views), "images[{}].bufferView".format(i))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def read_file(path) -> Document:
    """Read and parse a .glb, or a .gltf with the buffers and images beside it, from disk."""
    source = str(path)
    return parse_glb(read_input(path, source), source, os.path.dirname(os.path.abspath(source)))


# --- scene evaluation with 4x4 matrices, independent of the model's quaternion FK --------------------

Matrix4 = List[float] if TYPE_CHECKING else list  # column-major, as glTF stores them


def trs_matrix(translation: Sequence[float], rotation: Sequence[float], scale: Sequence[float]) -> Matrix4:
    x, y, z, w = rotation
    sx, sy, sz = scale
    # Float constants (1.0 - 2.0 * a is 1 - 2 * a to the bit): float-only arithmetic runs faster.
    return [
        (1.0 - 2.0 * (y * y + z * z)) * sx, (2.0 * (x * y + z * w)) * sx, (2.0 * (x * z - y * w)) * sx, 0.0,
        (2.0 * (x * y - z * w)) * sy, (1.0 - 2.0 * (x * x + z * z)) * sy, (2.0 * (y * z + x * w)) * sy, 0.0,
        (2.0 * (x * z + y * w)) * sz, (2.0 * (y * z - x * w)) * sz, (1.0 - 2.0 * (x * x + y * y)) * sz, 0.0,
        translation[0], translation[1], translation[2], 1.0,
    ]


def normalized_trs_matrices(translations: Sequence[Sequence[float]], rotations: Sequence[Sequence[float]],
                            scale: Sequence[float]) -> List[Matrix4]:
    """trs_matrix(t, quat_normalize(r), scale) of each pair (one joint's world per keyframe), the
    normalisation and the matrix written out in one loop (the same arithmetic)."""
    sx, sy, sz = scale
    sqrt = math.sqrt
    out = []
    for translation, rotation in zip(translations, rotations):
        x, y, z, w = rotation
        n = sqrt(x * x + y * y + z * z + w * w)
        if n == 0.0:
            x, y, z, w = 0.0, 0.0, 0.0, 1.0
        else:
            x, y, z, w = x / n, y / n, z / n, w / n
        out.append([
            (1.0 - 2.0 * (y * y + z * z)) * sx, (2.0 * (x * y + z * w)) * sx, (2.0 * (x * z - y * w)) * sx, 0.0,
            (2.0 * (x * y - z * w)) * sy, (1.0 - 2.0 * (x * x + z * z)) * sy, (2.0 * (y * z + x * w)) * sy, 0.0,
            (2.0 * (x * z + y * w)) * sz, (2.0 * (y * z - x * w)) * sz, (1.0 - 2.0 * (x * x + y * y)) * sz, 0.0,
            translation[0], translation[1], translation[2], 1.0,
        ])
    return out


def multiply4(a: Matrix4, b: Matrix4) -> Matrix4:
    """a @ b for column-major 4x4 matrices, unrolled (it runs per node per keyframe)."""
    a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15 = a
    if a3 == a7 == a11 == 0.0 and a15 == 1.0 and b[3] == b[7] == b[11] == 0.0 and b[15] == 1.0:
        # Both affine (every TRS node is): the bottom row's and the zero terms' products left out.
        b0, b1, b2, b4, b5, b6, b8, b9, b10, b12, b13, b14 = b[0], b[1], b[2], b[4], b[5], b[6], b[8], b[9], b[10], b[12], b[13], b[14]
        return [a0 * b0 + a4 * b1 + a8 * b2, a1 * b0 + a5 * b1 + a9 * b2, a2 * b0 + a6 * b1 + a10 * b2, 0.0,
                a0 * b4 + a4 * b5 + a8 * b6, a1 * b4 + a5 * b5 + a9 * b6, a2 * b4 + a6 * b5 + a10 * b6, 0.0,
                a0 * b8 + a4 * b9 + a8 * b10, a1 * b8 + a5 * b9 + a9 * b10, a2 * b8 + a6 * b9 + a10 * b10, 0.0,
                a0 * b12 + a4 * b13 + a8 * b14 + a12, a1 * b12 + a5 * b13 + a9 * b14 + a13,
                a2 * b12 + a6 * b13 + a10 * b14 + a14, 1.0]
    out = []
    for c in (0, 4, 8, 12):
        b0, b1, b2, b3 = b[c], b[c + 1], b[c + 2], b[c + 3]
        out.extend((
            a0 * b0 + a4 * b1 + a8 * b2 + a12 * b3,
            a1 * b0 + a5 * b1 + a9 * b2 + a13 * b3,
            a2 * b0 + a6 * b1 + a10 * b2 + a14 * b3,
            a3 * b0 + a7 * b1 + a11 * b2 + a15 * b3,
        ))
    return out


def multiply4_trs(a: Matrix4, translation: Sequence[float], rotation: Sequence[float],
                  scale: Sequence[float]) -> Matrix4:
    """multiply4(a, trs_matrix(translation, rotation, scale)), in one step where `a` is affine (the same
    arithmetic: a node's world from its parent's and its own TRS, per node per keyframe)."""
    a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15 = a
    if not (a3 == a7 == a11 == 0.0 and a15 == 1.0):
        return multiply4(a, trs_matrix(translation, rotation, scale))
    x, y, z, w = rotation
    sx, sy, sz = scale
    b0, b1, b2 = (1.0 - 2.0 * (y * y + z * z)) * sx, (2.0 * (x * y + z * w)) * sx, (2.0 * (x * z - y * w)) * sx
    b4, b5, b6 = (2.0 * (x * y - z * w)) * sy, (1.0 - 2.0 * (x * x + z * z)) * sy, (2.0 * (y * z + x * w)) * sy
    b8, b9, b10 = (2.0 * (x * z + y * w)) * sz, (2.0 * (y * z - x * w)) * sz, (1.0 - 2.0 * (x * x + y * y)) * sz
    b12, b13, b14 = translation[0], translation[1], translation[2]
    return [a0 * b0 + a4 * b1 + a8 * b2, a1 * b0 + a5 * b1 + a9 * b2, a2 * b0 + a6 * b1 + a10 * b2, 0.0,
            a0 * b4 + a4 * b5 + a8 * b6, a1 * b4 + a5 * b5 + a9 * b6, a2 * b4 + a6 * b5 + a10 * b6, 0.0,
            a0 * b8 + a4 * b9 + a8 * b10, a1 * b8 + a5 * b9 + a9 * b10, a2 * b8 + a6 * b9 + a10 * b10, 0.0,
            a0 * b12 + a4 * b13 + a8 * b14 + a12, a1 * b12 + a5 * b13 + a9 * b14 + a13,
            a2 * b12 + a6 * b13 + a10 * b14 + a14, 1.0]


def apply4(m: Sequence[float], v: Sequence[float]) -> Tuple[float, float, float]:
    """Point v transformed by the column-major 4x4 matrix m."""
    return (m[0] * v[0] + m[4] * v[1] + m[8] * v[2] + m[12],
            m[1] * v[0] + m[5] * v[1] + m[9] * v[2] + m[13],
            m[2] * v[0] + m[6] * v[1] + m[10] * v[2] + m[14])


def node_local_matrix(node: Dict[str, Any], override: Optional[Dict[str, Sequence[float]]] = None) -> Matrix4:
    if "matrix" in node and not override:
        return [float(v) for v in node["matrix"]]
    override = override or {}
    translation = override.get("translation", node.get("translation", (0.0, 0.0, 0.0)))
    rotation = override.get("rotation", node.get("rotation", (0.0, 0.0, 0.0, 1.0)))
    scale = override.get("scale", node.get("scale", (1.0, 1.0, 1.0)))
    return trs_matrix(translation, rotation, scale)


def node_parents(gltf: Dict[str, Any]) -> List[int]:
    parents = [-1] * len(gltf.get("nodes", []))
    for index, node in enumerate(gltf.get("nodes", [])):
        for child in node.get("children", []):
            parents[child] = index
    return parents


def children_of(parents: Sequence[int]) -> Dict[int, List[int]]:
    """Parent index -> its children in index order (-1: the roots), from a parent list."""
    children: Dict[int, List[int]] = {}
    for index, parent in enumerate(parents):
        children.setdefault(parent, []).append(index)
    return children


def subtree(children: Dict[int, List[int]], root: int) -> List[int]:
    """`root` and everything below it, depth first, each node's children in their order."""
    order, stack = [], [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(reversed(children.get(node, [])))
    return order


def world_matrices(gltf: Dict[str, Any], overrides: Dict[int, Dict[str, Sequence[float]]],
                   wanted: Optional[Sequence[int]] = None, parents: Optional[Sequence[int]] = None) -> List[Matrix4]:
    """World matrix of every node (or only of the `wanted` nodes, in that order), with per-node TRS
    overrides (e.g. one animation keyframe)."""
    nodes = gltf.get("nodes", [])
    parents = node_parents(gltf) if parents is None else parents
    result: List[Optional[Matrix4]] = [None] * len(nodes)

    def solve(index: int) -> Matrix4:
        chain = []  # the node and its ancestors not solved yet, walked up without recursion (deep rigs)
        while index >= 0 and result[index] is None:
            chain.append(index)
            index = parents[index]
        for node in reversed(chain):
            local = node_local_matrix(nodes[node], overrides.get(node))
            parent = parents[node]
            result[node] = local if parent < 0 else multiply4(result[parent], local)  # type: ignore[arg-type]
        return result[chain[0]] if chain else result[index]  # type: ignore[return-value]

    return [solve(i) for i in (range(len(nodes)) if wanted is None else wanted)]


def animation_keyframes(document: Document, animation_index: int = 0) -> Tuple[List[float], Dict[int, Dict[str, List[Tuple[float, ...]]]]]:
    """Times and per-node channel values of one animation whose channels all share their key times."""
    animation = document.gltf["animations"][animation_index]
    times: Optional[List[float]] = None
    channels: Dict[int, Dict[str, List[Tuple[float, ...]]]] = {}
    inputs_seen = set()
    cubic_values: Dict[int, List[Tuple[float, ...]]] = {}
    for channel in animation["channels"]:
        sampler = animation["samplers"][channel["sampler"]]
        if sampler["input"] not in inputs_seen:  # channels share their key times: one pass per accessor
            inputs_seen.add(sampler["input"])
            key_times = document.accessor(sampler["input"])
            if times is None or len(key_times) > len(times):
                times = [t[0] for t in key_times]
        target = channel["target"]
        if "node" not in target:
            continue
        values = document.accessor(sampler["output"])
        if sampler.get("interpolation") == "CUBICSPLINE":
            if sampler["output"] not in cubic_values:
                cubic_values[sampler["output"]] = values[1::3]
            values = cubic_values[sampler["output"]]
        channels.setdefault(target["node"], {})[target["path"]] = values
    return times or [], channels


def keyframe_world_matrices(gltf: Dict[str, Any], channels: Dict[int, Dict[str, List[Tuple[float, ...]]]], frames: int,
                            wanted: Sequence[int], parents: Optional[Sequence[int]] = None) -> Iterator[List[Matrix4]]:
    """For each of `frames` keys of `animation_keyframes`' channels, the world matrices of the `wanted`
    nodes: `world_matrices` with that key's `keyframe_overrides`, the same products, with each node's
    local source (its channels or its own TRS or matrix) looked up once, and the nodes nothing animates
    at or above them evaluated once for all keys."""
    fixed, plan = _keyframe_plan(gltf, channels, wanted, parents)
    for world in _keyframe_worlds(fixed, [step + (False,) for step in plan], frames):
        yield [world[node] for node in wanted]


def keyframe_world_positions(gltf: Dict[str, Any], channels: Dict[int, Dict[str, List[Tuple[float, ...]]]], frames: int,
                             wanted: Sequence[int], parents: Optional[Sequence[int]] = None) -> Iterator[List[Vec3]]:
    """The translations of `keyframe_world_matrices` (the same arithmetic, to the bit), with only the
    translation worked out for a node no other evaluated node hangs from: a product's translation column
    needs neither its own rotation nor scale."""
    fixed, plan = _keyframe_plan(gltf, channels, wanted, parents)
    inner = {step[1] for step in plan}
    steps = [step + (step[0] not in inner and step[1] >= 0 and (step[2] is None or _affine(step[2])),) for step in plan]
    for world in _keyframe_worlds(fixed, steps, frames):
        yield [(m[12], m[13], m[14]) for m in (world[node] for node in wanted)]


def _keyframe_worlds(fixed: Dict[int, Matrix4], steps: Sequence[Tuple[Any, ...]], frames: int) -> Iterator[Dict[int, Any]]:
    """Per key, every planned node's world matrix (`_keyframe_plan`'s steps, each with a last flag: a
    leaf whose translation alone is wanted, held as a matrix whose other entries are None)."""
    for frame in range(frames):
        world: Dict[int, Any] = dict(fixed)
        for node, parent, local, translations, translation, rotations, rotation, scales, scale, leaf in steps:
            if leaf:
                a = world[parent]
                if a[3] == a[7] == a[11] == 0.0 and a[15] == 1.0:
                    # multiply4's (and multiply4_trs') translation column, b15 = 1
                    b12, b13, b14 = local[12:15] if local is not None else (
                        translation if translations is None else translations[frame])
                    world[node] = (None,) * 12 + (a[0] * b12 + a[4] * b13 + a[8] * b14 + a[12],
                                                  a[1] * b12 + a[5] * b13 + a[9] * b14 + a[13],
                                                  a[2] * b12 + a[6] * b13 + a[10] * b14 + a[14])
                    continue
            if local is not None:
                world[node] = local if parent < 0 else multiply4(world[parent], local)
                continue
            keyed = (translation if translations is None else translations[frame],
                     rotation if rotations is None else rotations[frame], scale if scales is None else scales[frame])
            world[node] = trs_matrix(*keyed) if parent < 0 else multiply4_trs(world[parent], *keyed)
        yield world


def _affine(m: Sequence[float]) -> bool:
    return m[3] == m[7] == m[11] == 0.0 and m[15] == 1.0


def _keyframe_plan(gltf: Dict[str, Any], channels: Dict[int, Dict[str, List[Tuple[float, ...]]]], wanted: Sequence[int],
                   parents: Optional[Sequence[int]]) -> Tuple[Dict[int, Matrix4], List[Tuple[Any, ...]]]:
    """keyframe_world_matrices' nodes: the world matrices no key changes, and the rest parent before
    child as (node, parent, local matrix or None, then per path: per-key values or None, the node's own)."""
    nodes = gltf.get("nodes", [])
    parents = node_parents(gltf) if parents is None else parents
    fixed: Dict[int, Matrix4] = {}
    plan = []
    placed = set()
    for node in wanted:
        chain = []
        while node >= 0 and node not in placed:
            chain.append(node)
            node = parents[node]
        for member in reversed(chain):
            placed.add(member)
            record, parent, paths = nodes[member], parents[member], channels.get(member)
            if not paths:
                local = node_local_matrix(record)
                if parent < 0 or parent in fixed:
                    fixed[member] = local if parent < 0 else multiply4(fixed[parent], local)
                else:
                    plan.append((member, parent, local, None, None, None, None, None, None))
                continue
            plan.append((member, parent, None,
                         paths.get("translation"), record.get("translation", (0.0, 0.0, 0.0)),
                         paths.get("rotation"), record.get("rotation", (0.0, 0.0, 0.0, 1.0)),
                         paths.get("scale"), record.get("scale", (1.0, 1.0, 1.0))))
    return fixed, plan


def keyframe_overrides(channels: Dict[int, Dict[str, List[Tuple[float, ...]]]], frame: int) -> Dict[int, Dict[str, Sequence[float]]]:
    """The TRS overrides of one keyframe of `animation_keyframes`' channels, as `world_matrices` takes them."""
    return {node: {path: values[frame] for path, values in paths.items()} for node, paths in channels.items()}



# --- the self-check's evaluation: quaternion FK on flat arrays, straight from the bytes --------------

PATH_WIDTHS = {"translation": 3, "rotation": 4, "scale": 3}


FloatSequence = Sequence[float] if TYPE_CHECKING else list  # array('f'), a float memoryview of the bytes, or array('d')


def animation_arrays(document: Document, animation_index: int = 0) -> Tuple[FloatSequence, Dict[int, Dict[str, FloatSequence]]]:
    """`animation_keyframes` as flat sequences (each key's components end to end, float32 as stored):
    the longest key-time accessor of the animation, and per node and path the values at those keys."""
    animation = document.gltf["animations"][animation_index]
    read: Dict[int, FloatSequence] = {}  # channels of one animation share their time accessor: read it once

    def floats(index: int) -> FloatSequence:
        if index not in read:
            read[index] = document.floats(index)
        return read[index]

    times: FloatSequence = array("f")
    channels: Dict[int, Dict[str, FloatSequence]] = {}
    for channel in animation["channels"]:
        sampler = animation["samplers"][channel["sampler"]]
        key_times = floats(sampler["input"])
        if len(key_times) > len(times):
            times = key_times
        target = channel["target"]
        if "node" not in target:
            continue
        values = floats(sampler["output"])
        if sampler.get("interpolation") == "CUBICSPLINE":  # in-tangent, value, out-tangent per key
            width = _TYPE_SIZES[document.gltf["accessors"][sampler["output"]]["type"]]
            values = array("d", [v for key in range(1, len(values) // width, 3)
                                 for v in values[key * width:(key + 1) * width]])
        channels.setdefault(target["node"], {})[target["path"]] = values
    return times, channels


def world_positions_by_frame(gltf: Dict[str, Any], channels: Dict[int, Dict[str, Sequence[float]]], frames: int,
                             wanted: Sequence[int]) -> Iterator[List[Tuple[float, float, float]]]:
    """For each of `frames` keys, the world position of each `wanted` node: glTF's parent * T * R * S,
    evaluated from the nodes' own TRS and the animation's `channels` (per node and path, flat arrays as
    `animation_arrays` gives). Quaternion FK on the flat arrays (`world_position_columns_by_frame`);
    where a node on the way carries a matrix or a scale, 4x4 matrices instead."""
    for xs, ys, zs in world_position_columns_by_frame(gltf, channels, frames, wanted):
        yield list(zip(xs, ys, zs))


def world_position_columns_by_frame(gltf: Dict[str, Any], channels: Dict[int, Dict[str, Sequence[float]]],
                                    frames: int, wanted: Sequence[int]) -> Iterator[Tuple[List[float], List[float], List[float]]]:
    """`world_positions_by_frame` as three lists a frame (x, y and z of each wanted node, in order). The
    lists may be reused from one frame to the next: read them before asking for the next frame."""
    nodes = gltf.get("nodes", [])
    parents = node_parents(gltf)
    needed: List[int] = []  # the wanted nodes and their ancestors, parent before child
    slots: Dict[int, int] = {}
    for node in wanted:
        chain = []
        while node >= 0 and node not in slots and node not in chain:
            chain.append(node)
            node = parents[node]
        for member in reversed(chain):
            slots[member] = len(needed)
            needed.append(member)
    wanted_slots = [slots[node] for node in wanted]

    def plain(node: int) -> bool:
        record = nodes[node]
        return ("matrix" not in record and "scale" not in channels.get(node, {})
                and [float(c) for c in record.get("scale", (1.0, 1.0, 1.0))] == [1.0, 1.0, 1.0])

    if not all(plain(node) for node in needed):
        for frame in range(frames):
            overrides = {node: {path: tuple(values[frame * PATH_WIDTHS[path]:(frame + 1) * PATH_WIDTHS[path]])
                                for path, values in paths.items() if path in PATH_WIDTHS}
                         for node, paths in channels.items()}
            matrices = world_matrices(gltf, overrides, wanted, parents)
            yield [m[12] for m in matrices], [m[13] for m in matrices], [m[14] for m in matrices]
        return
    yield from _quaternion_fk_columns(nodes, channels, frames, needed, slots, parents, wanted_slots)


def _quaternion_fk_columns(nodes, channels, frames: int, needed: List[int], slots: Dict[int, int],
                           parents: List[int], wanted_slots: List[int]):
    """The plain case of `world_position_columns_by_frame`: p = p_parent + q_parent t q_parent*, q =
    q_parent q, parent before child; a node nothing hangs off needs no world rotation."""
    parent_of_slot = [slots.get(parents[node], -1) for node in needed]
    has_children = [False] * len(needed)
    for parent in parent_of_slot:
        if parent >= 0:
            has_children[parent] = True
    roots, plan = [], []
    for slot, node in enumerate(needed):
        record, animated = nodes[node], channels.get(node, {})
        step = (slot, animated.get("rotation"), tuple(float(c) for c in record.get("rotation", (0.0, 0.0, 0.0, 1.0))),
                animated.get("translation"), tuple(float(c) for c in record.get("translation", (0.0, 0.0, 0.0))))
        if parent_of_slot[slot] < 0:
            roots.append(step)
        else:
            plan.append(step + (parent_of_slot[slot], has_children[slot]))
    count = len(needed)
    every_slot = wanted_slots == list(range(count))  # the wanted nodes are all there is, in order
    qx, qy, qz, qw = [0.0] * count, [0.0] * count, [0.0] * count, [1.0] * count  # world rotations
    px, py, pz = [0.0] * count, [0.0] * count, [0.0] * count  # world positions
    for frame in range(frames):
        r, t = 4 * frame, 3 * frame
        for slot, rotations, rotation, translations, translation in roots:
            px[slot], py[slot], pz[slot] = translation if translations is None else translations[t:t + 3]
            qx[slot], qy[slot], qz[slot], qw[slot] = rotation if rotations is None else rotations[r:r + 4]
        for slot, rotations, rotation, translations, translation, parent, has_child in plan:
            if translations is None:
                tx, ty, tz = translation
            else:
                tx, ty, tz = translations[t], translations[t + 1], translations[t + 2]
            # p = p_parent + t + w u + xyz x u with u = 2 xyz x t (xyzw: the parent's world rotation)
            ax, ay, az, aw = qx[parent], qy[parent], qz[parent], qw[parent]
            ux, uy, uz = 2.0 * (ay * tz - az * ty), 2.0 * (az * tx - ax * tz), 2.0 * (ax * ty - ay * tx)
            px[slot] = px[parent] + tx + aw * ux + ay * uz - az * uy
            py[slot] = py[parent] + ty + aw * uy + az * ux - ax * uz
            pz[slot] = pz[parent] + tz + aw * uz + ax * uy - ay * ux
            if has_child:  # q = q_parent q; a node nothing hangs off never needs its world rotation
                if rotations is None:
                    x, y, z, w = rotation
                else:
                    x, y, z, w = rotations[r], rotations[r + 1], rotations[r + 2], rotations[r + 3]
                qx[slot] = aw * x + ax * w + ay * z - az * y
                qy[slot] = aw * y - ax * z + ay * w + az * x
                qz[slot] = aw * z + ax * y - ay * x + az * w
                qw[slot] = aw * w - ax * x - ay * y - az * z
        if every_slot:
            yield px, py, pz
        else:
            yield [px[s] for s in wanted_slots], [py[s] for s in wanted_slots], [pz[s] for s in wanted_slots]


def is_finite(values: Sequence[float]) -> bool:
    return all(math.isfinite(v) for v in values)


def invert4(m: Sequence[float]) -> Matrix4:
    """Inverse of a column-major 4x4 affine matrix (cofactors over the determinant, unrolled: it runs per
    node per keyframe)."""
    a00, a10, a20, a01, a11, a21, a02, a12, a22 = m[0], m[1], m[2], m[4], m[5], m[6], m[8], m[9], m[10]
    det = a00 * (a11 * a22 - a12 * a21) - a01 * (a10 * a22 - a12 * a20) + a02 * (a10 * a21 - a11 * a20)
    if abs(det) < 1e-30:
        raise ValueError("singular matrix")
    i00 = (a11 * a22 - a12 * a21) / det
    i01 = (a21 * a02 - a22 * a01) / det
    i02 = (a01 * a12 - a02 * a11) / det
    i10 = (a12 * a20 - a10 * a22) / det
    i11 = (a22 * a00 - a20 * a02) / det
    i12 = (a02 * a10 - a00 * a12) / det
    i20 = (a10 * a21 - a11 * a20) / det
    i21 = (a20 * a01 - a21 * a00) / det
    i22 = (a00 * a11 - a01 * a10) / det
    tx, ty, tz = m[12], m[13], m[14]
    return [i00, i10, i20, 0.0, i01, i11, i21, 0.0, i02, i12, i22, 0.0,
            -(i00 * tx + i01 * ty + i02 * tz), -(i10 * tx + i11 * ty + i12 * tz),
            -(i20 * tx + i21 * ty + i22 * tz), 1.0]


def decompose_product(a: Sequence[float], b: Sequence[float]) -> Tuple[Vec3, Quat, Vec3]:
    """decompose4(multiply4(a, b)), in one step where both are affine (the same arithmetic: a node's
    local TRS from its parent's inverse world and its own world, per node per keyframe)."""
    a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15 = a
    b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14, b15 = b
    if not (a3 == a7 == a11 == 0.0 and a15 == 1.0 and b3 == b7 == b11 == 0.0 and b15 == 1.0):
        return decompose4(multiply4(a, b))  # type: ignore[arg-type]
    m0, m1, m2 = a0 * b0 + a4 * b1 + a8 * b2, a1 * b0 + a5 * b1 + a9 * b2, a2 * b0 + a6 * b1 + a10 * b2
    m4, m5, m6 = a0 * b4 + a4 * b5 + a8 * b6, a1 * b4 + a5 * b5 + a9 * b6, a2 * b4 + a6 * b5 + a10 * b6
    m8, m9, m10 = a0 * b8 + a4 * b9 + a8 * b10, a1 * b8 + a5 * b9 + a9 * b10, a2 * b8 + a6 * b9 + a10 * b10
    translation = (a0 * b12 + a4 * b13 + a8 * b14 + a12, a1 * b12 + a5 * b13 + a9 * b14 + a13,
                   a2 * b12 + a6 * b13 + a10 * b14 + a14)
    rotation, scale = _rotation_and_scale(m0, m1, m2, m4, m5, m6, m8, m9, m10)
    return translation, rotation, scale


def decomposed_products(a_list: Sequence[Sequence[float]], b_list: Sequence[Sequence[float]]
                        ) -> Tuple[List[float], List[float], List[float]]:
    """decompose_product of each pair of `a_list` and `b_list` (a node's parent's inverse worlds and its
    worlds, per keyframe), as flat translations, rotations and scales: the same arithmetic, with
    _rotation_and_scale and rotation_quat written out in place (it runs per animated node per keyframe)."""
    translations: List[float] = []
    rotations: List[float] = []
    scales: List[float] = []
    sqrt = math.sqrt
    for a, b in zip(a_list, b_list):
        a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15 = a
        b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14, b15 = b
        if not (a3 == a7 == a11 == 0.0 and a15 == 1.0 and b3 == b7 == b11 == 0.0 and b15 == 1.0):
            translation, rotation, scale = decompose4(multiply4(a, b))  # type: ignore[arg-type]
            translations.extend(translation)
            rotations.extend(rotation)
            scales.extend(scale)
            continue
        m0, m1, m2 = a0 * b0 + a4 * b1 + a8 * b2, a1 * b0 + a5 * b1 + a9 * b2, a2 * b0 + a6 * b1 + a10 * b2
        m4, m5, m6 = a0 * b4 + a4 * b5 + a8 * b6, a1 * b4 + a5 * b5 + a9 * b6, a2 * b4 + a6 * b5 + a10 * b6
        m8, m9, m10 = a0 * b8 + a4 * b9 + a8 * b10, a1 * b8 + a5 * b9 + a9 * b10, a2 * b8 + a6 * b9 + a10 * b10
        translations.extend((a0 * b12 + a4 * b13 + a8 * b14 + a12, a1 * b12 + a5 * b13 + a9 * b14 + a13,
                             a2 * b12 + a6 * b13 + a10 * b14 + a14))
        # _rotation_and_scale
        s0 = sqrt(m0 * m0 + m1 * m1 + m2 * m2)
        s1 = sqrt(m4 * m4 + m5 * m5 + m6 * m6)
        s2 = sqrt(m8 * m8 + m9 * m9 + m10 * m10)
        if m0 * (m5 * m10 - m6 * m9) - m4 * (m1 * m10 - m2 * m9) + m8 * (m1 * m6 - m2 * m5) < 0:
            s0 = -s0
        d0, d1, d2 = s0 or 1.0, s1 or 1.0, s2 or 1.0
        scales.extend((s0, s1, s2))
        # rotation_quat of the unscaled rows
        r00, r01, r02, r10, r11, r12, r20, r21, r22 = m0 / d0, m4 / d1, m8 / d2, m1 / d0, m5 / d1, m9 / d2, m2 / d0, m6 / d1, m10 / d2
        trace = r00 + r11 + r22
        if trace > 0.0:
            s = sqrt(trace + 1.0) * 2.0
            x, y, z, w = (r21 - r12) / s, (r02 - r20) / s, (r10 - r01) / s, 0.25 * s
        elif r00 > r11 and r00 > r22:
            s = sqrt(1.0 + r00 - r11 - r22) * 2.0
            x, y, z, w = 0.25 * s, (r01 + r10) / s, (r02 + r20) / s, (r21 - r12) / s
        elif r11 > r22:
            s = sqrt(1.0 + r11 - r00 - r22) * 2.0
            x, y, z, w = (r01 + r10) / s, 0.25 * s, (r12 + r21) / s, (r02 - r20) / s
        else:
            s = sqrt(1.0 + r22 - r00 - r11) * 2.0
            x, y, z, w = (r02 + r20) / s, (r12 + r21) / s, 0.25 * s, (r10 - r01) / s
        n = sqrt(x * x + y * y + z * z + w * w)
        if n == 0.0:
            rotations.extend((0.0, 0.0, 0.0, 1.0))
        elif w / n < 0.0:
            rotations.extend((-(x / n), -(y / n), -(z / n), -(w / n)))
        else:
            rotations.extend((x / n, y / n, z / n, w / n))
    return translations, rotations, scales


def decompose4(m: Sequence[float]) -> Tuple[Vec3, Quat, Vec3]:
    """Translation, rotation (xyzw) and scale of a column-major 4x4 without shear (unrolled: it runs per
    node per keyframe)."""
    rotation, scale = _rotation_and_scale(m[0], m[1], m[2], m[4], m[5], m[6], m[8], m[9], m[10])
    return (m[12], m[13], m[14]), rotation, scale


def _rotation_and_scale(m0: float, m1: float, m2: float, m4: float, m5: float, m6: float, m8: float, m9: float,
                        m10: float) -> Tuple[Quat, Vec3]:
    """decompose4's rotation and scale from a matrix's upper 3x3 (its columns: m0-m2, m4-m6, m8-m10)."""
    s0 = math.sqrt(m0 * m0 + m1 * m1 + m2 * m2)
    s1 = math.sqrt(m4 * m4 + m5 * m5 + m6 * m6)
    s2 = math.sqrt(m8 * m8 + m9 * m9 + m10 * m10)
    if m0 * (m5 * m10 - m6 * m9) - m4 * (m1 * m10 - m2 * m9) + m8 * (m1 * m6 - m2 * m5) < 0:
        s0 = -s0
    d0, d1, d2 = s0 or 1.0, s1 or 1.0, s2 or 1.0
    rotation = rotation_quat(m0 / d0, m4 / d1, m8 / d2, m1 / d0, m5 / d1, m9 / d2, m2 / d0, m6 / d1, m10 / d2)
    return rotation, (s0, s1, s2)
