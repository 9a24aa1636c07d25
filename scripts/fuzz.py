"""Fuzz every reader and command with the shared test files, mutated in seeded, repeatable ways.

    python3 scripts/fuzz.py --cases 3000 --seed 1       # the test suite runs a few thousand
    python3 scripts/fuzz.py --cases 200000 --seed 7 --keep fuzz-failures

Standard library only (it imports kimodo_rig from this checkout). Seeds are cut from tests/data to a
few frames: Kimodo's SOMA BVH, the CMU BVH, both Kimodo NPZ layouts (also re-zipped deflate, bzip2 and
lzma), an AMASS NPZ, the G1 CSV, a motion .glb, .gltf and .fbx, the MPFB2 rig (.glb, and as .fbx), a raw
clip and a meta.json.
Each case mutates one seed (bytes, text, numbers, glTF JSON, .npy headers, zip fields) and runs a
command on it in-process: inspect, convert to .glb or .bvh, or (rig and .gltf) retarget onto it. The first
cases are files that are not files: a symlink to /dev/zero and a FIFO for every extension.

The newer surfaces have seeds of their own: Kimodo's constraints.json and an Animotive request (extracted
from the clip; checked, checked against a motion, converted, or extract run with hostile options), a `--map`
file (`map --json` of the MPFB2 rig; retarget and preview with it), the MPFB2 mannequin with a VRM 0.x or
1.0 humanoid table (map, retarget, preview), the mannequin with a hostile skin, trim/join/loop with hostile
option values, and outputs pointed where data already is (a raw clip into a folder of other files, into
the input's own folder or one holding it; -o at a folder, --outdir at a file).

A case passes when the command exits 0, or exits 1 with one stderr line of at most a few hundred
characters and changes nothing (`constraints check` may list several problems, a line each; argparse may
refuse an option's value with its usage and one error line, exit 2). Every case runs in a folder of its
own (the input, a sound clip, the output folder, a bystander's file, the temporary folder the command
sees, and the current folder): whatever the exit, nothing in it may be written, changed or deleted but the
outputs the case declares, and the inputs must keep their bytes. A case fails on any other exception, more
than --case-seconds of CPU time, MemoryError under the worker's address-space cap (--memory-mb), or no
answer within --hang-seconds (the worker is killed and restarted after that case). Case N is reproducible
alone: --seed S --only N.
"""
from __future__ import annotations

import argparse
import base64
import contextlib
import io
import json
import logging
import os
import random
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
sys.path.insert(0, str(ROOT))

FRAMES = 4
MAX_LINE = 500  # "at most a few hundred characters" (issue 9); the fuzzer's own figure, not the package's
NUMBERS = ["0", "-0", "1e-320", "1e-300", "1e308", "-1e308", "1e154", "3.5e38", "nan", "inf", "-inf",
           "99999999999", "4294967296", "-1", "10000", "1e4", "0.0001", "100.5", "²", "\u0663", "1_0", "0x10",
           "", "1e", ".", "\xb3"]
JSON_VALUES = [-1, 0, 1, 2, 3, 2 ** 31, 2 ** 32, 10 ** 12, 65536, 1e308, -0.5, 1e-320, "x", "", None, True,
               [], {}, [0], [0.0, 0.0, 0.0, 0.0], [1e308, 0, 0], "SCALAR", "MAT4", 5126, 5121]
DESCRS = ["<U4", "<U1", "|O", "<f2", ">f8", ">f4", "<i8", "<u2", "|b1", "<c8", "<M8", "|S4", "|V8", "=f4",
          [("a", "<f4")], 7, "", "<f3", "<U0", "<U99999999999"]
INTS = [0, 1, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 65536, 10 ** 9, 12, 14, 99]
FLOATS = [0.0, -0.0, 1e-320, 1e-45, 1e4, 1e30, 3.4e38, float("nan"), float("inf"), -1.0, 0.5, 2.0]


# ---------------------------------------------------------------------------------------------- seeds

def _cut_bvh(path: Path) -> bytes:
    lines = path.read_text(encoding="utf-8").splitlines()
    motion = next(i for i, line in enumerate(lines) if line.strip().upper() == "MOTION")
    lines[motion + 1] = "Frames: {}".format(FRAMES)
    return ("\n".join(lines[:motion + 3 + FRAMES]) + "\n").encode("utf-8")


def _cut_npz(path: Path, method: int = zipfile.ZIP_STORED) -> bytes:
    from kimodo_rig.formats import npy

    arrays = []
    for name, value in npy.read_npz(path).items():
        shape = value.shape
        if shape and shape[0] > FRAMES:
            per_frame = len(value.values) // shape[0]
            value = npy.NpyArray(value.dtype, (FRAMES,) + shape[1:], value.values[:FRAMES * per_frame])
        arrays.append((name, value))
    data = npy.npz_bytes(arrays)
    return _rezip(data, method) if method != zipfile.ZIP_STORED else data


