"""A retargeted motion written into the target character's own glTF: its meshes, materials, skins and
other nodes kept, its animations replaced by the new one.

Each animated joint gets rotation and translation channels computed from the joint's world transform
(world rotation and position from the motion, the bind pose's world scale), so nodes between or above
the joints (armature nodes with an axis change or a scale), IK-style feet that hang off a root bone, and
a root bone carrying root motion all come out right. Buffers are rebuilt holding only what the kept
parts use, so no orphaned animation data is left for validators to flag.
"""
from __future__ import annotations

import copy
import json
import logging
import math
import os
import posixpath
import re
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from ..errors import KimodoError
from ..files import read_input
from ..model import Motion
from ..ops.fk import global_rotations_and_positions
from ..rotations import Quat, Vec3, quat_normalize
from ..formats import gltf_document as gd
from .mapping import twin_followers

Matrix4 = gd.Matrix4
SELF_CHECK_TOLERANCE_M = 1e-3  # float32 keys on a 100x-scaled armature stay well inside this
_COMPACTION_BLOCKERS = ("KHR_draco_mesh_compression", "EXT_meshopt_compression", "KHR_meshopt_compression")
_URI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")  # RFC 3986; a Windows drive (C:) counts as one too
LOG = logging.getLogger("kimodo_rig")


def _used_accessors(gltf: Dict[str, Any]) -> Set[int]:
    used: Set[int] = set()
    for mesh in gltf.get("meshes", []):
        for primitive in mesh.get("primitives", []):
            used.update(primitive.get("attributes", {}).values())
            if "indices" in primitive:
                used.add(primitive["indices"])
            for target in primitive.get("targets", []):
                used.update(target.values())
    for skin in gltf.get("skins", []):
        if "inverseBindMatrices" in skin:
            used.add(skin["inverseBindMatrices"])
    return used


def _copied(gltf: Dict[str, Any]) -> Dict[str, Any]:
    """A deep copy of a glTF JSON tree, through json's C encoder and decoder (the same values: a float
    reads back as the float written; several times faster than copy.deepcopy on a 700-bone rig's)."""
    return json.loads(json.dumps(gltf, allow_nan=True))


