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
    output = tmp_path / "walk.fbx"
    result = run_cli("convert", CLIPS / "g1_01_single_text_prompt", output)
    assert result.returncode == 1
    # The list of known types grows with the formats; each is named once.
    assert result.stderr.startswith("{}: unknown file type '.fbx' (known: ".format(output))
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
