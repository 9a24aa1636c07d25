"""The glb command as users run it: output names, default folders, the installed command, and the
self-check refusing a broken writer."""
from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import CLIPS, ROOT, run_cli
from gltf_judge import read_raw_clip, write_raw_clip
from kimodo_rig import KimodoError, cli
from kimodo_rig.formats import glb, raw

SOMA_01 = CLIPS / "soma_01_single_text_prompt"


def _clip(folder: Path, frames: int = 2, prompt: str = "") -> Path:
    quats, roots = read_raw_clip(SOMA_01, 30)
    return write_raw_clip(folder, quats[:frames], roots[:frames], prompt=prompt)


def _glb(capsys, *args):
    status = cli.main(["glb"] + [str(a) for a in args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _names(folder: Path):
    return sorted(p.name for p in folder.iterdir())


# --- output names ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("prompt, folder, expected", [
    ("A person walks forward.", "clip", "walks_forward_2.glb"),
    ("kick\nsecond prompt ignored", "clip", "kick_2.glb"),
    ("", "Take 7 (final)", "take_7_final_2.glb"),  # no prompt.txt: the folder name
    ("!!! ...", "backflip", "backflip_2.glb"),  # a prompt with no words names nothing
    ("../../etc/passwd", "clip", "etc_passwd_2.glb"),
    ("C:\\Windows\\evil/..//x", "clip", "c_windows_evil_2.glb"),
    ("", "...", "clip_2.glb"),
])
def test_output_name_is_a_safe_slug_plus_frames(capsys, tmp_path, prompt, folder, expected):
    clip = _clip(tmp_path / "in" / folder, prompt=prompt)
    if not prompt:
        assert not (clip / "prompt.txt").exists()
    outdir = tmp_path / "out"
    outdir.mkdir()
    status, out, err = _glb(capsys, clip, "--outdir", outdir)
    assert (status, err) == (0, "")
    assert _names(outdir) == [expected]
    assert out.startswith(expected + ": SOMA, 30 joints, 2 frames, worst joint disagreement ")
    assert _names(tmp_path) == ["in", "out"]  # nothing escaped the output folder


def test_empty_prompt_file_falls_back_to_the_folder_name(capsys, tmp_path):
    clip = _clip(tmp_path / "Jump_Twice")
    (clip / "prompt.txt").write_text("\n  \n", encoding="utf-8")
    status, _, _ = _glb(capsys, clip, "--outdir", tmp_path)
    assert status == 0 and "jump_twice_2.glb" in _names(tmp_path)


def test_clips_of_one_batch_never_overwrite_each_other(capsys, tmp_path):
    first = _clip(tmp_path / "a", prompt="A person waves")
    second = _clip(tmp_path / "b", prompt="The person waves.")
    outdir = tmp_path / "out"
    outdir.mkdir()
    status, out, err = _glb(capsys, first, second, first, "--outdir", outdir)
    assert (status, err) == (0, "")
    assert _names(outdir) == ["waves_2.glb", "waves_2_2.glb", "waves_2_3.glb"]
    assert [line.split(":")[0] for line in out.splitlines()[:-1]] == ["waves_2.glb", "waves_2_2.glb", "waves_2_3.glb"]


def test_o_writes_exactly_that_file(capsys, tmp_path):
    clip = _clip(tmp_path / "clip", prompt="A person waves")
    status, out, err = _glb(capsys, clip, "-o", tmp_path / "Hello World.glb")
    assert (status, err) == (0, "")
    assert out.startswith("Hello World.glb: SOMA, 30 joints, 2 frames, worst joint disagreement ")
    assert _names(tmp_path) == ["Hello World.glb", "clip"]


# --- kimodo_to_glb.py's arguments without argparse -------------------------------------------------------


def _argparse_glb(arguments):
    """What argparse makes of `arguments` with kimodo_to_glb.py's parser, or the exit status it stops with."""
    import argparse

    from kimodo_rig.cli import glb as glb_verb

    parser = argparse.ArgumentParser(prog="kimodo_to_glb.py")
    glb_verb.add_glb_arguments(parser)
    try:
        return vars(parser.parse_args(arguments))
    except SystemExit as stop:
        return stop.code


@pytest.mark.parametrize("arguments", [
    ["a"], ["a", "b", "c"], ["a", "-o", "x.glb"], ["-o", "x.glb", "a"], ["a", "b", "--outdir", "glb"],
    ["--fps", "24", "a", "b", "--names", "native", "--jobs", "3", "--outdir", "out dir"],
    ["a", "--fps", "1000"], ["a", "--fps", "24", "--fps", "25"], ["a", "--jobs", "1"],
])
def test_plain_arguments_are_read_as_argparse_reads_them(arguments):
    from kimodo_rig.cli import glb as glb_verb

    quick = glb_verb.quick_glb_arguments(arguments, "kimodo_to_glb.py")
    assert quick is not None
    assert vars(quick) == _argparse_glb(arguments)


