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
Layout: docs/fbx.md.
"""
from __future__ import annotations

import math
from array import array
TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    from typing import Dict, List, Optional, Sequence, Set, Tuple

from .. import skeletons
from ..errors import KimodoError
from ..files import write_bytes_atomic
from ..model import Motion, Skeleton
from ..ops.fk import rest_pose
from ..rotations import quat_normalize, quat_to_euler, quat_to_matrix
from . import fbx_binary as fb
from . import gltf_document as gd
from .fbx_binary import Long, Node
from .limits import frame_rate
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
    """FBX Lcl Rotation (X, Y, Z degrees, order eEulerXYZ: R = Rz Ry Rx) of a quaternion."""
    z, y, x = quat_to_euler("ZYX", quat_normalize(rotation))
    return (x, y, z)


def _unwrapped(angles: List[float]) -> List[float]:
    """The same angles (degrees) shifted by whole turns so that no step between keys exceeds 180."""
    previous = None
    out = []
    for angle in angles:
        if previous is not None:
            angle -= 360.0 * round((angle - previous) / 360.0)
        out.append(angle)
        previous = angle
    return out


class _Scene:
    """The Objects and Connections being built, with ids given in order."""

    def __init__(self) -> None:
        self.objects = Node("Objects")
        self.connections = Node("Connections")
        self.counts: Dict[str, int] = {}
        self.next_id = 1000000

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
        angles = [euler_xyz_degrees(rotations[4 * (frame * count + joint):4 * (frame * count + joint) + 4])
                  for frame in range(frames)]
        columns = [_unwrapped([a[axis] for a in angles]) for axis in range(3)]
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
    keys = len(times)
    for axis, column in zip("XYZ", columns):
        curve_id, curve = scene.add("AnimationCurve", "", "AnimCurve", "")
        curve.add("Default", float(column[0]) if column else 0.0)
        curve.add("KeyVer", 4009)
        curve.add("KeyTime", times)
        curve.add("KeyValueFloat", array("f", column))
        curve.add("KeyAttrFlags", array("i", [KEY_FLAGS]))
        curve.add("KeyAttrDataFloat", array("f", KEY_DATA))
        curve.add("KeyAttrRefCount", array("i", [keys]))
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
        name = node.get("name") or "node{}".format(index)
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
        points = document.accessor(attributes["POSITION"])
        positions.extend(c * CENTIMETRES_PER_METRE for point in points for c in point)
        if has_normals:
            normals.extend(document.accessor(attributes["NORMAL"]))
        if has_uvs:
            uvs.extend(c for u, v in document.accessor(attributes["TEXCOORD_0"]) for c in (u, 1.0 - v))
        if "indices" in primitive:
            indices = [int(i[0]) for i in document.accessor(primitive["indices"])]
        else:
            indices = list(range(len(points)))
        material = primitive.get("material", -1)
        if material not in slots:
            slots.append(material)
        slot = slots.index(material)
        for at in range(0, len(indices) - 2, 3):
            a, b, c = indices[at:at + 3]
            corners.extend((base + a, base + b, -1 - (base + c)))
            polygon_slots.append(slot)
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
    weights_of: List[Dict[int, float]] = [{} for _ in joints]
    base = 0
    for primitive in gltf["meshes"][mesh_index]["primitives"]:
        attributes = primitive["attributes"]
        count = gltf["accessors"][attributes["POSITION"]]["count"]
        for set_number in range(4):
            joint_key, weight_key = "JOINTS_{}".format(set_number), "WEIGHTS_{}".format(set_number)
            if joint_key not in attributes or weight_key not in attributes:
                break
            for vertex, (slots, weights) in enumerate(zip(document.accessor(attributes[joint_key]),
                                                          document.accessor(attributes[weight_key]))):
                for slot, weight in zip(slots, weights):
                    slot = int(slot)
                    if weight > 0.0 and 0 <= slot < len(joints):
                        held = weights_of[slot]
                        held[base + vertex] = held.get(base + vertex, 0.0) + float(weight)
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
        held = sorted(weights_of[slot].items())
        cluster.add("Indexes", array("i", [vertex for vertex, _ in held]))
        cluster.add("Weights", array("d", [weight for _, weight in held]))
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
                    angles = [euler_xyz_degrees(values[4 * k:4 * k + 4]) for k in range(keys)]
                    columns = [_unwrapped([a[axis] for a in angles]) for axis in range(3)]
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


# --- reading: an FBX scene as a glTF document (what the retarget's target reader takes) ----------------

# FBX RotationOrder enum -> the axes in the order they are applied (eEulerXYZ: X first, R = Rz Ry Rx).
EULER_ORDERS = {0: "XYZ", 1: "XZY", 2: "YZX", 3: "YXZ", 4: "ZXY", 5: "ZYX"}
INHERIT_RRS = 2  # FBX InheritType eInheritRrs: the parent's scaling is not inherited
MAX_CONNECTIONS_DEPTH = 256  # Model parents followed before a chain is called a cycle
MAX_FRAMES = 1000000  # frames an FBX take may be sampled to: 9 hours at 30 fps


def read_document(path) -> gd.Document:
    """The FBX character at `path` as a glTF document: every Model a node with its local transform (Lcl
    Translation, Rotation in its RotationOrder, Scaling, Pre/PostRotation, rotation and scaling offsets
    and pivots, baked to TRS), under one root node that turns the file's axes and unit into Y up, metres;
    each skinned Mesh a glTF mesh (vertices and normals in that frame, up to four weights a vertex) with a
    skin whose inverse bind matrices come from the clusters' Transform (bone space, as ufbx and Blender
    read it), so the bind pose is the clusters' and not the pose the nodes were saved in."""
    data = _read_bytes(path)
    source = str(path)
    return _scene_document(fb.decode(data, source), source, False, None)


