"""Hostile inputs: one regression test for each way issue 9's fuzzing broke the one-line contract, built
from the project's own test files (the seeds of test_corrupt_inputs). Each asserts the exact line; the
memory cases measure the reader's allocations with tracemalloc, the blocking ones run the command line
with a timeout. Speed is not asserted here: benchmarks/bench_linear.py shows the fixes are linear."""
from __future__ import annotations

import io
import json
import os
import re
import resource
import struct
import subprocess
import sys
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, run_cli
from kimodo_rig.retarget import character as targets
from kimodo_rig.errors import MAX_MESSAGE, KimodoError
from kimodo_rig.formats import gltf_document, read_file
from test_corrupt_inputs import _glb, _glb_chunks, _npy, _npy_header, seeds  # noqa: F401 - seeds is a fixture


def _refused(path, message: str, reader=read_file) -> None:
    with pytest.raises(KimodoError) as caught:
        reader(path)
    assert str(caught.value) == "{}: {}".format(path, message)


def _refusal_and_peak(path):
    """The KimodoError line reading `path` gives, and the most memory Python allocated meanwhile."""
    tracemalloc.start()
    try:
        with pytest.raises(KimodoError) as caught:
            read_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return str(caught.value), peak


def _bvh_with(seeds, tmp_path, old: str, new, name: str = "hostile.bvh") -> Path:
    data = seeds["bvh_soma"].read_bytes()
    assert old.encode() in data
    path = tmp_path / name
    path.write_bytes(data.replace(old.encode(), new if isinstance(new, bytes) else new.encode("utf-8"), 1))
    return path


# ---------------------------------------------------------------------------------------------- BVH

@pytest.mark.parametrize("count, shown", [("\u00b2".encode("utf-8"), "\u00b2"), (b"\xb3", "\u00b3")],
                         ids=["superscript_utf8", "latin1_byte_b3"])
def test_bvh_channel_count_in_superscript_digits_is_refused(seeds, tmp_path, count, shown):
    """str.isdigit() took '\u00b2' (and '\u00b3', what byte 0xB3 of a latin-1 file reads as); int() refused it."""
    text = seeds["bvh_soma"].read_text(encoding="utf-8")
    line = text[:text.index("CHANNELS 3")].count("\n") + 1
    path = _bvh_with(seeds, tmp_path, "CHANNELS 3", b"CHANNELS " + count)
    _refused(path, "line {}: expected a channel count (0 to 6), got {!r}".format(line, shown))


@pytest.mark.parametrize("frame_time, shown", [("1e-320", "1e-320"), ("200", "200.0"), ("0.0001", "0.0001")])
def test_bvh_frame_time_outside_1_to_1000_fps_is_refused(seeds, tmp_path, frame_time, shown):
    """1e-320 s overflowed the rate; 200 s rounded it to 0 and inspect divided by zero."""
    old = next(line for line in seeds["bvh_soma"].read_text(encoding="utf-8").splitlines() if line.startswith("Frame Time"))
    path = _bvh_with(seeds, tmp_path, old, "Frame Time: " + frame_time)
    _refused(path, "Frame Time {} s is not a frame period (1 to 1000 fps)".format(shown))
    result = run_cli("inspect", path)
    assert (result.returncode, result.stdout, result.stderr) == (
        1, "", "{}: Frame Time {} s is not a frame period (1 to 1000 fps)\n".format(path, shown))


@pytest.mark.parametrize("number", ["1_0", "\u0661\u0662", "infinity"])
def test_bvh_numbers_float_takes_but_bvh_never_writes_are_refused(seeds, tmp_path, number):
    first = seeds["bvh_soma"].read_text(encoding="utf-8").splitlines()[-1].split()[0]
    text = seeds["bvh_soma"].read_text(encoding="utf-8").splitlines()
    text[-1] = " ".join([number] + text[-1].split()[1:])
    path = tmp_path / "odd.bvh"
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    assert first != number
    with pytest.raises(KimodoError) as caught:
        read_file(path)
    assert str(caught.value) in ("{}: line {}: {!r} is not a number".format(path, len(text), number),
                                 "{}: line {}: value 1 is {}".format(path, len(text), number))


def test_bvh_with_thousands_of_sibling_joints_converts_to_glb(tmp_path):
    """The .glb writer asked every joint for its children by scanning all joints (quadratic)."""
    joints = "".join("  JOINT j{} {{ OFFSET 0.1 0.2 0.3 CHANNELS 3 Zrotation Yrotation Xrotation End Site {{ OFFSET 0 1 0 }} }}\n"
                     .format(i) for i in range(3000))
    path = tmp_path / "wide.bvh"
    path.write_text("HIERARCHY\nROOT r {\n OFFSET 0 0 0\n CHANNELS 6 Xposition Yposition Zposition Zrotation "
                    "Yrotation Xrotation\n" + joints + "}\nMOTION\nFrames: 1\nFrame Time: 0.033333\n"
                    + "0 " * (6 + 3 * 3000) + "\n", encoding="utf-8")
    result = run_cli("convert", path, tmp_path / "wide.glb")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("{}: wide, 3001 joints, 1 frames".format(path))


# ---------------------------------------------------------------------------------------------- glTF

def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_gltf_json_nested_2000_deep_is_refused_in_text_and_in_a_glb(seeds, tmp_path):
    """json.loads raised RecursionError (a 4 KB file)."""
    text = tmp_path / "deep.gltf"
    text.write_text('{"asset": {"version": "2.0"}, "extras": ' + _deep(2000) + "}", encoding="utf-8")
    _refused(text, "the glTF JSON nests more than 64 levels deep", lambda p: targets.load_target(str(p)))
    gltf, binary = _glb_chunks(seeds["glb_motion"].read_bytes())
    gltf["extras"] = "DEEP"
    data = _glb(gltf, binary)
    chunk = json.dumps(gltf).encode("utf-8")
    deep = chunk.replace(b'"DEEP"', _deep(2000).encode("ascii"))
    deep += b" " * (-len(deep) % 4)
    binary_part = data[20 + struct.unpack_from("<I", data, 12)[0]:]
    glb_path = tmp_path / "deep.glb"
    glb_path.write_bytes(struct.pack("<III", 0x46546C67, 2, 20 + len(deep) + len(binary_part))
                         + struct.pack("<II", len(deep), 0x4E4F534A) + deep + binary_part)
    _refused(glb_path, "the GLB's JSON chunk nests more than 64 levels deep")  # as a motion
    _refused(glb_path, "the GLB's JSON chunk nests more than 64 levels deep", lambda p: targets.load_target(str(p)))


# The brackets outside strings as two regular expressions find them: the reference for the scan.
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


@pytest.mark.parametrize("slice_characters", [1, 2, 3, 7, 1 << 16])
@pytest.mark.parametrize("text", [
    '{"a": [1, {"b": "[[["}], "c": "}"}', '{"a": "unclosed [[[', '[[{"k": "]"}, "x"]]', '"{"', '', '{}',
    '{"q": "a \\" [ quote"}', '{"name": "caf\u00e9 [", "v": [[]]}', '{"\u00e9": [[[1]]]}', '[1, 2, {"a": [[[]]]}]',
    '{"a": "\\\\", "b": ["\\\\\\"]", [{}]]}', '["\\\\\\\\\\\\\\\\" ,[]]', '[{"\\u005b": "\\"[\\\\"}, [["\U0001F600]"]]]',
    '{"unclosed": "\\', '["\\\\\\', '[' * 20 + '"' + '\\"' * 9 + '"' + ']' * 20,
])
def test_the_depth_guards_scan_finds_what_the_regular_expressions_find(text, slice_characters, monkeypatch):
    """limits.json_brackets scans a slice at a time (slices of one character on, so every cut lands
    inside a string, an escape or a run of backslashes somewhere); it must give the brackets outside
    strings, in order, as the regular expressions do over the whole text."""
    from kimodo_rig.formats import limits

    monkeypatch.setattr(limits, "JSON_SCAN_CHARACTERS", slice_characters)
    assert limits.json_brackets(text).decode("ascii") == _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))