def _rezip(data: bytes, method: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", compression=method) as target:
        for info in source.infolist():
            target.writestr(info.filename, source.read(info))
    return out.getvalue()


def _amass() -> bytes:
    from kimodo_rig import skeletons
    from kimodo_rig.formats import amass
    from kimodo_rig.model import Motion
    from array import array

    rng = random.Random(20261201)
    skeleton = skeletons.load("smplx22")
    rotations = array("d")
    for _ in range(FRAMES * skeleton.joint_count):
        q = [rng.gauss(0, 0.2) for _ in range(3)] + [1.0]
        norm = sum(c * c for c in q) ** 0.5
        rotations.extend(c / norm for c in q)
    roots = array("d", [rng.gauss(0, 0.3) for _ in range(FRAMES * 3)])
    folder = Path(tempfile.mkdtemp())
    try:
        amass.write(Motion(skeleton, rotations, roots, 30.0), folder / "a.npz")
        return (folder / "a.npz").read_bytes()
    finally:
        shutil.rmtree(folder)


def _clip(folder: Path, keep: int = FRAMES) -> Dict[str, bytes]:
    roots = (folder / "root_positions.f32").read_bytes()
    rotations = (folder / "local_rotations_xyzw.f32").read_bytes()
    frames = len(roots) // 12
    return {"root_positions.f32": roots[:keep * 12],
            "local_rotations_xyzw.f32": rotations[:len(rotations) // frames * keep],
            "prompt.txt": (folder / "prompt.txt").read_bytes()}


def build_seeds(work: Path) -> Dict[str, Dict[str, bytes]]:
    """kind -> {file name: bytes}; a kind with several files is a folder (raw clip, NPZ with meta.json)."""
    from kimodo_rig.formats import fbx, glb, raw
    from kimodo_rig.formats import gltf_document as gd

    reference, clips = DATA / "reference", DATA / "clips"
    clip = _clip(clips / "soma_01_single_text_prompt")
    folder = work / "seed_clip"
    folder.mkdir()
    for name, data in clip.items():
        (folder / name).write_bytes(data)
    motion = raw.read(folder)
    motion_glb = glb.encode(motion)
    motion_fbx = fbx.encode(motion)
    shutil.rmtree(folder)
    rig_path = DATA / "rigs" / "mpfb2" / "mpfb2_mixamo.glb"
    rig_fbx = fbx.encode_gltf(_dressed(gd.read_file(rig_path)), take="rig", fps=30.0)
    current = _cut_npz(reference / "soma_01_single_text_prompt_somaskel77.npz")
    gltf, binary = split_glb(motion_glb)
    gltf["buffers"] = [{"byteLength": len(binary), "uri": "data:application/octet-stream;base64,"
                        + base64.b64encode(binary).decode("ascii")}]
    seeds = {
        "bvh_soma": {"m.bvh": _cut_bvh(reference / "soma_01_single_text_prompt.bvh")},
        "bvh_cmu": {"m.bvh": _cut_bvh(DATA / "rigs" / "cmu" / "resources_131_01.bvh")},
        "npz_current": {"m.npz": current},
        "npz_deflate": {"m.npz": _rezip(current, zipfile.ZIP_DEFLATED)},
        "npz_bzip2": {"m.npz": _rezip(current, zipfile.ZIP_BZIP2)},
        "npz_lzma": {"m.npz": _rezip(current, zipfile.ZIP_LZMA)},
        "npz_older": {"m.npz": _cut_npz(DATA / "npz" / "g1_01_single_text_prompt" / "motion.npz")},
        "npz_meta": {"motion.npz": _cut_npz(DATA / "npz" / "soma_02_multi_text_prompt" / "motion.npz"),
                     "meta.json": (DATA / "npz" / "soma_02_multi_text_prompt" / "meta.json").read_bytes()},
        "npz_amass": {"m.npz": _amass()},
        "csv": {"m.csv": ("\n".join((reference / "g1_01_single_text_prompt_qpos.csv").read_text(
            encoding="utf-8").splitlines()[:FRAMES]) + "\n").encode("utf-8")},
        "glb_motion": {"m.glb": motion_glb},
        "gltf_motion": {"m.gltf": json.dumps(gltf).encode("utf-8")},
        "glb_rig": {"rig.glb": (DATA / "rigs" / "mpfb2" / "mpfb2_mixamo.glb").read_bytes()},
        "fbx_motion": {"m.fbx": motion_fbx},
        "fbx_rig": {"rig.fbx": rig_fbx},
        "clip": clip,
    }
    seeds.update(build_new_seeds(work, clip))
    return seeds


# A 1x1 PNG: the dressed rig's base colour texture.
TINY_PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415408d763f8cf"
                         "c0000003010100c9fe92ef0000000049454e44ae426082")


def _dressed(document):
    """The MPFB2 Mixamo rig dressed as FBX characters come, so the FBX seed reaches the reader's meshes and
    materials: UVs, two materials on the body (one with an embedded PNG texture, one at half alpha), and a
    box with no skin under the head bone."""
    import copy

    from kimodo_rig.formats import gltf_document as gd

    gltf = copy.deepcopy(document.gltf)
    builder = gd.DocumentBuilder()
    builder.gltf, builder.binary = gltf, bytearray(document.binary)
    body = gltf["meshes"][0]["primitives"][0]
    points = document.accessor(body["attributes"]["POSITION"])
    body["attributes"]["TEXCOORD_0"] = builder.add_accessor([(p[0] + 0.5, p[1] * 0.5) for p in points], "VEC2")
    indices = [int(i[0]) for i in document.accessor(body["indices"])]
    half = len(indices) // 6 * 3
    second = dict(body, indices=builder.add_components(indices[half:], "SCALAR", gd.UNSIGNED_INT), material=1)
    body.update(indices=builder.add_components(indices[:half], "SCALAR", gd.UNSIGNED_INT), material=0)
    gltf["meshes"][0]["primitives"].append(second)
    while len(builder.binary) % 4:
        builder.binary.append(0)
    gltf["bufferViews"].append({"buffer": 0, "byteOffset": len(builder.binary), "byteLength": len(TINY_PNG)})
    builder.binary += TINY_PNG
    gltf["images"] = [{"name": "cloth", "bufferView": len(gltf["bufferViews"]) - 1, "mimeType": "image/png"}]
    gltf["textures"] = [{"source": 0}]
    gltf["materials"] = [{"name": "Cloth", "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}},
                         {"name": "Skin", "pbrMetallicRoughness": {"baseColorFactor": [0.8, 0.45, 0.3, 0.5]}},
                         {"name": "Felt", "pbrMetallicRoughness": {"baseColorFactor": [0.1, 0.2, 0.9, 1.0]}}]
    box = [(x, y, z) for x in (-0.1, 0.1) for y in (0.0, 0.2) for z in (-0.1, 0.1)]
    faces = [0, 1, 3, 0, 3, 2, 4, 6, 7, 4, 7, 5, 0, 4, 5, 0, 5, 1, 2, 3, 7, 2, 7, 6, 0, 2, 6, 0, 6, 4, 1, 5, 7, 1, 7, 3]
    gltf["meshes"].append({"name": "hat", "primitives": [{
        "attributes": {"POSITION": builder.add_accessor(box, "VEC3", with_bounds=True)},
        "indices": builder.add_components(faces, "SCALAR", gd.UNSIGNED_INT), "material": 2}]})
    head = next(i for i, node in enumerate(gltf["nodes"]) if node.get("name") == "mixamorig:Head")
    gltf["nodes"].append({"name": "Hat", "mesh": len(gltf["meshes"]) - 1, "translation": [0.0, 0.15, 0.0]})
    gltf["nodes"][head].setdefault("children", []).append(len(gltf["nodes"]) - 1)
    return gd.parse_glb(builder.to_glb(), "dressed.glb")


def split_glb(data: bytes) -> Tuple[dict, bytes]:
    length = struct.unpack_from("<I", data, 12)[0]
    gltf = json.loads(data[20:20 + length].decode("utf-8"))
    at = 20 + length
    binary = data[at + 8:at + 8 + struct.unpack_from("<I", data, at)[0]] if at + 8 <= len(data) else b""
    return gltf, binary


NEST = "\u0000nest{}"


def dump_json(document) -> bytes:
    """JSON text, with any NEST marker spelled out as that many nested lists and any BIG marker as an
    integer of that many digits (json.dumps refuses ints past 4,300 digits)."""
    text = json.dumps(document, separators=(",", ":"))
    for match in set(re.findall(r'"\\u0000nest(\d+)"', text)):
        depth = int(match)
        text = text.replace('"\\u0000nest{}"'.format(match), "[" * depth + "]" * depth)
    for match in set(re.findall(r'"\\u0000digits(\d+)"', text)):
        text = text.replace('"\\u0000digits{}"'.format(match), "7" * int(match))
    return text.encode("utf-8")


def join_glb(gltf: dict, binary: bytes) -> bytes:
    text = dump_json(gltf)
    text += b" " * (-len(text) % 4)
    binary += b"\0" * (-len(binary) % 4)
    body = struct.pack("<II", len(text), 0x4E4F534A) + text + struct.pack("<II", len(binary), 0x004E4942) + binary
    return struct.pack("<III", 0x46546C67, 2, 12 + len(body)) + body


# ---------------------------------------------------------------------------------------------- mutations

def mutate_bytes(data: bytes, rng: random.Random) -> Tuple[str, bytes]:
    data = bytearray(data)
    size = max(1, len(data))
    how = rng.choice(["flip", "bits", "cut", "insert", "delete", "repeat", "int", "float"])
    at = rng.randrange(size)
    if how == "flip":
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(size) % max(1, len(data))] = rng.randrange(256)
    elif how == "bits":
        data[at % max(1, len(data))] ^= 1 << rng.randrange(8)
    elif how == "cut":
        del data[at:]
    elif how == "insert":
        data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    elif how == "delete":
        del data[at:at + rng.randint(1, 256)]
    elif how == "repeat":
        chunk = data[at:at + rng.randint(1, 4096)]
        data[at:at] = chunk * rng.randint(1, 8)
    elif how == "int":
        data[at:at + 4] = struct.pack("<I", rng.choice(INTS) & 0xFFFFFFFF)
    else:
        data[at:at + 4] = struct.pack("<f", rng.choice(FLOATS))
    return how, bytes(data)


_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?")


# The FBX kinds take their share of cases on a random stream of their own, so that adding them left every
# other case number what it was (the suite's seed keeps meaning the same cases).
FBX_KINDS = ("fbx_motion", "fbx_rig")
FBX_VALUES = ["x", "", 0, -1, 2 ** 31 - 1, 1e308, float("nan"), float("inf"), b"", 0.5]


def mutate_fbx(data: bytes, rng: random.Random) -> Tuple[str, bytes]:
    """An FBX mutated in its node tree (read with our codec, written back): a property given another
    type or a hostile number, an array emptied or cut short, a node dropped or nested in itself, a
    connection turned into a cycle, an array whose header claims ten million elements."""
    from array import array

    from kimodo_rig.formats import fbx_binary as fb

    nodes = fb.decode(data, "seed.fbx")
    everything = []

    def walk(children):
        for node in children:
            everything.append(node)
            walk(node.children)

    walk(nodes)
    roll = rng.random()
    node = rng.choice([n for n in everything if n.properties] or everything)
    if roll < 0.4 and node.properties:
        at = rng.randrange(len(node.properties))
        value = node.properties[at]
        if isinstance(value, array) and len(value) and rng.random() < 0.5:
            node.properties[at] = array(value.typecode, value[:rng.randrange(len(value))])
            return "fbx_array_cut_" + node.name, fb.encode(nodes)
        choice = rng.choice(FBX_VALUES)
        node.properties[at] = fb.Long(choice) if isinstance(value, fb.Long) and isinstance(choice, int) else choice
        return "fbx_value_" + node.name, fb.encode(nodes)
    if roll < 0.55:
        parent = rng.choice([n for n in everything if n.children] or everything)
        if parent.children:
            parent.children.pop(rng.randrange(len(parent.children)))
        return "fbx_drop_node", fb.encode(nodes)
    if roll < 0.65:
        connections = next((n for n in nodes if n.name == "Connections"), None)
        links = [c for c in (connections.children if connections else []) if len(c.properties) >= 3]
        if links:
            link = rng.choice(links)
            connections.add("C", "OO", link.properties[2], link.properties[1])  # the parent under its child
        return "fbx_cycle", fb.encode(nodes)
    if roll < 0.75:
        deep = fb.Node("Deep", [1])
        inner = deep
        for _ in range(rng.choice([30, 40, 200])):
            inner = inner.add("Deep", 1)
        nodes.insert(rng.randrange(len(nodes) + 1), deep)
        return "fbx_deep", fb.encode(nodes)
    encoded = bytearray(fb.encode(nodes))
    starts = [m.start() for m in re.finditer(rb"[dfil][\x00-\xff]{4}[\x00\x01]\x00\x00\x00", bytes(encoded))]
    if starts:
        at = rng.choice(starts) + 1
        struct.pack_into("<I", encoded, at, rng.choice([10 ** 7, 2 ** 32 - 1, 0]))
    return "fbx_array_count", bytes(encoded)


def mutate_text(data: bytes, rng: random.Random) -> Tuple[str, bytes]:
    text = data.decode("latin-1")
    lines = text.split("\n")
    how = rng.choice(["number", "number", "number", "word", "line", "nest", "token", "joints", "latin"])
    if how == "number":
        for _ in range(rng.randint(1, 3)):
            matches = list(_NUMBER.finditer(text))
            if matches:
                match = rng.choice(matches)
                text = text[:match.start()] + rng.choice(NUMBERS) + text[match.end():]
    elif how == "word":
        words = re.findall(r"[A-Za-z_]+", text) or ["x"]
        target = rng.choice(words)
        text = text.replace(target, rng.choice(words + ["{", "}", "End", "JOINT", "ROOT", "MOTION"]), 1)
    elif how == "line":
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        choice = rng.randrange(3)
        if choice == 0:
            del lines[i]
        elif choice == 1:
            lines.insert(i, lines[j])
        else:
            lines[i], lines[j] = lines[j], lines[i]
        text = "\n".join(lines)
    elif how == "nest":
        at = rng.randrange(len(text) + 1)
        open_, close = rng.choice([("[", "]"), ("{\"a\":", "}"), ("JOINT j {\n", "}\n")])
        depth = rng.choice([50, 300, 1000, 3000])
        text = text[:at] + open_ * depth + close * depth + text[at:]
    elif how == "token":
        at = rng.randrange(len(text) + 1)
        text = text[:at] + rng.choice(["a", "9", "\n", " ", '\\"', '"']) * rng.choice([1000, 100000]) + text[at:]
    elif how == "joints":  # many siblings where a hierarchy is
        at = text.find("JOINT")
        if at >= 0:
            text = text[:at] + "JOINT w {\nOFFSET 0 1 0\nCHANNELS 0\n}\n" * rng.choice([100, 2000]) + text[at:]
    else:
        at = rng.randrange(len(text) + 1)
        text = text[:at] + rng.choice(["\xb3", "\xb2", "\xff\xfe", "\x00"]) + text[at:]
    return how, text.encode("latin-1" if max(map(ord, text), default=0) < 256 else "utf-8")


def _json_paths(value, prefix=()) -> List[tuple]:
    paths = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            paths += _json_paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value[:12]):
            paths += _json_paths(item, prefix + (index,))
    return paths