def read_motion_document(path, fps: Optional[float] = None) -> gd.Document:
    """An FBX animation as a glTF document: the nodes as read_document makes them, a skin of the
    skinned mesh's bones (or, without one, of every LimbNode), and the first take sampled at every
    frame (the take's own rate unless `fps`) as one glTF animation of each animated node's
    translation, rotation and scale."""
    data = _read_bytes(path)
    source = str(path)
    return _scene_document(fb.decode(data, source), source, True, fps)


def _scene_document(nodes: Sequence[Node], source: str, animation: bool, fps: Optional[float]) -> gd.Document:
    """_FbxScene(...).to_document(...), with what a malformed value deep in the scene raises (a string
    where a number belongs, a singular bind matrix, a scale of zero) said in one line naming the file."""
    try:
        return _FbxScene(nodes, source).to_document(animation=animation, fps=fps)
    except (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError, OverflowError) as error:
        raise KimodoError("{}: malformed FBX scene ({}: {})".format(source, type(error).__name__, error)) from error


def _euler_matrix(order: str, degrees: Sequence[float]) -> List[float]:
    """A column-major 4x4 rotation of Euler angles (X, Y, Z degrees) applied in `order` (first axis first)."""
    angles = dict(zip("XYZ", degrees))
    q = (0.0, 0.0, 0.0, 1.0)
    from ..rotations import quat_from_axis_angle, quat_multiply

    for axis in order:  # later axes multiply on the left: R = R(last) ... R(first)
        q = quat_multiply(quat_from_axis_angle({"X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}[axis],
                                               math.radians(angles[axis])), q)
    return list(gd.trs_matrix((0.0, 0.0, 0.0), q, (1.0, 1.0, 1.0)))


def _translation(v: Sequence[float]) -> List[float]:
    return list(gd.trs_matrix(v, (0.0, 0.0, 0.0, 1.0), (1.0, 1.0, 1.0)))


def fbx_local_matrix(props: Dict[str, Tuple]) -> List[float]:
    """FBX's local transform: T * Roff * Rp * Rpre * R * Rpost^-1 * Rp^-1 * Soff * Sp * S * Sp^-1, with
    R in the node's RotationOrder and Pre/PostRotation in XYZ order."""
    zero = (0.0, 0.0, 0.0)
    order = EULER_ORDERS.get(int(props.get("RotationOrder", (0,))[0]), "XYZ")
    rotation_pivot = props.get("RotationPivot", zero)
    scaling_pivot = props.get("ScalingPivot", zero)
    parts = [
        _translation(props.get("Lcl Translation", zero)),
        _translation(props.get("RotationOffset", zero)),
        _translation(rotation_pivot),
        _euler_matrix("XYZ", props.get("PreRotation", zero)),
        _euler_matrix(order, props.get("Lcl Rotation", zero)),
        gd.invert4(_euler_matrix("XYZ", props.get("PostRotation", zero))),
        _translation([-c for c in rotation_pivot]),
        _translation(props.get("ScalingOffset", zero)),
        _translation(scaling_pivot),
        list(gd.trs_matrix(zero, (0.0, 0.0, 0.0, 1.0), props.get("Lcl Scaling", (1.0, 1.0, 1.0)))),
        _translation([-c for c in scaling_pivot]),
    ]
    matrix = parts[0]
    for part in parts[1:]:
        matrix = gd.multiply4(matrix, part)
    return matrix


TRANSFORM_VECTORS = ("Lcl Translation", "Lcl Rotation", "Lcl Scaling", "PreRotation", "PostRotation", "RotationOffset",
                     "RotationPivot", "ScalingOffset", "ScalingPivot", "GeometricTranslation", "GeometricRotation",
                     "GeometricScaling")
TRANSFORM_ENUMS = ("RotationOrder", "InheritType")
# The largest transform value read (file units, degrees, scale factors): far beyond any character, and a
# chain of such transforms stays finite (1e300 overflowed to inf in the matrix products).
MAX_TRANSFORM_VALUE = 1e9


class _FbxScene:
    """The objects, connections, templates and settings of a decoded FBX file."""

    def __init__(self, nodes: Sequence[Node], source: str) -> None:
        self.source = source
        top = {node.name: node for node in nodes}
        self.objects: Dict[int, Node] = {}
        for node in (top.get("Objects") or Node("Objects")).children:
            if node.properties and isinstance(node.properties[0], int):
                self.objects[node.properties[0]] = node
        self.parent_of: Dict[int, int] = {}
        self.children: Dict[int, List[Tuple[int, str]]] = {}
        for connection in (top.get("Connections") or Node("Connections")).children:
            values = connection.properties
            if connection.name != "C" or len(values) < 3 or not all(isinstance(v, int) for v in values[1:3]):
                continue
            child, parent = values[1], values[2]
            prop = values[3] if len(values) > 3 and isinstance(values[3], str) else ""
            self.children.setdefault(parent, []).append((child, prop))
            if values[0] == "OO" and self.kind(child) == "Model" and (parent == 0 or self.kind(parent) == "Model"):
                self.parent_of[child] = parent
        self.templates: Dict[str, Dict[str, Tuple]] = {}
        for object_type in (top.get("Definitions") or Node("Definitions")).find_all("ObjectType"):
            for template in object_type.find_all("PropertyTemplate"):
                kind = object_type.properties[0] if object_type.properties else ""
                self.templates[kind] = _properties_of(template)
        self.settings = _properties_of(top.get("GlobalSettings") or Node("GlobalSettings"))
        # Bind places a BindPose states (Model -> world matrix in the file's frame): the bind of a bone no
        # cluster binds (a bone without weights), where the nodes were saved in another pose.
        self.bind_pose: Dict[int, List[float]] = {}
        for pose in self.objects.values():
            if pose.name != "Pose" or len(pose.properties) < 3 or pose.properties[2] != "BindPose":
                continue
            for entry in pose.find_all("PoseNode"):
                node, matrix = entry.find("Node"), entry.find("Matrix")
                if node is None or matrix is None or not node.properties or not matrix.properties:
                    continue
                model, values = node.properties[0], matrix.properties[0]
                if (isinstance(model, int) and self.kind(model) == "Model" and isinstance(values, array)
                        and len(values) == 16 and gd.is_finite(values)):
                    self.bind_pose.setdefault(model, [float(v) for v in values])

    def fail(self, what: str) -> KimodoError:
        return KimodoError("{}: {}".format(self.source, what))

    def kind(self, identifier: int) -> str:
        node = self.objects.get(identifier)
        return node.name if node is not None else ""

    def subtype(self, identifier: int) -> str:
        node = self.objects[identifier]
        return node.properties[2] if len(node.properties) > 2 and isinstance(node.properties[2], str) else ""

    def name(self, identifier: int) -> str:
        node = self.objects[identifier]
        text = node.properties[1] if len(node.properties) > 1 and isinstance(node.properties[1], str) else ""
        return text.split("\x00\x01")[0] or "{}{}".format(node.name, identifier)

    def properties(self, identifier: int) -> Dict[str, Tuple]:
        """An object's Properties70 over its template's; the transform ones checked (three finite numbers,
        or an integer enum) so that what reads them meets no other kind of value."""
        node = self.objects[identifier]
        values = dict(self.templates.get(node.name, {}))
        values.update(_properties_of(node))
        for name in TRANSFORM_VECTORS:
            if name in values:
                vector = values[name][:3]
                if len(vector) != 3 or not all(isinstance(v, (int, float)) and abs(v) <= MAX_TRANSFORM_VALUE
                                               for v in vector):
                    raise self.fail("{} {!r}: {} is not three numbers within {:g}".format(
                        node.name, self.name(identifier), name, MAX_TRANSFORM_VALUE))
                values[name] = tuple(float(v) for v in vector)
        for name in TRANSFORM_ENUMS:
            if name in values and not (values[name][:1] and isinstance(values[name][0], int)):
                raise self.fail("{} {!r}: {} is not a whole number".format(node.name, self.name(identifier), name))
        return values

    def linked(self, identifier: int, kind: str, subtype: str = "") -> List[int]:
        return [child for child, _ in self.children.get(identifier, [])
                if self.kind(child) == kind and (not subtype or self.subtype(child) == subtype)]

    def axes_matrix(self) -> List[float]:
        """The file's axes and unit -> Y up, Z front, metres, as a column-major 4x4."""
        def setting(name: str, default: float) -> float:
            value = (self.settings.get(name) or (default,))[0]
            return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else math.nan

        axes = [(setting("CoordAxis", 0), setting("CoordAxisSign", 1)),
                (setting("UpAxis", 1), setting("UpAxisSign", 1)),
                (setting("FrontAxis", 2), setting("FrontAxisSign", 1))]
        if sorted(axis for axis, _ in axes) != [0, 1, 2] or any(sign not in (1, -1) for _, sign in axes):
            raise self.fail("GlobalSettings name no valid axes (CoordAxis, UpAxis, FrontAxis)")
        axes = [(int(axis), sign) for axis, sign in axes]
        # A left-handed frame is a mirror of Kimodo's: no rotation turns it, and read as right-handed every
        # bone would sit mirrored, so it is refused (ufbx mirrors it; FBX writers write right-handed).
        turn = [[0.0] * 3 for _ in range(3)]
        for new_axis, (old_axis, sign) in enumerate(axes):
            turn[new_axis][old_axis] = sign
        if _det3(turn) < 0:
            raise self.fail("GlobalSettings state a left-handed frame (CoordAxis, UpAxis, FrontAxis); "
                            "only right-handed FBX is read")
        unit = setting("UnitScaleFactor", 1.0)
        if not (math.isfinite(unit) and 1e-6 <= unit <= 1e6):
            raise self.fail("UnitScaleFactor {!r} is not a length unit".format(unit))
        metres = unit / CENTIMETRES_PER_METRE
        matrix = [0.0] * 16
        for new_axis, (old_axis, sign) in enumerate(axes):
            matrix[old_axis * 4 + new_axis] = sign * metres  # column old_axis, row new_axis
        matrix[15] = 1.0
        return matrix

    def in_scene(self, matrix: Sequence[float]) -> List[float]:
        """A file-frame transform in the glTF frame: the axes turned and lengths in metres, scale kept
        (axes * matrix * unit^-1: only the translation takes the unit)."""
        out = gd.multiply4(self.axes_matrix(), matrix)
        metres = self.metres_per_unit()
        for at in (0, 1, 2, 4, 5, 6, 8, 9, 10):
            out[at] /= metres
        return out

    def scene_local(self, model: int, props: Dict[str, Tuple]) -> List[float]:
        """A Model's local transform in the glTF frame: a top-level Model's also turns the axes; every
        translation becomes metres (scales and rotations below the top are the file's own)."""
        local = fbx_local_matrix(props)
        parent = self.parent_of.get(model, 0)
        if parent == 0:
            return self.in_scene(local)
        if int(props.get("InheritType", (0,))[0]) == INHERIT_RRS:
            # Maya's segment scale compensation: the parent's own scaling moves this node (its translation)
            # but does not scale or turn it: T * S_parent^-1 * (the rest of the local transform).
            scaling = self.properties(parent).get("Lcl Scaling", (1.0, 1.0, 1.0))
            if any(not value for value in scaling[:3]):
                raise self.fail("Model {!r} has a zero scale".format(self.name(parent)))
            offset = props.get("Lcl Translation", (0.0, 0.0, 0.0))
            rest = gd.multiply4(_translation([-c for c in offset]), local)
            unscale = list(gd.trs_matrix((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), [1.0 / v for v in scaling[:3]]))
            local = gd.multiply4(_translation(offset), gd.multiply4(unscale, rest))
        metres = self.metres_per_unit()
        return local[:12] + [local[12] * metres, local[13] * metres, local[14] * metres, local[15]]

    def metres_per_unit(self) -> float:
        return math.sqrt(sum(c * c for c in self.axes_matrix()[0:3]))

    def to_document(self, animation: bool = False, fps: Optional[float] = None) -> gd.Document:
        models = [i for i, node in self.objects.items() if node.name == "Model"]
        for model in models:  # a cycle in the Model hierarchy is refused before anything walks it
            at, steps = model, 0
            while at in self.parent_of and self.parent_of[at] != 0:
                at, steps = self.parent_of[at], steps + 1
                if steps > MAX_CONNECTIONS_DEPTH:
                    raise self.fail("the Model connections form a cycle (or nest over {} deep)".format(MAX_CONNECTIONS_DEPTH))
        builder = gd.DocumentBuilder()
        gltf = builder.gltf
        nodes: List[Dict] = []
        index_of: Dict[int, int] = {}
        roots = []
        for model in sorted(models, key=self._depth):
            local = self.scene_local(model, self.properties(model))
            if not gd.is_finite(local):
                raise self.fail("Model {!r} has a transform that is not finite".format(self.name(model)))
            translation, rotation, scale = gd.decompose4(local)
            index_of[model] = len(nodes)
            nodes.append({"name": self.name(model), "translation": list(translation), "rotation": list(rotation),
                          "scale": list(scale)})
            parent = self.parent_of.get(model, 0)
            if parent in index_of:
                nodes[index_of[parent]].setdefault("children", []).append(index_of[model])
            else:
                roots.append(index_of[model])
        gltf["nodes"] = nodes
        gltf["meshes"], gltf["skins"] = [], []
        for model in models:
            for geometry in self.linked(model, "Geometry", "Mesh"):
                mesh_node = self._mesh(builder, model, geometry, index_of)
                if mesh_node is not None:
                    roots.append(mesh_node)
        if not gltf["skins"] and animation:  # a motion without a mesh (a Mixamo "without skin" download)
            limbs = sorted((m for m in index_of if self.subtype(m) == "LimbNode"), key=self._depth)
            if limbs:
                gltf["skins"].append({"joints": [index_of[m] for m in limbs]})
        if not gltf["skins"]:
            raise self.fail("no skinned mesh (Deformer Skin with Clusters) in this FBX")
        if not gltf["meshes"]:
            del gltf["meshes"]
        if animation:
            self._animation(builder, index_of, fps)
        gltf["scenes"] = [{"nodes": roots}]
        gltf["scene"] = 0
        return gd.parse_glb(builder.to_glb(), self.source)

    def frame_rate(self) -> float:
        mode = self.settings.get("TimeMode", (0,))[0]
        named = {number: rate for rate, number in TIME_MODES.items()}
        custom = self.settings.get("CustomFrameRate", (0.0,))[0]
        rate = named.get(mode) or (float(custom) if isinstance(custom, (int, float)) else 0.0) or 30.0
        return frame_rate(rate, self.source, "the file's frame rate")

    def _animation(self, builder: gd.DocumentBuilder, index_of: Dict[int, int], fps: Optional[float]) -> None:
        """The first take, each animated Model sampled at every frame: its properties with the curves'
        values at that time (linear between keys, held before the first and after the last), its local
        transform in the glTF frame, as translation, rotation and scale keys."""
        stacks = [i for i, node in self.objects.items() if node.name == "AnimationStack"]
        if not stacks:
            raise self.fail("no animation (AnimationStack) in this FBX")
        stack = stacks[0]  # the first in the file, as ufbx and Blender take it (ids are in no order)
        rate = frame_rate(fps, self.source) if fps else self.frame_rate()
        curves_of: Dict[int, Dict[str, List]] = {}  # model -> property -> three (times, values) or defaults
        for layer in self.linked(stack, "AnimationLayer")[:1]:
            for curve_node in self.linked(layer, "AnimationCurveNode"):
                defaults = _properties_of(self.objects[curve_node])
                channels = []
                for axis in "XYZ":
                    curve = next((c for c, prop in self.children.get(curve_node, [])
                                  if prop == "d|" + axis and self.kind(c) == "AnimationCurve"), None)
                    default = defaults.get("d|" + axis, (0.0,))[0]
                    channels.append(self._curve(curve) if curve is not None else float(default))
                for target, prop in self._targets(curve_node):
                    if prop in ("Lcl Translation", "Lcl Rotation", "Lcl Scaling") and target in index_of:
                        curves_of.setdefault(target, {})[prop] = channels
        times = [t for channels in curves_of.values() for values in channels.values()
                 for channel in values if isinstance(channel, tuple) for t in channel[0][:1] + channel[0][-1:]]
        if not times:
            raise self.fail("the animation has no keyframes")
        start, stop = min(times), max(times)
        frames = int(round((stop - start) * rate / TICKS_PER_SECOND)) + 1
        if frames > MAX_FRAMES:
            raise self.fail("the animation runs {} frames, more than {}".format(frames, MAX_FRAMES))
        seconds = [frame / rate for frame in range(frames)]
        samplers, animation_channels = [], []
        time_accessor = builder.add_floats(array("f", seconds), "SCALAR", with_bounds=True)
        for model, props in sorted(curves_of.items()):
            base = self.properties(model)
            translations, rotations, scales = array("f"), array("f"), array("f")
            for frame in range(frames):
                at = start + frame * TICKS_PER_SECOND / rate
                values = dict(base)
                for prop, channels in props.items():
                    values[prop] = tuple(_sample(c, at) if isinstance(c, tuple) else c for c in channels)
                translation, rotation, scale = gd.decompose4(self.scene_local(model, values))
                translations.extend(translation)
                rotations.extend(rotation)
                scales.extend(scale)
            for path, keys, kind in (("translation", translations, "VEC3"), ("rotation", rotations, "VEC4"),
                                     ("scale", scales, "VEC3")):
                if not gd.is_finite(keys):
                    raise self.fail("the animation of {!r} holds values that are not finite".format(self.name(model)))
                samplers.append({"input": time_accessor, "output": builder.add_floats(keys, kind), "interpolation": "LINEAR"})
                animation_channels.append({"sampler": len(samplers) - 1, "target": {"node": index_of[model], "path": path}})
        builder.gltf["animations"] = [{"name": self.name(stack), "samplers": samplers, "channels": animation_channels}]

    def _targets(self, curve_node: int) -> List[Tuple[int, str]]:
        """(object, property) a curve node animates (connected OP from the node to the object)."""
        return [(parent, prop) for parent, connected in self.children.items() for child, prop in connected
                if child == curve_node and prop]

    def _curve(self, curve: int) -> Tuple[array, array]:
        node = self.objects[curve]
        times = _array_child(node, "KeyTime", "q", self.source, required=False)
        values = _array_child(node, "KeyValueFloat", "f", self.source, required=False)
        if len(times) != len(values) or not len(times):
            raise self.fail("curve {}: {} key times but {} values".format(curve, len(times), len(values)))
        if any(later < earlier for earlier, later in zip(times, times[1:])):
            raise self.fail("curve {}: its key times do not increase".format(curve))
        return times, values

    def _depth(self, model: int) -> int:
        depth, at = 0, model
        while at in self.parent_of and self.parent_of[at] != 0:
            at, depth = self.parent_of[at], depth + 1
        return depth

    def _mesh(self, builder: gd.DocumentBuilder, model: int, geometry: int, index_of: Dict[int, int]) -> Optional[int]:
        """A skinned mesh as a glTF mesh node (at the scene root: glTF ignores its transform) with its skin;
        None for a mesh without a skin (a prop: the retarget needs only the skinned body)."""
        skins = self.linked(geometry, "Deformer", "Skin")
        clusters = [c for skin in skins for c in self.linked(skin, "Deformer", "Cluster")]
        clusters = [c for c in clusters if any(self.kind(b) == "Model" for b, _ in self._sources(c))]
        if not clusters:
            return None
        node = self.objects[geometry]
        vertices = _array_child(node, "Vertices", "d", self.source)
        corners = _array_child(node, "PolygonVertexIndex", "i", self.source)
        count = len(vertices) // 3
        if len(vertices) % 3 or any(not -count <= c < count for c in corners):
            raise self.fail("mesh {!r}: polygon corners point past its {} vertices".format(self.name(model), count))
        axes = self.axes_matrix()
        props = self.properties(model)
        geometric = gd.multiply4(gd.multiply4(
            _translation(props.get("GeometricTranslation", (0.0, 0.0, 0.0))),
            _euler_matrix("XYZ", props.get("GeometricRotation", (0.0, 0.0, 0.0)))),
            list(gd.trs_matrix((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), props.get("GeometricScaling", (1.0, 1.0, 1.0)))))
        triangles: List[int] = []
        polygon: List[int] = []
        for corner in corners:
            polygon.append(corner if corner >= 0 else -1 - corner)
            if corner < 0:
                for k in range(1, len(polygon) - 1):
                    triangles.extend((polygon[0], polygon[k], polygon[k + 1]))
                polygon = []
        # Weights: up to four a vertex, the largest, normalised. A cluster's TransformLink is its bone's
        # world at bind and Transform the mesh in the bone's space (as ufbx and Blender read them), so the
        # mesh's world at bind is TransformLink * Transform: vertices go to the glTF world through it (the
        # bind pose, whatever pose the nodes were saved in), and each bone's inverse bind matrix is
        # (axes * TransformLink)^-1.
        weights: List[List[Tuple[float, int]]] = [[] for _ in range(count)]
        bind_inverse: Dict[int, List[float]] = {}
        slot_of: Dict[int, int] = {}
        mesh_bind: Optional[List[float]] = None
        for cluster in clusters:
            bone = next(b for b, _ in self._sources(cluster) if self.kind(b) == "Model")
            cluster_node = self.objects[cluster]
            indexes = _array_child(cluster_node, "Indexes", "i", self.source, required=False)
            values = _array_child(cluster_node, "Weights", "d", self.source, required=False)
            if len(indexes) != len(values) or any(not 0 <= i < count for i in indexes):
                raise self.fail("cluster {!r}: its indexes and weights do not match the mesh".format(self.name(cluster)))
            transform = list(_array_child(cluster_node, "Transform", "d", self.source, required=False))
            link = list(_array_child(cluster_node, "TransformLink", "d", self.source, required=False))
            if len(transform) != 16 or len(link) != 16 or not (gd.is_finite(transform) and gd.is_finite(link)):
                raise self.fail("cluster {!r} has no finite bind matrices (Transform, TransformLink)".format(
                    self.name(cluster)))
            try:
                bind_inverse[bone] = gd.invert4(self.in_scene(link))
            except ValueError:
                raise self.fail("cluster {!r}: its TransformLink is singular".format(self.name(cluster))) from None
            if mesh_bind is None:
                mesh_bind = gd.multiply4(link, transform)
            slot = slot_of.setdefault(bone, len(slot_of))
            for vertex, weight in zip(indexes, values):
                if weight > 0.0:
                    weights[vertex].append((weight, slot))
        to_world = gd.multiply4(gd.multiply4(axes, mesh_bind), geometric)
        positions = [c for v in range(count) for c in gd.apply4(to_world, vertices[3 * v:3 * v + 3])]
        # Bones without a cluster (IK targets, end bones) are joints too: bound where the BindPose puts
        # them, else where their parent's bind and their own local transform do.
        bind_world: Dict[int, List[float]] = {}

        def bound(model: int) -> List[float]:
            if model not in bind_world:
                if model in bind_inverse:
                    bind_world[model] = gd.invert4(bind_inverse[model])
                elif model in self.bind_pose:
                    bind_world[model] = self.in_scene(self.bind_pose[model])
                else:
                    parent = self.parent_of.get(model, 0)
                    local = self.scene_local(model, self.properties(model))
                    bind_world[model] = gd.multiply4(bound(parent), local) if parent != 0 else local
            return bind_world[model]

        limbs = [m for m in index_of if self.subtype(m) == "LimbNode" and m not in slot_of]
        for limb in sorted(limbs, key=self._depth):  # not `model`: the mesh node below is named after it
            slot_of[limb] = len(slot_of)
            bind_inverse[limb] = gd.invert4(bound(limb))
        joints = [index_of[bone] for bone in slot_of]
        inverse_binds = [bind_inverse[bone] for bone in slot_of]
        joint_slots, joint_weights = [], []
        for held in weights:
            best = sorted(held, reverse=True)[:4]
            total = sum(w for w, _ in best) or 1.0
            best += [(0.0, 0)] * (4 - len(best))
            joint_slots.extend(slot for _, slot in best)
            joint_weights.extend(w / total if total else 0.0 for w, _ in best)
        gltf = builder.gltf
        attributes = {
            "POSITION": builder.add_components(positions, "VEC3", target=gd.ARRAY_BUFFER, with_bounds=True),
            "JOINTS_0": builder.add_components(joint_slots, "VEC4", gd.UNSIGNED_SHORT, target=gd.ARRAY_BUFFER),
            "WEIGHTS_0": builder.add_components(joint_weights, "VEC4", target=gd.ARRAY_BUFFER),
        }
        primitive = {"attributes": attributes}
        if triangles:
            primitive["indices"] = builder.add_components(triangles, "SCALAR", gd.UNSIGNED_INT, target=gd.ELEMENT_ARRAY_BUFFER)
        gltf["meshes"].append({"name": self.name(geometry), "primitives": [primitive]})
        gltf["skins"].append({"joints": joints, "inverseBindMatrices": builder.add_accessor(inverse_binds, "MAT4")})
        gltf["nodes"].append({"name": self.name(model), "mesh": len(gltf["meshes"]) - 1, "skin": len(gltf["skins"]) - 1})
        return len(gltf["nodes"]) - 1

    def _sources(self, identifier: int) -> List[Tuple[int, str]]:
        """Objects connected INTO `identifier` (a cluster's bone is connected to the cluster)."""
        return self.children.get(identifier, [])


def _det3(m: Sequence[Sequence[float]]) -> float:
    return (m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]))


