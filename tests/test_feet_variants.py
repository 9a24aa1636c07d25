"""Feet, floor, limbs and the report of `kimodo-rig retarget` on kinds of rig the Blender and three.js cases of
tests/test_feet_judges.py do not reach (a VRM 0.x avatar in a centimetre Z-up armature, a file saved in
another pose, Unreal's IK bones, a giant, the robot saved off its bind pose, at 0.3x and facing -Z with
viewer-side names), judged by numpy:
tests/feet_judge.judge_case skins the written file with pygltflib + numpy (the input rig read at its bind
pose, `rig_variants.at_bind`), and test_feet_judges' own figures and bars judge what it built (issue 8:
planted soles within 1 cm of the rest floor, nothing 2 cm under it, planted feet <= 0.15 cm a frame, limb
cosine >= 0.99 SOMA / 0.97 G1 in the character's frame, per 1.7 m of character) and the report's numbers.

The cases come from the sweep of every shared clip onto every kind of rig (benchmarks/sweep_variants.py);
where the retarget still misses a bar, NOT_MET holds what it meets today, with the finding that names it.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import rig_variants as rv
import test_feet_judges as tfj
from conftest import run_cli
from feet_judge import judge_case

POSED = "saved in another pose than its bind pose"
ROBOT_PARTS = {"hips": "Body", "thigh": "UpperLeg{S}", "calf": "LowerLeg{S}", "foot": "Foot{S}",
               "upperarm": "UpperArm{S}", "lowerarm": "LowerArm{S}", "hand": "Palm2{S}"}
ROBOT_HANDS = "lowerarm"  # no hand bone: everything under the forearm (palms, fingers, thumb) is the hand


def _at_bind(target: Path, folder: Path, name: str) -> Path:
    """The judges' copy of a rig: its joints at their bind pose (rig_variants.at_bind, numpy)."""
    return rv.variant(target, folder, name + "_bind.glb", rv.at_bind)


def _vrm0_centimetres(folder: Path):
    """A VRM 0.x avatar: names nobody could guess, the VRM humanoid table naming them, facing -Z, under an
    armature node scaled by 0.01 and turned from Z-up (bones in centimetres)."""
    table = {bone: tfj.ANONYMOUS[name] for bone, name in rv.MANNEQUIN_VRM.items()}
    rig = rv.variant(rv.MANNEQUIN, folder, "avatar_cm.vrm", lambda g: rv.rename(g, tfj.ANONYMOUS),
                     lambda g: rv.add_vrm_table(g, table, 0), lambda g: rv.turn_scene(g, 180.0),
                     lambda g: rv.wrap_armature(g, scale=0.01, z_up=True))
    judged = folder / "avatar_cm_rig.glb"  # the same bytes under a glTF name
    shutil.copyfile(rig, judged)
    return str(rig), judged


def _mixamo_posed(folder: Path):
    """Mixamo saved with every joint turned up to 25 deg and its hips moved (12, -20, 30) cm."""
    return str(rv.variant(rv.MIXAMO, folder, "mixamo_posed.glb", rv.pose_nodes)), rv.MIXAMO


def _ik_bones(folder: Path):
    rig = rv.variant(rv.MANNEQUIN, folder, "mannequin_ik.glb", rv.add_unreal_ik_bones)
    return str(rig), rig


def _giant(folder: Path):
    rig = rv.variant(rv.MIXAMO, folder, "mixamo_giant.glb", lambda g: rv.scale_scene(g, 2.7))
    return str(rig), rig


def _robot_posed(folder: Path):
    """RobotExpressive (its file already holds a frame of a clip) posed at frame 12 of its Walking clip,
    its hips moved (12, -20, 30) cm (its root bone is placement: none of its clips moves it)."""
    rig = rv.variant(rv.ROBOT, folder, "robot_posed.glb",
                     lambda g: rv.pose_nodes(g, animation=10, frame=12, hips="Body", hips_move=(0.0012, -0.002, 0.003)))
    return str(rig), _at_bind(rv.ROBOT, folder, "robot")


def _robot_small(folder: Path):
    rig = rv.variant(rv.ROBOT, folder, "robot_small.glb", lambda g: rv.scale_scene(g, 0.3))
    return str(rig), _at_bind(rig, folder, "robot_small")


def _robot_back_viewer_sides(folder: Path):
    """RobotExpressive facing -Z with every side named the viewer's way round: its plated feet (rigid meshes,
    no toe joint, no child) give no heel-to-toe from the joints, so the feet's mesh says which way it faces."""
    rig = rv.variant(rv.ROBOT, folder, "robot_back_swapped.glb", lambda g: rv.turn_scene(g, 180.0), rv.swap_side_names)
    return str(rig), _at_bind(rig, folder, "robot_back_swapped")


