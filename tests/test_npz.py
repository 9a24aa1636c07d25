"""Kimodo NPZ: our .npy/.npz reader judged by numpy's writer, our writer judged by numpy's reader and by
Kimodo's own reference NPZ files."""
from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

from conftest import CLIPS, NPZ, REFERENCE, run_cli
from gltf_judge import forward_kinematics
from kimodo_rig import skeletons
from kimodo_rig.errors import KimodoError
from kimodo_rig.formats import kimodo_npz, npy, raw, read_file

REFERENCE_NPZ = {
    "soma_01_single_text_prompt": REFERENCE / "soma_01_single_text_prompt_somaskel77.npz",
    "soma_02_multi_text_prompt": REFERENCE / "soma_02_multi_text_prompt_somaskel77.npz",
    "g1_01_single_text_prompt": REFERENCE / "g1_01_single_text_prompt.npz",
}


@pytest.mark.parametrize("dtype", ["<f4", ">f4", "<f8", ">f8", "<i4", ">i2", "<u2", "|b1", "<f2"])
@pytest.mark.parametrize("fortran", [False, True])
def test_npy_reader_reads_what_numpy_writes(dtype, fortran):
    values = (np.arange(24).reshape(2, 3, 4) % 2 == 0) if dtype == "|b1" else np.arange(24).reshape(2, 3, 4) * 0.5 - 3
    original = np.asfortranarray(values.astype(dtype)) if fortran else values.astype(dtype)
    buffer = io.BytesIO()
    np.save(buffer, original)
    parsed = npy.parse_npy(buffer.getvalue())
    assert parsed.shape == (2, 3, 4)
    np.testing.assert_array_equal(np.array(parsed.values).reshape(parsed.shape), original.astype(np.float64))


def test_npy_reader_reads_format_versions_2_and_3(tmp_path):
    for version in ((2, 0), (3, 0)):
        buffer = io.BytesIO()
        np.lib.format.write_array(buffer, np.eye(3, dtype="<f4"), version=version)
        parsed = npy.parse_npy(buffer.getvalue())
        np.testing.assert_array_equal(np.array(parsed.values).reshape(parsed.shape), np.eye(3))


@pytest.mark.parametrize("clip", sorted(p.name for p in NPZ.iterdir()))
def test_older_layout_reads_to_kimodo_posed_joints(clip):
    """The demo clips' motion.npz (posed_joints, global_rot_mats): our local rotations, run through
    numpy FK, land on the posed_joints Kimodo stored."""
    motion = read_file(NPZ / clip / "motion.npz")
    stored = np.load(NPZ / clip / "motion.npz", allow_pickle=False)
    assert motion.skeleton.joint_count == stored["posed_joints"].shape[1]
    quats = np.array(motion.local_rotations).reshape(motion.frame_count, motion.joint_count, 4)
    record = skeletons.data(motion.skeleton.name)
    positions = forward_kinematics(record["parents"], record["rest_local_offsets_m"], quats,
                                   np.array(motion.root_positions).reshape(-1, 3))
    assert np.abs(positions - stored["posed_joints"]).max() < 1e-5
    np.testing.assert_array_equal(np.array(motion.foot_contacts).reshape(-1, 4), stored["foot_contacts"])
    assert motion.prompt and motion.name == clip


def assert_matches_reference(written, reference):
    """Keys, order, shapes and dtypes as Kimodo writes them; arrays equal to Kimodo's within float32
    precision (smooth_root_pos: Kimodo's smoother ran in float32)."""
    assert written.files == reference.files
    for key in reference.files:
        assert written[key].dtype == reference[key].dtype, key
        assert written[key].shape == reference[key].shape, key
    assert np.abs(written["posed_joints"] - reference["posed_joints"]).max() < 1e-5
    assert np.abs(written["root_positions"] - reference["root_positions"]).max() < 1e-6
    assert np.abs(written["local_rot_mats"] - reference["local_rot_mats"]).max() < 1e-5
    assert np.abs(written["global_rot_mats"] - reference["global_rot_mats"]).max() < 1e-5
    assert np.abs(written["global_root_heading"] - reference["global_root_heading"]).max() < 1e-5
    assert np.abs(written["smooth_root_pos"] - reference["smooth_root_pos"]).max() < 1e-4