def test_the_depth_scan_of_a_long_string_with_a_backslash_takes_little_memory():
    """A .gltf whose text had one non-ASCII character or one backslash took the regular expressions,
    whose backtracking kept an entry per character of a string: about 125 bytes per byte (8 MB of text,
    1 GB). The scan, and json.loads after it, now stay within a few bytes per character."""
    from kimodo_rig.formats import limits

    data_uri = "data:application/octet-stream;base64," + "QUJD" * 750000  # a 3 MB buffer in the text
    text = ('{"asset": {"version": "2.0", "generator": "caf\u00e9 \\\\ \\"x\\""}, "nodes": ['
            + ", ".join('{"name": "n\\\\%d"}' % k for k in range(20000)) + '], "buffers": [{"uri": "' + data_uri + '"}]}')
    tracemalloc.start()
    try:
        gltf = limits.parse_json(text, "big.gltf", "the glTF JSON")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert gltf["asset"]["generator"] == 'caf\u00e9 \\ "x"' and len(gltf["nodes"]) == 20000
    assert peak < 4 * len(text) + (8 << 20), (peak, len(text))


def test_meta_json_nested_2000_deep_beside_an_npz_leaves_the_prompt_empty(tmp_path):
    """The demo clips' meta.json gives the prompt; a hostile one raised RecursionError from json.loads."""
    from conftest import NPZ

    folder = tmp_path / "clip"
    folder.mkdir()
    (folder / "motion.npz").write_bytes((NPZ / "soma_01_single_text_prompt" / "motion.npz").read_bytes())
    (folder / "meta.json").write_text('{"text": ' + _deep(2000) + "}", encoding="utf-8")
    motion = read_file(folder / "motion.npz")
    assert motion.prompt == "" and motion.frame_count > 0


def test_node_cycle_in_12000_nodes_is_found(seeds, tmp_path):
    gltf, binary = _glb_chunks(seeds["glb_motion"].read_bytes())
    start = len(gltf["nodes"])
    gltf["nodes"] += [{"children": [start + i + 1]} for i in range(11999)] + [{"children": [start]}]
    path = tmp_path / "cycle.glb"
    path.write_bytes(_glb(gltf, binary))
    _refused(path, "nodes[{}] is its own ancestor (the node hierarchy has a cycle)".format(start))


def test_accessor_without_buffer_view_shared_by_every_channel_is_decoded_once(seeds, tmp_path):
    """Every channel's keys from one data-less accessor of 65,536 items: decoded for each channel, the
    290 KB file took 2 GB. Now one list, shared, and refused for not matching the key times."""
    gltf, binary = _glb_chunks(seeds["glb_motion"].read_bytes())
    gltf["accessors"].append({"componentType": 5126, "count": 65536, "type": "VEC4"})
    shared = len(gltf["accessors"]) - 1
    for sampler in gltf["animations"][0]["samplers"]:
        sampler["output"] = shared
    document = gltf_document.parse_glb(_glb(gltf, binary), "shared.glb")
    assert document.accessor(shared) is document.accessor(shared)
    path = tmp_path / "shared.glb"
    path.write_bytes(_glb(gltf, binary))
    message, peak = _refusal_and_peak(path)
    assert message == "{}: the rotation keys of node 0 do not match the animation's 6 key times".format(path)
    assert peak < 20 << 20, peak


def test_accessors_without_buffer_views_beyond_the_decode_budget_are_refused(seeds, tmp_path):
    gltf, binary = _glb_chunks(seeds["glb_motion"].read_bytes())
    first = len(gltf["accessors"])
    for index, sampler in enumerate(gltf["animations"][0]["samplers"]):
        gltf["accessors"].append({"componentType": 5126, "count": 65536, "type": "VEC4"})
        sampler["output"] = first + index
    path = tmp_path / "zeros.glb"
    path.write_bytes(_glb(gltf, binary))
    budget = gltf_document.DECODE_BUDGET_ITEMS + len(binary)
    overflowing = first + budget // 65536  # the accessor that takes the total past the budget
    _refused(path, "accessor {} takes the items decoded past {} (accessors overlap or have no data)".format(
        overflowing, budget))


def _with_times(seeds, tmp_path, times) -> Path:
    gltf, binary = _glb_chunks(seeds["glb_motion"].read_bytes())
    accessor = gltf["accessors"][gltf["animations"][0]["samplers"][0]["input"]]
    view = gltf["bufferViews"][accessor["bufferView"]]
    binary = bytearray(binary)
    struct.pack_into("<{}f".format(len(times)), binary, view.get("byteOffset", 0) + accessor.get("byteOffset", 0), *times)
    accessor["max"] = [max(times)]
    path = tmp_path / "times.glb"
    path.write_bytes(_glb(gltf, bytes(binary)))
    return path


def test_key_times_spanning_10000_s_are_refused(seeds, tmp_path):
    """Six keys over 10,000 s rounded the rate to 0 fps."""
    path = _with_times(seeds, tmp_path, [i * 2000.0 for i in range(6)])
    _refused(path, "the key times' frame period 2000.0 s is not a frame period (1 to 1000 fps)")


@pytest.mark.parametrize("scale, shown", [(0.0, "frame 0, joint 0"), (2.0, "frame 0, joint 0")])
def test_zero_or_scaled_rotation_keys_are_refused_as_the_raw_reader_does(seeds, tmp_path, scale, shown):
    gltf, binary = _glb_chunks(seeds["glb_motion"].read_bytes())
    sampler = gltf["animations"][0]["samplers"][gltf["animations"][0]["channels"][0]["sampler"]]
    accessor = gltf["accessors"][sampler["output"]]
    at = gltf["bufferViews"][accessor["bufferView"]].get("byteOffset", 0) + accessor.get("byteOffset", 0)
    binary = bytearray(binary)
    q = struct.unpack_from("<4f", binary, at)
    struct.pack_into("<4f", binary, at, *(c * scale for c in q))
    path = tmp_path / "keys.glb"
    path.write_bytes(_glb(gltf, bytes(binary)))
    _refused(path, "the animation's rotation keys are not unit quaternions ({})".format(shown))


# ---------------------------------------------------------------------------------------------- NPZ

def _npz(members, method=zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=method) as archive:
        for name, data in members:
            archive.writestr(name, data)
    return buffer.getvalue()


def _current_members(seeds):
    with zipfile.ZipFile(seeds["npz_current"]) as archive:
        return [(info.filename, archive.read(info)) for info in archive.infolist()]


def _replace(members, name, data):
    return [(n, data if n == name else d) for n, d in members]


def test_text_arrays_where_numbers_are_expected_are_refused(seeds, tmp_path):
    """A '<U1' local_rot_mats raised TypeError deep in the matrix code."""
    members = _current_members(seeds)
    path = tmp_path / "text.npz"
    path.write_bytes(_npz(_replace(members, "local_rot_mats.npy", _npy(np.array(["a"] * 9).reshape(1, 1, 3, 3)))))
    _refused(path, "local_rot_mats.npy: holds text (<U1) where numbers are expected")


