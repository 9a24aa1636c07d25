"""Characters whose meshes are Draco-compressed (KHR_draco_mesh_compression, as web avatars often come;
tests/data/rigs/draco). kimodo-rig runs on the standard library and does not decode Draco. Its accessors
hold no data, so they read as zeros: the retarget found no sole and stood the character on its joints
while the report said nothing of it. Now one warning line says so, the feet stand on their joints exactly
as on the same skeleton without a mesh, and the written file keeps the compressed character."""
from __future__ import annotations

import json
import struct

import numpy as np
import pygltflib

from conftest import NPZ, RIGS, run_cli, validate_gltf
from gltf_judge import Glb

DRACO_RIG = RIGS / "draco" / "mannequin_draco.glb"
PLAIN = RIGS / "mpfb2" / "mpfb2_game_engine.glb"
CLIP = NPZ / "soma_01_single_text_prompt" / "motion.npz"


def _json(path):
    data = path.read_bytes()
    return json.loads(data[20:20 + struct.unpack_from("<I", data, 12)[0]])


def test_a_draco_character_gets_one_warning_and_stands_on_its_joints(tmp_path):
    out = tmp_path / "draco_out.glb"
    result = run_cli("retarget", CLIP, "--target", DRACO_RIG, "-o", out)
    assert result.returncode == 0
    warnings = [line for line in result.stderr.splitlines() if line.strip()]
    assert warnings == ["warning: {}: mesh body is Draco-compressed (KHR_draco_mesh_compression), which kimodo-rig does "
                        "not decode: feet no other mesh carries stand on their joints, not their soles, and may float or "
                        "sink by the sole's depth; export the character without Draco compression to stand it on its "
                        "soles".format(DRACO_RIG)], result.stderr
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
