"""`kimodo-rig convert` across NPZ, AMASS, G1 CSV, GLB and raw folders: round trips raw -> X -> raw on every
skeleton each format holds, forced formats, and one clear line for what cannot be converted."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import CLIPS, REFERENCE, run_cli
from kimodo_rig import skeletons
from kimodo_rig.formats import raw, read_file
from kimodo_rig.ops.fk import world_positions
from test_amass import synthetic_smplx_motion


def _clip(tmp_path, skeleton):
    """A raw clip folder on `skeleton`: Kimodo's own clips, SOMA 77 from Kimodo's reference NPZ,
    SMPL-X made up (no SMPL-X clip exists publicly)."""
    if skeleton == "somaskel30":
        return CLIPS / "soma_02_multi_text_prompt"
    if skeleton == "g1skel34":
        # Kimodo's CSV of this motion: already on the hinges, so the CSV round trip is exact.
        raw.write(read_file(REFERENCE / "g1_01_single_text_prompt_qpos.csv"), tmp_path / "g1")
        return tmp_path / "g1"
    motion = read_file(REFERENCE / "soma_01_single_text_prompt_somaskel77.npz") if skeleton == "somaskel77" \
        else synthetic_smplx_motion(frames=40)
    raw.write(motion, tmp_path / skeleton)
    return tmp_path / skeleton


CASES = [
    ("kimodo-npz", ".npz", "somaskel30", 1e-5), ("kimodo-npz", ".npz", "somaskel77", 1e-5),
    ("kimodo-npz", ".npz", "g1skel34", 1e-5), ("kimodo-npz", ".npz", "smplx22", 1e-5),
    ("amass", ".npz", "smplx22", 1e-5), ("csv", ".csv", "g1skel34", 1e-5),
    ("glb", ".glb", "somaskel30", 1e-5), ("glb", ".glb", "somaskel77", 1e-5),
    ("glb", ".glb", "g1skel34", 1e-5), ("glb", ".glb", "smplx22", 1e-5),
]


@pytest.mark.parametrize("format_name, suffix, skeleton, tolerance", CASES)
def test_round_trip_raw_format_raw(tmp_path, format_name, suffix, skeleton, tolerance):
    clip = _clip(tmp_path, skeleton)
    middle = tmp_path / ("middle" + suffix)
    back = tmp_path / "back"
    first = run_cli("convert", clip, middle, "--format", format_name)
    assert first.returncode == 0, first.stderr
    second = run_cli("convert", middle, back, "--input-format", format_name)
    assert second.returncode == 0, second.stderr
    original, result = raw.read(clip), raw.read(back)
    assert result.frame_count == original.frame_count
    if original.skeleton.name == "somaskel30" and result.skeleton.name == "somaskel77":
        # NPZ holds SOMA 77 (Kimodo expands on export; the hand ends move with the relaxed fingers):
        # the 30 shared joints keep their rotations, the root its path.
        shared = skeletons.data("somaskel30")["somaskel77_index_of_each_joint"]
        before = np.array(original.local_rotations).reshape(original.frame_count, 30, 4)
        after = np.array(result.local_rotations).reshape(result.frame_count, 77, 4)[:, shared]
        assert np.abs(np.abs((before * after).sum(-1)) - 1).max() < 1e-6
        assert np.abs(np.array(result.root_positions) - np.array(original.root_positions)).max() < tolerance
        return
    assert result.skeleton.name == original.skeleton.name
    before = np.array(world_positions(original))
    after = np.array(world_positions(result))
    assert np.abs(after - before).max() < tolerance


def test_convert_npz_to_csv_reports_the_projection(tmp_path):
    output = tmp_path / "walk.csv"
    result = run_cli("convert", REFERENCE / "g1_01_single_text_prompt.npz", output)
    assert result.returncode == 0
    assert result.stdout == "{}: G1, 34 joints, 150 frames -> {}\n".format(
        REFERENCE / "g1_01_single_text_prompt.npz", output)
    warnings = result.stderr.splitlines()
    assert warnings[0].startswith("warning: {}: joints leave the G1 XML range: ".format(output))
    assert warnings[1].startswith("warning: {}: largest loss projecting onto hinge axes: ".format(output))
    assert len(np.loadtxt(output, delimiter=",")[0]) == 36


def test_convert_picks_the_npz_reader_by_content(tmp_path):
    run_cli("convert", _clip(tmp_path, "smplx22"), tmp_path / "body.npz", "--format", "amass")
    result = run_cli("convert", tmp_path / "body.npz", tmp_path / "kimodo.npz")
    assert result.returncode == 0, result.stderr
    assert "SMPL-X, 22 joints, 40 frames" in result.stdout
    assert "smooth_root_pos" in np.load(tmp_path / "kimodo.npz", allow_pickle=False).files


def test_unknown_extension_is_refused(tmp_path):
    output = tmp_path / "walk.usd"
    result = run_cli("convert", CLIPS / "g1_01_single_text_prompt", output)
    assert result.returncode == 1
    # The list of known types grows with the formats; each is named once.
    assert result.stderr.startswith("{}: unknown file type '.usd' (known: ".format(output))
    assert result.stderr.endswith(", or a clip folder)\n") and result.stderr.count(".npz") == 1
    assert result.stderr.count("\n") == 1 and not output.exists()


def test_unknown_input_extension_is_refused(tmp_path):
    source = tmp_path / "walk.txt"
    source.write_text("1,2,3\n")
    result = run_cli("convert", source, tmp_path / "out.npz")
    assert result.returncode == 1
    assert result.stderr.startswith("{}: unknown file type '.txt' (known: ".format(source))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["walk.txt"]


def test_forced_format_names_are_offered(tmp_path):
    result = run_cli("convert", "--help")
    for name in ("kimodo-npz", "amass", "csv", "raw", "glb"):
        assert name in result.stdout


# --- a raw output replaces only a clip folder (issue 38) ------------------------------------------------

def _tree(folder) -> dict:
    """Every entry under `folder` (hidden ones too): path -> file bytes' digest, link target or "folder"."""
    import hashlib
    import os

    found = {}
    for place, folders, names in os.walk(folder):
        for name in folders + names:
            path = os.path.join(place, name)
            if os.path.islink(path):
                found[path] = "-> " + os.readlink(path)
            elif os.path.isdir(path):
                found[path] = "folder"
            else:
                with open(path, "rb") as stream:
                    found[path] = hashlib.sha256(stream.read()).hexdigest()
    return found


