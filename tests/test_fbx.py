"""FBX out, judged by three readers that share nothing with ours: ufbx (pip), Blender's FBX importer and
assimp (Debian assimp-utils). Every FBX the command line writes loads in all three; ufbx's evaluation of
the box rig, with axes normalised to Y up and metres, puts every joint where Kimodo's posed_joints have
it at every frame; Blender builds one armature deforming one mesh, posed the same.

And the binary node codec on its own: a real FBX (Quaternius, Blender 2.79's exporter) reads and writes
back node for node in 7.4 and 7.5, and hostile files are refused in one line.
"""
from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
import zlib
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest

from conftest import CLIPS, NPZ, REFERENCE, RIGS, run_blender, run_cli
from gltf_judge import forward_kinematics, matrices_to_quats, read_raw_clip, skeleton_record, write_raw_clip
from test_glb import smplx_motion

from kimodo_rig import formats
from kimodo_rig.errors import KimodoError
from kimodo_rig.formats import fbx, fbx_binary
from kimodo_rig.model import Motion, Skeleton


UFBX_TOLERANCE_M = 1e-4  # the bar: ufbx's joint positions against Kimodo's posed_joints
BLENDER_TOLERANCE_M = 1e-3  # the bar for Blender's bone heads
QUATERNIUS_FBX = RIGS / "quaternius" / "quaternius_female_dress.fbx"  # Blender 2.79's exporter, FBX 7400, CC0


@dataclass
class Case:
    name: str
    clip: Path
    reference: np.ndarray  # (frames, joints, 3) world positions, metres
    joint_names: List[str]
    fps: float = 30.0
    output: Path = Path()


def _cases(inputs: Path) -> List[Case]:
    soma = formats.read_file(CLIPS / "soma_01_single_text_prompt").skeleton.joint_names
    g1 = formats.read_file(CLIPS / "g1_01_single_text_prompt").skeleton.joint_names
    cases = [
        Case("soma_01", CLIPS / "soma_01_single_text_prompt",
             np.load(NPZ / "soma_01_single_text_prompt" / "motion.npz")["posed_joints"].astype(np.float64), list(soma)),
        Case("g1_01", CLIPS / "g1_01_single_text_prompt",
             np.load(NPZ / "g1_01_single_text_prompt" / "motion.npz")["posed_joints"].astype(np.float64), list(g1)),
        Case("g1_01_at_60fps", CLIPS / "g1_01_single_text_prompt",
             np.load(NPZ / "g1_01_single_text_prompt" / "motion.npz")["posed_joints"].astype(np.float64), list(g1),
             fps=60.0),
    ]
    soma77 = sorted(REFERENCE.glob("*_somaskel77.npz"))[0]
    with np.load(soma77) as npz:
        clip = write_raw_clip(inputs / soma77.stem, matrices_to_quats(npz["local_rot_mats"]), npz["root_positions"])
        cases.append(Case("soma77", clip, npz["posed_joints"].astype(np.float64),
                          list(formats.read_file(clip).skeleton.joint_names)))
    quats, roots = smplx_motion()
    clip = write_raw_clip(inputs / "smplx_dance", quats, roots)
    record = skeleton_record("smplx22")
    written_quats, written_roots = read_raw_clip(clip, 22)
    reference = forward_kinematics(record["parents"], record["rest_local_offsets_m"], written_quats, written_roots)
    from kimodo_rig import skeletons
    mannequin = list(skeletons.display_names(formats.read_file(clip).skeleton, "mannequin"))
    cases.append(Case("smplx_dance", clip, reference, mannequin))
    return cases


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> Dict[str, Case]:
    """Each case converted by the command line, as a user would: `kimodo-rig convert CLIP walk.fbx`."""
    root = tmp_path_factory.mktemp("fbx")
    cases = _cases(root / "inputs")
    for case in cases:
        case.output = root / (case.name + ".fbx")
        result = run_cli("convert", case.clip, case.output, "--fps", case.fps)
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
        assert case.output.is_file()
    return {case.name: case for case in cases}


CASE_NAMES = ["soma_01", "g1_01", "g1_01_at_60fps", "soma77", "smplx_dance"]


