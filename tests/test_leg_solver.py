"""The leg solver of issue 40 (KIMODO_LEG_SOLVER=plan: retarget/contacts.py, hips.py, legs.py, ease.py),
each stage on its own and the whole judged from the written file with numpy forward kinematics."""
from __future__ import annotations

import dataclasses
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gltf_judge import Glb  # noqa: E402
from kimodo_rig.model import Skeleton  # noqa: E402
from kimodo_rig.ops.fk import pose_globals  # noqa: E402
from kimodo_rig import rotations  # noqa: E402
from kimodo_rig.retarget import contacts, ease, hips, legs  # noqa: E402

NPZ = ROOT / "tests" / "data" / "npz"


def test_a_pin_holds_through_the_step_out_of_its_last_contact_frame():
    flags = [(False, False), (True, False), (True, True), (False, True), (False, False), (False, False)]
    assert contacts.held(flags, 30.0) == [(False, False), (True, False), (True, True), (True, True), (False, True), (False, False)]


def test_the_step_out_is_held_as_long_in_seconds_at_any_frame_rate():
    """The same contact (heel down from 0.1 to 0.4 s) at 30, 60 and 120 fps, as resampled clips have it
    (contacts of the nearest frame): its pin lets go at the same instant, 1/30 s after its last contact
    (held a frame, 60 fps let go 1/60 s earlier: the dress on g1_02 lifted its toe 21 cm at 6.47 s)."""
    last_held = {}
    for fps in (30, 60, 120):
        times = [frame / fps for frame in range(int(fps))]
        flags = [(0.1 - 1e-9 <= t <= 0.4 + 1e-9, False) for t in times]
        pinned = contacts.held(flags, float(fps))
        last_held[fps] = max(t for t, (heel, _) in zip(times, pinned) if heel)
    assert last_held[60] == pytest.approx(last_held[30]) and last_held[120] == pytest.approx(last_held[30])
    assert last_held[30] == pytest.approx(0.4 + 1.0 / 30)


def test_a_contact_lifted_for_less_than_the_gap_in_seconds_stays_pinned():
    for fps in (30, 120):
        gap = int(0.6 * contacts.CONTACT_GAP_S * fps)  # frames lifted: shorter than the gap at any rate
        flags = [(True, False)] * 5 + [(False, False)] * max(1, gap) + [(True, False)] * 5 + [(False, False)] * int(2 * contacts.CONTACT_GAP_S * fps)
        pinned = contacts.held(flags, fps)
        assert all(heel for heel, _ in pinned[:10 + max(1, gap) + 1])
        assert not pinned[-1][0]  # a long lift is a lift


def _leg(one_bone: bool = False):
    """A hip, knee, ankle and toe in a line down +Y then forward (+Z), or a rigid hip-to-ankle leg."""
    if one_bone:
        skeleton = Skeleton("leg", ("hip", "ankle", "toe"), (-1, 0, 1),
                            ((0.0, 1.0, 0.0), (0.0, -0.9, 0.05), (0.0, -0.05, 0.15)))
        hip, knee, ankle, toe = 0, 1, 1, 2
    else:
        skeleton = Skeleton("leg", ("hip", "knee", "ankle", "toe"), (-1, 0, 1, 2),
                            ((0.0, 1.0, 0.0), (0.0, -0.45, 0.05), (0.0, -0.45, -0.05), (0.0, -0.05, 0.15)))
        hip, knee, ankle, toe = 0, 1, 2, 3
    rotations, positions = pose_globals(skeleton, [(0.0, 0.0, 0.0, 1.0)] * len(skeleton.parents), (0.0, 1.0, 0.0))
    foot = contacts.Foot("l", hip, knee, ankle, toe, ((toe, 1.0, (0.0, 0.0, 0.0)),),
                         (((toe, 1.0, (0.0, 0.0, 0.0)),), ((ankle, 1.0, (0.0, 0.0, 0.0)),)),
                         rotations[ankle], (1.0, 0.0, 0.0), (0.0, 0.0, 1.0),
                         math.dist(positions[hip], positions[knee]), math.dist(positions[knee], positions[ankle]))
    return skeleton, foot, list(rotations), list(positions)


def test_two_bone_ik_reaches_its_goal_with_the_knee_in_the_legs_plane_and_the_foot_turned_as_asked():
    skeleton, foot, rotations, positions = _leg()
    normal = np.cross(np.subtract(positions[1], positions[0]), np.subtract(positions[2], positions[1]))
    goal = (0.0, 0.35, 0.3)
    turn = (0.0, math.sin(0.3), 0.0, math.cos(0.3))
    legs.solve(skeleton, foot, rotations, positions, (goal, turn, None), (0.0, 0.0, 1.0))
    assert math.dist(positions[2], goal) < 1e-9
    assert abs(np.dot(np.subtract(positions[1], positions[0]), normal)) < 1e-9  # the knee stayed in the leg's plane
    assert max(abs(a - b) for a, b in zip(rotations[2], turn)) < 1e-9
    assert abs(math.dist(positions[0], positions[1]) - foot.thigh) < 1e-9


def test_a_one_bone_leg_is_the_same_constraint_with_a_lower_bone_of_length_zero():
    skeleton, foot, rotations, positions = _leg(one_bone=True)
    near, far = legs.reach_limits(foot)
    assert abs(near - far) < 1e-12 and abs(far - foot.thigh) < 1e-12
    goal = (0.0, 1.0 - foot.thigh * math.cos(0.4), foot.thigh * math.sin(0.4))
    legs.solve(skeleton, foot, rotations, positions, (goal, rotations[1], None), (0.0, 0.0, 1.0))
    assert math.dist(positions[1], goal) < 1e-9


def test_a_free_foot_under_the_floor_is_lifted_onto_it():
    skeleton, foot, rotations, positions = _leg()
    legs.solve(skeleton, foot, rotations, positions, ((0.0, 0.0, 0.2), rotations[2], None), (0.0, 0.0, 1.0), floor=0.0)
    assert min(positions[3][1], positions[2][1]) > -1e-9