def _verb(verb, clip, output):
    """The command line that writes `clip` (trimmed, looped or joined with itself) to `output`."""
    return {"convert": ["convert", clip, output, "--format", "raw"],
            "trim": ["trim", clip, output, "--start", 0, "--end", 20, "--format", "raw"],
            "loop": ["loop", clip, output, "--format", "raw"],
            "join": ["join", clip, clip, "-o", output, "--format", "raw"]}[verb]


def _occupied(tmp_path, kind):
    """(the output folder, the line its refusal must be) for each kind of folder that is not a clip."""
    clip = CLIPS / "soma_01_single_text_prompt"
    out = tmp_path / "out"
    rule = "(a raw output replaces only a clip folder)"
    if kind == "a file":
        out.write_text("my notes")
        return out, "{}: not replaced: it is a file {}".format(out, rule)
    if kind == "a link":
        (tmp_path / "elsewhere").mkdir()
        out.symlink_to(tmp_path / "elsewhere")
        return out, "{}: not replaced: it is a symbolic link {}".format(out, rule)
    out.mkdir()
    for name in ("local_rotations_xyzw.f32", "root_positions.f32", "prompt.txt"):
        (out / name).write_bytes((clip / name).read_bytes())
    if kind == "a clip and a note":
        (out / "notes.txt").write_text("mine")
        return out, "{}: not replaced: it holds 'notes.txt', which is not a clip's file {}".format(out, rule)
    if kind == "a clip and a subfolder":
        (out / "takes").mkdir()
        (out / "takes" / "best.txt").write_text("mine")
        return out, "{}: not replaced: it holds the folder 'takes' {}".format(out, rule)
    if kind == "two clips":
        (out / "walk_root_positions.f32").write_bytes((clip / "root_positions.f32").read_bytes())
        return out, "{}: not replaced: it holds 2 files ending in root_positions.f32, more than one clip's {}".format(
            out, rule)
    assert kind == "a link in a clip"
    (out / "prompt.txt").unlink()
    (out / "prompt.txt").symlink_to(clip / "prompt.txt")
    return out, "{}: not replaced: it holds 'prompt.txt', which is not a regular file {}".format(out, rule)


