"""`kimodo-rig retarget` end to end, judged from the OUTPUT files with pygltflib + numpy forward kinematics
(never our own reader), the Khronos validator, and the source clips read with numpy from the raw floats
and the Kimodo skeleton JSON."""
from __future__ import annotations

import functools
import json

import numpy as np
import pygltflib
import pytest

from conftest import CLIPS, CLIP_NAMES, RIGS, ROOT, run_cli, validate_gltf
from gltf_judge import Glb, forward_kinematics, read_raw_clip, skeleton_record, trs_matrices
from kimodo_rig import cli

ROBOT = RIGS / "quaternius" / "RobotExpressive.glb"
TARGETS = {"mannequin": "mannequin", "mixamo": "mixamo", "robot": str(ROBOT)}

# Segments compared source vs target, written out here (not taken from the mapping code), per side:
# {Side} = Left/Right, {side} = left/right, {s} = l/r, {S} = L/R.
SEGMENT_PATTERNS = {
    "upperarm": {"soma": ("{Side}Arm", "{Side}ForeArm"), "g1": ("{side}_shoulder_roll_skel", "{side}_elbow_skel"),
                 "mannequin": ("upperarm_{s}", "lowerarm_{s}"), "mixamo": ("mixamorig:{Side}Arm", "mixamorig:{Side}ForeArm"),
                 "robot": ("UpperArm{S}", "LowerArm{S}")},
    "lowerarm": {"soma": ("{Side}ForeArm", "{Side}Hand"), "g1": ("{side}_elbow_skel", "{side}_wrist_roll_skel"),
                 "mannequin": ("lowerarm_{s}", "hand_{s}"), "mixamo": ("mixamorig:{Side}ForeArm", "mixamorig:{Side}Hand"),
                 "robot": ("LowerArm{S}", "Palm2{S}")},
    "thigh": {"soma": ("{Side}Leg", "{Side}Shin"), "g1": ("{side}_hip_roll_skel", "{side}_knee_skel"),
              "mannequin": ("thigh_{s}", "calf_{s}"), "mixamo": ("mixamorig:{Side}UpLeg", "mixamorig:{Side}Leg"),
              "robot": ("UpperLeg{S}", "LowerLeg{S}")},
    "calf": {"soma": ("{Side}Shin", "{Side}Foot"), "g1": ("{side}_knee_skel", "{side}_ankle_pitch_skel"),
             "mannequin": ("calf_{s}", "foot_{s}"), "mixamo": ("mixamorig:{Side}Leg", "mixamorig:{Side}Foot"),
             "robot": ("LowerLeg{S}", "Foot{S}")},
}
SEGMENTS = {
    part + "_" + s: {kind: tuple(n.format(Side=side, side=side.lower(), s=s, S=s.upper()) for n in names)
                     for kind, names in kinds.items()}
    for part, kinds in SEGMENT_PATTERNS.items() for s, side in (("l", "Left"), ("r", "Right"))
}
TOES = {"soma": ("LeftToeBase", "RightToeBase"), "g1": ("left_toe_base", "right_toe_base"),
        "mannequin": ("ball_l", "ball_r"), "mixamo": ("mixamorig:LeftToeBase", "mixamorig:RightToeBase"),
        "robot": ("FootL", "FootR")}


# --- independent judges (gltf_judge: pygltflib + numpy, no kimodo_rig) ------------------------------------

def source_positions(clip):
    """World positions {joint name: [frames, 3]} of a raw clip by numpy FK from the skeleton JSON."""
    record = skeleton_record("g1skel34" if clip.startswith("g1") else "somaskel30")
    quats, roots = read_raw_clip(CLIPS / clip, len(record["parents"]))
    positions = forward_kinematics(record["parents"], record["rest_local_offsets_m"], quats, roots)
    return {n: positions[:, i] for i, n in enumerate(record["joint_names"])}


def gltf_worlds(path):
    """pygltflib document, per-frame world matrices of every node, node index by name."""
    glb = Glb(path)
    return glb.gltf, glb.animated_world_matrices(), {n.name: i for i, n in enumerate(glb.gltf.nodes)}


def _static_world(glb, node):
    parents = glb.parents()
    matrix = np.eye(4)
    while node >= 0:
        n = glb.gltf.nodes[node]
        local = trs_matrices(np.array(n.translation or [0.0, 0, 0]), np.array(n.rotation or [0.0, 0, 0, 1]),
                             np.array(n.scale or [1.0, 1, 1]))
        matrix = local @ matrix
        node = parents[node]
    return matrix


