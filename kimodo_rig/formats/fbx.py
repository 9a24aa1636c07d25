"""Binary FBX out: the box rig of a clip (one LimbNode per joint, a skinned box per bone, one take).

The scene is Kimodo's frame written as FBX states it: Y up, Z front, X the third axis (right-handed,
GlobalSettings UpAxis=1, FrontAxis=2, CoordAxis=0, all signs +1: Maya's and Unity's own frame, and what
Blender's importer turns into Z up with its default axes). Lengths are centimetres with UnitScaleFactor=1,
the FBX default: Maya and Mixamo write it, Unity's "Convert Units" scales it by 0.01 to metres, and
Blender's importer ("Apply Unit", on by default) scales it by 0.01 to metres. A file in metres with
UnitScaleFactor=100 is read right by the same three, but a tool that ignores the unit scale (many game
pipelines do) would see a character 100 times too small; centimetres are right even then.

Rotations are Euler angles in degrees, RotationOrder eEulerXYZ (0): R = Rz * Ry * Rx, X applied first.
Each joint's Lcl Rotation is keyed at every frame (its full local rotation, rest included) and the root's
Lcl Translation too, at frame/fps in FBX time (46186158000 ticks a second), with linear interpolation;
angles are unwrapped from key to key so no channel jumps by 360 degrees between frames.
Reading (read_document, read_motion_document, read) is formats/fbx_scene.py's. Layout: docs/fbx.md.
"""
from __future__ import annotations

import math
from array import array
from itertools import islice, zip_longest
TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    from typing import Dict, List, Optional, Sequence, Set, Tuple

from .. import skeletons
from ..errors import KimodoError
from ..files import write_bytes_atomic
from ..model import Motion, Skeleton
from ..ops.fk import rest_pose
from ..rotations import quat_normalize, quat_to_matrix
from . import fbx_binary as fb
from . import gltf_document as gd
from .fbx_binary import Long, Node
from .options import DEFAULT, WriteOptions

NAME = "fbx"
DESCRIPTION = "binary FBX 7.4: skeleton (LimbNodes), one skinned box per bone, one take"
EXTENSIONS = (".fbx",)
FBX_VERSION = 7400
TICKS_PER_SECOND = 46186158000  # FBX time (KTime) units per second
CENTIMETRES_PER_METRE = 100.0
EULER_ORDER_XYZ = 0  # FBX RotationOrder enum: eEulerXYZ, R = Rz Ry Rx
# KeyAttrFlags of a key: linear interpolation (bit 2) with the tangent bits Blender's exporter sets
# (auto, generic time-independent, clamp progressive), and its four KeyAttrDataFloat values.
KEY_FLAGS = (1 << 2) | (1 << 8) | (1 << 13) | (1 << 14)
KEY_DATA = (0.0, 0.0, 9.419963346924634e-30, 0.0)
# GlobalSettings TimeMode for the frame rates FBX names; any other rate is eCustom (14) with CustomFrameRate.
TIME_MODES = {120.0: 1, 100.0: 2, 60.0: 3, 50.0: 4, 48.0: 5, 30.0: 6, 25.0: 10, 24.0: 11, 1000.0: 12, 96.0: 15, 72.0: 16}
TIME_MODE_CUSTOM = 14
BONE_COLOUR = (0.7, 0.72, 0.75)  # as the .glb's box material


def _object_name(name: str, kind: str) -> str:
    """An object's name as binary FBX stores it: the name, \\x00\\x01, its class."""
    return name + "\x00\x01" + kind


def _p(name: str, kind: str, label: str, flags: str, *values) -> Tuple:
    return ("P", name, kind, label, flags) + tuple(values)


def _properties70(parent: Node, rows: Sequence[Tuple]) -> Node:
    block = parent.add("Properties70")
    for row in rows:
        block.add(row[0], *row[1:])
    return block


def _matrix(rotation, position_cm) -> array:
    """A 4x4 transform as FBX stores it: 16 doubles, column by column, translation last."""
    m = quat_to_matrix(quat_normalize(rotation))
    return array("d", [m[0][0], m[1][0], m[2][0], 0.0, m[0][1], m[1][1], m[2][1], 0.0,
                       m[0][2], m[1][2], m[2][2], 0.0, position_cm[0], position_cm[1], position_cm[2], 1.0])


def _inverse_rigid(rotation, position_cm) -> array:
    """The inverse of a rotation-and-translation transform: [R^T | -R^T p]."""
    m = quat_to_matrix(quat_normalize(rotation))
    t = [-sum(m[row][column] * position_cm[row] for row in range(3)) for column in range(3)]
    return array("d", [m[0][0], m[0][1], m[0][2], 0.0, m[1][0], m[1][1], m[1][2], 0.0,
                       m[2][0], m[2][1], m[2][2], 0.0, t[0], t[1], t[2], 1.0])


def euler_xyz_degrees(rotation) -> Tuple[float, float, float]:
    """FBX Lcl Rotation (X, Y, Z degrees, order eEulerXYZ: R = Rz Ry Rx) of a quaternion: what
    rotations.quat_to_euler("ZYX", quat_normalize(rotation)) gives, reversed (euler_curves of one key)."""
    xs, ys, zs = euler_curves(rotation, 0, 4, 1)
    return (xs[0], ys[0], zs[0])


