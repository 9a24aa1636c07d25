"""Fuzz every reader and command with the shared test files, mutated in seeded, repeatable ways.

    python3 scripts/fuzz.py --cases 3000 --seed 1       # the test suite runs a few thousand
    python3 scripts/fuzz.py --cases 200000 --seed 7 --keep fuzz-failures

Standard library only (it imports kimodo_rig from this checkout). Seeds are cut from tests/data to a
few frames: Kimodo's SOMA BVH, the CMU BVH, both Kimodo NPZ layouts (also re-zipped deflate, bzip2 and
lzma), an AMASS NPZ, the G1 CSV, a motion .glb and .gltf, the MPFB2 rig, a raw clip and a meta.json.
Each case mutates one seed (bytes, text, numbers, glTF JSON, .npy headers, zip fields) and runs a
command on it in-process: inspect, convert to .glb or .bvh, or (rig and .gltf) retarget onto it. The first
cases are files that are not files: a symlink to /dev/zero and a FIFO for every extension.

A case passes when the command exits 0, or exits 1 with one stderr line of at most a few hundred
characters and writes nothing. It fails on any other exception, more than --case-seconds of CPU time,
MemoryError under the worker's address-space cap (--memory-mb), or no answer within --hang-seconds (the
worker is killed and restarted after that case). Case N is reproducible alone: --seed S --only N.
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


def _clip(folder: Path) -> Dict[str, bytes]:
    roots = (folder / "root_positions.f32").read_bytes()
    rotations = (folder / "local_rotations_xyzw.f32").read_bytes()
    frames = len(roots) // 12
    return {"root_positions.f32": roots[:FRAMES * 12],
            "local_rotations_xyzw.f32": rotations[:len(rotations) // frames * FRAMES],
            "prompt.txt": (folder / "prompt.txt").read_bytes()}


def build_seeds(work: Path) -> Dict[str, Dict[str, bytes]]:
    """kind -> {file name: bytes}; a kind with several files is a folder (raw clip, NPZ with meta.json)."""
    from kimodo_rig.formats import glb, raw

    reference, clips = DATA / "reference", DATA / "clips"
    clip = _clip(clips / "soma_01_single_text_prompt")
    folder = work / "seed_clip"
    folder.mkdir()
    for name, data in clip.items():
        (folder / name).write_bytes(data)
    motion_glb = glb.encode(raw.read(folder))
    shutil.rmtree(folder)
    current = _cut_npz(reference / "soma_01_single_text_prompt_somaskel77.npz")
    gltf, binary = split_glb(motion_glb)
    gltf["buffers"] = [{"byteLength": len(binary), "uri": "data:application/octet-stream;base64,"
                        + base64.b64encode(binary).decode("ascii")}]
    return {
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
        "clip": clip,
    }


def split_glb(data: bytes) -> Tuple[dict, bytes]:
    length = struct.unpack_from("<I", data, 12)[0]
    gltf = json.loads(data[20:20 + length].decode("utf-8"))
    at = 20 + length
    binary = data[at + 8:at + 8 + struct.unpack_from("<I", data, at)[0]] if at + 8 <= len(data) else b""
    return gltf, binary


NEST = "\u0000nest{}"


def dump_json(gltf: dict) -> bytes:
    """JSON text, with any NEST marker spelled out as that many nested lists."""
    text = json.dumps(gltf, separators=(",", ":"))
    for match in set(re.findall(r'"\\u0000nest(\d+)"', text)):
        depth = int(match)
        text = text.replace('"\\u0000nest{}"'.format(match), "[" * depth + "]" * depth)
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
    elif kind.startswith(("bvh", "csv", "gltf")) and rng.random() < 0.7:
        how, files[name] = mutate_text(data, rng)
    else:
        how, files[name] = mutate_bytes(data, rng)
    return how, files


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


def run_command(arguments: List[str], out: Path, input_path: Path) -> Outcome:
    """kimodo-rig's main() in-process; the contract: 0, or 1 with one short stderr line, nothing written."""
    from kimodo_rig import cli

    stderr, stdout = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
        status = cli.main(arguments)
    text = stderr.getvalue()
    if status == 0:
        return Outcome("ok")
    left = sorted(p.name for p in out.iterdir())
    if status != 1:
        return Outcome("fail", "exit status {}".format(status))
    if text.count("\n") != 1 or not text.endswith("\n") or len(text) > MAX_LINE + 1:
        return Outcome("fail", "stderr is not one short line: {!r}".format(text[:300]))
    if left:
        return Outcome("fail", "refused but left {}".format(left))
    return Outcome("refused", text.strip()[:160])