def _robot(folder: Path):
    return str(rv.ROBOT), _at_bind(rv.ROBOT, folder, "robot")


_feet_mesh_behind = tfj._feet_mesh_behind  # the feet's mesh 25 cm behind the ankles, no toe part


MANNEQUIN = tfj._parts(tfj.MANNEQUIN_PARTS)
NO_TOE = {k: v for k, v in MANNEQUIN.items() if not k.startswith("toe")}
MESH_BEHIND = tfj.MESH_BEHIND
MIXAMO = tfj._parts(tfj.MIXAMO_PARTS)
ROBOT = tfj._parts(ROBOT_PARTS)
CASES = {
    "vrm0_cm_kneel": tfj.Case("g1_02_multi_text_ee_constraint", _vrm0_centimetres,
                              tfj._parts(tfj.MANNEQUIN_PARTS, tfj.ANONYMOUS.get), 180.0),
    "mixamo_posed_soma01": tfj.Case("soma_01_single_text_prompt", _mixamo_posed, MIXAMO, expected_warnings=(POSED,)),
    "ik_bones_soma05": tfj.Case("soma_05_root_path", _ik_bones, MANNEQUIN),
    "giant_kneel": tfj.Case("g1_02_multi_text_ee_constraint", _giant, MIXAMO),
    "robot_posed_soma03": tfj.Case("soma_03_full_body_keyframes", _robot_posed, ROBOT,
                                   expected_warnings=(POSED,)),
    "robot_small_soma04": tfj.Case("soma_04_ee_constraint", _robot_small, ROBOT, expected_warnings=(POSED,)),
    "robot_g1_04": tfj.Case("g1_04_ee_constraint", _robot, ROBOT, expected_warnings=(POSED,)),
    # No hand bone: the report ends the forearm at the wrist, where the palms start (its farthest children),
    # as the judge does (Palm2); the children's mean, thumb and all, put its worst frame 0.015 off.
    "robot_soma01": tfj.Case("soma_01_single_text_prompt", _robot, ROBOT, expected_warnings=(POSED,)),
    "feet_mesh_behind_soma07": tfj.Case("soma_07_mixed_constraints", _feet_mesh_behind, NO_TOE,
                                        expected_warnings=(MESH_BEHIND,)),
    "feet_mesh_behind_kneel": tfj.Case("g1_02_multi_text_ee_constraint", _feet_mesh_behind, NO_TOE,
                                       expected_warnings=(MESH_BEHIND,)),
    "robot_back_viewer_sides_g1_01": tfj.Case("g1_01_single_text_prompt", _robot_back_viewer_sides,
                                              tfj._parts(ROBOT_PARTS, swap=True), 180.0,
                                              expected_warnings=(POSED, "the bones named left are on the character's right")),
}
HANDS = {"robot_posed_soma03": ROBOT_HANDS, "robot_small_soma04": ROBOT_HANDS, "robot_back_viewer_sides_g1_01": ROBOT_HANDS,
         "robot_g1_04": ROBOT_HANDS, "robot_soma01": ROBOT_HANDS}

# Bars the retarget misses today (the feet pass), as the figure it meets instead (per 1.7 m of character, as
# bar_problems measures; findings in the session notes of 2026-12-01, "sweep"):
NOT_MET = {
}
# Bars held tighter than issue 8's test bar, to the issue's goal (planted feet <= 0.1 cm a frame, better than
# Kimodo's own) where that was missed: the robot on soma_04 has both feet down on all 151 frames while
# Kimodo turns its hips; the robot's wide hips turned so swung its feet 40 cm each way and the leash dragged
# them 0.21 cm a frame (Kimodo's own feet 0.065). Now the hips turn less (lock._follow_planted_feet): 0.02.
GOAL = {"robot_small_soma04": {"skate_cm": 0.1}}


def judge_spec(name: str, case: tfj.Case, rig: Path, out: Path, frames: int, hands: str = "hand",
               carried: dict = None) -> dict:
    """What judge_case reads (tests/blender/feet_judge.py's SPEC); `hands`: the part whose bone and all
    under it is a hand; `carried`: {part: (bone, place at bind)} for the parts the rig lost."""
    return {"name": name, "output": str(out), "rig": str(rig), "fps": 30.0, "frames": frames,
            "feet": {s: case.parts["foot_" + s] for s in "lr"}, "toes": {s: case.parts.get("toe_" + s) for s in "lr"},
            "forward": tfj.built_forward(case), "points": sorted(set(case.parts.values())),
            "carried": {part: {"bone": bone, "at": at} for part, (bone, at) in (carried or {}).items()},
            "hands": {s: case.parts.get(hands + "_" + s) or case.parts.get("lowerarm_" + s) or case.parts["upperarm_" + s]
                      for s in "lr"}}