def test_invalid_utf32_in_a_text_member_is_refused(seeds, tmp_path):
    members = _current_members(seeds)
    path = tmp_path / "utf32.npz"
    path.write_bytes(_npz(_replace(members, "root_positions.npy", _npy_header("<U1", (2,)) + b"\xff\xff\xff\xff" * 2)))
    _refused(path, "root_positions.npy: holds text that is not valid UTF-32")


@pytest.mark.parametrize("method", [zipfile.ZIP_LZMA, zipfile.ZIP_BZIP2], ids=["lzma", "bzip2"])
def test_damaged_lzma_and_bzip2_members_get_one_line(seeds, tmp_path, method):
    """LZMAError is not an OSError: it escaped."""
    data = bytearray(_npz(_current_members(seeds), method))
    start = data.index(b"local_rot_mats.npy") + len("local_rot_mats.npy")
    data[start + 40:start + 60] = b"\x00" * 20
    path = tmp_path / "damaged.npz"
    path.write_bytes(bytes(data))
    with pytest.raises(KimodoError) as caught:
        read_file(path)
    assert str(caught.value).startswith("{}: local_rot_mats.npy: ".format(path))


def _zeros_npz(method: int, megabytes: int) -> bytes:
    """An .npz whose local_rot_mats.npy is `megabytes` MB of float32 zeros, compressed with `method`."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=method) as archive:
        with archive.open("local_rot_mats.npy", "w", force_zip64=True) as stream:
            stream.write(_npy_header("<f4", (megabytes << 18,)))
            for _ in range(megabytes):
                stream.write(b"\0" * (1 << 20))
        archive.writestr("root_positions.npy", _npy(np.zeros((1, 3), "<f4")))
    return buffer.getvalue()


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA, zipfile.ZIP_DEFLATED],
                         ids=["bzip2", "lzma", "deflate"])
def test_compressed_member_lying_about_its_size_is_cut_at_the_declared_size(seeds, tmp_path, method):
    """zipfile trusts a bzip2 or lzma member's declared size and decompresses whole chunks: 2.3 KB took
    1.4 GB. A member declaring 4 KB that expands to 64 MB must be refused after reading about 4 KB."""
    data = bytearray(_zeros_npz(method, 64))
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):  # uncompressed size, both headers
        at = data.index(signature)
        if data[at + offset:at + offset + 4] != b"\xff\xff\xff\xff":
            struct.pack_into("<I", data, at + offset, 4096)
        else:  # zip64: the size lives in the extra field, first 8 bytes of its data
            name_length, extra_length = struct.unpack_from("<HH", data, at + (28 if offset == 24 else 26))
            extra = at + (46 if offset == 24 else 30) + name_length
            struct.pack_into("<Q", data, extra + 4, 4096)
    path = tmp_path / "bomb.npz"
    path.write_bytes(bytes(data))
    message, peak = _refusal_and_peak(path)
    assert message.startswith("{}: local_rot_mats.npy: ".format(path))
    assert peak < 16 << 20, "reading a member that declares 4 KB took {} MB".format(peak >> 20)


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA, zipfile.ZIP_DEFLATED],
                         ids=["bzip2", "lzma", "deflate"])
def test_declared_size_over_the_budget_is_refused_before_decompressing(seeds, tmp_path, method):
    """DEFLATE at 1028:1 passed the ratio check; bzip2 and lzma were not checked at all."""
    from kimodo_rig.formats import npy

    path = tmp_path / "big.npz"
    path.write_bytes(_zeros_npz(method, 160))
    declared = 160 << 20
    declared += len(_npy_header("<f4", (40 << 20,)))
    _refused(path, "local_rot_mats.npy: declares {} bytes, more than kimodo-rig reads from an .npz ({} bytes)".format(
        declared, npy.MAX_MEMBER_BYTES))


@pytest.mark.parametrize("header, message", [
    (b"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }" + b" " * 30000 + b"\n",
     ".npy header of 30060 bytes is longer than numpy allows (10000)"),
    (b"{{}: 1}\n", "unreadable .npy header"),
    (b"{'descr': '<f4', 'fortran_order': 'x', 'shape': (1, 3), }\n", "unreadable .npy header"),
])
def test_npy_headers_numpy_would_refuse_are_refused(seeds, tmp_path, header, message):
    """A 30 KB header went to literal_eval (MemoryError); {{}: 1} raised TypeError."""
    members = _current_members(seeds)
    body = b"\0" * 12
    member = b"\x93NUMPY\x02\x00" + struct.pack("<I", len(header)) + header + body
    path = tmp_path / "header.npz"
    path.write_bytes(_npz(_replace(members, "root_positions.npy", member)))
    _refused(path, "root_positions.npy: " + message)


def test_a_4_mb_npy_header_gets_a_short_line(seeds, tmp_path):
    """It took 13 s and 2 GB, and the error line was 6 MB."""
    members = _current_members(seeds)
    header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (" + b"1, " * ((4 << 20) // 3) + b"), }\n"
    path = tmp_path / "long.npz"
    path.write_bytes(_npz(_replace(members, "root_positions.npy",
                                   b"\x93NUMPY\x02\x00" + struct.pack("<I", len(header)) + header)))
    result = run_cli("inspect", path)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == "{}: root_positions.npy: .npy header of {} bytes is longer than numpy allows (10000)\n".format(
        path, len(header))


def test_member_name_with_a_newline_stays_one_line(seeds, tmp_path):
    members = [("local_rot_mats.npy", b"not a .npy file")] + [m for m in _current_members(seeds) if m[0] != "local_rot_mats.npy"]
    members = [("local_rot_mats.npy" if n == "local_rot_mats.npy" else n, d) for n, d in members]
    members.append(("x\nroot_positions.npy", b"junk"))
    path = tmp_path / "newline.npz"
    path.write_bytes(_npz(members))
    result = run_cli("inspect", path)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and len(result.stderr) <= MAX_MESSAGE + 1, result.stderr


def test_any_error_line_is_one_line_of_at_most_max_message_characters():
    text = str(KimodoError("walk.npz: " + "x\ny" * 100000))
    assert "\n" not in text and len(text) <= MAX_MESSAGE and text.startswith("walk.npz: x\\ny")


def _amass_npz(tmp_path, **changes) -> Path:
    arrays = {"trans": np.zeros((2, 3), "<f4"), "root_orient": np.zeros((2, 3), "<f4"),
              "pose_body": np.zeros((2, 63), "<f4"), "mocap_frame_rate": np.float64(30.0)}
    arrays.update(changes)
    path = tmp_path / "amass.npz"
    np.savez(path, **arrays)
    return path


def test_amass_rotation_vectors_near_1e154_are_refused(tmp_path):
    """Squaring them overflowed (OverflowError from ** 2)."""
    pose = np.zeros((2, 63), "<f8")
    pose[1, 4] = 1e154
    _refused(_amass_npz(tmp_path, pose_body=pose), "pose_body holds an angle beyond 10000 radians: not a rotation vector")


def test_amass_frame_rate_of_1e_300_is_refused(tmp_path):
    """It was accepted, and the .glb writer then could not pack the key times."""
    _refused(_amass_npz(tmp_path, mocap_frame_rate=np.float64(1e-300)),
             "mocap_frame_rate 1e-300 fps is outside 1 to 1000 fps")


# ---------------------------------------------------------------------------------------------- not files

EXTENSIONS = (".bvh", ".glb", ".gltf", ".npz", ".csv")


def _reader(extension: str):
    """.gltf is read as a retarget target only; the rest as motions."""
    return (lambda p: targets.load_target(str(p))) if extension == ".gltf" else read_file


@pytest.mark.parametrize("extension", EXTENSIONS)
def test_a_symlink_to_dev_zero_is_refused_unread(tmp_path, extension):
    """It read until MemoryError."""
    path = tmp_path / ("zero" + extension)
    os.symlink("/dev/zero", str(path))
    _refused(path, "not a regular file (a device, pipe or socket); not read", _reader(extension))


def _cli_with_timeout(*args, timeout=60):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "kimodo_rig"] + [str(a) for a in args], capture_output=True,
                          text=True, env=env, timeout=timeout)


@pytest.mark.parametrize("extension", EXTENSIONS)
def test_a_fifo_is_refused_without_blocking(tmp_path, extension):
    """It hung forever, in open() (no writer) or in read()."""
    path = tmp_path / ("fifo" + extension)
    os.mkfifo(str(path))
    if extension == ".gltf":
        result = _cli_with_timeout("retarget", ROOT / "tests" / "data" / "clips" / "soma_01_single_text_prompt",
                                   "--target", path, "-o", tmp_path / "r.glb")
    else:
        result = _cli_with_timeout("inspect", path)
    assert (result.returncode, result.stdout, result.stderr) == (
        1, "", "{}: not a regular file (a device, pipe or socket); not read\n".format(path))


def test_a_fifo_as_retarget_target_is_refused_without_blocking(seeds, tmp_path):
    path = tmp_path / "fifo.glb"
    os.mkfifo(str(path))
    out = tmp_path / "out"
    out.mkdir()
    result = _cli_with_timeout("retarget", seeds["clip_soma"], "--target", path, "-o", out / "r.glb")
    assert (result.returncode, result.stderr) == (1, "{}: not a regular file (a device, pipe or socket); not read\n".format(path))
    assert not list(out.iterdir())


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_a_map_file_that_is_not_a_file_is_refused_without_blocking(tmp_path, kind):
    """`--map` read its file with Path.read_text: a FIFO blocked the run for good (no writer), offline and
    in the Unreal step, which reads the map the same way. It is read now as every input is."""
    path = tmp_path / "bones.json"
    if kind == "fifo":
        os.mkfifo(str(path))
    else:
        os.symlink(kind, str(path))
    out = tmp_path / "out"
    out.mkdir()
    result = _cli_with_timeout("retarget", ROOT / "tests" / "data" / "clips" / "soma_01_single_text_prompt",
                               "--target", "mannequin", "--map", path, "-o", out / "r.glb")
    assert (result.returncode, result.stderr) == (1, "{}: not a regular file (a device, pipe or socket); not read\n".format(path))
    assert not list(out.iterdir())


# ---------------------------------------------------------------------------------------------- byte-order marks
# Notepad and other Windows editors save UTF-8 with a byte-order mark; json.loads refuses it in text
# ("Unexpected UTF-8 BOM"). RFC 8259 and glTF 2.0 (3.2, JSON encoding) say writers must not add one and
# readers may ignore it: every JSON input here ignores it (issue 38).

BOM = b"\xef\xbb\xbf"


def test_map_constraints_meta_and_gltf_json_that_start_with_a_byte_order_mark_read_as_without_it(seeds, tmp_path):
    import base64

    from kimodo_rig import constraints
    from kimodo_rig.formats import kimodo_npz

    plain_map = tmp_path / "plain_map.json"
    plain_map.write_text(json.dumps({"hips": "Hips", "thigh_l": "LeftUpLeg"}), encoding="utf-8")
    marked_map = tmp_path / "marked_map.json"
    marked_map.write_bytes(BOM + plain_map.read_bytes())
    assert targets.read_user_map(marked_map) == targets.read_user_map(plain_map) == {"hips": "Hips", "thigh_l": "LeftUpLeg"}

    requests = ROOT / "tests" / "data" / "npz" / "soma_04_ee_constraint" / "constraints.json"
    marked_request = tmp_path / "constraints.json"
    marked_request.write_bytes(BOM + requests.read_bytes())
    plain, marked = constraints.read(requests), constraints.read(marked_request)
    assert len(marked.entries) == len(plain.entries) > 0
    assert [(e.type, e.frames, e.positions, e.rotations) for e in marked.entries] == \
           [(e.type, e.frames, e.positions, e.rotations) for e in plain.entries]

    clip = ROOT / "tests" / "data" / "npz" / "soma_01_single_text_prompt"
    (tmp_path / "clip").mkdir()
    (tmp_path / "clip" / "motion.npz").write_bytes((clip / "motion.npz").read_bytes())
    (tmp_path / "clip" / "meta.json").write_bytes(BOM + (clip / "meta.json").read_bytes())
    expected = json.loads((clip / "meta.json").read_text(encoding="utf-8"))
    prompt = expected.get("text") or expected["texts"][0]
    assert prompt and kimodo_npz.read(tmp_path / "clip" / "motion.npz").prompt == prompt.strip()

    gltf, binary = _glb_chunks(seeds["glb_motion"].read_bytes())
    text = BOM + json.dumps(gltf).encode("utf-8")
    text += b" " * (-len(text) % 4)
    binary += b"\0" * (-len(binary) % 4)
    marked_glb = tmp_path / "marked.glb"
    marked_glb.write_bytes(struct.pack("<III", 0x46546C67, 2, 28 + len(text) + len(binary))
                           + struct.pack("<II", len(text), 0x4E4F534A) + text
                           + struct.pack("<II", len(binary), 0x004E4942) + binary)
    motion, original = read_file(marked_glb), read_file(seeds["glb_motion"])
    assert (motion.local_rotations, motion.root_positions) == (original.local_rotations, original.root_positions)

    rig, rig_binary = _glb_chunks(seeds["glb_rig"].read_bytes())
    rig["buffers"] = [{"byteLength": len(rig_binary),
                       "uri": "data:application/octet-stream;base64," + base64.b64encode(rig_binary).decode("ascii")}]
    marked_gltf = tmp_path / "rig.gltf"
    marked_gltf.write_bytes(BOM + json.dumps(rig).encode("utf-8"))
    assert targets.load_target(str(marked_gltf)).skeleton.joint_names == \
        targets.load_target(str(seeds["glb_rig"])).skeleton.joint_names


# ---------------------------------------------------------------------------------------------- URIs into outputs

def _png(width: int = 1) -> bytes:
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\0" + b"\xff\x00\x00" * width for _ in range(width))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, width, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def test_a_characters_image_and_buffer_uris_never_reach_the_retargeted_file(seeds, tmp_path):
    """A character's image URIs (`../../etc/passwd`, `file:///...`, `http://...`) and an extra buffer's
    were copied unchanged into the retargeted .glb. Now: an image file beside the character is embedded,
    so is a data: URI's image, every other image is left out (its texture loses its source), an extra buffer
    loses its URI; one warning each. The output is judged by pygltflib."""
    import base64

    import pygltflib

    folder = tmp_path / "character"
    (folder / "textures").mkdir(parents=True)
    skin = _png(2)
    (folder / "textures" / "skin 1.png").write_bytes(skin)
    (tmp_path / "secret.png").write_bytes(_png(3))  # a real image, but above the character's folder
    data_uri = "data:image/png;base64," + base64.b64encode(_png(1)).decode("ascii")
    uris = ["../secret.png", "file:///etc/passwd", "http://example.com/a.png", "textures/skin%201.png", data_uri,
            "textures/missing.png", "/etc/hostname", "data:image/png;base64,@@"]

    def add_images(gltf):
        gltf["images"] = [{"uri": uri, "name": "image{}".format(i)} for i, uri in enumerate(uris)]
        gltf["textures"] = [{"source": i} for i in range(len(uris))]
        gltf["materials"] = [{"pbrMetallicRoughness": {"baseColorTexture": {"index": 3}}}]
        gltf["buffers"].append({"byteLength": 16, "uri": "../../etc/shadow"})
        gltf.setdefault("extensions", {})["VRMC_vrm"] = {"meta": {"thumbnailImage": 4}}  # renumbered with the images

    rig = folder / "rig.glb"
    rig.write_bytes(_rig_with(seeds, add_images))
    output = tmp_path / "out" / "walk.glb"
    output.parent.mkdir()
    result = run_cli("retarget", seeds["clip_soma"], "--target", rig, "-o", output)
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "left out of the output" in line or "buffer 1" in line]
    assert warnings == [
        "warning: {}: image 0 'image0' (../secret.png) is outside the character's folder; left out of the output".format(rig),
        "warning: {}: image 1 'image1' (file:///etc/passwd) is not a file in the character's folder; left out of the "
        "output".format(rig),
        "warning: {}: image 2 'image2' (http://example.com/a.png) is not a file in the character's folder; left out "
        "of the output".format(rig),
        "warning: {}: image 5 'image5' (textures/missing.png) cannot be read (no such file); left out of the "
        "output".format(rig),
        "warning: {}: image 6 'image6' (/etc/hostname) is not a file in the character's folder; left out of the "
        "output".format(rig),
        "warning: {}: image 7 'image7' (data:image/png;base64,@@) is not a PNG, JPEG, WebP or KTX2 image; left out "
        "of the output".format(rig),
        "warning: {}: buffer 1's URI (../../etc/shadow) is not carried into the output".format(rig),
    ]
    written = pygltflib.GLTF2().load_binary(str(output))
    blob = written.binary_blob()
    assert [(image.name, image.uri, image.mimeType) for image in written.images] == [
        ("image3", None, "image/png"), ("image4", None, "image/png")]
    for image, expected in zip(written.images, (skin, base64.b64decode(data_uri.split(",")[1]))):
        view = written.bufferViews[image.bufferView]
        assert view.buffer == 0 and blob[view.byteOffset:view.byteOffset + view.byteLength] == expected
    assert [texture.source for texture in written.textures] == [None, None, None, 0, 1, None, None, None]
    assert written.materials[0].pbrMetallicRoughness.baseColorTexture.index == 3
    assert all(buffer.uri is None for buffer in written.buffers)
    assert written.extensions["VRMC_vrm"]["meta"]["thumbnailImage"] == 1
    assert sorted(p.name for p in output.parent.iterdir()) == ["walk.glb"]


# ---------------------------------------------------------------------------------------------- retarget targets
# Found by scripts/fuzz.py on this branch: a rig under a deep chain of nodes (RecursionError in the
# writer's world matrices) and a zero scale above a joint (ValueError: singular matrix).

def _rig_with(seeds, change) -> bytes:
    gltf, binary = _glb_chunks(seeds["glb_rig"].read_bytes())
    change(gltf)
    return _glb(gltf, binary)


def _under_a_chain(gltf, count: int = 3000) -> None:
    nodes = gltf["nodes"]
    start = len(nodes)
    children = {c for node in nodes for c in node.get("children", [])}
    roots = [i for i in range(start) if i not in children]
    nodes.extend({"name": "n{}".format(i), "children": [start + i + 1]} for i in range(count - 1))
    nodes.append({"name": "last", "children": roots})
    gltf["scenes"] = [{"nodes": [start]}]


def test_retarget_onto_a_rig_under_3000_nodes_works(seeds, tmp_path):
    path = tmp_path / "deep_rig.glb"
    path.write_bytes(_rig_with(seeds, _under_a_chain))
    result = run_cli("retarget", seeds["clip_soma"], "--target", path, "-o", tmp_path / "out.glb")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out.glb").is_file()


def test_retarget_onto_a_rig_whose_bind_scale_is_1e_31_gets_one_line(seeds, tmp_path):
    """An inverse bind matrix scaled by 1e31 (one flipped byte) is invertible, but the joint's world then
    is not: the writer's invert4 raised ValueError."""
    gltf, binary = _glb_chunks(seeds["glb_motion"].read_bytes())
    accessor = gltf["accessors"][gltf["skins"][0]["inverseBindMatrices"]]
    at = gltf["bufferViews"][accessor["bufferView"]].get("byteOffset", 0) + accessor.get("byteOffset", 0) + 64
    binary = bytearray(binary)
    struct.pack_into("<f", binary, at, 1e31)  # joint 1's matrix, first element
    path = tmp_path / "scaled_rig.glb"
    path.write_bytes(_glb(gltf, bytes(binary)))
    out = tmp_path / "out"
    out.mkdir()
    result = run_cli("retarget", seeds["clip_soma"], "--target", path, "-o", out / "r.glb")
    assert (result.returncode, result.stderr) == (
        1, "{}: a node above a joint has a singular transform (zero scale?): it cannot carry the motion\n".format(path))
    assert not list(out.iterdir())