@pytest.mark.parametrize("name", sorted(REFERENCE_NPZ))
def test_writer_reproduces_reference_npz(name, tmp_path):
    output = tmp_path / "out.npz"
    kimodo_npz.write(read_file(REFERENCE_NPZ[name]), output)
    written = np.load(output, allow_pickle=False)
    reference = np.load(REFERENCE_NPZ[name], allow_pickle=False)
    assert_matches_reference(written, reference)
    np.testing.assert_array_equal(written["foot_contacts"], reference["foot_contacts"])


@pytest.mark.parametrize("name", ["soma_01_single_text_prompt", "soma_02_multi_text_prompt", "g1_01_single_text_prompt"])
def test_raw_clip_writes_the_reference_npz_of_the_same_motion(name, tmp_path):
    """kimodo.cpp's raw clip (SOMA 30) -> NPZ: expanded to 77 joints as Kimodo's export does."""
    output = tmp_path / "out.npz"
    kimodo_npz.write(raw.read(CLIPS / name), output)
    assert_matches_reference(np.load(output, allow_pickle=False), np.load(REFERENCE_NPZ[name], allow_pickle=False))


def test_derived_foot_contacts_follow_kimodos_rule(tmp_path):
    """Without contacts in the input they are derived: joint below 0.10 m and slower than 0.15 m/s
    (Kimodo's complete_motion_dict), recomputed here with numpy from the written posed_joints."""
    motion = raw.read(CLIPS / "soma_03_full_body_keyframes")
    assert motion.foot_contacts is None
    output = tmp_path / "out.npz"
    kimodo_npz.write(motion, output)
    written = np.load(output, allow_pickle=False)
    names = skeletons.data("somaskel77")["joint_names"]
    feet = [names.index(n) for n in ("LeftFoot", "LeftToeBase", "RightFoot", "RightToeBase")]
    positions = written["posed_joints"].astype(np.float64)[:, feet]
    velocity = np.diff(positions, axis=0) * 30.0
    velocity = np.concatenate([velocity, velocity[-1:]])
    expected = (np.linalg.norm(velocity, axis=-1) < 0.15) & (positions[..., 1] < 0.10)
    assert expected.any() and (~expected).any()
    assert (written["foot_contacts"] != expected).mean() < 0.01  # float32 rounding at the thresholds only


@pytest.mark.parametrize("clip", ["soma_01_single_text_prompt", "g1_02_multi_text_ee_constraint"])
def test_round_trip_raw_npz_raw(clip, tmp_path):
    motion = raw.read(CLIPS / clip)
    kimodo_npz.write(motion, tmp_path / "out.npz")
    raw.write(read_file(tmp_path / "out.npz"), tmp_path / "back")
    back = raw.read(tmp_path / "back")
    original = np.array(motion.local_rotations).reshape(motion.frame_count, motion.joint_count, 4)
    again = np.array(back.local_rotations).reshape(back.frame_count, back.joint_count, 4)
    if motion.skeleton.name == "somaskel30":  # came back as SOMA 77: compare the 30 shared joints
        again = again[:, skeletons.data("somaskel30")["somaskel77_index_of_each_joint"]]
    assert np.abs(np.abs((original * again).sum(-1)) - 1).max() < 1e-6  # same rotation up to sign
    assert np.abs(np.array(back.root_positions) - np.array(motion.root_positions)).max() < 1e-6


def test_round_trip_soma77(tmp_path):
    motion = read_file(REFERENCE_NPZ["soma_02_multi_text_prompt"])
    raw.write(motion, tmp_path / "clip")
    kimodo_npz.write(raw.read(tmp_path / "clip"), tmp_path / "out.npz")
    written = np.load(tmp_path / "out.npz", allow_pickle=False)
    reference = np.load(REFERENCE_NPZ["soma_02_multi_text_prompt"], allow_pickle=False)
    assert np.abs(written["posed_joints"] - reference["posed_joints"]).max() < 1e-5


def assert_cli_refuses(source, output, message, *options):
    """`convert source output` fails with exactly `message` on one line and leaves no output behind."""
    result = run_cli("convert", source, output, *options)
    assert (result.returncode, result.stderr) == (1, message + "\n")
    assert not output.exists()
    assert not [p.name for p in output.parent.iterdir() if p.name.startswith("." + output.name)]  # no temp


def _npz(path, **arrays):
    np.savez(path, **arrays)
    return path


