"""G1 MuJoCo qpos CSV, judged by MuJoCo itself (the `mujoco` package with Kimodo's g1_kinematic.xml) and by
Kimodo's own CSV and NPZ of the same motion. Not judged against *_1dof_projection_posed_joints.npy: that is
Kimodo's viewer projection, not what its CSV holds."""
from __future__ import annotations

import logging

import mujoco
import numpy as np
import pytest

from conftest import CLIPS, DATA, REFERENCE
from kimodo_rig import skeletons
from kimodo_rig.errors import KimodoError
from kimodo_rig.formats import g1_csv, raw, read_file
from kimodo_rig.ops.fk import world_positions
from test_npz import assert_cli_refuses

XML = DATA / "mujoco" / "g1_kinematic.xml"
KIMODO_CSV = REFERENCE / "g1_01_single_text_prompt_qpos.csv"
KIMODO_REST_ZERO_CSV = REFERENCE / "g1_01_single_text_prompt_qpos_mujoco_rest_zero.csv"
KIMODO_NPZ = REFERENCE / "g1_01_single_text_prompt.npz"
MUJOCO_JOINTS = REFERENCE / "g1_01_single_text_prompt_qpos_mujoco_joints.npz"


class MujocoJudge:
    """MuJoCo's forward kinematics of qpos rows, as Kimodo-frame positions of the pelvis and 29 hinges."""

    def __init__(self):
        self.model = mujoco.MjModel.from_xml_path(str(XML))
        self.data = mujoco.MjData(self.model)
        record = skeletons.data("g1skel34")
        self.to_kimodo = np.array(record["mujoco"]["mujoco_to_kimodo_matrix"])
        self.kimodo_indices = np.load(MUJOCO_JOINTS)["kimodo_joint_indices"]
        names = record["joint_names"]
        self.bodies = [self.model.body("pelvis").id] + [
            int(self.model.jnt_bodyid[self.model.joint(names[i].replace("_skel", "_joint")).id])
            for i in self.kimodo_indices[1:]
        ]

    def positions(self, rows):
        out = []
        for row in np.asarray(rows, dtype=np.float64):
            self.data.qpos[:] = row
            mujoco.mj_kinematics(self.model, self.data)
            out.append(self.data.xpos[self.bodies] @ self.to_kimodo.T)
        return np.array(out)


@pytest.fixture(scope="module")
def judge():
    return MujocoJudge()


def test_judge_reproduces_kimodos_mujoco_reference(judge):
    """The judge itself: MuJoCo FK of Kimodo's CSV is the reference file Kimodo made the same way."""
    positions = judge.positions(np.loadtxt(KIMODO_CSV, delimiter=","))
    assert np.abs(positions - np.load(MUJOCO_JOINTS)["positions"]).max() < 1e-6


@pytest.mark.parametrize("source", [KIMODO_CSV, KIMODO_REST_ZERO_CSV])
def test_reader_matches_mujoco_fk(judge, source):
    motion = read_file(source)
    assert motion.skeleton.name == "g1skel34" and motion.frame_count == 150
    ours = np.array(world_positions(motion))[:, judge.kimodo_indices]
    assert np.abs(ours - np.load(MUJOCO_JOINTS)["positions"]).max() < 1e-4
    assert np.abs(ours - judge.positions(np.loadtxt(KIMODO_CSV, delimiter=","))).max() < 1e-4


def test_reader_matches_mujoco_on_our_own_csv(judge, tmp_path):
    g1_csv.write(raw.read(CLIPS / "g1_04_ee_constraint"), tmp_path / "ours.csv")
    rows = np.loadtxt(tmp_path / "ours.csv", delimiter=",")
    ours = np.array(world_positions(read_file(tmp_path / "ours.csv")))[:, judge.kimodo_indices]
    assert np.abs(ours - judge.positions(rows)).max() < 1e-4