def _compact(gltf: Dict[str, Any], binary: bytes, source: str) -> Tuple[Dict[str, Any], bytearray]:
    """Drop the animations and every accessor and buffer view only they used; rebuild the binary."""
    gltf = _copied(gltf)
    gltf.pop("animations", None)
    if any(e in gltf.get("extensionsUsed", []) for e in _COMPACTION_BLOCKERS):
        return gltf, bytearray(binary)  # views referenced from extensions: keep everything as it is
    accessors = gltf.get("accessors", [])
    keep_accessors = sorted(_used_accessors(gltf))
    accessor_index = {old: new for new, old in enumerate(keep_accessors)}
    views_used: Set[int] = set()
    for old in keep_accessors:
        accessor = accessors[old]
        if "bufferView" in accessor:
            views_used.add(accessor["bufferView"])
        sparse = accessor.get("sparse")
        if sparse:
            views_used.add(sparse["indices"]["bufferView"])
            views_used.add(sparse["values"]["bufferView"])
    for image in gltf.get("images", []):
        if "bufferView" in image:
            views_used.add(image["bufferView"])
    views = gltf.get("bufferViews", [])
    view_index: Dict[int, int] = {}
    new_views: List[Dict[str, Any]] = []
    new_binary = bytearray()
    for old in sorted(views_used):
        view = dict(views[old])
        if view.get("buffer", 0) != 0:
            raise KimodoError("{}: only the GLB's own binary buffer is supported".format(source))
        while len(new_binary) % 8:
            new_binary.append(0)
        start = view.get("byteOffset", 0)
        chunk = binary[start: start + view["byteLength"]]
        if len(chunk) != view["byteLength"]:
            raise KimodoError("{}: buffer view {} ends past the {}-byte binary chunk".format(source, old, len(binary)))
        view["byteOffset"] = len(new_binary)
        view["buffer"] = 0
        new_binary += chunk
        view_index[old] = len(new_views)
        new_views.append(view)
    new_accessors = []
    for old in keep_accessors:
        accessor = dict(accessors[old])
        if "bufferView" in accessor:
            accessor["bufferView"] = view_index[accessor["bufferView"]]
        if "sparse" in accessor:
            sparse = copy.deepcopy(accessor["sparse"])
            sparse["indices"]["bufferView"] = view_index[sparse["indices"]["bufferView"]]
            sparse["values"]["bufferView"] = view_index[sparse["values"]["bufferView"]]
            accessor["sparse"] = sparse
        new_accessors.append(accessor)
    for mesh in gltf.get("meshes", []):
        for primitive in mesh.get("primitives", []):
            primitive["attributes"] = {k: accessor_index[v] for k, v in primitive.get("attributes", {}).items()}
            if "indices" in primitive:
                primitive["indices"] = accessor_index[primitive["indices"]]
            if "targets" in primitive:
                primitive["targets"] = [{k: accessor_index[v] for k, v in t.items()} for t in primitive["targets"]]
    for skin in gltf.get("skins", []):
        if "inverseBindMatrices" in skin:
            skin["inverseBindMatrices"] = accessor_index[skin["inverseBindMatrices"]]
    for image in gltf.get("images", []):
        if "bufferView" in image:
            image["bufferView"] = view_index[image["bufferView"]]
    gltf["accessors"] = new_accessors
    gltf["bufferViews"] = new_views
    if not new_accessors:
        gltf.pop("accessors")
    if not new_views:
        gltf.pop("bufferViews")
    return gltf, new_binary


def _self_contained(gltf: Dict[str, Any], binary: bytearray, source: str) -> None:
    """Make the written file carry no URI to anything outside itself: a character's image or extra buffer
    could name `../../etc/passwd`, `file:///...` or `http://...`, and a relative URI would point elsewhere
    once the .glb is written in another folder. Images in the file's buffer stay; an image file inside
    the character's folder is embedded in `binary`; any other image is left out (and
    its textures' `source` with it), an extra buffer's URI is removed, each with a warning. A data: URI
    image is embedded too: the output is one self-contained .glb, with no URI at all."""
    folder = os.path.dirname(os.path.abspath(source)) if source and os.path.isfile(source) else None
    dropped: List[int] = []
    for index, image in enumerate(_listed(gltf, "images")):
        uri = image.get("uri") if isinstance(image, dict) else None
        if not isinstance(uri, str):
            continue
        data, why = _data_uri_image(uri) if uri.startswith("data:") else _image_inside(folder, uri)
        if data is None:
            LOG.warning("%s: image %d%s (%s) %s; left out of the output", source, index, _named(image), _shown(uri), why)
            dropped.append(index)
            continue
        while len(binary) % 4:
            binary.append(0)
        views = gltf.setdefault("bufferViews", [])
        views.append({"buffer": 0, "byteOffset": len(binary), "byteLength": len(data)})
        binary += data
        del image["uri"]
        image["bufferView"] = len(views) - 1
        image["mimeType"] = _mime_type(data, image.get("mimeType"))
    if dropped:
        _drop_images(gltf, dropped)
    for index, buffer in enumerate(_listed(gltf, "buffers")):
        uri = buffer.get("uri") if index and isinstance(buffer, dict) else None
        if isinstance(uri, str) and not uri.startswith("data:"):
            LOG.warning("%s: buffer %d's URI (%s) is not carried into the output", source, index, _shown(uri))
            del buffer["uri"]