def _sample(curve: Tuple[array, array], at: float) -> float:
    """A curve's value at time `at` (ticks): linear between keys, held outside them."""
    from bisect import bisect_right

    times, values = curve
    after = bisect_right(times, at)
    if after == 0:
        return float(values[0])
    if after == len(times):
        return float(values[-1])
    t0, t1 = times[after - 1], times[after]
    share = (at - t0) / (t1 - t0) if t1 > t0 else 0.0
    return float(values[after - 1]) + share * (float(values[after]) - float(values[after - 1]))


def _properties_of(node: Node) -> Dict[str, Tuple]:
    """A node's Properties70 as name -> its values (after the name, type, label and flags)."""
    block = node.find("Properties70")
    values: Dict[str, Tuple] = {}
    if block is not None:
        for row in block.find_all("P"):
            if len(row.properties) >= 4 and isinstance(row.properties[0], str):
                values[row.properties[0]] = tuple(row.properties[4:])
    return values


def _array_child(node: Node, name: str, typecode: str, source: str, required: bool = True) -> array:
    child = node.find(name)
    if child is None or not child.properties or not isinstance(child.properties[0], array):
        if required:
            raise KimodoError("{}: a {} has no {} array".format(source, node.name, name))
        return array(typecode)
    values = child.properties[0]
    return values if values.typecode in ("d", "f", "i", "q") else array(typecode, values)


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


def _read_bytes(path) -> bytes:
    from ..files import read_input

    return read_input(path, str(path))