@pytest.mark.parametrize("kind", ["a file", "a link", "a clip and a note", "a clip and a subfolder", "two clips",
                                  "a link in a clip"])
@pytest.mark.parametrize("verb", ["convert", "trim", "loop", "join"])
def test_a_raw_output_replaces_nothing_but_a_clip_folder(capsys, tmp_path, verb, kind):
    from kimodo_rig import cli

    clip = tmp_path / "clip"
    clip.mkdir()
    for name in ("local_rotations_xyzw.f32", "root_positions.f32", "prompt.txt"):
        (clip / name).write_bytes((CLIPS / "soma_01_single_text_prompt" / name).read_bytes())
    output, line = _occupied(tmp_path, kind)
    before = _tree(tmp_path)
    status = cli.main([str(a) for a in _verb(verb, clip, output)])
    captured = capsys.readouterr()
    assert (status, captured.out, captured.err) == (1, "", line + "\n")
    assert _tree(tmp_path) == before  # nothing replaced, nothing left behind (no hidden .part or .old)


@pytest.mark.parametrize("verb", ["convert", "trim", "join"])
def test_a_raw_output_over_its_input_clip_or_a_folder_holding_it_is_refused(capsys, tmp_path, verb):
    from kimodo_rig import cli

    library = tmp_path / "library"
    clip = library / "clip"
    clip.mkdir(parents=True)
    for name in ("local_rotations_xyzw.f32", "root_positions.f32", "prompt.txt"):
        (clip / name).write_bytes((CLIPS / "soma_01_single_text_prompt" / name).read_bytes())
    before = _tree(tmp_path)
    cases = [(clip, "{}: not replaced: it is the input (write the output elsewhere)".format(clip)),
             (library / ".." / "library" / "clip", "{}: not replaced: it is the input {} (write the output "
              "elsewhere)".format(library / ".." / "library" / "clip", clip)),
             (library, "{}: not replaced: it holds the folder 'clip' (a raw output replaces only a clip folder)".format(
                 library))]
    for output, line in cases:
        status = cli.main([str(a) for a in _verb(verb, clip, output)])
        captured = capsys.readouterr()
        assert (status, captured.out, captured.err) == (1, "", line + "\n")
        assert _tree(tmp_path) == before


def test_a_raw_output_replaces_a_clip_folder_whole_once_what_is_not_the_clips_is_gone(tmp_path):
    source = CLIPS / "soma_02_multi_text_prompt"
    output = tmp_path / "out"
    output.mkdir()
    for name in ("local_rotations_xyzw.f32", "root_positions.f32"):  # a kimodo.cpp clip, prefixed names
        (output / ("g1_first_" + name)).write_bytes((CLIPS / "g1_01_single_text_prompt" / name).read_bytes())
    (output / "notes.txt").write_text("mine")
    before = _tree(tmp_path)
    result = run_cli("convert", source, output, "--format", "raw")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "{}: not replaced: it holds 'notes.txt', which is not a clip's file (a raw output " \
                            "replaces only a clip folder)\n".format(output)
    assert _tree(tmp_path) == before
    (output / "notes.txt").unlink()
    for replaced in ("a clip", "an empty folder", "nothing"):
        if replaced != "a clip":
            for made in output.iterdir():
                made.unlink()
        if replaced == "nothing":
            output.rmdir()
        result = run_cli("convert", source, output, "--format", "raw")
        assert (result.returncode, result.stderr) == (0, ""), (replaced, result.stderr)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary left beside it
        assert sorted(p.name for p in output.iterdir()) == ["local_rotations_xyzw.f32", "prompt.txt",
                                                           "root_positions.f32"]
        for name in ("local_rotations_xyzw.f32", "root_positions.f32"):
            assert (output / name).read_bytes() == (source / name).read_bytes()