def ufbx_report(path: Path, fps: float = 0.0, feet: str = "") -> dict:
    """What ufbx reads from `path` (tests/ufbx_judge.py, in its own process); with `fps`, every node's world
    origin at each frame, axes and units normalised to Y up and metres; with `feet` (foot bones, comma
    separated), those feet's skinned vertices at bind and their lowest at every frame."""
    result = subprocess.run([sys.executable, str(Path(__file__).parent / "ufbx_judge.py"), str(path), str(fps)]
                            + ([feet] if feet else []), capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        pytest.fail("ufbx could not read {} (exit {}):\n{}".format(path.name, result.returncode, result.stderr[-3000:]))
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def ufbx_reports(converted) -> Dict[str, dict]:
    return {name: ufbx_report(case.output, case.fps) for name, case in converted.items()}


@pytest.mark.parametrize("name", CASE_NAMES)
def test_ufbx_evaluates_every_joint_where_kimodo_has_it_at_every_frame(converted, ufbx_reports, name):
    case = converted[name]
    report = ufbx_reports[name]
    assert report["warnings"] == []
    positions = np.array([report["positions"][joint_name] for joint_name in case.joint_names]).transpose(1, 0, 2)
    assert positions.shape == case.reference.shape
    worst = np.linalg.norm(positions - case.reference, axis=-1).max()
    assert worst < UFBX_TOLERANCE_M, "{:.3g} m".format(worst)


@pytest.mark.parametrize("name", CASE_NAMES)
def test_ufbx_reads_the_box_rig_one_take_at_the_clip_rate_keyed_once_a_frame(converted, ufbx_reports, name):
    case = converted[name]
    report = ufbx_reports[name]
    frames, joints = case.reference.shape[:2]
    assert report["version"] == 7400
    assert report["fps"] == case.fps
    assert report["unit_meters"] == pytest.approx(0.01)  # centimetres, UnitScaleFactor 1
    assert report["axes"] == ["POSITIVE_X", "POSITIVE_Y", "POSITIVE_Z"]  # right-handed, Y up, Z front
    assert sorted(report["bones"]) == sorted(case.joint_names)  # one bone per joint, names kept, no leaf bones
    assert len(report["meshes"]) == 1 and report["meshes"][0]["faces"] == 6 * joints  # a box per bone
    assert sorted(report["clusters"]) == sorted(case.joint_names)
    assert report["bind_poses"] == 1
    assert len(report["takes"]) == 1
    take = report["takes"][0]
    assert take["name"] == case.clip.name
    assert sorted(curve["value"] for curve in take["curves"]) == ["R"] * 3 * joints + ["T"] * 3
    expected_times = np.arange(frames) / case.fps
    for curve in take["curves"]:
        times = np.array(curve["times"])
        assert times.shape == (frames,)
        assert np.abs(times - expected_times).max() < 1e-9


def test_assimp_imports_every_file_with_its_structure_validated(converted):
    assimp = shutil.which("assimp")
    if assimp is None:
        pytest.fail("judge missing: assimp (Debian assimp-utils; bash scripts/test.sh installs it)")
    for case in converted.values():
        result = subprocess.run([assimp, "info", str(case.output), "-vds"], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
        lines = result.stdout.splitlines()
        assert any(line.startswith("Importing file") and line.rstrip().endswith("OK") for line in lines)
        assert "Animations:         1" in lines
        assert "Bones:              {}".format(case.reference.shape[1]) in lines


def _sample_frames(frames: int) -> List[int]:
    return [0, frames // 2, frames - 1]


@pytest.fixture(scope="module")
def blender_reports(converted, tmp_path_factory):
    """One Blender process imports every file with Blender's FBX importer."""
    spec = [{"path": str(c.output), "frames": _sample_frames(c.reference.shape[0])} for c in converted.values()]
    spec_file = tmp_path_factory.mktemp("blender_fbx") / "spec.json"
    spec_file.write_text(json.dumps(spec), encoding="utf-8")
    return run_blender("import_fbx.py", spec_file)


@pytest.mark.parametrize("name", CASE_NAMES)
def test_blender_builds_one_armature_deforming_a_mesh_posed_like_kimodo(converted, blender_reports, name):
    case = converted[name]
    report = blender_reports[str(case.output)]
    assert report["armatures"] == 1
    assert len(report["skinned_meshes"]) == 1
    assert report["fps"] == pytest.approx(case.fps)
    assert sorted(report["bones"]) == sorted(case.joint_names)
    assert report["key_counts"] == [case.reference.shape[0]]
    for frame in _sample_frames(case.reference.shape[0]):
        heads = report["heads"][str(frame)]
        positions = np.array([heads[n] for n in case.joint_names])
        worst = np.linalg.norm(positions - case.reference[frame], axis=-1).max()
        assert worst < BLENDER_TOLERANCE_M, "frame {}: {:.3g} m".format(frame, worst)


def test_bone_names_are_kept_as_given_mixamo_prefix_included(tmp_path):
    names = ("mixamorig:Hips", "mixamorig:Spine", "mixamorig:LeftUpLeg")
    skeleton = Skeleton("mixamo_test", names, (-1, 0, 0), ((0.0, 1.0, 0.0), (0.0, 0.1, 0.0), (0.1, -0.05, 0.0)))
    motion = Motion(skeleton, array("d", [0.0, 0.0, 0.0, 1.0] * 6), array("d", [0.0, 1.0, 0.0, 0.0, 1.0, 0.1]),
                    name="walk")
    path = tmp_path / "walk.fbx"
    fbx.write(motion, path)
    assert sorted(ufbx_report(path)["bones"]) == sorted(names)


# --- the node codec ------------------------------------------------------------------------------------

def _same(a: fbx_binary.Node, b: fbx_binary.Node) -> bool:
    return (a.name == b.name and [type(p) for p in a.properties] == [type(p) for p in b.properties]
            and a.properties == b.properties and len(a.children) == len(b.children)
            and all(_same(x, y) for x, y in zip(a.children, b.children)))


@pytest.mark.parametrize("version", [7400, 7500])
def test_a_real_fbx_reads_and_writes_back_node_for_node(version, tmp_path):
    data = QUATERNIUS_FBX.read_bytes()
    nodes = fbx_binary.decode(data, "q.fbx")
    assert [n.name for n in nodes] == ["FBXHeaderExtension", "FileId", "CreationTime", "Creator", "GlobalSettings",
                                       "Documents", "References", "Definitions", "Objects", "Connections", "Takes"]
    written = fbx_binary.encode(nodes, version)
    again = fbx_binary.decode(written, "again.fbx")
    assert len(again) == len(nodes) and all(_same(a, b) for a, b in zip(nodes, again))
    path = tmp_path / "again.fbx"
    path.write_bytes(written)
    report = ufbx_report(path)  # an independent reader takes our encoding of it too
    assert report["version"] == version
    assert len(report["meshes"]) == 1 and len(report["takes"]) == 11 and len(report["bones"]) == 42


def _one_node_file(properties: bytes, count: int, version: int = 7400) -> bytes:
    """A file of one top-level node "N" with `count` properties of these raw bytes."""
    wide = version >= 7500
    head = struct.Struct("<QQQB" if wide else "<IIIB")
    start = 27
    end = start + head.size + 1 + len(properties)
    null = bytes(head.size)
    return (fbx_binary.MAGIC + struct.pack("<I", version) + head.pack(end, count, len(properties), 1) + b"N"
            + properties + null + bytes(200))


def _array_property(code: bytes, count: int, encoding: int, payload: bytes) -> bytes:
    return code + struct.pack("<III", count, encoding, len(payload)) + payload


def _refusal(data: bytes) -> str:
    with pytest.raises(KimodoError) as caught:
        fbx_binary.decode(data, "walk.fbx")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("walk.fbx: ")
    return message


def test_ascii_fbx_is_refused_in_one_line():
    assert _refusal(b"; FBX 7.4.0 project file\n; ----\nFBXHeaderExtension:  {\n") == \
        "walk.fbx: ASCII FBX is not read; save it as binary FBX"


def test_hostile_files_are_refused_in_one_line_with_bounded_memory():
    good = _one_node_file(_array_property(b"d", 2, 0, struct.pack("<2d", 1.0, 2.0)), 1)
    assert fbx_binary.decode(good, "walk.fbx")[0].properties[0].tolist() == [1.0, 2.0]
    assert "not a binary FBX" in _refusal(b"PK\x03\x04" + bytes(100))
    assert "truncated" in _refusal(fbx_binary.MAGIC[:10])
    assert "version" in _refusal(fbx_binary.MAGIC + struct.pack("<I", 6100) + bytes(40))
    # Truncated in the header of the record, in its property, in the null record that ends the file (the
    # footer after it is not needed to read the nodes).
    for cut in (30, 45, len(good) - 200 - 5):
        _refusal(good[:cut])
    past_end = bytearray(good)
    struct.pack_into("<I", past_end, 27, len(good) * 4)  # the record's end offset points past the file
    assert "past" in _refusal(bytes(past_end))
    # Ten million doubles claimed, 16 bytes stored raw; then the same claim compressed.
    assert "holds 16 bytes" in _refusal(_one_node_file(_array_property(b"d", 10_000_000, 0, bytes(16)), 1))
    assert "more than its" in _refusal(_one_node_file(_array_property(b"d", 10_000_000, 1, zlib.compress(bytes(16))), 1))
    # A deflate bomb: 100 MB of zeros in about 100 kB, declared as 2 doubles; inflation stops at 17 bytes.
    bomb = zlib.compress(bytes(100 << 20), 9)
    assert "does not inflate to its declared" in _refusal(_one_node_file(_array_property(b"d", 2, 1, bomb), 1))
    # An array claiming more than a file's budget of arrays, with a stream long enough to hold it.
    huge = fbx_binary.MAX_ARRAY_BYTES // 8 + 1
    assert "more than a file may hold" in _refusal(_one_node_file(_array_property(b"d", huge, 1, bytes(300_000)), 1))
    assert "unknown property type" in _refusal(_one_node_file(b"Z" + bytes(4), 1))
    assert "a property runs past" in _refusal(_one_node_file(b"I" + bytes(4), 3))
    assert "claims 1000000000 properties" in _refusal(_one_node_file(b"I" + bytes(4), 10**9))


def test_nodes_nested_past_the_bound_are_refused():
    def nested(depth: int) -> fbx_binary.Node:
        node = fbx_binary.Node("N", [1])
        inner = node
        for _ in range(depth - 1):
            inner = inner.add("N", 1)
        return node

    fbx_binary.decode(fbx_binary.encode([nested(fbx_binary.MAX_DEPTH)]), "walk.fbx")
    assert "nest more than" in _refusal(fbx_binary.encode([nested(fbx_binary.MAX_DEPTH + 1)]))


def test_cli_refuses_a_corrupt_fbx_in_one_line_and_writes_nothing(tmp_path):
    source = tmp_path / "walk.fbx"
    source.write_bytes(QUATERNIUS_FBX.read_bytes()[:5000])
    output = tmp_path / "out.glb"
    result = run_cli("convert", source, output)
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1 and str(source) in result.stderr
    assert not output.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["walk.fbx"]


# --- retarget to .fbx ------------------------------------------------------------------------------------

RETARGET_TOLERANCE_M = 1e-3  # the bar: the .fbx against the .glb of the same run, per joint
RETARGET_TARGETS = {
    "quaternius_female": RIGS / "quaternius" / "quaternius_female_dress.glb",  # Blender .L/.R names, 4.6 m
    "mixamo": RIGS / "mpfb2" / "mpfb2_mixamo.glb",  # mixamorig: names
    "robot": RIGS / "quaternius" / "RobotExpressive.glb",  # 19 meshes, armature node scaled by 100
}


@pytest.fixture(scope="module")
def retargeted(tmp_path_factory) -> Dict[str, Dict[str, Path]]:
    """One clip retargeted onto each target, once to .glb and once to .fbx, by the command line."""
    root = tmp_path_factory.mktemp("retarget_fbx")
    clip = CLIPS / "soma_01_single_text_prompt"
    outputs = {}
    for name, target in RETARGET_TARGETS.items():
        outputs[name] = {}
        for extension in (".glb", ".fbx"):
            output = root / (name + extension)
            result = run_cli("retarget", clip, "--target", target, "-o", output)
            assert result.returncode == 0, result.stderr
            outputs[name][extension] = output
        # Both report the same retarget (the .fbx's report is measured from the scene it is written from).
    return outputs


@pytest.mark.parametrize("name", sorted(RETARGET_TARGETS))
def test_retarget_to_fbx_puts_every_joint_where_the_glb_of_the_same_run_does(retargeted, name):
    from gltf_judge import Glb

    glb_file = Glb(retargeted[name][".glb"])
    expected = glb_file.joint_world_positions()
    report = ufbx_report(retargeted[name][".fbx"], 30.0)
    assert report["warnings"] == []
    positions = np.array([report["positions"][joint] for joint in glb_file.joint_names]).transpose(1, 0, 2)
    assert positions.shape == expected.shape
    worst = np.linalg.norm(positions - expected, axis=-1).max()
    assert worst < RETARGET_TOLERANCE_M, "{:.3g} m".format(worst)
    # The character's meshes, whole: every vertex of the .glb, a cluster per skin joint, one bind pose.
    vertices = sum(len(glb_file.accessor(p.attributes.POSITION)) for m in glb_file.gltf.meshes for p in m.primitives)
    assert sum(mesh["vertices"] for mesh in report["meshes"]) == vertices
    assert len(report["clusters"]) == sum(len(skin.joints) for skin in glb_file.gltf.skins)
    assert report["bind_poses"] == 1
    assert len(report["takes"]) == 1 and report["takes"][0]["name"] == "soma_01_single_text_prompt"


def test_assimp_imports_every_retargeted_fbx(retargeted):
    assimp = shutil.which("assimp")
    if assimp is None:
        pytest.fail("judge missing: assimp (Debian assimp-utils; bash scripts/test.sh installs it)")
    for outputs in retargeted.values():
        result = subprocess.run([assimp, "info", str(outputs[".fbx"]), "-vds"], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
        assert "Animations:         1" in result.stdout.splitlines()


# Blender's importer (and ufbx and assimp against the .glb at first, middle and last frame, with every
# vertex skinned) on every kind of character, RobotExpressive's armature scaled by 100 included:
# tests/test_fbx_blender.py.


# --- FBX characters as retarget targets ------------------------------------------------------------------

@pytest.fixture(scope="module")
def fbx_characters(tmp_path_factory) -> Dict[str, Dict[str, Path]]:
    """FBX characters beside their .glb copies: the original Quaternius FBX (Blender 2.79's exporter,
    Z up turned by its armature node, cm, saved in another pose than its bind pose) and a Mixamo-named
    character exported by Blender's own FBX exporter from the MPFB2 rig."""
    root = tmp_path_factory.mktemp("fbx_characters")
    mixamo = root / "mpfb2_mixamo.fbx"
    report = run_blender("export_fbx.py", RIGS / "mpfb2" / "mpfb2_mixamo.glb", mixamo)
    assert report["bones"] == 52
    return {
        "quaternius": {".fbx": QUATERNIUS_FBX, ".glb": RIGS / "quaternius" / "quaternius_female_dress.glb"},
        "mixamo": {".fbx": mixamo, ".glb": RIGS / "mpfb2" / "mpfb2_mixamo.glb"},
    }


@pytest.fixture(scope="module")
def fbx_target_runs(fbx_characters, tmp_path_factory) -> Dict[str, Dict[str, Path]]:
    """The clip retargeted onto each character: from its .glb copy to .glb, from its .fbx to .glb and to .fbx."""
    root = tmp_path_factory.mktemp("fbx_targets")
    clip = CLIPS / "soma_01_single_text_prompt"
    runs = {}
    for name, character in fbx_characters.items():
        runs[name] = {}
        for label, target, output in (("glb_target", character[".glb"], root / (name + "_from_glb.glb")),
                                      ("fbx_target", character[".fbx"], root / (name + "_from_fbx.glb")),
                                      ("fbx_round_trip", character[".fbx"], root / (name + "_from_fbx.fbx"))):
            result = run_cli("retarget", clip, "--target", target, "-o", output)
            assert result.returncode == 0, result.stderr
            runs[name][label] = output
    return runs


@pytest.mark.parametrize("name", ["quaternius", "mixamo"])
def test_an_fbx_character_retargets_as_its_glb_copy_does(fbx_characters, fbx_target_runs, name):
    from gltf_judge import Glb

    expected_file = Glb(fbx_target_runs[name]["glb_target"])
    written_file = Glb(fbx_target_runs[name]["fbx_target"])
    assert sorted(written_file.joint_names) == sorted(expected_file.joint_names)  # names kept, mixamorig: too
    expected = expected_file.joint_world_positions()
    order = [written_file.joint_names.index(joint) for joint in expected_file.joint_names]
    written = written_file.joint_world_positions()[:, order]
    worst = np.linalg.norm(written - expected, axis=-1).max()
    assert worst < RETARGET_TOLERANCE_M, "{:.3g} m".format(worst)
    # The meshes keep the FBX character's polygons, every triangle of them as ufbx counts them, and a glTF
    # vertex per distinct control point, normal, UV and material slot: at least ufbx's control points, at
    # most its polygon corners (every control point's place: test_fbx_read's skinned vertex test). Meshes
    # without a skin (the bone-shape sphere Blender's exporter adds to the Mixamo rig) are kept too.
    character = ufbx_report(fbx_characters[name][".fbx"])
    for skinned in (True, False):
        meshes = [written_file.gltf.meshes[n.mesh] for n in written_file.gltf.nodes
                  if n.mesh is not None and (n.skin is not None) == skinned]
        theirs = [mesh for mesh in character["meshes"] if mesh["skinned"] == skinned]
        triangles = sum(len(written_file.accessor(p.indices)) // 3 for m in meshes for p in m.primitives)
        assert triangles == sum(mesh["triangles"] for mesh in theirs)
        assert triangles > 0 or (not skinned and name == "quaternius")  # she has no mesh without a skin
        vertices = sum(len(written_file.accessor(p.attributes.POSITION)) for m in meshes for p in m.primitives)
        assert sum(mesh["vertices"] for mesh in theirs) <= vertices <= sum(mesh["corners"] for mesh in theirs)


@pytest.mark.parametrize("name", ["quaternius", "mixamo"])
def test_fbx_character_to_fbx_round_trip_matches_the_glb_path_in_ufbx(fbx_target_runs, name):
    from gltf_judge import Glb

    expected_file = Glb(fbx_target_runs[name]["glb_target"])
    expected = expected_file.joint_world_positions()
    report = ufbx_report(fbx_target_runs[name]["fbx_round_trip"], 30.0)
    written = np.array([report["positions"][joint] for joint in expected_file.joint_names]).transpose(1, 0, 2)
    worst = np.linalg.norm(written - expected, axis=-1).max()
    assert worst < RETARGET_TOLERANCE_M, "{:.3g} m".format(worst)


def test_an_fbx_target_with_a_model_cycle_is_refused_in_one_line(tmp_path):
    nodes = fbx_binary.decode(QUATERNIUS_FBX.read_bytes(), "q.fbx")
    objects = next(n for n in nodes if n.name == "Objects")
    connections = next(n for n in nodes if n.name == "Connections")
    models = [n.properties[0] for n in objects.children if n.name == "Model"]
    parent = {c.properties[1]: c.properties[2] for c in connections.children if c.properties[0] == "OO"}
    child = next(m for m in models if parent.get(m) in models)
    connections.add("C", "OO", fbx_binary.Long(parent[child]), fbx_binary.Long(child))  # parent under its child
    target = tmp_path / "cycle.fbx"
    target.write_bytes(fbx_binary.encode(nodes))
    output = tmp_path / "out.glb"
    result = run_cli("retarget", CLIPS / "soma_01_single_text_prompt", "--target", target, "-o", output)
    assert result.returncode == 1
    assert result.stderr.startswith("{}: ".format(target)) and "cycle" in result.stderr
    assert result.stderr.count("\n") == 1 and not output.exists()


# --- FBX motions read back -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["soma_01", "g1_01_at_60fps", "smplx_dance"])
def test_a_written_fbx_reads_back_as_the_motion_it_holds(converted, name, tmp_path):
    """`convert walk.fbx walk.glb` gives the .glb that `convert CLIP walk.glb` gives (FK of both by numpy)."""
    from gltf_judge import Glb

    case = converted[name]
    direct, back = tmp_path / "direct.glb", tmp_path / "back.glb"
    for source, output in ((case.clip, direct), (case.output, back)):
        result = run_cli("convert", source, output, "--fps", case.fps)
        assert result.returncode == 0, result.stderr
    expected, written = Glb(direct), Glb(back)
    assert written.joint_names == expected.joint_names
    assert np.abs(written.key_times() - expected.key_times()).max() < 1e-6  # the same frames at the same rate
    worst = np.linalg.norm(written.joint_world_positions() - expected.joint_world_positions(), axis=-1).max()
    assert worst < 1e-5, "{:.3g} m".format(worst)


def test_an_fbx_take_too_long_to_sample_is_refused_in_one_line(converted, tmp_path):
    nodes = fbx_binary.decode(converted["soma_01"].output.read_bytes(), "walk.fbx")
    objects = next(n for n in nodes if n.name == "Objects")
    curve = next(n for n in objects.children if n.name == "AnimationCurve")
    curve.find("KeyTime").properties[0][-1] = 10 ** 17  # about 2 million seconds
    source = tmp_path / "walk.fbx"
    source.write_bytes(fbx_binary.encode(nodes))
    result = run_cli("convert", source, tmp_path / "walk.glb")
    assert result.returncode == 1
    assert result.stderr == "{}: the animation runs {} frames, more than 1000000\n".format(
        source, int(round(10 ** 17 * 30 / 46186158000)) + 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["walk.fbx"]


@pytest.mark.parametrize("change", ["repeated", "earlier", "not_a_number"])
def test_an_fbx_motion_whose_key_times_do_not_increase_is_refused_in_one_line(converted, change, tmp_path):
    """As a .glb's are: a key time repeated, one earlier than the one before, or (stored as doubles) NaN,
    which compares false with every time and so passed an 'earlier' test."""
    nodes = fbx_binary.decode(converted["soma_01"].output.read_bytes(), "walk.fbx")
    objects = next(n for n in nodes if n.name == "Objects")
    curve = next(n for n in objects.children if n.name == "AnimationCurve")
    key_time = curve.find("KeyTime")
    times = key_time.properties[0]
    if change == "repeated":
        times[2] = times[1]
    elif change == "earlier":
        times[2] = times[0]
    else:
        key_time.properties[0] = array("d", [float(t) for t in times])
        key_time.properties[0][2] = float("nan")
    source = tmp_path / "walk.fbx"
    source.write_bytes(fbx_binary.encode(nodes))
    for verb in (("convert", source, tmp_path / "walk.glb"), ("inspect", source)):
        result = run_cli(*verb)
        assert result.returncode == 1
        assert result.stderr == "{}: curve {}: its key times are not increasing finite numbers\n".format(
            source, curve.properties[0])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["walk.fbx"]


@pytest.mark.parametrize("option", ["--root-motion=root", "--in-place"])
def test_root_motion_and_in_place_reach_the_fbx_as_the_glb(option, tmp_path):
    from gltf_judge import Glb

    outputs = {}
    for extension in (".glb", ".fbx"):
        outputs[extension] = tmp_path / ("walk" + extension)
        result = run_cli("retarget", CLIPS / "soma_01_single_text_prompt", "--target", "mixamo", option,
                         "-o", outputs[extension])
        assert result.returncode == 0, result.stderr
    glb_file = Glb(outputs[".glb"])
    expected = glb_file.joint_world_positions()
    report = ufbx_report(outputs[".fbx"], 30.0)
    written = np.array([report["positions"][joint] for joint in glb_file.joint_names]).transpose(1, 0, 2)
    worst = np.linalg.norm(written - expected, axis=-1).max()
    assert worst < RETARGET_TOLERANCE_M, "{:.3g} m".format(worst)
    travel = np.linalg.norm(expected[-1, 0, [0, 2]] - expected[0, 0, [0, 2]])
    assert (travel > 1.0) if option.startswith("--root") else (travel < 0.2)  # the option did act


def _png(width: int) -> bytes:
    """A small red PNG (standard library)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\0" + b"\xff\x00\x00" * width for _ in range(width))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, width, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def test_a_textured_character_keeps_its_texture_embedded_in_the_fbx(tmp_path):
    """The MPFB2 rig given UVs and a base colour texture (a PNG beside it): the retargeted .fbx embeds the
    PNG's bytes, and ufbx reads them back from the file."""
    from kimodo_rig.formats import gltf_document as gd

    document = gd.read_file(RIGS / "mpfb2" / "mpfb2_mixamo.glb")
    builder = gd.DocumentBuilder()
    builder.gltf = json.loads(json.dumps(document.gltf))
    builder.binary = bytearray(document.binary)
    gltf = builder.gltf
    for mesh in gltf["meshes"]:
        for primitive in mesh["primitives"]:
            count = gltf["accessors"][primitive["attributes"]["POSITION"]]["count"]
            primitive["attributes"]["TEXCOORD_0"] = builder.add_components([0.25, 0.75] * count, "VEC2")
            primitive["material"] = 0
    gltf["images"] = [{"uri": "skin.png", "name": "skin"}]
    gltf["textures"] = [{"source": 0}]
    gltf["materials"] = [{"name": "skin", "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}]
    image = _png(4)
    (tmp_path / "skin.png").write_bytes(image)
    character = tmp_path / "character.glb"
    character.write_bytes(builder.to_glb())
    output = tmp_path / "walk.fbx"
    result = run_cli("retarget", CLIPS / "soma_01_single_text_prompt", "--target", character, "-o", output)
    assert result.returncode == 0, result.stderr
    report = ufbx_report(output)
    assert [bytes(texture["content"]) for texture in report["textures"]] == [image]


# --- the report of `retarget -o walk.fbx`, measured from the written file ---------------------------------

def _retarget_in_process(output: Path) -> dict:
    """`kimodo-rig retarget` in this process (so a test can plant a writer bug), its --report JSON."""
    from kimodo_rig.cli import main

    clip = NPZ / "soma_01_single_text_prompt" / "motion.npz"
    assert main(["retarget", str(clip), "--target", str(RETARGET_TARGETS["quaternius_female"]), "-o", str(output),
                 "--report", str(output.with_suffix(".json"))]) == 0
    return json.loads(output.with_suffix(".json").read_text())


def _figures_by_ufbx(output: Path) -> dict:
    """The report's numbers as ufbx's own evaluation of the written .fbx gives them (the Quaternius
    character's parts: tests/test_feet_judges.py's DRESS_PARTS), against Kimodo's posed joints."""
    import test_feet_judges as judges

    case = judges.Case("soma_01_single_text_prompt", judges._dress, judges._parts(judges.DRESS_PARTS))
    report = ufbx_report(output, 30.0, "Foot.L,Foot.R")
    points = {name: np.array(track) for name, track in report["positions"].items()}
    source, _ = judges._source(case)
    frames = min(len(source["hips"]), len(points[case.parts["hips"]]))
    arms, legs = [], []
    for s in "lr":
        for a, b in judges.LIMBS:
            want = source[b + "_" + s][:frames] - source[a + "_" + s][:frames]
            have = points[case.parts[b + "_" + s]][:frames] - points[case.parts[a + "_" + s]][:frames]
            (arms if a in judges.ARM_STARTS else legs).append(judges._cosines(want, have).mean())
    hips = points[case.parts["hips"]][:frames]
    floor = min(np.array(report["feet"][foot]["rest"])[:, 1].min() for foot in ("Foot.L", "Foot.R"))
    lowest = min(min(report["feet"][foot]["frames"][:frames]) for foot in ("Foot.L", "Foot.R"))
    return {"scale": report["rest_height"] / judges.REFERENCE_HEIGHT_M, "height_cm": report["rest_height"] * 100.0,
            "pelvis_cm": hips[:, 1].mean() * 100.0, "lowest_toe_cm": (lowest - floor) * 100.0,
            "travelled_cm": np.linalg.norm((hips[-1] - hips[0])[[0, 2]]) * 100.0,
            "arms_match": float(np.mean(arms)), "legs_match": float(np.mean(legs)),
            "duration_s": (len(report["feet"]["Foot.L"]["frames"]) - 1) / 30.0}


def _assert_report_is_ufbx(report: dict, got: dict) -> None:
    """Each number within the tolerance tests/test_feet_judges.py holds reports to (lengths per 1.7 m)."""
    import test_feet_judges as judges

    scale = got["scale"]
    assert report["height_cm"] == pytest.approx(got["height_cm"], rel=judges.HEIGHT_TOLERANCE)
    for key in ("pelvis_cm", "lowest_toe_cm", "travelled_cm"):
        tolerance = judges.TOLERANCE["lowest_toe_cm" if key == "lowest_toe_cm" else key] * scale
        assert report[key] == pytest.approx(got[key], abs=tolerance), key
    for key in ("arms_match", "legs_match"):
        assert report[key] == pytest.approx(got[key], abs=judges.COSINE_TOLERANCE), key
    assert report["duration_s"] == pytest.approx(got["duration_s"], abs=judges.DURATION_TOLERANCE_S)


def _lift_every_translation_key(monkeypatch) -> None:
    """Plant a writer bug: the FBX writer lifts every translation key 30 cm (the scene it writes has no such lift)."""
    write_curve_node = fbx._curve_node

    def lifted(scene, layer_id, model_id, short, prop, times, columns):
        if short == "T":
            columns = [columns[0], [value + 30.0 for value in columns[1]], columns[2]]
        write_curve_node(scene, layer_id, model_id, short, prop, times, columns)

    monkeypatch.setattr(fbx, "_curve_node", lifted)


def test_the_fbx_report_is_what_ufbx_evaluates_in_the_written_file_writer_bugs_included(tmp_path, monkeypatch):
    """The report of `retarget -o walk.fbx` against ufbx's own evaluation of that file; then with the FBX
    writer made to lift every translation key 30 cm (a bug the .glb scene it is written from does not
    have): the report, read from the .fbx, says what ufbx sees in it, not what the retarget meant."""
    good = tmp_path / "good.fbx"
    good_report = _retarget_in_process(good)
    _assert_report_is_ufbx(good_report, _figures_by_ufbx(good))
    _lift_every_translation_key(monkeypatch)
    output = tmp_path / "lifted.fbx"
    report = _retarget_in_process(output)
    got = _figures_by_ufbx(output)
    assert got["pelvis_cm"] - good_report["pelvis_cm"] > 10.0  # the bug is there, in the file
    _assert_report_is_ufbx(report, got)


def test_an_fbx_the_writer_got_wrong_is_measured_and_said_to_be_off_the_retarget(tmp_path, monkeypatch, caplog):
    """`retarget -o walk.fbx` writes no .glb self-check; reading the written .fbx back for the report
    compares its joints with the retarget: nothing said of a good file, and a warning with the distance
    when the FBX writer lifts every translation key 30 cm (the report still measures that file, exit 0)."""
    _retarget_in_process(tmp_path / "good.fbx")
    assert not [r for r in caplog.records if "read back" in r.getMessage()]
    _lift_every_translation_key(monkeypatch)
    _retarget_in_process(tmp_path / "lifted.fbx")
    said = [r.getMessage() for r in caplog.records if "read back" in r.getMessage()]
    assert len(said) == 1, said
    found = re.fullmatch(r"lifted\.fbx: read back, the written file puts a joint (\S+) m from where the retarget has it",
                         said[0])
    assert found and float(found.group(1)) > 0.29, said


def test_meshes_hanging_under_bones_read_back_from_the_fbx_and_its_report_is_the_glbs(tmp_path):
    """RobotExpressive's hands and feet are meshes parented to its bones, without a skin: the .fbx read
    back holds every mesh and vertex the .glb of the same run holds, so its report (the feet measured on
    those meshes) is the .glb's, number for number (read without them: its soles 197 cm under the floor)."""
    from gltf_judge import Glb

    reports, outputs = {}, {}
    for extension in (".glb", ".fbx"):
        outputs[extension] = tmp_path / ("walk" + extension)
        result = run_cli("retarget", NPZ / "soma_01_single_text_prompt" / "motion.npz", "--target",
                         RETARGET_TARGETS["robot"], "-o", outputs[extension], "--report", tmp_path / (extension[1:] + ".json"))
        assert result.returncode == 0, result.stderr
        reports[extension] = json.loads((tmp_path / (extension[1:] + ".json")).read_text())
    glb_file = Glb(outputs[".glb"])
    read = fbx.read_motion_document(outputs[".fbx"], fps=30.0)
    glb_counts = sorted(len(glb_file.accessor(p.attributes.POSITION)) for m in glb_file.gltf.meshes for p in m.primitives)
    fbx_counts = sorted(len(read.accessor(p["attributes"]["POSITION"])) for m in read.gltf["meshes"] for p in m["primitives"])
    assert fbx_counts == glb_counts and len(glb_counts) == 19
    assert reports[".fbx"] == reports[".glb"]
