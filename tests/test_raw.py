"""Reading kimodo.cpp clip folders: what a good one becomes, and the exact line every bad one gets from the
`glb` command (exit status 1, nothing written, input untouched)."""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import numpy as np
import pytest

from conftest import CLIPS, REFERENCE, run_cli
from gltf_judge import read_raw_clip, write_raw_clip
from kimodo_rig import KimodoError, cli, files, skeletons
from kimodo_rig.formats import raw

INVALID = Path(__file__).resolve().parent / "invalid"
SOMA_01 = CLIPS / "soma_01_single_text_prompt"

EXPECTED = {
    "missing_root": "not a kimodo clip directory",
    "missing_rotations": "not a kimodo clip directory",
    "rotations_not_whole_joints": "rotation and root files disagree",
    "zero_frames": "rotation and root files disagree",
    "empty_rotations": "rotation and root files disagree",
    "truncated_root": "rotation and root files disagree",
    "non_unit_quaternion": "rotations are not unit quaternions",
    "nan_rotation": "rotations are not unit quaternions",
    "inf_rotation": "rotations are not unit quaternions",
    "nan_root": "root positions are not finite numbers",
    "joints_25": "25 joints matches no known skeleton",
}


def _digest(path: Path) -> dict:
    files = sorted(path.rglob("*")) if path.is_dir() else [path]
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files if p.is_file()}