def bar_figures(got: dict) -> dict:
    """The figures bar_problems judges, per 1.7 m of character."""
    scale, planted = got["scale"], got["planted_cm"]
    return {"planted_cm": float(np.abs(planted).max()) / scale if len(planted) else float("inf"),
            "planted_frames": len(planted), "lowest_cm": got["lowest_cm"] / scale,
            "hand_lowest_cm": got["hand_lowest_cm"] / scale, "skate_cm": got["skate_cm"] / scale,
            "worst_limb_cosine": min(got["limb_cosines"]), "travel_cosine": got["travel_cosine"], "travelled_cm": got["travelled_cm"]}


def missed_bars(case: tfj.Case, figures: dict, instead: dict) -> list:
    """Each bar the figures miss (against `instead`'s figure where given), in words."""
    bars = {"planted_cm": ("<=", tfj.FLOAT_CM), "lowest_cm": (">=", -tfj.SINK_CM), "hand_lowest_cm": (">=", -tfj.SINK_CM),
            "skate_cm": ("<=", tfj.SKATE_CM), "worst_limb_cosine": (">=", tfj.LIMB_BAR[case.kind])}
    missed = []
    for key, (way, bar) in bars.items():
        bar = instead.get(key, bar)
        value = figures[key]
        if not (value <= bar if way == "<=" else value >= bar):
            missed.append("{} {:.4g} (bar {} {:.4g})".format(key, value, way, bar))
    if figures["planted_frames"] < 20:
        missed.append("only {} planted frames".format(figures["planted_frames"]))
    if figures["travelled_cm"] >= 20.0 and figures["travel_cosine"] <= 0.99:  # in place: no direction to judge
        missed.append("travel off its facing (cosine {:.3f})".format(figures["travel_cosine"]))
    return missed


def report_differences(case: tfj.Case, report: dict, got: dict, wider: dict = None) -> list:
    """Report numbers further from the judge's than test_feet_judges' tolerances (`wider`: per key, the
    tolerance instead), and a facing other than the one the rig was built with, in words."""
    wider = wider or {}
    scale = got["scale"]
    built = tfj._facing_label(tfj._yaw(case.facing_deg) @ [0.0, 0.0, 1.0])
    problems = [] if report["facing"] == built else ["facing {} (built {})".format(report["facing"], built)]
    planted = got["planted_cm"]
    checks = [("height_cm", got["height_m"] * 100.0, tfj.HEIGHT_TOLERANCE * got["height_m"] * 100.0),
              ("lowest_toe_cm", got["lowest_cm"], tfj.TOLERANCE["lowest_toe_cm"] * scale),
              ("planted_sole_cm", float(planted.mean()) if len(planted) else None, tfj.TOLERANCE["planted_sole_cm"] * scale),
              ("foot_skate_cm_per_frame", got["skate_cm"], tfj.TOLERANCE["foot_skate_cm_per_frame"] * scale),
              ("pelvis_cm", got["pelvis_cm"], tfj.TOLERANCE["pelvis_cm"] * scale),
              ("travelled_cm", got["travelled_cm"], tfj.TOLERANCE["travelled_cm"] * scale),
              ("reach_target_cm", got["reach_cm"], tfj.TOLERANCE["reach_target_cm"] * scale),
              ("limb_cosine_mean", got["limb_cosine"], tfj.COSINE_TOLERANCE),
              ("limb_cosine_min", got["limb_cosine_min"], tfj.COSINE_TOLERANCE),
              ("arms_match", got["arms_match"], tfj.COSINE_TOLERANCE),
              ("legs_match", got["legs_match"], tfj.COSINE_TOLERANCE),
              ("travel_cosine", got["travel_cosine"], tfj.COSINE_TOLERANCE),
              ("duration_s", got["duration_s"], tfj.DURATION_TOLERANCE_S)]
    for key, want, tolerance in checks:
        have = report.get(key)
        if key == "travel_cosine" and have is None and (got["source_travelled_cm"] < 20.0
                                                        or got["travelled_cm"] < 20.0 * scale):
            continue  # in place (the clip under 20 cm, or the character under 20 cm per 1.7 m): no direction
        if want is not None and not (have is not None and abs(have - want) <= wider.get(key, tolerance)):
            problems.append("{}: report {} judge {:.4g}".format(key, have, want))
    return problems


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    folder = tmp_path_factory.mktemp("feet_variants")
    results = {}
    for name, case in CASES.items():
        target, rig = case.build(folder)
        out = folder / (name + ".glb")
        result = run_cli("retarget", case.input(folder), "--target", target, "-o", out, "--report", out.with_suffix(".json"))
        entry = {"result": result}
        if result.returncode == 0:
            contacts = tfj._source(case)[1]
            entry["report"] = json.loads(out.with_suffix(".json").read_text())
            entry["got"] = tfj.figures(case, judge_case(judge_spec(name, case, rig, out, len(contacts), HANDS.get(name, "hand"))))
        results[name] = entry
    return results