def euler_curves(quaternions: Sequence[float], first: int, step: int, keys: int) -> List[List[float]]:
    """The X, Y and Z Lcl Rotation curves (degrees) of `keys` quaternions (x, y, z, w at `first`,
    `first + step`, ...), each key quat_to_euler("ZYX", quat_normalize(q)) reversed, computed with its
    operations on the five matrix entries it reads, in one loop (every key of every joint: writing speed);
    each angle shifted by whole turns so that no step between keys exceeds 180 degrees. A key equal to the
    one before (most keys of a joint the motion leaves at rest) repeats its angles, which is what they
    would come to: an angle a whole number of turns from the one before is unwrapped onto it."""
    xs: List[float] = []
    ys: List[float] = []
    zs: List[float] = []
    sqrt, asin, atan2, degrees = math.sqrt, math.asin, math.atan2, math.degrees
    before = (math.nan,) * 4
    for at in range(first, first + step * keys, step):
        x, y, z, w = key = quaternions[at], quaternions[at + 1], quaternions[at + 2], quaternions[at + 3]
        if key == before and x * y * z * w != 0.0:  # equal and no zero (0.0 == -0.0): the same bits
            xs.append(xs[-1])
            ys.append(ys[-1])
            zs.append(zs[-1])
            continue
        before = key
        n = sqrt(x * x + y * y + z * z + w * w)  # quat_normalize, in place
        if n == 0.0:
            x, y, z, w = 0.0, 0.0, 0.0, 1.0
        else:
            x, y, z, w = x / n, y / n, z / n, w / n
        m00 = 1 - 2 * (y * y + z * z)
        m10 = 2 * (x * y + z * w)
        m20 = 2 * (x * z - y * w)
        sb = max(-1.0, min(1.0, -1.0 * m20))
        b = asin(sb)
        if abs(sb) < 0.9999999:
            a = atan2(1.0 * m10, m00)
            c = atan2(1.0 * (2 * (y * z + x * w)), 1 - 2 * (x * x + y * y))
        else:  # gimbal lock: the first angle folded into the last, as quat_to_euler does
            a = atan2(-1.0 * (2 * (x * y - z * w)), 1 - 2 * (x * x + z * z))
            c = 0.0
        angle_x, angle_y, angle_z = degrees(c), degrees(b), degrees(a)
        if xs:
            angle_x -= 360.0 * round((angle_x - xs[-1]) / 360.0)
            angle_y -= 360.0 * round((angle_y - ys[-1]) / 360.0)
            angle_z -= 360.0 * round((angle_z - zs[-1]) / 360.0)
        xs.append(angle_x)
        ys.append(angle_y)
        zs.append(angle_z)
    return [xs, ys, zs]


class _Scene:
    """The Objects and Connections being built, with ids given in order."""

    def __init__(self) -> None:
        self.objects = Node("Objects")
        self.connections = Node("Connections")
        self.counts: Dict[str, int] = {}
        self.next_id = 1000000
        self.key_records: Dict[int, Tuple[array, List[Node], List[Node]]] = {}

    def key_records_of(self, times: array) -> Tuple[List[Node], List[Node]]:
        """The records every AnimationCurve keyed at `times` holds alike, before and after its values:
        made once and shared by the curves (the encoder only reads them; writing speed)."""
        held = self.key_records.get(id(times))
        if held is None:
            before = [Node("KeyVer", [4009]), Node("KeyTime", [times])]
            after = [Node("KeyAttrFlags", [array("i", [KEY_FLAGS])]), Node("KeyAttrDataFloat", [array("f", KEY_DATA)]),
                     Node("KeyAttrRefCount", [array("i", [len(times)])])]
            held = self.key_records[id(times)] = (times, before, after)  # `times` kept: its id stays its own
        return held[1], held[2]

    def add(self, node_type: str, name: str, kind: str, subtype: str) -> Tuple[Long, Node]:
        self.next_id += 1
        identifier = Long(self.next_id)
        node = self.objects.add(node_type, identifier, _object_name(name, kind), subtype)
        self.counts[node_type] = self.counts.get(node_type, 0) + 1
        return identifier, node

    def connect(self, child: int, parent: int, prop: str = "") -> None:
        if prop:
            self.connections.add("C", "OP", Long(child), Long(parent), prop)
        else:
            self.connections.add("C", "OO", Long(child), Long(parent))


def encode(motion: Motion, *, names: str = "mannequin") -> bytes:
    """The FBX bytes of `motion`'s box rig. `names`: "mannequin" (Unreal names for SMPL-X) or "native"."""
    from .glb import _bone_box_lists  # the .glb's boxes, so both files show the same rig

    skeleton = motion.skeleton
    joint_names = skeletons.display_names(skeleton, names)
    clip = motion.name or "kimodo"
    scene = _Scene()
    bone_ids = _skeleton(scene, skeleton, joint_names)
    mesh_id = _box_mesh(scene, skeleton, joint_names, bone_ids, clip, _bone_box_lists(skeleton))
    _bind_pose(scene, skeleton, bone_ids, mesh_id)
    stop = _animation(scene, motion, bone_ids, clip)
    return fb.encode(_document(scene, clip, motion.fps, stop), FBX_VERSION)


def _skeleton(scene: _Scene, skeleton: Skeleton, joint_names: Sequence[str]) -> List[Long]:
    """One LimbNode model (and its NodeAttribute) per joint, parented as the skeleton is; the root
    hangs off the scene root."""
    ids = []
    for joint in range(skeleton.joint_count):
        offset = [c * CENTIMETRES_PER_METRE for c in skeleton.rest_offsets[joint]]
        model_id = _model(scene, joint_names[joint], "LimbNode", offset, skeleton.rest_rotations[joint], (1.0, 1.0, 1.0))
        parent = skeleton.parents[joint]
        scene.connect(model_id, ids[parent] if parent >= 0 else 0)
        ids.append(model_id)
    return ids