@functools.lru_cache(maxsize=None)
def bind_worlds(path):
    """Bind-pose world matrices by joint name: the root joint's node world times IBM(root) times inv(IBM)."""
    glb = Glb(path)
    skin = max(glb.gltf.skins, key=lambda s: len(s.joints))
    ibm = glb.accessor(skin.inverseBindMatrices)
    parents = glb.parents()

    def depth(i):
        return 1 + depth(parents[i]) if parents[i] >= 0 else 0

    root = min(range(len(skin.joints)), key=lambda k: depth(skin.joints[k]))
    skin_to_world = _static_world(glb, skin.joints[root]) @ ibm[root]
    return {glb.gltf.nodes[j].name: skin_to_world @ np.linalg.inv(m) for j, m in zip(skin.joints, ibm)}


def judge(clip, rig, output):
    kind = "g1" if clip.startswith("g1") else "soma"
    source = source_positions(clip)
    _, worlds, names = gltf_worlds(output)
    positions = worlds[:, :, :3, 3]
    cosines = {}
    for segment, table in SEGMENTS.items():
        sa, sb = table[kind]
        ta, tb = table[rig]
        s = source[sb] - source[sa]
        t = positions[:, names[tb]] - positions[:, names[ta]]
        count = min(len(s), len(t))
        s, t = s[:count], t[:count]
        cosines[segment] = np.sum(s * t, -1) / np.linalg.norm(s, axis=-1) / np.linalg.norm(t, axis=-1)
    binds = bind_worlds(ROBOT if rig == "robot" else ROOT / "kimodo_rig" / "rigs" /
                        ("mpfb2_game_engine.glb" if rig == "mannequin" else "mpfb2_mixamo.glb"))
    bind_toe = min(binds[n][1, 3] for n in TOES[rig])
    arms = np.mean([cosines[k].mean() for k in ("upperarm_l", "upperarm_r", "lowerarm_l", "lowerarm_r")])  # every frame
    # Where the clip's own arm directions, on this character's arm bones from its shoulder, would put a
    # hand joint under its rest floor (a long-armed character picking something up), "limbs as the clip
    # has them" and "no hand under the floor" cannot both hold: there the hand must stay above the floor
    # and the directions are not counted (`reaching`: the frames, per side).
    reaching = {}
    for s in "lr":
        shoulder, elbow, hand = (SEGMENTS["upperarm_" + s][rig][0], SEGMENTS["lowerarm_" + s][rig][0],
                                 SEGMENTS["lowerarm_" + s][rig][1])
        wanted = positions[:count, names[shoulder]].copy()
        for part, (a, b) in (("upperarm_", (shoulder, elbow)), ("lowerarm_", (elbow, hand))):
            sa, sb = SEGMENTS[part + s][kind]
            direction = (source[sb] - source[sa])[:count]
            direction = direction / np.linalg.norm(direction, axis=-1, keepdims=True)
            wanted += direction * np.linalg.norm(positions[:count, names[b]] - positions[:count, names[a]], axis=-1, keepdims=True)
        reaching[s] = wanted[:, 1] < bind_toe
        assert (positions[:count, names[hand], 1][reaching[s]] >= bind_toe - 0.02).all()
        for part in ("upperarm_", "lowerarm_"):
            cosines[part + s] = cosines[part + s][~reaching[s]]
    limbs = np.mean([c.mean() for c in cosines.values()])
    target_low = np.min([positions[:, names[n], 1] for n in TOES[rig]], axis=0)
    # Over the clip (the lowest toe comes down to its bind height: the character stands on its own floor), and frame
    # by frame no toe under its bind height (the feet pass stands planted soles on the rest floor and
    # lifts swinging feet by Kimodo's clearance scaled to the character: tests/test_retarget_feet.py).
    floor = target_low.min() - bind_toe
    sinking = -(target_low - bind_toe).min()
    return arms, limbs, (floor, sinking), positions, names, reaching


@pytest.fixture(scope="module")
def retargeted(tmp_path_factory):
    """Every shared clip onto every rig, through the command line (in-process); one validator run."""
    folder = tmp_path_factory.mktemp("retarget")
    outputs = {}
    for clip in CLIP_NAMES:
        for rig, target in TARGETS.items():
            output = folder / "{}_{}.glb".format(clip, rig)
            report = folder / "{}_{}.json".format(clip, rig)
            assert cli.main(["retarget", str(CLIPS / clip), "--target", target, "-o", str(output), "--report", str(report)]) == 0
            outputs[clip, rig] = (output, json.loads(report.read_text()))
    reports = validate_gltf(*[o for o, _ in outputs.values()])
    return outputs, reports


