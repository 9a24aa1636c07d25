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
    from typing import Dict, List, Optional, Sequence, Tuple

from .. import skeletons
from ..errors import KimodoError
from ..files import write_bytes_atomic
from ..model import Motion, Skeleton
from ..ops.fk import rest_pose
from ..rotations import quat_normalize, quat_to_euler, quat_to_matrix
from . import fbx_binary as fb
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
        name = joint_names[joint]
        attribute_id, attribute = scene.add("NodeAttribute", name, "NodeAttribute", "LimbNode")
        _properties70(attribute, [_p("Size", "double", "Number", "", 100.0)])
        attribute.add("TypeFlags", "Skeleton")
        model_id, model = scene.add("Model", name, "Model", "LimbNode")
        model.add("Version", 232)
        offset = [c * CENTIMETRES_PER_METRE for c in skeleton.rest_offsets[joint]]
        _properties70(model, [
            _p("RotationOrder", "enum", "", "", EULER_ORDER_XYZ),
            _p("InheritType", "enum", "", "", 1),  # eInheritRSrs: the usual parent-child inheritance
            _p("DefaultAttributeIndex", "int", "Integer", "", 0),
            _p("Lcl Translation", "Lcl Translation", "", "A", *offset),
            _p("Lcl Rotation", "Lcl Rotation", "", "A", *euler_xyz_degrees(skeleton.rest_rotations[joint])),
            _p("Lcl Scaling", "Lcl Scaling", "", "A", 1.0, 1.0, 1.0),
        ])
        model.add("MultiLayer", 0)
        model.add("MultiTake", 0)
        model.add("Shading", True)
        model.add("Culling", "CullingOff")
        scene.connect(attribute_id, model_id)
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
    layer_normals = geometry.add("LayerElementNormal", 0)
    layer_normals.add("Version", 101)
    layer_normals.add("Name", "")
    layer_normals.add("MappingInformationType", "ByPolygonVertex")
    layer_normals.add("ReferenceInformationType", "Direct")
    layer_normals.add("Normals", array("d", normals))  # polygon corners are the vertices in order
    layer_material = geometry.add("LayerElementMaterial", 0)
    layer_material.add("Version", 101)
    layer_material.add("Name", "")
    layer_material.add("MappingInformationType", "AllSame")
    layer_material.add("ReferenceInformationType", "IndexToDirect")
    layer_material.add("Materials", array("i", [0]))
    layer = geometry.add("Layer", 0)
    layer.add("Version", 100)
    for element in ("LayerElementNormal", "LayerElementMaterial"):
        entry = layer.add("LayerElement")
        entry.add("Type", element)
        entry.add("TypedIndex", 0)

    mesh_id, mesh = scene.add("Model", clip + "_mesh", "Model", "Mesh")
    mesh.add("Version", 232)
    _properties70(mesh, [
        _p("RotationOrder", "enum", "", "", EULER_ORDER_XYZ),
        _p("DefaultAttributeIndex", "int", "Integer", "", 0),
        _p("Lcl Translation", "Lcl Translation", "", "A", 0.0, 0.0, 0.0),
        _p("Lcl Rotation", "Lcl Rotation", "", "A", 0.0, 0.0, 0.0),
        _p("Lcl Scaling", "Lcl Scaling", "", "A", 1.0, 1.0, 1.0),
    ])
    mesh.add("MultiLayer", 0)
    mesh.add("MultiTake", 0)
    mesh.add("Shading", True)
    mesh.add("Culling", "CullingOff")
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


def write(motion: Motion, path, options: WriteOptions = DEFAULT) -> None:
    """Encode and write atomically."""
    if motion.frame_count == 0:
        raise KimodoError("{}: the motion has no frames to write".format(path))
    write_bytes_atomic(path, encode(motion, names=options.names))


def read(path, *, fps: Optional[float] = None) -> Motion:
    """FBX motions are not read yet: one line, not a traceback."""
    data = _read_bytes(path)
    fb.decode(data, str(path))  # the file's own problems first (ASCII, truncation)
    raise KimodoError("{}: reading motion from FBX is not supported yet; convert it to .glb or .bvh first".format(path))


def _read_bytes(path) -> bytes:
    from ..files import read_input

    return read_input(path, str(path))