def _entry(judged, name):
    entry = judged[name]
    result = entry["result"]
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return CASES[name], entry


@pytest.mark.parametrize("name", list(CASES))
def test_variant_meets_the_bars(judged, name):
    """Planted soles on the rest floor, nothing under it, planted feet still, limbs where Kimodo has them,
    the travel along the facing; the command line printed only the warnings the case calls for."""
    case, entry = _entry(judged, name)
    figures = bar_figures(entry["got"])
    assert missed_bars(case, figures, dict(GOAL.get(name, {}), **NOT_MET.get(name, {}))) == [], figures
    lines = entry["result"].stderr.splitlines()
    assert len(lines) == len(case.expected_warnings), lines
    for line, words in zip(lines, case.expected_warnings):
        assert line.startswith("warning:") and words in line, lines


@pytest.mark.parametrize("name", list(CASES))
def test_variant_report_agrees_with_the_judge(judged, name):
    """Every number of the --report JSON within test_feet_judges' tolerance of the judge's, and the facing
    the rig was built with (a file saved in another pose is reported from its bind pose)."""
    case, entry = _entry(judged, name)
    assert report_differences(case, entry["report"], entry["got"]) == []


def test_the_numpy_judge_sees_what_blender_and_three_see_on_a_broken_output(judged):
    """A good output with its hips lifted 10 cm: the judge's figures miss exactly the planted bar."""
    name = "mixamo_posed_soma01"
    case, entry = _entry(judged, name)
    out = Path(entry["result"].args[entry["result"].args.index("-o") + 1])
    hips = case.parts["hips"]
    broken = tfj._hips_changed(out, hips, tfj._lifted(0.10), out.with_name("broken.glb"))
    got = tfj.figures(case, judge_case(judge_spec(name, case, rv.MIXAMO, broken, len(tfj._source(case)[1]))))
    missed = missed_bars(case, bar_figures(got), {})
    assert [m.split()[0] for m in missed] == ["planted_cm"], missed


def test_the_core_the_report_and_the_judge_find_a_toe_less_foot_front_ahead_not_its_heel(tmp_path):
    """On feet whose mesh hangs 25 cm behind the ankles (no toe bone), the sole vertex farthest from the
    ankle is the back of the heel. Where a toe contact is pinned (the core's `find_soles`), where the report
    measures it (`output._mesh_feet`) and where the numpy judge measures it (`feet_judge.sole_front`, along
    the facing the rig was built with, from the rig's own rest mesh) are the same vertex, at the front of
    the foot: no other sole vertex lies more than 1 cm further ahead."""
    from kimodo_rig import formats
    from kimodo_rig.ops.fk import rest_pose
    from kimodo_rig.retarget import character, feet, output
    from kimodo_rig.retarget.solve import retarget
    from feet_judge import Skinned, _carried_by, _descendants, _node_world_static, sole_front

    _, rig = _feet_mesh_behind(tmp_path)
    target = character.load_target(str(rig))
    mesh = character.bind_mesh(target)
    clip = formats.read_file(tfj.NPZ / "soma_01_single_text_prompt" / "motion.npz")
    info = retarget(clip, target.skeleton, target_map=character.map_target(target))[1]
    rotations, positions = rest_pose(info.target_map.skeleton)
    soles = feet.find_soles(mesh, info)
    reported = output._mesh_feet(info, mesh)
    judge = Skinned(rig)
    static = _node_world_static(judge.glb)
    everything = judge.skin(static[None], [np.ones(len(p[2]), bool) for p in judge.parts])[0]
    height = float(np.ptp(everything[:, 1]))
    for side in "lr":
        nodes = _descendants(judge.glb, "foot_" + side)
        rest = judge.skin(static[None], _carried_by(judge, nodes))[0]
        ankle = static[nodes[0], :3, 3]
        sole = rest[rest[:, 1] <= rest[:, 1].min() + 0.02 * height]
        farthest = sole[np.argmax(np.hypot(sole[:, 0] - ankle[0], sole[:, 2] - ankle[2]))]
        assert farthest[2] < ankle[2] - 0.2  # the kind of foot: its farthest sole vertex is the heel's back
        judged_front = rest[sole_front(rest, ankle, tfj.built_forward(tfj.Case("", None, {})), height)]
        core_front = np.array(feet.posed_point(soles.toe_points[side], rotations, positions))
        report_front = np.array(mesh[reported[side][2]][0])
        assert np.abs(core_front - judged_front).max() < 1e-5 and np.abs(report_front - judged_front).max() < 1e-5
        assert judged_front[2] >= sole[:, 2].max() - 0.01
