"""Characters whose meshes are Draco-compressed (KHR_draco_mesh_compression, as web avatars often come;
tests/data/rigs/draco). With the optional extra (`pip install ".[draco]"`: DracoPy, which CI installs) the
meshes are decoded and the character stands on its soles as the uncompressed one does. Without it the
accessors hold no data and read as zeros: one warning line says so, the feet stand on their joints exactly
as on the same skeleton without a mesh, and the report says its floor figures come from the joints. Either
way the written file keeps the compressed character."""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import numpy as np
import pygltflib
import pytest

from conftest import NPZ, RIGS, ROOT, run_cli, validate_gltf
from gltf_judge import Glb

DRACO_RIG = RIGS / "draco" / "mannequin_draco.glb"
PLAIN = RIGS / "mpfb2" / "mpfb2_game_engine.glb"
CLIP = NPZ / "soma_01_single_text_prompt" / "motion.npz"


def _json(path):
    data = path.read_bytes()
    return json.loads(data[20:20 + struct.unpack_from("<I", data, 12)[0]])


def _without_dracopy(tmp_path, *args):
    """The command line where `import DracoPy` fails (a module of that name first on the path raises
    ImportError), as on an installation without the extra."""
    shim = tmp_path / "no_dracopy"
    shim.mkdir()
    (shim / "DracoPy.py").write_text("raise ImportError('DracoPy is not installed here')\n", encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(shim), str(ROOT))))
    return subprocess.run([sys.executable, "-m", "kimodo_rig"] + [str(a) for a in args], capture_output=True, text=True,
                          env=env)


# Draco quantizes positions (glTF-Transform's default: 14 bits over the mesh's bounds, 1.66 m here: 0.1 mm a
# step): the decoded soles lie within half a step of the uncompressed ones, and the joints the retarget
# stands on them within a few steps.
SOLE_TOLERANCE_M = 1e-4
JOINT_TOLERANCE_M = 5e-4


def _foot_points(gltf_path):
    """Per foot, the lowest skinned vertex at bind carried at least half by the foot's bones, by numpy
    (pygltflib reads the uncompressed file; DracoPy decodes the compressed one here, independently of
    kimodo_rig's reader)."""
    import DracoPy

    gltf = pygltflib.GLTF2().load(str(gltf_path))
    blob = gltf.binary_blob()
    primitive = gltf.meshes[0].primitives[0]
    names = [gltf.nodes[j].name for j in gltf.skins[0].joints]
    draco = (primitive.extensions or {}).get("KHR_draco_mesh_compression")
    if draco:
        view = gltf.bufferViews[draco["bufferView"]]
        mesh = DracoPy.decode(blob[view.byteOffset or 0:(view.byteOffset or 0) + view.byteLength])
        ids = draco["attributes"]
        positions, joints, weights = (mesh.get_attribute_by_unique_id(ids[k])["data"] for k in ("POSITION", "JOINTS_0", "WEIGHTS_0"))
    else:
        def read(index, dtype, width):
            accessor = gltf.accessors[index]
            view = gltf.bufferViews[accessor.bufferView]
            start = (view.byteOffset or 0) + (accessor.byteOffset or 0)
            return np.frombuffer(blob, dtype, accessor.count * width, start).reshape(-1, width)
        attributes = primitive.attributes
        positions, joints, weights = read(attributes.POSITION, np.float32, 3), read(attributes.JOINTS_0, np.uint8, 4), \
            read(attributes.WEIGHTS_0, np.float32, 4)
    lowest = {}
    for side in "lr":
        bones = [k for k, name in enumerate(names) if name in ("foot_" + side, "ball_" + side)]
        share = (weights * np.isin(joints, bones)).sum(axis=1)
        lowest[side] = positions[share >= 0.5][:, 1].min()  # the mesh sits at the bind pose: the skin's frame is the scene's
    return lowest