def test_a_sole_a_hair_under_the_floor_moves_the_knee_no_more_than_a_hair():
    """The knee's plane leans on `towards` once per solve: a free foot lifted by 1e-9 m is the leg of a
    foot not lifted, not one reached twice (a second reach leaned the plane again: the knee of the
    mannequin wrapped in a scaled armature moved 1.4 mm from the plain one's)."""
    knees = []
    for nudge in (-1e-9, 1e-9):
        skeleton, foot, rotations, positions = _leg()
        goal = ((0.02, 0.3, 0.25), rotations[2], None)
        probe = (list(rotations), list(positions))
        legs.solve(skeleton, foot, probe[0], probe[1], goal, (1.0, 0.0, 0.0))
        floor = probe[1][3][1] + nudge  # the sole (the toe point) this goal stands on, nudged
        legs.solve(skeleton, foot, rotations, positions, goal, (1.0, 0.0, 0.0), floor=floor)
        assert positions[3][1] >= floor - 1e-9
        knees.append(positions[1])
    assert math.dist(*knees) < 1e-6, knees


def test_the_hips_bound_is_spread_smoothly_and_never_less_than_what_it_must_take():
    excess = [0.0] * 20 + [0.05] + [0.0] * 20
    spread = hips._spread(excess, 4)
    assert all(s >= e - 1e-12 for s, e in zip(spread, excess))
    assert max(abs(b - a) for a, b in zip(spread, spread[1:])) < 0.05 / 4


def _two_legs_turned(angle_deg: float):
    """A pelvis and two legs (thigh, knee, ankle) 0.4 m apart at bind, posed on 10 frames with the pelvis
    turned `angle_deg` about the vertical from where both feet are pinned, the feet flat (heel and toe)."""
    skeleton = Skeleton("legs", ("pelvis", "thigh_l", "knee_l", "ankle_l", "thigh_r", "knee_r", "ankle_r"), (-1, 0, 1, 2, 0, 4, 5),
                        ((0.0, 1.0, 0.0), (0.2, 0.0, 0.0), (0.0, -0.45, 0.05), (0.0, -0.45, -0.05),
                         (-0.2, 0.0, 0.0), (0.0, -0.45, 0.05), (0.0, -0.45, -0.05)))
    identity = [(0.0, 0.0, 0.0, 1.0)] * 7
    rotations, positions = pose_globals(skeleton, identity, (0.0, 1.0, 0.0))
    half = math.radians(angle_deg) / 2.0
    turned = pose_globals(skeleton, [(0.0, math.sin(half), 0.0, math.cos(half))] + identity[1:], (0.0, 1.0, 0.0))
    feet, spans = {}, {}
    for side, (hip, knee, ankle) in (("l", (1, 2, 3)), ("r", (4, 5, 6))):
        feet[side] = contacts.Foot(side, hip, knee, ankle, None, ((ankle, 1.0, (0.0, 0.0, 0.0)),), (((ankle, 1.0, (0.0, 0.0, 0.0)),),),
                                   rotations[ankle], (1.0, 0.0, 0.0), (0.0, 0.0, 1.0), 0.45, 0.45)
        spans[side] = [contacts.Span(0, 9, (True,) * 10, (True,) * 10, positions[ankle], positions[ankle], 0.0, rotations[ankle], None)]
    poses = [(list(turned[0]), list(turned[1])) for _ in range(10)]
    return skeleton, feet, spans, {side: [(True, True)] * 10 for side in feet}, poses, positions


def test_with_both_feet_flat_the_hips_take_the_whole_turn_that_keeps_both_on_their_pins():
    """Hips wider than Kimodo's for their legs, turned as Kimodo turns its own with both feet flat, swing
    the feet round with them (RobotExpressive on soma_04: 40 cm each way): the carry turns them back
    wholly, so both feet stand on their pins with the legs as the animation has them. Left a quarter of
    that turn, the legs took it (the robot's thigh 15 deg off Kimodo's, a worst cosine 0.9899 against 0.99)."""
    skeleton, feet, spans, held, poses, bind = _two_legs_turned(20.0)
    hips.carried(skeleton, feet, spans, held, poses, 30.0)
    for side, foot in feet.items():
        for _, positions in poses:
            ankle, pin = positions[foot.ankle], bind[foot.ankle]
            assert math.hypot(ankle[0] - pin[0], ankle[2] - pin[2]) < 1e-6, (side, ankle, pin)


def _folded_leg(hip, knee, ankle, goal, knee_lowest=()):
    """One frame of a two-bone leg posed hip, knee, ankle (world, no foot bone below), its toe held alone
    on a span whose goal puts the ankle at `goal`: the leg, its span, goals and poses."""
    skeleton = Skeleton("leg", ("hip", "knee", "ankle"), (-1, 0, 1),
                        (hip, tuple(np.subtract(knee, hip)), tuple(np.subtract(ankle, knee))))
    rotations, positions = pose_globals(skeleton, [(0.0, 0.0, 0.0, 1.0)] * 3, hip)
    foot = contacts.Foot("l", 0, 1, 2, None, ((2, 1.0, (0.0, 0.0, 0.0)),), (((2, 1.0, (0.0, 0.0, 0.0)),),),
                         rotations[2], (1.0, 0.0, 0.0), (0.0, 0.0, 1.0), math.dist(hip, knee), math.dist(knee, ankle))
    span = contacts.Span(0, 0, (False,), (True,), goal, goal, 0.0, rotations[2], None)
    if knee_lowest:
        span = dataclasses.replace(span, knee_lowest=tuple(knee_lowest))
    return foot, span, [(goal, rotations[2], None)], [(list(rotations), list(positions))]


def test_a_kneels_fold_holds_the_hips_no_higher_over_the_pin_than_the_retargeted_hip_is_over_its_ankle():
    """A shin 1.8 times the thigh kneels with its foot up behind and over the hip (the dress character's,
    1.56: 64 cm over the floor with Kimodo's limb directions). The hips may come down to where the pin
    wants them, the ankle over the hip as the retarget has it; held where the leg folds no further than
    the retarget's (the fold's bound over the pin), they stood 48 cm over that, the thigh 50 deg off."""
    foot, span, goals, poses = _folded_leg((0.0, 0.5, 0.0), (0.0, 0.0, 0.1), (0.0, 0.7, -0.8), (0.0, 0.3, -0.5))
    bounds = hips.side_bounds(foot, [span], goals, poses)
    assert bounds.wanted[0] == pytest.approx(-0.4)
    assert bounds.lower[0] <= bounds.wanted[0] + 1e-9, bounds.lower[0]