def _glb(capsys, *args):
    """The glb command in-process: (exit status, stdout, stderr)."""
    status = cli.main(["glb"] + [str(a) for a in args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _good_clip(folder: Path, frames: int = 2) -> Path:
    quats, roots = read_raw_clip(SOMA_01, 30)
    return write_raw_clip(folder, quats[:frames], roots[:frames], prompt="A person runs forward")


def test_every_invalid_fixture_is_listed():
    assert sorted(p.name for p in INVALID.iterdir() if p.is_dir()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_clip_gets_its_exact_line_and_writes_nothing(capsys, tmp_path, name):
    clip = INVALID / name
    before = _digest(clip)
    status, out, err = _glb(capsys, clip, "--outdir", tmp_path)
    assert (status, out, err) == (1, "", "{}: {}\n".format(clip, EXPECTED[name]))
    assert list(tmp_path.iterdir()) == []
    assert _digest(clip) == before
    with pytest.raises(KimodoError) as raised:
        raw.read(clip)
    assert str(raised.value) == "{}: {}".format(clip, EXPECTED[name])


def test_empty_folder_missing_path_and_a_glb_are_not_clip_folders(capsys, tmp_path):
    outdir = tmp_path / "out"
    outdir.mkdir()
    empty = tmp_path / "empty"
    empty.mkdir()
    missing = tmp_path / "no_such_clip"
    status, out, _ = _glb(capsys, _good_clip(tmp_path / "good"), "--outdir", outdir)
    assert status == 0
    made = next(outdir.iterdir())
    glb_copy = tmp_path / made.name
    glb_copy.write_bytes(made.read_bytes())
    made.unlink()
    for path in (empty, missing, glb_copy):
        before = _digest(path) if path.exists() else {}
        status, out, err = _glb(capsys, path, "--outdir", outdir)
        assert (status, out, err) == (1, "", "{}: not a kimodo clip directory\n".format(path))
        assert list(outdir.iterdir()) == []
        assert (_digest(path) if path.exists() else {}) == before


@pytest.mark.parametrize("scale, accepted", [(1.0009, True), (0.9991, True), (1.0011, False), (0.9989, False)])
def test_unit_quaternion_tolerance_is_1e_3(tmp_path, scale, accepted):
    quats, roots = read_raw_clip(SOMA_01, 30)
    quats = quats[:3] / np.linalg.norm(quats[:3], axis=-1, keepdims=True)
    quats[2, 5] *= scale
    clip = write_raw_clip(tmp_path / "clip", quats, roots[:3])
    if accepted:
        assert raw.read(clip).frame_count == 3
    else:
        with pytest.raises(KimodoError, match="rotations are not unit quaternions$"):
            raw.read(clip)


@pytest.mark.parametrize("where", [0, 40, -1])
def test_a_nan_rotation_anywhere_is_refused(tmp_path, where):
    # The check looks at the smallest and largest norm, which a NaN in the middle would slip past.
    quats, roots = read_raw_clip(SOMA_01, 30)
    quats = quats[:3].copy()
    quats.reshape(-1, 4)[where, 1] = np.nan
    clip = write_raw_clip(tmp_path / "clip", quats, roots[:3])
    with pytest.raises(KimodoError, match="rotations are not unit quaternions$"):
        raw.read(clip)


def test_the_joint_count_table_is_the_skeletons_own():
    assert {name: len(skeletons.data(name)["joint_names"]) for name in skeletons.BUILTIN} == skeletons.JOINT_COUNTS


@pytest.mark.parametrize("path", ["walk.glb", "out/walk.glb", "out/walk.glb/", "out//walk.glb/.", "/", "", ".",
                                  "a/..", "./x", "/abs/x.y.glb", "name with spaces.glb"])
def test_file_name_is_pathlibs_name(path):
    assert files.file_name(path) == Path(path).name


def test_reader_takes_frames_from_the_root_file_and_joints_from_the_rotation_size():
    motion = raw.read(REFERENCE / "size_check")
    assert (motion.frame_count, motion.joint_count, motion.skeleton.name) == (90, 30, "somaskel30")
    quats, roots = read_raw_clip(SOMA_01, 30)
    motion = raw.read(SOMA_01, fps=24)
    assert (motion.frame_count, motion.joint_count, motion.fps) == (150, 30, 24.0)
    assert motion.prompt == "A person runs forward and then leaps over an obstacle in front of them."
    np.testing.assert_array_equal(np.array(motion.local_rotations).reshape(quats.shape), quats)
    np.testing.assert_array_equal(np.array(motion.root_positions).reshape(roots.shape), roots)


@pytest.mark.parametrize("joints, skeleton", [(22, "smplx22"), (30, "somaskel30"), (34, "g1skel34"), (77, "somaskel77")])
def test_joint_count_picks_the_skeleton(tmp_path, joints, skeleton):
    identity = np.tile([0.0, 0.0, 0.0, 1.0], (4, joints, 1))
    clip = write_raw_clip(tmp_path / "clip", identity, np.zeros((4, 3)))
    assert raw.read(clip).skeleton.name == skeleton


def test_batch_converts_the_good_clips_and_says_one_failed(tmp_path):
    good_a = _good_clip(tmp_path / "a")
    good_b = _good_clip(tmp_path / "b", frames=3)
    bad = INVALID / "nan_rotation"
    outdir = tmp_path / "out"
    outdir.mkdir()
    arguments = [good_a, bad, good_b, "--outdir", outdir]
    for script, command in (("-m", ["glb"] + arguments), ("kimodo_to_glb.py", arguments)):
        result = run_cli(*command, script=script)
        assert result.returncode == 1
        assert result.stderr == "{}: rotations are not unit quaternions\n".format(bad)
        lines = result.stdout.splitlines()
        assert [line.split(":")[0] for line in lines[:-1]] == ["runs_forward_2.glb", "runs_forward_3.glb"]
        assert re.match(r"^2 converted, 1 failed, \d+\.\d s$", lines[-1]), lines[-1]
        assert sorted(p.name for p in outdir.iterdir()) == ["runs_forward_2.glb", "runs_forward_3.glb"]
        for made in outdir.iterdir():
            made.unlink()  # so the second front end must write its own


def test_unwritable_output_gets_a_clear_line_and_leaves_nothing(capsys, tmp_path):
    clip = _good_clip(tmp_path / "clip")
    a_file = tmp_path / "a_file"
    a_file.write_text("not a folder")
    cases = [
        (["--outdir", a_file], "{}: output folder is not a folder\n".format(a_file)),
        (["-o", a_file / "walk.glb"], "{}: cannot write output folder (Not a directory)\n".format(a_file)),
    ]
    for options, expected in cases:
        status, out, err = _glb(capsys, clip, *options)
        assert (status, out, err) == (1, "", expected)
    assert a_file.read_text() == "not a folder"
    # An output folder that cannot be made (its parent is a file) gets one line too.
    status, out, err = _glb(capsys, clip, "--outdir", a_file / "sub")
    assert (status, out, err) == (1, "", "{}: cannot create output folder (Not a directory)\n".format(a_file / "sub"))
    # A target that is a folder: the temporary file is written, then cannot replace it, and is removed.
    occupied = tmp_path / "occupied.glb"
    occupied.mkdir()
    status, out, err = _glb(capsys, clip, "-o", occupied)
    assert (status, out, err) == (1, "", "{}: cannot write (Is a directory)\n".format(occupied))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file", "clip", "occupied.glb"]
    assert list(occupied.iterdir()) == []
    # A folder nobody may create files in, even root (tests may run as root, where chmod does not stop writes).
    status, out, err = _glb(capsys, clip, "--outdir", "/proc")
    assert status == 1 and out == ""
    assert err.startswith("/proc: cannot write output folder (") and err.endswith(")\n") and err.count("\n") == 1
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o555)
        status, out, err = _glb(capsys, clip, "--outdir", locked)
        assert (status, out, err) == (1, "", "{}: cannot write output folder (Permission denied)\n".format(locked))
        assert list(locked.iterdir()) == []


def test_o_with_several_clips_is_refused(capsys, tmp_path):
    clip = _good_clip(tmp_path / "clip")
    target = tmp_path / "walk.glb"
    status, out, err = _glb(capsys, clip, clip, "-o", target)
    assert (status, out) == (2, "")
    assert err == "kimodo-rig glb: -o names one file; use --outdir for 2 clips\n"
    result = run_cli(clip, clip, "-o", target, script="kimodo_to_glb.py")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "kimodo_to_glb.py: -o names one file; use --outdir for 2 clips\n"
    assert not target.exists()


def test_inputs_are_never_modified_by_a_conversion(tmp_path):
    watched = [SOMA_01, REFERENCE / "size_check"]
    before = [_digest(p) for p in watched]
    result = run_cli("glb", *watched, "--outdir", tmp_path)
    assert result.returncode == 0, result.stderr
    assert [_digest(p) for p in watched] == before
    assert len(list(tmp_path.iterdir())) == 2


def test_outputs_get_ordinary_permissions_not_mkstemps_private_ones(tmp_path):
    import stat

    from kimodo_rig.formats import glb

    motion = raw.read(CLIPS / "soma_01_single_text_prompt")
    mask = os.umask(0o022)
    try:
        glb.write(motion, tmp_path / "walk.glb")
        raw.write(motion, tmp_path / "clip")
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / "walk.glb").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "clip").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "clip" / "root_positions.f32").stat().st_mode) == 0o644


