"""FBX characters read as retarget targets, judged by code that shares nothing with our reader: ufbx's own
evaluation of the FBX transform chain and of the clusters' bind matrices (tests/ufbx_bind_judge.py), the
.glb copy of the same character (Blender's conversion), and the output judges of the .glb path
(limb directions as test_retarget_rigs judges them, soles as feet_judge skins them).

Files: the real Quaternius FBX (Blender 2.79's exporter, saved in another pose than its bind), a
Mixamo-named FBX made by Blender's FBX exporter from the MPFB2 rig, small FBX files built here with the
node codec that exercise what those two do not (rotation orders, pre/post rotation, pivots and offsets,
scaling, Z-up and inch units), and broken files, each refused in one line with nothing written.
"""
from __future__ import annotations

import json
import math
import struct
import subprocess
import sys
import zlib
from array import array
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import pytest

from conftest import CLIPS, RIGS, run_blender, run_cli

from kimodo_rig.formats import fbx_binary
from kimodo_rig.formats.fbx_binary import Long, Node

BIND_TOLERANCE_M = 1e-4  # the brief's bar: each bone's world bind place against ufbx's
QUATERNIUS_FBX = RIGS / "quaternius" / "quaternius_female_dress.fbx"
QUATERNIUS_GLB = RIGS / "quaternius" / "quaternius_female_dress.glb"
MIXAMO_GLB = RIGS / "mpfb2" / "mpfb2_mixamo.glb"
SOMA_CLIP = "soma_01_single_text_prompt"