def test_json_of_escaped_quotes_without_an_end_is_refused_in_one_pass(tmp_path):
    """The nesting pre-scan first removed strings with a pattern that, for `"\\"\\"\\"...` with no closing
    quote, rescanned from every quote (10 KB: 5 s)."""
    path = tmp_path / "quotes.gltf"
    path.write_text('{"asset": "' + '\\"' * 200000, encoding="utf-8")
    result = _cli_with_timeout("retarget", ROOT / "tests" / "data" / "clips" / "soma_01_single_text_prompt",
                               "--target", path, "-o", tmp_path / "r.glb")  # the timeout: a hang fails, not waits
    assert (result.returncode, result.stderr) == (1, "{}: not a glTF file\n".format(path))


def test_lzma_members_asking_for_a_4_gib_dictionary_read_in_little_memory(seeds, tmp_path):
    """Found by scripts/fuzz.py (seed 7, case 15599): LZMA properties ask for the dictionary, allocated up
    front; 0xFFFFFFFF raised MemoryError. No match reaches further back than the declared output."""
    data = bytearray(_npz(_current_members(seeds), zipfile.ZIP_LZMA))
    at = 0
    while True:
        at = data.find(b"PK\x03\x04", at)
        if at < 0:
            break
        name_length, extra_length = struct.unpack_from("<HH", data, at + 26)
        properties = at + 30 + name_length + extra_length + 4  # after the version and properties-size fields
        struct.pack_into("<I", data, properties + 1, 0xFFFFFFFF)
        at += 4
    path = tmp_path / "dictionary.npz"
    path.write_bytes(bytes(data))
    tracemalloc.start()
    try:
        motion = read_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert motion.frame_count == 6 and motion.joint_count == 77
    assert peak < 64 << 20, peak


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_constraints_json_that_is_not_a_file_is_refused_without_blocking(tmp_path, kind):
    path = tmp_path / "constraints.json"
    if kind == "fifo":
        os.mkfifo(str(path))
    else:
        os.symlink("/dev/zero", str(path))
    code = "from kimodo_rig.constraints.fields import load_json; load_json({!r})".format(str(path))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert result.returncode == 1
    assert result.stderr.strip().endswith(
        "KimodoError: {}: not a regular file (a device, pipe or socket); not read".format(path)), result.stderr[-300:]