def test_a_kneels_knee_goes_no_deeper_than_the_span_lets_it():
    """Where the pin wants the hips down, the knee the leg then has (reached in its own plane) stays over
    the span's lowest knee (Kimodo's kneeling knee, as deep per the knee's height at rest): rolled down
    onto its kneeling leg the mannequin's knee went 2 cm deeper than Kimodo's."""
    foot, span, goals, poses = _folded_leg((0.0, 0.9, 0.0), (0.0, 0.3, 0.3), (0.0, 0.1, -0.2), (0.0, -0.2, -0.2), (0.1,))
    bounds = hips.side_bounds(foot, [span], goals, poses)
    assert bounds.wanted[0] == pytest.approx(-0.3)  # where the knee would stand at 0.0
    assert -0.3 < bounds.lower[0] < 0.0
    hip, knee, ankle = ((p[0], p[1] + bounds.lower[0], p[2]) for p in poses[0][1])  # the leg carried with the hips
    assert rotations.two_bone_points(hip, knee, ankle, goals[0][0], (0.0, 0.0, 1.0))[0][1] == pytest.approx(0.1, abs=1e-6)


def test_two_pinned_legs_whose_pins_want_the_hips_apart_roll_the_pelvis_by_that():
    """A kneel: the toe behind wants the hips 10 cm lower than the foot in front does. The pelvis rolls
    the left thigh root 10 cm down against the right, so each leg keeps its own reach (met halfway, the
    dress character's kneeling thigh turned 50 deg off Kimodo's)."""
    skeleton, feet, spans, _, poses, bind = _two_legs_turned(0.0)
    goals = {side: [((bind[foot.ankle][0], bind[foot.ankle][1] - (0.1 if side == "l" else 0.0), bind[foot.ankle][2]),
                     poses[0][0][foot.ankle], None)] * 10 for side, foot in feet.items()}
    rises = hips.rolls(skeleton, feet, spans, goals, poses, 30.0)
    assert rises[5] == pytest.approx(-0.1, abs=1e-6)
    left, right = (poses[5][1][feet[side].hip][1] for side in "lr")
    assert left - right == pytest.approx(-0.1, abs=1e-6)