def test_written_csv_beats_kimodos_own_in_mujoco(judge, tmp_path, caplog):
    """From Kimodo's NPZ: Kimodo's 36-column layout, the root columns of Kimodo's CSV, and in MuJoCo
    the NPZ's posed_joints reproduced at least as well as Kimodo's CSV does (mean and max)."""
    output = tmp_path / "walk.csv"
    with caplog.at_level(logging.WARNING, logger="kimodo_rig"):
        g1_csv.write(read_file(KIMODO_NPZ), output)
    lines = output.read_text().splitlines()
    assert len(lines) == 150 and all(len(line.split(",")) == 36 for line in lines)
    ours = np.loadtxt(output, delimiter=",")
    kimodo = np.loadtxt(KIMODO_CSV, delimiter=",")
    assert np.abs(ours[:, :7] - kimodo[:, :7]).max() < 1e-5
    target = np.load(KIMODO_NPZ)["posed_joints"][:, judge.kimodo_indices]
    our_error = np.linalg.norm(judge.positions(ours) - target, axis=-1)
    kimodo_error = np.linalg.norm(judge.positions(kimodo) - target, axis=-1)
    assert our_error.mean() <= kimodo_error.mean()
    assert our_error.max() <= kimodo_error.max()
    messages = [r.getMessage() for r in caplog.records]
    assert any("joints leave the G1 XML range: " in m and "waist_roll_joint" in m for m in messages)
    assert any("largest loss projecting onto hinge axes: " in m for m in messages)


def test_range_warning_names_exactly_the_joints_out_of_range(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="kimodo_rig"):
        g1_csv.write(read_file(KIMODO_NPZ), tmp_path / "walk.csv")
    rows = np.loadtxt(tmp_path / "walk.csv", delimiter=",")
    hinges = skeletons.data("g1skel34")["mujoco"]["hinge_joints_in_qpos_order"]
    outside = [h["mujoco_joint"] for i, h in enumerate(hinges)
               if (rows[:, 7 + i] < h["range_rad"][0]).any() or (rows[:, 7 + i] > h["range_rad"][1]).any()]
    warning = [r.getMessage() for r in caplog.records if "XML range" in r.getMessage()][0]
    assert warning.endswith("joints leave the G1 XML range: " + ", ".join(outside))


def test_csv_round_trip_is_exact_after_projection(tmp_path):
    """raw -> csv -> raw -> csv: a motion already on the hinges comes back unchanged."""
    raw.write(read_file(KIMODO_CSV), tmp_path / "clip")
    g1_csv.write(raw.read(tmp_path / "clip"), tmp_path / "again.csv")
    again = np.loadtxt(tmp_path / "again.csv", delimiter=",")
    assert np.abs(again - np.loadtxt(KIMODO_CSV, delimiter=",")).max() < 1e-5


def test_raw_csv_raw_round_trip_within_projection_loss(judge, tmp_path):
    motion = raw.read(CLIPS / "g1_01_single_text_prompt")
    g1_csv.write(motion, tmp_path / "walk.csv")
    raw.write(read_file(tmp_path / "walk.csv"), tmp_path / "back")
    back = np.array(world_positions(raw.read(tmp_path / "back")))
    before = np.array(world_positions(motion))
    error = np.linalg.norm(back - before, axis=-1)
    assert np.abs(back[:, 0] - before[:, 0]).max() < 1e-6  # the root is carried exactly
    assert error.mean() < 0.005 and error.max() < 0.05  # one hinge per joint: the loss the writer reports


def test_soma_to_csv_is_refused(tmp_path):
    output = tmp_path / "soma.csv"
    assert_cli_refuses(CLIPS / "soma_01_single_text_prompt", output, "{}: a G1 qpos CSV holds G1 motion; SOMA "
                       "(30 joints) to G1 is retargeting, not conversion".format(output))


def test_wrong_column_count_is_refused(tmp_path):
    source = tmp_path / "short.csv"
    rows = KIMODO_CSV.read_text().splitlines()
    source.write_text("\n".join(rows[:3] + [",".join(rows[3].split(",")[:35])] + rows[4:]) + "\n")
    assert_cli_refuses(source, tmp_path / "out.glb", "{}: line 4: expected 36 columns (G1 qpos), got 35".format(source))


def test_nan_in_csv_is_refused(tmp_path):
    source = tmp_path / "nan.csv"
    rows = KIMODO_CSV.read_text().splitlines()
    cells = rows[1].split(",")
    cells[9] = "nan"
    source.write_text("\n".join([rows[0], ",".join(cells)] + rows[2:]) + "\n")
    with pytest.raises(KimodoError) as error:
        read_file(source)
    assert str(error.value) == "{}: line 2: value is not a finite number".format(source)
