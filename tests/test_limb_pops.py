"""No limb snaps where Kimodo's turns smoothly. A segment's one-frame turn in the written file is compared
with the same segment's turn in Kimodo's posed joints that frame; the excess is the pop a viewer sees. The
figures are the sweep's judge's (tests/test_feet_judges.figures on numpy FK and skinning of the written
file, no kimodo_rig): `limb_pops`, each judged segment's worst."""
from __future__ import annotations

import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import sweep_variants as sweep  # noqa: E402


def worst_pop(record: dict, sides: str = "lr") -> tuple:
    """(excess degrees, segment, frame): of a sweep pair's record, the largest one-frame turn of a judged
    limb segment (of `sides`) beyond Kimodo's turn of the same segment that frame."""
    return max(((pop["deg"], pop["segment"], pop["frame"]) for pop in record["limb_pops"] if pop["side"] in sides),
               default=(0.0, "", 0))


@pytest.fixture(scope="module")
def g1_03_on_mannequin(tmp_path_factory):
    """The sweep's pair g1_03 onto the mannequin, run once: its record."""
    folder = tmp_path_factory.mktemp("pops")
    return sweep.run_pair("g1_03_full_body_keyframes", "mannequin", folder)


def test_a_foot_eased_into_its_lock_does_not_snap_the_leg(g1_03_on_mannequin):
    """g1_03 onto the mannequin: four frames before the left foot lands its goal starts easing in (the
    animation's foot plus part of the span's offset), but the hips had come down 4 cm there, taking a foot
    with no goal down with them. The eased goal stayed where the animation had the foot, so the knee bent
    29 deg in one frame and the thigh turned 19.4 deg where Kimodo's turned 4.3 (15.1 more). An eased goal
    now follows the hips by the share it does not pin (lock._pinned_shares): the left leg's worst excess
    over the clip is 3.6 deg. Every bar of the sweep still met."""
    record = g1_03_on_mannequin
    assert record["problems"] == [], record["problems"]
    excess, segment, frame = worst_pop(record, "l")
    assert excess <= 8.0, "{} turns {:.1f} deg more than Kimodo's at frame {}".format(segment, excess, frame)


def test_a_heel_lifting_off_a_flat_foot_does_not_snap_the_shin(g1_03_on_mannequin):
    """The same pair's right foot: flat on the floor through frame 80 (held flat and grounded, 4.8 cm under
    where Kimodo's rising heel has it), on its toe from 81. It rolled onto the pinned toe in that one frame:
    the ankle 4.3 cm up, the knee 171 -> 143 deg, the shin 14.2 deg more than Kimodo's. The foot now turns at
    most ROLL_PACE_DEG a frame more than the animation turns it (lock._paced_roll): the right leg's worst
    excess is 6.6 deg, at another frame."""
    record = g1_03_on_mannequin
    assert record["problems"] == [], record["problems"]
    excess, segment, frame = worst_pop(record, "r")
    assert excess <= 8.0, "{} turns {:.1f} deg more than Kimodo's at frame {}".format(segment, excess, frame)


# The shared clips as the sweep names them: Kimodo's NPZ demos and the two raw clip folders.
SWEEP_CLIPS = sorted(p.name for p in sweep.NPZ.iterdir() if (p / "motion.npz").exists()) + [
    "raw:g1_02_multi_text_ee_constraint", "raw:soma_03_full_body_keyframes"]
TIDY_POP_DEG = 10.0  # the mannequin's worst over these clips is 9.2 (raw g1_02); 14.2 before 9682e3d, 15.1 before 5f13e61


@pytest.fixture(scope="module")
def tidy_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("tidy_pops")


@pytest.mark.parametrize("clip", SWEEP_CLIPS)
def test_the_mannequin_snaps_no_limb_on_any_shared_clip(tidy_folder, clip):
    """Every shared clip onto the mannequin (the tidy rig most users start from): no judged limb segment
    turns more than TIDY_POP_DEG in one frame beyond Kimodo's own turn of it (the sweep's judge),
    and every bar of the sweep met. Rigs of other proportions still snap more (the Quaternius robot 27 deg,
    footless shins 23, Kenney's one-bone blocks 74: the sweep's limb_pop_deg)."""
    record = sweep.run_pair(clip, "mannequin", tidy_folder)
    assert record["problems"] == [], record["problems"]
    excess, segment, frame = worst_pop(record)
    assert excess <= TIDY_POP_DEG, "{} turns {:.1f} deg more than Kimodo's at frame {}".format(segment, excess, frame)