def _data_uri_image(uri: str) -> Tuple[Optional[bytes], str]:
    """The image a data: URI holds, to embed (a URI in a GLB is valid, but validators warn of it)."""
    import base64
    import binascii
    from urllib.parse import unquote_to_bytes

    header, _, payload = uri.partition(",")
    try:
        data = base64.b64decode(payload) if header.endswith(";base64") else unquote_to_bytes(payload)
    except (binascii.Error, ValueError):
        return None, "is not valid base64"
    return (data, "") if _mime_type(data, None) else (None, "is not a PNG, JPEG, WebP or KTX2 image")


def _image_inside(folder: Optional[str], uri: str) -> Tuple[Optional[bytes], str]:
    """(the bytes of the image file a relative `uri` names inside `folder`, read as every input is, "")
    or (None, why not) when it names anything else (a scheme, an absolute path, a way above `folder`)
    or cannot be read."""
    from urllib.parse import unquote  # only a character with an external image pays for urllib

    path = unquote(uri).replace("\\", "/")
    if not path or _URI_SCHEME.match(path) or path.startswith("/") or "\0" in path:
        return None, "is not a file in the character's folder"
    relative = posixpath.normpath(path)
    if relative == ".." or relative.startswith("../"):
        return None, "is outside the character's folder"
    if folder is None:
        return None, "has no folder to be read from"
    try:
        data = read_input(os.path.join(folder, *relative.split("/")))
    except KimodoError as error:
        return None, "cannot be read ({})".format(str(error).rsplit(": ", 1)[-1])
    if _mime_type(data, None) is None:
        return None, "is not a PNG, JPEG, WebP or KTX2 image"
    return data, ""


def _mime_type(data: bytes, declared: Optional[str]) -> Optional[str]:
    """The image's media type by its first bytes (the format's own signature), else `declared`."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data.startswith(b"\xabKTX 20\xbb\r\n\x1a\n"):
        return "image/ktx2"
    return declared


def _drop_images(gltf: Dict[str, Any], dropped: List[int]) -> None:
    """Remove images `dropped` and renumber the rest; a texture of a removed image loses its source (glTF
    allows none) and so does a texture extension's, and a VRM 1.0 thumbnail (the one other image index a
    character's file holds here; VRM 0.x names its thumbnail by texture, which keeps its index)."""
    gone = set(dropped)
    renumbered = {old: new for new, old in enumerate(i for i in range(len(gltf["images"])) if i not in gone)}
    gltf["images"] = [image for i, image in enumerate(gltf["images"]) if i not in gone]
    if not gltf["images"]:
        gltf.pop("images")
    for texture in _listed(gltf, "textures"):
        extensions = texture.get("extensions") if isinstance(texture, dict) else None
        holders = [texture] + [e for e in extensions.values() if isinstance(e, dict)] if isinstance(extensions, dict) \
            else [texture] if isinstance(texture, dict) else []
        for holder in holders:
            if isinstance(holder.get("source"), int):
                if holder["source"] in renumbered:
                    holder["source"] = renumbered[holder["source"]]
                else:
                    del holder["source"]
    extensions = gltf.get("extensions")
    vrm = extensions.get("VRMC_vrm") if isinstance(extensions, dict) else None
    meta = vrm.get("meta") if isinstance(vrm, dict) else None  # VRM 1.0 names its thumbnail image
    if isinstance(meta, dict) and isinstance(meta.get("thumbnailImage"), int):
        if meta["thumbnailImage"] in renumbered:
            meta["thumbnailImage"] = renumbered[meta["thumbnailImage"]]
        else:
            del meta["thumbnailImage"]


def _listed(gltf: Dict[str, Any], key: str) -> List[Any]:
    """gltf[key] when it is a list (a hostile file may hold anything there), else no items."""
    items = gltf.get(key)
    return items if isinstance(items, list) else []


def _named(image: Dict[str, Any]) -> str:
    name = image.get("name")
    return " {!r}".format(name[:60]) if isinstance(name, str) and name else ""


def _shown(uri: str) -> str:
    """A URI as a warning shows it: one line, a data: or long URI cut short."""
    text = uri.replace("\n", " ").replace("\r", " ")
    return text if len(text) <= 80 else text[:77] + "..."