@pytest.mark.parametrize("rig", sorted(TARGETS))
def test_every_clip_lands_on_the_rig_with_matching_limbs_and_feet_on_the_floor(retargeted, rig):
    outputs, validation = retargeted
    for clip in CLIP_NAMES:
        output, report = outputs[clip, rig]
        arms, limbs, floor, _, _, reaching = judge(clip, rig, output)
        # Issue 8's bars, in the character's own frame (every rig here faces +Z), with the foot lock on:
        # limbs 0.99 under SOMA, 0.97 under G1, on every frame but those where the clip's arm directions
        # would put the hand joint under the floor (none here: the robot's long arms picking something up
        # in soma_03 put its fingers there, not its wrist, and those are turned up at the wrist and lifted
        # by a back bent less before any arm turns; tests/test_retarget_feet.py judges the fingers). The
        # arms, every frame counted, meet the SOMA bar on every clip, G1's too.
        assert arms >= 0.99, (clip, arms)
        bar = 0.97 if clip.startswith("g1") else 0.99
        assert limbs >= bar, (clip, limbs)
        if rig != "robot":
            assert not any(r.any() for r in reaching.values()), clip
        assert abs(floor[0]) <= 0.02 and floor[1] <= 0.02, (clip, floor)
        # Our report, measured from the file, agrees with the independent judge.
        assert report["arms_match"] == pytest.approx(arms, abs=0.01)
        issues = validation[output.name]
        assert issues["numErrors"] == 0, issues["messages"][:5]
        ours = {m["code"] for m in issues["messages"] if m["severity"] <= 1} - {"NODE_SKINNED_MESH_NON_ROOT"}
        assert not ours, issues["messages"][:5]  # the input rigs already carry that one warning


def test_g1_on_the_mannequin_leaves_clavicles_neck_and_head_at_rest_and_says_so(retargeted):
    outputs, _ = retargeted
    output, report = outputs["g1_01_single_text_prompt", "mannequin"]
    # Reported by IK chain, as the Unreal step reports them: the body chains G1 lacks come first.
    assert report["left_at_rest"][:5] == ["Root", "Neck", "Head", "LeftClavicle", "RightClavicle"]
    assert report["chains_mapped"] == 5
    _, worlds, names = gltf_worlds(output)
    binds = bind_worlds(ROOT / "kimodo_rig" / "rigs" / "mpfb2_game_engine.glb")
    for bone, parent in (("clavicle_l", "spine_03"), ("neck_01", "spine_03"), ("head", "neck_01")):
        bind_relation = np.linalg.inv(binds[parent])[:3, :3] @ binds[bone][:3, :3]
        relation = np.linalg.inv(worlds[:, names[parent], :3, :3]) @ worlds[:, names[bone], :3, :3]
        assert np.abs(relation - bind_relation).max() < 1e-4, bone


def test_the_character_keeps_its_mesh_and_skin(retargeted):
    outputs, _ = retargeted
    output, _ = outputs["soma_01_single_text_prompt", "robot"]
    before = pygltflib.GLTF2().load(str(ROBOT))
    after = pygltflib.GLTF2().load(str(output))
    assert len(after.meshes) == len(before.meshes) == 19
    assert [len(m.primitives) for m in after.meshes] == [len(m.primitives) for m in before.meshes]
    assert len(after.skins) == 4 and [s.joints for s in after.skins] == [s.joints for s in before.skins]
    assert len(after.materials) == len(before.materials)
    glb_before, glb_after = Glb(ROBOT), Glb(output)
    for mesh_before, mesh_after in zip(before.meshes, after.meshes):
        for p, q in zip(mesh_before.primitives, mesh_after.primitives):
            assert np.array_equal(glb_before.accessor(p.attributes.POSITION), glb_after.accessor(q.attributes.POSITION))
            assert np.array_equal(glb_before.accessor(p.indices), glb_after.accessor(q.indices))
    assert len(after.animations) == 1 and len(before.animations) == 14
    # The feet hang off the root bone in this rig, yet they follow the shins.
    _, worlds, names = gltf_worlds(output)
    knee_to_foot = np.linalg.norm(worlds[:, names["FootL"], :3, 3] - worlds[:, names["LowerLegL"], :3, 3], axis=-1)
    assert knee_to_foot.max() - knee_to_foot.min() < 1e-3


def test_a_clip_that_starts_crouched_keeps_its_crouch(tmp_path):
    # soma_03 picks something up: cut it at its lowest hips frame so the clip starts crouched.
    clip = CLIPS / "soma_03_full_body_keyframes"
    rotations = np.fromfile(clip / "local_rotations_xyzw.f32", dtype="<f4").reshape(-1, 30, 4)
    roots = np.fromfile(clip / "root_positions.f32", dtype="<f4").reshape(-1, 3)
    start = int(np.argmin(roots[:, 1]))
    assert roots[start, 1] < roots[0, 1] - 0.25  # really crouched
    crouch = tmp_path / "crouch_start"
    crouch.mkdir()
    rotations[start:].tofile(crouch / "local_rotations_xyzw.f32")
    roots[start:].tofile(crouch / "root_positions.f32")
    output = tmp_path / "crouch.glb"
    assert cli.main(["retarget", str(crouch), "--target", "mannequin", "-o", str(output)]) == 0
    _, worlds, names = gltf_worlds(output)
    pelvis = worlds[:, names["pelvis"], 1, 3]
    binds = bind_worlds(ROOT / "kimodo_rig" / "rigs" / "mpfb2_game_engine.glb")
    standing = binds["pelvis"][1, 3]
    assert pelvis[0] < standing - 0.2  # first frame still crouched
    assert pelvis.max() > standing - 0.08  # and it stands up later, at the character's own height
    # Crouch depth relative to standing scales with the legs.
    cut = roots[start:, 1]
    source_drop = (cut.max() - cut[0]) / cut.max()
    target_drop = (pelvis.max() - pelvis[0]) / pelvis.max()
    assert target_drop == pytest.approx(source_drop, abs=0.05)


