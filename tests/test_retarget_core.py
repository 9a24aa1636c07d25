"""The retarget's pure functions (shared with the Unreal step): humanoid mapping under the common naming
conventions, chain tables, rest leg reach, rest corrections and the report. Expected values come from the
skeleton JSON and the rig files read with numpy/pygltflib, not from our own FK."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from conftest import RIGS
from gltf_judge import Glb
from kimodo_rig import skeletons
from kimodo_rig.errors import KimodoError
from kimodo_rig.model import Skeleton
from kimodo_rig.retarget import mapping as humanoid
from kimodo_rig.retarget.mapping import link_parts, map_humanoid, rest_corrections, rest_leg_reach, retarget_chains
from kimodo_rig.retarget.report import FeetFigures, Report, format_report, measure_report, report_warnings
from kimodo_rig.rotations import quat_multiply, quat_rotate
from kimodo_rig.retarget.character import load_target

ISSUE_KEYS = ["skeleton", "joints", "chains_mapped", "left_at_rest", "reach_source_cm", "reach_target_cm",
              "arm_correction_max_deg", "arms_match", "arms_match_worst_bone", "legs_match", "legs_match_worst_bone",
              "limb_cosine_mean", "limb_cosine_min", "pelvis_cm", "lowest_toe_cm", "travelled_cm", "duration_s", "facing", "foot_skate_cm_per_frame",
              "planted_sole_cm", "travel_cosine", "height_cm", "feet_measured_at", "notes", "facing_warning",
              "arms_match_by_map", "legs_match_by_map",
              "kimodo_skate_m_s", "kimodo_skate_cm_per_frame", "kimodo_skate_ratio", "source_kimodo_skate_m_s",
              "source_kimodo_skate_cm_per_frame", "source_kimodo_skate_ratio"]


def _humanoid(names):
    """A T-posed humanoid with the given bone names: hips, 2 spine, neck, head, per side clavicle, upper
    arm, forearm, hand, thigh, shin, foot, toe (names[key] with key like "thigh_l"; None leaves it out)."""
    layout = [  # key, parent key, world position
        ("hips", None, (0, 1.0, 0)), ("spine_a", "hips", (0, 1.1, 0)), ("spine_b", "spine_a", (0, 1.3, 0)),
        ("neck", "spine_b", (0, 1.5, 0)), ("head", "neck", (0, 1.6, 0)),
    ]
    for side, sx in (("l", 1), ("r", -1)):
        layout += [
            ("clavicle_" + side, "spine_b", (0.03 * sx, 1.45, 0)), ("upperarm_" + side, "clavicle_" + side, (0.18 * sx, 1.45, 0)),
            ("lowerarm_" + side, "upperarm_" + side, (0.45 * sx, 1.45, 0)), ("hand_" + side, "lowerarm_" + side, (0.7 * sx, 1.45, 0)),
            ("thigh_" + side, "hips", (0.1 * sx, 0.95, 0)), ("calf_" + side, "thigh_" + side, (0.1 * sx, 0.5, 0)),
            ("foot_" + side, "calf_" + side, (0.1 * sx, 0.08, 0)), ("toe_" + side, "foot_" + side, (0.1 * sx, 0.02, 0.12)),
        ]
    removed = {k: parent for k, parent, _ in layout if names.get(k, k) is None}
    layout = [(k, parent, p) for k, parent, p in layout if k not in removed]
    for i, (k, parent, p) in enumerate(layout):
        while parent in removed:
            parent = removed[parent]
        layout[i] = (k, parent, p)
    keys = [k for k, _, _ in layout]
    world = {k: p for k, _, p in layout}
    parents, offsets = [], []
    for key, parent, position in layout:
        parents.append(keys.index(parent) if parent else -1)
        base = world[parent] if parent else (0, 0, 0)
        offsets.append(tuple(float(position[i] - base[i]) for i in range(3)))
    return Skeleton("test", tuple(names.get(k, k) for k in keys), tuple(parents), tuple(offsets)), keys


def _names(style):
    table = {}
    for side, word, cap in (("l", "Left", "L"), ("r", "Right", "R")):
        per = {
            "unreal": ("clavicle_{s}", "upperarm_{s}", "lowerarm_{s}", "hand_{s}", "thigh_{s}", "calf_{s}", "foot_{s}", "ball_{s}"),
            "mixamo": ("mixamorig:{W}Shoulder", "mixamorig:{W}Arm", "mixamorig:{W}ForeArm", "mixamorig:{W}Hand",
                       "mixamorig:{W}UpLeg", "mixamorig:{W}Leg", "mixamorig:{W}Foot", "mixamorig:{W}ToeBase"),
            "mixamo_bare": ("{W}Shoulder", "{W}Arm", "{W}ForeArm", "{W}Hand", "{W}UpLeg", "{W}Leg", "{W}Foot", "{W}ToeBase"),
            "rigify": ("shoulder.{C}", "upper_arm.{C}", "forearm.{C}", "hand.{C}", "thigh.{C}", "shin.{C}", "foot.{C}", "toe.{C}"),
            "blender_lower": ("clavicle.{s}", "upperarm.{s}", "forearm.{s}", "hand.{s}", "thigh.{s}", "shin.{s}", "foot.{s}", "toe.{s}"),
            "cmu": ("{W}Collar", "{W}Shoulder", "{W}Elbow", "{W}Wrist", "{W}Hip", "{W}Knee", "{W}Ankle", "{W}Toe"),
            "quaternius": ("Shoulder{C}", "UpperArm{C}", "LowerArm{C}", "Hand{C}", "UpperLeg{C}", "LowerLeg{C}", "Foot{C}", "Toe{C}"),
            "words": ("{W} Clavicle", "{W} Upper Arm", "{W} Forearm", "{W} Hand", "{W} Thigh", "{W} Calf", "{W} Foot", "{W} Toe"),
            "soma": ("{W}Shoulder", "{W}Arm", "{W}ForeArm", "{W}Hand", "{W}Leg", "{W}Shin", "{W}Foot", "{W}ToeBase"),
        }[style]
        for key, pattern in zip(("clavicle", "upperarm", "lowerarm", "hand", "thigh", "calf", "foot", "toe"), per):
            table[key + "_" + side] = pattern.format(s=side, W=word, C=cap)
    table.update({"hips": "Hips", "spine_a": "Spine", "spine_b": "Chest", "neck": "Neck", "head": "Head"})
    return table


@pytest.mark.parametrize("style", ["unreal", "mixamo", "mixamo_bare", "rigify", "blender_lower", "cmu", "quaternius", "words", "soma"])
def test_every_naming_convention_maps_each_part_to_its_bone(style):
    names = _names(style)
    skeleton, keys = _humanoid(names)
    hmap = map_humanoid(skeleton)
    for side in "lr":
        for part in ("clavicle", "upperarm", "lowerarm", "hand", "thigh", "calf", "foot", "toe"):
            key = part + "_" + side
            assert hmap.joint_name(key) == names[key], (style, key)
    assert hmap.joint_name("hips") == "Hips"
    assert [hmap.joint_name(p) for p in hmap.chain("spine")] == ["Spine", "Chest"]
    assert [hmap.joint_name(p) for p in hmap.chain("neck")] == ["Neck"] and hmap.joint_name("head") == "Head"


def test_leg_means_thigh_on_soma_and_shin_on_mixamo():
    soma = map_humanoid(skeletons.load("somaskel30"))
    assert soma.joint_name("thigh_l") == "LeftLeg" and soma.joint_name("calf_l") == "LeftShin"
    mixamo = map_humanoid(load_target("mixamo").skeleton)
    assert mixamo.joint_name("thigh_l") == "mixamorig:LeftUpLeg" and mixamo.joint_name("calf_l") == "mixamorig:LeftLeg"


def test_names_without_sides_are_split_by_rest_geometry():
    names = {k: v for k, v in _names("unreal").items()}
    for key in list(names):
        if key.startswith(("thigh", "calf")):
            names[key] = {"thigh": "Thigh", "calf": "Calf"}[key.split("_")[0]]
    skeleton, _ = _humanoid(names)
    positions = np.array(_rest_world(skeleton))
    hmap = map_humanoid(skeleton)
    assert positions[hmap.bones["thigh_l"]][0] > 0 > positions[hmap.bones["thigh_r"]][0]
    assert skeleton.parents[hmap.bones["calf_l"]] == hmap.bones["thigh_l"]


def _rest_world(skeleton):
    world = []
    for j, p in enumerate(skeleton.parents):
        offset = np.array(skeleton.rest_offsets[j])
        world.append(offset if p < 0 else world[p] + offset)
    return world


def test_a_rig_without_legs_is_refused_with_one_line():
    skeleton, _ = _humanoid({**_names("unreal"), **{k: None for k in ("thigh_l", "calf_l", "foot_l", "toe_l")}})
    with pytest.raises(KimodoError) as error:
        map_humanoid(skeleton, "hero.glb")
    assert str(error.value) == ("hero.glb: no humanoid legs and arms found (missing thigh_l, calf_l); bone names tried: "
                                "Unreal, Mixamo, Blender/Rigify, CMU, Quaternius, CesiumMan, Kenney, VRM, Left/Right words")


def test_kimodo_skeletons_map_and_g1_has_no_clavicle_neck_or_head():
    for name in skeletons.BUILTIN:
        hmap = map_humanoid(skeletons.load(name))
        for side in "lr":
            for part in ("upperarm", "lowerarm", "hand", "thigh", "calf", "foot", "toe"):
                assert hmap.has(part + "_" + side), (name, part)
    g1 = map_humanoid(skeletons.load("g1skel34"))
    assert not any(g1.has(p) for p in ("clavicle_l", "clavicle_r", "neck_0", "head"))
    assert g1.joint_name("thigh_l") == "left_hip_yaw_skel"  # the rotation of all three hip joints
    assert g1.skeleton.joint_names[g1.anchor("thigh_l")] == "left_hip_roll_skel"
    assert [c.name for c in retarget_chains(g1)[0]] == ["Spine", "LeftArm", "LeftLeg", "RightArm", "RightLeg"]


def test_chain_table_for_the_mannequin_follows_ik_mannequin():
    chains, root = retarget_chains(load_target("mannequin").skeleton)
    table = {c.name: (c.start, c.end) for c in chains}
    assert root == "pelvis"
    assert table["Spine"] == ("spine_01", "spine_03") and table["Neck"] == ("neck_01", "neck_01")
    assert table["Head"] == ("head", "head") and table["LeftClavicle"] == ("clavicle_l", "clavicle_l")
    assert table["LeftArm"] == ("upperarm_l", "hand_l") and table["RightLeg"] == ("thigh_r", "ball_r")
    assert table["LeftIndex"] == ("index_01_l", "index_03_l")


def test_spine_chains_of_different_lengths_are_spread_not_truncated():
    soma = map_humanoid(skeletons.load("somaskel30"))  # 3 spine bones
    g1 = map_humanoid(skeletons.load("g1skel34"))  # one waist
    one, _ = _humanoid({**_names("unreal"), "spine_a": None})
    one = map_humanoid(one)
    links = {l.part: l for l in link_parts(soma, one)}
    # One target spine bone follows the middle of SOMA's three.
    assert links["spine_0"].source_joints[0] == soma.bones["spine_1"] and links["spine_0"].weight == 0.0
    mannequin = map_humanoid(load_target("mannequin").skeleton)
    spread = [l for l in link_parts(g1, mannequin) if l.part.startswith("spine")]
    assert len(spread) == 3 and {l.source_joints for l in spread} == {(g1.bones["spine_0"],) * 2}


def test_rest_leg_reach_matches_the_skeleton_json_and_the_rig_file():
    record = skeletons.data("somaskel30")
    positions = np.array(record["rest_joint_positions_m"])
    names = record["joint_names"]
    feet = [names.index(n) for n in ("LeftFoot", "LeftToeBase", "RightFoot", "RightToeBase")]
    expected = positions[names.index("Hips")][1] - positions[feet][:, 1].min()
    assert rest_leg_reach(skeletons.load("somaskel30")) == pytest.approx(expected, abs=1e-6)
    binds = _gltf_bind_positions(RIGS / "mpfb2" / "mpfb2_game_engine.glb")
    expected = binds["pelvis"][1] - min(binds[n][1] for n in ("foot_l", "ball_l", "foot_r", "ball_r"))
    assert rest_leg_reach(load_target("mannequin").skeleton) == pytest.approx(expected, abs=1e-5)


def _gltf_bind_positions(path):
    """Joint positions at bind from the inverse bind matrices (the MPFB2 rigs have no transform above)."""
    glb = Glb(path)
    skin = glb.gltf.skins[0]
    return {glb.gltf.nodes[j].name: np.linalg.inv(m)[:3, 3] for j, m in zip(skin.joints, glb.accessor(skin.inverseBindMatrices))}


def test_rest_correction_turns_the_a_pose_arms_onto_the_soma_t_pose():
    target = load_target("mannequin").skeleton
    corrections = rest_corrections(skeletons.load("somaskel30"), target)
    binds = _gltf_bind_positions(RIGS / "mpfb2" / "mpfb2_game_engine.glb")
    upper = binds["lowerarm_l"] - binds["upperarm_l"]
    droop = math.degrees(math.atan2(-upper[1], math.hypot(upper[0], upper[2])))
    assert 40 < droop < 55  # the MPFB2 A-pose, measured from the file
    by_name = dict(zip(target.joint_names, corrections.angles_deg))
    assert by_name["upperarm_l"] == pytest.approx(droop, abs=6)  # SOMA's upper arm is horizontal, slightly back
    assert corrections.arm_max_deg >= by_name["upperarm_l"]
    # Apply D (new local rest = local rest * D) with numpy-free quaternion FK and check every aimed segment
    # now points along SOMA's.
    local = [quat_multiply(q, d) for q, d in zip(target.rest_rotations, corrections.offsets)]
    world, rotations = [], []
    for j, p in enumerate(target.parents):
        rotations.append(local[j] if p < 0 else quat_multiply(rotations[p], local[j]))
        world.append(np.array(target.rest_offsets[j]) if p < 0 else world[p] + np.array(quat_rotate(rotations[p], target.rest_offsets[j])))
    soma = skeletons.data("somaskel30")
    spos = {n: np.array(p) for n, p in zip(soma["joint_names"], soma["rest_joint_positions_m"])}
    for a, b, sa, sb in (("upperarm_l", "lowerarm_l", "LeftArm", "LeftForeArm"), ("lowerarm_r", "hand_r", "RightForeArm", "RightHand"),
                         ("thigh_l", "calf_l", "LeftLeg", "LeftShin"), ("clavicle_r", "upperarm_r", "RightShoulder", "RightArm")):
        t = world[target.index(b)] - world[target.index(a)]
        s = spos[sb] - spos[sa]
        assert np.dot(t, s) / np.linalg.norm(t) / np.linalg.norm(s) > 0.9999, a
    # Feet keep their own global rest: still flat as in the bind pose.
    foot = target.index("foot_l")
    assert np.allclose(rotations[foot], _rest_rotation(target, foot), atol=1e-6) or np.allclose(
        -np.array(rotations[foot]), _rest_rotation(target, foot), atol=1e-6)


def _rest_rotation(skeleton, joint):
    chain = []
    while joint >= 0:
        chain.append(joint)
        joint = skeleton.parents[joint]
    q = (0.0, 0.0, 0.0, 1.0)
    for j in reversed(chain):
        q = quat_multiply(q, skeleton.rest_rotations[j])
    return np.array(q)


def test_g1_zero_pose_is_measured_not_assumed_a_t_pose():
    target = load_target("mannequin").skeleton
    corrections = rest_corrections(skeletons.load("g1skel34"), target)
    by_name = dict(zip(target.joint_names, corrections.angles_deg))
    # G1's arms hang down and its forearms point forward: the A-pose upper arm turns down, not up.
    assert by_name["upperarm_l"] < 45 and by_name["lowerarm_l"] > 20
    assert by_name["clavicle_l"] == 0.0 and by_name["head"] == 0.0


def test_report_text_and_json_keys():
    report = Report("SMPL-X", 22, 9, ["Root", "LeftThumb", "b"], 102.3, 95.1, 48.2, 0.99812, "lowerarm_r", 0.9964,
                    "calf_l", 0.995, 0.9, 93.4, -1.2, 123.4, 4.0)
    assert format_report("kick_120", report) == (
        "kick_120: SMPL-X, 22 joints\n"
        "  9 chains mapped, 3 left at rest (Root, LeftThumb, ...)\n"
        "  reach 102 cm to 95 cm, arms corrected by up to 48 deg\n"
        "  arms match 0.998 (worst lowerarm_r), legs match 0.996 (worst calf_l), pelvis 93 cm, lowest toe -1 cm, "
        "travelled 123 cm over 4.0 s")
    assert list(report.to_json()) == ISSUE_KEYS
    json.dumps(report.to_json())


def test_measured_report_sees_a_bent_arm():
    skeleton, _ = _humanoid(_names("unreal"))
    hmap = map_humanoid(skeleton)
    world = [tuple(p) for p in _rest_world(skeleton)]
    bent = list(world)
    elbow = hmap.bones["lowerarm_l"]
    shoulder = world[hmap.bones["upperarm_l"]]
    bent[elbow] = (shoulder[0], shoulder[1] - 0.27, shoulder[2])  # upper arm straight down
    report = measure_report(skeleton_label="T", joint_count=skeleton.joint_count, source_map=hmap, target_map=hmap,
                            source_positions=[world, world], target_positions=[world, bent], duration_s=1.0,
                            chains_mapped=9, left_at_rest=[], reach_source=1.0, reach_target=1.0, arm_correction_max_deg=0)
    assert report.arms_match_worst_bone == "upperarm_l"
    # Frame 0 matches; frame 1 has the upper arm at 90 degrees and the forearm at about 28 degrees.
    assert report.limb_cosine_min == pytest.approx(0.0, abs=1e-9)
    assert report.arms_match < 0.9


def _measured(world, source_frames, target_frames, height_cm=None):
    skeleton, _ = _humanoid(_names("unreal"))
    hmap = map_humanoid(skeleton)
    feet = FeetFigures(0.0, 0.0, 0.0, height_cm) if height_cm is not None else None
    return measure_report(skeleton_label="T", joint_count=skeleton.joint_count, source_map=hmap, target_map=hmap,
                          source_positions=source_frames, target_positions=target_frames, duration_s=1.0,
                          chains_mapped=9, left_at_rest=[], reach_source=1.0, reach_target=1.0,
                          arm_correction_max_deg=0, feet=feet), hmap


def test_measured_report_sees_a_bent_leg_and_leaves_the_clavicles_out_of_the_limbs():
    """The limbs are the issue's four a side (thigh, shin, upper arm, forearm): a knee kicked forward
    shows in `legs_match` and warns; a shoulder (clavicle) raised, which the arms' back lift does on
    purpose, changes none of the limb figures."""
    skeleton, _ = _humanoid(_names("unreal"))
    hmap = map_humanoid(skeleton)
    world = [tuple(p) for p in _rest_world(skeleton)]
    kicked, shrugged = list(world), list(world)
    hip = world[hmap.bones["thigh_l"]]
    kicked[hmap.bones["calf_l"]] = (hip[0], hip[1], hip[2] + 0.45)  # thigh forward, shin back to the ankle
    shrugged[hmap.bones["clavicle_l"]] = (world[hmap.bones["clavicle_l"]][0], 1.30, 0.1)
    report = _measured(world, [world] * 2, [kicked] * 2)[0]
    assert report.legs_match_worst_bone == "thigh_l" and report.legs_match < 0.95
    assert report.arms_match == pytest.approx(1.0)
    knee, ankle = np.array(kicked[hmap.bones["calf_l"]]), np.array(world[hmap.bones["foot_l"]])
    shin = (ankle - knee)[1] / -np.linalg.norm(ankle - knee)  # Kimodo's shin points straight down; the thigh's cosine is 0
    assert report.legs_match == pytest.approx((0.0 + shin + 2.0) / 4)
    assert report.limb_cosine_mean == pytest.approx((6.0 + 0.0 + shin) / 8) and report.limb_cosine_min == pytest.approx(0.0)
    assert [w.split(" (")[0] for w in report_warnings(report)] == ["legs match only {:.3f}".format(report.legs_match)]
    report = _measured(world, [world] * 2, [shrugged] * 2)[0]
    assert (report.limb_cosine_mean, report.limb_cosine_min, report.arms_match, report.legs_match) == pytest.approx((1.0,) * 4)
    assert report_warnings(report) == []


@pytest.mark.parametrize("source_m, character_m, height_cm, compared", [
    (0.5, 0.5, 170.0, True),
    (0.5, 0.06, 30.0, True),  # a 30 cm character walks 6 cm where Kimodo walks 50: it travels, at its size
    (0.1, 0.6, 1000.0, False),  # a 10 m giant sways 60 cm on a clip that stays in place
    (0.5, 0.1, 170.0, False),  # --in-place: the character does not travel
])
def test_travel_direction_is_compared_when_clip_and_character_travel_at_their_size(source_m, character_m, height_cm,
                                                                                    compared):
    skeleton, _ = _humanoid(_names("unreal"))
    world = [tuple(p) for p in _rest_world(skeleton)]

    def moved(metres):
        return [world, [(p[0] + 0.6 * metres, p[1], p[2] + 0.8 * metres) for p in world]]

    report = _measured(world, moved(source_m), moved(character_m), height_cm)[0]
    assert report.travel_cosine == (pytest.approx(1.0) if compared else None)


def test_a_tipped_legs_ankle_is_above_its_sole_under_its_hip():
    """`retarget.ankles`: the ankle of a leg bone whose vertices include its foot, from the sole's
    footprint (vertices within 5% of the bone's height of the lowest, seen from above), written out
    here for boxes: under the hip where the footprint lies under it, else its nearest point."""
    from kimodo_rig.retarget.ankles import ankle_point, convex_hull, nearest_in_hull

    def box(low, high):
        return [(x, y, z) for x in (low[0], high[0]) for y in (low[1], high[1]) for z in (low[2], high[2])]

    # Kenney's block: a column under the hip, the foot 0.15 ahead of its centre, the leg 0.2 tall.
    block = box((-0.075, 0.0, -0.075), (0.075, 0.3, 0.075)) + box((-0.075, 0.0, 0.075), (0.075, 0.15, 0.15))
    assert ankle_point((0.0, 0.2, 0.0), block) == pytest.approx((0.0, 0.02, 0.0))
    # Legs spread at rest (the mannequin's: the foot 8 cm out from under the hip): the footprint's nearest point.
    spread = box((0.167, 0.003, 0.023), (0.2, 0.08, 0.205))
    assert ankle_point((0.101, 0.866, 0.005), spread) == pytest.approx((0.167, 0.003 + 0.0863, 0.023))
    # Nothing under the start: no ankle.
    assert ankle_point((0.0, -0.5, 0.0), block) is None and ankle_point((0.0, 0.2, 0.0), []) is None
    square = convex_hull([(0, 0), (1, 0), (1, 1), (0, 1), (0.5, 0.5), (1, 0.5)])
    assert sorted(square) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert nearest_in_hull((0.25, 0.75), square) == (0.25, 0.75)
    assert nearest_in_hull((2.0, 0.5), square) == pytest.approx((1.0, 0.5))
    assert nearest_in_hull((-1.0, -1.0), square) == pytest.approx((0.0, 0.0))
    assert nearest_in_hull((3.0, 1.0), [(0.0, 0.0), (2.0, 0.0)]) == pytest.approx((2.0, 0.0))  # a segment