def _set(root, path, value) -> None:
    for key in path[:-1]:
        root = root[key]
    if path:
        root[path[-1]] = value


def mutate_gltf(gltf: dict, binary: bytes, rng: random.Random) -> Tuple[str, dict, bytes]:
    binary = bytearray(binary)
    how = rng.choice(["value", "value", "delete", "cycle", "no_view", "share", "keys", "nest", "nodes", "binary"])
    accessors, nodes = gltf.get("accessors", []), gltf.get("nodes", [])
    if how == "value":
        for _ in range(rng.randint(1, 3)):
            path = rng.choice(_json_paths(gltf))
            _set(gltf, path, rng.choice(JSON_VALUES))
    elif how == "delete":
        path = rng.choice([p for p in _json_paths(gltf) if p] or [("asset",)])
        parent = gltf
        for key in path[:-1]:
            parent = parent[key]
        del parent[path[-1]]
    elif how == "cycle" and nodes:
        a, b = rng.randrange(len(nodes)), rng.randrange(len(nodes))
        nodes[a].setdefault("children", []).append(b)
    elif how == "no_view" and accessors:
        accessor = rng.choice(accessors)
        accessor.pop("bufferView", None)
        accessor["count"] = rng.choice([1, 100, 65536, 65537, 10 ** 9])
    elif how == "share" and accessors:
        for animation in gltf.get("animations", []):
            for sampler in animation.get("samplers", []):
                sampler["output"] = rng.randrange(len(accessors))
                sampler["input"] = rng.randrange(len(accessors))
    elif how == "keys" and accessors:  # key times or rotations overwritten with hostile floats
        accessor = rng.choice(accessors)
        view = gltf.get("bufferViews", [{}])[accessor.get("bufferView", 0)] if gltf.get("bufferViews") else {}
        start = view.get("byteOffset", 0) + accessor.get("byteOffset", 0)
        value = rng.choice(FLOATS)
        for at in range(start, min(len(binary) - 3, start + 4 * rng.choice([1, 4, 64])), 4):
            binary[at:at + 4] = struct.pack("<f", value if rng.random() < 0.7 else value * rng.random())
    elif how == "nest":  # spelled out by dump_json: json itself cannot build 2,000 levels
        gltf["extras"] = NEST.format(rng.choice([60, 500, 2000]))
    elif how == "nodes":
        count = rng.choice([100, 3000, 12000])  # 12,000: the cycle check was quadratic (3 s)
        start = len(nodes)
        chain = rng.random() < 0.5
        above = nodes[:start] and rng.random() >= 0.5
        if above:  # every joint's world then walks the chain, every frame: 3,000 is deep enough
            count = min(count, 3000)
        nodes.extend({"name": "n{}".format(i), "children": [start + i + 1] if chain and i < count - 1 else []}
                     for i in range(count))
        if nodes[:start] and not above:  # below the first node
            nodes[0].setdefault("children", []).append(start)
        elif above:  # above every root: the rig hangs under a deep chain
            children = {c for node in nodes[:start] for c in node.get("children", []) if isinstance(c, int)}
            nodes[-1]["children"] = [i for i in range(start) if i not in children]
            chain = True
        if rng.random() < 0.3:
            nodes[-1]["children"] = [start]
    else:
        how, data = mutate_bytes(bytes(binary), rng)
        return "binary_" + how, gltf, data
    return how, gltf, bytes(binary)