def _knee_bend(hip, knee, ankle):
    a = knee - hip
    b = ankle - knee
    return np.degrees(np.arccos(np.clip(np.sum(a * b, -1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1), -1, 1)))


def test_a_prefix_only_soma_to_mixamo_map_is_caught_by_knee_bending(tmp_path):
    """Mapping SOMA names onto `mixamorig:` + the same name puts SOMA's thigh (LeftLeg) on Mixamo's shin
    (LeftLeg): the knee then bends like the hip. Our map bends it like the source."""
    from dataclasses import replace

    from kimodo_rig.formats import raw
    from kimodo_rig.ops.fk import world_positions
    from kimodo_rig.retarget.mapping import map_humanoid
    from kimodo_rig.retarget.solve import retarget
    from kimodo_rig.retarget.character import load_target

    clip = "soma_03_full_body_keyframes"
    motion = raw.read(CLIPS / clip)
    source = source_positions(clip)
    source_bend = _knee_bend(source["LeftLeg"], source["LeftShin"], source["LeftFoot"])
    assert source_bend.max() > 60  # the pick-up bends the knees
    target = load_target("mixamo").skeleton
    good = map_humanoid(target)
    index = target.joint_names.index
    prefix_only = {"thigh_l": "mixamorig:LeftLeg", "foot_l": "mixamorig:LeftFoot", "toe_l": "mixamorig:LeftToeBase"}
    bones = {k: v for k, v in good.bones.items() if not k.endswith("_l") or not k.startswith(("thigh", "calf", "foot", "toe"))}
    bones.update({k: index(v) for k, v in prefix_only.items()})
    wrong = replace(good, bones=bones, ends={**good.ends, "thigh_l": (index("mixamorig:LeftFoot"),)})
    bends = {}
    for label, hmap in (("ours", good), ("prefix", wrong)):
        out, _ = retarget(motion, target, target_map=hmap)
        positions = np.array(world_positions(out))
        names = out.skeleton.joint_names
        bends[label] = _knee_bend(positions[:, names.index("mixamorig:LeftUpLeg")],
                                  positions[:, names.index("mixamorig:LeftLeg")],
                                  positions[:, names.index("mixamorig:LeftFoot")])
    # Measured from the hip: the knee angle over the clip.
    assert np.abs(bends["ours"] - source_bend).mean() < 5
    assert np.abs(bends["prefix"] - source_bend).mean() > 15


def test_in_place_and_root_motion(tmp_path):
    clip = str(CLIPS / "soma_01_single_text_prompt")
    in_place = tmp_path / "in_place.glb"
    root = tmp_path / "root.glb"
    hips = tmp_path / "hips.glb"
    for output, extra in ((in_place, ["--in-place"]), (root, ["--root-motion", "root"]), (hips, [])):
        assert cli.main(["retarget", clip, "--target", "mannequin", "-o", str(output)] + extra) == 0
    _, w_hips, names = gltf_worlds(hips)
    _, w_place, _ = gltf_worlds(in_place)
    _, w_root, _ = gltf_worlds(root)
    pelvis = names["pelvis"]
    travel = np.linalg.norm(w_hips[-1, pelvis, [0, 2], 3] - w_hips[0, pelvis, [0, 2], 3])
    assert travel > 3.0
    assert np.linalg.norm(w_place[-1, pelvis, [0, 2], 3] - w_place[0, pelvis, [0, 2], 3]) < 0.3
    # Root motion: the Root bone carries the travel and the facing; the pelvis lands where it did.
    assert np.abs(w_root[:, pelvis, :3, 3] - w_hips[:, pelvis, :3, 3]).max() < 1e-3
    root_node = names["Root"]
    assert np.linalg.norm(w_root[-1, root_node, [0, 2], 3] - w_root[0, root_node, [0, 2], 3]) > 3.0
    assert np.abs(w_root[:, root_node, 1, 3] - w_root[0, root_node, 1, 3]).max() < 1e-6
    # The hips stay near the root horizontally.
    offset = w_root[:, pelvis, [0, 2], 3] - w_root[:, root_node, [0, 2], 3]
    assert np.linalg.norm(offset, axis=-1).max() < 0.3
    # Mixamo has no root bone: a new one is added to the skin and carries the motion.
    mixamo_root = tmp_path / "mixamo_root.glb"
    assert cli.main(["retarget", clip, "--target", "mixamo", "--root-motion", "root", "-o", str(mixamo_root)]) == 0
    gltf, worlds, names = gltf_worlds(mixamo_root)
    assert names["root"] in gltf.skins[0].joints
    assert gltf.nodes[names["root"]].children == [names["mixamorig:Hips"]]
    assert np.linalg.norm(worlds[-1, names["root"], [0, 2], 3] - worlds[0, names["root"], [0, 2], 3]) > 3.0
    issues = validate_gltf(in_place, root, mixamo_root)
    assert all(i["numErrors"] == 0 for i in issues.values())


