"""The report's Kimodo benchmark figures of the feet (issue 40), judged by numpy on the written file and on
Kimodo's own NPZ, with Kimodo's definitions (kimodo/metrics/foot_skate.py) written out here:
- foot_skate_from_pred_contacts: the four contact joints (ankle on heel contacts, toe on toe contacts), each
  one's speed |p[t+1] - p[t]| * fps on every frame t < T - 1 it is in contact, averaged over those;
- foot_skate_ratio: the toe joints on frames t where they are under 5 cm at t and t + 1, the share of those
  faster than 0.2 m/s (thresholds per 1.7 m of character).
The clip's own figures are Kimodo's posed joints with its contacts, as Kimodo's benchmark takes them.
"""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

import rig_variants as rv
from conftest import NPZ, ROOT, run_cli
from feet_judge import Skinned, _carried_by, _descendants, _height, _node_world_static

FOOT, TOE = "foot_{}", "ball_{}"  # the mannequin's ankle and toe joints


def kimodo_figures(ankles, toes, contacts, fps, floor=0.0, size=1.0):
    """ankles, toes: (frames, 2, 3) left, right; contacts: (frames, 4) left heel, left toe, right heel, right toe."""
    joints = np.stack([ankles[:, 0], toes[:, 0], ankles[:, 1], toes[:, 1]], 1)
    speed = np.linalg.norm(joints[1:] - joints[:-1], axis=-1) * fps
    on = contacts[:-1].astype(bool)
    skate = float(speed[on].mean())
    toe_low = (toes[..., 1] - floor) < 0.05 * size
    both = toe_low[:-1] & toe_low[1:]
    toe_speed = np.linalg.norm(toes[1:] - toes[:-1], axis=-1) * fps
    ratio = float((toe_speed[both] > 0.2 * size).sum() / both.sum())
    return skate, ratio


@pytest.mark.parametrize("clip", ["soma_02_multi_text_prompt", "g1_01_single_text_prompt"])
@pytest.mark.parametrize("lock", [True, False])
def test_report_prints_kimodo_skate_of_the_written_file_beside_the_clips(tmp_path, clip, lock):
    out, report_path = tmp_path / "out.glb", tmp_path / "report.json"
    result = run_cli("retarget", NPZ / clip / "motion.npz", "--target", "mannequin", "-o", out, "--report", report_path,
                     *([] if lock else ["--no-foot-lock"]))
    assert result.returncode == 0, result.stderr
    report = json.loads(report_path.read_text())
    motion = np.load(NPZ / clip / "motion.npz")
    contacts, fps = motion["foot_contacts"], 30.0

    # The clip's own: its posed joints, its ankle and toe joints, its contacts.
    posed = motion["posed_joints"]
    skeleton = {30: "somaskel30", 77: "somaskel77", 34: "g1skel34"}[posed.shape[1]]
    record = json.loads((ROOT / "kimodo_rig" / "skeletons" / (skeleton + ".json")).read_text())
    groups = record["semantic_groups"]
    index = [record["joint_names"].index(n) for n in groups["left_foot_chain"][:2] + groups["right_foot_chain"][:2]]
    skate, ratio = kimodo_figures(posed[:, [index[0], index[2]]], posed[:, [index[1], index[3]]], contacts, fps)
    assert report["source_kimodo_skate_m_s"] == pytest.approx(skate, abs=2e-4)
    assert report["source_kimodo_skate_cm_per_frame"] == pytest.approx(100.0 * skate / fps, abs=2e-3)
    assert report["source_kimodo_skate_ratio"] == pytest.approx(ratio, abs=2e-4)

    # The character's: the written file's ankle and toe joints, over the rest floor (the lowest foot vertex
    # of the input character at rest), thresholds scaled with its height.
    skinned = Skinned(out)
    world = skinned.glb.animated_world_matrices()
    by_name = {n.name: i for i, n in enumerate(skinned.glb.gltf.nodes)}
    ankles = np.stack([world[:, by_name[FOOT.format(s)], :3, 3] for s in "lr"], 1)
    toes = np.stack([world[:, by_name[TOE.format(s)], :3, 3] for s in "lr"], 1)
    rig = Skinned(rv.MANNEQUIN)
    static = _node_world_static(rig.glb)[None]
    floor = min(rig.skin(static, _carried_by(rig, _descendants(rig.glb, FOOT.format(s))))[0][:, 1].min() for s in "lr")
    height = _height(rig)
    skate, ratio = kimodo_figures(ankles, toes, contacts, fps, floor, height / 1.7)
    assert report["kimodo_skate_m_s"] == pytest.approx(skate, abs=2e-4)
    assert report["kimodo_skate_cm_per_frame"] == pytest.approx(100.0 * skate / fps, abs=2e-3)
    assert report["kimodo_skate_ratio"] == pytest.approx(ratio, abs=0.01)
    line = [text for text in result.stdout.splitlines() if "Kimodo's foot skate" in text]
    pattern = (r"  Kimodo's foot skate (\S+) cm a frame \((\S+) m/s\), skate ratio (\S+); "
               r"the clip's own (\S+) cm a frame \((\S+) m/s\), skate ratio (\S+)$")
    assert len(line) == 1 and re.match(pattern, line[0]), result.stdout
    shown = [float(x) for x in re.match(pattern, line[0]).groups()]
    keys = ("kimodo_skate_cm_per_frame", "kimodo_skate_m_s", "kimodo_skate_ratio", "source_kimodo_skate_cm_per_frame",
            "source_kimodo_skate_m_s", "source_kimodo_skate_ratio")
    assert shown == pytest.approx([report[k] for k in keys], abs=6e-3)