def _insert_root(gltf: Dict[str, Any], builder: gd.DocumentBuilder, document: gd.Document, hips_node: int,
                 name: str, skin_to_world: Sequence[float], root_world: Sequence[float]) -> int:
    """A new node between the hips and its parent, added to every skin that holds the hips."""
    nodes = gltf["nodes"]
    parents = gd.node_parents(gltf)
    parent = parents[hips_node]
    root = len(nodes)
    nodes.append({"name": name, "children": [hips_node]})
    if parent >= 0:
        nodes[parent]["children"] = [root if c == hips_node else c for c in nodes[parent]["children"]]
    for scene in gltf.get("scenes", []):
        if hips_node in scene.get("nodes", []):
            scene["nodes"] = [root if n == hips_node else n for n in scene["nodes"]]
    inverse_bind = gd.multiply4(_inverse(root_world, document.source), list(skin_to_world))
    for skin in gltf.get("skins", []):
        if hips_node not in skin.get("joints", []):
            continue
        if "inverseBindMatrices" in skin:
            matrices = document_accessor(builder, document, skin["inverseBindMatrices"])
        else:
            matrices = [tuple(gd.trs_matrix((0, 0, 0), (0, 0, 0, 1), (1, 1, 1)))] * len(skin["joints"])
        skin["joints"] = list(skin["joints"]) + [root]
        skin["inverseBindMatrices"] = builder.add_accessor(list(matrices) + [tuple(inverse_bind)], "MAT4")
        if skin.get("skeleton") == hips_node:
            skin["skeleton"] = root
    return root


def _pose_at_bind(gltf: Dict[str, Any], nodes_to_pose: Dict[int, Matrix4], bind: Dict[int, Matrix4], source: str) -> None:
    """Give joints the motion does not drive their bind pose (a file may be saved in any frame): each
    node's TRS becomes its bind world relative to its parent's bind world (or the parent's node world)."""
    nodes = gltf["nodes"]
    parents = gd.node_parents(gltf)

    def depth(node: int) -> int:
        count = 0
        while parents[node] >= 0:  # a loop, not recursion: the rig may hang under thousands of nodes
            node = parents[node]
            count += 1
        return count

    for node in sorted(nodes_to_pose, key=depth):
        parent = parents[node]
        if parent < 0:
            local = nodes_to_pose[node]
        else:
            parent_world = bind[parent] if parent in bind else gd.world_matrices(gltf, {}, [parent], parents)[0]
            local = gd.multiply4(_inverse(parent_world, source), nodes_to_pose[node])
        translation, rotation, scale = gd.decompose4(local)
        record = nodes[node]
        record.pop("matrix", None)
        record.update({"translation": list(translation), "rotation": list(rotation), "scale": list(scale)})


def _inverse(matrix: Sequence[float], source: str) -> Matrix4:
    """invert4, with a singular matrix (a node scaled to zero above a joint) as the user's error."""
    try:
        return gd.invert4(matrix)
    except ValueError:
        raise KimodoError("{}: a node above a joint has a singular transform (zero scale?): it cannot carry the "
                          "motion".format(source)) from None


def document_accessor(builder: gd.DocumentBuilder, document: gd.Document, index: int) -> List[Tuple[float, ...]]:
    """Read an accessor of the compacted document being built."""
    return gd.Document(builder.gltf, bytes(builder.binary), document.source).accessor(index)