def _box_mesh(scene: _Scene, skeleton: Skeleton, joint_names: Sequence[str], bone_ids: Sequence[Long], clip: str,
              boxes) -> Long:
    """The boxes as one quad mesh in the rest pose (centimetres), a material, a skin and a cluster per bone
    whose TransformLink is the bone's rest world transform (Transform its inverse: the mesh sits at the
    origin)."""
    positions, normals, joints, _ = boxes
    geometry_id, geometry = scene.add("Geometry", "bones", "Geometry", "Mesh")
    geometry.add("GeometryVersion", 124)
    geometry.add("Vertices", array("d", [c * CENTIMETRES_PER_METRE for c in positions]))
    corners = array("i", range(len(joints)))
    corners[3::4] = array("i", [-1 - c for c in corners[3::4]])  # a polygon's last corner is stored as ~index
    geometry.add("PolygonVertexIndex", corners)
    _layer(geometry, [
        _layer_element(geometry, "LayerElementNormal", "", "ByPolygonVertex", "Direct",
                       Normals=array("d", normals)),  # polygon corners are the vertices in order
        _layer_element(geometry, "LayerElementMaterial", "", "AllSame", "IndexToDirect", Materials=array("i", [0])),
    ])

    mesh_id = _model(scene, clip + "_mesh", "Mesh", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (1.0, 1.0, 1.0))
    scene.connect(mesh_id, 0)
    scene.connect(geometry_id, mesh_id)

    material_id, material = scene.add("Material", "bone", "Material", "")
    material.add("Version", 102)
    material.add("ShadingModel", "lambert")
    material.add("MultiLayer", 0)
    _properties70(material, [_p("DiffuseColor", "Color", "", "A", *BONE_COLOUR),
                             _p("DiffuseFactor", "Number", "", "A", 1.0)])
    scene.connect(material_id, mesh_id)

    skin_id, skin = scene.add("Deformer", "Skin", "Deformer", "Skin")
    skin.add("Version", 101)
    skin.add("Link_DeformAcuracy", 50.0)
    scene.connect(skin_id, geometry_id)
    by_joint: List[List[int]] = [[] for _ in range(skeleton.joint_count)]
    for vertex, joint in enumerate(joints):
        by_joint[joint].append(vertex)
    for joint, (rotation, position) in enumerate(zip(*rest_pose(skeleton))):
        position_cm = [c * CENTIMETRES_PER_METRE for c in position]
        cluster_id, cluster = scene.add("Deformer", joint_names[joint], "SubDeformer", "Cluster")
        cluster.add("Version", 100)
        cluster.add("UserData", "", "")
        cluster.add("Indexes", array("i", by_joint[joint]))
        cluster.add("Weights", array("d", [1.0] * len(by_joint[joint])))
        cluster.add("Transform", _inverse_rigid(rotation, position_cm))
        cluster.add("TransformLink", _matrix(rotation, position_cm))
        scene.connect(cluster_id, skin_id)
        scene.connect(bone_ids[joint], cluster_id)
    return mesh_id


def _bind_pose(scene: _Scene, skeleton: Skeleton, bone_ids: Sequence[Long], mesh_id: Long) -> None:
    """A BindPose holding the mesh's and every bone's world transform at bind (the rest pose)."""
    pose_id, pose = scene.add("Pose", "BIND_POSES", "Pose", "BindPose")
    pose.add("Type", "BindPose")
    pose.add("Version", 100)
    pose.add("NbPoseNodes", 1 + skeleton.joint_count)
    entry = pose.add("PoseNode")
    entry.add("Node", mesh_id)
    entry.add("Matrix", _matrix((0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0)))
    for joint, (rotation, position) in enumerate(zip(*rest_pose(skeleton))):
        entry = pose.add("PoseNode")
        entry.add("Node", bone_ids[joint])
        entry.add("Matrix", _matrix(rotation, [c * CENTIMETRES_PER_METRE for c in position]))


def key_times(frames: int, fps: float) -> array:
    """FBX times of frame/fps for each frame."""
    return array("q", [int(round(frame * TICKS_PER_SECOND / fps)) for frame in range(frames)])


def _animation(scene: _Scene, motion: Motion, bone_ids: Sequence[Long], clip: str) -> int:
    """One AnimationStack named after the clip with one layer: every joint's Lcl Rotation and the root's
    Lcl Translation keyed at every frame. Returns the last key's time."""
    frames = motion.frame_count
    times = key_times(frames, motion.fps)
    stop = times[-1] if frames else 0
    stack_id, stack = scene.add("AnimationStack", clip, "AnimStack", "")
    _properties70(stack, [_p(name, "KTime", "Time", "", Long(value)) for name, value in (
        ("LocalStart", 0), ("LocalStop", stop), ("ReferenceStart", 0), ("ReferenceStop", stop))])
    layer_id, _ = scene.add("AnimationLayer", "BaseLayer", "AnimLayer", "")
    scene.connect(layer_id, stack_id)
    count = motion.joint_count
    rotations = motion.local_rotations
    for joint in range(count):
        columns = euler_curves(rotations, 4 * joint, 4 * count, frames)
        _curve_node(scene, layer_id, bone_ids[joint], "R", "Lcl Rotation", times, columns)
    roots = motion.root_positions
    columns = [[c * CENTIMETRES_PER_METRE for c in roots[axis::3]] for axis in range(3)]
    _curve_node(scene, layer_id, bone_ids[0], "T", "Lcl Translation", times, columns)
    return stop