def test_bad_inputs_one_line_and_no_output(tmp_path):
    clip = str(CLIPS / "soma_01_single_text_prompt")
    output = tmp_path / "out.glb"
    # A glTF without a skin.
    no_skin = tmp_path / "no_skin.gltf"
    no_skin.write_text(json.dumps({"asset": {"version": "2.0"}, "nodes": [{"name": "a"}], "scenes": [{"nodes": [0]}]}))
    result = run_cli("retarget", clip, "--target", no_skin, "-o", output)
    assert result.returncode == 1
    assert result.stderr == ("{}: no skin (skeleton) in this glTF: a target needs a rigged character, or one of rigid "
                             "parts on their own nodes (torso, arms, legs)\n").format(no_skin)
    # A rig with a skin but nothing humanoid: the box-rig GLB of a tail.
    from kimodo_rig.formats import glb
    from kimodo_rig.model import Skeleton, rest_motion

    tail = Skeleton("tail", ("base", "mid", "tip"), (-1, 0, 1), ((0, 1, 0), (0, 0, -0.5), (0, 0, -0.5)))
    tail_path = tmp_path / "tail.glb"
    tail_path.write_bytes(glb.encode(rest_motion(tail)))
    result = run_cli("retarget", clip, "--target", tail_path, "-o", output)
    assert result.returncode == 1
    assert result.stderr == ("{}: no humanoid legs and arms found (missing thigh_l, calf_l, upperarm_l, lowerarm_l, "
                             "thigh_r, calf_r, upperarm_r, lowerarm_r); bone names tried: Unreal, Mixamo, Blender/Rigify, "
                             "CMU, Quaternius, CesiumMan, Kenney, VRM, Left/Right words\n").format(tail_path)
    # A source the mapping does not know: a motion on the tail.
    source = tmp_path / "tail_motion.glb"
    source.write_bytes(glb.encode(rest_motion(tail, 3)))
    result = run_cli("retarget", source, "--target", "mannequin", "-o", output)
    assert result.returncode == 1
    assert result.stderr == "{}: joints match no Kimodo skeleton (read a rig as a retarget target instead)\n".format(source)
    # Unknown built-in and wrong output type.
    result = run_cli("retarget", clip, "--target", "hero", "-o", output)
    assert result.stderr == "hero: no such file, and not a built-in target (mannequin, mixamo)\n"
    result = run_cli("retarget", clip, "--target", "mannequin", "-o", tmp_path / "out.usd")
    assert result.stderr == "{}: retarget writes .glb, .fbx or .bvh, not '.usd'\n".format(tmp_path / "out.usd")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["no_skin.gltf", "tail.glb", "tail_motion.glb"]


def test_cli_prints_the_report_it_writes(tmp_path):
    output = tmp_path / "walk_ue.glb"
    report = tmp_path / "walk.json"
    result = run_cli("retarget", CLIPS / "g1_01_single_text_prompt", "--target", "mannequin", "-o", output, "--report", report)
    assert result.returncode == 0, result.stderr
    record = json.loads(report.read_text())
    lines = result.stdout.splitlines()
    assert lines[0] == "walk_ue: G1, 34 joints"
    assert lines[1] == "  5 chains mapped, {} left at rest (Root, Neck, ...)".format(len(record["left_at_rest"]))
    assert lines[3].startswith("  arms match {:.3f} (worst {})".format(record["arms_match"], record["arms_match_worst_bone"]))
    assert record["duration_s"] == pytest.approx(149 / 30, abs=0.01)


