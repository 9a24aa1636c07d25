"""`.gltf` characters as people save them (issue 39, item 4): the JSON with its `.bin` and textures in
folders beside it (Blender's "glTF Separate", pygltflib). Relative URIs, percent-decoded, that resolve
inside the file's folder are read; any other URI (leaving the folder by `..` or a symlink, an absolute
path, file://, http://) is refused in one line naming the file and the URI, exit 1, nothing written."""
from __future__ import annotations

import json
import os
import struct
import zlib
from pathlib import Path

import numpy as np
import pygltflib
import pytest

from conftest import NPZ, RIGS, run_cli, validate_gltf
from gltf_judge import Glb

MANNEQUIN = RIGS / "mpfb2" / "mpfb2_game_engine.glb"
CLIP = NPZ / "soma_03_full_body_keyframes" / "motion.npz"


def _chunks(path: Path):
    data = path.read_bytes()
    length = struct.unpack_from("<I", data, 12)[0]
    gltf = json.loads(data[20:20 + length])
    binary = data[20 + length + 8:]
    return gltf, bytearray(binary[:gltf["buffers"][0]["byteLength"]])


def _png() -> bytes:
    """A 2x2 RGB PNG, written by hand."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    rows = b"".join(b"\x00" + bytes([200, 150, 120] * 2) for _ in range(2))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


PNG = _png()


def _textured():
    """The mannequin's JSON and binary with texture coordinates, a material and one image (not yet placed)."""
    gltf, binary = _chunks(MANNEQUIN)
    primitive = gltf["meshes"][0]["primitives"][0]
    count = gltf["accessors"][primitive["attributes"]["POSITION"]]["count"]
    while len(binary) % 4:
        binary.append(0)
    gltf["bufferViews"].append({"buffer": 0, "byteOffset": len(binary), "byteLength": 8 * count, "target": 34962})
    binary += np.zeros((count, 2), np.float32).tobytes()
    gltf["accessors"].append({"bufferView": len(gltf["bufferViews"]) - 1, "componentType": 5126, "count": count, "type": "VEC2"})
    primitive["attributes"]["TEXCOORD_0"] = len(gltf["accessors"]) - 1
    primitive["material"] = 0
    gltf["materials"] = [{"name": "skin", "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}]
    gltf["textures"] = [{"source": 0}]
    return gltf, binary


def _glb(gltf: dict, binary: bytes, path: Path) -> Path:
    gltf = dict(gltf, buffers=[{"byteLength": len(binary)}])
    text = json.dumps(gltf).encode("utf-8")
    text += b" " * (-len(text) % 4)
    binary = bytes(binary) + b"\x00" * (-len(binary) % 4)
    path.write_bytes(struct.pack("<III", 0x46546C67, 2, 28 + len(text) + len(binary)) + struct.pack("<II", len(text), 0x4E4F534A)
                     + text + struct.pack("<II", len(binary), 0x004E4942) + binary)
    return path


def _separate(folder: Path, buffer_uri: str = "parts/mannequin%20body.bin", image_uri: str = "textures/skin%20tone.png") -> Path:
    """The textured mannequin as a .gltf in `folder` with its binary and its texture in folders beside it,
    under names with a space (percent-encoded in the URIs, as the glTF spec has them)."""
    gltf, binary = _textured()
    (folder / "parts").mkdir(parents=True)
    (folder / "textures").mkdir()
    (folder / "parts" / "mannequin body.bin").write_bytes(bytes(binary))
    (folder / "textures" / "skin tone.png").write_bytes(PNG)
    gltf["buffers"] = [{"uri": buffer_uri, "byteLength": len(binary)}]
    gltf["images"] = [{"uri": image_uri}]
    path = folder / "mannequin.gltf"
    path.write_text(json.dumps(gltf, indent=1), encoding="utf-8")
    return path


def test_a_gltf_with_its_bin_and_textures_beside_it_retargets_as_the_glb(tmp_path):
    rig = _separate(tmp_path / "character")
    gltf, binary = _textured()  # the same character as one .glb, its texture a buffer view
    while len(binary) % 8:
        binary.append(0)
    gltf["bufferViews"].append({"buffer": 0, "byteOffset": len(binary), "byteLength": len(PNG)})
    binary += PNG
    gltf["images"] = [{"bufferView": len(gltf["bufferViews"]) - 1, "mimeType": "image/png"}]
    reference = _glb(gltf, binary, tmp_path / "mannequin.glb")
    before = {p: p.read_bytes() for p in (tmp_path / "character").rglob("*") if p.is_file()}
    outputs = []
    for target in (rig, reference):
        out = tmp_path / (target.suffix[1:] + "_out.glb")
        result = run_cli("retarget", CLIP, "--target", target, "-o", out)
        assert result.returncode == 0 and result.stderr == "", result.stderr
        outputs.append(out)
    a, b = Glb(outputs[0]), Glb(outputs[1])
    assert [n.name for n in a.gltf.nodes] == [n.name for n in b.gltf.nodes]
    assert np.abs(a.animated_world_matrices() - b.animated_world_matrices()).max() < 1e-6
    # The output carries the texture itself (nothing points back at the user's folder), and validates.
    written = pygltflib.GLTF2().load(str(outputs[0]))
    image = written.images[0]
    assert image.uri is None and image.mimeType == "image/png"
    view = written.bufferViews[image.bufferView]
    assert written.binary_blob()[view.byteOffset:view.byteOffset + view.byteLength] == PNG
    assert all(buffer.uri is None for buffer in written.buffers)
    assert validate_gltf(outputs[0])[outputs[0].name]["numErrors"] == 0
    assert {p: p.read_bytes() for p in (tmp_path / "character").rglob("*") if p.is_file()} == before  # inputs untouched


@pytest.mark.parametrize("where, uri, why", [
    ("buffers[0]", "../outside.bin", "leaves the .gltf's folder; only files inside it are read"),
    ("buffers[0]", "parts/..%2F..%2Foutside.bin", "leaves the .gltf's folder; only files inside it are read"),
    ("buffers[0]", "escape.bin", "leaves the .gltf's folder; only files inside it are read"),  # a symlink out of it
    ("buffers[0]", "{outside}", "is an absolute path; only files in the .gltf's folder are read"),
    ("buffers[0]", "file://{outside}", "is a file: address; only files in the .gltf's folder are read"),
    ("buffers[0]", "https://example.com/mannequin.bin", "is a https: address; only files in the .gltf's folder are read"),
    ("images[0]", "../skin.png", "leaves the .gltf's folder; only files inside it are read"),
])
def test_a_uri_leaving_the_folder_is_refused_in_one_line(tmp_path, where, uri, why):
    outside = tmp_path / "outside.bin"
    _, binary = _textured()
    outside.write_bytes(bytes(binary))  # a file that would read as the character: refused all the same
    (tmp_path / "skin.png").write_bytes(PNG)
    folder = tmp_path / "character"
    uri = uri.format(outside=outside)
    rig = _separate(folder, **({"buffer_uri": uri} if where.startswith("buffers") else {"image_uri": uri}))
    os.symlink(outside, folder / "escape.bin")
    out_folder = tmp_path / "out"
    out_folder.mkdir()
    out = out_folder / "walk.glb"
    result = run_cli("retarget", CLIP, "--target", rig, "-o", out)
    assert result.returncode == 1
    assert result.stderr.splitlines() == ["{}: {} URI {!r} {}".format(rig, where, uri, why)], result.stderr
    assert list(out_folder.iterdir()) == []


def test_a_missing_bin_is_named_with_its_uri(tmp_path):
    rig = _separate(tmp_path / "character")
    (tmp_path / "character" / "parts" / "mannequin body.bin").unlink()
    result = run_cli("retarget", CLIP, "--target", rig, "-o", tmp_path / "walk.glb")
    assert result.returncode == 1
    assert result.stderr.splitlines() == ["{}: buffers[0] URI 'parts/mannequin%20body.bin': no such file".format(rig)]