def _add_twin_followers(animated: Dict[int, List[Matrix4]], joint_nodes: Dict[str, int], bind_worlds: Dict[str, Matrix4],
                        driven: Sequence[str], source: str) -> None:
    """Bones the motion does not drive that follow their DEF-/ORG- twin (mapping.twin_followers): each
    frame's world is the leader's times inverse(leader's bind) times its own bind, as Blender's Copy
    Transforms had it (a Rigify rig's DEF- bones off ORG- bones, its DEF- fingers off ORG- palms)."""
    followers = twin_followers([name for name in joint_nodes if name in bind_worlds], driven)
    for name, leader in sorted(followers.items()):
        if leader not in bind_worlds or joint_nodes[leader] not in animated:
            continue
        offset = gd.multiply4(_inverse(bind_worlds[leader], source), bind_worlds[name])
        animated[joint_nodes[name]] = [gd.multiply4(world, offset) for world in animated[joint_nodes[leader]]]


def build(
    document: gd.Document,
    motion: Motion,
    joint_nodes: Dict[str, int],
    joint_scales: Dict[str, Vec3],
    *,
    root_track: Optional[Sequence[Tuple[Vec3, Quat]]] = None,
    root_node_name: Optional[str] = None,
    new_root: bool = False,
    skin_to_world: Optional[Sequence[float]] = None,
    bind_worlds: Optional[Dict[str, Matrix4]] = None,
    inverse_binds: Optional[Dict[int, Sequence[float]]] = None,
    poses: Optional[Tuple[Sequence[Sequence[Quat]], Sequence[Sequence[Vec3]]]] = None,
) -> gd.DocumentBuilder:
    """The GLB being built (to_glb: its bytes; to_document: its scene in memory): `document` with one
    animation playing `motion`, whose joints are the nodes `joint_nodes[name]` (world poses from the
    motion; `joint_scales` the bind world scale per joint).
    With `root_track`, the node `root_node_name` (a new one when `new_root`) carries it; `inverse_binds`
    (node -> matrix) replaces those nodes' inverse bind matrices in every skin that holds them; `poses`,
    the motion's global_rotations_and_positions where the caller has them."""
    gltf, binary = _compact(document.gltf, document.binary, document.source)
    _self_contained(gltf, binary, document.source)
    builder = gd.DocumentBuilder()
    builder.gltf = gltf
    builder.binary = binary
    for skin in gltf.get("skins", []) if inverse_binds else []:
        if "inverseBindMatrices" in skin and any(node in inverse_binds for node in skin.get("joints", [])):
            matrices = document_accessor(builder, document, skin["inverseBindMatrices"])
            matrices = [tuple(inverse_binds[node]) if node in inverse_binds else m for node, m in zip(skin["joints"], matrices)]
            skin["inverseBindMatrices"] = builder.add_accessor(matrices, "MAT4")
    gltf.setdefault("asset", {"version": "2.0"})
    skeleton = motion.skeleton
    nodes = gltf["nodes"]
    if bind_worlds:
        # Every joint's node is written at its bind pose, the driven ones too (their channels override
        # it): the file then reads as saved at bind, whatever frame the character's own file was saved in.
        _pose_at_bind(gltf, {joint_nodes[name]: world for name, world in bind_worlds.items()
                             if not (root_track is not None and name == root_node_name)},
                      {joint_nodes[name]: world for name, world in bind_worlds.items()}, document.source)
    static_world = gd.world_matrices(gltf, {})
    hips_node = joint_nodes[skeleton.joint_names[0]]

    animated: Dict[int, List[Matrix4]] = {}
    rotations, positions = poses if poses is not None else global_rotations_and_positions(motion)
    for joint, name in enumerate(skeleton.joint_names):
        if name not in joint_nodes:
            continue  # a tip joint: a plain node under its bone, carried by it
        scale = joint_scales.get(name, (1.0, 1.0, 1.0))
        animated[joint_nodes[name]] = gd.normalized_trs_matrices([frame[joint] for frame in positions],
                                                                 [frame[joint] for frame in rotations], scale)
    if root_track is not None:
        if new_root:
            parent = gd.node_parents(gltf)[hips_node]
            parent_world = static_world[parent] if parent >= 0 else gd.trs_matrix((0, 0, 0), (0, 0, 0, 1), (1, 1, 1))
            scale = gd.decompose4(parent_world)[2]
            rest_world = gd.trs_matrix(root_track[0][0], root_track[0][1], scale)
            root = _insert_root(gltf, builder, document, hips_node, root_node_name or "root",
                                skin_to_world or gd.trs_matrix((0, 0, 0), (0, 0, 0, 1), (1, 1, 1)), rest_world)
        else:
            root = joint_nodes[root_node_name or ""]
            scale = gd.decompose4(static_world[root])[2]
        animated[root] = [gd.trs_matrix(p, quat_normalize(q), scale) for p, q in root_track]
    if bind_worlds:
        _add_twin_followers(animated, joint_nodes, bind_worlds, skeleton.joint_names, document.source)

    parents = gd.node_parents(gltf)
    frames = motion.frame_count
    inverse_worlds = _inverse_parent_worlds(gltf, animated, parents, frames, document.source)
    times = builder.add_accessor([(f / motion.fps,) for f in range(frames)], "SCALAR", with_bounds=True)
    samplers: List[Dict[str, Any]] = []
    channels: List[Dict[str, Any]] = []
    for node in sorted(animated):
        parent = parents[node]
        if parent < 0:
            keys = [gd.decompose4(desired) for desired in animated[node]]
            flats = tuple([c for key in keys for c in key[slot]] for slot in range(3))
        else:
            flats = gd.decomposed_products(inverse_worlds[parent], animated[node])
        node_record = nodes[node]
        if "matrix" in node_record:  # an animated node must use TRS
            translation, rotation, scale = gd.decompose4(node_record.pop("matrix"))
            node_record.update({"translation": list(translation), "rotation": list(rotation), "scale": list(scale)})
        static_scale = node_record.get("scale", (1.0, 1.0, 1.0))
        paths = [("translation", 0, "VEC3"), ("rotation", 1, "VEC4")]
        if any(_strays(flats[2][i::3], static_scale[i], 1e-4 * max(1.0, abs(static_scale[i])))
               for i in range(3)):
            paths.append(("scale", 2, "VEC3"))
        for path, slot, kind in paths:
            flat = flats[slot]
            samplers.append({"input": times, "output": builder.add_components(flat, kind), "interpolation": "LINEAR"})
            channels.append({"sampler": len(samplers) - 1, "target": {"node": node, "path": path}})
    gltf["animations"] = [{"name": motion.name or "retargeted", "samplers": samplers, "channels": channels}]
    gltf["asset"]["generator"] = "kimodo-rig"
    return builder


