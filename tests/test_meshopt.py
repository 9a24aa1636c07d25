"""Characters compressed with EXT_meshopt_compression, as web characters often come (gltfpack -c: vertex
data, the skin's inverse bind matrices and the faces in compressed streams, the mesh's dequantization
baked into the inverse bind matrices; EXT_meshopt_compression's version 0 streams and
KHR_meshopt_compression's version 1; tests/data/rigs/meshopt). kimodo-rig refused them ("only the GLB's
own binary buffer is supported"). Judged against the uncompressed mannequin they were made from: its bind
mesh read by pygltflib + numpy, its retarget, and three.js (GLTFLoader with three's own meshopt decoder)
skinning the written file."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import struct

import numpy as np
import pygltflib
import pytest

from conftest import NPZ, RIGS, ROOT, node_modules, run_cli, validate_gltf
from feet_judge import judge_case
from gltf_judge import Glb
from kimodo_rig.retarget import character

PLAIN = RIGS / "mpfb2" / "mpfb2_game_engine.glb"
PACKED = {"meshopt": RIGS / "meshopt" / "mannequin_meshopt.glb",
          "filters": RIGS / "meshopt" / "mannequin_meshopt_filters.glb",  # + exponential and octahedral filters
          "khr": RIGS / "meshopt" / "mannequin_khr.glb",  # KHR_meshopt_compression: version 1 streams
          "khr_filters": RIGS / "meshopt" / "mannequin_khr_filters.glb"}  # + rotated 4-byte XOR channels
# Quantized alone (no meshopt): the inverse bind matrices carry the dequantization all the same.
READ_AS_MADE = dict(PACKED, quantized=RIGS / "meshopt" / "mannequin_quantized.glb")
CLIP = NPZ / "soma_01_single_text_prompt" / "motion.npz"
QUANTUM_M = 3e-4  # gltfpack's 14-bit positions on a 1.7 m character: 0.1 mm steps


def _plain_vertices() -> np.ndarray:
    """The uncompressed mannequin's vertices by pygltflib + numpy: saved at bind, its mesh in bind space."""
    gltf = pygltflib.GLTF2().load(str(PLAIN))
    blob = gltf.binary_blob()
    out = []
    for mesh in gltf.meshes:
        for primitive in mesh.primitives:
            accessor = gltf.accessors[primitive.attributes.POSITION]
            view = gltf.bufferViews[accessor.bufferView]
            start = (view.byteOffset or 0) + (accessor.byteOffset or 0)
            out.append(np.frombuffer(blob, np.float32, accessor.count * 3, start).reshape(-1, 3))
    return np.concatenate(out).astype(np.float64)


@pytest.mark.parametrize("kind", list(PACKED))
def test_every_stream_decodes_as_three_js_s_own_decoder_decodes_it(kind):
    """Every attribute stream of the file (vertex data, inverse bind matrices), filters applied, against
    three's meshopt decoder (tests/node/meshopt_views.mjs): the same bytes, where a filter rounds (the
    extension allows one unit in the last place) the same 16-bit values within 1."""
    from kimodo_rig.formats import meshopt

    node = subprocess.run(["node", str(ROOT / "tests" / "node" / "meshopt_views.mjs"), str(PACKED[kind])],
                          capture_output=True, text=True, env=dict(os.environ, KIMODO_NODE_MODULES=str(node_modules())))
    assert node.returncode == 0, node.stderr[-3000:]
    theirs = json.loads(node.stdout)
    data = PACKED[kind].read_bytes()
    length = struct.unpack_from("<I", data, 12)[0]
    gltf, binary = json.loads(data[20:20 + length]), data[20 + length + 8:]
    checked = 0
    for index, view in enumerate(gltf["bufferViews"]):
        stream = next(iter(view.get("extensions", {}).values()), None)
        if stream is None or stream["mode"] != "ATTRIBUTES":
            continue
        start = stream.get("byteOffset", 0)
        raw = meshopt.decode_attributes(binary[start:start + stream["byteLength"]], stream["count"], stream["byteStride"])
        ours = meshopt.apply_filter(raw, stream["count"], stream["byteStride"], stream.get("filter", "NONE"))
        reference = bytes.fromhex(theirs[str(index)])
        if stream.get("filter", "NONE") in ("NONE", "EXPONENTIAL"):
            assert ours == reference, index
        else:
            a, b = (np.frombuffer(x, np.int8 if stream["byteStride"] == 4 else np.int16).astype(int) for x in (ours, reference))
            assert np.abs(a - b).max() <= 1, index
        checked += 1
    assert checked == len(theirs) >= 5