def choose_command(kind: str, path: Path, out: Path, rng: random.Random, clip: Path) -> List[str]:
    if kind in ("glb_rig", "gltf_motion") or path.suffix == ".gltf":  # a .gltf is read as a target only
        return ["retarget", str(clip), "--target", str(path), "-o", str(out / "r.glb")]
    roll = rng.random()
    if roll < 0.75:
        return ["inspect", str(path)]
    if roll < 0.9:
        return ["convert", str(path), str(out / "c.glb")]
    return ["convert", str(path), str(out / "c.bvh")]


PLANTS = {3: "crash", 6: "slow", 9: "memory", 12: "hang"}


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
        kinds = sorted(seeds)
        special = not_files(work)
        clip = work / "clip"
        clip.mkdir()
        for name, data in seeds["clip"].items():
            (clip / name).write_bytes(data)
        numbers = [args.only] if args.only is not None else range(args.start, args.cases)
        for number in numbers:
            rng = random.Random("{}:{}".format(args.seed, number))
            folder = work / "case"
            out = work / "out"
            for stale in (folder, out):
                shutil.rmtree(stale, ignore_errors=True)
                stale.mkdir()
            if number < len(special):
                name, make = special[number]
                kind, how = name, "not a file"
                path = make(folder)
            else:
                kind = rng.choice(kinds)
                how, files = mutate(kind, seeds[kind], rng)
                for file_name, data in files.items():
                    (folder / file_name).write_bytes(data)
                path = folder if kind == "clip" else folder / next(n for n in sorted(files) if not n.endswith(".json"))
            command = choose_command(kind, path, out, rng, clip)
            print("start {} {} {} {}".format(number, kind, how.replace(" ", "_"), command[0]), file=report, flush=True)
            before = time.process_time()
            try:
                plant = PLANTS.get(number) if args.plant else None
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
                outcome = run_command(command, out, path)
            except MemoryError:
                outcome = Outcome("fail", "MemoryError (over the {} MB cap)".format(args.memory_mb))
            except RecursionError:
                outcome = Outcome("fail", "RecursionError")
            except Exception as error:  # noqa: BLE001 - the point: nothing but KimodoError (caught in main) may escape
                outcome = Outcome("fail", "{}: {}".format(type(error).__name__, str(error)[:200]))
            cpu = time.process_time() - before
            if outcome.verdict != "fail" and cpu > args.case_seconds:
                outcome = Outcome("fail", "slow: {:.2f} s of CPU (limit {} s)".format(cpu, args.case_seconds))
            if outcome.verdict == "fail" and args.keep:
                keep = Path(args.keep) / "case{}".format(number)
                shutil.rmtree(keep, ignore_errors=True)
                if not os.path.islink(path) and (path.is_dir() or path.is_file()):
                    shutil.copytree(folder, keep)
            print("end {} {} {:.3f} {}".format(number, outcome.verdict, cpu, outcome.detail.replace("\n", "\\n")),
                  file=report, flush=True)
    finally:
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
    parser.add_argument("--hang-seconds", type=float, default=20.0, help="wall seconds before a case is a hang")
    parser.add_argument("--keep", help="copy failing cases into this folder")
    parser.add_argument("--plant", action="store_true", help="plant a crash, a slow case, a memory hog and a hang "
                                                             "(cases 3, 6, 9, 12): the fuzzer must report each")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    return worker(args) if args.worker else supervise(args)


if __name__ == "__main__":
    sys.exit(main())