def test_a_file_added_to_the_clip_folder_while_it_is_rewritten_is_kept_and_the_write_refused(tmp_path):
    """The folder rule (see test_convert) is looked at again after the new clip is written: a note saved
    into the old clip folder meanwhile is not removed with it."""
    motion = raw.read(SOMA_01)
    target = _good_clip(tmp_path / "clip")
    before = _digest(target)

    def fill_while_someone_writes_a_note(folder):
        (folder / raw.ROTATIONS_FILE).write_bytes(b"\0" * 16)
        (target / "notes.txt").write_text("saved meanwhile")

    with pytest.raises(KimodoError) as refusal:
        files.write_folder_atomic(target, fill_while_someone_writes_a_note, raw.stray_entry, raw.REPLACES)
    assert str(refusal.value) == ("{}: not replaced: it holds 'notes.txt', which is not a clip's file (a raw output "
                                  "replaces only a clip folder)".format(target))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clip"]
    assert _digest(target) == dict(before, **{str(target / "notes.txt"): _digest(target / "notes.txt")[str(target / "notes.txt")]})
    assert raw.output_problem(target) == str(refusal.value)
    raw.write(motion, tmp_path / "new")  # and where nothing is, the same writer writes
    assert raw.output_problem(tmp_path / "new") == ""
