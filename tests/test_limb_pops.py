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
    over the clip is 3.3 deg (3.6 before the hips' path, lock._hips_offsets). Every bar of the sweep still met."""
    record = g1_03_on_mannequin
    assert record["problems"] == [], record["problems"]
    excess, segment, frame = worst_pop(record, "l")
    assert excess <= 8.0, "{} turns {:.1f} deg more than Kimodo's at frame {}".format(segment, excess, frame)


def test_a_heel_lifting_off_a_flat_foot_does_not_snap_the_shin(g1_03_on_mannequin):
    """The same pair's right foot: flat on the floor through frame 80 (held flat and grounded, 4.8 cm under
    where Kimodo's rising heel has it), on its toe from 81. It rolled onto the pinned toe in that one frame:
    the ankle 4.3 cm up, the knee 171 -> 143 deg, the shin 14.2 deg more than Kimodo's. The foot now turns at
    most ROLL_PACE_DEG a frame more than the animation turns it (lock._paced_roll): the right leg's worst
    excess is 5.2 deg, at another frame (6.6 before the hips' path)."""
    record = g1_03_on_mannequin
    assert record["problems"] == [], record["problems"]
    excess, segment, frame = worst_pop(record, "r")
    assert excess <= 8.0, "{} turns {:.1f} deg more than Kimodo's at frame {}".format(segment, excess, frame)


@pytest.fixture(scope="module")
def pairs_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("pairs")


# (clip, variant, side, bar, why): pairs whose worst pop a change of the lock or the hands cut, each with the worst
# before it (with the code before that change, the same test fails) and after.
CUT_POPS = [
    ("g1_04_ee_constraint", "dress", "l", 8.0,
     "a toe-less foot turned on the spot while its heel is still down: lock._standing_on_front let the roll "
     "through only where the front rose by float noise, so the foot did not roll, then rolled wholly in one "
     "frame, its ankle's goal 4 cm back and 9 forward (11.8 deg; FRONT_LIFT: 6.3)"),
    ("g1_04_ee_constraint", "footless_shins", "l", 10.0,
     "a nearly straight leg (Kimodo's, bent 3 deg sideways) made to bend: the knee bent 24 deg sideways in the "
     "pose's own plane through a toe contact, then forward in the frame Kimodo bent it (18.2 deg; "
     "soles.KNEE_PLANE_LATERAL 0.25: 8.5)"),
    ("soma_06_root_waypoints", "robot", "l", 20.0,
     "a long foot (0.8 m on the 4.5 m robot) Kimodo still has toe-down the frame before it lands flat: its "
     "goal eased down, the foot raised back off the floor instead of pitched up onto it, and the ankle fell "
     "22 cm in the landing frame (27.2 deg; lock._pitch_foot at the goal: 16.9, at another frame)"),
    ("soma_02_multi_text_prompt", "robot", "r", 8.0,
     "a contact in the clip's last frame: the hips' shared lift was left unaveraged there, 6 cm down in that "
     "frame once the foot no longer held the ankle up (19.0 deg; centred_average(keep_ends=False): 10.3); "
     "then a swinging foot dragged along the floor by hips the path brought down, the knee bent 18 deg where "
     "Kimodo's is straight, then snapped (10.04 deg; the path's legs raised off the floor as the lock "
     "raises them: 5.3)"),
    ("soma_01_single_text_prompt", "robot", "l", 12.0,
     "a long arm kept above the floor as the hand passes under the shoulder (the swing's axis a quarter turn "
     "on in a frame): each eased frame swung about its own axis, the arm 37 deg in a frame where Kimodo's "
     "turned 16 (21.1 deg; hands._swing_arm about the eased need's own axis: 8.3)"),
    ("raw:g1_02_multi_text_ee_constraint", "dress", "l", 8.0,
     "a foot tucked under at a kneel's end, down from its toe onto its heel: held flat in the heel's first "
     "frame, the ankle fell 26 cm in it where Kimodo's comes down over four (13.1 deg; lock.SETTLE_DEG: 6.6)"),
    ("raw:g1_02_multi_text_ee_constraint", "robot", "r", 10.0,
     "a foot 0.55 of its leg long (a human's is 0.17) rolling onto its toe at a human's pace in degrees: its "
     "ankle rose three times as far for its leg, and the knee snapped as the contact ended (12.1 deg; "
     "lock.HUMAN_TOE_ARM, the pace scaled by the foot's length: 8.7)"),
    ("soma_06_root_waypoints", "robot", "l", 10.0,
     "the long foot again, a frame later: Kimodo's slaps 10 deg flat in one frame, and landing flat at once "
     "took the robot's ankle 14 cm under the animation's, the leg pulled straight and bent again the next "
     "frame (13.3 deg; lock._landing_on_front, down onto the heel over frames: 7.9)"),
    ("g1_01_single_text_prompt", "kenney", "l", 8.0,
     "a rigid leg eased into its swing about another frame's axis, where that would sink the sole: it fell "
     "back to its own axis, a quarter turn off, and swung 20 deg in a frame (20.1 deg; one_bone's eased turn "
     "nearer its neighbours, `_nearest_clearing`: 13.9); then the swing itself, needed at once as a toe "
     "contact ended, 2-3 cm under the floor (13.9; the hip hiked over the swinging leg instead, "
     "one_bone._stand_on_the_floor: the leg 1.3, the arm's 6.7 is this side's worst)"),
    ("raw:soma_03_full_body_keyframes", "kenney_blocks", "r", 5.0,
     "the same on block proportions, a leg hanging nearly straight whose lean's direction wanders: 45 deg in "
     "a frame between two eased frames (43.6 deg; 30.9; hiked: 0.9)"),
    ("soma_06_root_waypoints", "kenney_blocks", "l", 5.0,
     "a block foot as long as its leg, 0.9 mm under the floor the frame before it lands: it clears only past "
     "tens of degrees of swing, so the leg swung 40 deg up and back onto its pin (38.6 deg; hiked: 0.7)"),
    ("raw:g1_02_multi_text_ee_constraint", "kenney_blocks", "r", 5.0,
     "the hike's band left the sole 0.2 mm under the floor, and that swung the leg 38 deg (35.4 deg; a "
     "swinging rigid sole within one_bone.ONE_BONE_SETTLED of the floor is on it: 1.0)"),
    ("soma_06_root_waypoints", "footless_shins", "l", 6.0,
     "a sole the shin carries, landing: the hips' reach need of the frames before, eased on past its end, "
     "kept them 3 cm down where the leg stands nearly straight; the knee bent, tipping the sole, whose "
     "raising bent it further: 5 -> 35 deg in one frame (19.9 deg; lock._hips_offsets, the hips' path "
     "chosen for the legs: 3.7)"),
    ("g1_02_multi_text_ee_constraint", "footless_shins", "l", 11.0,
     "the same soles in a kneel (15.8 deg; 8.6)"),
    ("g1_04_ee_constraint", "robot", "l", 8.0,
     "the exact-reach dip: a toe held low as Kimodo's heel rises fast, the hips down for the leg to reach "
     "it and eased down over the frames before, bending the knee 22-37 deg where Kimodo's is at 8-12 "
     "(11.5 deg; 4.9)"),
    ("soma_02_multi_text_prompt", "feet_mesh_behind", "r", 9.5,
     "the same dip on feet meshed behind the ankle (11.9 deg; 7.5)"),
]


@pytest.mark.parametrize("clip,variant,side,bar,why", CUT_POPS, ids=["{}-{}".format(c[0].split(":")[-1][:7], c[1]) for c in CUT_POPS])
def test_a_cut_pop_stays_cut(pairs_folder, clip, variant, side, bar, why):
    """The pair's worst pop on `side` (the judge's, every bar of the sweep met) is within `bar`: see `why`."""
    record = sweep.run_pair(clip, variant, pairs_folder)
    assert record["problems"] == [], record["problems"]
    excess, segment, frame = worst_pop(record, side)
    assert excess <= bar, "{} turns {:.1f} deg more than Kimodo's at frame {} ({})".format(segment, excess, frame, why)


# The shared clips as the sweep names them: Kimodo's NPZ demos and the two raw clip folders.
SWEEP_CLIPS = sorted(p.name for p in sweep.NPZ.iterdir() if (p / "motion.npz").exists()) + [
    "raw:g1_02_multi_text_ee_constraint", "raw:soma_03_full_body_keyframes"]
# The mannequin's worst over these clips is 5.2 (g1_03); 7.4 (g1_01) before the hips' path
# (lock._hips_offsets), 9.2 (raw g1_02) before the foot came down from its toe over frames
# (lock.SETTLE_DEG), 14.2 before 9682e3d, 15.1 before 5f13e61.
TIDY_POP_DEG = 6.0


@pytest.fixture(scope="module")
def tidy_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("tidy_pops")


@pytest.mark.parametrize("clip", SWEEP_CLIPS)
def test_the_mannequin_snaps_no_limb_on_any_shared_clip(tidy_folder, clip):
    """Every shared clip onto the mannequin (the tidy rig most users start from): no judged limb segment
    turns more than TIDY_POP_DEG in one frame beyond Kimodo's own turn of it (the sweep's judge),
    and every bar of the sweep met (the sweep holds every variant to POP_DEG, 10)."""
    record = sweep.run_pair(clip, "mannequin", tidy_folder)
    assert record["problems"] == [], record["problems"]
    excess, segment, frame = worst_pop(record)
    assert excess <= TIDY_POP_DEG, "{} turns {:.1f} deg more than Kimodo's at frame {}".format(segment, excess, frame)
