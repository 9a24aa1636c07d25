"""The report cannot agree with a wrong map (issue 39, item 3). Its limb figures are measured on the limbs
the character's own shape shows (retarget/report_limbs.py: chains from the chest and the pelvis to the
extremities, joints placed where Kimodo's skeleton has them), not on the bones the map names. A broken
mapper that drives the clavicle as the upper arm used to get `arms match 1.000`; now its figures fall
below the bar and a warning says the map is suspect, while correct runs on the shared rigs stay >= 0.99."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import NPZ, RIGS
from kimodo_rig import formats, skeletons
from kimodo_rig.retarget import character as targets
from kimodo_rig.retarget import feet, output
from kimodo_rig.retarget.mapping import map_from_parts, parts_by_name
from kimodo_rig.retarget.report import report_warnings
from kimodo_rig.retarget.report_limbs import ARM_FRACTIONS, ARM_RATIO, LEG_PLACES, find_limbs

IDENTITY = (0.0, 0.0, 0.0, 1.0)
SHARED = {  # rig -> the joints the judges (tests/test_feet_judges.py) measure each segment between
    "mannequin": {"upperarm_l": ("upperarm_l", "lowerarm_l"), "lowerarm_l": ("lowerarm_l", "hand_l"),
                  "thigh_l": ("thigh_l", "calf_l"), "calf_l": ("calf_l", "foot_l")},
    "mixamo": {"upperarm_l": ("mixamorig:LeftArm", "mixamorig:LeftForeArm"),
               "lowerarm_l": ("mixamorig:LeftForeArm", "mixamorig:LeftHand"),
               "thigh_l": ("mixamorig:LeftUpLeg", "mixamorig:LeftLeg"), "calf_l": ("mixamorig:LeftLeg", "mixamorig:LeftFoot")},
    str(RIGS / "quaternius" / "RobotExpressive.glb"): {  # no hand bone: the forearm ends where the palms start
        "upperarm_l": ("UpperArmL", "LowerArmL"), "lowerarm_l": ("LowerArmL", "Palm2L"),
        "thigh_l": ("UpperLegL", "LowerLegL"), "calf_l": ("LowerLegL", "FootL")},  # feet off the root bone
    str(RIGS / "quaternius" / "quaternius_female_dress.glb"): {
        "upperarm_l": ("UpperArm.L", "LowerArm.L"), "lowerarm_l": ("LowerArm.L", "Palm.L"),
        "thigh_l": ("UpperLeg.L", "LowerLeg.L"), "calf_l": ("LowerLeg.L", "Foot.L")},  # feet off the root bone
}


def test_the_places_are_kimodos_own():
    """ARM_FRACTIONS and LEG_PLACES are SOMA's rest skeleton, measured here with numpy."""
    record = skeletons.data("somaskel77")
    at = {n: np.array(p) for n, p in zip(record["joint_names"], record["rest_joint_positions_m"])}
    chain = ["LeftShoulder", "LeftArm", "LeftForeArm", "LeftHand"] + ["LeftHandMiddle" + k for k in "1234"] + ["LeftHandMiddleEnd"]
    along = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff([at[j] for j in chain], axis=0), axis=1))])
    assert ARM_FRACTIONS == pytest.approx(along[1:4] / along[-1], abs=1e-3)
    assert ARM_RATIO == pytest.approx((along[3] - along[2]) / (along[2] - along[1]), abs=1e-3)
    hips = at["Hips"]
    drop = hips[1] - at["LeftToeEnd"][1]
    for place, joint in zip(LEG_PLACES, ("LeftLeg", "LeftShin", "LeftFoot")):
        p = at[joint]
        assert place == pytest.approx([(p[0] - hips[0]) / drop, (p[2] - hips[2]) / drop, (hips[1] - p[1]) / drop], abs=1e-3)


@pytest.mark.parametrize("rig", list(SHARED))
def test_the_shape_shows_the_limbs_the_judges_measure(rig):
    skeleton = targets.load_target(rig).skeleton
    found = find_limbs(skeleton, IDENTITY)
    names = {part: (skeleton.joint_names[a], skeleton.joint_names[b]) for part, (a, b) in found.items()}
    mirrored = {part[:-1] + "r" for part in SHARED[rig]}
    assert {part: names.get(part) for part in SHARED[rig]} == SHARED[rig]
    assert mirrored <= set(names)


def _run(rig: str, clip: str, tmp_path: Path, broken: bool = False):
    target = targets.load_target(rig)
    hmap = targets.map_target(target)
    if broken:  # the mapper's mistake on numbered names: the left arm one bone up (issue 39)
        parts = parts_by_name(hmap)
        parts.update(upperarm_l=parts.pop("clavicle_l"), lowerarm_l=parts["upperarm_l"], hand_l=parts["lowerarm_l"])
        parts = {part: bone for part, bone in parts.items() if not (part.endswith("_l") and part.count("_") == 2)}  # fingers
        # Unchecked: a broken mapper is one whose map the check never saw (the check refuses this one).
        hmap = map_from_parts(target.skeleton, parts, "broken mapper", checked=False)
    motion = formats.read_file(NPZ / clip / "motion.npz")
    retargeted, info = feet.retarget_onto(motion, target.skeleton, bind_mesh=targets.bind_mesh(target), target_map=hmap)
    out = tmp_path / "{}.glb".format("broken" if broken else "good")
    output.write(retargeted, info, target, out)
    return output.report_from_output(out, motion, retargeted, info, target)


@pytest.mark.parametrize("clip", ["soma_01_single_text_prompt", "soma_03_full_body_keyframes"])
def test_a_mis_mapped_arm_is_reported(tmp_path, clip):
    report = _run("mannequin", clip, tmp_path, broken=True)
    assert report.arms_match_by_map > 0.99  # on the map's own bones the broken run looks perfect
    assert report.arms_match < 0.95 and report.limb_cosine_min < 0.5 and report.arms_match_worst_bone == "upperarm_l"
    warnings = report_warnings(report)
    assert "arms match {:.3f} on the limbs the skeleton's shape shows but {:.3f} on the bones the map names: the map " \
           "may name the wrong bones (see kimodo-rig map)".format(report.arms_match, report.arms_match_by_map) in warnings
    assert report.legs_match > 0.99


@pytest.mark.parametrize("rig", list(SHARED))
@pytest.mark.parametrize("clip", ["soma_03_full_body_keyframes"])
def test_correct_runs_still_match(tmp_path, rig, clip):
    report = _run(rig, clip, tmp_path)
    assert min(report.arms_match, report.legs_match) >= 0.99, report
    assert abs(report.arms_match - report.arms_match_by_map) <= 0.02 and abs(report.legs_match - report.legs_match_by_map) <= 0.02
    assert not [w for w in report_warnings(report) if "map" in w]