def _curve_node(scene: _Scene, layer_id: Long, model_id: Long, short: str, prop: str, times: array,
                columns: Sequence[Sequence[float]]) -> None:
    node_id, node = scene.add("AnimationCurveNode", short, "AnimCurveNode", "")
    _properties70(node, [_p("d|" + axis, "Number", "", "A", float(column[0]) if column else 0.0)
                         for axis, column in zip("XYZ", columns)])
    scene.connect(node_id, layer_id)
    scene.connect(node_id, model_id, prop)
    before, after = scene.key_records_of(times)  # KeyVer, KeyTime; KeyAttrFlags, KeyAttrDataFloat, KeyAttrRefCount
    for axis, column in zip("XYZ", columns):
        curve_id, curve = scene.add("AnimationCurve", "", "AnimCurve", "")
        curve.add("Default", float(column[0]) if column else 0.0)
        curve.children += before
        curve.add("KeyValueFloat", array("f", column))
        curve.children += after
        scene.connect(curve_id, node_id, "d|" + axis)


def _document(scene: _Scene, clip: str, fps: float, stop: int) -> List[Node]:
    """The top-level nodes around the scene's objects: header, global settings, definitions, take."""
    header = Node("FBXHeaderExtension")
    header.add("FBXHeaderVersion", 1003)
    header.add("FBXVersion", FBX_VERSION)
    header.add("EncryptionType", 0)
    header.add("Creator", "kimodo-rig")
    settings = Node("GlobalSettings")
    settings.add("Version", 1000)
    _properties70(settings, [
        _p("UpAxis", "int", "Integer", "", 1), _p("UpAxisSign", "int", "Integer", "", 1),
        _p("FrontAxis", "int", "Integer", "", 2), _p("FrontAxisSign", "int", "Integer", "", 1),
        _p("CoordAxis", "int", "Integer", "", 0), _p("CoordAxisSign", "int", "Integer", "", 1),
        _p("OriginalUpAxis", "int", "Integer", "", 1), _p("OriginalUpAxisSign", "int", "Integer", "", 1),
        _p("UnitScaleFactor", "double", "Number", "", 1.0), _p("OriginalUnitScaleFactor", "double", "Number", "", 1.0),
        _p("AmbientColor", "ColorRGB", "Color", "", 0.0, 0.0, 0.0),
        _p("DefaultCamera", "KString", "", "", "Producer Perspective"),
        _p("TimeMode", "enum", "", "", TIME_MODES.get(float(fps), TIME_MODE_CUSTOM)),
        _p("TimeProtocol", "enum", "", "", 2),
        _p("SnapOnFrameMode", "enum", "", "", 0),
        _p("TimeSpanStart", "KTime", "Time", "", Long(0)),
        _p("TimeSpanStop", "KTime", "Time", "", Long(stop)),
        _p("CustomFrameRate", "double", "Number", "", float(fps)),
        _p("CurrentTimeMarker", "int", "Integer", "", -1),
    ])
    documents = Node("Documents")
    documents.add("Count", 1)
    document = documents.add("Document", Long(1000000), "Scene", "Scene")
    _properties70(document, [_p("SourceObject", "object", "", ""),
                             _p("ActiveAnimStackName", "KString", "", "", clip)])
    document.add("RootNode", Long(0))
    definitions = Node("Definitions")
    definitions.add("Version", 100)
    definitions.add("Count", 1 + sum(scene.counts.values()))
    kind = definitions.add("ObjectType", "GlobalSettings")
    kind.add("Count", 1)
    for node_type, count in scene.counts.items():
        kind = definitions.add("ObjectType", node_type)
        kind.add("Count", count)
    takes = Node("Takes")
    takes.add("Current", clip)
    take = takes.add("Take", clip)
    take.add("FileName", clip + ".tak")
    take.add("LocalTime", Long(0), Long(stop))
    take.add("ReferenceTime", Long(0), Long(stop))
    return [header, Node("FileId", [fb.FILE_ID]), Node("CreationTime", ["1970-01-01 10:00:00:000"]),
            Node("Creator", ["kimodo-rig"]), settings, documents, Node("References"), definitions,
            scene.objects, scene.connections, takes]


# --- a skinned glTF scene as FBX (the retarget's character output) ----------------------------------

IMAGE_EXTENSIONS = {"image/png": ".png", "image/jpeg": ".jpg"}