@pytest.mark.parametrize("arguments", [
    [], ["-h"], ["a", "--help"], ["a", "--out", "x"], ["a", "--fps=24"], ["a", "-ox.glb"], ["a", "--fps"],
    ["a", "--fps", "0"], ["a", "--fps", "fast"], ["a", "--names", "unreal"], ["a", "--jobs", "0"],
    ["a", "-o", "-x.glb"], ["-5"], ["a", "--fps", "24", "b"], ["a", ""], ["a", "--", "b"], ["a", "-o", ""],
    ["--outdir", "x"], ["a", "--outdir", "glb", "b"],
])
def test_other_arguments_are_left_to_argparse(arguments):
    """Help, mistakes and the forms argparse reads its own way go to argparse: its message and status,
    or its reading, exactly as before."""
    from kimodo_rig.cli import glb as glb_verb

    assert glb_verb.quick_glb_arguments(arguments, "kimodo_to_glb.py") is None


def test_the_script_still_shows_argparses_help_and_errors():
    for arguments, status, text in ((["--help"], 0, "usage: kimodo_to_glb.py [-h]"),
                                    (["x", "--fps", "0"], 2, "kimodo_to_glb.py: error: argument --fps: must be 1 to "
                                                              "1000 frames per second"),
                                    (["x", "--fsp", "3"], 2, "unrecognized arguments: --fsp 3")):
        result = subprocess.run([sys.executable, str(ROOT / "kimodo_to_glb.py")] + arguments, capture_output=True,
                                text=True)
        assert result.returncode == status, result
        assert text in (result.stdout + result.stderr), result


# --- default output folders and the installed command -----------------------------------------------------


def _env_without_repo():
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return env


def test_script_writes_beside_itself_wherever_it_is_run_from(tmp_path):
    # A plain download: the script and the package, nothing installed, run from another folder.
    app = tmp_path / "download"
    app.mkdir()
    shutil.copy2(ROOT / "kimodo_to_glb.py", app)
    shutil.copytree(ROOT / "kimodo_rig", app / "kimodo_rig", ignore=shutil.ignore_patterns("__pycache__"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = subprocess.run([sys.executable, str(app / "kimodo_to_glb.py"), str(SOMA_01)], cwd=str(elsewhere),
                            capture_output=True, text=True, env=_env_without_repo())
    assert (result.returncode, result.stderr) == (0, "")
    assert re.match(r"^runs_forward_leaps_150\.glb: SOMA, 30 joints, 150 frames, worst joint disagreement "
                    r"\d\.\de-\d\d m\n$", result.stdout)
    assert (app / "runs_forward_leaps_150.glb").is_file()
    assert list(elsewhere.iterdir()) == []


def test_module_writes_to_the_current_folder(tmp_path):
    clip = _clip(tmp_path / "clip", prompt="A person bows")
    work = tmp_path / "work"
    work.mkdir()
    result = run_cli("glb", clip, cwd=work)
    assert (result.returncode, result.stderr) == (0, "")
    assert _names(work) == ["bows_2.glb"]


def test_pip_install_gives_the_kimodo_rig_command(tmp_path):
    # Offline and fast: the test venv's own setuptools builds a copy of the project (so no build/ or
    # egg-info lands in the repo) into a --target folder.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source)
    shutil.copytree(ROOT / "kimodo_rig", source / "kimodo_rig", ignore=shutil.ignore_patterns("__pycache__"))
    site = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "--disable-pip-version-check", "--target", str(site), str(source)],
        capture_output=True, text=True, cwd=str(tmp_path),
    )
    assert install.returncode == 0, install.stderr
    command = site / "bin" / "kimodo-rig"
    assert command.is_file()
    assert sorted(p.name for p in (site / "kimodo_rig" / "skeletons").glob("*.json")) == [
        "g1skel34.json", "smplx22.json", "somaskel30.json", "somaskel77.json"]
    work = tmp_path / "work"
    work.mkdir()
    env = dict(_env_without_repo(), PYTHONPATH=str(site))
    clip = _clip(tmp_path / "clip", prompt="A person bows")
    result = subprocess.run([str(command), "glb", str(clip)], cwd=str(work), capture_output=True, text=True, env=env)
    assert (result.returncode, result.stderr) == (0, "")
    assert _names(work) == ["bows_2.glb"]
    result = subprocess.run([str(command), "glb", str(clip), "-o", "walk.glb"], cwd=str(work), capture_output=True,
                            text=True, env=env)
    assert (result.returncode, result.stderr) == (0, "")
    assert _names(work) == ["bows_2.glb", "walk.glb"]
    where = subprocess.run([sys.executable, "-c", "import kimodo_rig; print(kimodo_rig.__file__)"], cwd=str(work),
                           capture_output=True, text=True, env=env).stdout.strip()
    assert Path(where).parent.parent == site  # the installed copy ran, not the repo