def test_nan_is_refused_with_one_line(tmp_path):
    reference = np.load(REFERENCE_NPZ["g1_01_single_text_prompt"], allow_pickle=False)
    roots = reference["root_positions"].copy()
    roots[3, 1] = np.nan
    source = _npz(tmp_path / "nan.npz", local_rot_mats=reference["local_rot_mats"], root_positions=roots)
    assert_cli_refuses(source, tmp_path / "out.glb", "{}: root_positions: value 10 is not a finite number".format(source))


def test_nan_rotation_is_refused(tmp_path):
    reference = np.load(REFERENCE_NPZ["g1_01_single_text_prompt"], allow_pickle=False)
    rotations = reference["local_rot_mats"].copy()
    rotations[0, 2, 1, 1] = np.nan
    source = _npz(tmp_path / "nan.npz", local_rot_mats=rotations, root_positions=reference["root_positions"])
    with pytest.raises(KimodoError) as error:
        read_file(source)
    assert str(error.value) == "{}: local_rot_mats: matrix 2 holds a value that is not a finite number".format(source)


def test_not_a_zip_is_refused(tmp_path):
    source = tmp_path / "motion.npz"
    source.write_bytes(b"posed_joints, but as text\n")
    assert_cli_refuses(source, tmp_path / "out.glb", "{}: not an .npz file (not a zip archive)".format(source))


def test_object_array_is_refused_never_unpickled(tmp_path):
    reference = np.load(REFERENCE_NPZ["g1_01_single_text_prompt"], allow_pickle=False)
    objects = np.empty(2, dtype=object)
    objects[0], objects[1] = {"a": 1}, [2]
    source = _npz(tmp_path / "objects.npz", local_rot_mats=objects, root_positions=reference["root_positions"])
    assert_cli_refuses(source, tmp_path / "out.npz",
                       "{}: local_rot_mats.npy: holds Python objects (pickled data); refusing to unpickle".format(source))


def test_truncated_array_is_refused(tmp_path):
    good = tmp_path / "good.npz"
    kimodo_npz.write(raw.read(CLIPS / "g1_01_single_text_prompt"), good)
    source = tmp_path / "short.npz"
    with zipfile.ZipFile(good) as old, zipfile.ZipFile(source, "w") as new:
        for name in old.namelist():
            data = old.read(name)
            new.writestr(name, data[:-7] if name == "local_rot_mats.npy" else data)
    with pytest.raises(KimodoError) as error:
        read_file(source)
    assert str(error.value).startswith("{}: local_rot_mats.npy: data is shorter than its header declares".format(source))


def test_an_npz_of_other_arrays_is_refused(tmp_path):
    source = _npz(tmp_path / "other.npz", weights=np.zeros(3))
    with pytest.raises(KimodoError) as error:
        read_file(source)
    assert str(error.value) == ("{}: not a Kimodo NPZ (needs local_rot_mats and root_positions, or posed_joints "
                                "and global_rot_mats; has weights)".format(source))


def test_unknown_joint_count_is_refused(tmp_path):
    source = _npz(tmp_path / "odd.npz", local_rot_mats=np.tile(np.eye(3, dtype=np.float32), (2, 5, 1, 1)),
                  root_positions=np.zeros((2, 3), np.float32))
    with pytest.raises(KimodoError) as error:
        read_file(source)
    assert str(error.value) == "{}: 5 joints matches no Kimodo skeleton (22, 30, 34 or 77)".format(source)


def test_a_matrix_that_is_no_rotation_is_refused(tmp_path):
    rotations = np.tile(np.eye(3, dtype=np.float32), (2, 34, 1, 1))
    rotations[1, 4] *= 2.0
    rotations[1, 6, 0] *= -1.0  # a mirror is no rotation either, though orthonormal
    source = _npz(tmp_path / "scaled.npz", local_rot_mats=rotations, root_positions=np.zeros((2, 3), np.float32))
    with pytest.raises(KimodoError) as error:
        read_file(source)
    assert str(error.value) == "{}: local_rot_mats: matrix 38 is not a rotation".format(source)
    rotations[1, 4] /= 2.0
    np.savez(source, local_rot_mats=rotations, root_positions=np.zeros((2, 3), np.float32))
    with pytest.raises(KimodoError) as error:
        read_file(source)
    assert str(error.value) == "{}: local_rot_mats: matrix 40 is not a rotation".format(source)