def test_rigify_metarig_is_a_target_and_blender_reads_our_output_as_we_wrote_it(tmp_path):
    """One Blender process: Rigify's human metarig (A-pose, .L/.R) exported to GLB serves as the target;
    Blender imports our output and its bones point where ours do."""
    from conftest import run_blender

    result = run_blender("retarget_rigify.py", CLIPS / "soma_03_full_body_keyframes", tmp_path)
    assert result["metarig_bones"] == 159
    assert 20 < result["upperarm_droop_deg"] < 60  # an A-pose, measured in Blender
    assert result["thigh"] == "thigh.L" and result["head"] == "spine.006"
    assert result["compared"] > 500 and result["frames"] >= 20
    assert result["worst_cosine"] >= 0.999
    assert result["report"]["arms_match"] >= 0.98 and result["report"]["limb_cosine_mean"] >= 0.99
    assert result["report"]["chains_mapped"] == 9


def test_bvh_in_and_out_and_a_bvh_rig_as_target(tmp_path):
    from bvh_judge import BvhFile

    # .bvh output on the Mixamo rig, judged by a numpy BVH parser.
    clip = "soma_03_full_body_keyframes"
    output = tmp_path / "pick_mixamo.bvh"
    assert cli.main(["retarget", str(CLIPS / clip), "--target", "mixamo", "-o", str(output)]) == 0
    bvh = BvhFile(output)
    positions = bvh.positions(0.01)  # written in centimetres
    names = {n: i for i, n in enumerate(bvh.names)}
    source = source_positions(clip)
    cosines = []
    for segment, table in SEGMENTS.items():
        sa, sb = table["soma"]
        ta, tb = table["mixamo"]
        s = source[sb] - source[sa]
        t = positions[:, names[tb]] - positions[:, names[ta]]
        cosines.append(np.mean(np.sum(s * t, -1) / np.linalg.norm(s, axis=-1) / np.linalg.norm(t, axis=-1)))
    assert min(cosines) >= 0.99
    binds = bind_worlds(ROOT / "kimodo_rig" / "rigs" / "mpfb2_mixamo.glb")
    bind_toe = min(binds[n][1, 3] for n in TOES["mixamo"])
    target_low = min(positions[:, names[n], 1].min() for n in TOES["mixamo"])
    source_low = min(source[n][:, 1].min() for n in TOES["soma"])
    assert abs((target_low - bind_toe) - source_low) <= 0.02
    # The CMU BVH rig as a target (a box rig GLB): G1 onto it, standing on y = 0.
    cmu_out = tmp_path / "g1_on_cmu.glb"
    report = tmp_path / "g1_on_cmu.json"
    assert cli.main(["retarget", str(CLIPS / "g1_01_single_text_prompt"), "--target", str(RIGS / "cmu" / "resources_131_01.bvh"),
                     "-o", str(cmu_out), "--report", str(report)]) == 0
    record = json.loads(report.read_text())
    assert record["arms_match"] >= 0.98 and record["chains_mapped"] == 5
    _, worlds, node = gltf_worlds(cmu_out)
    toes = worlds[:, [node["LeftToe"], node["RightToe"]], 1, 3]
    assert -0.05 < toes.min() < 0.05
    # A Kimodo SOMA BVH (77 joints, fingers) as the input: the fingers map too.
    ref = tmp_path / "ref_on_mannequin.json"
    assert cli.main(["retarget", str(ROOT / "tests" / "data" / "reference" / "soma_01_single_text_prompt.bvh"),
                     "--target", "mannequin", "-o", str(tmp_path / "ref.glb"), "--report", str(ref)]) == 0
    record = json.loads(ref.read_text())
    assert record["chains_mapped"] == 19 and record["left_at_rest"] == ["Root"]
    assert record["arms_match"] >= 0.98 and record["limb_cosine_mean"] >= 0.99
    assert validate_gltf(cmu_out, tmp_path / "ref.glb")["ref.glb"]["numErrors"] == 0


def test_a_source_bvh_that_is_no_humanoid_is_refused_naming_the_file(tmp_path):
    tail = tmp_path / "tail.bvh"
    tail.write_text("HIERARCHY\nROOT base\n{\n  OFFSET 0 100 0\n  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation\n"
                    "  JOINT mid\n  {\n    OFFSET 0 0 -50\n    CHANNELS 3 Zrotation Xrotation Yrotation\n"
                    "    End Site\n    {\n      OFFSET 0 0 -50\n    }\n  }\n}\nMOTION\nFrames: 2\nFrame Time: 0.0333333\n"
                    "0 100 0 0 0 0 0 0 0\n0 100 0 0 10 0 0 0 0\n")
    result = run_cli("retarget", tail, "--target", "mannequin", "-o", tmp_path / "out.glb")
    assert result.returncode == 1
    assert result.stderr == ("{}: no humanoid legs and arms found (missing thigh_l, calf_l, upperarm_l, lowerarm_l, thigh_r, "
                             "calf_r, upperarm_r, lowerarm_r); bone names tried: Unreal, Mixamo, Blender/Rigify, CMU, "
                             "Quaternius, CesiumMan, Kenney, VRM, Left/Right words\n").format(tail)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tail.bvh"]