@pytest.mark.parametrize("kind", list(READ_AS_MADE))
def test_a_compressed_character_s_bind_mesh_is_the_one_it_was_made_from(kind):
    """Every vertex decoded (streams, filters, the dequantization in the inverse bind matrices) lies
    where the uncompressed file has one, within gltfpack's quantization, and each foot carries as many."""
    packed = character.bind_mesh(character.load_target(str(READ_AS_MADE[kind])))
    plain = _plain_vertices()
    ours = np.array([p for p, _ in packed])
    assert ours.shape == plain.shape
    nearest = np.sqrt(((ours[:, None, :] - plain[None, :, :]) ** 2).sum(-1)).min(1)
    assert nearest.max() < QUANTUM_M, nearest.max()
    plain_weights = character.bind_mesh(character.load_target(str(PLAIN)))
    for foot in ("foot_l", "ball_r"):
        assert sum(w.get(foot, 0.0) >= 0.5 for _, w in packed) == sum(w.get(foot, 0.0) >= 0.5 for _, w in plain_weights) > 0


@pytest.fixture(scope="module")
def retargeted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("meshopt")
    outputs = {}
    for kind, rig in dict(READ_AS_MADE, plain=PLAIN).items():
        out = folder / (kind + ".glb")
        result = run_cli("retarget", CLIP, "--target", rig, "-o", out, "--report", out.with_suffix(".json"))
        assert result.returncode == 0 and not result.stderr.strip(), result.stderr
        outputs[kind] = out
    return outputs


@pytest.mark.parametrize("kind", list(READ_AS_MADE))
def test_a_compressed_character_retargets_as_the_one_it_was_made_from(retargeted, kind):
    """The written file is valid (Khronos glTF Validator, no errors), its joints move as the uncompressed
    mannequin's do (pygltflib FK, within 0.5 mm in every frame) and its report says what that one's says."""
    out = retargeted[kind]
    assert validate_gltf(out)[out.name]["numErrors"] == 0
    packed, plain = Glb(out), Glb(retargeted["plain"])
    a, b = packed.animated_world_matrices(), plain.animated_world_matrices()
    names_a = [n.name for n in packed.gltf.nodes]
    names_b = [n.name for n in plain.gltf.nodes]
    for name in ("pelvis", "foot_l", "ball_r", "hand_l", "head"):
        assert np.abs(a[:, names_a.index(name), :3, 3] - b[:, names_b.index(name), :3, 3]).max() < 5e-4, name
    ours, theirs = (json.loads(p.with_suffix(".json").read_text()) for p in (out, retargeted["plain"]))
    for key in ("lowest_toe_cm", "planted_sole_cm", "foot_skate_cm_per_frame", "legs_match", "arms_match", "facing"):
        assert ours[key] == pytest.approx(theirs[key], abs=0.05) if isinstance(ours[key], float) else ours[key] == theirs[key], key


def test_three_js_sees_the_compressed_character_s_feet_where_numpy_sees_the_plain_one_s(retargeted, tmp_path):
    """three.js (GLTFLoader, three's meshopt decoder, SkinnedMesh) skins the written meshopt file; each
    foot's lowest point in every frame is where numpy puts the uncompressed output's, within 0.5 mm."""
    frames = int(np.load(CLIP)["posed_joints"].shape[0])
    common = {"fps": 30.0, "frames": frames, "feet": {"l": "foot_l", "r": "foot_r"}, "toes": {"l": "ball_l", "r": "ball_r"},
              "forward": [0.0, 0.0, 1.0], "points": ["pelvis", "foot_l", "foot_r"], "carried": {},
              "hands": {"l": "hand_l", "r": "hand_r"}}
    spec = [dict(common, name="meshopt", output=str(retargeted["meshopt"]), rig=str(PACKED["meshopt"]))]
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(spec), encoding="utf-8")
    node = subprocess.run(["node", str(ROOT / "tests" / "node" / "feet_judge.mjs"), str(spec_file), str(tmp_path / "three.json")],
                          capture_output=True, text=True, env=dict(os.environ, KIMODO_NODE_MODULES=str(node_modules())))
    assert node.returncode == 0, node.stderr[-3000:]
    three = json.loads((tmp_path / "three.json").read_text())
    assert three["messages"] == []
    seen = three["cases"]["meshopt"]
    plain = judge_case(dict(common, name="plain", output=str(retargeted["plain"]), rig=str(PLAIN)))
    for side in "lr":
        lowest = np.subtract(seen["output"]["lowest"][side], plain["output"]["lowest"][side])
        assert len(lowest) == frames and np.abs(lowest).max() < 5e-4, side