def encode_gltf(document: gd.Document, *, take: str, fps: float) -> bytes:
    """The FBX bytes of a glTF scene with one animation keyed at frame/fps (what the retarget writes as
    .glb): every node a Model (LimbNode where a skin uses it, Mesh where it holds a mesh, else Null) with
    its local translation (cm), rotation (Euler XYZ) and scale; every mesh as one Geometry (triangles,
    normals, UVs, a material slot per primitive, base colour and embedded base colour texture); every
    skin as a Skin deformer with a Cluster per joint and a BindPose; the animation as one take named `take`.
    A skinned mesh's Model sits at the scene root where the skin was bound (`_SkinPlacement`: glTF
    ignores a skinned mesh node's own transform), each Cluster's Transform is the joint's inverse bind
    matrix (cm) and its TransformLink the joint's world at bind, mesh bind * inverse bind^-1, so that
    joint world * TransformLink^-1 * mesh bind skins as glTF does (joint world * inverse bind)."""
    gltf = document.gltf
    nodes = gltf.get("nodes", [])
    parents = gd.node_parents(gltf)
    joints = {j for skin in gltf.get("skins", []) for j in skin.get("joints", [])}
    scene = _Scene()
    materials = _Materials(scene, document)
    model_ids: Dict[int, Long] = {}
    bind_entries: List[Tuple[Long, array]] = []
    placements = [_SkinPlacement(document, skin, parents, joints) for skin in gltf.get("skins", [])]
    for index in _parents_first(parents):
        node = nodes[index]
        name = model_name(node, index)
        skinned = "mesh" in node and "skin" in node
        if skinned:
            translation, rotation, scale = gd.decompose4(placements[node["skin"]].mesh_bind)
        elif "matrix" in node:
            translation, rotation, scale = gd.decompose4(node["matrix"])
            translation = [c * CENTIMETRES_PER_METRE for c in translation]
        else:
            translation = [c * CENTIMETRES_PER_METRE for c in node.get("translation", (0.0, 0.0, 0.0))]
            rotation, scale = node.get("rotation", (0.0, 0.0, 0.0, 1.0)), node.get("scale", (1.0, 1.0, 1.0))
        kind = "LimbNode" if index in joints else "Mesh" if "mesh" in node else "Null"
        model_id = _model(scene, name, kind, translation, rotation, scale)
        model_ids[index] = model_id
        parent = parents[index]
        scene.connect(model_id, model_ids[parent] if parent >= 0 and not skinned else 0)
    for index, node in enumerate(nodes):
        if "mesh" not in node:
            continue
        geometry_id, corners_of = _gltf_geometry(scene, document, node["mesh"], materials, model_ids[index])
        scene.connect(geometry_id, model_ids[index])
        if "skin" in node:
            placement = placements[node["skin"]]
            bind_entries.extend(_gltf_skin(scene, document, gltf["skins"][node["skin"]], node["mesh"], geometry_id,
                                           model_ids, placement))
            bind_entries.append((model_ids[index], array("d", placement.mesh_bind)))
    if bind_entries:
        pose_id, pose = scene.add("Pose", "BIND_POSES", "Pose", "BindPose")
        pose.add("Type", "BindPose")
        pose.add("Version", 100)
        unique = dict(bind_entries)
        pose.add("NbPoseNodes", len(unique))
        for model_id, matrix in unique.items():
            entry = pose.add("PoseNode")
            entry.add("Node", model_id)
            entry.add("Matrix", matrix)
    stop = _gltf_animation(scene, document, model_ids, take, fps)
    return fb.encode(_document(scene, take, fps, stop), FBX_VERSION)


def model_name(node: Dict, index: int) -> str:
    """The name encode_gltf gives the Model of glTF node `index`: the node's own, else node<index>."""
    return node.get("name") or "node{}".format(index)


def _in_centimetres(matrix: Sequence[float]) -> List[float]:
    """A column-major transform in metres as the same transform in centimetres (translation * 100)."""
    return [float(c) for c in matrix[:12]] + [float(c) * CENTIMETRES_PER_METRE for c in matrix[12:15]] + [1.0]