# ---------------------------------------------------------------------------------------------- issue 38
# The second fuzzing round: maps, constraints, timeline arguments, hostile skins.

MANNEQUIN_GLB = ROOT / "kimodo_rig" / "rigs" / "mpfb2_game_engine.glb"
SOMA_CLIP = ROOT / "tests" / "data" / "clips" / "soma_01_single_text_prompt"


def _cli_bounded(*args, timeout=120, memory=1 << 30):
    """The command line with a timeout and an address-space limit, so a hang or a runaway fails the test
    (MemoryError, or the timeout) instead of taking the machine."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    return subprocess.run([sys.executable, "-m", "kimodo_rig"] + [str(a) for a in args], capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=timeout, preexec_fn=limit)


def _empty_output(tmp_path) -> Path:
    out = tmp_path / "out"
    out.mkdir()
    return out


def _swapped_hips_and_left_hand(parts: dict) -> dict:
    parts = dict(parts)
    parts["hips"], parts["hand_l"] = parts["hand_l"], parts["hips"]
    return parts


@pytest.mark.parametrize("route", ["retarget_map", "preview_map", "vrm_table"])
def test_a_map_that_swaps_the_hips_and_a_hand_is_refused_not_looped(tmp_path, route):
    """restructure re-hung the left clavicle under the 'hips' (the hand below it) and walked the loop for
    ever: 2.2 GB in 20 s. The map check refuses such a map first (restructure's own bound is tested below).
    The timeout and memory limit only guard against the hang."""
    out = _empty_output(tmp_path)
    mannequin = json.loads(run_cli("map", "mannequin", "--json").stdout)
    mannequin.pop("check")
    swapped = _swapped_hips_and_left_hand(mannequin)
    line = ("hips (hand_l) hangs below clavicle_l (clavicle_l): the hips must carry the limbs; "
            "see kimodo-rig map RIG --json and --map")
    if route == "vrm_table":
        gltf, binary = _glb_chunks(MANNEQUIN_GLB.read_bytes())
        node = {n["name"]: i for i, n in enumerate(gltf["nodes"])}
        vrm_bone = {"hips": "hips", "hand_l": "leftHand", "clavicle_l": "leftShoulder", "upperarm_l": "leftUpperArm",
                    "lowerarm_l": "leftLowerArm", "thigh_l": "leftUpperLeg", "calf_l": "leftLowerLeg", "foot_l": "leftFoot",
                    "hand_r": "rightHand", "clavicle_r": "rightShoulder", "upperarm_r": "rightUpperArm",
                    "lowerarm_r": "rightLowerArm", "thigh_r": "rightUpperLeg", "calf_r": "rightLowerLeg",
                    "foot_r": "rightFoot", "spine_0": "spine", "neck_0": "neck", "head": "head"}
        gltf.setdefault("extensions", {})["VRM"] = {"humanoid": {"humanBones": [
            {"bone": vrm_bone[part], "node": node[swapped[part]]} for part in vrm_bone]}}
        target = tmp_path / "avatar.vrm"
        target.write_bytes(_glb(gltf, binary))
        args, source = ("--target", target), "{}: VRM 0.x humanoid table: map".format(target)
        line = line.replace("below clavicle_l (clavicle_l)", "below hand_l (pelvis)")  # the table has its own hand_l
    else:
        map_file = tmp_path / "bones.json"
        map_file.write_text(json.dumps(swapped), encoding="utf-8")
        args, source = ("--target", "mannequin", "--map", map_file), "{}: map".format(map_file)
    verb, output = ("preview", out / "p.svg") if route == "preview_map" else ("retarget", out / "r.glb")
    result = _cli_bounded(verb, SOMA_CLIP, *args, "-o", output)
    assert (result.returncode, result.stderr) == (1, "{}: {}\n".format(source, line))
    assert not list(out.iterdir())


def test_restructure_refuses_a_map_whose_hips_hang_below_a_hand_without_the_check():
    """The bound of restructure itself, behind the map check: an unchecked map with the hips and a hand
    swapped is one line naming the map, not a walk for ever."""
    from kimodo_rig.retarget import character, mapping, solve

    target = character.load_target("mannequin")
    parts = json.loads(run_cli("map", "mannequin", "--json").stdout)
    parts.pop("check")
    hmap = mapping.map_from_parts(target.skeleton, _swapped_hips_and_left_hand(parts), "bones.json: map", checked=False)
    with pytest.raises(KimodoError, match=r"^bones\.json: map: clavicle_l \('clavicle_l'\) cannot hang from hips "
                                          r"\('hand_l'\), which hangs below it$"):
        solve.working_skeleton(target.skeleton, hmap, "bones.json")


def _main(capsys, *args):
    """The command line in this process: (exit status, stderr)."""
    from kimodo_rig.cli import main

    code = main([str(a) for a in args])
    return code, capsys.readouterr().err


KIMODO_CONSTRAINTS = ROOT / "tests" / "data" / "npz" / "soma_07_mixed_constraints" / "constraints.json"


def _request_file(tmp_path, capsys, change) -> Path:
    """An Animotive request converted from the real Kimodo constraints file, then changed."""
    made = tmp_path / "made_request.json"
    assert _main(capsys, "constraints", "convert", KIMODO_CONSTRAINTS, made, "--to", "animotive",
                 "--prompt", "walk", "--duration", "10")[0] == 0
    request = json.loads(made.read_text(encoding="utf-8"))
    made.unlink()
    change(request)
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request), encoding="utf-8")
    return path


def _kimodo_file_with_first_frame(tmp_path, digits: int) -> Path:
    text = KIMODO_CONSTRAINTS.read_text(encoding="utf-8")
    first = str(json.loads(text)[0]["frame_indices"][0])
    at = text.index('"frame_indices"')
    at = text.index(first, at)
    path = tmp_path / "constraints.json"
    path.write_text(text[:at] + "1" * digits + text[at + len(first):], encoding="utf-8")
    return path


def _entry_of_type(request: dict, label: str) -> dict:
    return next(c for c in request["constraints"] if c["type"] == label)


def _constraints_case(case: str, tmp_path, capsys):
    """(arguments, the expected line) for each way the constraints commands broke."""
    out = tmp_path / "out" / "result.json"
    if case == "type_is_a_list":
        path = _request_file(tmp_path, capsys, lambda r: _entry_of_type(r, "2d-root").__setitem__("type", ["2d-root"]))
        index = next(i for i, c in enumerate(json.loads(path.read_text())["constraints"]) if isinstance(c["type"], list))
        return (("constraints", "convert", path, out, "--to", "kimodo"),
                "{}: entry {} (?): unknown type [\"2d-root\"] (known: fullbody, 2d-root, left-hand, right-hand, "
                "left-foot, right-foot)".format(path, index))
    if case in ("integer_of_400_digits", "integer_of_5000_digits"):
        path = _kimodo_file_with_first_frame(tmp_path, 400 if "400" in case else 5000)
        return (("constraints", "convert", path, out, "--to", "animotive", "--prompt", "x", "--duration", "10"),
                "{}: entry 0 (fullbody): frame_indices[0] is not a non-negative integer (inf)".format(path))
    if case == "durations_1e308":
        path = _request_file(tmp_path, capsys, lambda r: r["meta"].__setitem__("durations", [1e308]))
        return (("constraints", "convert", path, out, "--to", "kimodo"),
                "{}: meta.durations[0] is outside -1e+06 to 1e+06 (1e+308)".format(path))
    if case == "rotation_vector_1e200":
        path = _request_file(tmp_path, capsys, lambda r: _entry_of_type(r, "fullbody")["pose"]["rotvecs"][3].__setitem__(0, 1e200))
        index = next(i for i, c in enumerate(json.loads(path.read_text())["constraints"]) if c["type"] == "fullbody")
        return (("constraints", "convert", path, out, "--to", "kimodo"),
                "{}: entry {} (fullbody): pose.rotvecs[0][3][0] is outside -1e+06 to 1e+06 (1e+200)".format(path, index))
    if case == "duration_option_1e308":
        return (("constraints", "convert", KIMODO_CONSTRAINTS, out, "--to", "animotive", "--prompt", "x", "--duration", "1e308"),
                "{}: meta.durations[0] is outside -1e+06 to 1e+06 (1e+308)".format(out))
    extract = ("constraints", "extract", SOMA_CLIP, "-o", out)
    return {
        "fullbody_superscript_two": (extract + ("--fullbody", "\u00b2"), "--fullbody: '\u00b2' is not a frame number"),
        "root2d_every_superscript_two": (extract + ("--root2d", "every:\u00b2"), "--root2d: '\u00b2' is not every:N's N"),
        "frame_of_5000_digits": (extract + ("--fullbody", "1" * 5000),
                                 "--fullbody: a frame number of 5000 digits is out of range (at most 40)"),
        "tail_of_400_digits": (extract + ("--tail", "1" * 400),
                               "--tail: a number of frames of 400 digits is out of range (at most 40)"),
    }[case]


@pytest.mark.parametrize("case", [
    "type_is_a_list", "integer_of_400_digits", "integer_of_5000_digits", "durations_1e308", "rotation_vector_1e200",
    "duration_option_1e308", "fullbody_superscript_two", "root2d_every_superscript_two", "frame_of_5000_digits",
    "tail_of_400_digits"])
def test_hostile_constraints_and_their_options_get_one_line(tmp_path, capsys, case):
    """TypeError (an unhashable type), ValueError (int() of '\u00b2'; of 4,300+ digits), OverflowError (a
    400-digit int or 1e308 s as a frame count, a rotation vector of 1e200 squared) escaped as tracebacks."""
    args, line = _constraints_case(case, tmp_path, capsys)
    (tmp_path / "out").mkdir()
    assert _main(capsys, *args) == (1, line + "\n")
    assert not list((tmp_path / "out").iterdir())


def test_a_map_nested_100000_deep_is_refused(tmp_path, capsys):
    """json.loads raised RecursionError: the map is read as every JSON input is (limits.parse_json)."""
    mannequin = json.loads(run_cli("map", "mannequin", "--json").stdout)
    text = json.dumps(mannequin).replace('"pelvis"', "[" * 100000 + "]" * 100000, 1)
    path = tmp_path / "bones.json"
    path.write_text(text, encoding="utf-8")
    out = _empty_output(tmp_path)
    assert _main(capsys, "retarget", SOMA_CLIP, "--target", "mannequin", "--map", path, "-o", out / "r.glb") == (
        1, "{}: the map nests more than 64 levels deep\n".format(path))
    assert not list(out.iterdir())


def _mannequin_with(change) -> bytes:
    gltf, binary = _glb_chunks(MANNEQUIN_GLB.read_bytes())
    changed = change(gltf, binary)
    return _glb(gltf, changed if isinstance(changed, bytes) else binary)


def _node(gltf, name: str) -> int:
    return next(i for i, node in enumerate(gltf["nodes"]) if node.get("name") == name)


def _set_vrm(path: str, value):
    def change(gltf, binary):
        keys = path.split(".")
        table = gltf.setdefault("extensions", {})
        for key in keys[:-1]:
            table = table.setdefault(key, {})
        table[keys[-1]] = value
    return change


@pytest.mark.parametrize("path, value, kind", [
    ("VRM", 5, "object"), ("VRMC_vrm.humanoid", 5, "object"), ("VRM.humanoid.humanBones", 5, "list"),
    ("VRMC_vrm.humanoid.humanBones", [], "object")])
def test_a_vrm_table_of_the_wrong_json_type_gets_one_line(tmp_path, capsys, path, value, kind):
    """AttributeError: 'int' object has no attribute 'get' (or, for humanBones, the table went unread)."""
    target = tmp_path / "avatar.vrm"
    target.write_bytes(_mannequin_with(_set_vrm(path, value)))
    out = _empty_output(tmp_path)
    assert _main(capsys, "retarget", SOMA_CLIP, "--target", target, "-o", out / "r.glb") == (
        1, "{}: extensions.{} is not a JSON {}\n".format(target, path, kind))
    assert not list(out.iterdir())


def _skinned_node(gltf) -> int:
    return next(i for i, node in enumerate(gltf["nodes"]) if "skin" in node)


def _float_joints_with_nan(gltf, binary):
    """JOINTS_0 as floats (the slots as they were, the first NaN) in a view of their own."""
    primitive = gltf["meshes"][0]["primitives"][0]
    accessor = gltf["accessors"][primitive["attributes"]["JOINTS_0"]]
    view = gltf["bufferViews"][accessor["bufferView"]]
    start = view.get("byteOffset", 0) + accessor.get("byteOffset", 0)
    slots = np.frombuffer(binary, np.uint8, 4 * accessor["count"], start).astype(np.float32)
    slots[0] = np.nan
    binary = binary + b"\0" * (-len(binary) % 4)
    gltf["bufferViews"].append({"buffer": 0, "byteOffset": len(binary), "byteLength": slots.nbytes})
    gltf["accessors"].append({"bufferView": len(gltf["bufferViews"]) - 1, "componentType": 5126,
                              "count": accessor["count"], "type": "VEC4"})
    primitive["attributes"]["JOINTS_0"] = len(gltf["accessors"]) - 1
    binary += slots.tobytes()
    gltf["buffers"][0]["byteLength"] = len(binary)
    return binary


def _end_joint_scaled_to_zero(gltf, binary):
    """A joint no vertex follows (an exporter's `head_end`) under the head, its node scaled to zero."""
    skin = gltf["skins"][0]
    accessor = gltf["accessors"][skin["inverseBindMatrices"]]
    view = gltf["bufferViews"][accessor["bufferView"]]
    start = view.get("byteOffset", 0) + accessor.get("byteOffset", 0)
    matrices = np.frombuffer(binary, np.float32, 16 * accessor["count"], start).reshape(-1, 16).copy()
    head = _node(gltf, "head")
    end = matrices[skin["joints"].index(head)].copy()
    end[13] -= 0.1  # 0.1 m above the head
    gltf["nodes"].append({"name": "head_end", "translation": [0.0, 0.1, 0.0], "scale": [0.0, 0.0, 0.0]})
    gltf["nodes"][head].setdefault("children", []).append(len(gltf["nodes"]) - 1)
    skin["joints"].append(len(gltf["nodes"]) - 1)
    data = np.concatenate([matrices, end[None]]).astype(np.float32).tobytes()
    binary = binary + b"\0" * (-len(binary) % 4)
    gltf["bufferViews"].append({"buffer": 0, "byteOffset": len(binary), "byteLength": len(data)})
    gltf["accessors"].append({"bufferView": len(gltf["bufferViews"]) - 1, "componentType": 5126,
                              "count": accessor["count"] + 1, "type": "MAT4"})
    skin["inverseBindMatrices"] = len(gltf["accessors"]) - 1
    binary += data
    gltf["buffers"][0]["byteLength"] = len(binary)
    return binary


def _inverse_bind_moved(joint_name: str, metres: float):
    """One joint's inverse bind matrix moved by `metres` along x, y and z (its bind then lies as far away)."""
    def change(gltf, binary):
        skin = gltf["skins"][0]
        accessor = gltf["accessors"][skin["inverseBindMatrices"]]
        view = gltf["bufferViews"][accessor["bufferView"]]
        start = view.get("byteOffset", 0) + accessor.get("byteOffset", 0)
        matrices = np.frombuffer(binary, np.float32, 16 * accessor["count"], start).reshape(-1, 16).copy()
        matrices[skin["joints"].index(_node(gltf, joint_name)), 12:15] = metres  # column-major: the translation
        return binary[:start] + matrices.tobytes() + binary[start + matrices.nbytes:]
    return change


def _unskinned_prop(mesh):
    def change(gltf, binary):
        gltf["nodes"].append({"name": "prop", "mesh": mesh})
        gltf["nodes"][_node(gltf, "hand_l")].setdefault("children", []).append(len(gltf["nodes"]) - 1)
    return change


HOSTILE_CHARACTERS = {
    "skin_out_of_range": (lambda g, b: g["nodes"][_skinned_node(g)].__setitem__("skin", 9),
                          "nodes[{skinned}].skin is not a valid index (9; 1 available)"),
    "skin_a_string": (lambda g, b: g["nodes"][_skinned_node(g)].__setitem__("skin", "0"),
                      "nodes[{skinned}].skin is not a valid index ('0'; 1 available)"),
    "mesh_out_of_range": (lambda g, b: g["nodes"][_skinned_node(g)].__setitem__("mesh", 9),
                          "nodes[{skinned}].mesh is not a valid index (9; 1 available)"),
    "mesh_a_string": (lambda g, b: g["nodes"][_skinned_node(g)].__setitem__("mesh", "0"),
                      "nodes[{skinned}].mesh is not a valid index ('0'; 1 available)"),
    "no_meshes_array": (lambda g, b: g.pop("meshes"), "nodes[{skinned}].mesh is not a valid index (0; 0 available)"),
    "unskinned_mesh_out_of_range": (_unskinned_prop(9), "nodes[{last}].mesh is not a valid index (9; 1 available)"),
    "joint_translation_1e200": (lambda g, b: g["nodes"][_node(g, "upperarm_l")].__setitem__("translation", [1e200, 0.0, 0.0]),
                                "node 'upperarm_l' is placed or scaled beyond 1e+12 in the scene: not a character"),
    "root_scale_1e160": (lambda g, b: g["nodes"][_node(g, "pelvis")].__setitem__("scale", [1e160] * 3),
                         "node 'pelvis' is placed or scaled beyond 1e+12 in the scene: not a character"),
    "end_joint_scale_0": (_end_joint_scaled_to_zero,
                          "joint 'head_end' has a singular transform (zero scale?): it cannot carry the motion"),
    "inverse_bind_far_away": (_inverse_bind_moved("hand_l", 1e20),  # float32 packing overflowed in the writer
                                   "the skin's inverse bind matrices place joint 'hand_l' beyond 1e+12: not a character"),
    "float_joints_with_nan": (_float_joints_with_nan,
                              "meshes[0].primitives[0].attributes.JOINTS_0 is not unsigned bytes or shorts (joint slots)"),
}


@pytest.mark.parametrize("case", list(HOSTILE_CHARACTERS))
def test_hostile_character_files_get_one_line(tmp_path, capsys, case):
    """IndexError, TypeError and KeyError (node.skin and node.mesh unchecked), OverflowError (1e200
    squared), ValueError (a singular matrix; int() of NaN) escaped from the character reader."""
    change, line = HOSTILE_CHARACTERS[case]
    data = _mannequin_with(change)
    gltf, _ = _glb_chunks(data)
    target = tmp_path / "character.glb"
    target.write_bytes(data)
    out = _empty_output(tmp_path)
    expected = "{}: {}\n".format(target, line.format(skinned=_skinned_node(gltf), last=len(gltf["nodes"]) - 1))
    assert _main(capsys, "retarget", SOMA_CLIP, "--target", target, "-o", out / "r.glb") == (1, expected)
    assert not list(out.iterdir())


@pytest.mark.parametrize("seconds, shown", [("1e308", "1e+308"), ("inf", "inf")])
def test_a_loop_longer_than_any_frame_count_gets_one_line(tmp_path, capsys, seconds, shown):
    """OverflowError: cannot convert float infinity to integer (the loop's length in frames)."""
    out = _empty_output(tmp_path)
    assert _main(capsys, "loop", SOMA_CLIP, out / "loop.glb", "--min-length", seconds) == (
        1, "{}: 150 frames (4.97 s) hold no loop of at least {} s\n".format(SOMA_CLIP, shown))
    assert not list(out.iterdir())


def test_a_bvh_frame_with_no_break_spaces_between_numbers_reads_as_with_spaces(seeds, tmp_path):
    """StopIteration escaped: the line was not ASCII, so it was checked word by word, and every word was a
    number. The reader splits on any whitespace (its hierarchy tokens, str.split), so U+00A0 separates."""
    text = seeds["bvh_soma"].read_text(encoding="utf-8")
    lines = text.split("\n")
    first = next(i for i, line in enumerate(lines) if line.startswith("Frame Time")) + 1
    lines[first] = lines[first].replace(" ", "\u00a0", 5)
    path = tmp_path / "no_break.bvh"
    path.write_text("\n".join(lines), encoding="utf-8")
    ours, plain = read_file(path), read_file(seeds["bvh_soma"])
    assert ours.frame_count == plain.frame_count
    assert np.array_equal(np.asarray(ours.local_rotations), np.asarray(plain.local_rotations))
    assert np.array_equal(np.asarray(ours.root_positions), np.asarray(plain.root_positions))


def test_a_meshopt_stream_claiming_64_mb_from_131_kb_is_refused_before_decoding(tmp_path):
    """A version 1 stream of all-zero blocks (one control byte per 4 byte positions per block) claims
    1,024 times its size: 131 KB of the real KHR character's file as its inverse bind matrices' view, 1M
    elements of 64 bytes, which took minutes and 64 MB. The timeout and memory limit only guard the run."""
    gltf, binary = _glb_chunks((ROOT / "tests" / "data" / "rigs" / "meshopt" / "mannequin_khr.glb").read_bytes())
    index = gltf["accessors"][gltf["skins"][0]["inverseBindMatrices"]]["bufferView"]
    stream_fields = gltf["bufferViews"][index]["extensions"]["KHR_meshopt_compression"]
    assert stream_fields["byteStride"] == 64 and stream_fields["mode"] == "ATTRIBUTES"
    count, stride, block = 1 << 20, 64, 128  # 128: the elements of a block of 64-byte elements
    stream = b"\xa1" + b"\xaa" * (stride // 4) * (count // block) + bytes(stride + stride // 4)
    binary = bytes(binary) + b"\0" * (-len(binary) % 4)
    stream_fields.update(byteOffset=len(binary), byteLength=len(stream), count=count)
    gltf["bufferViews"][index]["byteLength"] = count * stride
    binary += stream
    gltf["buffers"][0]["byteLength"] = len(binary)
    target = tmp_path / "claims.glb"
    target.write_bytes(_glb(gltf, binary))
    out = _empty_output(tmp_path)
    result = _cli_bounded("retarget", SOMA_CLIP, "--target", target, "-o", out / "r.glb", timeout=60)
    budget = 64 * (len(binary) + -len(binary) % 4) + (1 << 20)
    assert (result.returncode, result.stderr) == (1, "{}: buffer view {}'s meshopt stream would decode to {} bytes, past "
                                                     "the {} this file's compressed views may take together (64 per byte "
                                                     "of its binary chunk, and 1 MiB)\n".format(target, index, count * stride, budget))
    assert not list(out.iterdir())