def test_a_broken_meshopt_stream_is_one_line_naming_the_file(tmp_path):
    """A stream of no version there is (here: its header byte changed to 0xa2): one line naming the file
    and the buffer view, exit 1, nothing written."""
    rig = tmp_path / "broken.glb"
    shutil.copy(PACKED["meshopt"], rig)
    data = bytearray(rig.read_bytes())
    length = struct.unpack_from("<I", data, 12)[0]
    gltf = json.loads(data[20:20 + length])
    skin_view = gltf["accessors"][gltf["skins"][0]["inverseBindMatrices"]]["bufferView"]
    at = 20 + length + 8 + gltf["bufferViews"][skin_view]["extensions"]["EXT_meshopt_compression"].get("byteOffset", 0)
    assert data[at] == 0xA0
    data[at] = 0xA2
    rig.write_bytes(bytes(data))
    out = tmp_path / "out.glb"
    result = run_cli("retarget", CLIP, "--target", rig, "-o", out)
    assert result.returncode == 1 and not out.exists() and not list(tmp_path.glob("*.tmp*"))
    assert result.stderr.strip().splitlines() == [
        "{}: buffer view {}'s meshopt stream: not an attribute stream of version 0 or 1 (header 0xa2)".format(rig, skin_view)]


@pytest.mark.parametrize("kind", list(PACKED))
def test_damaged_meshopt_streams_read_or_fail_in_one_line(tmp_path, kind):
    """Bytes of the compressed streams changed at random (200 files per kind, a fixed seed): reading the character
    and its soles either works or stops with kimodo-rig's one-line error, never another exception."""
    from kimodo_rig.errors import KimodoError

    data = PACKED[kind].read_bytes()
    length = struct.unpack_from("<I", data, 12)[0]
    start, end = 20 + length + 8, len(data)
    rng = np.random.default_rng(8)
    refused = 0
    for k in range(200):
        damaged = bytearray(data)
        for at in rng.integers(start, end, size=int(rng.integers(1, 12))):
            damaged[at] = int(rng.integers(0, 256))
        rig = tmp_path / "damaged.glb"
        rig.write_bytes(bytes(damaged))
        try:
            character.bind_mesh(character.load_target(str(rig)))
        except KimodoError as error:
            assert "\n" not in str(error) and str(rig) in str(error), str(error)
            refused += 1
    assert refused > 0  # the damage is seen, not read as some other character


@pytest.mark.parametrize("version", [0, 1])
def test_long_random_streams_decode_as_three_js_s_own_decoder_decodes_them(tmp_path, version):
    """The decoder works a byte position and a channel at a time (bytes.translate, map, accumulate): on
    streams of every group size, sentinel, control and channel mode (tests/meshopt_streams.py), some
    blocks long, it gives three's decoder's bytes (tests/node/meshopt_views.mjs)."""
    from kimodo_rig.formats import meshopt
    from meshopt_streams import random_stream

    extension = ("EXT_meshopt_compression", "KHR_meshopt_compression")[version]
    streams, views, binary = [], [], b""
    for k, (count, stride) in enumerate([(5000, 16), (3001, 4), (1000, 64), (257, 12), (17, 256)]):
        stream = random_stream(count, stride, version, seed=k)
        views.append({"buffer": 1, "byteLength": count * stride, "extensions": {extension: {
            "buffer": 0, "byteOffset": len(binary), "byteLength": len(stream), "byteStride": stride,
            "count": count, "mode": "ATTRIBUTES"}}})
        streams.append((stream, count, stride))
        binary += stream + b"\0" * (-len(stream) % 4)
    gltf = {"asset": {"version": "2.0"}, "extensionsUsed": [extension], "buffers": [{"byteLength": len(binary)}, {"byteLength": 0}],
            "bufferViews": views}
    text = json.dumps(gltf).encode("utf-8")
    text += b" " * (-len(text) % 4)
    path = tmp_path / "streams.glb"
    path.write_bytes(struct.pack("<III", 0x46546C67, 2, 28 + len(text) + len(binary)) + struct.pack("<II", len(text), 0x4E4F534A)
                     + text + struct.pack("<II", len(binary), 0x004E4942) + binary)
    node = subprocess.run(["node", str(ROOT / "tests" / "node" / "meshopt_views.mjs"), str(path)],
                          capture_output=True, text=True, env=dict(os.environ, KIMODO_NODE_MODULES=str(node_modules())))
    assert node.returncode == 0, node.stderr[-3000:]
    theirs = json.loads(node.stdout)
    assert len(theirs) == len(streams)
    for index, (stream, count, stride) in enumerate(streams):
        assert meshopt.decode_attributes(stream, count, stride) == bytes.fromhex(theirs[str(index)]), index