def test_smplx_motion_onto_the_mannequin(tmp_path):
    """No SMPL-X clip exists publicly: a built one, the left elbow bending 0..90 degrees and the right
    shoulder raising the arm, judged with numpy FK from smplx22.json against the output file."""
    from gltf_judge import write_raw_clip

    record = skeleton_record("smplx22")
    names = record["joint_names"]
    frames = 40
    quats = np.zeros((frames, len(names), 4))
    quats[..., 3] = 1.0
    angle = np.linspace(0.0, np.pi / 2, frames)
    quats[:, names.index("left_elbow")] = np.stack([0 * angle, np.sin(angle / 2), 0 * angle, np.cos(angle / 2)], -1)
    quats[:, names.index("right_shoulder")] = np.stack([0 * angle, 0 * angle, -np.sin(angle / 4), np.cos(angle / 4)], -1)
    roots = np.tile([0.0, 0.95, 0.0], (frames, 1))
    roots[:, 2] = np.linspace(0, 1, frames)
    clip = write_raw_clip(tmp_path / "smplx_clip", quats, roots)
    output = tmp_path / "smplx_ue.glb"
    report = tmp_path / "smplx.json"
    assert cli.main(["retarget", str(clip), "--target", "mannequin", "-o", str(output), "--report", str(report)]) == 0
    record_out = json.loads(report.read_text())
    assert record_out["skeleton"] == "SMPL-X" and record_out["chains_mapped"] == 9
    source = forward_kinematics(record["parents"], record["rest_local_offsets_m"], quats, roots)
    _, worlds, node = gltf_worlds(output)
    positions = worlds[:, :, :3, 3]
    for (sa, sb), (ta, tb) in ((("left_elbow", "left_wrist"), ("lowerarm_l", "hand_l")),
                               (("right_shoulder", "right_elbow"), ("upperarm_r", "lowerarm_r")),
                               (("left_hip", "left_knee"), ("thigh_l", "calf_l"))):
        s = source[:, names.index(sb)] - source[:, names.index(sa)]
        t = positions[:, node[tb]] - positions[:, node[ta]]
        cosine = np.sum(s * t, -1) / np.linalg.norm(s, axis=-1) / np.linalg.norm(t, axis=-1)
        assert cosine.min() > 0.995, (sa, cosine.min())


def test_a_character_facing_minus_z_runs_its_own_way(tmp_path):
    """The mannequin turned 180 degrees by a node above its armature: the motion turns with it."""
    gltf = pygltflib.GLTF2().load(str(ROOT / "kimodo_rig" / "rigs" / "mpfb2_game_engine.glb"))
    scene_root = gltf.scenes[0].nodes[0]
    gltf.nodes[scene_root].rotation = [0.0, 1.0, 0.0, 0.0]
    turned = tmp_path / "turned.glb"
    gltf.save_binary(str(turned))
    output = tmp_path / "turned_run.glb"
    clip = "soma_01_single_text_prompt"
    assert cli.main(["retarget", str(CLIPS / clip), "--target", str(turned), "-o", str(output)]) == 0
    _, worlds, names = gltf_worlds(output)
    positions = worlds[:, :, :3, 3]
    source = source_positions(clip)
    half_turn = np.diag([-1.0, 1.0, -1.0])
    for segment in ("upperarm_l", "lowerarm_r", "thigh_l", "calf_r"):
        sa, sb = SEGMENTS[segment]["soma"]
        ta, tb = SEGMENTS[segment]["mannequin"]
        s = (source[sb] - source[sa]) @ half_turn.T
        t = positions[:, names[tb]] - positions[:, names[ta]]
        assert np.mean(np.sum(s * t, -1) / np.linalg.norm(s, axis=-1) / np.linalg.norm(t, axis=-1)) > 0.99, segment
    pelvis = positions[:, names["pelvis"]]
    assert source["Hips"][-1, 2] - source["Hips"][0, 2] > 3.0 and pelvis[-1, 2] - pelvis[0, 2] < -2.5
    assert 0.7 < pelvis[:, 1].mean() < 1.0