def test_with_the_extra_a_draco_character_stands_on_its_soles(tmp_path):
    """The decoded mannequin retargets as the uncompressed one: no warning, the same soles, the same motion,
    the report's floor figures measured on the skinned mesh."""
    assert _foot_points(DRACO_RIG) == {s: pytest.approx(v, abs=SOLE_TOLERANCE_M) for s, v in _foot_points(PLAIN).items()}
    outputs = {}
    for name, rig in (("draco", DRACO_RIG), ("plain", PLAIN)):
        out = tmp_path / (name + ".glb")
        result = run_cli("retarget", CLIP, "--target", rig, "-o", out, "--report", out.with_suffix(".json"))
        assert result.returncode == 0 and result.stderr == "", result.stderr
        outputs[name] = (Glb(out), json.loads(out.with_suffix(".json").read_text()))
    (a, report), (b, plain_report) = outputs["draco"], outputs["plain"]
    wa, wb = a.animated_world_matrices(), b.animated_world_matrices()
    names_a, names_b = [n.name for n in a.gltf.nodes], [n.name for n in b.gltf.nodes]
    for name in ("pelvis", "foot_l", "ball_r", "hand_l"):
        assert np.abs(wa[:, names_a.index(name), :3, 3] - wb[:, names_b.index(name), :3, 3]).max() < JOINT_TOLERANCE_M, name
    assert report["feet_measured_at"] == plain_report["feet_measured_at"] == "skinned mesh" and report["notes"] == []
    for key in ("lowest_toe_cm", "planted_sole_cm", "height_cm"):
        assert report[key] == pytest.approx(plain_report[key], abs=100 * JOINT_TOLERANCE_M), key
    assert "KHR_draco_mesh_compression" in _json(tmp_path / "draco.glb").get("extensionsRequired", [])


def test_a_draco_character_gets_one_warning_and_stands_on_its_joints(tmp_path):
    out = tmp_path / "draco_out.glb"
    result = _without_dracopy(tmp_path, "retarget", CLIP, "--target", DRACO_RIG, "-o", out, "--report", out.with_suffix(".json"))
    assert result.returncode == 0
    warnings = [line for line in result.stderr.splitlines() if line.strip()]
    assert warnings == ["warning: {}: mesh body is Draco-compressed (KHR_draco_mesh_compression) and the Draco decoder "
                        "is not installed: feet no other mesh carries stand on their joints, not their soles, and may "
                        "float or sink by the sole's depth; install it (pip install \"kimodo-rig[draco]\") or export the "
                        "character without Draco compression to stand it on its soles".format(DRACO_RIG)], result.stderr
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["feet_measured_at"] == "joints"
    assert report["notes"] == ["the mesh is Draco-compressed and the Draco decoder is not installed (pip install "
                               "\"kimodo-rig[draco]\"): the floor measured at the foot joints, not the soles"]
    # The same skeleton with no mesh at all (pygltflib: the mesh node dropped) moves the same way: the
    # compressed vertices, read as zeros, placed nothing.
    bare = pygltflib.GLTF2().load(str(PLAIN))
    for node in bare.nodes:
        node.mesh = None
    bare_rig = tmp_path / "bare.glb"
    bare.save_binary(str(bare_rig))
    bare_out = tmp_path / "bare_out.glb"
    assert run_cli("retarget", CLIP, "--target", bare_rig, "-o", bare_out).returncode == 0
    a, b = Glb(out), Glb(bare_out)
    wa, wb = a.animated_world_matrices(), b.animated_world_matrices()
    names_a, names_b = [n.name for n in a.gltf.nodes], [n.name for n in b.gltf.nodes]
    for name in ("pelvis", "foot_l", "ball_r", "hand_l"):
        assert np.abs(wa[:, names_a.index(name), :3, 3] - wb[:, names_b.index(name), :3, 3]).max() < 1e-5, name
    # The written file is the compressed character with the new animation, and valid.
    written = _json(out)
    assert "KHR_draco_mesh_compression" in written.get("extensionsRequired", [])
    assert all("KHR_draco_mesh_compression" in p.get("extensions", {}) for m in written["meshes"] for p in m["primitives"])
    assert validate_gltf(out)[out.name]["numErrors"] == 0