# --- the self-check refuses a broken writer ---------------------------------------------------------------


def _split_glb(data: bytes):
    """(JSON dict, BIN bytearray) of a .glb, read with struct alone."""
    json_length, _ = struct.unpack_from("<II", data, 12)
    document = json.loads(data[20:20 + json_length])
    bin_length, _ = struct.unpack_from("<II", data, 20 + json_length)
    binary = bytearray(data[28 + json_length:28 + json_length + bin_length])
    return document, binary


def _join_glb(document: dict, binary: bytearray) -> bytes:
    text = json.dumps(document).encode("utf-8")
    text += b" " * (-len(text) % 4)
    total = 12 + 8 + len(text) + 8 + len(binary)
    return (struct.pack("<III", 0x46546C67, 2, total) + struct.pack("<II", len(text), 0x4E4F534A) + text
            + struct.pack("<II", len(binary), 0x004E4942) + bytes(binary))


def _float_view(document: dict, binary: bytearray, accessor_index: int, width: int) -> np.ndarray:
    accessor = document["accessors"][accessor_index]
    view = document["bufferViews"][accessor["bufferView"]]
    start = view.get("byteOffset", 0) + accessor.get("byteOffset", 0)
    return np.frombuffer(binary, "<f4", accessor["count"] * width, start).reshape(-1, width)


def _swap_quaternion_order(data: bytes) -> bytes:
    """A writer that stored w, x, y, z instead of x, y, z, w."""
    document, binary = _split_glb(data)
    animation = document["animations"][0]
    for channel in animation["channels"]:
        if channel["target"]["path"] == "rotation":
            values = _float_view(document, binary, animation["samplers"][channel["sampler"]]["output"], 4)
            values[:] = values[:, [3, 0, 1, 2]]
    return _join_glb(document, binary)


def _stretch_one_bone(data: bytes) -> bytes:
    """A writer that put the left forearm 1 mm too far from the elbow."""
    document, binary = _split_glb(data)
    node = next(n for n in document["nodes"] if n["name"] == "LeftForeArm")
    node["translation"] = [c * (1 + 0.001 / np.linalg.norm(node["translation"])) for c in node["translation"]]
    return _join_glb(document, binary)


def _double_key_times(data: bytes) -> bytes:
    """A writer that keyed frames at 2 * frame / fps."""
    document, binary = _split_glb(data)
    sampler = document["animations"][0]["samplers"][0]
    _float_view(document, binary, sampler["input"], 1)[:] *= 2
    accessor = document["accessors"][sampler["input"]]
    accessor["max"] = [accessor["max"][0] * 2]
    return _join_glb(document, binary)


@pytest.mark.parametrize("corrupt, message", [
    (_swap_quaternion_order, r"the written file puts a joint \d.*m from where the motion has it"),
    (_stretch_one_bone, r"the written file puts a joint 0\.001\d* m from where the motion has it"),
    (_double_key_times, r"the written animation does not key the motion's 30 frames at frame/fps"),
])
def test_self_check_refuses_a_broken_writer(capsys, tmp_path, monkeypatch, corrupt, message):
    clip = _clip(tmp_path / "clip", frames=30, prompt="A person runs")
    motion = raw.read(clip)
    good = glb.encode(motion)
    assert glb.self_check(good, motion) < 1e-6
    broken = corrupt(good)
    assert broken != good
    assert _split_glb(_join_glb(*_split_glb(good)))[0] == _split_glb(good)[0]  # the test's own GLB plumbing
    monkeypatch.setattr(glb, "encode", lambda motion, names="mannequin": broken)
    with pytest.raises(KimodoError, match="^walk.glb: self-check failed: " + message + "$"):
        glb.write(motion, tmp_path / "walk.glb")
    outdir = tmp_path / "out"
    outdir.mkdir()
    status, out, err = _glb(capsys, clip, "--outdir", outdir)
    assert (status, out) == (1, "")
    assert re.match("^runs_30.glb: self-check failed: " + message + "\n$", err), err
    assert list(outdir.iterdir()) == [] and not (tmp_path / "walk.glb").exists()


def test_a_reader_that_stops_early_gets_no_traceback():
    """`kimodo-rig map RIG | head -1`: the pipe closes before we finish writing."""
    process = subprocess.Popen([sys.executable, "-m", "kimodo_rig", "map", "mixamo"], cwd=str(ROOT),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # the reader is gone before the first line
    stderr = process.stderr.read().decode()
    process.wait()
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    assert process.returncode == 1