class _SkinPlacement:
    """Where a skin was bound, in the world at rest (cm), as FBX readers want it said.

    mesh_bind: where its meshes sat, the skin's top joint's world times that joint's inverse bind matrix.
    glTF has no such place (inverse bind matrices may be relative to the world, to the armature node, to
    anything); this one gives every joint's bind (TransformLink) the scale its node carries in the tree.
    Blender's importer needs that: it builds each bone from its TransformLink with the scale taken out
    and poses it by TransformLink^-1 * its local transform, so a bind in the armature's own units under
    an armature node scaled by 100 (RobotExpressive) posed every bone 100 times too far.

    armature_world: the world of the node Blender's importer makes the armature (the parent of the
    highest joint above the skin's top joint; identity at the scene root), each Cluster's
    TransformAssociateModel as Blender's exporter writes it. Blender's importer places a skinned mesh by
    it (else by the armature node's local transform, which puts the mesh off by whatever scales and
    turns sit above the armature: 1.7 m on a mannequin under a node scaled by 0.01)."""

    def __init__(self, document: gd.Document, skin: Dict, parents: Sequence[int], joints: Set[int]) -> None:
        skin_joints = skin.get("joints", [])
        identity = gd.trs_matrix((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (1.0, 1.0, 1.0))
        self.mesh_bind, self.armature_world = identity, identity
        if not skin_joints:
            return
        members = set(skin_joints)
        slot = next((k for k, joint in enumerate(skin_joints) if parents[joint] not in members), 0)
        highest = ancestor = skin_joints[slot]
        while ancestor >= 0:
            highest = ancestor if ancestor in joints else highest
            ancestor = parents[ancestor]
        armature = parents[highest]
        wanted = [skin_joints[slot]] + ([armature] if armature >= 0 else [])
        worlds = gd.world_matrices(document.gltf, {}, wanted, parents)
        self.mesh_bind = _in_centimetres(gd.multiply4(worlds[0], _inverse_binds(document, skin)[slot]))
        if armature >= 0:
            self.armature_world = _in_centimetres(worlds[1])


def _inverse_binds(document: gd.Document, skin: Dict) -> List[List[float]]:
    """The skin's inverse bind matrices (metres), identity where the skin gives none."""
    if "inverseBindMatrices" in skin:
        return [list(m) for m in document.accessor(skin["inverseBindMatrices"])]
    return [gd.trs_matrix((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (1.0, 1.0, 1.0))] * len(skin.get("joints", []))


def _parents_first(parents: Sequence[int]) -> List[int]:
    order: List[int] = []
    children: Dict[int, List[int]] = {}
    for index, parent in enumerate(parents):
        children.setdefault(parent, []).append(index)
    stack = list(reversed(children.get(-1, [])))
    while stack:
        index = stack.pop()
        order.append(index)
        stack.extend(reversed(children.get(index, [])))
    return order


def _model(scene: _Scene, name: str, kind: str, translation_cm, rotation, scale) -> Long:
    if kind != "Mesh":
        attribute_id, attribute = scene.add("NodeAttribute", name, "NodeAttribute", kind)
        if kind == "LimbNode":
            _properties70(attribute, [_p("Size", "double", "Number", "", 100.0)])
            attribute.add("TypeFlags", "Skeleton")
        else:
            attribute.add("TypeFlags", "Null")
    model_id, model = scene.add("Model", name, "Model", kind)
    model.add("Version", 232)
    _properties70(model, [
        _p("RotationOrder", "enum", "", "", EULER_ORDER_XYZ),
        _p("InheritType", "enum", "", "", 1),
        _p("DefaultAttributeIndex", "int", "Integer", "", 0),
        _p("Lcl Translation", "Lcl Translation", "", "A", *[float(c) for c in translation_cm]),
        _p("Lcl Rotation", "Lcl Rotation", "", "A", *euler_xyz_degrees(rotation)),
        _p("Lcl Scaling", "Lcl Scaling", "", "A", *[float(c) for c in scale]),
    ])
    model.add("MultiLayer", 0)
    model.add("MultiTake", 0)
    model.add("Shading", True)
    model.add("Culling", "CullingOff")
    if kind != "Mesh":
        scene.connect(attribute_id, model_id)
    return model_id


class _Materials:
    """FBX Materials (and their embedded textures) made once per glTF material, connected to each model
    that uses them; -1 is a plain grey material for primitives without one."""

    def __init__(self, scene: _Scene, document: gd.Document) -> None:
        self.scene = scene
        self.document = document
        self.ids: Dict[int, Long] = {}
        self.textures: Dict[int, Long] = {}

    def id_of(self, index: int) -> Long:
        if index in self.ids:
            return self.ids[index]
        records = self.document.gltf.get("materials", [])
        record = records[index] if 0 <= index < len(records) else {}
        pbr = record.get("pbrMetallicRoughness", {})
        colour = list(pbr.get("baseColorFactor", list(BONE_COLOUR) + [1.0]))
        material_id, material = self.scene.add("Material", record.get("name") or "material{}".format(index),
                                               "Material", "")
        material.add("Version", 102)
        material.add("ShadingModel", "lambert")
        material.add("MultiLayer", 0)
        _properties70(material, [_p("DiffuseColor", "Color", "", "A", *[float(c) for c in colour[:3]]),
                                 _p("DiffuseFactor", "Number", "", "A", 1.0),
                                 _p("TransparencyFactor", "Number", "", "A", 1.0 - float(colour[3]))])
        texture = pbr.get("baseColorTexture")
        if isinstance(texture, dict) and "index" in texture:
            texture_id = self._texture(texture["index"])
            if texture_id is not None:
                self.scene.connect(texture_id, material_id, "DiffuseColor")
        self.ids[index] = material_id
        return material_id

    def _texture(self, index: int) -> Optional[Long]:
        """A Texture with its image embedded in a Video's Content; None where the image is not in the GLB."""
        if index in self.textures:
            return self.textures[index]
        gltf = self.document.gltf
        textures = gltf.get("textures", [])
        source = textures[index].get("source") if 0 <= index < len(textures) else None
        images = gltf.get("images", [])
        image = images[source] if isinstance(source, int) and 0 <= source < len(images) else {}
        views = gltf.get("bufferViews", [])
        view = views[image["bufferView"]] if isinstance(image.get("bufferView"), int) else None
        if view is None or view.get("buffer", 0) != 0:
            return None
        start, length = view.get("byteOffset", 0), view.get("byteLength", 0)
        content = bytes(self.document.binary[start:start + length])
        file_name = (image.get("name") or "texture{}".format(source)) + IMAGE_EXTENSIONS.get(image.get("mimeType"), ".png")
        video_id, video = self.scene.add("Video", file_name, "Video", "Clip")
        video.add("Type", "Clip")
        _properties70(video, [_p("Path", "KString", "XRefUrl", "", file_name)])
        video.add("UseMipMap", 0)
        video.add("Filename", file_name)
        video.add("RelativeFilename", file_name)
        video.add("Content", content)
        texture_id, texture = self.scene.add("Texture", file_name, "Texture", "")
        texture.add("Type", "TextureVideoClip")
        texture.add("Version", 202)
        texture.add("TextureName", _object_name(file_name, "Texture"))
        texture.add("Media", _object_name(file_name, "Video"))
        texture.add("FileName", file_name)
        texture.add("RelativeFilename", file_name)
        texture.add("ModelUVTranslation", 0.0, 0.0)
        texture.add("ModelUVScaling", 1.0, 1.0)
        texture.add("Texture_Alpha_Source", "None")
        texture.add("Cropping", 0, 0, 0, 0)
        self.scene.connect(video_id, texture_id)
        self.textures[index] = texture_id
        return texture_id


def _gltf_geometry(scene: _Scene, document: gd.Document, mesh_index: int, materials: _Materials, model_id: Long):
    """One Geometry of all the mesh's triangle primitives (vertices in cm, per-corner normals and UVs, a
    material slot per primitive's material, connected to the model in slot order)."""
    gltf = document.gltf
    mesh = gltf["meshes"][mesh_index]
    positions = array("d")
    normals: List[Tuple[float, ...]] = []
    uvs = array("d")
    corners = array("i")
    slots: List[int] = []
    polygon_slots = array("i")
    has_normals = all("NORMAL" in p.get("attributes", {}) for p in mesh["primitives"])
    has_uvs = all("TEXCOORD_0" in p.get("attributes", {}) for p in mesh["primitives"])
    for number, primitive in enumerate(mesh["primitives"]):
        if primitive.get("mode", 4) != 4:
            raise KimodoError("{}: mesh {!r} primitive {} is not triangles (mode {}); FBX output writes triangle "
                              "meshes only".format(document.source, mesh.get("name", mesh_index), number, primitive["mode"]))
        attributes = primitive["attributes"]
        base = len(positions) // 3
        coordinates = document.floats(attributes["POSITION"])  # x, y, z end to end
        positions.extend([c * CENTIMETRES_PER_METRE for c in coordinates])
        if has_normals:
            normals.extend(document.accessor(attributes["NORMAL"]))
        if has_uvs:
            uv = document.floats(attributes["TEXCOORD_0"])
            flipped = [1.0 - v for v in uv[1::2]]
            uv = list(uv)
            uv[1::2] = flipped
            uvs.extend(uv)
        if "indices" in primitive:
            indices = [base + int(i[0]) for i in document.accessor(primitive["indices"])]
        else:
            indices = list(range(base, base + gltf["accessors"][attributes["POSITION"]]["count"]))
        del indices[len(indices) - len(indices) % 3:]  # whole triangles only
        material = primitive.get("material", -1)
        if material not in slots:
            slots.append(material)
        polygon_slots.extend(array("i", [slots.index(material)]) * (len(indices) // 3))
        indices[2::3] = [-1 - c for c in indices[2::3]]  # a polygon's last corner is stored as ~index
        corners.extend(indices)
    geometry_id, geometry = scene.add("Geometry", mesh.get("name") or "mesh{}".format(mesh_index), "Geometry", "Mesh")
    geometry.add("GeometryVersion", 124)
    geometry.add("Vertices", positions)
    geometry.add("PolygonVertexIndex", corners)
    vertex_of = [c if c >= 0 else -1 - c for c in corners]
    elements = []
    if has_normals:
        elements.append(_layer_element(geometry, "LayerElementNormal", "", "ByPolygonVertex", "Direct",
                                       Normals=array("d", [c for v in vertex_of for c in normals[v]])))
    if has_uvs:
        elements.append(_layer_element(geometry, "LayerElementUV", "UVMap", "ByPolygonVertex", "IndexToDirect",
                                       UV=uvs, UVIndex=array("i", vertex_of)))
    elements.append(_layer_element(geometry, "LayerElementMaterial", "", "ByPolygon", "IndexToDirect",
                                   Materials=polygon_slots))
    _layer(geometry, elements)
    for material in slots:
        scene.connect(materials.id_of(material), model_id)
    return geometry_id, vertex_of


def _layer_element(geometry: Node, kind: str, name: str, mapping: str, reference: str, **data: array) -> str:
    """A geometry's layer element (normals, UVs, material slots): how its values map to the mesh and the
    values; returns its kind for `_layer`."""
    element = geometry.add(kind, 0)
    element.add("Version", 101)
    element.add("Name", name)
    element.add("MappingInformationType", mapping)
    element.add("ReferenceInformationType", reference)
    for key, values in data.items():
        element.add(key, values)
    return kind


def _layer(geometry: Node, kinds: Sequence[str]) -> None:
    """Layer 0, which lists the geometry's layer elements (readers look them up through it)."""
    layer = geometry.add("Layer", 0)
    layer.add("Version", 100)
    for kind in kinds:
        entry = layer.add("LayerElement")
        entry.add("Type", kind)
        entry.add("TypedIndex", 0)


def _gltf_skin(scene: _Scene, document: gd.Document, skin: Dict, mesh_index: int, geometry_id: Long,
               model_ids: Dict[int, Long], placement: _SkinPlacement) -> List[Tuple[Long, array]]:
    """A Skin on the geometry with a Cluster per skin joint (Transform: the inverse bind matrix;
    TransformLink: the joint's world at bind, the mesh at the placement's mesh bind;
    TransformAssociateModel: its armature's world); returns each joint's bind pose entry."""
    gltf = document.gltf
    joints = skin.get("joints", [])
    inverse_binds = _inverse_binds(document, skin)
    # Per joint slot, its vertices in order and their weights: a vertex's weights for one slot (over its
    # JOINTS_n sets, in set order) summed into one; influences past a primitive's vertex count are no vertex's.
    vertices_of = [array("i") for _ in joints]
    weights_of: List[List[float]] = [[] for _ in joints]
    base = 0
    for primitive in gltf["meshes"][mesh_index]["primitives"]:
        attributes = primitive["attributes"]
        count = gltf["accessors"][attributes["POSITION"]]["count"]
        sets = []
        for set_number in range(4):
            joint_key, weight_key = "JOINTS_{}".format(set_number), "WEIGHTS_{}".format(set_number)
            if joint_key not in attributes or weight_key not in attributes:
                break
            sets.append(zip(document.accessor(attributes[joint_key]), document.accessor(attributes[weight_key])))
        for vertex, influences in enumerate(islice(zip_longest(*sets, fillvalue=((), ())), count), base):
            for slots, weights in influences:
                for slot, weight in zip(slots, weights):
                    if weight > 0.0:
                        slot = int(slot)
                        if 0 <= slot < len(joints):
                            held = vertices_of[slot]
                            if held and held[-1] == vertex:
                                weights_of[slot][-1] += float(weight)
                            else:
                                held.append(vertex)
                                weights_of[slot].append(float(weight))
        base += count
    skin_id, deformer = scene.add("Deformer", skin.get("name") or "Skin", "Deformer", "Skin")
    deformer.add("Version", 101)
    deformer.add("Link_DeformAcuracy", 50.0)
    scene.connect(skin_id, geometry_id)
    entries = []
    for slot, joint in enumerate(joints):
        inverse_bind = _in_centimetres(inverse_binds[slot])
        bind = array("d", gd.multiply4(placement.mesh_bind, gd.invert4(inverse_bind)))
        name = gltf["nodes"][joint].get("name") or "node{}".format(joint)
        cluster_id, cluster = scene.add("Deformer", name, "SubDeformer", "Cluster")
        cluster.add("Version", 100)
        cluster.add("UserData", "", "")
        cluster.add("Indexes", vertices_of[slot])
        cluster.add("Weights", array("d", weights_of[slot]))
        cluster.add("Transform", array("d", inverse_bind))
        cluster.add("TransformLink", bind)
        cluster.add("TransformAssociateModel", array("d", placement.armature_world))
        scene.connect(cluster_id, skin_id)
        scene.connect(model_ids[joint], cluster_id)
        entries.append((model_ids[joint], bind))
    return entries


def _gltf_animation(scene: _Scene, document: gd.Document, model_ids: Dict[int, Long], take: str, fps: float) -> int:
    """The document's first animation as one take: each node's translation (cm), rotation (Euler XYZ,
    unwrapped) and scale channels as curve nodes T, R, S. Key times that are frames at `fps` (to float32
    precision) are written as exact frame times."""
    stack_id, stack = scene.add("AnimationStack", take, "AnimStack", "")
    layer_id, _ = scene.add("AnimationLayer", "BaseLayer", "AnimLayer", "")
    scene.connect(layer_id, stack_id)
    stop = 0
    if document.gltf.get("animations"):
        times, channels = gd.animation_arrays(document)
        ticks = array("q")
        for seconds in times:
            frame = round(seconds * fps)
            exact = abs(seconds * fps - frame) < 1e-3
            ticks.append(int(round(frame * TICKS_PER_SECOND / fps)) if exact else int(round(seconds * TICKS_PER_SECOND)))
        stop = ticks[-1] if ticks else 0
        keys = len(ticks)
        for node, paths in sorted(channels.items()):
            if node not in model_ids:
                continue
            for path, values in sorted(paths.items()):
                width = gd.PATH_WIDTHS.get(path)
                if width is None or len(values) != width * keys:
                    continue
                if path == "rotation":
                    if keys > 1 and _repeats_its_first_key(values, keys):  # a joint at rest: one key's angles
                        columns = [column * keys for column in euler_curves(values, 0, 4, 1)]
                    else:
                        columns = euler_curves(values, 0, 4, keys)
                    _curve_node(scene, layer_id, model_ids[node], "R", "Lcl Rotation", ticks, columns)
                elif path == "translation":
                    columns = [[c * CENTIMETRES_PER_METRE for c in values[axis::3]] for axis in range(3)]
                    _curve_node(scene, layer_id, model_ids[node], "T", "Lcl Translation", ticks, columns)
                else:
                    columns = [list(values[axis::3]) for axis in range(3)]
                    _curve_node(scene, layer_id, model_ids[node], "S", "Lcl Scaling", ticks, columns)
    _properties70(stack, [_p(name, "KTime", "Time", "", Long(value)) for name, value in (
        ("LocalStart", 0), ("LocalStop", stop), ("ReferenceStart", 0), ("ReferenceStop", stop))])
    return stop


def _repeats_its_first_key(values: Sequence[float], keys: int) -> bool:
    """Whether every key of a channel is its first, bit for bit (euler_curves then repeats its angles)."""
    stored = bytes(values)  # type: ignore[arg-type]  # a float view of the binary chunk or an array
    return stored == stored[:len(stored) // keys] * keys


def read_document(path) -> gd.Document:
    """The FBX character at `path` as a glTF document (formats/fbx_scene.py)."""
    from .fbx_scene import read_document as read_scene

    return read_scene(path)


def read_motion_document(path, fps: Optional[float] = None, *, surfaces: bool = True) -> gd.Document:
    """An FBX animation as a glTF document (formats/fbx_scene.py); `surfaces=False`: without the meshes'
    normals, UVs and materials."""
    from .fbx_scene import read_motion_document as read_motion_scene

    return read_motion_scene(path, fps, surfaces=surfaces)


def write(motion: Motion, path, options: WriteOptions = DEFAULT) -> None:
    """Encode and write atomically."""
    if motion.frame_count == 0:
        raise KimodoError("{}: the motion has no frames to write".format(path))
    write_bytes_atomic(path, encode(motion, names=options.names))


def read(path, *, fps: Optional[float] = None) -> Motion:
    """An FBX motion on a Kimodo skeleton (a file this tool wrote, or one with the same joint names) back
    into a Motion: its first take sampled at every frame (read_motion_document), then each joint's world
    rotation turned into Kimodo's frames (formats/fbx_motion.py), whoever wrote the file."""
    from pathlib import Path

    from .fbx_motion import motion_from_scene

    return motion_from_scene(read_motion_document(path, fps), str(path), Path(str(path)).stem, fps=fps)