def test_the_hips_window_is_as_wide_in_seconds_at_any_frame_rate():
    """A bound rising and falling (a sine of 0.4 s) spread at 30, 60 and 120 fps reads the same at common
    instants, within 5 % of its rise (what sampling a peak leaves): rounded to whole frames, HIPS_WINDOW_S
    was 0.133 s wide at 30 fps and 0.117 s at 60, and they read 18 % apart."""
    def spread(fps: int):
        times = [frame / fps for frame in range(2 * fps + 1)]
        values = hips._spread([max(0.0, math.sin(2.0 * math.pi * t / 0.4)) for t in times], hips._half_width(fps))
        return values[::fps // 30]
    base = spread(30)
    for fps in (60, 120):
        assert max(abs(a - b) for a, b in zip(base, spread(fps))) < 0.05, fps


def test_the_ease_is_in_seconds_the_same_goal_at_the_same_instant_at_any_frame_rate():
    def goals(fps: int):
        frames = int(fps) + 1  # one second
        first, last = int(0.5 * fps), int(0.6 * fps)
        span = contacts.Span(first, last, (True,) * (last - first + 1), (True,) * (last - first + 1), (0.0, 0.0, 0.0),
                             (0.0, 0.0, 0.1), 0.0, (0.0, 0.0, 0.0, 1.0), None)
        moving = lambda frame: ((0.0, 0.1, frame / fps), (0.0, 0.0, 0.0, 1.0), None)  # noqa: E731
        return ease.eased_goals([span], frames, fps, lambda s, frame: ((0.0, 0.0, 0.5), (0.0, 0.0, 0.0, 1.0), None), moving)

    at30, at120 = goals(30), goals(120)
    for frame in (12, 13, 14, 19, 20, 21):  # 0.4 to 0.7 s: instants both rates have a frame at
        a, b = at30[frame], at120[4 * frame]
        assert math.dist(a[0], b[0]) < 1e-9, frame
    assert at30[7][0] == (0.0, 0.1, 7 / 30)  # beyond EASE_S: the animation's own
    assert contacts.EASE_S < 0.5 - 7 / 30


def test_the_plan_keeps_kimodos_contact_joints_still_on_their_contact_frames(tmp_path):
    """soma_02 onto the mannequin, read back with numpy: Kimodo's skate (the ankle on heel-contact frames, the
    ball on toe-contact frames, each frame to the next) at most 0.01 cm a frame (the layers: 0.04)."""
    clip = NPZ / "soma_02_multi_text_prompt" / "motion.npz"
    out = tmp_path / "plan.glb"
    env = dict(os.environ, KIMODO_LEG_SOLVER="plan")
    subprocess.run([sys.executable, "-m", "kimodo_rig", "retarget", str(clip), "--target", "mannequin", "-o", str(out)],
                   check=True, capture_output=True, cwd=str(ROOT), env=env)
    glb = Glb(out)
    positions = glb.joint_world_positions()
    names = glb.joint_names
    flags = np.load(clip)["foot_contacts"] >= 0.5
    steps = []
    for channel, name in enumerate(("foot_l", "ball_l", "foot_r", "ball_r")):
        track = positions[:, names.index(name)]
        moves = np.linalg.norm(np.diff(track, axis=0), axis=1)
        steps += list(moves[flags[:-1, channel]])
    assert 100.0 * float(np.mean(steps)) <= 0.01


def test_a_clip_that_plants_no_foot_moves_as_without_the_lock(tmp_path):
    """SMPL-X standing straight-legged, gliding 1 m forward (no contact anywhere): nothing pins the body,
    so the plan keeps the free retarget's body height (its soles as high over the floor as Kimodo's) and
    its legs (a leg a free foot does not push under the floor is not reached again). Before: the body
    5.6 cm lower, both knees bent to lift the feet, the knees 1.8 cm off the free retarget's."""
    from gltf_judge import skeleton_record, write_raw_clip

    names = skeleton_record("smplx22")["joint_names"]
    frames = 40
    quats = np.zeros((frames, len(names), 4))
    quats[..., 3] = 1.0
    roots = np.tile([0.0, 0.95, 0.0], (frames, 1))
    roots[:, 2] = np.linspace(0.0, 1.0, frames)
    clip = write_raw_clip(tmp_path / "glide", quats, roots)
    worlds = []
    for name, extra, env in (("plan", [], dict(os.environ, KIMODO_LEG_SOLVER="plan")), ("free", ["--no-foot-lock"], dict(os.environ))):
        out = tmp_path / (name + ".glb")
        subprocess.run([sys.executable, "-m", "kimodo_rig", "retarget", str(clip), "--target", "mannequin", "-o", str(out)] + extra,
                       check=True, capture_output=True, cwd=str(ROOT), env=env)
        worlds.append(Glb(out).joint_world_positions())
    assert np.abs(worlds[0] - worlds[1]).max() < 1e-3


def test_a_toe_held_alone_rolls_the_heel_up_until_the_ankle_is_within_the_reach_asked():
    _, foot, _, _ = _leg()
    span = contacts.Span(0, 2, (False,) * 3, (True,) * 3, (0.0, 0.1, 0.0), (0.0, 0.02, 0.15), 0.0, foot.bind_rotation, None)
    hip = (0.0, 0.95, -0.35)  # the body moved on behind the toe: the flat foot's ankle is 0.92 m from the hip
    goal = (span.ankle, span.rotation, None)
    ankle, rotation, _ = legs.rolled_within(foot, span, goal, hip, 0.9)
    assert abs(math.dist(hip, ankle) - 0.9) < 1e-9
    assert abs(math.dist(ankle, span.toe_point) - math.dist(span.ankle, span.toe_point)) < 1e-12  # turned about the toe
    assert ankle[1] > span.ankle[1] + 0.01  # the heel up
    assert legs.rolled_within(foot, span, goal, hip, 1.0) == goal  # within reach: as it was


def test_a_straight_leg_swung_forward_with_its_knee_behind_its_line_bends_forward():
    """soma_03 onto RobotExpressive: a swinging leg straight in Kimodo's pose (2 deg, its knee 1 cm behind
    its line) and swung forward, lifted off the floor by the hips brought down, bent its knee 38 deg
    backward for one frame (its thigh 44 deg beyond Kimodo's turn): the lean on the hips' forward, mostly
    along the leg's line, did not outweigh the knee's own offset."""
    swing = math.radians(25.0)
    line, ahead = (0.0, -math.cos(swing), math.sin(swing)), (0.0, math.sin(swing), math.cos(swing))
    knee = tuple(0.45 * a - 0.012 * b for a, b in zip(line, ahead))
    ankle = tuple(0.9 * a for a in line)
    skeleton = Skeleton("leg", ("hip", "knee", "ankle", "toe"), (-1, 0, 1, 2),
                        ((0.0, 1.0, 0.0), knee, tuple(a - k for a, k in zip(ankle, knee)), (0.0, -0.05, 0.15)))
    rotations, positions = pose_globals(skeleton, [(0.0, 0.0, 0.0, 1.0)] * 4, (0.0, 1.0, 0.0))
    rotations, positions = list(rotations), list(positions)
    foot = contacts.Foot("l", 0, 1, 2, 3, ((3, 1.0, (0.0, 0.0, 0.0)),), (((3, 1.0, (0.0, 0.0, 0.0)),),),
                         rotations[2], (1.0, 0.0, 0.0), (0.0, 0.0, 1.0), math.dist(positions[0], positions[1]),
                         math.dist(positions[1], positions[2]))
    lifted = (positions[2][0], positions[2][1] + 0.1, positions[2][2])
    legs.solve(skeleton, foot, rotations, positions, (lifted, rotations[2], None), (0.0, 0.0, 1.0))
    assert math.dist(positions[2], lifted) < 1e-9
    bent = np.subtract(positions[1], positions[0])
    across = bent - np.dot(bent, np.subtract(lifted, positions[0])) * np.subtract(lifted, positions[0]) / np.sum(np.square(np.subtract(lifted, positions[0])))
    assert np.dot(across, ahead) > 0.05  # the knee well in front of the leg's line


def test_a_foot_held_flat_that_the_animation_lifts_heel_up_rolls_on_its_toe_as_far():
    """Kimodo's heel contact holds while its heel rises under the contact threshold; scaled onto a long foot
    (RobotExpressive's, 0.55 of its leg) the heel rises several cm, and held flat the hips dived for it (g1_03:
    the free leg bent 50 deg where Kimodo's is at 6, its thigh 10.1 deg beyond Kimodo's turn). The foot
    held flat rolls about its pinned toe point as far as the animation pitches it heel-up, the toe bone
    staying put; pitched toe-up it stands flat."""
    skeleton, foot, rotations, positions = _leg()
    span = contacts.Span(0, 2, (True,) * 3, (True,) * 3, positions[foot.ankle], positions[foot.toe], 0.0,
                         rotations[foot.ankle], (0.0, 0.0, 0.0, 1.0))
    heel_up = math.radians(8.0)
    for angle, lifted in ((heel_up, True), (-heel_up, False)):
        animated = legs.quat_multiply(legs.quat_from_axis_angle(foot.lateral, angle), span.rotation)
        ankle, rotation, toe_local = legs.planned(foot, span, 1, animated, positions[foot.ankle], None)
        if not lifted:
            assert (ankle, rotation) == (span.ankle, span.rotation)
            continue
        assert abs(math.degrees(legs.pitch(foot, rotation, span.rotation, 0.0)) - 8.0) < 1e-6
        assert abs(math.dist(ankle, span.toe_point) - math.dist(span.ankle, span.toe_point)) < 1e-12  # about the toe
        assert ankle[1] > span.ankle[1] + 0.01
        toe = legs.quat_multiply(rotation, toe_local)  # the toe bone's world rotation: as the pin has it
        assert max(abs(a - b) for a, b in zip(toe, legs.quat_multiply(span.rotation, span.toe_local))) < 1e-12


def test_a_foot_rolled_on_its_toe_lifts_its_ankle_no_further_than_the_animated_ankle_rises():
    """Kimodo's foot pitched heel-up, held flat or on its toe alone, rolls the pin about its toe point as
    far as the animation pitches it, but no further than lifts the ankle as far as the animated ankle has
    risen since the pin's frame: a foot long for its leg (RobotExpressive's, 0.55 of it) pitched as
    Kimodo's lifted its ankle three times as far, 11 cm where the animated one stays (soma_03 frames
    98-109), and the hips rose for it (robot_posed_soma03's knee bent 30-50 deg where Kimodo's is at 6-12).
    A toe point behind the ankle, whose roll does not lift it, rolls as before."""
    skeleton, foot, rotations, positions = _leg()
    heel_up = legs.quat_multiply(legs.quat_from_axis_angle(foot.lateral, math.radians(20.0)), rotations[foot.ankle])
    for heel in (True, False):
        span = contacts.Span(0, 2, (heel,) * 3, (True,) * 3, positions[foot.ankle], positions[foot.toe], 0.0,
                             rotations[foot.ankle], (0.0, 0.0, 0.0, 1.0))
        animated = legs.rolled(foot, span, math.radians(20.0))[0]  # the animated ankle turned about the toe as far
        free = legs.planned(foot, span, 1, heel_up, animated, None)
        ankle, rotation, _ = legs.planned(foot, span, 1, heel_up, animated, None, 0.02)
        assert abs(ankle[1] - span.ankle[1] - 0.02) < 1e-9  # lifted as far as the animated ankle rose
        assert abs(math.dist(ankle, span.toe_point) - math.dist(span.ankle, span.toe_point)) < 1e-12  # about the toe
        assert free[0][1] > ankle[1] + 0.02  # unbounded, the 20 deg roll lifts it 4.8 cm
        assert legs.planned(foot, span, 1, heel_up, animated, None, 0.2)[0] == free[0]  # within the rise
        assert legs.planned(foot, span, 1, heel_up, animated, None, -0.01)[0] == span.ankle  # not risen: flat
    behind = dataclasses.replace(span, toe_point=legs.add(span.ankle, (0.0, -0.07, -0.06)))  # a toe point behind the ankle
    animated = legs.rolled(foot, behind, math.radians(20.0))[0]
    assert legs.planned(foot, behind, 1, heel_up, animated, None, 0.0) == legs.planned(foot, behind, 1, heel_up, animated, None)


def test_a_toe_stood_down_onto_the_floor_rolls_about_where_it_stands_and_keeps_the_reach_asked():
    """A toe held alone whose sole ends above the floor is stood down in the goal (`stood_on`) before the
    roll, so the roll turns about the lowered toe and the leg is asked for no more than the reach given
    (RobotExpressive on g1_04: stood down 1.2 cm after the roll, its knee went straight and its thigh
    popped 8.7 deg beyond Kimodo's where the bar is 8)."""
    skeleton, foot, rotations, positions = _leg()
    floor = min(p[1] for p in legs.goal_sole(skeleton, foot, rotations, positions,
                                             (positions[foot.ankle], rotations[foot.ankle], None))) - 0.02
    toe_point = positions[foot.toe]
    span = contacts.Span(0, 2, (False,) * 3, (True,) * 3, positions[foot.ankle], toe_point, 0.0, rotations[foot.ankle], None)
    goal = legs.stood_on(skeleton, foot, rotations, positions, (span.ankle, span.rotation, None), floor)
    assert abs(min(p[1] for p in legs.goal_sole(skeleton, foot, rotations, positions, goal)) - floor) < 1e-9
    assert abs(goal[0][1] - (span.ankle[1] - 0.02)) < 1e-9 and goal[0][0] == span.ankle[0] and goal[0][2] == span.ankle[2]
    hip = (0.0, span.ankle[1] + 0.85, span.ankle[2] - 0.35)
    ankle, rotation, _ = legs.rolled_within(foot, span, goal, hip, 0.9)
    assert abs(math.dist(hip, ankle) - 0.9) < 1e-9
    lowered_toe = (toe_point[0], toe_point[1] - 0.02, toe_point[2])
    assert abs(math.dist(ankle, lowered_toe) - math.dist(span.ankle, toe_point)) < 1e-12  # turned about the lowered toe


def _judged(tmp_path, clip: str, character: str) -> dict:
    """`clip` retargeted onto a judged character with the plan solver, and the judge's figures of it
    (tests/leg_figures.py: pygltflib and numpy, none of our code)."""
    import leg_figures as lf

    judged = lf.build_characters(tmp_path / "rigs", [character])[character]
    out = tmp_path / "{}_{}.glb".format(clip, character)
    env = dict(os.environ, KIMODO_LEG_SOLVER="plan")
    subprocess.run([sys.executable, "-m", "kimodo_rig", "retarget", str(NPZ / clip / "motion.npz"), "--target",
                    judged.target, "-o", str(out)], check=True, capture_output=True, cwd=str(ROOT), env=env)
    return lf.figures(out, judged, lf.read_clip(NPZ / clip / "motion.npz"))


def test_the_plan_pops_no_knee_where_a_toe_holds_while_the_body_moves_on(tmp_path):
    """soma_01 onto RobotExpressive: its right toe holds alone while the body walks on (frames 35-41); the
    leg pulled straight on it popped its thigh 14 deg beyond Kimodo's own turn as the pin let go."""
    got = _judged(tmp_path, "soma_01_single_text_prompt", "robot")
    assert got["turn_deg"] <= 10.0, got["turn_where"]


def test_the_plan_stands_a_foot_held_on_its_heel_or_toe_alone_on_the_floor(tmp_path):
    """g1_04 onto Mixamo (heel strikes pitched toe-up about the ankle lifted the heel's sole 1.5 cm) and g1_01
    onto the toe-less foot with its mesh behind (3.4 cm under the floor on its toe): planted soles within 1 cm
    and nothing under -2 cm per 1.7 m."""
    for clip, character in (("g1_04_ee_constraint", "mixamo"), ("g1_01_single_text_prompt", "toeless_mesh_behind")):
        got = _judged(tmp_path, clip, character)
        assert got["planted_cm"] <= 1.0 and got["lowest_cm"] >= -2.0, (clip, character, got["planted_cm"], got["lowest_cm"])


@pytest.mark.parametrize("name", ["one_bone_limbs", "footless_shins"])
def test_a_leg_whose_sole_rides_on_its_last_bone_is_not_pushed_under_the_floor(tmp_path, name):
    """soma_02 onto the mannequin with one-bone legs (Kenney's `leg-left`) or shins without a foot bone:
    no foot or hand vertex under -2 cm per 1.7 m (the plan stood neither the leg bone's sole nor the hips
    on the pins: 4.8 cm under; the pin now turns that bone as the foot, on its sole's lowest point, and the
    hips stay high enough for it)."""
    got = _judged(tmp_path, "soma_02_multi_text_prompt", name)
    assert got["lowest_cm"] >= -2.0, got


@pytest.mark.parametrize("clip,name", [("soma_04_ee_constraint", "one_bone_limbs"), ("soma_04_ee_constraint", "footless_shins"),
                                       ("soma_01_single_text_prompt", "footless_shins"), ("g1_04_ee_constraint", "one_bone_limbs"),
                                       ("g1_03_full_body_keyframes", "footless_shins")])
def test_rigid_legs_planted_at_different_heights_roll_the_pelvis_so_both_soles_stand(tmp_path, clip, name):
    """Onto one-bone legs (Kenney's `leg-left`) or shins without a foot bone, the judge's figures: planted
    soles within 1 cm, Kimodo's skate at most the clip's own, nothing under -2 cm per 1.7 m. Two rigid legs
    planted want the hips at different heights: with one height the plan floated a sole 3.3-8.3 cm (and
    the footless shins skated 0.35 cm a frame on soma_01 against the clip's 0.10, 0.46 on g1_03 against
    0.17); the pelvis now rolls by the least that lets both reach (`hips.rolls`), and a rigid foot rocks
    on the sole point its turn presses lowest."""
    got = _judged(tmp_path, clip, name)
    assert got["planted_cm"] <= 1.0, got
    assert got["skate_cm"] <= got["source_skate_cm"], got
    assert got["lowest_cm"] >= -2.0, got


SWING_FLOOR = 0.15  # m: the leg's hip is 1 m up and it reaches 0.9 m


def _swing_under_the_heel(fps: float):
    """A free foot whose sole reaches 25 cm behind its ankle (the foot bone at the front of its mesh, as
    Blender leaves RobotExpressive's) swinging between two pins over 0.8 s at `fps`: its ankle comes down
    from 25 cm to 6 cm over the floor (FLOOR) while it pitches toe-up by up to 30 deg (a heel strike) and
    back to flat on the pin. Returns the leg, the foot, per frame the goals and whether the foot is free."""
    from dataclasses import replace

    skeleton, foot, rotations, positions = _leg()
    ankle = foot.ankle
    foot = replace(foot, sole=(((ankle, 1.0, (0.0, -0.05, -0.25)),), ((ankle, 1.0, (0.0, -0.05, -0.02)),)))
    frames = int(round(1.0 * fps))
    first, last = int(round(0.1 * fps)), int(round(0.9 * fps))  # the free frames: first..last - 1
    goals, free = [], []
    for frame in range(frames):
        s = min(1.0, max(0.0, (frame - first) / float(last - first)))
        height = SWING_FLOOR + 0.06 + 0.19 * math.sin(math.pi * min(1.0, 1.5 * s)) if s < 2.0 / 3.0 else SWING_FLOOR + 0.06
        pitch = -math.radians(30.0) * math.sin(math.pi * max(0.0, 3.0 * s - 1.0) / 2.0) if s < 1.0 else 0.0
        turn = (math.sin(pitch / 2.0), 0.0, 0.0, math.cos(pitch / 2.0))  # about +X, the foot's left
        goals.append(((0.0, height, 0.2 * s), legs.quat_multiply(turn, rotations[ankle]), None))
        free.append(first <= frame < last)
    return skeleton, foot, rotations, positions, goals, free


def test_a_free_sole_reaching_behind_its_ankle_is_cleared_by_a_turn_and_lift_planned_over_the_swing():
    """The swing of `_swing_under_the_heel`: frame by frame, the sole's back dipped 11 cm under the floor
    and the leg was lifted that much where it dipped (a toe-up turn clears nothing behind the ankle): on
    soma_02 onto the toe-less foot with its mesh behind, 7 cm in a frame, its thigh turning 14 deg
    beyond Kimodo's. Planned over the swing (`hips.cleared_swings`), the foot turns toe-down and the
    solve leaves it on or above the floor, its ankle off the goal's own path by what changes less than a
    centimetre in a thirtieth of a second (it stepped 4.2 cm), at 30 and 120 fps alike."""
    for fps in (30.0, 120.0):
        skeleton, foot, rotations, positions, goals, free = _swing_under_the_heel(fps)
        poses = [(list(rotations), list(positions)) for _ in goals]
        cleared = hips.cleared_swings(foot, goals, free, poses, fps, SWING_FLOOR)
        ankles = []
        for frame, goal in enumerate(cleared):
            pose = (list(rotations), list(positions))
            legs.solve(skeleton, foot, pose[0], pose[1], goal, (0.0, 0.0, 1.0), SWING_FLOOR if free[frame] else None)
            assert min(legs.posed_point(p, *pose)[1] for p in foot.sole) >= SWING_FLOOR - 1e-9, (fps, frame)
            ankles.append(pose[1][foot.ankle][1] - goals[frame][0][1])
        stride = int(round(fps / 30.0))  # the change over a thirtieth of a second, at any rate
        steps = [abs(b - a) for a, b in zip(ankles, ankles[stride:])]
        assert max(steps) < 0.01, (fps, max(steps))


def _wide_foot(half_width: float, turns):
    """`_leg` with a sole `half_width` either side of the ankle, 4 cm under it, reaching 60 cm behind it
    and 20 cm ahead (RobotExpressive's as Blender imports it, per 1.7 m about 23 cm behind and 19 wide),
    the foot standing 4 cm over its sole at bind, posed with its ankle turned by `turns` (world axis,
    degrees) in order. Returns the leg, the foot and the pose."""
    from dataclasses import replace

    skeleton, foot, _, _ = _leg()
    ankle = foot.ankle
    sole = tuple(((ankle, 1.0, (x, -0.04, z)),) for x in (-half_width, half_width) for z in (-0.6, 0.2))
    local = [(0.0, 0.0, 0.0, 1.0)] * len(skeleton.parents)
    for axis, degrees in turns:
        local[ankle] = legs.quat_multiply(legs.quat_from_axis_angle(axis, math.radians(degrees)), local[ankle])
    rotations, positions = pose_globals(skeleton, local, (0.0, 1.0, 0.0))
    return skeleton, replace(foot, sole=sole, standing=0.04), list(rotations), list(positions)


def test_a_foot_held_flat_on_its_edge_keeps_its_ankle_where_the_animation_holds_it():
    """Kimodo's left foot on soma_04 is held flat (heel and toe) the whole clip, rolled 18 deg onto its
    edge. Stood on that edge, the 50 cm wide foot of RobotExpressive as Blender imports it raised its
    ankle 13 cm, where the retarget holds it 9 (and a level foot 4): the knee bent 35-40 deg where Kimodo's
    bends 6-12 (thigh 0.981 against Kimodo's, bar 0.99). The pin rolls back toward level by the least that
    keeps the sole on the floor with the ankle where the animation holds it; a narrow foot, which its roll
    raises less than that, keeps all of its roll."""
    height = 0.07  # the animated ankle over the floor
    for half_width, kept in ((0.25, False), (0.05, True)):
        skeleton, foot, rotations, positions = _wide_foot(half_width, [((0.0, 0.0, 1.0), 18.0)])
        floor = positions[foot.ankle][1] - height
        span, = contacts.plan(foot, [(True, True)] * 5, [(rotations, positions)] * 5, floor, 30.0)
        sole = legs.standing_sole(foot, rotations, positions, (span.ankle, span.rotation, None))
        assert abs(min(p[1] for p in sole) - floor) < 1e-9, half_width  # on the floor
        if kept:
            assert max(abs(a - b) for a, b in zip(span.rotation, rotations[foot.ankle])) < 1e-12
            assert span.ankle[1] - floor < height
        else:
            assert abs(span.ankle[1] - floor - height) < 1e-9, span.ankle[1] - floor  # 0.115 on its edge
            assert abs(legs.pitch(foot, span.rotation, rotations[foot.ankle], 0.0)) < 1e-9  # rolled, not pitched


def test_a_free_foot_pitched_and_rolled_is_turned_toward_flat_not_lifted_for_its_roll():
    """Kimodo's swinging foot comes down heel first, pitched toe-up and rolled. Onto RobotExpressive as
    Blender imports it (its sole reaching 63 cm of its 4.5 m behind the ankle, 50 cm wide), turned about
    its pitch axis alone its rolled sole stayed 10-25 cm under the floor, the leg lifting it 15-22 cm
    (soma_02's swinging thigh 30 deg off Kimodo's; the layers keep that foot flat 3-5 cm up). Turned
    toward flat, the foot is lifted no more than flat needs: its ankle 2 cm over the floor, 4 over its
    sole when flat."""
    skeleton, foot, rotations, positions = _wide_foot(0.25, [((1.0, 0.0, 0.0), -25.0), ((0.0, 0.0, 1.0), 15.0)])
    floor = positions[foot.ankle][1] - 0.02
    frames = 9
    poses = [(rotations, positions)] * frames
    cleared = hips.cleared_swings(foot, [None] * frames, [True] * frames, poses, 30.0, floor)
    for goal in cleared:
        sole = legs.standing_sole(foot, rotations, positions, goal)
        assert min(p[1] for p in sole) >= floor - 1e-9
        assert goal[0][1] - positions[foot.ankle][1] <= 0.02 + 1e-9, goal[0][1] - positions[foot.ankle][1]


def test_the_hips_keep_a_swinging_foot_with_a_knee_as_high_as_it_stands_flat():
    """Behind a foot rolling on its toe the hips came down 9-12 cm for its reach, and the other foot,
    swinging through, hung its animated ankle 2-8 cm under the floor (RobotExpressive as Blender imports
    it, soma_02 and soma_03): lifted there by its knee, its thigh turned 30 deg off Kimodo's. The hips'
    path keeps a swinging ankle its foot's standing height over the floor (a planted leg's reach still
    bounding it): here the only leg swings, its ankle 2 cm under the floor."""
    skeleton, foot, rotations, positions = _wide_foot(0.25, [])
    floor = positions[foot.ankle][1] + 0.02
    frames = 9
    poses = [(list(rotations), list(positions)) for _ in range(frames)]
    rises = hips.heights({"l": foot}, {"l": []}, {"l": [None] * frames}, poses, 30.0, [positions[0][1]] * frames, floor)
    assert all(abs(rise - 0.06) < 1e-9 for rise in rises), rises


@pytest.mark.parametrize("clip,name", [("soma_03_full_body_keyframes", "toeless_mesh_behind"),
                                       ("g1_02_multi_text_ee_constraint", "toeless_mesh_behind"),
                                       ("g1_03_full_body_keyframes", "robot"), ("soma_03_full_body_keyframes", "robot")])
def test_a_free_foot_kept_above_the_floor_pops_no_leg(tmp_path, clip, name):
    """The judge's figures, every bar of issue 40: no limb segment turning over 10 deg in a frame beyond
    Kimodo's own turn. A free foot's sole under the floor was turned toe-up and the leg lifted what that
    left, frame by frame: the toe-less foot whose mesh reaches behind its ankle dips its back as it comes
    down heel first (soma_03 31.7 deg, g1_02 10.4) and RobotExpressive's swing 10.1 (g1_03); the turn
    (either way, one per swing) and the lift are now planned over the clip (`hips.cleared_swings`). On
    soma_03 RobotExpressive's free leg, hanging straight, bent backwards for its lift (44.7 deg)."""
    got = _judged(tmp_path, clip, name)
    assert got["turn_deg"] <= 10.0, got
    assert got["planted_cm"] <= 1.0 and got["lowest_cm"] >= -2.0 and got["skate_cm"] <= got["source_skate_cm"], got


def test_a_straight_leg_with_its_knee_a_hair_behind_bends_forward_when_reached_nearer():
    """soma_03 onto RobotExpressive, frame 64: the swinging leg hangs straight, its knee a centimetre
    behind the line from hip to ankle, and its free foot lifted off the floor (its goal 13 cm nearer the
    hip) bent it in the plane of that hair's offset: backwards, the thigh turning 55 deg in a frame. A
    knee bent against `towards` counts as straight: the leg bends toward it."""
    from kimodo_rig.rotations import two_bone_points

    hip, knee, ankle = (0.0, 1.0, 0.0), (0.0, 0.55, -0.015), (0.0, 0.1, 0.0)
    lean = math.sin(math.radians(contacts.KNEE_LEAN_DEG))
    new_knee, new_ankle = two_bone_points(hip, knee, ankle, (0.0, 0.25, 0.0), (0.0, 0.0, 1.0), lean)
    assert math.dist(new_ankle, (0.0, 0.25, 0.0)) < 1e-9
    assert new_knee[2] > 0.1, new_knee  # forward, toward `towards` (+Z)
    bent = (0.0, 0.55, 0.05)  # a knee bent forward keeps its own plane, reached to where it is
    assert math.dist(two_bone_points(hip, bent, ankle, ankle, (0.0, 0.0, 1.0), lean)[0], bent) < 1e-9


def _float32(values):
    return tuple(float(v) for v in np.asarray(values, dtype=np.float32))


@pytest.mark.parametrize("clip,rig", [("g1_01_single_text_prompt", "mpfb2_mixamo.glb"),
                                      ("g1_04_ee_constraint", "mpfb2_game_engine.glb")])
def test_the_plan_moves_by_no_more_than_float_noise_when_the_character_is_read_in_float32(monkeypatch, clip, rig):
    """What the Blender add-on does: the same character as Blender holds it, its rest and bind mesh in
    float32 (these differ from the file's by a unit in the last place), retargeted by the same core. A
    swing whose foot clears the floor turned either way was turned by whichever left less to lift: 3e-17 m
    against 0 picked a 55 deg toe-down over a 6 deg toe-up, and the rounding flipped it (the foot and body
    13 cm apart on g1_01 onto Mixamo, 9 cm on g1_04 onto the mannequin; the add-on's test bar is 1e-4 m per
    1.7 m). Judged with numpy forward kinematics of each retargeted motion."""
    from gltf_judge import forward_kinematics
    from kimodo_rig import formats
    from kimodo_rig.retarget import api, character, feet
    from kimodo_rig.retarget.mapping import parts_by_name

    monkeypatch.setenv("KIMODO_LEG_SOLVER", "plan")
    target = character.load_target(str(ROOT / "tests" / "data" / "rigs" / "mpfb2" / rig))
    parts = parts_by_name(character.map_target(target))
    mesh = character.bind_mesh(target)
    motion = formats.read_file(str(ROOT / "tests" / "data" / "clips" / clip))
    skeleton = target.skeleton
    rounded = Skeleton(skeleton.name, skeleton.joint_names, skeleton.parents,
                       tuple(_float32(o) for o in skeleton.rest_offsets), tuple(_float32(q) for q in skeleton.rest_rotations),
                       skeleton.label)
    worlds = []
    for body, bind in ((skeleton, mesh), (rounded, tuple((_float32(p), w) for p, w in mesh))):
        moved, _ = feet.retarget_onto(motion, body, bind_mesh=bind, target_map=api.humanoid_map(body, parts))
        joints = moved.skeleton.joint_count
        quats = np.asarray(moved.local_rotations, dtype=np.float64).reshape(moved.frame_count, joints, 4)
        roots = np.asarray(moved.root_positions, dtype=np.float64).reshape(moved.frame_count, 3)
        worlds.append(forward_kinematics(moved.skeleton.parents, moved.skeleton.rest_offsets, quats, roots))
    height = float(np.ptp(worlds[0][0, :, 1]))
    worst = float(np.linalg.norm(worlds[0] - worlds[1], axis=-1).max())
    assert worst <= 1e-4 * max(1.0, height / 1.7), worst


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("axis", [(1.0, 0.0, 0.0), (0.9, 0.3, -0.2)])
def test_a_free_foots_pitch_is_the_least_that_clears_the_floor_or_the_best_there_is(seed, axis):
    """`legs.clearing_pitch`, judged by a fine numpy grid over the toe-up turns (each point turned by t about
    the axis, Rodrigues' formula): the least turn after which no point is under the floor, or where none
    clears, the turn that leaves the lowest point highest (found among the floor crossings only, it fell up
    to 0.26 mm short)."""
    rng = np.random.default_rng(seed)
    points = np.column_stack([rng.uniform(-0.03, 0.03, 24), rng.uniform(-0.12, 0.0, 24), rng.uniform(-0.08, 0.25, 24)])
    floor = float(rng.uniform(-0.12, -0.02))
    limit = math.radians(contacts.FOOT_PITCH_MAX_DEG)
    a = np.asarray(axis) / np.linalg.norm(axis)
    t = legs.clearing_pitch([tuple(p) for p in points], tuple(a), floor)
    grid = np.linspace(-limit, 0.0, 200001)

    def lowest(turns):
        turns = np.asarray(turns, float)[..., None]
        along = points @ a
        heights = (points[:, 1] * np.cos(turns) + np.cross(a, points)[:, 1] * np.sin(turns)
                   + a[1] * along * (1.0 - np.cos(turns)))
        return np.min(heights, axis=-1)

    assert -limit - 1e-12 <= t <= 1e-12
    clear = np.nonzero(lowest(grid) >= floor)[0]
    if len(clear):
        least = grid[clear[-1]]  # the clearing turn nearest to none
        assert lowest(t) >= floor - 1e-12 and abs(t) <= abs(least) + 1e-12
    else:
        assert lowest(t) >= lowest(grid).max() - 1e-9