def _inverse_parent_worlds(gltf: Dict[str, Any], animated: Dict[int, List[Matrix4]], parents: Sequence[int],
                           frames: int, source: str) -> Dict[int, List[Matrix4]]:
    """Per parent of an animated node, its world matrix inverted at each frame: an animated parent's
    from its keys, a node between it and its nearest animated ancestor carried by that one (ancestor's
    world times the nodes' own matrices, parent before child), a parent with none above it inverted once."""
    nodes = gltf["nodes"]
    inverses: Dict[int, List[Matrix4]] = {}
    for node in animated:
        parent = parents[node]
        if parent < 0 or parent in inverses:
            continue
        chain = []  # the nodes no key moves, from the parent up to the nearest animated ancestor
        above = parent
        while above >= 0 and above not in animated:
            chain.append(above)
            above = parents[above]
        locals_ = [gd.node_local_matrix(nodes[known]) for known in reversed(chain)]
        if above < 0:
            world = locals_[0]
            for local in locals_[1:]:
                world = gd.multiply4(world, local)
            inverses[parent] = [_inverse(world, source)] * frames if frames else []  # no frame, nothing inverted
            continue
        worlds = animated[above]
        for local in locals_:
            worlds = [gd.multiply4(world, local) for world in worlds]
        inverses[parent] = [_inverse(world, source) for world in worlds]
    return inverses