def test_a_foot_mesh_off_its_bones_does_not_turn_the_report_around(tmp_path):
    """Foot meshes 30 cm behind the ankles (as Blender's importer leaves RobotExpressive's): the feet's
    mesh points backwards, the foot bones forwards. The report says so in one warning, measures in the
    bones' facing (the skeleton is what moves: numpy FK of the output agrees), and does not call a good
    retarget a backwards walk with bad arms."""
    import rig_variants as rv

    toes = {"ball_l": "foot_l", "ball_r": "foot_r"}  # no toe bones: the mesh says where the toes are

    def leaf_bones(gltf):  # Blender's exporter ends each chain with a `_end` bone along the last bone
        for side in "lr":
            ankle = rv.bind_worlds(gltf)["foot_" + side][:3, 3]
            rv.add_helper_joint(gltf, "foot_{}_end".format(side), "foot_" + side, ankle + (0.0, -0.05, 0.15))

    rig = rv.variant(rv.MANNEQUIN, tmp_path, "feet_back.glb", lambda g: rv.drop_joints(g, toes, toes), leaf_bones,
                     lambda g: rv.feet_mesh_moved(g, ["foot_l", "foot_r"], (0.0, 0.0, -0.3)))
    output = tmp_path / "feet_back_run.glb"
    clip = "soma_01_single_text_prompt"
    result = run_cli("retarget", CLIPS / clip, "--target", rig, "-o", output, "--report", tmp_path / "report.json")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["facing"] == "+Z" and report["arms_match"] >= 0.99, report
    assert report["facing_warning"] == ("the feet's mesh points -Z but the foot bones +Z (a mesh off its bones?): "
                                        "facing taken from the bones")
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: {}: {}".format(output.name, report["facing_warning"])], result.stderr
    _, worlds, names = gltf_worlds(output)
    positions = worlds[:, :, :3, 3]
    source = source_positions(clip)
    for segment in ("upperarm_l", "lowerarm_r", "thigh_l", "calf_r"):
        sa, sb = SEGMENTS[segment]["soma"]
        ta, tb = SEGMENTS[segment]["mannequin"]
        s, t = source[sb] - source[sa], positions[:, names[tb]] - positions[:, names[ta]]
        assert np.mean(np.sum(s * t, -1) / np.linalg.norm(s, axis=-1) / np.linalg.norm(t, axis=-1)) > 0.99, segment
    # The same rig with its feet where they belong: no warning, the same facing.
    toeless = rv.variant(rv.MANNEQUIN, tmp_path, "toeless.glb", lambda g: rv.drop_joints(g, toes, toes), leaf_bones)
    plain = run_cli("retarget", CLIPS / clip, "--target", toeless, "-o", tmp_path / "plain.glb")
    assert plain.returncode == 0 and "warning" not in plain.stderr, plain.stderr


def test_loose_bones_beside_the_armature_are_left_alone(tmp_path):
    """A skin whose joints form two trees (the robot's IK pole target moved out of the armature): the
    largest tree is the character, with a warning."""
    gltf = pygltflib.GLTF2().load(str(ROBOT))
    pole = next(i for i, n in enumerate(gltf.nodes) if n.name == "PoleTargetL")
    parent = next(i for i, n in enumerate(gltf.nodes) if pole in (n.children or []))
    gltf.nodes[parent].children = [c for c in gltf.nodes[parent].children if c != pole]
    gltf.scenes[0].nodes.append(pole)
    loose = tmp_path / "loose.glb"
    gltf.save_binary(str(loose))
    output = tmp_path / "loose_run.glb"
    result = run_cli("retarget", CLIPS / "soma_02_multi_text_prompt", "--target", loose, "-o", output)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ("warning: {0}: the skin's joints form 2 separate trees; the largest (42 joints, from Bone) "
                             "is the character\n"
                             "warning: {0}: saved in another pose than its bind pose (Index2R 3.05 m off its bind place); "
                             "the bind pose (from the inverse bind matrices) is the rest\n").format(loose)
    assert validate_gltf(output)[output.name]["numErrors"] == 0
    arms, limbs, floor, _, _, _ = judge("soma_02_multi_text_prompt", "robot", output)
    assert arms >= 0.98 and limbs >= 0.97 and abs(floor[0]) <= 0.02


def test_bones_nothing_drives_are_written_at_their_bind_pose(tmp_path):
    """The file may be saved in any frame: turn the robot's IK pole target away from its bind pose in the
    file; in the output it is back at its bind pose (from the inverse bind matrices)."""
    gltf = pygltflib.GLTF2().load(str(ROBOT))
    pole = next(i for i, n in enumerate(gltf.nodes) if n.name == "PoleTargetL")
    gltf.nodes[pole].translation = [0.5, 0.5, 0.5]
    gltf.nodes[pole].rotation = [0.0, 0.7071068, 0.0, 0.7071068]
    posed = tmp_path / "posed.glb"
    gltf.save_binary(str(posed))
    output = tmp_path / "posed_run.glb"
    assert cli.main(["retarget", str(CLIPS / "g1_01_single_text_prompt"), "--target", str(posed), "-o", str(output)]) == 0
    _, worlds, names = gltf_worlds(output)
    bind = bind_worlds(ROBOT)["PoleTargetL"]
    assert np.abs(worlds[:, names["PoleTargetL"]] - bind).max() < 1e-4
