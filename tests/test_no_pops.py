"""No pops: the retarget never makes a character's hips change speed in one frame much harder than Kimodo's
own hips do in the same clip (issue 8: "no pops").

A pop is measured as the hips' largest second difference over the clip (cm a frame per frame), per 1.7 m of
character for ours (numpy FK of the written file by pygltflib: tests/gltf_judge.py) and per 1.7 m of Kimodo's
skeleton for its own (the NPZ's posed_joints), so neither side goes through kimodo_rig. Where the lock still
pops, NOT_MET holds what it reaches today, so it cannot get worse unseen.
"""
from __future__ import annotations

import numpy as np
import pytest

import rig_variants as rv
from conftest import NPZ, run_cli
from feet_judge import Skinned, _height
from gltf_judge import Glb

HIPS = {"mannequin": "pelvis", "robot": "Hips", "dress": "Hips", "kenney": "torso", "blocks": "torso"}
CLIPS = ("soma_01_single_text_prompt", "soma_03_full_body_keyframes", "soma_06_root_waypoints", "g1_01_single_text_prompt",
         "g1_02_multi_text_ee_constraint")
# The hardest one-frame change of the hips' speed may be this many times Kimodo's own hardest, plus a
# centimetre (a clip whose hips barely move: soma_03's crouch, g1_02's kneel). Before the floor pass eased
# its steps the robot reached 28x on soma_03 (32 cm against Kimodo's 1.1: one frame 15 cm up).
TIMES_KIMODO = 4.0
PLUS_CM = 1.0
# One-bone legs (Kenney's) were held as not met until the lock's hips path was smoothed: where one foot
# landed or lifted while the other stayed down the hips' move changed in a frame (soma_03 24, soma_06 22,
# g1_02 21, and soma_01's leap 19.7 from the floor pass in flight; soma_06's walk is here for that).
# Kenney's block proportions (`kenney_blocks`, feet as long as the legs) were held here too (soma_03 38.5,
# g1_01 25, soma_06 17, g1_02 16: the hips' circle of moves shifted where a foot rocked onto its other end)
# until the rigid legs set the hips' roll (one_bone.hike_hips): now 1.9-5.1, within the bar.
NOT_MET: dict = {}


def _hardest_cm(hips: np.ndarray, height: float) -> float:
    """The hips' largest second difference over the clip, cm per 1.7 m of `height` (metres)."""
    return float(np.linalg.norm(np.diff(hips, 2, axis=0), axis=1).max() * 100.0 * 1.7 / height)


def _kimodo_hardest_cm(clip: str) -> float:
    joints = np.load(NPZ / clip / "motion.npz", allow_pickle=False)["posed_joints"].astype(np.float64)
    return _hardest_cm(joints[:, 0], float(np.ptp(joints[0, :, 1])))


@pytest.fixture(scope="module")
def kenney(tmp_path_factory):
    return rv.variant(rv.MANNEQUIN, tmp_path_factory.mktemp("kenney"), "kenney.glb", rv.kenney_like)


@pytest.fixture(scope="module")
def blocks(tmp_path_factory):
    """Kenney's block proportions: feet as long as the legs, hips wider apart than the legs are long."""
    return rv.kenney_blocks(tmp_path_factory.mktemp("blocks") / "blocks.glb")


@pytest.mark.parametrize("rig", sorted(HIPS))
@pytest.mark.parametrize("clip", CLIPS)
def test_the_hips_change_speed_no_harder_than_kimodos_do(tmp_path, kenney, blocks, rig, clip):
    target = {"mannequin": rv.MANNEQUIN, "robot": rv.ROBOT, "dress": rv.FEMALE_DRESS, "kenney": kenney, "blocks": blocks}[rig]
    out = tmp_path / "out.glb"
    result = run_cli("retarget", NPZ / clip / "motion.npz", "--target", target, "-o", out)
    assert result.returncode == 0, result.stderr
    glb = Glb(out)
    names = {node.name: i for i, node in enumerate(glb.gltf.nodes)}
    hips = glb.animated_world_matrices()[:, names[HIPS[rig]], :3, 3]
    ours, kimodos = _hardest_cm(hips, _height(Skinned(target))), _kimodo_hardest_cm(clip)
    assert kimodos > 0.5  # Kimodo's hips do move: the bar is not made of nothing
    bar = NOT_MET.get((rig, clip), TIMES_KIMODO * kimodos + PLUS_CM)
    assert ours <= bar, (ours, kimodos, bar)