def _strays(values: Sequence[float], value: float, tolerance: float) -> bool:
    """Whether any of `values` lies more than `tolerance` from `value` (a NaN never does)."""
    low, high = min(values, default=value), max(values, default=value)
    if math.isnan(low) or math.isnan(high):  # a NaN first hides the rest from min and max
        return any(abs(v - value) > tolerance for v in values)
    return high - value > tolerance or value - low > tolerance


def nodes_by_name(gltf: Dict[str, Any]) -> Dict[str, int]:
    """Node name -> the first node of that name (how a file another host wrote is read back)."""
    by_name: Dict[str, int] = {}
    for index, node in enumerate(gltf.get("nodes", [])):
        by_name.setdefault(node.get("name"), index)
    return by_name


# The last evaluation, by the bytes, the names and the nodes, and the last bytes parsed: the self-check of
# a written .glb and the report read back the same bytes (the report from the file: equal bytes, another
# object), and on a 700-bone rig each evaluation was a second of the retarget.
_LAST_EVALUATED: Dict[Tuple[Any, ...], List[List[Vec3]]] = {}
_LAST_PARSED: Dict[bytes, gd.Document] = {}


def clear_caches() -> None:
    """Forget the last parse and evaluation, as a new process starts (benchmarks/bench_fbx.py times each
    write as a process pays it: an earlier write of the same bytes would lend it both)."""
    _LAST_PARSED.clear()
    _LAST_EVALUATED.clear()


def parsed_glb(data: bytes, source: str) -> gd.Document:
    """gd.parse_glb of a written .glb, parsed (and its accessors decoded) once for the self-check and the
    report. The document is shared: read it, never change it."""
    data = bytes(data)
    if data not in _LAST_PARSED:
        document = gd.parse_glb(data, source)
        _LAST_PARSED.clear()
        _LAST_PARSED[data] = document
    return _LAST_PARSED[data]


def joint_world_positions(data: bytes, joint_names: Sequence[str], source: str = "output",
                          node_of: Optional[Dict[str, int]] = None) -> List[List[Vec3]]:
    """Per keyframe, the world position of the joints `joint_names`, evaluating the GLB's node hierarchy and
    its first animation with 4x4 matrices (independent of the model's quaternion FK). `node_of` (joint name
    -> node index) says which node is which joint in a file this package wrote on a character, whose node
    names stay the character's own (empty, or repeated); without it, the nodes are found by name."""
    key = (bytes(data), tuple(joint_names), None if node_of is None else tuple(sorted(node_of.items())))
    if key not in _LAST_EVALUATED:
        positions = _joint_world_positions(data, joint_names, source, node_of)
        _LAST_EVALUATED.clear()
        _LAST_EVALUATED[key] = positions
    return [list(frame) for frame in _LAST_EVALUATED[key]]


def _joint_world_positions(data: bytes, joint_names: Sequence[str], source: str,
                           node_of: Optional[Dict[str, int]]) -> List[List[Vec3]]:
    return document_joint_world_positions(parsed_glb(data, source), joint_names, source, node_of)


def document_joint_world_positions(document: gd.Document, joint_names: Sequence[str], source: str,
                                   node_of: Optional[Dict[str, int]] = None) -> List[List[Vec3]]:
    """joint_world_positions of a parsed document (the glTF document an .fbx reads into, say)."""
    gltf = document.gltf
    lookup = node_of if node_of is not None else nodes_by_name(gltf)
    count = len(gltf.get("nodes", []))
    missing = [n for n in joint_names if not 0 <= lookup.get(n, -1) < count]
    if missing:
        raise KimodoError("{}: no node {} {}".format(source, "for joint" if node_of is not None else "named", missing[0]))
    times, channels = gd.animation_keyframes(document)
    wanted = [lookup[n] for n in joint_names]
    parents = gd.node_parents(gltf)
    return list(gd.keyframe_world_positions(gltf, channels, len(times), wanted, parents))
