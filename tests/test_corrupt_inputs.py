"""Corrupt inputs: every reader, fed real files damaged in seeded, repeatable ways, either reads a valid
Motion (or target rig) or refuses with one KimodoError line that starts with the file's path. Any other
exception, a multi-line message or a message that does not name the file fails. The CLI, run on a sample
of the same files, exits 1 with one stderr line and leaves nothing in the output folder.

Seed files are cut from tests/data to a few frames so that hundreds of cases stay fast; the AMASS file
is built with numpy (no AMASS recording ships with the tests)."""
from __future__ import annotations

import base64
import io
import json
import math
import random
import shutil
import struct
import zipfile
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import numpy as np
import pytest

from conftest import CLIPS, NPZ, REFERENCE, RIGS, run_cli
from kimodo_rig.retarget import character as targets
from kimodo_rig.errors import KimodoError
from kimodo_rig.formats import glb, raw, read_file
from kimodo_rig.model import Motion

SEED = 20261129
FRAMES = 6
CUTS_PER_FILE = 10
FLIPS_PER_FILE = 10
JSON_MUTATIONS = 60


# ---------------------------------------------------------------------------------------------- seed files

def _cut_clip(source: Path, folder: Path, frames: int = FRAMES) -> Path:
    folder.mkdir()
    roots = (source / raw.ROOT_FILE).read_bytes()
    rotations = (source / raw.ROTATIONS_FILE).read_bytes()
    total = len(roots) // 12
    (folder / raw.ROOT_FILE).write_bytes(roots[:frames * 12])
    (folder / raw.ROTATIONS_FILE).write_bytes(rotations[:len(rotations) // total * frames])
    (folder / raw.PROMPT_FILE).write_bytes((source / raw.PROMPT_FILE).read_bytes())
    return folder


def _cut_bvh(source: Path, target: Path, frames: int = FRAMES) -> Path:
    lines = source.read_text(encoding="utf-8").splitlines()
    motion = next(i for i, line in enumerate(lines) if line.strip().upper() == "MOTION")
    frames_line = next(i for i in range(motion, len(lines)) if lines[i].strip().lower().startswith("frames"))
    time_line = next(i for i in range(motion, len(lines)) if lines[i].strip().lower().startswith("frame time"))
    first = max(frames_line, time_line) + 1
    lines[frames_line] = "Frames: {}".format(frames)
    target.write_text("\n".join(lines[:first + frames]) + "\n", encoding="utf-8")
    return target


def _cut_npz(source: Path, target: Path, frames: int = FRAMES) -> Path:
    with np.load(source, allow_pickle=False) as stored:
        arrays = {key: stored[key][:frames] for key in stored.files}
    np.savez(target, **arrays)
    return target


def _amass(target: Path) -> Path:
    generator = np.random.default_rng(SEED)
    np.savez(target, trans=generator.normal(0, 0.3, (FRAMES, 3)).astype("<f4"),
             root_orient=generator.normal(0, 0.5, (FRAMES, 3)).astype("<f4"),
             pose_body=generator.normal(0, 0.3, (FRAMES, 63)).astype("<f4"),
             mocap_frame_rate=np.float64(30.0), gender=np.array("neutral"))
    return target


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> Dict[str, Path]:
    """Small valid files of every readable kind, cut from the real test data."""
    folder = tmp_path_factory.mktemp("seeds")
    soma_clip = _cut_clip(CLIPS / "soma_01_single_text_prompt", folder / "soma_clip")
    files = {
        "clip_soma": soma_clip,
        "clip_g1": _cut_clip(CLIPS / "g1_01_single_text_prompt", folder / "g1_clip"),
        "bvh_soma": _cut_bvh(REFERENCE / "soma_01_single_text_prompt.bvh", folder / "soma.bvh"),
        "bvh_cmu": _cut_bvh(RIGS / "cmu" / "resources_131_01.bvh", folder / "cmu.bvh"),
        "npz_current": _cut_npz(REFERENCE / "soma_01_single_text_prompt_somaskel77.npz", folder / "current.npz"),
        "npz_older": _cut_npz(NPZ / "g1_01_single_text_prompt" / "motion.npz", folder / "older.npz"),
        "npz_amass": _amass(folder / "amass.npz"),
        "csv": folder / "g1.csv",
        "glb_motion": folder / "motion.glb",
        "glb_rig": folder / "rig.glb",
    }
    csv_lines = (REFERENCE / "g1_01_single_text_prompt_qpos.csv").read_text(encoding="utf-8").splitlines()
    files["csv"].write_text("\n".join(csv_lines[:FRAMES]) + "\n", encoding="utf-8")
    glb.write(raw.read(soma_clip), files["glb_motion"])
    shutil.copyfile(RIGS / "mpfb2" / "mpfb2_mixamo.glb", files["glb_rig"])
    for kind, path in files.items():  # every seed is valid to begin with
        (_read_target if kind.startswith("glb_rig") else read_file)(path)
    return files


# ---------------------------------------------------------------------------------------------- judging

def _read_target(path: Path):
    return targets.load_target(str(path))


def _fits_float32(values) -> bool:
    """Finite and inside float32's range: every binary output format stores float32."""
    return all(math.isfinite(v) and abs(v) <= np.finfo(np.float32).max for v in values)


def _check_motion(motion: Motion) -> None:
    assert isinstance(motion, Motion) and motion.frame_count > 0
    assert _fits_float32(motion.local_rotations), "rotation beyond float32 accepted"
    assert _fits_float32(motion.root_positions), "root position beyond float32 accepted"
    assert _fits_float32([c for offset in motion.skeleton.rest_offsets for c in offset]), "rest offset beyond float32 accepted"
    assert math.isfinite(motion.fps) and motion.fps > 0


def _check_target(target) -> None:
    skeleton = target.skeleton
    assert skeleton.joint_count > 0
    assert all(math.isfinite(c) for offset in skeleton.rest_offsets for c in offset), "non-finite rest accepted"
    assert all(math.isfinite(c) for q in skeleton.rest_rotations for c in q), "non-finite rest accepted"


def _judge(path: Path, reader: Callable, check: Callable, case: str, problems: List[str]) -> str:
    """'read' or 'refused'; anything else is appended to `problems`."""
    try:
        result = reader(path)
    except KimodoError as error:
        text = str(error)
        if "\n" in text or not text.startswith(str(path)):
            problems.append("{}: message not one line starting with the path: {!r}".format(case, text))
        return "refused"
    except Exception as error:  # noqa: BLE001 - the point of the test: nothing else may escape
        problems.append("{}: {} {}".format(case, type(error).__name__, str(error)[:200]))
        return "crash"
    try:
        check(result)
    except AssertionError as error:
        problems.append("{}: read, but {}".format(case, error))
        return "bad"
    return "read"


# ---------------------------------------------------------------------------------------------- corruptions

Corruption = Tuple[str, bytes]


def _byte_corruptions(data: bytes, rng: random.Random) -> List[Corruption]:
    """Zero length, truncations at seeded offsets (and right after headers), flipped and random bytes."""
    cases: List[Corruption] = [("empty", b"")]
    offsets = sorted({1, 4, 8, 11, 12, 20, 64, len(data) - 1} | {rng.randrange(1, len(data)) for _ in range(CUTS_PER_FILE)})
    cases += [("cut@{}".format(o), data[:o]) for o in offsets if 0 < o < len(data)]
    for n in range(FLIPS_PER_FILE):
        damaged = bytearray(data)
        for _ in range(1 + n % 4):
            at = rng.randrange(len(damaged))
            damaged[at] ^= 1 << rng.randrange(8)
        cases.append(("flip{}".format(n), bytes(damaged)))
    for n in range(3):
        damaged = bytearray(data)
        at = rng.randrange(len(damaged))
        width = min(len(damaged) - at, rng.randrange(1, 64))
        damaged[at:at + width] = bytes(rng.randrange(256) for _ in range(width))
        cases.append(("random{}".format(n), bytes(damaged)))
    return cases


def _text_corruptions(text: str, rng: random.Random, separator: str) -> List[Corruption]:
    """Numbers replaced by garbage, NaN, inf, huge values; fields dropped or added on a line."""
    lines = text.splitlines()
    cases: List[Corruption] = []
    numbered = [i for i, line in enumerate(lines) if any(c.isdigit() for c in line)]
    for n, replacement in enumerate(["nan", "inf", "-inf", "1e999", "abc", "1.2.3", "0x1F", "", "\x00", "1e308"]):
        damaged = list(lines)
        line = rng.choice(numbered)
        words = damaged[line].split(separator)
        spots = [k for k, w in enumerate(words) if any(c.isdigit() for c in w)]
        if not spots:
            continue
        words[rng.choice(spots)] = replacement
        damaged[line] = separator.join(words)
        cases.append(("value{}={!r}".format(n, replacement), ("\n".join(damaged) + "\n").encode("utf-8")))
    for n in range(3):
        damaged = list(lines)
        line = rng.choice(numbered)
        words = damaged[line].split(separator)
        words = words[:-1] if n % 2 == 0 else words + ["1.0"]
        damaged[line] = separator.join(words)
        cases.append(("fields{}".format(n), ("\n".join(damaged) + "\n").encode("utf-8")))
    return cases


def _bvh_corruptions(text: str) -> List[Corruption]:
    def replace(old: str, new: str) -> bytes:
        return text.replace(old, new, 1).encode("utf-8")

    frames_line = next(line for line in text.splitlines() if line.lower().startswith("frames"))
    time_line = next(line for line in text.splitlines() if line.lower().startswith("frame time"))
    return [
        ("frames=huge", replace(frames_line, "Frames: 999999999")),
        ("frames=negative", replace(frames_line, "Frames: -3")),
        ("frames=text", replace(frames_line, "Frames: many")),
        ("frametime=0", replace(time_line, "Frame Time: 0")),
        ("frametime=nan", replace(time_line, "Frame Time: nan")),
        ("channels=huge", replace("CHANNELS 3", "CHANNELS 999999999")),
        ("channels=0", replace("CHANNELS 6", "CHANNELS 0")),
        ("offset=nan", replace("OFFSET", "OFFSET nan nan nan OFFSET")),
        ("no_motion", text.split("MOTION")[0].encode("utf-8")),
        ("deep_nesting", text.replace("ROOT", "ROOT " + "x {\nJOINT " * 3000, 1).encode("utf-8")),
        ("binary", bytes(range(256)) * 4),
    ]


def _csv_corruptions(text: str) -> List[Corruption]:
    first = text.splitlines()[0]
    return [
        ("header", ("a,b,c\n" + text).encode("utf-8")),
        ("semicolons", text.replace(",", ";").encode("utf-8")),
        ("quoted", text.replace(first, '"' + first + '"', 1).encode("utf-8")),
        ("only_blank", b"\n\n\n"),
        ("latin1", text.replace(first, first + "\xe9", 1).encode("latin-1")),
        ("utf16", text.encode("utf-16")),
    ]


def _glb_chunks(data: bytes) -> Tuple[dict, bytes]:
    length = struct.unpack_from("<I", data, 12)[0]
    gltf = json.loads(data[20:20 + length].decode("utf-8"))
    binary_length = struct.unpack_from("<I", data, 20 + length)[0]
    return gltf, data[28 + length:28 + length + binary_length]


def _glb(gltf, binary: bytes) -> bytes:
    text = json.dumps(gltf).encode("utf-8")
    text += b" " * (-len(text) % 4)
    binary += b"\0" * (-len(binary) % 4)
    total = 28 + len(text) + len(binary)
    return (struct.pack("<III", 0x46546C67, 2, total) + struct.pack("<II", len(text), 0x4E4F534A) + text
            + struct.pack("<II", len(binary), 0x004E4942) + binary)


_ODD_VALUES = [None, -1, 0, 10 ** 12, 2 ** 64, 1.5, "x", [], {}, [1, 2], {"a": 1}, True, float("nan"), float("inf")]


def _json_paths(value, prefix=()) -> List[tuple]:
    paths = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            paths += _json_paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value[:6]):  # the first few of long lists are enough
            paths += _json_paths(item, prefix + (index,))
    return paths


def _set(gltf, path: tuple, value):
    copy = json.loads(json.dumps(gltf))
    container = copy
    for key in path[:-1]:
        container = container[key]
    container[path[-1]] = value
    return copy


def _glb_corruptions(data: bytes, rng: random.Random) -> List[Corruption]:
    """Wrong JSON (any value replaced by an odd one, NaN included: json reads it), accessors and views
    pointing outside the buffer, huge counts, reference cycles, chunk lengths that lie."""
    gltf, binary = _glb_chunks(data)
    cases: List[Corruption] = [
        ("json_not_object", _glb([1, 2, 3], binary)),
        ("json_text", data[:20] + b"{not json" + data[29:]),
        ("json_length_huge", data[:12] + struct.pack("<I", 0x7FFFFFF0) + data[16:]),
        ("total_small", data[:8] + struct.pack("<I", 12) + data[12:]),
        ("version_1", data[:4] + struct.pack("<I", 1) + data[8:]),
        ("no_binary", _glb(gltf, b"")[:-8]),
    ]
    for index in range(min(4, len(gltf.get("accessors", [])))):
        for key, value in (("count", 10 ** 12), ("count", -5), ("byteOffset", 10 ** 9), ("componentType", 5125),
                           ("type", "MAT4"), ("bufferView", 999)):
            cases.append(("accessor{}.{}={}".format(index, key, value), _glb(_set(gltf, ("accessors", index, key), value), binary)))
        stripped = _set(gltf, ("accessors", index), {k: v for k, v in gltf["accessors"][index].items() if k != "bufferView"})
        cases.append(("accessor{}.no_view_huge".format(index), _glb(_set(stripped, ("accessors", index, "count"), 10 ** 12), binary)))
    for index in range(min(3, len(gltf.get("bufferViews", [])))):
        for key, value in (("byteOffset", len(binary) - 4), ("byteLength", 10 ** 12), ("byteStride", 10 ** 9), ("byteStride", 0)):
            cases.append(("view{}.{}={}".format(index, key, value), _glb(_set(gltf, ("bufferViews", index, key), value), binary)))
    nodes = gltf.get("nodes", [])
    if len(nodes) > 2:
        cycle = _set(gltf, ("nodes", 1, "children"), [0])
        cycle = _set(cycle, ("nodes", 0, "children"), [1])
        cases.append(("node_cycle", _glb(cycle, binary)))
        cases.append(("node_self_child", _glb(_set(gltf, ("nodes", 1, "children"), [1]), binary)))
        cases.append(("node_two_parents", _glb(_set(gltf, ("nodes", 2, "children"), list(nodes[0].get("children", [1]))), binary)))
        cases.append(("node_translation_nan", _glb(_set(gltf, ("nodes", 1, "translation"), [float("nan"), 0, 0]), binary)))
        cases.append(("node_rotation_short", _glb(_set(gltf, ("nodes", 1, "rotation"), [0, 0, 1]), binary)))
        cases.append(("node_matrix_bad", _glb(_set(gltf, ("nodes", 1, "matrix"), ["a"] * 16), binary)))
    paths = [p for p in _json_paths(gltf) if p and p[0] in ("nodes", "skins", "accessors", "bufferViews", "animations", "scenes", "scene")]
    for n in range(JSON_MUTATIONS):
        path = rng.choice(paths)
        value = rng.choice(_ODD_VALUES)
        cases.append(("json{}:{}={!r}".format(n, "/".join(map(str, path)), value), _glb(_set(gltf, path, value), binary)))
    return cases


def _npy_header(descr: str, shape, fortran: bool = False) -> bytes:
    header = "{{'descr': '{}', 'fortran_order': {}, 'shape': {}, }}".format(descr, fortran, shape)
    header += " " * (-(10 + len(header) + 1) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin-1")


def _npz_with(arrays: Dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, npy_data in arrays.items():
            archive.writestr(name + ".npy", npy_data)
    return buffer.getvalue()


def _npy(value) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, value, allow_pickle=True)
    return buffer.getvalue()


def _npz_corruptions(path: Path, rng: random.Random) -> List[Corruption]:
    """Per array: NaN/inf injected, wrong shapes, no frames, pickled objects, headers that claim terabytes
    or lie about their dtype, and the archive itself damaged."""
    with np.load(path, allow_pickle=False) as stored:
        arrays = {key: stored[key] for key in stored.files}
    encoded = {key: _npy(value) for key, value in arrays.items()}
    cases: List[Corruption] = []

    def variant(name: str, key: str, npy_data: bytes) -> None:
        cases.append(("{}:{}".format(key, name), _npz_with(dict(encoded, **{key: npy_data}))))

    for key, value in arrays.items():
        if value.dtype.kind == "f" and value.size:
            for bad in (np.nan, np.inf, -np.inf, 1e38):
                damaged = value.copy()
                damaged.flat[rng.randrange(value.size)] = bad
                variant("value={}".format(bad), key, _npy(damaged))
        variant("pickled", key, _npy(np.array([{"a": 1}, None], dtype=object)))
        variant("structured", key, _npy(np.zeros(3, dtype=[("a", "<f4"), ("b", "<i4")])))
        variant("strings", key, _npy(np.array(["x"] * max(1, value.size))))
        variant("scalar", key, _npy(np.float32(1.0)))
        if value.shape:
            variant("no_frames", key, _npy(value[:0]))
        variant("flat", key, _npy(value.reshape(-1)))
        variant("extra_axis", key, _npy(value[..., None]))
        if value.dtype.kind in "fb":
            variant("int64", key, _npy(value.astype("<i8")))
        variant("fortran", key, _npy(np.asfortranarray(value)))
        terabytes = (10 ** 9,) + tuple(value.shape[1:]) if value.shape else (10 ** 12,)
        variant("terabytes", key, _npy_header(value.dtype.str, terabytes) + value.tobytes())
        variant("header_negative", key, _npy_header(value.dtype.str, (-1,) + tuple(value.shape[1:])))
        variant("header_code", key, _npy_header(value.dtype.str, "__import__('os').getcwd()"))
        variant("header_cut", key, _npy(value)[:12])
        variant("version_9", key, b"\x93NUMPY\x09\x00" + _npy(value)[8:])
        variant("huge_header_length", key, b"\x93NUMPY\x02\x00" + struct.pack("<I", 0xFFFFFFF0) + b"{")
    archive = path.read_bytes()
    for n in range(12):  # the zip's central directory and end record sit in the last bytes
        damaged = bytearray(archive)
        at = len(damaged) - 1 - rng.randrange(min(len(damaged), 200))
        damaged[at] = rng.randrange(256)
        cases.append(("zip_tail{}".format(n), bytes(damaged)))
    central = archive.index(b"PK\x01\x02")
    cases.append(("zip_extract_version", archive[:central + 6] + b"\xff\x00" + archive[central + 8:]))
    object_only = io.BytesIO()
    np.savez(object_only, **{key: np.array([None, {"x": 1}], dtype=object) for key in arrays})  # allow_pickle save
    cases.append(("all_pickled", object_only.getvalue()))
    cases.append(("not_zip_npy", _npy(next(iter(arrays.values())))))
    return cases


def _clip_corruptions(folder: Path, rng: random.Random) -> List[Tuple[str, Dict[str, bytes]]]:
    """Each of the two files damaged byte-wise, NaN/inf floats written in, one file empty or missing."""
    files = {name: (folder / name).read_bytes() for name in (raw.ROTATIONS_FILE, raw.ROOT_FILE)}
    cases = []
    for name, data in files.items():
        for label, damaged in _byte_corruptions(data, rng):
            cases.append(("{}:{}".format(name, label), dict(files, **{name: damaged})))
        for bad in (float("nan"), float("inf"), 1e30):
            values = bytearray(data)
            at = rng.randrange(len(values) // 4) * 4
            values[at:at + 4] = struct.pack("<f", bad)
            cases.append(("{}:value={}".format(name, bad), dict(files, **{name: bytes(values)})))
    cases.append(("prompt_binary", dict(files, **{raw.PROMPT_FILE: bytes(range(256))})))
    return cases


# ---------------------------------------------------------------------------------------------- tests

def _cases_for(kind: str, path: Path, rng: random.Random) -> List[Corruption]:
    data = path.read_bytes()
    cases = _byte_corruptions(data, rng)
    if kind.startswith("bvh"):
        text = data.decode("utf-8")
        cases += _bvh_corruptions(text) + _text_corruptions(text, rng, " ")
    elif kind == "csv":
        text = data.decode("utf-8")
        cases += _csv_corruptions(text) + _text_corruptions(text, rng, ",")
    elif kind.startswith("glb"):
        cases += _glb_corruptions(data, rng)
    elif kind.startswith("npz"):
        cases += _npz_corruptions(path, rng)
    return cases


def _write_case(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


FILE_KINDS = {  # seed -> (reader, check)
    "bvh_soma": (read_file, _check_motion),
    "bvh_cmu": (read_file, _check_motion),
    "csv": (read_file, _check_motion),
    "npz_current": (read_file, _check_motion),
    "npz_older": (read_file, _check_motion),
    "npz_amass": (read_file, _check_motion),
    "glb_motion": (read_file, _check_motion),
    "glb_rig": (_read_target, _check_target),
    "bvh_cmu_target": (_read_target, _check_target),
}


@pytest.mark.parametrize("kind", sorted(FILE_KINDS))
def test_corrupt_files_read_or_get_one_line(kind, seeds, tmp_path):
    reader, check = FILE_KINDS[kind]
    seed = seeds[kind.replace("_target", "")]
    rng = random.Random("{}:{}".format(SEED, kind))
    problems: List[str] = []
    outcomes: Dict[str, int] = {}
    cases = _cases_for(kind, seed, rng)
    for number, (label, data) in enumerate(cases):
        path = _write_case(tmp_path, "case{}{}".format(number, seed.suffix), data)
        outcome = _judge(path, reader, check, "{} {}".format(kind, label), problems)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    assert not problems, "{} of {} cases failed:\n".format(len(problems), len(cases)) + "\n".join(problems)
    assert outcomes.get("refused", 0) >= len(cases) // 4, outcomes  # the damage is noticed (unused arrays aside)


@pytest.mark.parametrize("kind", ["clip_soma", "clip_g1"])
def test_corrupt_clip_folders_read_or_get_one_line(kind, seeds, tmp_path):
    rng = random.Random("{}:{}".format(SEED, kind))
    problems: List[str] = []
    cases = _clip_corruptions(seeds[kind], rng)
    for number, (label, files) in enumerate(cases):
        folder = tmp_path / "case{}".format(number)
        folder.mkdir()
        for name, data in files.items():
            (folder / name).write_bytes(data)
        _judge(folder, read_file, _check_motion, "{} {}".format(kind, label), problems)
    assert not problems, "{} of {} cases failed:\n".format(len(problems), len(cases)) + "\n".join(problems)


def test_npz_with_a_pickled_object_array_is_refused_unread(tmp_path):
    """numpy writes object arrays only by pickling; reading one must never unpickle it."""
    path = tmp_path / "pickled.npz"
    np.savez(path, local_rot_mats=np.array([{"payload": 1}], dtype=object), root_positions=np.zeros((1, 3), "<f4"))
    with pytest.raises(KimodoError) as caught:
        read_file(path)
    assert str(caught.value) == "{}: local_rot_mats.npy: holds Python objects (pickled data); refusing to unpickle".format(path)


def test_npy_header_claiming_terabytes_is_refused_before_reading(tmp_path):
    path = tmp_path / "huge.npz"
    (tmp_path / "huge.npz").write_bytes(_npz_with({
        "local_rot_mats": _npy_header("<f4", (10 ** 12, 77, 3, 3)) + b"\0" * 64,
        "root_positions": _npy(np.zeros((1, 3), "<f4")),
    }))
    with pytest.raises(KimodoError) as caught:
        read_file(path)
    assert str(caught.value) == ("{}: local_rot_mats.npy: data is shorter than its header declares "
                                 "(64 of 2772000000000000 bytes)".format(path))


def _cli_sample(seeds: Dict[str, Path], folder: Path) -> List[Path]:
    """A few corrupt files of every kind for the command line."""
    rng = random.Random("{}:cli".format(SEED))
    sample = []
    for kind in ("bvh_soma", "csv", "npz_current", "npz_amass", "glb_motion"):
        cases = _cases_for(kind, seeds[kind], rng)
        for label, data in rng.sample(cases, 2) + [cases[0]]:
            sample.append(_write_case(folder, "{}_{}{}".format(kind, len(sample), seeds[kind].suffix), data))
    return sample


def _assert_one_line_and_nothing_written(result, out: Path, case: str) -> None:
    assert result.returncode == 1, (case, result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, (case, result.stderr)
    errors = [line for line in result.stderr.splitlines() if not line.startswith("warning: ")]
    assert len(errors) == 1, (case, result.stderr)
    assert list(out.iterdir()) == [], (case, sorted(p.name for p in out.iterdir()))


def test_cli_convert_and_retarget_refuse_corrupt_files_in_one_line_and_write_nothing(seeds, tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    refused = 0
    for path in _cli_sample(seeds, inputs):
        for output in ("motion.glb", "motion.bvh"):
            result = run_cli("convert", path, out / output)
            if result.returncode == 0:  # the damage missed what this reader uses
                for written in out.iterdir():
                    written.unlink()
                continue
            _assert_one_line_and_nothing_written(result, out, "convert {} {}".format(path.name, output))
            refused += 1
    assert refused >= 10
    rig_cases = _cases_for("glb_rig", seeds["glb_rig"], random.Random("{}:cli-rig".format(SEED)))
    rng = random.Random("{}:cli-rig-sample".format(SEED))
    for number, (label, data) in enumerate(rng.sample(rig_cases, 4) + rig_cases[:1]):
        target = _write_case(inputs, "rig{}.glb".format(number), data)
        result = run_cli("retarget", seeds["clip_soma"], "--target", target, "-o", out / "retargeted.glb")
        if result.returncode == 0:
            (out / "retargeted.glb").unlink()
            continue
        _assert_one_line_and_nothing_written(result, out, "retarget --target {} ({})".format(target.name, label))
    source = _write_case(inputs, "source.bvh", _cases_for("bvh_soma", seeds["bvh_soma"], rng)[0][1])
    result = run_cli("retarget", source, "--target", "mannequin", "-o", out / "retargeted.bvh")
    _assert_one_line_and_nothing_written(result, out, "retarget empty source")


def _cycle(gltf) -> str:
    for node in gltf["nodes"]:  # 0 <- 1 <- 2 <- 3 in the rig: move 3 under 0 to close the loop
        if 3 in node.get("children", []):
            node["children"].remove(3)
    gltf["nodes"][0]["children"] = [3]
    return "nodes[0] is its own ancestor (the node hierarchy has a cycle)"


def _short_rotation(gltf) -> str:
    gltf["nodes"][2]["rotation"] = [0, 0, 1]
    return "nodes[2].rotation is not 4 finite numbers"


def _text_scale(gltf) -> str:
    gltf["nodes"][2]["scale"] = [1, "x", 1]
    return "nodes[2].scale is not 3 finite numbers"


def _nan_translation(gltf) -> str:
    gltf["nodes"][2]["translation"] = [0, float("nan"), 0]
    return "nodes[2].translation is not 3 finite numbers"


def _joint_out_of_range(gltf) -> str:
    gltf["skins"][0]["joints"][0] = 10 ** 20
    return "skins[0].joints is not a valid index (100000000000000000000; {} available)".format(len(gltf["nodes"]))


def _bind_count_huge(gltf) -> str:
    accessor = gltf["accessors"][gltf["skins"][0]["inverseBindMatrices"]]
    accessor["count"] = 10 ** 12
    view = gltf["bufferViews"][accessor["bufferView"]]
    return "accessor {} reads {} items past the end of buffer view {} ({} of {} bytes)".format(
        gltf["skins"][0]["inverseBindMatrices"], 10 ** 12, accessor["bufferView"],
        accessor.get("byteOffset", 0) + 64 * 10 ** 12, view["byteLength"])


def _bind_view_outside(gltf) -> str:
    view_index = gltf["accessors"][gltf["skins"][0]["inverseBindMatrices"]]["bufferView"]
    view = gltf["bufferViews"][view_index]
    view["byteOffset"] = 10 ** 9
    return "buffer view {} ends at byte {}, past the {}-byte binary chunk".format(
        view_index, 10 ** 9 + view["byteLength"], gltf["buffers"][0]["byteLength"])


def _node_not_object(gltf) -> str:
    gltf["nodes"][0] = None
    return "nodes is not a list of objects"


@pytest.mark.parametrize("change", [_cycle, _short_rotation, _text_scale, _nan_translation, _joint_out_of_range,
                                    _bind_count_huge, _bind_view_outside, _node_not_object])
def test_broken_gltf_targets_get_their_exact_line(seeds, tmp_path, change):
    """Each of these crashed (TypeError, IndexError, RecursionError, ValueError) or read NaN before the
    glTF JSON was checked and accessors were bounded."""
    gltf, binary = _glb_chunks(seeds["glb_rig"].read_bytes())
    message = change(gltf)
    path = tmp_path / "rig.glb"
    path.write_bytes(_glb(gltf, binary))
    with pytest.raises(KimodoError) as caught:
        targets.load_target(str(path))
    assert str(caught.value) == "{}: {}".format(path, message)


def test_bvh_nested_too_deep_gets_its_line_not_a_recursion_error(tmp_path):
    path = tmp_path / "deep.bvh"
    joints = "".join("JOINT j{} {{ OFFSET 0 1 0 CHANNELS 3 Zrotation Yrotation Xrotation\n".format(i) for i in range(300))
    path.write_text("HIERARCHY\nROOT r { OFFSET 0 0 0 CHANNELS 3 Zrotation Yrotation Xrotation\n" + joints
                    + "}\n" * 301 + "MOTION\nFrames: 1\nFrame Time: 0.1\n" + "0 " * 903 + "\n", encoding="utf-8")
    with pytest.raises(KimodoError) as caught:
        read_file(path)
    assert str(caught.value) == "{}: line 259: joints nested more than 256 deep".format(path)


def test_zip_declaring_more_than_it_stores_is_refused_before_reading(tmp_path):
    """The zip's central directory says a stored member is 1 GB; it holds a few hundred bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("local_rot_mats.npy", _npy(np.tile(np.eye(3, dtype="<f4"), (1, 30, 1, 1))))
        archive.writestr("root_positions.npy", _npy(np.zeros((1, 3), "<f4")))
    data = bytearray(buffer.getvalue())
    entry = data.index(b"PK\x01\x02")  # the first central directory entry: local_rot_mats.npy
    stored = struct.unpack_from("<I", data, entry + 20)[0]
    struct.pack_into("<I", data, entry + 24, 10 ** 9)  # its uncompressed size
    path = tmp_path / "lying.npz"
    path.write_bytes(bytes(data))
    with pytest.raises(KimodoError) as caught:
        read_file(path)
    assert str(caught.value) == "{}: local_rot_mats.npy: the archive declares 1000000000 bytes but stores {}".format(
        path, stored)


def test_bvh_offset_beyond_float32_is_refused_at_reading(seeds, tmp_path):
    """Read, it made every float32 writer raise OverflowError (struct) or write inf (array)."""
    text = seeds["bvh_cmu"].read_text(encoding="utf-8")
    path = tmp_path / "far.bvh"
    path.write_text(text.replace("OFFSET 1.24777 ", "OFFSET 1e308 ", 1), encoding="utf-8")  # LHipJoint
    with pytest.raises(KimodoError) as caught:
        read_file(path)
    assert str(caught.value) == "{}: holds a value too large for float32 (1e+306): not a motion".format(path)


def test_npz_with_a_damaged_zip_version_field_gets_one_line(seeds, tmp_path):
    """zipfile raises NotImplementedError for it while opening the archive."""
    data = seeds["npz_current"].read_bytes()
    central = data.index(b"PK\x01\x02")
    path = tmp_path / "damaged.npz"
    path.write_bytes(data[:central + 6] + b"\xff\x00" + data[central + 8:])
    with pytest.raises(KimodoError) as caught:
        read_file(path)
    assert str(caught.value) == "{}: unreadable .npz (zip) archive (zip file version 25.5)".format(path)


def test_unreadable_clip_file_gets_one_line(seeds, monkeypatch):
    """Permissions cannot stop root (the test runner here), so the operating system's refusal is simulated."""
    def refuse(path):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(raw, "_read_float32", refuse)
    with pytest.raises(KimodoError) as caught:
        read_file(seeds["clip_soma"])
    assert str(caught.value) == "{}: cannot read {} (Permission denied)".format(seeds["clip_soma"], raw.ROTATIONS_FILE)


def _embedded_gltf(seeds, buffers) -> dict:
    gltf, binary = _glb_chunks(seeds["glb_rig"].read_bytes())
    gltf["buffers"] = buffers(base64.b64encode(binary).decode("ascii"), len(binary))
    return gltf


@pytest.mark.parametrize("buffers, message", [
    (lambda text, size: [{"uri": "data:application/octet-stream;base64," + text[:-2], "byteLength": size}],
     "the embedded buffer is not valid base64 (Incorrect padding)"),
    (lambda text, size: [{"uri": 7, "byteLength": size}], "buffers[0] has no uri text"),
    (lambda text, size: ["data:," + text], "buffers[0] has no uri text"),
])
def test_gltf_with_a_broken_embedded_buffer_gets_one_line(seeds, tmp_path, buffers, message):
    path = tmp_path / "rig.gltf"
    path.write_text(json.dumps(_embedded_gltf(seeds, buffers)), encoding="utf-8")
    with pytest.raises(KimodoError) as caught:
        targets.load_target(str(path))
    assert str(caught.value) == "{}: {}".format(path, message)


def test_gltf_with_an_embedded_buffer_still_reads(seeds, tmp_path):
    path = tmp_path / "rig.gltf"
    gltf = _embedded_gltf(seeds, lambda text, size: [{"uri": "data:application/octet-stream;base64," + text,
                                                       "byteLength": size}])
    path.write_text(json.dumps(gltf), encoding="utf-8")
    embedded, binary = targets.load_target(str(path)).skeleton, targets.load_target(str(seeds["glb_rig"])).skeleton
    assert embedded.joint_names == binary.joint_names and embedded.rest_offsets == binary.rest_offsets