def ufbx_binds(path: Path) -> dict:
    """ufbx's bind places of the clusters' bones and the saved world places of every node, Y up, metres."""
    result = subprocess.run([sys.executable, str(Path(__file__).parent / "ufbx_bind_judge.py"), str(path)],
                            capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        pytest.fail("ufbx could not read {} (exit {}):\n{}".format(path.name, result.returncode, result.stderr[-3000:]))
    return json.loads(result.stdout)


def read_binds(path: Path) -> Dict[str, np.ndarray]:
    """Our reader's bind place of every joint of the target it makes, by name."""
    from kimodo_rig.ops.fk import rest_positions
    from kimodo_rig.retarget.character import load_target

    target = load_target(str(path))
    return {name: np.array(p) for name, p in zip(target.skeleton.joint_names, rest_positions(target.skeleton))}


# --- small FBX characters built with the codec ---------------------------------------------------------

def _p(name: str, kind: str, *values) -> Node:
    flags = "A" if name.startswith("Lcl") else ""
    return Node("P", (name, kind, "", flags) + tuple(values))


def _vector(name: str, values: Sequence[float]) -> Node:
    kind = name if name.startswith("Lcl") else "Vector3D"
    return _p(name, kind, *[float(v) for v in values])


# Settings of the files built here: (CoordAxis, sign), (UpAxis, sign), (FrontAxis, sign), UnitScaleFactor.
SETTINGS = {
    "y_up_cm": ((0, 1), (1, 1), (2, 1), 1.0),  # Maya's and Unity's frame, centimetres
    "z_up_inch": ((0, 1), (2, 1), (1, -1), 2.54),  # 3ds Max's frame, inches
    "z_up_m": ((0, 1), (2, 1), (1, -1), 100.0),  # Blender's frame, metres
    "x_up_dm": ((2, 1), (0, 1), (1, 1), 10.0),  # an odd frame: X up, decimetres
}
# Bones: name, parent, transform properties. Only the root bone carries a cluster (its TransformLink is its
# saved place), so every other bone's bind place is what the FBX transform chain puts it at.
BONES = (
    ("Root", None, {"Lcl Translation": (3.0, 90.0, -2.0), "Lcl Rotation": (0.0, 30.0, 0.0)}),
    ("Spine", "Root", {"Lcl Translation": (0.0, 12.0, 1.0), "RotationOrder": 4, "Lcl Rotation": (20.0, 35.0, -50.0),
                       "PreRotation": (10.0, -30.0, 45.0), "PostRotation": (-15.0, 20.0, 5.0)}),
    ("Chest", "Spine", {"Lcl Translation": (2.0, 15.0, 0.5), "RotationOrder": 2, "Lcl Rotation": (-40.0, 10.0, 70.0),
                        "RotationOffset": (1.0, -2.0, 0.5), "RotationPivot": (0.5, 3.0, -1.0),
                        "ScalingOffset": (0.2, 0.1, -0.3), "ScalingPivot": (-0.4, 1.0, 0.6),
                        "Lcl Scaling": (1.5, 1.5, 1.5)}),
    ("Neck", "Chest", {"Lcl Translation": (0.0, 10.0, 0.0), "RotationOrder": 5, "Lcl Rotation": (15.0, -60.0, 25.0),
                       "PostRotation": (0.0, 0.0, 90.0), "InheritType": 2}),  # Maya's segment scale compensation
    ("Head", "Neck", {"Lcl Translation": (1.0, 8.0, 2.0), "RotationOrder": 1, "Lcl Rotation": (5.0, 5.0, 80.0)}),
    ("Arm", "Chest", {"Lcl Translation": (12.0, 6.0, 0.0), "RotationOrder": 3, "Lcl Rotation": (90.0, 45.0, -10.0),
                      "PreRotation": (0.0, 0.0, -90.0), "Lcl Scaling": (0.8, 0.8, 0.8)}),
    ("Hand", "Arm", {"Lcl Translation": (0.0, 25.0, 0.0), "RotationPivot": (0.0, 2.0, 0.0),
                     "Lcl Rotation": (30.0, 0.0, 0.0)}),
)


ENUMS = ("RotationOrder", "InheritType")


def build_fbx(path: Path, settings: str = "y_up_cm", bones=BONES, *, bind_pose: Optional[Dict[str, np.ndarray]] = None,
              hook=None) -> Path:
    """A skinned FBX character: LimbNodes with the given transforms, a four-vertex mesh, one Skin whose one
    Cluster binds the whole mesh to the root bone; with `bind_pose` (bone -> world matrix in the file's
    frame), a BindPose of those. `hook(nodes)` may break the top-level nodes first."""
    coord, up, front, unit = SETTINGS[settings]
    ids = iter(range(1000, 100000))
    objects, connections = Node("Objects"), Node("Connections")
    bone_ids = {}
    for name, parent, props in bones:
        identifier = Long(next(ids))
        bone_ids[name] = identifier
        model = objects.add("Model", identifier, name + "\x00\x01Model", "LimbNode")
        model.add("Version", 232)
        rows = model.add("Properties70")
        rows.children.append(_p("RotationActive", "bool", 1))
        if "InheritType" not in props:
            rows.children.append(_p("InheritType", "enum", 1))  # eInheritRSrs, as Blender writes
        for key, value in props.items():
            rows.children.append(_p(key, "enum", value) if key in ENUMS else _vector(key, value))
        connections.add("C", "OO", identifier, bone_ids[parent] if parent else Long(0))
    mesh_model, geometry, skin, cluster = (Long(next(ids)) for _ in range(4))
    objects.add("Model", mesh_model, "Body\x00\x01Model", "Mesh").add("Version", 232)
    shape = objects.add("Geometry", geometry, "Body\x00\x01Geometry", "Mesh")
    shape.add("Vertices", array("d", [0, 80, 0, 10, 80, 0, 10, 100, 0, 0, 100, 0]))
    shape.add("PolygonVertexIndex", array("i", [0, 1, 2, -4]))
    objects.add("Deformer", skin, "Skin\x00\x01Deformer", "Skin").add("Version", 101)
    root_translation = bones[0][2]["Lcl Translation"]
    root_world = _root_world(bones[0][2])
    deformer = objects.add("Deformer", cluster, "Root\x00\x01SubDeformer", "Cluster")
    deformer.add("Version", 100)
    deformer.add("Indexes", array("i", [0, 1, 2, 3]))
    deformer.add("Weights", array("d", [1.0, 1.0, 1.0, 1.0]))
    deformer.add("Transform", array("d", np.linalg.inv(root_world).T.ravel()))
    deformer.add("TransformLink", array("d", root_world.T.ravel()))
    for child, parent in ((mesh_model, Long(0)), (geometry, mesh_model), (skin, geometry), (cluster, skin),
                          (bone_ids[bones[0][0]], cluster)):
        connections.add("C", "OO", child, parent)
    if bind_pose:
        pose = objects.add("Pose", Long(next(ids)), "BindPose\x00\x01Pose", "BindPose")
        pose.add("Type", "BindPose")
        pose.add("Version", 100)
        pose.add("NbPoseNodes", len(bind_pose))
        for name, world in bind_pose.items():
            entry = pose.add("PoseNode")
            entry.add("Node", bone_ids[name])
            entry.add("Matrix", array("d", np.asarray(world, dtype=np.float64).T.ravel()))
    header = Node("FBXHeaderExtension")
    header.add("FBXHeaderVersion", 1003)
    header.add("FBXVersion", 7400)
    global_settings = Node("GlobalSettings")
    global_settings.add("Version", 1000)
    rows = global_settings.add("Properties70")
    for key, (axis, sign) in (("CoordAxis", coord), ("UpAxis", up), ("FrontAxis", front)):
        rows.children.append(_p(key, "int", axis))
        rows.children.append(_p(key + "Sign", "int", sign))
    rows.children.append(_p("UnitScaleFactor", "double", float(unit)))
    rows.children.append(_p("OriginalUnitScaleFactor", "double", float(unit)))
    nodes = [header, global_settings, Node("Documents"), Node("References"), Node("Definitions"), objects, connections]
    if hook is not None:
        hook(nodes)
    path.write_bytes(fbx_binary.encode(nodes))
    assert root_translation is not None
    return path


def _root_world(props) -> np.ndarray:
    """The root bone's saved world matrix in the file's frame (a translation and a rotation about Y)."""
    angle = math.radians(props["Lcl Rotation"][1])
    world = np.eye(4)
    world[:3, :3] = [[math.cos(angle), 0, math.sin(angle)], [0, 1, 0], [-math.sin(angle), 0, math.cos(angle)]]
    world[:3, 3] = props["Lcl Translation"]
    return world


@pytest.mark.parametrize("settings", sorted(SETTINGS))
def test_the_fbx_transform_chain_puts_every_bone_where_ufbx_does(tmp_path, settings):
    """Rotation orders, pre/post rotation, rotation and scaling offsets and pivots, scaling (inherited and
    not), and the file's axes and unit: each bone's bind place as our reader makes it is where ufbx puts it."""
    path = build_fbx(tmp_path / (settings + ".fbx"), settings)
    judged = ufbx_binds(path)
    ours = read_binds(path)
    assert set(judged["nodes"]) >= {name for name, _, _ in BONES}
    worst = {name: float(np.linalg.norm(ours[name] - judged["nodes"][name])) for name, _, _ in BONES}
    assert max(worst.values()) < BIND_TOLERANCE_M, worst
    assert np.linalg.norm(ours["Root"] - judged["clusters"]["Root"]) < BIND_TOLERANCE_M


def test_a_bone_no_cluster_binds_takes_its_bind_from_the_bind_pose(tmp_path):
    """Bones without weights (no cluster) in a file saved in another pose: their bind is the BindPose's,
    as ufbx reads it, not where the saved pose put them (0.25 m away here)."""
    bones = (BONES[0],
             ("Arm", "Root", {"Lcl Translation": (10.0, 20.0, 0.0), "Lcl Rotation": (0.0, 0.0, 60.0)}),  # saved turned
             ("Hand", "Arm", {"Lcl Translation": (0.0, 25.0, 0.0)}))
    root = _root_world(BONES[0][2])
    arm = root @ _translation_matrix_np((10.0, 20.0, 0.0))  # at bind the arm is not turned
    bind = {"Arm": arm, "Hand": arm @ _translation_matrix_np((0.0, 25.0, 0.0))}
    for settings in ("y_up_cm", "z_up_inch"):
        path = build_fbx(tmp_path / (settings + ".fbx"), settings, bones, bind_pose=bind)
        judged = ufbx_binds(path)
        ours = read_binds(path)
        for bone in ("Arm", "Hand"):
            assert np.linalg.norm(ours[bone] - judged["poses"][bone]) < BIND_TOLERANCE_M, (settings, bone)
        assert np.linalg.norm(ours["Hand"] - judged["nodes"]["Hand"]) > 0.1  # the saved pose is elsewhere


def _translation_matrix_np(offset: Sequence[float]) -> np.ndarray:
    matrix = np.eye(4)
    matrix[:3, 3] = offset
    return matrix


def test_a_left_handed_fbx_is_refused_in_one_line(tmp_path):
    """A mirrored frame (X pointing left of Y up and Z front) cannot be turned into Kimodo's by a rotation:
    read as if it were right-handed, every bone would sit mirrored (2.9 m off here), so it is refused."""
    SETTINGS_LEFT = dict(SETTINGS, left_handed=((0, -1), (1, 1), (2, 1), 1.0))
    target = tmp_path / "left.fbx"
    try:
        SETTINGS.update(SETTINGS_LEFT)
        build_fbx(target, "left_handed")
    finally:
        SETTINGS.pop("left_handed")
    assert_refused(target, "left-handed")


# --- real characters: the Quaternius FBX, and Blender-made Mixamo-named ones -------------------------------

@pytest.fixture(scope="module")
def characters(tmp_path_factory) -> Dict[str, Tuple[Path, Path]]:
    """name -> (the FBX character, its .glb copy). The Mixamo-named ones are made here by Blender's FBX
    exporter from the MPFB2 rig: once at its rest, once saved in another pose (the bind in the clusters)."""
    root = tmp_path_factory.mktemp("fbx_read_characters")
    mixamo, posed = root / "mixamo.fbx", root / "mixamo_posed.fbx"
    assert run_blender("export_fbx.py", MIXAMO_GLB, mixamo)["bones"] == 52
    report = run_blender("export_fbx_posed.py", MIXAMO_GLB, posed)
    assert report["bones"] == 52 and "mixamorig:Hips" in report["posed"]
    return {"quaternius": (QUATERNIUS_FBX, QUATERNIUS_GLB), "mixamo": (mixamo, MIXAMO_GLB),
            "mixamo_posed": (posed, MIXAMO_GLB)}


CHARACTERS = ("quaternius", "mixamo", "mixamo_posed")


@pytest.mark.parametrize("name", CHARACTERS)
def test_a_real_fbx_character_is_bound_where_ufbx_and_its_glb_copy_bind_it(characters, name):
    fbx_path, glb_path = characters[name]
    judged = ufbx_binds(fbx_path)
    ours = read_binds(fbx_path)
    copy = read_binds(glb_path)
    assert len(judged["clusters"]) >= 31 and set(ours) == set(copy)
    worst = max(float(np.linalg.norm(ours[bone] - place)) for bone, place in judged["clusters"].items())
    assert worst < BIND_TOLERANCE_M, worst
    # Bones without a cluster (end bones, IK poles) too: against Blender's own reading of the same file.
    worst_copy = max(float(np.linalg.norm(ours[joint] - copy[joint])) for joint in copy)
    assert worst_copy < BIND_TOLERANCE_M, worst_copy
    if name != "mixamo":  # saved in another pose: the nodes are not where the bind is (the test means something)
        saved = max(float(np.linalg.norm(ours[bone] - judged["nodes"][bone])) for bone in judged["clusters"])
        assert saved > 0.1, saved


@pytest.mark.parametrize("name", CHARACTERS)
def test_an_fbx_character_maps_as_its_glb_copy_does(characters, name):
    from kimodo_rig.retarget.character import load_target, map_target

    maps = []
    for path in characters[name]:
        humanoid = map_target(load_target(str(path)))
        names = humanoid.skeleton.joint_names
        maps.append(({part: names[j] for part, j in humanoid.bones.items()},
                     {part: names[j] for part, j in humanoid.anchors.items()},
                     {part: tuple(names[j] for j in joints) for part, joints in humanoid.ends.items()},
                     humanoid.whole_limbs, humanoid.forward))
    (bones, anchors, ends, whole, forward), (bones_copy, anchors_copy, ends_copy, whole_copy, forward_copy) = maps
    assert len(bones) >= 15 and bones == bones_copy
    assert (anchors, ends, whole) == (anchors_copy, ends_copy, whole_copy)
    assert np.allclose(forward, forward_copy, atol=1e-6)


LIMB_SEGMENTS = {  # limb -> (joint, joint) per character naming, {S}/{Side} the side
    "quaternius": {"upperarm": ("UpperArm.{S}", "LowerArm.{S}"), "lowerarm": ("LowerArm.{S}", "Palm.{S}"),
                   "thigh": ("UpperLeg.{S}", "LowerLeg.{S}"), "calf": ("LowerLeg.{S}", "Foot.{S}")},
    "mixamo": {"upperarm": ("mixamorig:{Side}Arm", "mixamorig:{Side}ForeArm"),
               "lowerarm": ("mixamorig:{Side}ForeArm", "mixamorig:{Side}Hand"),
               "thigh": ("mixamorig:{Side}UpLeg", "mixamorig:{Side}Leg"),
               "calf": ("mixamorig:{Side}Leg", "mixamorig:{Side}Foot")},
}
FEET = {"quaternius": "Foot.{S}", "mixamo": "mixamorig:{Side}Foot"}


def _sided(pattern: str, side: str) -> str:
    return pattern.format(S=side, Side={"L": "Left", "R": "Right"}[side])


@pytest.fixture(scope="module")
def retargeted(characters, tmp_path_factory) -> Dict[str, Tuple[Path, Path]]:
    """name -> (the clip retargeted onto the FBX character, onto its .glb copy), both written as .glb."""
    root = tmp_path_factory.mktemp("fbx_read_retargeted")
    runs = {}
    for name, (fbx_path, glb_path) in characters.items():
        outputs = root / (name + "_from_fbx.glb"), root / (name + "_from_glb.glb")
        for target, output in zip((fbx_path, glb_path), outputs):
            result = run_cli("retarget", CLIPS / SOMA_CLIP, "--target", target, "-o", output)
            assert result.returncode == 0, result.stderr
        runs[name] = outputs
    return runs


@pytest.mark.parametrize("name", CHARACTERS)
def test_an_fbx_character_retargets_as_its_glb_copy_does(retargeted, name):
    """The same limb directions at every frame, the same soles (each foot's lowest skinned vertex), the same
    joint places, judged from the written files by numpy FK and skinning (gltf_judge, feet_judge)."""
    from feet_judge import Skinned, _descendants
    from gltf_judge import Glb

    family = "mixamo" if name.startswith("mixamo") else name
    worlds, soles = [], []
    for output in retargeted[name]:
        glb = Glb(output)
        world = glb.animated_world_matrices()
        index = {node.name: i for i, node in enumerate(glb.gltf.nodes)}
        directions = []
        for a, b in LIMB_SEGMENTS[family].values():
            for side in "LR":
                segment = world[:, index[_sided(b, side)], :3, 3] - world[:, index[_sided(a, side)], :3, 3]
                directions.append(segment / np.linalg.norm(segment, axis=-1, keepdims=True))
        skinned = Skinned(output)
        lows = []
        for side in "LR":
            posed = skinned.skin(world, skinned.vertices_on(_descendants(glb, _sided(FEET[family], side))))
            assert posed.shape[1] > 0
            lows.append(posed[..., 1].min(1))
        worlds.append((np.array(directions), {n: world[:, i, :3, 3] for n, i in index.items()}))
        soles.append(np.array(lows))
    (directions, places), (directions_copy, places_copy) = worlds
    angle = np.degrees(np.arccos(np.clip(np.sum(directions * directions_copy, -1), -1.0, 1.0))).max()
    assert angle < 0.1, "limb directions differ by {:.3g} deg".format(angle)
    sole_gap = np.abs(soles[0] - soles[1]).max()
    assert sole_gap < 1e-3, "soles differ by {:.3g} m".format(sole_gap)
    worst = max(float(np.linalg.norm(places[n] - places_copy[n], axis=-1).max()) for n in places_copy if n in places)
    assert worst < 1e-3, "{:.3g} m".format(worst)


# --- a top bone the takes never move: placement, not pose ---------------------------------------------------

ROBOT_GLB = RIGS / "quaternius" / "RobotExpressive.glb"


def test_a_top_bone_no_take_moves_places_the_bind_where_the_file_stands_it(tmp_path):
    """RobotExpressive exported by Blender's FBX exporter with its default options: every clip a take, each
    keying the root bone still, 2.37 m above the clusters' bind. Read as its .glb twin is (the .glb reader
    takes a root joint no clip moves as placement): every bone at ufbx's cluster bind moved by ufbx's own
    saved-minus-bind offset of the root bone, and at the .glb's bind; the retarget's soles on the floor the
    file's own foot meshes stand on (ufbx's saved place, numpy). Before: every bone and sole 2.37 m under."""
    fbx_path = tmp_path / "robot.fbx"
    report = run_blender("export_fbx_defaults.py", ROBOT_GLB, fbx_path)
    assert report["actions"] >= 10
    judged = ufbx_binds(fbx_path)
    offset = np.array(judged["nodes"]["Bone"]) - judged["clusters"]["Bone"]
    assert np.linalg.norm(offset) > 2.0  # the file's root bone stands away from its bind: the test means something
    ours = read_binds(fbx_path)
    worst = max(float(np.linalg.norm(ours[bone] - (np.array(place) + offset))) for bone, place in judged["clusters"].items())
    assert worst < BIND_TOLERANCE_M, worst
    copy = read_binds(ROBOT_GLB)
    worst_copy = max(float(np.linalg.norm(ours[bone] - copy[bone])) for bone in judged["clusters"])
    assert worst_copy < 1e-3, worst_copy
    floor = min(np.array(v)[:, 1].min() for name, v in judged["rigid_vertices"].items() if name.startswith("Foot"))
    output = tmp_path / "robot_walk.glb"
    result = run_cli("retarget", CLIPS / SOMA_CLIP, "--target", fbx_path, "-o", output)
    assert result.returncode == 0, result.stderr
    from feet_judge import Skinned, _descendants

    skinned = Skinned(output)
    world = skinned.glb.animated_world_matrices()
    lows = [skinned.skin(world, skinned.vertices_on(_descendants(skinned.glb, foot)))[..., 1].min(1)
            for foot in ("FootL", "FootR")]
    lowest = np.minimum(*lows)
    assert abs(lowest.min() - floor) < 1e-3, (lowest.min(), floor)


# --- broken files: one line naming the file, exit 1, nothing written ----------------------------------------

def assert_refused(target: Path, *words: str) -> str:
    """`retarget CLIP --target target -o out.glb` fails in one line naming `target` (with `words`), and
    writes nothing (no output, no temporary file)."""
    folder = target.parent / "out"
    folder.mkdir(exist_ok=True)
    output = folder / "walk.glb"
    result = run_cli("retarget", CLIPS / SOMA_CLIP, "--target", target, "-o", output)
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("{}: ".format(target)), result.stderr
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in result.stderr, result.stderr
    assert list(folder.iterdir()) == []
    return result.stderr


def _with_vertices(data: bytes, count: int, encoding: int, payload: bytes) -> bytes:
    """`data` (a file built here) with its Vertices array replaced by one of `count` doubles stored as
    `payload` with `encoding`: a placeholder string of the same size is encoded first, so every record
    length around it stays right and only the array itself is wrong."""
    nodes = fbx_binary.decode(data, "built.fbx")
    placeholder = b"\xab" * (len(payload) + 8)  # R: type, uint32 length, bytes = d: type, 3 uint32, bytes
    for node in nodes:
        for child in node.children:
            if child.name == "Geometry":
                child.find("Vertices").properties[0] = placeholder
    encoded = fbx_binary.encode(nodes)
    old = b"R" + struct.pack("<I", len(placeholder)) + placeholder
    assert encoded.count(old) == 1
    return encoded.replace(old, b"d" + struct.pack("<III", count, encoding, len(payload)) + payload)


def _deflated_zeros(size: int) -> bytes:
    """`size` zero bytes deflated as tightly as zlib can, a megabyte at a time (no `size`-byte buffer)."""
    packer = zlib.compressobj(9)
    chunk = bytes(1 << 20)
    out = [packer.compress(chunk) for _ in range(size >> 20)]
    return b"".join(out) + packer.compress(bytes(size & ((1 << 20) - 1))) + packer.flush()


BAD_FILES = {
    "truncated": lambda good: good[:len(good) // 2],
    "wrong_magic": lambda good: b"Kaydara FBX Binarx" + good[18:],
    "ascii": lambda good: b"; FBX 7.4.0 project file\nFBXHeaderExtension:  {\n}\n",
    "record_past_the_end": lambda good: good[:27] + (len(good) + 4096).to_bytes(4, "little") + good[31:],
    "ten_million_elements": lambda good: _with_vertices(good, 10_000_000, 0, array("d", [0.0] * 12).tobytes()),
    "ten_million_compressed": lambda good: _with_vertices(good, 10_000_000, 1, zlib.compress(bytes(800))),
    # 512 MB claimed, past the codec's cap on any file's arrays (refused before inflating, so junk will do)
    "past_the_array_cap": lambda good: _with_vertices(good, 1 << 26, 1, bytes(600_000)),
    # within that cap but 1000 times this file's size: 100 MB of zeros deflated at 1028:1
    "deflate_bomb_of_zeros": lambda good: _with_vertices(good, 3 << 22, 1, _deflated_zeros(24 << 22)),
    "deflate_short": lambda good: _with_vertices(good, 30, 1, zlib.compress(bytes(8 * 12))),
}
BAD_WORDS = {"truncated": ("truncated",), "wrong_magic": ("not a binary FBX",), "ascii": ("ASCII",),
             "record_past_the_end": ("past",), "ten_million_elements": ("10000000",),
             "ten_million_compressed": ("10000000",), "past_the_array_cap": ("more than a file may hold",),
             "deflate_bomb_of_zeros": ("12582912 elements",), "deflate_short": ("inflate",)}


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_a_broken_fbx_target_is_refused_in_one_line(tmp_path, kind):
    good = build_fbx(tmp_path / "good.fbx").read_bytes()
    target = tmp_path / (kind + ".fbx")
    target.write_bytes(BAD_FILES[kind](good))
    before = target.read_bytes()
    assert_refused(target, *BAD_WORDS[kind])
    assert target.read_bytes() == before  # the input is never modified


def test_a_cycle_in_the_connections_is_refused_in_one_line(tmp_path):
    def cycle(nodes: List[Node]) -> None:
        connections = next(node for node in nodes if node.name == "Connections")
        ids = {c.properties[1]: c.properties[2] for c in connections.children}
        root = next(child for child, parent in ids.items() if parent == 0)
        hand = max(ids)  # the last bone's id is under its chain
        connections.children = [c for c in connections.children if c.properties[1] != root]
        connections.add("C", "OO", root, Long(hand))
    assert_refused(build_fbx(tmp_path / "cycle.fbx", hook=cycle), "cycle")


def _set_property(model_name: str, key: str, values: tuple):
    """A hook that gives Model `model_name` (or GlobalSettings, for "GlobalSettings") the row `key` = values."""
    def hook(nodes: List[Node]) -> None:
        if model_name == "GlobalSettings":
            holder = next(node for node in nodes if node.name == "GlobalSettings")
        else:
            objects = next(node for node in nodes if node.name == "Objects")
            holder = next(node for node in objects.children
                          if node.name == "Model" and node.properties[1].startswith(model_name + "\x00"))
        rows = holder.find("Properties70")
        rows.children = [row for row in rows.children if row.properties[0] != key]
        rows.children.append(Node("P", (key, "", "", "") + values))
    return hook


def _drop_vertices(nodes: List[Node]) -> None:
    objects = next(node for node in nodes if node.name == "Objects")
    geometry = next(node for node in objects.children if node.name == "Geometry")
    geometry.children = [child for child in geometry.children if child.name != "Vertices"]


# Values of the wrong kind where the reader met a traceback (found by mutating files built here): each
# refused in one line naming the file.
WRONG_VALUES = {
    "rotation_text": (_set_property("Spine", "Lcl Rotation", ("x", "y", "z")), "Lcl Rotation"),
    "translation_two_values": (_set_property("Chest", "Lcl Translation", (1.0, 2.0)), "Lcl Translation"),
    "rotation_nan": (_set_property("Arm", "Lcl Rotation", (float("nan"), 0.0, 0.0)), "Lcl Rotation"),
    "translation_1e300": (_set_property("Root", "Lcl Translation", (1e300, 0.0, 0.0)), "Lcl Translation"),
    "rotation_order_text": (_set_property("Neck", "RotationOrder", ("x",)), "RotationOrder"),
    "inherit_type_empty": (_set_property("Hand", "InheritType", ()), "InheritType"),
    "up_axis_infinite": (_set_property("GlobalSettings", "UpAxis", (float("inf"),)), "axes"),
    "mesh_without_vertices": (_drop_vertices, "Vertices"),
}


@pytest.mark.parametrize("kind", sorted(WRONG_VALUES))
def test_a_transform_value_of_the_wrong_kind_is_refused_in_one_line(tmp_path, kind):
    hook, word = WRONG_VALUES[kind]
    assert_refused(build_fbx(tmp_path / (kind + ".fbx"), hook=hook), word)


def test_a_setting_row_without_a_value_is_read_as_the_default(tmp_path):
    plain = read_binds(build_fbx(tmp_path / "plain.fbx"))
    empty = read_binds(build_fbx(tmp_path / "empty.fbx", hook=_set_property("GlobalSettings", "UpAxis", ())))
    assert max(float(np.linalg.norm(plain[name] - empty[name])) for name in plain) == 0.0


# --- the scene read as a document: names, and a take sampled ----------------------------------------------

def _glb_of(document, path: Path) -> Path:
    """A read document written as a .glb for the judges (the JSON and binary chunks as they are)."""
    text = json.dumps(document.gltf).encode("utf-8")
    text += b" " * (-len(text) % 4)
    binary = bytes(document.binary) + bytes(-len(document.binary) % 4)
    body = struct.pack("<II", len(text), 0x4E4F534A) + text + struct.pack("<II", len(binary), 0x004E4942) + binary
    path.write_bytes(struct.pack("<III", 0x46546C67, 2, 12 + len(body)) + body)
    return path


def test_every_joint_keeps_its_own_name_and_the_mesh_node_its_mesh_s():
    from kimodo_rig.formats import fbx

    gltf = fbx.read_document(QUATERNIUS_FBX).gltf
    names = [node.get("name") for node in gltf["nodes"]]
    joints = [names[j] for j in gltf["skins"][0]["joints"]]
    assert all(names.count(joint) == 1 for joint in joints), [j for j in joints if names.count(j) > 1]
    mesh_nodes = [node["name"] for node in gltf["nodes"] if "mesh" in node]
    assert mesh_nodes == ["Female"]


def test_the_first_take_is_sampled_where_ufbx_evaluates_it(tmp_path):
    """The Quaternius FBX's first take (in file order, as ufbx and Blender take it) read as a document:
    every node's world place at every frame, by numpy FK of the document, against ufbx's evaluation."""
    from gltf_judge import Glb
    from kimodo_rig.formats import fbx

    document = fbx.read_motion_document(QUATERNIUS_FBX)
    glb = Glb(_glb_of(document, tmp_path / "take.glb"))
    times = glb.key_times()
    fps = 1.0 / float(times[1] - times[0])
    judge = Path(__file__).parent / "ufbx_judge.py"
    judged = subprocess.run([sys.executable, str(judge), str(QUATERNIUS_FBX), str(fps)],
                            capture_output=True, text=True, timeout=600)
    assert judged.returncode == 0, judged.stderr[-2000:]
    report = json.loads(judged.stdout)
    assert document.gltf["animations"][0]["name"] == report["takes"][0]["name"] == "HumanArmature|Female_Clapping"
    world = glb.animated_world_matrices()
    names = [node.name for node in glb.gltf.nodes]
    compared = [name for name in report["positions"] if names.count(name) == 1]
    assert len(compared) >= 42 and len(times) == len(report["positions"]["Hips"]) == 41
    worst = max(float(np.linalg.norm(world[:, names.index(name), :3, 3] - np.array(report["positions"][name]),
                                     axis=-1).max()) for name in compared)
    assert worst < BIND_TOLERANCE_M, worst


# Blender's exporter in other frames and scales: (up, forward, global scale, scale option).
BLENDER_FRAMES = {
    "z_up": ("Z", "Y", 1.0, "FBX_SCALE_NONE"),
    "x_up_scaled_3": ("X", "Z", 3.0, "FBX_SCALE_UNITS"),
    "scaled_0.01_all": ("Y", "-Z", 0.01, "FBX_SCALE_ALL"),
}


@pytest.mark.parametrize("frame", sorted(BLENDER_FRAMES))
def test_blender_exports_in_other_frames_and_scales_bind_where_ufbx_binds_them(tmp_path, frame):
    up, forward, scale, option = BLENDER_FRAMES[frame]
    path = tmp_path / (frame + ".fbx")
    assert run_blender("export_fbx_axes.py", MIXAMO_GLB, path, up, forward, scale, option)["bones"] == 52
    judged = ufbx_binds(path)
    ours = read_binds(path)
    worst = max(float(np.linalg.norm(ours[bone] - place)) for bone, place in judged["clusters"].items())
    assert len(judged["clusters"]) == 52 and worst < BIND_TOLERANCE_M, worst
    if scale == 1.0:  # unscaled: also where Blender's own .glb of the rig has it
        copy = read_binds(MIXAMO_GLB)
        assert max(float(np.linalg.norm(ours[joint] - copy[joint])) for joint in copy) < BIND_TOLERANCE_M


@pytest.mark.parametrize("version", [7500, 7700])
def test_a_character_saved_as_fbx_7_5_or_later_reads_as_its_7_4_original(tmp_path, version):
    """FBX 7.5 and later (Maya 2020 and later write 7.7) use 64-bit record offsets: the same scene reads to
    the same bind, as ufbx reads the re-encoded file."""
    path = tmp_path / "v{}.fbx".format(version)
    path.write_bytes(fbx_binary.encode(fbx_binary.decode(QUATERNIUS_FBX.read_bytes(), "q.fbx"), version))
    assert fbx_binary.version_of(path.read_bytes()) == version
    original, wide = read_binds(QUATERNIUS_FBX), read_binds(path)
    assert set(wide) == set(original)
    assert max(float(np.linalg.norm(wide[joint] - original[joint])) for joint in original) == 0.0
    judged = ufbx_binds(path)
    worst = max(float(np.linalg.norm(wide[bone] - place)) for bone, place in judged["clusters"].items())
    assert worst < BIND_TOLERANCE_M, worst


def _geometric_mesh(nodes: List[Node]) -> None:
    """The mesh Model moved (ignored at bind: the clusters place it) with a geometric transform (not)."""
    objects = next(node for node in nodes if node.name == "Objects")
    body = next(node for node in objects.children if node.name == "Model" and node.properties[1].startswith("Body\x00"))
    rows = body.add("Properties70")
    for key, value in (("GeometricTranslation", (5.0, 0.0, -3.0)), ("GeometricRotation", (0.0, 30.0, 90.0)),
                       ("GeometricScaling", (2.0, 2.0, 2.0)), ("Lcl Translation", (0.0, 0.0, 7.0))):
        rows.children.append(_vector(key, value))


@pytest.mark.parametrize("case", ["geometric_y_up_cm", "geometric_z_up_inch", "quaternius"])
def test_skinned_vertices_sit_where_ufbx_skins_them_at_bind(tmp_path, case):
    """The mesh at bind (TransformLink * Transform * the geometric transform, in Y up metres) as ufbx places
    it through its first cluster: every vertex of ours (all primitives: one per material, a control point
    once per distinct normal) on one of ufbx's and every one of ufbx's on one of ours, as many places."""
    from kimodo_rig.formats import fbx

    if case == "quaternius":
        path = QUATERNIUS_FBX
    else:
        path = build_fbx(tmp_path / (case + ".fbx"), case[len("geometric_"):], hook=_geometric_mesh)
    judged = ufbx_binds(path)
    document = fbx.read_document(path)
    meshes = document.gltf["meshes"]
    assert len(meshes) == len(judged["bind_vertices"]) == 1
    ours = np.concatenate([np.array(document.accessor(primitive["attributes"]["POSITION"]))
                           for primitive in meshes[0]["primitives"]])
    theirs = np.array(next(iter(judged["bind_vertices"].values())))
    gaps = np.linalg.norm(ours[:, None, :] - theirs[None, :, :], axis=-1)
    assert max(gaps.min(axis=1).max(), gaps.min(axis=0).max()) < BIND_TOLERANCE_M
    assert len(np.unique(ours.round(6), axis=0)) == len(np.unique(theirs.round(6), axis=0))


def test_a_kimodo_motion_exported_by_blender_reads_back_as_the_motion(tmp_path):
    """Blender's FBX exporter, re-exporting our .glb of a clip, puts the skeleton under an armature node
    (turned from Z up, scaled by 100) and gives every bone its own frame: `convert` of its FBX gives the
    clip's joint places at every frame (numpy FK of both .glb files), not Blender's local rotations read
    as Kimodo's."""
    from gltf_judge import Glb

    clip = CLIPS / SOMA_CLIP
    original, exported, back = tmp_path / "walk.glb", tmp_path / "walk_blender.fbx", tmp_path / "back.glb"
    assert run_cli("convert", clip, original).returncode == 0
    assert run_blender("export_fbx_motion.py", original, exported, 30)["frames"] == [0, 149]
    result = run_cli("convert", exported, back)
    assert result.returncode == 0, result.stderr
    expected, written = Glb(original), Glb(back)
    assert len(written.key_times()) == len(expected.key_times()) == 150
    order = [written.joint_names.index(name) for name in expected.joint_names]
    worst = np.linalg.norm(written.joint_world_positions()[:, order] - expected.joint_world_positions(), axis=-1).max()
    assert worst < BIND_TOLERANCE_M, "{:.3g} m".format(worst)