def _npy_header(descr, shape, fortran) -> bytes:
    header = "{{'descr': {!r}, 'fortran_order': {!r}, 'shape': {!r}, }}".format(descr, fortran, shape)
    header += " " * (-(len(header) + 11) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin-1")


def _npy_parts(data: bytes) -> Tuple[bytes, bytes]:
    """(header, body) of a .npy member, the header as its literal text."""
    length = struct.unpack_from("<H", data, 8)[0]
    return data[10:10 + length], data[10 + length:]


def mutate_npz(data: bytes, rng: random.Random, method: int) -> Tuple[str, bytes]:
    how = rng.choice(["descr", "shape", "fortran", "header", "long_header", "utf32", "zip_field", "name",
                      "bomb", "bytes", "member_bytes", "rezip"])
    if how in ("zip_field", "bytes"):
        return _zip_field(data, rng) if how == "zip_field" else mutate_bytes(data, rng)
    if how == "bomb":
        return how, _bomb(rng)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = [(info.filename, archive.read(info)) for info in archive.infolist()]
    index = rng.randrange(len(members))
    name, member = members[index]
    try:
        header, body = _npy_parts(member)
        import ast
        fields = ast.literal_eval(header.decode("latin-1").strip())
    except Exception:  # noqa: BLE001 - the seed member is not what this mutation expects: mutate its bytes
        how, member = "member_bytes", mutate_bytes(member, rng)[1]
        fields = None
    if fields is not None:
        descr, shape, fortran = fields["descr"], fields["shape"], fields["fortran_order"]
        if how == "descr":
            member = _npy_header(rng.choice(DESCRS), shape, fortran) + body
        elif how == "shape":
            options = [(), (0,), (10 ** 12,), (-1,), shape + (1,), shape[:-1], tuple(reversed(shape)),
                       (2 ** 62, 2 ** 62), (1.5,), ("a",)]
            member = _npy_header(descr, rng.choice(options), fortran) + body
        elif how == "fortran":
            member = _npy_header(descr, shape, rng.choice([True, 1, "x", None])) + body
        elif how == "header":
            text = rng.choice(["{{}: 1}", "{'descr': '<f4'", "(" * 500, "[" * 5000, "{'descr': '<f4', "
                               "'fortran_order': False, 'shape': (1,), 'x': 1}", "1", "None", "{1: 2, 3: 4, 5: 6}"])
            member = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode("latin-1") + body
        elif how == "long_header":
            size = rng.choice([10001, 30000, 4 << 20])
            text = ("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }" + " " * size + "\n").encode("latin-1")
            member = b"\x93NUMPY\x02\x00" + struct.pack("<I", len(text)) + text + body
        elif how == "utf32":
            count = max(1, len(body) // 4)
            member = _npy_header("<U1", (count,), False) + b"\xff\xff\xff\xff" * count
        elif how == "name":
            name = rng.choice(["a\nb.npy", "x" * 5000 + ".npy", "../../x.npy", name + "\r\n"])
        elif how == "member_bytes":
            member = mutate_bytes(member, rng)[1]
        else:
            method = rng.choice([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
    members[index] = (name, member)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=method) as archive:
        for member_name, member_data in members:
            archive.writestr(member_name, member_data)
    return how, out.getvalue()


def _zip_field(data: bytes, rng: random.Random) -> Tuple[str, bytes]:
    """A local or central header's method, flags, sizes or name length set to a hostile value."""
    data = bytearray(data)
    heads = [m.start() for m in re.finditer(b"PK\x03\x04|PK\x01\x02", bytes(data))]
    if not heads:
        return "zip_field", bytes(data)
    at = rng.choice(heads)
    central = data[at + 2:at + 4] == b"\x01\x02"
    fields = {"flags": (8 if central else 6, 2), "method": (10 if central else 8, 2),
              "compressed": (20 if central else 18, 4), "size": (24 if central else 22, 4),
              "name_length": (28 if central else 26, 2)}
    field = rng.choice(sorted(fields))
    offset, width = fields[field]
    value = rng.choice([0, 1, 8, 9, 12, 14, 99, 0xFFFF, 0xFFFFFFFF, 1 << 30, 1 << 20])
    data[at + offset:at + offset + width] = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
    return "zip_" + field, bytes(data)


_BOMBS: Dict[int, bytes] = {}


def _bomb(rng: random.Random) -> bytes:
    """An .npz whose one member declares a few bytes (or its true size) and expands to 16 MB."""
    method = rng.choice([zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
    if method not in _BOMBS:
        header = _npy_header("<f4", (4 << 20,), False)
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", compression=method) as archive:
            with archive.open("local_rot_mats.npy", "w", force_zip64=True) as stream:
                stream.write(header)
                zeros = b"\0" * (1 << 20)
                for _ in range(16):
                    stream.write(zeros)
            archive.writestr("root_positions.npy", _npy_header("<f4", (0, 3), False))
        _BOMBS[method] = out.getvalue()
    data = bytearray(_BOMBS[method])
    if rng.random() < 0.5:  # declare a small size in both headers: the reader must stop at it
        for match in re.finditer(b"PK\x03\x04|PK\x01\x02", bytes(data)):
            at = match.start()
            offset = 24 if data[at + 2:at + 4] == b"\x01\x02" else 22
            if data[at + offset:at + offset + 4] != b"\xff\xff\xff\xff":
                data[at + offset:at + offset + 4] = struct.pack("<I", 4096)
    return bytes(data)


def mutate(kind: str, seed: Dict[str, bytes], rng: random.Random) -> Tuple[str, Dict[str, bytes]]:
    files = dict(seed)
    if kind in ("constraints_kimodo", "constraints_animotive", "map"):
        name = next(iter(files))
        if kind == "map" and rng.random() < 0.4:  # the parts that matter most trade bones
            document = json.loads(files[name])
            a, b = rng.sample(MAP_PARTS, 2)
            document[a], document[b] = document.get(b), document.get(a)
            if rng.random() < 0.3:
                document[rng.choice(["tail", "hand", "hips "])] = rng.choice(list(document.values()))
            elif rng.random() < 0.3:
                document[rng.choice(MAP_PARTS)] = rng.choice(["not_a_bone", "", "mixamorig:Hips", "\u00b2"])
            return "swap_" + a + "_" + b, dict(files, **{name: json.dumps(document).encode("utf-8")})
        how, files[name] = mutate_document(json.loads(files[name]), rng)
        return how, files
    if kind in ("vrm0", "vrm1"):
        how, files["avatar.vrm"] = mutate_vrm(files["avatar.vrm"], rng)
        return how, files
    if kind == "skin":
        how, files["rig.glb"] = mutate_skin(files["rig.glb"], rng)
        return how, files
    if kind in ("timeline", "folder"):  # the clip is sound: the options and the output's place are the case
        return "options" if kind == "timeline" else "place", files
    if kind == "clip":
        name = rng.choice(sorted(files))
        how, files[name] = mutate_bytes(files[name], rng)
        return name + ":" + how, files
    if kind == "npz_meta" and rng.random() < 0.5:
        how, files["meta.json"] = mutate_text(files["meta.json"], rng)
        return "meta:" + how, files
    name = next(n for n in sorted(files) if not n.endswith(".json"))
    data = files[name]
    if kind.startswith("npz"):
        method = {"npz_deflate": zipfile.ZIP_DEFLATED, "npz_bzip2": zipfile.ZIP_BZIP2,
                  "npz_lzma": zipfile.ZIP_LZMA}.get(kind, zipfile.ZIP_STORED)
        how, files[name] = mutate_npz(data, rng, method)
    elif kind.startswith("glb") and rng.random() < 0.7:
        gltf, binary = split_glb(data)
        how, gltf, binary = mutate_gltf(gltf, binary, rng)
        files[name] = join_glb(gltf, binary)
    elif kind == "gltf_motion" and rng.random() < 0.5:
        gltf = json.loads(data)
        uri = gltf["buffers"][0]["uri"]
        how, gltf, binary = mutate_gltf(gltf, base64.b64decode(uri.split(",", 1)[1]), rng)
        if isinstance(gltf.get("buffers"), list) and gltf["buffers"] and isinstance(gltf["buffers"][0], dict):
            gltf["buffers"][0]["uri"] = "data:application/octet-stream;base64," + base64.b64encode(binary).decode("ascii")
        files[name] = dump_json(gltf)
    elif kind.startswith("fbx") and rng.random() < 0.7:
        how, files[name] = mutate_fbx(data, rng)
    elif kind.startswith(("bvh", "csv", "gltf")) and rng.random() < 0.7:
        how, files[name] = mutate_text(data, rng)
    else:
        how, files[name] = mutate_bytes(data, rng)
    return how, files


# ---------------------------------------------------------------------------------------------- newer surfaces
# Constraints files, --map files, .vrm humanoid tables, hostile skins, timeline arguments and folder
# outputs. Each kind's case is a list of arguments and the outputs it declares; the worker checks that
# nothing else in the case's folder changes and that the inputs keep their bytes.

BIG = "\u0000digits{}"  # spelled out by dump_json
HOSTILE_JSON = JSON_VALUES + [1e200, -1e200, BIG.format(400), BIG.format(5000), ["fullbody"], "²", "\u0663",
                              {"type": "fullbody"}, [[0.0, 0.0, 0.0]] * 3, NEST.format(100000)]
OPTION_VALUES = ["0", "1", "2", "3", "-1", "-0", "0.5", "1e308", "-1e308", "inf", "-inf", "nan", "1e-320", "²",
                 "\u0663", "1_0", "0x10", "", " 1", "9" * 400, "5" * 5000, "1e400", "2147483648", "every:²",
                 "every:0", "every:-1", "all", "0,1,2", "0,,1", "1,1,1", "3,0", "9" * 400 + ",1", "5" * 5000 + ",0"]
MAP_PARTS = ["hips", "spine_0", "head", "hand_l", "hand_r", "foot_l", "foot_r", "thigh_l", "upperarm_r", "toe_l"]
RAW_FILES = {"local_rotations_xyzw.f32", "root_positions.f32", "prompt.txt"}  # a clip's own files (formats/raw.py)
TIMELINE_FRAMES = 40  # enough for a loop to be found and a join to cross-fade


def mutate_document(document, rng: random.Random, swap_paths: Optional[List[tuple]] = None) -> Tuple[str, bytes]:
    """A JSON document (constraints, request, map, VRM table) with one hostile change, as text."""
    document = json.loads(json.dumps(document))
    how = rng.choice(["value", "value", "delete", "swap", "type", "nest", "bom", "text", "duplicate"])
    paths = _json_paths(document)
    if how == "value":
        for _ in range(rng.randint(1, 2)):
            path = rng.choice(_json_paths(document))
            if path:
                _set(document, path, rng.choice(HOSTILE_JSON))
            else:
                document = rng.choice(HOSTILE_JSON)
    elif how == "delete":
        path = rng.choice([p for p in paths if p] or [()])
        if path:
            parent = document
            for key in path[:-1]:
                parent = parent[key]
            del parent[path[-1]]
    elif how == "swap":  # two values trade places (a map's hips and hand, two entries' frames)
        candidates = swap_paths or [p for p in paths if p]
        if len(candidates) >= 2:
            a, b = rng.sample(candidates, 2)
            try:
                value_a, value_b = _get(document, a), _get(document, b)
                _set(document, a, value_b)
                _set(document, b, value_a)
            except (KeyError, IndexError, TypeError):
                pass
    elif how == "type":  # a container where a value is, a value where a container is
        path = rng.choice(paths)
        value = rng.choice([[], {}, 7, "7", None, ["list"], {"type": ["fullbody"]}])
        if path:
            _set(document, path, value)
        else:
            document = value
    elif how == "nest":
        path = rng.choice(paths)
        value = NEST.format(rng.choice([60, 2000, 100000]))
        if path:
            _set(document, path, value)
        else:
            document = value
    elif how == "duplicate" and isinstance(document, list) and document:
        document = document + [document[rng.randrange(len(document))]] * rng.choice([1, 2, 500])
    text = dump_json(document)
    if how == "bom":
        text = b"\xef\xbb\xbf" + text
    elif how == "text":
        how, text = mutate_text(text, rng)
        how = "text_" + how
    return how, text


def _get(root, path):
    for key in path:
        root = root[key]
    return root


def _run_quiet(arguments: List[str]) -> str:
    """A command whose output (stdout) a seed is built from; it must succeed."""
    from kimodo_rig import cli

    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()) as stdout:
        status = cli.main(arguments)
    if status != 0:
        raise RuntimeError("seed command {} failed: {}".format(arguments, stderr.getvalue()))
    return stdout.getvalue()


def build_new_seeds(work: Path, clip: Dict[str, bytes]) -> Dict[str, Dict[str, bytes]]:
    """The newer surfaces' seeds, each built by the command a user would run (or, for .vrm, as
    tests/rig_variants.add_vrm_table lays out the table) from the shared test files."""
    folder = work / "seed_new"
    folder.mkdir()
    try:
        long_clip = _clip(DATA / "clips" / "soma_01_single_text_prompt", TIMELINE_FRAMES)
        source = folder / "clip"
        source.mkdir()
        for name, data in long_clip.items():
            (source / name).write_bytes(data)
        _run_quiet(["constraints", "extract", str(source), "-o", str(folder / "k.json"), "--fullbody", "2,30",
                    "--left-hand", "5", "--right-foot", "12", "--root2d", "every:8"])
        _run_quiet(["constraints", "extract", str(source), "-o", str(folder / "a.json"), "--fullbody", "2,30",
                    "--left-hand", "5", "--right-foot", "12", "--root2d", "every:8", "--format", "animotive",
                    "--prompt", "walk", "--duration", "1.5"])
        rig = (DATA / "rigs" / "mpfb2" / "mpfb2_mixamo.glb").read_bytes()
        (folder / "rig.glb").write_bytes(rig)
        bone_map = _run_quiet(["map", str(folder / "rig.glb"), "--json"]).encode("utf-8")
        mannequin = (DATA / "rigs" / "mpfb2" / "mpfb2_game_engine.glb").read_bytes()
        return {
            "constraints_kimodo": {"constraints.json": (folder / "k.json").read_bytes()},
            "constraints_animotive": {"request.json": (folder / "a.json").read_bytes()},
            "map": {"map.json": bone_map},
            "vrm0": {"avatar.vrm": _vrm(mannequin, 0)},
            "vrm1": {"avatar.vrm": _vrm(mannequin, 1)},
            "skin": {"rig.glb": mannequin},
            "timeline": long_clip,
            "folder": clip,
        }
    finally:
        shutil.rmtree(folder)


# VRM humanoid bones of the canonical parts on the MPFB2 mannequin (tests/rig_variants.MANNEQUIN_VRM).
VRM_TABLE = {"hips": "pelvis", "spine": "spine_01", "chest": "spine_02", "upperChest": "spine_03", "neck": "neck_01",
             "head": "head"}
for _side, _s in (("left", "l"), ("right", "r")):
    VRM_TABLE.update({_side + "Shoulder": "clavicle_" + _s, _side + "UpperArm": "upperarm_" + _s,
                      _side + "LowerArm": "lowerarm_" + _s, _side + "Hand": "hand_" + _s,
                      _side + "UpperLeg": "thigh_" + _s, _side + "LowerLeg": "calf_" + _s,
                      _side + "Foot": "foot_" + _s, _side + "Toes": "ball_" + _s})


def _vrm(glb_bytes: bytes, version: int) -> bytes:
    """The mannequin with a VRM humanoid table: 0.x a list of {bone, node}, 1.0 {bone: {node}}."""
    gltf, binary = split_glb(glb_bytes)
    index = {node.get("name"): i for i, node in enumerate(gltf["nodes"])}
    nodes = {bone: index[name] for bone, name in VRM_TABLE.items()}
    extensions = gltf.setdefault("extensions", {})
    if version == 0:
        extensions["VRM"] = {"specVersion": "0.0", "humanoid": {"humanBones": [
            {"bone": b, "node": n, "useDefaultValues": True} for b, n in nodes.items()]}}
        used = "VRM"
    else:
        extensions["VRMC_vrm"] = {"specVersion": "1.0", "humanoid": {"humanBones": {b: {"node": n} for b, n in nodes.items()}}}
        used = "VRMC_vrm"
    gltf["extensionsUsed"] = sorted(set(gltf.get("extensionsUsed", [])) | {used})
    return join_glb(gltf, binary)


def mutate_vrm(data: bytes, rng: random.Random) -> Tuple[str, bytes]:
    gltf, binary = split_glb(data)
    extensions = gltf["extensions"]
    name = "VRM" if "VRM" in extensions else "VRMC_vrm"
    bones = extensions[name]["humanoid"]["humanBones"]
    count = len(gltf["nodes"])
    how = rng.choice(["swap", "swap_hips", "node", "node", "bone", "table", "document"])
    entries = bones if isinstance(bones, list) else list(bones.values())
    if how in ("swap", "swap_hips"):  # two bones trade nodes: the hips and a hand is the loop of issue 38
        if how == "swap_hips":
            by_bone = ({e["bone"]: e for e in bones} if isinstance(bones, list) else bones)
            a, b = by_bone["hips"], by_bone[rng.choice(["leftHand", "rightHand", "head", "leftFoot"])]
        else:
            a, b = rng.sample(entries, 2)
        a["node"], b["node"] = b["node"], a["node"]
    elif how == "node":
        rng.choice(entries)["node"] = rng.choice([-1, count, count + 5, 10 ** 9, 2 ** 64, "3", 1.5, None, [1], 1e308,
                                                 float("nan")])
    elif how == "bone":  # a bone named twice, an unknown bone, a bone named by a number
        entry = rng.choice(entries)
        if isinstance(bones, list):
            entry["bone"] = rng.choice(["hips", "leftHand", "tail", 7, None, ""])
        else:
            bones[rng.choice(["hips2", "", "leftHand "])] = {"node": rng.randrange(count)}
    elif how == "table":  # a part of the extension of the wrong type
        where = rng.choice([(name,), (name, "humanoid"), (name, "humanoid", "humanBones")])
        _set(extensions, where, rng.choice([7, "x", [], {}, None, [7], 1e308]))
    else:
        how, text = mutate_document(extensions[name], rng)
        try:
            extensions[name] = json.loads(text.decode("utf-8-sig"))
        except (ValueError, RecursionError):
            extensions[name] = NEST.format(2000)
        how = "document_" + how
    return how, join_glb(gltf, binary)


def _accessor_span(gltf: dict, index: int) -> Tuple[int, int]:
    """(offset in the binary chunk, byte length) of an accessor's data, as the seed lays it out."""
    accessor = gltf["accessors"][index]
    view = gltf["bufferViews"][accessor["bufferView"]]
    width = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT4": 16}[accessor["type"]]
    size = {5120: 1, 5121: 1, 5122: 2, 5123: 2, 5125: 4, 5126: 4}[accessor["componentType"]]
    return view.get("byteOffset", 0) + accessor.get("byteOffset", 0), accessor["count"] * width * size


def mutate_skin(data: bytes, rng: random.Random) -> Tuple[str, bytes]:
    """The mannequin's skin, meshes and joint transforms made hostile in the ways characters arrive broken."""
    gltf, binary = split_glb(data)
    binary = bytearray(binary)
    nodes, skin = gltf["nodes"], gltf["skins"][0]
    joints = skin["joints"]
    skinned = [i for i, node in enumerate(nodes) if "skin" in node]
    primitive = gltf["meshes"][0]["primitives"][0]
    how = rng.choice(["joint_range", "joint_repeat", "ibm_count", "ibm_singular", "ibm_huge", "node_skin",
                      "node_mesh", "no_meshes", "joints_nan", "weights", "scale", "translation", "unskinned_mesh"])
    if how == "joint_range":
        joints[rng.randrange(len(joints))] = rng.choice([len(nodes), len(nodes) + 3, -1, 10 ** 9, "2", 1.5])
    elif how == "joint_repeat":
        joints[rng.randrange(len(joints))] = joints[rng.randrange(len(joints))]
    elif how == "ibm_count":
        accessor = gltf["accessors"][skin["inverseBindMatrices"]]
        accessor["count"] = rng.choice([0, 1, accessor["count"] - 1, accessor["count"] + 1, 10 ** 9])
    elif how in ("ibm_singular", "ibm_huge"):
        start, length = _accessor_span(gltf, skin["inverseBindMatrices"])
        matrix = start + 64 * rng.randrange(length // 64)
        value = 0.0 if how == "ibm_singular" else rng.choice([3.4e38, float("inf"), float("nan"), 1e30])
        binary[matrix:matrix + 64] = struct.pack("<16f", *([value] * 16))
    elif how == "node_skin":
        nodes[rng.choice(skinned)]["skin"] = rng.choice([1, 5, -1, 10 ** 9, "0", None, 0.5])
    elif how == "node_mesh":
        nodes[rng.choice(skinned)]["mesh"] = rng.choice([len(gltf["meshes"]), 99, -1, "0", None, [0]])
    elif how == "no_meshes":
        del gltf["meshes"]
    elif how == "joints_nan":  # JOINTS_0 as floats, some of them NaN
        count = gltf["accessors"][primitive["attributes"]["JOINTS_0"]]["count"]
        values = [float(rng.randrange(len(joints))) if rng.random() < 0.9 else float("nan") for _ in range(4 * count)]
        binary += b"\0" * (-len(binary) % 4)
        gltf["bufferViews"].append({"buffer": 0, "byteOffset": len(binary), "byteLength": 16 * count})
        binary += struct.pack("<{}f".format(4 * count), *values)
        gltf["accessors"].append({"bufferView": len(gltf["bufferViews"]) - 1, "componentType": 5126, "count": count,
                                  "type": "VEC4"})
        primitive["attributes"]["JOINTS_0"] = len(gltf["accessors"]) - 1
    elif how == "weights":
        start, length = _accessor_span(gltf, primitive["attributes"]["WEIGHTS_0"])
        value = rng.choice(FLOATS + [-5.0, 1e38])
        for at in range(start, start + length, 4 * rng.choice([1, 3, 17])):
            binary[at:at + 4] = struct.pack("<f", value)
        gltf["buffers"][0]["byteLength"] = len(binary)
    elif how == "scale":  # an end joint squashed to nothing, or the root blown up
        node = nodes[rng.choice([joints[-1], joints[0], rng.choice(joints)])]
        node["scale"] = [rng.choice([0.0, 1e160, -1e160, 1e-160])] * 3
    elif how == "translation":
        nodes[rng.choice(joints)]["translation"] = [rng.choice([1e200, -1e200, 1e38]), 0.0, 0.0]
    else:  # a node with no skin pointing at a mesh that is not there
        nodes.append({"name": "prop", "mesh": rng.choice([len(gltf["meshes"]), 99, "1"])})
        gltf["scenes"][gltf.get("scene", 0)]["nodes"].append(len(nodes) - 1)
    gltf["buffers"][0]["byteLength"] = len(binary)
    return how, join_glb(gltf, bytes(binary))


class Case:
    """One run: its arguments, the paths it may write (`file`: that path; `clip`: a raw clip folder, whose
    other entries must stay; `dir`: new entries under a folder) and the paths it reads."""

    def __init__(self, arguments: List[str], outputs: List[Tuple[str, Path]], inputs: List[Path], how: str = "") -> None:
        self.arguments, self.outputs, self.inputs, self.how = arguments, outputs, inputs, how


def _option(rng: random.Random) -> str:
    return rng.choice(OPTION_VALUES)


def _output_choice(rng: random.Random, out: Path, stem: str) -> Tuple[List[str], Tuple[str, Path]]:
    """An output path of a random format: a file, or a raw clip folder."""
    extension = rng.choice([".glb", ".bvh", ".npz", ".csv", "raw"])
    if extension == "raw":
        return ["--format", "raw"], ("clip", out / stem)
    return [], ("file", out / (stem + extension))


def new_case(kind: str, root: Path, path: Path, rng: random.Random) -> Case:
    """The command a newer surface's case runs; `path` is the mutated input (or clip) in root/case."""
    out, clip = root / "out", root / "clip"
    rig = root / "rig.glb"
    roll = rng.random()
    if kind.startswith("constraints"):
        return _constraints_case(kind, path, out, clip, rng)
    if kind == "map":
        if roll < 0.75:
            return Case(["retarget", str(clip), "--target", str(rig), "--map", str(path), "-o", str(out / "r.glb")],
                        [("file", out / "r.glb")], [clip, rig, path])
        return Case(["preview", str(clip), "--target", str(rig), "--map", str(path), "-o", str(out / "p.svg")],
                    [("file", out / "p.svg")], [clip, rig, path])
    if kind in ("vrm0", "vrm1", "skin"):
        if roll < 0.35:
            return Case(["map", str(path)] + (["--json"] if rng.random() < 0.5 else []), [], [path])
        if roll < 0.9:
            return Case(["retarget", str(clip), "--target", str(path), "-o", str(out / "r.glb")],
                        [("file", out / "r.glb")], [clip, path])
        return Case(["preview", str(clip), "--target", str(path), "-o", str(out / "p.svg")],
                    [("file", out / "p.svg")], [clip, path])
    if kind == "timeline":
        return _timeline_case(path, out, rng)
    return _folder_case(root, path, rng)


def _constraints_case(kind: str, path: Path, out: Path, clip: Path, rng: random.Random) -> Case:
    roll = rng.random()
    if roll < 0.25:
        return Case(["constraints", "check", str(path)] + (["--json"] if rng.random() < 0.3 else []), [], [path])
    if roll < 0.5:
        return Case(["constraints", "check", str(path), "--motion", str(clip)], [], [path, clip])
    if roll < 0.8:
        to = rng.choice(["animotive", "kimodo"])
        extra = ["--prompt", "walk", "--duration", rng.choice(["2", "2", "1e308", "inf", "nan", "-1", "²", "9" * 400])]
        target = out / ("c.json" if rng.random() < 0.9 else "")
        return Case(["constraints", "convert", str(path), str(target), "--to", to] + (extra if to == "animotive" else []),
                    [("file", target)], [path])
    # extract: the input file is left alone; the options are hostile (the clip is the motion read)
    arguments = ["constraints", "extract", str(clip), "-o", str(out / "e.json")]
    for option in rng.sample(["--fullbody", "--left-hand", "--right-foot", "--root2d", "--start", "--tail", "--fps",
                              "--duration", "--seed", "--steps", "--samples"], rng.randint(1, 3)):
        arguments += [option, _option(rng)]
    if "--fullbody" not in arguments and "--tail" not in arguments and "--root2d" not in arguments:
        arguments += ["--fullbody", "1"]
    if rng.random() < 0.4:
        arguments += ["--format", "animotive", "--prompt", "walk"]
        if "--duration" not in arguments:
            arguments += ["--duration", "1.5"]
    return Case(arguments, [("file", out / "e.json")], [clip])


def _timeline_case(path: Path, out: Path, rng: random.Random) -> Case:
    verb = rng.choice(["trim", "join", "loop"])
    format_arguments, output = _output_choice(rng, out, verb)
    target = str(output[1])
    if verb == "trim":
        arguments = ["trim", str(path), target, "--start", _option(rng) if rng.random() < 0.7 else "2"]
        if rng.random() < 0.6:
            arguments += ["--end", _option(rng)]
    elif verb == "join":
        arguments = ["join", str(path), str(path), "-o", target, "--blend", _option(rng)]
    else:
        arguments = ["loop", str(path), target]
        for option in rng.sample(["--min-length", "--blend", "--fps"], rng.randint(1, 2)):
            arguments += [option, _option(rng)]
        if rng.random() < 0.3:
            arguments.append("--in-place")
    return Case(arguments + format_arguments, [output], [path])


def _folder_case(root: Path, path: Path, rng: random.Random) -> Case:
    """Outputs pointed where data already is: a raw clip into a folder of other files, into the input's own
    folder or one that holds the input; -o at a folder with content, --outdir at a file."""
    out = root / "out"
    busy = out / "busy"  # a folder of the user's other files
    (busy / "sub").mkdir(parents=True)
    (busy / "notes.txt").write_bytes(b"the user's notes\n")
    (busy / "sub" / "photo.jpg").write_bytes(b"\xff\xd8\xff" + bytes(range(256)))
    (path.parent / "other.txt").write_bytes(b"beside the input\n")
    old_clip = out / "old_clip"
    old_clip.mkdir()
    for name in sorted(RAW_FILES):
        (old_clip / name).write_bytes((path / name).read_bytes() if (path / name).exists() else b"")
    file = out / "file.glb"
    file.write_bytes(b"an earlier output")
    how = rng.choice(["raw_busy", "raw_self", "raw_parent", "raw_root", "raw_clip", "raw_file", "o_folder",
                      "outdir_file", "outdir_busy", "o_file"])
    verb = rng.choice(["convert", "trim", "join", "loop"])

    def writing(target: Path, extra: List[str]) -> List[str]:
        if verb == "convert":
            return ["convert", str(path), str(target)] + extra
        if verb == "trim":
            return ["trim", str(path), str(target), "--start", "1"] + extra
        if verb == "join":
            return ["join", str(path), str(path), "-o", str(target), "--blend", "1"] + extra
        return ["loop", str(path), str(target), "--min-length", "0.05", "--blend", "1"] + extra

    raw = ["--format", "raw"]
    if how.startswith("raw_"):
        target = {"raw_busy": busy, "raw_self": path, "raw_parent": path.parent, "raw_root": root,
                  "raw_clip": old_clip, "raw_file": file}[how]
        return Case(writing(target, raw), [("clip", target)], [path], how)
    if how == "o_folder":
        target = rng.choice([busy, path.parent, old_clip])
        if rng.random() < 0.5:
            return Case(["retarget", str(path), "--target", "mannequin", "-o", str(target)], [("file", target)], [path], how)
        if rng.random() < 0.5:
            return Case(["preview", str(path), "-o", str(target)], [("file", target)], [path], how)
        format_arguments = rng.choice([[], ["--format", "glb"]])
        replaces_a_clip = target == old_clip and not format_arguments  # a clip folder written as a clip: allowed
        return Case(writing(target, format_arguments), [("clip" if replaces_a_clip else "file", target)], [path], how)
    if how in ("outdir_file", "outdir_busy"):
        target = file if how == "outdir_file" else busy
        return Case(["retarget", str(path), "--target", "mannequin", "--outdir", str(target)], [("dir", target)], [path], how)
    return Case(writing(file, []), [("file", file)], [path], how)


# ---------------------------------------------------------------------------------------------- the case's folder

def snapshot(root: Path) -> Dict[str, tuple]:
    """Every entry under root (not following links): relative path -> (type, size, sha256)."""
    import hashlib

    entries: Dict[str, tuple] = {}
    for folder, folders, files in os.walk(str(root)):
        for name in folders + files:
            full = os.path.join(folder, name)
            relative = os.path.relpath(full, str(root))
            info = os.lstat(full)
            if os.path.islink(full):
                entries[relative] = ("link", os.readlink(full))
            elif os.path.isdir(full):
                entries[relative] = ("dir",)
            elif os.path.isfile(full):
                with open(full, "rb") as stream:
                    entries[relative] = ("file", info.st_size, hashlib.sha256(stream.read()).hexdigest())
            else:
                entries[relative] = ("special",)
    return entries


def _within(relative: str, folder: str) -> bool:
    return relative == folder or relative.startswith(folder + os.sep) or folder == "."


def stray_changes(before: Dict[str, tuple], after: Dict[str, tuple], root: Path,
                  outputs: List[Tuple[str, Path]]) -> List[str]:
    """Entries that changed, appeared or vanished where no declared output allows it."""
    declared = [(how, os.path.relpath(str(path), str(root))) for how, path in outputs]
    problems = []
    for relative in sorted(set(before) | set(after)):
        if before.get(relative) == after.get(relative):
            continue
        if not any(_allowed(how, output, relative, before) for how, output in declared):
            word = "deleted" if relative not in after else "written" if relative not in before else "changed"
            problems.append("{} {}".format(word, relative))
    return problems


def _allowed(how: str, output: str, relative: str, before: Dict[str, tuple]) -> bool:
    existed = before.get(output)
    if how == "file":  # the output file itself, replacing nothing but a file
        return relative == output and (existed is None or existed[0] == "file")
    if existed is not None and existed[0] != "dir":  # a folder output may not replace a file
        return False
    if not _within(relative, output):
        return False
    if relative == output or relative not in before:
        return True
    if how == "dir":  # a folder that receives new files keeps the ones it had
        return False
    # a raw clip folder: its own files may be rewritten, anything else in it must stay
    inside = relative if output == "." else os.path.relpath(relative, output)
    return inside in RAW_FILES


# ---------------------------------------------------------------------------------------------- running

def not_files(work: Path) -> List[Tuple[str, Callable[[Path], Path]]]:
    """Cases that are not regular files: a symlink to /dev/zero and a FIFO under every extension."""
    cases = []
    for extension in (".bvh", ".glb", ".gltf", ".npz", ".csv"):
        def link(folder: Path, extension=extension) -> Path:
            path = folder / ("zero" + extension)
            os.symlink("/dev/zero", str(path))
            return path

        def fifo(folder: Path, extension=extension) -> Path:
            path = folder / ("fifo" + extension)
            os.mkfifo(str(path))
            return path
        cases += [("zero" + extension, link), ("fifo" + extension, fifo)]
    return cases if hasattr(os, "mkfifo") and os.path.exists("/dev/zero") else []


class Outcome:
    def __init__(self, verdict: str, detail: str = "") -> None:
        self.verdict, self.detail = verdict, detail


def run_command(case: Case, root: Path) -> Outcome:
    """kimodo-rig's main() in-process; the contract: 0, or 1 with one short stderr line and nothing written;
    either way nothing in the case's folder changes but the declared outputs, and the inputs keep their bytes."""
    from kimodo_rig import cli

    before = snapshot(root)
    stderr, stdout = io.StringIO(), io.StringIO()
    usage = False
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
        try:
            status = cli.main(case.arguments)
        except SystemExit as error:  # argparse refusing an option's value: usage and one error line, exit 2
            status, usage = error.code, True
    text = stderr.getvalue()
    return judge(case, root, before, snapshot(root), status, text, usage)


def judge(case: Case, root: Path, before: Dict[str, tuple], after: Dict[str, tuple], status, text: str,
          usage: bool) -> Outcome:
    for path in case.inputs:
        relative = os.path.relpath(str(path), str(root))
        old = {k: v for k, v in before.items() if _within(k, relative)}
        new = {k: v for k, v in after.items() if _within(k, relative)}
        if old != new:
            return Outcome("fail", "input changed: {} (exit {})".format(relative, status))
    stray = stray_changes(before, after, root, case.outputs)
    if stray:
        return Outcome("fail", "outside the output (exit {}): {}".format(status, ", ".join(stray[:6])))
    if status == 0 and not usage:
        return Outcome("ok")
    if usage and status == 2:
        last = text.rstrip("\n").split("\n")[-1]
        if ": error: " not in last or len(last) > MAX_LINE:
            return Outcome("fail", "usage error without a short error line: {!r}".format(text[-300:]))
        verdict = Outcome("refused", last[:160])
    elif status != 1:
        return Outcome("fail", "exit status {}".format(status))
    elif not _short_lines(text, case.arguments[:2] == ["constraints", "check"]):
        return Outcome("fail", "stderr is not one short line: {!r}".format(text[:300]))
    else:
        verdict = Outcome("refused", text.strip()[:160])
    if before != after:
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        return Outcome("fail", "refused but left {}".format(changed[:6]))
    return verdict


def _short_lines(text: str, report: bool) -> bool:
    """One short line; a checker's report (`constraints check`) may list several problems, a short line each,
    or none (with --json the problems are in the JSON on stdout)."""
    if report and not text:
        return True
    lines = text.split("\n")
    if not text.endswith("\n") or (len(lines) != 2 and not report):
        return False
    return all(0 < len(line) <= MAX_LINE for line in lines[:-1])


def choose_command(kind: str, path: Path, root: Path, rng: random.Random) -> Case:
    out, clip = root / "out", root / "clip"
    if kind in NEW_KINDS:
        return new_case(kind, root, path, rng)
    if kind in ("glb_rig", "gltf_motion", "fbx_rig") or path.suffix == ".gltf":  # a .gltf is read as a target only
        return Case(["retarget", str(clip), "--target", str(path), "-o", str(out / "r.glb")],
                    [("file", out / "r.glb")], [clip, path])
    roll = rng.random()
    if roll < 0.75:
        return Case(["inspect", str(path)], [], [path])
    target = out / ("c.glb" if roll < 0.9 else "c.bvh")
    return Case(["convert", str(path), str(target)], [("file", target)], [path])


NEW_KINDS = ("constraints_kimodo", "constraints_animotive", "map", "vrm0", "vrm1", "skin", "timeline", "folder")
PLANTS = {3: "crash", 6: "slow", 9: "memory", 12: "hang", 15: "delete", 18: "modify"}


def plant_after(plant: Optional[str], root: Path, path: Path) -> None:
    """What a careless command might do, done after it ran: the checks of the case's folder must see it."""
    if plant == "delete":
        (root / "keep" / "bystander.txt").unlink()
    elif plant == "modify":
        target = path if path.is_file() else sorted(p for p in path.iterdir() if p.is_file())[0]
        with open(str(target), "ab") as stream:
            stream.write(b"\n")


def prepare_case(root: Path, seeds: Dict[str, Dict[str, bytes]], kind: str) -> None:
    """The case's folder: case/ (the mutated input), out/, clip/ (a sound clip), keep/ (a bystander's file),
    tmp/ (the temporary folder the command sees), rig.glb for a --map case. The folders are emptied and
    refilled rather than made anew: creating and removing folders is what costs here (ms each)."""
    # constraints are measured against the longer clip their seeds were extracted from
    clip = seeds["timeline" if kind.startswith("constraints") else "clip"]
    layout: Dict[str, Optional[Dict[str, bytes]]] = {
        "case": {}, "out": {}, "tmp": {}, "clip": clip, "keep": {"bystander.txt": b"not the output's\n"}}
    if kind == "map":
        layout["rig.glb"] = None
    root.mkdir(exist_ok=True)
    for entry in list(os.scandir(str(root))):
        if entry.name not in layout or entry.is_symlink() or entry.is_dir() != (layout[entry.name] is not None):
            _remove(Path(entry.path))
    for name, files in layout.items():
        if files is None:
            _refill_file(root / name, seeds["glb_rig"]["rig.glb"])
            continue
        folder = root / name
        folder.mkdir(exist_ok=True)
        for entry in list(os.scandir(str(folder))):
            if entry.name not in files or entry.is_symlink() or not entry.is_file():
                _remove(Path(entry.path))
        for file_name, data in files.items():
            _refill_file(folder / file_name, data)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(str(path))
    else:
        path.unlink()


def _refill_file(path: Path, data: bytes) -> None:
    try:
        if path.is_file() and not path.is_symlink() and path.stat().st_size == len(data) and path.read_bytes() == data:
            return
    except OSError:
        pass
    if os.path.lexists(str(path)):
        _remove(path)
    path.write_bytes(data)


def worker(args) -> int:
    """Run cases start..cases-1, reporting `start N` and `end N verdict cpu detail` lines on stdout."""
    try:
        import resource
        limit = args.memory_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):  # no address-space cap here (not Linux): the hang guard stays
        pass
    logging.getLogger("kimodo_rig").setLevel(logging.ERROR)  # warnings are not the contract's line
    logging.getLogger("kimodo_rig").addHandler(logging.NullHandler())
    work = Path(tempfile.mkdtemp(prefix="worker-", dir=args.work))  # the supervisor removes args.work
    report = sys.__stdout__
    try:
        seeds = build_seeds(work)
        kinds = sorted(kind for kind in seeds if kind not in FBX_KINDS)
        special = not_files(work)
        root = work / "root"
        numbers = [args.only] if args.only is not None else range(args.start, args.cases)
        for number in numbers:
            rng = random.Random("{}:{}".format(args.seed, number))
            plant = PLANTS.get(number) if args.plant else None
            os.chdir(str(work))
            if number < len(special):
                name, make = special[number]
                kind, how = name, "not a file"
                prepare_case(root, seeds, kind)
                path = make(root / "case")
            else:
                kind = rng.choice(kinds)
                fbx_roll = random.Random("fbx:{}:{}".format(args.seed, number))
                if fbx_roll.random() < len(FBX_KINDS) / (len(kinds) + len(FBX_KINDS)):
                    kind, rng = fbx_roll.choice(FBX_KINDS), fbx_roll
                how, files = mutate(kind, seeds[kind], rng)
                if plant in ("delete", "modify"):  # a sound file and a command that reads it: only the plant fails
                    kind, how, files = "bvh_soma", "none", seeds["bvh_soma"]
                prepare_case(root, seeds, kind)
                base = root / "case" / "clip" if kind == "folder" else root / "case"  # a folder case: other files beside
                base.mkdir(exist_ok=True)
                for file_name, data in files.items():
                    (base / file_name).write_bytes(data)
                if kind in ("clip", "timeline", "folder"):
                    path = base
                else:
                    path = base / next(n for n in sorted(files) if not n.endswith(".json") or len(files) == 1)
            case = choose_command(kind, path, root, rng)
            how = case.how or how
            os.chdir(str(root))  # a relative write lands in the case's folder, where it is seen
            tempfile.tempdir = str(root / "tmp")
            print("start {} {} {} {}".format(number, kind, how.replace(" ", "_"), case.arguments[0]), file=report, flush=True)
            before = time.process_time()
            try:
                if plant == "crash":
                    raise ValueError("planted crash")
                if plant == "slow":
                    end = time.process_time() + args.case_seconds * 1.1
                    while time.process_time() < end:
                        pass
                if plant == "memory":
                    bytearray(args.memory_mb << 20)
                if plant == "hang":
                    time.sleep(3600)
                if plant in ("delete", "modify"):
                    snapshot_before = snapshot(root)
                    run_command(case, root)
                    plant_after(plant, root, path)
                    outcome = judge(case, root, snapshot_before, snapshot(root), 0, "", False)
                else:
                    outcome = run_command(case, root)
            except MemoryError:
                outcome = Outcome("fail", "MemoryError (over the {} MB cap)".format(args.memory_mb))
            except RecursionError:
                outcome = Outcome("fail", "RecursionError")
            except Exception as error:  # noqa: BLE001 - the point: nothing but KimodoError (caught in main) may escape
                outcome = Outcome("fail", "{}: {}".format(type(error).__name__, str(error)[:200]))
            finally:
                tempfile.tempdir = None
                os.chdir(str(work))
            cpu = time.process_time() - before
            if outcome.verdict != "fail" and cpu > args.case_seconds:
                outcome = Outcome("fail", "slow: {:.2f} s of CPU (limit {} s)".format(cpu, args.case_seconds))
            if outcome.verdict == "fail" and args.keep:
                keep = Path(args.keep) / "case{}".format(number)
                shutil.rmtree(keep, ignore_errors=True)
                if not os.path.islink(path) and (path.is_dir() or path.is_file()):
                    shutil.copytree(root / "case", keep, symlinks=True)
            print("end {} {} {:.3f} {}".format(number, outcome.verdict, cpu, outcome.detail.replace("\n", "\\n")),
                  file=report, flush=True)
    finally:
        os.chdir(str(ROOT))
        shutil.rmtree(work, ignore_errors=True)
    return 0


def supervise(args) -> int:
    """Run the worker, restart it after a hang or a death, and print failures and a summary."""
    counts: Dict[str, int] = {}
    failures: List[str] = []
    slowest = (0.0, -1)
    start = args.start
    total = 1 if args.only is not None else args.cases - args.start
    began = time.time()
    args.work = tempfile.mkdtemp(prefix="kimodo-fuzz-")  # a killed worker cannot clean up after itself
    try:
        return _supervise(args, counts, failures, slowest, start, total, began)
    finally:
        shutil.rmtree(args.work, ignore_errors=True)


def _supervise(args, counts, failures, slowest, start, total, began) -> int:
    kinds: Dict[str, int] = {}
    args.kinds = kinds
    while True:
        command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--start", str(start)]
        for option in ("cases", "seed", "memory_mb", "case_seconds", "keep", "only", "work"):
            value = getattr(args, option)
            if value is not None:
                command += ["--" + option.replace("_", "-"), str(value)]
        if args.plant:
            command.append("--plant")
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
        current: Optional[str] = None
        current_number = start
        deadline = None
        pending = b""  # read with os.read: a buffered reader would hide a line select() has already seen
        finished = False
        while True:
            if b"\n" not in pending:
                timeout = None if deadline is None else max(0.0, deadline - time.time())
                ready, _, _ = select.select([process.stdout], [], [], timeout)
                if not ready:  # the case in progress has not answered: a hang
                    process.kill()
                    process.wait()
                    failures.append("case {} ({}): hang: no answer in {} s".format(current_number, current, args.hang_seconds))
                    counts["fail"] = counts.get("fail", 0) + 1
                    break
                data = os.read(process.stdout.fileno(), 1 << 16)
                if data:
                    pending += data
                    continue
                process.wait()
                error = process.stderr.read().decode("utf-8", "replace")
                if current is not None:
                    failures.append("case {} ({}): the worker died (exit {}): {}".format(
                        current_number, current, process.returncode, error[-300:].strip()))
                    counts["fail"] = counts.get("fail", 0) + 1
                elif process.returncode != 0:
                    failures.append("worker failed before any case: " + error[-2000:])
                    counts["fail"] = counts.get("fail", 0) + 1
                    return _summary(args, counts, failures, slowest, began, total)
                else:
                    finished = True
                break
            line, pending = pending.split(b"\n", 1)
            words = line.decode("utf-8", "replace").split(" ", 4)
            if words[0] == "start":
                current_number, current = int(words[1]), " ".join(words[2:])
                kinds[words[2]] = kinds.get(words[2], 0) + 1
                deadline = time.time() + args.hang_seconds
            elif words[0] == "end":
                verdict, cpu = words[2], float(words[3])
                counts[verdict] = counts.get(verdict, 0) + 1
                slowest = max(slowest, (cpu, current_number))
                if verdict == "fail":
                    failures.append("case {} ({}): {}".format(current_number, current, words[4] if len(words) > 4 else ""))
                current, deadline = None, None
        if finished or args.only is not None or current_number + 1 >= args.cases:
            break
        start = current_number + 1
    return _summary(args, counts, failures, slowest, began, total)


def _summary(args, counts, failures, slowest, began, total) -> int:
    for failure in failures:
        print(failure)
    kinds = getattr(args, "kinds", {})
    print("cases by kind: " + ", ".join("{} {}".format(kind, kinds[kind]) for kind in sorted(kinds)))
    print("fuzz: {} cases (seed {}), {} read, {} refused in one line, {} failures; slowest case {:.2f} s CPU "
          "(case {}), {:.0f} s in all".format(total, args.seed, counts.get("ok", 0), counts.get("refused", 0),
                                              len(failures), slowest[0], slowest[1], time.time() - began))
    return 1 if failures else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--only", type=int, help="run case N alone")
    parser.add_argument("--memory-mb", type=int, default=1024, help="address-space cap of the worker")
    parser.add_argument("--case-seconds", type=float, default=2.0, help="CPU seconds a case may take")
    parser.add_argument("--hang-seconds", type=float, default=10.0, help="wall seconds before a case is a hang")
    parser.add_argument("--keep", help="copy failing cases into this folder")
    parser.add_argument("--plant", action="store_true", help="plant a crash, a slow case, a memory hog, a hang, a "
                                                             "deleted bystander and a modified input (cases 3, 6, 9, "
                                                             "12, 15, 18): the fuzzer must report each")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    return worker(args) if args.worker else supervise(args)


if __name__ == "__main__":
    sys.exit(main())
