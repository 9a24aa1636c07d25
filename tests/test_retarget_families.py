"""`kimodo-rig map` and `kimodo-rig retarget` onto the rig FAMILIES users bring most, built the way their
exporters write them (tests/rig_variants.py: a Rigify generated rig with all its bones, the UE5
mannequin's twist and IK bones, Character Creator / iClone, Daz Genesis 8 and 9, Mixamo's other
prefixes and none, Unity's humanoid names, 3ds Max Biped, Auto-Rig Pro's export). The printed map must name the family's deform chain part for
part (never an ORG- copy, a control, an IK bone or a twist segment); the retarget is judged from the
written file by numpy skinning and FK (tests/feet_judge.judge_case through benchmarks/sweep_variants:
limb cosine >= 0.99 SOMA / 0.97 G1 per limb in the character's frame, planted soles within 1 cm of the
rest floor, skate <= 0.15 cm a frame per 1.7 m, every report number within the judge's tolerance, no
warning line, no traceback)."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import numpy as np
import pytest

import rig_variants as rv
from conftest import ROOT, run_cli
from feet_judge import Skinned, _height
from gltf_judge import Glb
from kimodo_rig.retarget import character, mapping

sys.path.insert(0, str(ROOT / "benchmarks"))
import sweep_variants as sweep  # noqa: E402

SOMA_CLIP = "soma_03_full_body_keyframes"
G1_CLIP = "g1_02_multi_text_ee_constraint"
TRUNK = ("hips", "spine_0", "spine_1", "spine_2", "spine_3", "spine_4", "neck_0", "neck_1", "head")

# family -> (base rig, builder, the trunk's expected bones, the base's limb and finger bone -> the family's name)
FAMILIES = {
    "rigify": (rv.MANNEQUIN, rv.rigify_like,
               ["DEF-spine", "DEF-spine.001", "DEF-spine.002", "DEF-spine.003", "", "", "DEF-spine.004", "DEF-spine.005",
                "DEF-spine.006"], rv.RIGIFY_NAMES),
    "ue5": (rv.MANNEQUIN, rv.ue5_like, ["pelvis", "spine_01", "spine_02", "spine_03", "spine_04", "spine_05", "neck_01",
                                        "neck_02", "head"], {}),
    "character_creator": (rv.MANNEQUIN, rv.character_creator_like,
                          ["CC_Base_Hip", "CC_Base_Waist", "CC_Base_Spine01", "CC_Base_Spine02", "", "", "CC_Base_NeckTwist01",
                           "CC_Base_NeckTwist02", "CC_Base_Head"], rv.CC_NAMES),
    "daz_genesis8": (rv.MANNEQUIN, rv.daz_genesis8_like,
                     ["hip", "abdomenLower", "abdomenUpper", "chestLower", "chestUpper", "", "neckLower", "neckUpper", "head"],
                     rv.DAZ_NAMES),
    "daz_genesis9": (rv.MANNEQUIN, rv.daz_genesis9_like,
                     ["hip", "spine1", "spine2", "spine3", "spine4", "", "neck1", "neck2", "head"], rv.DAZ9_NAMES),
    "mixamorig1": (rv.MIXAMO, rv.mixamo_prefix("mixamorig1:"), None, lambda n: n.replace("mixamorig:", "mixamorig1:")),
    "mixamorig2": (rv.MIXAMO, rv.mixamo_prefix("mixamorig2:"), None, lambda n: n.replace("mixamorig:", "mixamorig2:")),
    "mixamo_no_prefix": (rv.MIXAMO, rv.mixamo_prefix(""), None, lambda n: n.replace("mixamorig:", "")),
    "unity_humanoid": (rv.MIXAMO, rv.unity_humanoid_like, None,
                       lambda n: rv.UNITY_NAMES.get(n.replace("mixamorig:", ""), n)),
    "rigify_split": (rv.MANNEQUIN, rv.rigify_split_like,
                     ["ORG-spine", "ORG-spine.001", "ORG-spine.002", "ORG-spine.003", "", "", "ORG-spine.004", "",
                      "ORG-spine.006"], rv.RIGIFY_NAMES),
    "auto_rig_pro": (rv.MANNEQUIN, rv.auto_rig_pro_like, ["root.x", "spine_01.x", "spine_02.x", "spine_03.x", "", "",
                                                          "neck.x", "", "head.x"], rv.ARP_NAMES),
    "biped": (rv.MANNEQUIN, rv.biped_like, ["Bip01 Pelvis", "Bip01 Spine", "Bip01 Spine1", "Bip01 Spine2", "", "",
                                            "Bip01 Neck", "", "Bip01 Head"], rv.BIPED_NAMES),
}


def expected_map(family: str) -> dict:
    """The base rig's automatic map with each bone under the family's name, the trunk as listed."""
    base, _, trunk, names = FAMILIES[family]
    base_map = json.loads(run_cli("map", base, "--json").stdout)
    rename = names if callable(names) else lambda n: names.get(n, n)
    expected = {part: rename(bone) for part, bone in base_map.items() if trunk is None or part not in TRUNK}
    if trunk is not None:
        expected.update({part: bone for part, bone in zip(TRUNK, trunk) if bone})
    return mapping.in_printed_order(expected)


def _build(family: str, folder: Path) -> Path:
    base, builder, _, _ = FAMILIES[family]
    return rv.variant(base, folder, family + ".glb", builder)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_map_names_the_familys_deform_chain(tmp_path, family):
    rig = _build(family, tmp_path)
    result = run_cli("map", rig, "--json")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert json.loads(result.stdout) == expected_map(family)
    assert sweep.VARIANTS[family].base == FAMILIES[family][0]  # the sweep judges the same family


def test_rigify_maps_its_deform_bones_without_a_mesh_too(tmp_path):
    """Blender's add-on and a BVH know no skin weights: the DEF- prefix alone picks the deform chain."""
    target = character.read_gltf_target(_build("rigify", tmp_path))
    with_mesh = mapping.parts_by_name(character.map_target(target))
    assert mapping.parts_by_name(mapping.map_humanoid(target.skeleton, "rigify")) == with_mesh
    assert all(bone.startswith("DEF-") for bone in with_mesh.values())


@pytest.fixture(scope="module")
def sweep_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("families")


# Bones that must keep their bind relation to another in every frame of the output: Rigify's DEF- fingers
# (off the ORG- hand) to the DEF- hand they skin beside; the split rig's skinned DEF- spine to its ORG- twin.
RIDES_WITH = {
    "rigify": [("DEF-{}.01.{}".format(f, s), "DEF-hand." + s) for s in "LR" for f in ("thumb", "f_index", "f_pinky")],
    "rigify_split": [("DEF-spine" + k, "ORG-spine" + k) for k in ("", ".001", ".002", ".003", ".004", ".006")],
}


@pytest.mark.parametrize("clip", [SOMA_CLIP, G1_CLIP])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_retarget_onto_the_family_meets_the_bars(sweep_folder, family, clip):
    record = sweep.run_pair(clip, family, sweep_folder)
    assert record["problems"] == [], "{}\n{}".format(record["problems"], "\n".join(record["stderr"]))
    if family in RIDES_WITH:
        glb = Glb(sweep_folder / "{}__{}.glb".format(clip, family))
        world = glb.animated_world_matrices()
        index = {node.name: k for k, node in enumerate(glb.gltf.nodes)}
        for bone, other in RIDES_WITH[family]:
            relation = np.linalg.inv(world[:, index[other]]) @ world[:, index[bone]]
            moved = world[:, index[other], :3, 3] - world[0, index[other], :3, 3]
            assert np.abs(moved).max() > 0.05  # the reference bone moves in the clip
            assert np.abs(relation - relation[0]).max() < 1e-4, (bone, other)


# A skin whose joints form several trees, as found in characters people download: the mesh's tree is the
# character (not the largest: Paladin's unskinned control rig outnumbers its Mixamo bones), and the trees
# that carry vertices off the armature (Saxon's feet under IK controls, Soldier's helmet slot) come along.
TREES_WARNING = {
    "loose_feet": "the skin's joints form 6 separate trees; the largest (49 joints, from Root) is the character; "
                  "skinned bones off it follow the bone nearest them (FootControl_l from calf_l, FootControl_r from "
                  "calf_r, HelmetSlot from head)",
    "control_rig": "the skin's joints form 2 separate trees; the one its mesh is skinned to (53 joints, from Root) "
                   "is the character",
}


@pytest.mark.parametrize("clip", [SOMA_CLIP, G1_CLIP])
@pytest.mark.parametrize("variant", list(TREES_WARNING))
def test_a_skin_of_several_trees_moves_the_bones_its_mesh_is_skinned_to(sweep_folder, variant, clip):
    record = sweep.run_pair(clip, variant, sweep_folder)
    assert record["problems"] == [], "{}\n{}".format(record["problems"], "\n".join(record["stderr"]))
    rig = sweep_folder / "rigs" / (variant + ".glb")
    assert record["stderr"][0] == "warning: {}: {}".format(rig, TREES_WARNING[variant])
    glb = Glb(sweep_folder / "{}__{}.glb".format(clip, variant))
    world = glb.animated_world_matrices()
    index = {node.name: k for k, node in enumerate(glb.gltf.nodes)}
    if variant == "loose_feet":  # the helmet rides on the head as its constraint held it
        relation = np.linalg.inv(world[:, index["head"]]) @ world[:, index["HelmetSlot"]]
        assert np.abs(world[:, index["head"], :3, 3] - world[0, index["head"], :3, 3]).max() > 0.05
        assert np.abs(relation - relation[0]).max() < 1e-4
    else:  # the controls nothing skins are written as they were
        assert not any(channel.target.node == index["Ctrl_pelvis"] for channel in glb.gltf.animations[0].channels)


@pytest.mark.parametrize("clip", [SOMA_CLIP, G1_CLIP])
def test_feet_in_a_mesh_with_a_skin_of_its_own_stand_on_the_floor(sweep_folder, clip):
    """Exporters that write one skin per mesh (VRoid's body, hair and face; shoes as objects of their own)
    leave the feet's vertices out of the body's skin (`rig_variants.shoes_in_a_skin_of_their_own`: the
    shoes' skin lists the legs' lower joints in another order). The soles come from the shoes: every bar
    is met, judged by numpy skinning of the written file, and the floor figures are the mannequin's own
    (the same vertices, skinned by the other skin) within 0.05 cm."""
    shoes = sweep.run_pair(clip, "shoes_own_skin", sweep_folder)
    assert shoes["problems"] == [], "{}\n{}".format(shoes["problems"], "\n".join(shoes["stderr"]))
    plain = sweep.run_pair(clip, "mannequin", sweep_folder)
    for key in ("lowest_cm", "planted_max_cm", "skate_cm"):
        assert shoes["figures"][key] == pytest.approx(plain["figures"][key], abs=0.05), key


@pytest.mark.parametrize("clip", [SOMA_CLIP, G1_CLIP])
@pytest.mark.parametrize("variant", ["kenney_platformer", "repeated_names"])
def test_rigid_parts_without_a_skin_and_repeated_bone_names_retarget(sweep_folder, variant, clip):
    """Kenney's platformer characters have no skin (rigid parts on nodes, the legs and torso off a `root` at
    the floor): they were refused. Two bones of one name stopped the write (`no node named index_03_r_19`).
    Both now meet every bar, judged by numpy on the written file."""
    record = sweep.run_pair(clip, variant, sweep_folder)
    assert record["problems"] == [], "{}\n{}".format(record["problems"], "\n".join(record["stderr"]))
    glb = Glb(sweep_folder / "{}__{}.glb".format(clip, variant))
    names = [node.name for node in glb.gltf.nodes]
    assert len(set(names)) == len(names)  # every node of the written file names one node
    if variant == "kenney_platformer":
        assert not glb.gltf.skins and json.loads(run_cli("map", sweep_folder / "rigs" / "kenney_platformer.glb",
                                                        "--json").stdout)["hips"] == "torso"
    else:
        apart = [n for n in names if n.startswith("index_03_r_") and not n.endswith("_tip")]
        assert len(apart) == 1 and names.count("index_03_r") == 1
        assert record["stderr"][0].endswith("bone names repeat; the output names the later ones apart: "
                                            "index_03_r as " + apart[0])


@pytest.mark.parametrize("clip", [SOMA_CLIP, G1_CLIP])
def test_end_bones_bound_in_another_space_ride_on_their_parents(sweep_folder, clip):
    """THREE.GLTFExporter's end bones carry inverse bind matrices from the scene where the rest are in
    armature space (a Quaternius knight re-exported from three.js stood its end bones kilometres off and
    failed the write's self-check). They ride on their parents: the retarget meets the bars with one line
    naming them, and the written skin's inverse bind matrices of those bones fit their parents' (read
    with numpy: the relative bind's scale is the node's own, 1), where the file's were 100x."""
    record = sweep.run_pair(clip, "end_bones_robot", sweep_folder)
    assert record["problems"] == [], "{}\n{}".format(record["problems"], "\n".join(record["stderr"]))
    for path in (sweep_folder / "rigs" / "end_bones_robot.glb", sweep_folder / "{}__end_bones_robot.glb".format(clip)):
        glb = Glb(path)
        joints = list(glb.gltf.skins[0].joints)
        ibm = glb.accessor(glb.gltf.skins[0].inverseBindMatrices)
        parent = {c: i for i, node in enumerate(glb.gltf.nodes) for c in node.children or []}
        scales = [np.linalg.norm((ibm[joints.index(parent[j])] @ np.linalg.inv(ibm[k]))[:3, :3], axis=0)
                  for k, j in enumerate(joints) if glb.gltf.nodes[j].name.endswith("_end")]
        assert len(scales) == 3  # the feet and the head (the hands are no joints of the skin)
        fits = np.allclose(scales, 1.0, atol=1e-3)
        assert fits == path.name.startswith(clip), (path.name, np.round(scales, 3))  # the rig's do not; ours do


def _lowered(gltf):
    """The whole character 2.37 m under its scene's origin (as Blender imports RobotExpressive)."""
    m = np.eye(4)
    m[1, 3] = -2.37
    rv._transform_scene(gltf, m)


@pytest.mark.parametrize("base, builders, hips", [
    (rv.MANNEQUIN, (rv.kenney_platformer_like,), "torso"), (rv.MANNEQUIN, (rv.kenney_platformer_like, _lowered), "torso"),
    (rv.ROBOT, (), "Body"), (rv.ROBOT, (_lowered,), "Body")])
def test_a_root_at_the_floor_is_not_the_hips_wherever_the_character_stands(tmp_path, base, builders, hips):
    """The bone that carries the legs is the hips unless it stands at the floor (Kenney's `root`), measured
    from the character's own lowest joint: RobotExpressive's `Body` (its hips, the thighs' parent) stayed the
    hips only while the file stood at the scene's origin (Blender's import, 2.37 m lower, made `Hips` its
    hips and put the thighs under it)."""
    rig = rv.variant(base, tmp_path, "rig.glb", *builders)
    assert json.loads(run_cli("map", rig, "--json").stdout)["hips"] == hips


def _hat_off_the_root(gltf):
    """The mannequin's top of the head skinned to a `hat` bone under Root, beside the body."""
    rv.add_controls(gltf, [("hat", "Root", "head")])
    height = rv.world_matrices(gltf)[rv.node_index(gltf, "head")][1, 3] + 0.08
    rv.move_weights(gltf, "head", "hat", lambda p: p[:, 1] > height)


def test_skinned_bones_nothing_drives_get_one_line_naming_them(tmp_path):
    rig = rv.variant(rv.MANNEQUIN, tmp_path, "hat.glb", _hat_off_the_root)
    mapped = run_cli("map", rig)
    lines = mapped.stderr.splitlines()
    assert mapped.returncode == 0 and len(lines) == 1, mapped.stderr
    assert "1 skinned bone outside the bones the map drives (the hips pelvis" in lines[0]
    assert lines[0].split(" will not move: ")[1].startswith("hat (")
    output = tmp_path / "hat_out.glb"
    result = run_cli("retarget", ROOT / "tests" / "data" / "npz" / SOMA_CLIP / "motion.npz", "--target", rig, "-o", output)
    assert result.returncode == 0 and output.exists(), result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning")]
    assert len(warnings) == 1 and "will not move: hat" in warnings[0] and "Traceback" not in result.stderr


def _block_legs_judged(output: Path, clip: str) -> dict:
    """Per block leg, the mean cosine of its COLUMN (the leg node's world rotation applied to straight
    down: `kenney_blocks` stands each column straight under its hip, every node's rest rotation the
    identity) with Kimodo's hip-to-ankle line (its posed joints), and the mean of their forward leans'
    difference in degrees. numpy and pygltflib only."""
    import test_feet_judges as tfj

    case = tfj.Case(clip, None, {})
    source, _ = tfj._source(case)
    glb = Glb(output)
    world = glb.animated_world_matrices()
    names = [node.name for node in glb.gltf.nodes]
    figures = {}
    for s, leg in (("l", "leg-left"), ("r", "leg-right")):
        column = world[:, names.index(leg), :3, :3] @ np.array([0.0, -1.0, 0.0])
        frames = min(len(column), len(source["thigh_" + s]))
        line = source["foot_" + s][:frames] - source["thigh_" + s][:frames]
        line /= np.linalg.norm(line, axis=1)[:, None]
        column = column[:frames] / np.linalg.norm(column[:frames], axis=1)[:, None]
        lean = np.degrees(np.arctan2(column[:, 2], -column[:, 1]) - np.arctan2(line[:, 2], -line[:, 1]))
        figures[leg] = (float((column * line).sum(1).mean()), float(lean.mean()))
    return figures


@pytest.mark.parametrize("clip", ["soma_01_single_text_prompt", "g1_01_single_text_prompt"])
def test_block_legs_follow_kimodo_with_their_column_not_their_toe(tmp_path, clip):
    """Kenney's block legs (`rig_variants.kenney_blocks`: the foot reaches as far ahead of the leg as the
    leg is tall) end at a tip guessed from their vertices, at the toe's front. Aimed along Kimodo's
    hip-to-ankle line, that tip leaned every leg back 33 degrees while Kimodo stood (the column's mean
    cosine 0.82), and the report, measuring the same tip, said legs 0.975. The leg's line now ends at its
    ankle (above the sole, under the hip): judged by the column, the legs lean as Kimodo's do (within 5
    degrees on the mean), and the report's legs figure is the judge's. Unlocked the column is Kimodo's line
    to 1e-6; locked, the floor costs the rest (a rigid foot that long dips at one end whenever its leg is
    not upright: the swinging leg is turned up, 0.93-0.97 on these clips; the planted feet's slide is
    not met on every clip of this kind yet, see the issue's note)."""
    rig = rv.kenney_blocks(tmp_path / "blocks.glb")
    out = tmp_path / "blocks_out.glb"
    result = run_cli("retarget", sweep.NPZ / clip / "motion.npz", "--target", rig, "-o", out, "--report", out.with_suffix(".json"))
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    judged = _block_legs_judged(out, clip)
    for leg, (cosine, lean) in judged.items():
        assert abs(lean) <= 5.0 and cosine >= 0.9, (leg, judged)
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["legs_match"] == pytest.approx(min(c for c, _ in judged.values()), abs=0.01), (report["legs_match"], judged)
    names = [node.name for node in Glb(out).gltf.nodes]
    assert "leg-left_ankle" in names and "leg-right_ankle" in names  # the line's end, written as the tips are


def _block_soles(output: Path, rig: Path, clip: str, legs: Optional[dict] = None) -> dict:
    """The block legs' (or `legs`': {"l": bone, "r": bone}, the sole under each) lowest vertex over the
    clip under the rig's rest floor, the same outside Kimodo's contacts (`swinging_cm`), the farthest a
    planted leg's lowest vertex is from that floor in Kimodo's contact frames (cm, the character's own
    size) and their planted slide (tests/one_bone_judge.py): numpy placement of the legs' vertices by
    the written nodes' world matrices, no kimodo_rig."""
    import one_bone_judge
    import test_feet_judges as tfj
    from feet_judge import Skinned, _carried_by, _descendants, _node_world_static

    contacts = tfj._source(tfj.Case(clip, None, {}))[1]
    source = Skinned(rig)
    legs = legs or {"l": "leg-left", "r": "leg-right"}
    static = _node_world_static(source.glb)[None]
    floor = min(source.skin(static, _carried_by(source, _descendants(source.glb, leg)))[0][:, 1].min() for leg in legs.values())
    written = Skinned(output)
    world = written.glb.animated_world_matrices()
    lowest = {s: written.skin(world, _carried_by(written, _descendants(written.glb, leg)))[..., 1].min(axis=1) - floor
              for s, leg in legs.items()}
    frames = min(len(contacts), len(lowest["l"]))
    on = {s: contacts[:frames, 2 * k] | contacts[:frames, 2 * k + 1] for k, s in enumerate("lr")}
    planted = np.concatenate([lowest[s][:frames][on[s]] for s in "lr"])
    return {"lowest_cm": 100.0 * min(lowest[s].min() for s in legs), "planted_cm": 100.0 * float(np.abs(planted).max()),
            "swinging_cm": 100.0 * min(lowest[s][:frames][~on[s]].min(initial=np.inf) for s in legs),  # inf: no swing
            "skate_cm": one_bone_judge.sole_slide(output, rig, legs, contacts)["skate_cm"]}


@pytest.mark.parametrize("clip", ["soma_01_single_text_prompt", "soma_03_full_body_keyframes", "soma_04_ee_constraint",
                                  "g1_02_multi_text_ee_constraint", "g1_04_ee_constraint"])
def test_planted_block_soles_stand_on_the_floor(tmp_path, clip):
    """Each planted block leg (`kenney_blocks`) is turned about its hip onto its pin, which tilts the block
    onto another point of its sole; with both planted the hips' reach of the two pins is solved with
    misses allowed. The planted soles stood 1.4-1.8 cm per 1.7 m under the floor on these clips (bar: 1).
    What the pins and turns leave the hips now take last, rising and rolling: every planted sole's lowest
    vertex within 1 cm per 1.7 m of the rest floor and nothing 2 cm under it (numpy skinning of the
    written file, tests/one_bone_judge.py). Where the turn tilts the block onto a point of its sole lower
    than the pinned one, the foot rocks onto that point: pinned on the other end, the planted soles slid
    0.19 (g1_04) and 0.27 (soma_04) cm a frame per 1.7 m; now <= 0.15."""
    from feet_judge import Skinned, _height

    rig = rv.kenney_blocks(tmp_path / "blocks.glb")
    out = tmp_path / "blocks_out.glb"
    result = run_cli("retarget", sweep.NPZ / clip / "motion.npz", "--target", rig, "-o", out)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    judged = _block_soles(out, rig, clip)
    per_17 = 1.7 / _height(Skinned(rig))
    assert judged["planted_cm"] * per_17 <= 1.0 and judged["lowest_cm"] * per_17 >= -2.0, (judged, per_17)
    assert judged["skate_cm"] * per_17 <= 0.15, (judged, per_17)


def test_parallel_block_legs_planted_together_do_not_drop_the_hips_through_the_floor(tmp_path):
    """Two block legs planted about as far apart as their hips are near parallel: the hips' least move
    that lets both reach their pins is then a point on a circle that dips through the floor, and the
    solve took it (soma_06 on `kenney_blocks`: the hips 26 cm down on 20 cm legs for three frames, the
    soles 25.6 cm under the floor; the planted soles slid 0.38 cm a frame). Such a move is now refused
    below ONE_BONE_LOWEST_HIP of the leg over its pin and the legs turn onto their pins instead: no sole
    goes more than a quarter of the leg under the floor, and the planted soles slide less than 0.15 cm a
    frame (at the character's own size; the floor's bars per 1.7 m are held by the test above)."""
    rig = rv.kenney_blocks(tmp_path / "blocks.glb")
    out = tmp_path / "blocks_out.glb"
    clip = "soma_06_root_waypoints"
    result = run_cli("retarget", sweep.NPZ / clip / "motion.npz", "--target", rig, "-o", out)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    judged = _block_soles(out, rig, clip)
    assert judged["lowest_cm"] >= -100.0 * rv.BLOCK_LEG / 4.0 and judged["skate_cm"] <= 0.15, judged


@pytest.mark.parametrize("clip", ["soma_02_multi_text_prompt", "soma_06_root_waypoints", "soma_07_mixed_constraints"])
def test_a_swinging_block_leg_keeps_kimodos_line_and_clears_the_floor(tmp_path, clip):
    """A rigid leg whose foot is as long as the leg (`kenney_blocks`) swinging past the standing one
    dips a sole end under the floor whichever way it leans. It was turned only about its lean's axis,
    which does not pass through hanging straight (its sole level, its highest) when the leg is also
    rolled, and the frames eased in beside a turned one could undo its turn: its sole went 4.7 cm
    (soma_02) and 5.0 cm (soma_07) under a 20 cm leg's floor. Turned towards hanging straight, the
    columns still left Kimodo's lines by tens of degrees for a millimetre under the floor (the worst leg's
    mean cosine 0.9944 on soma_02, 0.9961 on soma_06, 0.9904 on soma_07; each turn a pop of 36-39 deg).
    The hip is now hiked over the swinging leg instead (one_bone._stand_on_the_floor): each column within
    0.998 of Kimodo's line on the mean (0.9996 or better), its forward lean within 2 deg of it, and no
    sole 2 cm per 1.7 m under the floor (issue 8's bar; 0.4 at worst)."""
    from feet_judge import Skinned, _height

    rig = rv.kenney_blocks(tmp_path / "blocks.glb")
    out = tmp_path / "blocks_out.glb"
    result = run_cli("retarget", sweep.NPZ / clip / "motion.npz", "--target", rig, "-o", out)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    judged = _block_soles(out, rig, clip)
    assert judged["lowest_cm"] * 1.7 / _height(Skinned(rig)) >= -2.0, judged
    for leg, (cosine, lean) in _block_legs_judged(out, clip).items():
        assert abs(lean) <= 2.0 and cosine >= 0.998, (leg, cosine, lean)


@pytest.mark.parametrize("clip", ["soma_02_multi_text_prompt", "soma_07_mixed_constraints"])
def test_a_swinging_block_leg_the_hips_do_not_lift_still_clears_the_floor(tmp_path, monkeypatch, clip):
    """The last resort (`one_bone._clear_the_floor`): where the hips' lift leaves a swinging rigid sole
    under the floor, the leg swings up about its hip. On the shared clips the lift leaves nothing for it,
    so here the lift is taken away (`_stand_on_the_floor` lifts nothing) and the written file is judged
    as above (numpy, no kimodo_rig): no swinging sole more than 1 mm under the floor of a 0.75 m
    character (ONE_BONE_SETTLED of its joints' height, 0.65 mm, counts as on it; 0.64 mm at worst
    here). Without the last resort the soles went 9.3 (soma_02) and 6.4 mm (soma_07) under."""
    from kimodo_rig.cli import main
    from kimodo_rig.retarget import one_bone

    monkeypatch.setattr(one_bone, "_stand_on_the_floor", lambda tmap, soles, sides, planted, poses, *rest: [0.0] * len(poses))
    rig = rv.kenney_blocks(tmp_path / "blocks.glb")
    out = tmp_path / "blocks_out.glb"
    assert main(["retarget", str(sweep.NPZ / clip / "motion.npz"), "--target", str(rig), "-o", str(out)]) == 0
    judged = _block_soles(out, rig, clip)
    assert judged["swinging_cm"] >= -0.1, judged


def test_parallel_block_legs_pinned_a_little_apart_do_not_send_the_hips_off():
    """Two parallel rigid legs (`kenney_blocks` standing in soma_04) whose pins are 1.6 cm ahead of one
    foot and 1.2 cm behind the other: no move of the hips brings both (it moves both feet alike), and the
    least move that made both legs' lengths fit anyway took the hips 9.5 cm forward and 4 cm up: the
    left sole stood 2 cm over the floor (4.6 cm per 1.7 m) for a second. The hips' move now weighs more
    against the pins' misses (ONE_BONE_STIFFNESS): it stays within twice the pins' offsets and the legs'
    turns take the rest. Exercised on `one_bone._least_reaching_move` with legs built here (hip to pin,
    the leg's length from hip to the pinned point as posed)."""
    from kimodo_rig.retarget import one_bone

    def leg(hip, posed, pin):
        return tuple(p - h for p, h in zip(pin, hip)), float(np.linalg.norm(np.subtract(posed, hip)))

    legs = [leg((0.1, 0.2, 0.0), (0.1, 0.0, 0.14), (0.1, 0.0, 0.156)), leg((-0.1, 0.2, 0.0), (-0.1, 0.0, 0.14), (-0.1, 0.0, 0.128))]
    move = one_bone._least_reaching_move(legs, one_bone.ONE_BONE_STIFFNESS)
    assert np.linalg.norm(move) <= 2 * 0.016, move


@pytest.mark.parametrize("clip", ["soma_02_multi_text_prompt", "soma_03_full_body_keyframes", "soma_06_root_waypoints",
                                  "g1_02_multi_text_ee_constraint"])
def test_rigid_legs_hike_the_hips_rather_than_leave_a_foot_under_the_floor(tmp_path, clip):
    """Kimodo rolls its hips for legs whose knees bend. On one-bone legs (`kenney_blocks`: hips wider
    apart than the legs are long) that roll took one planted foot under the floor and held the other
    above it (soma_03's lunge: 7.5 cm under and 26 cm over per 1.7 m, the legs' columns 0.966 against
    Kimodo's lines), and the swinging leg, unable to fold, was turned off Kimodo's line to clear the floor
    (soma_02 0.967, sole 2.8 cm under a 20 cm leg's floor). The hips' roll is now the rigid legs': level,
    hiked on a swinging leg's side, rolled so both planted soles stand equally low (exactly: eased with
    the hike before it, a landing took the hips down until the other sole sank, soma_06 3.4 cm per 1.7
    m). Judged by numpy on the written file: both columns within 0.99 of Kimodo's lines, no sole 2 cm
    under the floor and no planted one 2 cm off it (per 1.7 m)."""
    rig = rv.kenney_blocks(tmp_path / "blocks.glb")
    out = tmp_path / "blocks_out.glb"
    result = run_cli("retarget", sweep.NPZ / clip / "motion.npz", "--target", rig, "-o", out)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    per_1_7_m = 1.7 / _height(Skinned(rig))
    soles = _block_soles(out, rig, clip)
    assert soles["lowest_cm"] * per_1_7_m >= -2.0 and soles["planted_cm"] * per_1_7_m <= 2.0, soles
    for leg, (cosine, lean) in _block_legs_judged(out, clip).items():
        assert cosine >= 0.99, (leg, cosine, lean)


def test_a_rigid_foot_stands_on_its_lower_end_whatever_kimodo_s_heel_and_toe_say(tmp_path):
    """A block leg's foot cannot bend at its ball. At a heel strike in g1_01 Kimodo's toe alone is down
    while the block (`kenney_blocks`) is still pitched toes up: its front was pinned 9 cm over the floor,
    then the pin jumped between the sole's ends frame by frame (Kimodo's heel and toe flags flicker), 2.5
    cm at a switch: the planted soles slid 0.18 cm a frame per 1.7 m. The foot now stands on whichever end
    is lower while it is planted: judged by numpy on the written file (tests/one_bone_judge.py), the
    planted soles slide at most 0.15 cm a frame and nothing goes 2 cm under the floor (per 1.7 m)."""
    rig = rv.kenney_blocks(tmp_path / "blocks.glb")
    out = tmp_path / "blocks_out.glb"
    clip = "g1_01_single_text_prompt"
    result = run_cli("retarget", sweep.NPZ / clip / "motion.npz", "--target", rig, "-o", out)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    per_1_7_m = 1.7 / _height(Skinned(rig))
    soles = _block_soles(out, rig, clip)
    assert soles["skate_cm"] * per_1_7_m <= 0.15 and soles["lowest_cm"] * per_1_7_m >= -2.0, soles


@pytest.mark.parametrize("clip", ["soma_01_single_text_prompt", "soma_04_ee_constraint"])
def test_a_shin_with_no_foot_bone_stands_on_the_foot_it_carries(tmp_path, clip):
    """A shin that is a leaf bone, its foot's mesh skinned to it (the mannequin with its foot bones
    dropped, `rig_variants.drop_joints`): the leg ends at a tip no vertex follows, so the retarget found
    no sole and stood the character on that tip, and the report measured the floor there too. Judged by
    numpy skinning of the written file, the soles went 6-27 cm per 1.7 m under the floor over the shared
    clips (9.1 on soma_01) while the report said 0. The shin's own vertices now carry the sole: nothing
    2 cm under the floor, the planted soles within 1 cm of it and sliding at most 0.15 cm a frame (per
    1.7 m, at the sole's vertices on the floor: the foot rocks with its shin), the report's lowest point
    the judge's within its tolerance."""
    import test_feet_judges as tfj

    rig = rv.variant(rv.MANNEQUIN, tmp_path, "footless.glb", rv.footless_shins)
    out = tmp_path / "footless_out.glb"
    result = run_cli("retarget", sweep.NPZ / clip / "motion.npz", "--target", rig, "-o", out, "--report", out.with_suffix(".json"))
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    per_1_7_m = 1.7 / _height(Skinned(rig))
    soles = _block_soles(out, rig, clip, {"l": "calf_l", "r": "calf_r"})
    assert soles["lowest_cm"] * per_1_7_m >= -2.0 and soles["planted_cm"] * per_1_7_m <= 1.0, soles
    assert soles["skate_cm"] * per_1_7_m <= 0.15, soles
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["lowest_toe_cm"] == pytest.approx(soles["lowest_cm"], abs=tfj.TOLERANCE["lowest_toe_cm"] / per_1_7_m), report


@pytest.mark.parametrize("clip", ["soma_05_root_path", "g1_04_ee_constraint", "g1_02_multi_text_ee_constraint",
                                  "raw:g1_02_multi_text_ee_constraint"])
def test_a_sole_the_shin_carries_rolls_on_the_floor_rather_than_slides(sweep_folder, clip):
    """A shin with no foot bone carries its foot's mesh, so the foot cannot keep its rotation: pinned by
    its ankle, the sole swung about the ankle as the shin pitched through a step, and the point on the
    floor slid 0.3-0.7 cm a frame; over soma_05 and g1_04 the planted soles slid 0.19 cm a frame per 1.7 m.
    The lock now keeps the point the sole stood on the frame before where it stood, so the sole rolls
    over its points as a rocker does (`lock._rock`). Rolled wholly, G1's kneel (g1_02, the foot behind on
    its toes) folded the leg about the foot it cannot bend, and its shin lost 0.04 of its mean cosine: the
    roll gives way past ROLL_TURN. Into and out of that kneel Kimodo's ankle rises 10 -> 38 cm while its
    toe stays down; the rocking left the kneeling sole 8.1 cm over the floor (per 1.7 m: 8.3) until what
    it leaves was turned down about the knee and held where it stood (`lock._press_soles`). The raw clip
    has no contacts of its own (the lock and the judge label them by Kimodo's rule). Judged by numpy
    skinning of the written file (the sweep's judge), per 1.7 m: planted soles within 1 cm of the floor,
    nothing 2 cm under it, sliding at most 0.15 cm a frame, every limb at the bar (0.99 SOMA, 0.97 G1)."""
    record = sweep.run_pair(clip, "footless_shins", sweep_folder)
    figures = record["figures"]
    per_1_7_m = 1.0 / figures["scale"]
    assert figures["skate_cm"] * per_1_7_m <= 0.15, figures
    assert figures["limb_cosine_min_segment"] >= (0.97 if "g1_" in clip else 0.99), figures
    assert figures["planted_max_cm"] * per_1_7_m <= 1.0 and figures["lowest_cm"] * per_1_7_m >= -2.0, figures
    assert record["problems"] == [], "{}\n{}".format(record["problems"], "\n".join(record["stderr"]))


@pytest.mark.parametrize("clip", ["soma_03_full_body_keyframes", "raw:soma_03_full_body_keyframes"])
def test_a_small_shin_with_no_foot_bone_saved_posed_crouches_on_the_floor(sweep_folder, clip):
    """The footless-shin mannequin at 0.3x, saved in another pose (sweep variant footless_posed_small).
    Crouching in soma_03 its left sole floated 1.19 cm per 1.7 m (raw: 1.23) on frames 62-66, while at
    full size it stays within 0.44: the solve grounded each frame by Kimodo's lowest foot joint in
    Kimodo's metres, not the character's (tests/test_retarget_scale.py holds the size itself). Judged by
    numpy skinning of the written file (the sweep's judge): every bar met, only the posed warning."""
    record = sweep.run_pair(clip, "footless_posed_small", sweep_folder)
    assert record["problems"] == [], "{}\n{}".format(record["problems"], "\n".join(record["stderr"]))


@pytest.mark.parametrize("clip", ["soma_05_root_path", "g1_04_ee_constraint"])
def test_a_shin_with_no_foot_bone_facing_back_with_viewer_side_names_walks_forward(sweep_folder, clip):
    """The footless-shin mannequin turned to face -Z with its sides named the viewer's way round
    (sweep variant footless_back_viewer). Its feet's joints say nothing of the facing (the shin's tip
    has no child), and the feet's mesh was looked for on the tip alone, which carries none: the named
    hip line was taken as it stood, so the character walked backwards with its limbs mirrored (legs
    0.44-0.64, arms 0.09-0.76, planted soles 20-43 cm off). The mesh is now taken from the bone above a
    tip, as the soles are (`soles.foot_carriers`), measured from that bone's joint: sides from the
    geometry with the one warning, every bar met (numpy skinning of the written file)."""
    record = sweep.run_pair(clip, "footless_back_viewer", sweep_folder)
    assert record["problems"] == [], "{}\n{}".format(record["problems"], "\n".join(record["stderr"]))
    assert record["figures"]["facing"] == "-Z"


# Blender's importer with its default bone heuristic puts a mesh that rides on a bone (the Quaternius
# robot's feet, hands and limbs: rigid meshes under joint nodes) up to 0.6 m off where the file has it, in
# the input rig as much as in our output; numpy and three.js agree to 1e-6 m. With the "TEMPERANCE"
# heuristic (as tests/test_blender_extension.py imports the robot) Blender agrees with them too.
BLENDER_IMPORT = {"robot": {"bone_heuristic": "TEMPERANCE"}}


@pytest.mark.parametrize("clip, variant", [("soma_05_root_path", "footless_shins"), ("g1_02_multi_text_ee_constraint", "footless_shins"),
                                           ("g1_04_ee_constraint", "kenney_blocks"), ("g1_01_single_text_prompt", "robot")])
def test_blender_and_three_see_the_rolling_soles_numpy_judges(sweep_folder, clip, variant):
    """The figures of the tests above come from numpy skinning of the written file. On a sole the shin
    carries, rolling on the floor (and turned down onto it about the knee in G1's kneel), and on a block
    leg rocking onto the corner its turn takes lowest, and on the robot whose feet are rigid meshes riding
    on its foot bones (Blender's judge left those out: it took only meshes its armature deforms),
    Blender (its glTF importer and depsgraph) and three.js (GLTFLoader, AnimationMixer, SkinnedMesh) see
    the same character: the rig's feet at rest, each foot's lowest point in every frame and the judged
    joints' tracks agree with numpy's within 0.1 mm."""
    import os
    import subprocess

    from conftest import node_modules, run_blender
    from feet_judge import judge_case

    record = sweep.run_pair(clip, variant, sweep_folder)
    assert record["returncode"] == 0, record["stderr"]
    spec = dict(sweep.judge_spec(clip, variant, sweep_folder), **{"import": BLENDER_IMPORT.get(variant, {})})
    spec_file = sweep_folder / "{}__{}_spec.json".format(clip, variant)
    spec_file.write_text(json.dumps([spec]), encoding="utf-8")
    three_file, blender_file = (sweep_folder / "{}__{}_{}.json".format(clip, variant, judge) for judge in ("three", "blender"))
    node = subprocess.run(["node", str(ROOT / "tests" / "node" / "feet_judge.mjs"), str(spec_file), str(three_file)],
                          capture_output=True, text=True, env=dict(os.environ, KIMODO_NODE_MODULES=str(node_modules())))
    assert node.returncode == 0, node.stderr[-3000:]
    run_blender("feet_judge.py", spec_file, blender_file)
    numpy_seen = judge_case(spec)
    for judge in ("blender", "three"):
        seen = json.loads({"three": three_file, "blender": blender_file}[judge].read_text())
        seen = seen["cases"][spec["name"]] if judge == "three" else seen[spec["name"]]
        for s in "lr":
            ours, theirs = (np.asarray(j["rest"]["feet"][s]["vertices"]) for j in (numpy_seen, seen))
            assert ours.shape == theirs.shape and np.abs(ours - theirs).max() < 1e-4, (judge, s)
            lowest = np.subtract(numpy_seen["output"]["lowest"][s], seen["output"]["lowest"][s])
            assert len(lowest) == spec["frames"] and np.abs(lowest).max() < 1e-4, (judge, s)
        for point, track in numpy_seen["output"]["points"].items():
            assert np.abs(np.asarray(track) - np.asarray(seen["output"]["points"][point])).max() < 1e-4, (judge, point)


@pytest.mark.parametrize("rig_name", ["robot", "footless"])
def test_the_lock_measures_a_sole_where_the_leg_s_solve_leaves_it(tmp_path, rig_name):
    """The lock kept a sole out of the floor by raising the foot's goal by what the sole, carried along
    with the goal, would be under, then solved the leg. A sole the shin carries (a shin with no foot bone,
    its foot's mesh on it) turns with the solve, and even a foot that keeps its rotation can end lower:
    judged by numpy on the written file, soma_03's crouch went 2.1 cm per 1.7 m under the floor on the
    footless mannequin and 0.67 on the Quaternius robot. The sole is now measured where each solve
    leaves it and the goal raised by what it is under, up to FLOOR_SOLVES times: nothing 0.6 cm under
    the floor (the soles are followed on the vertices extreme in 96 directions: a few millimetres; the
    footless crouch's lowest went from 0.2 to 0.51 cm per 1.7 m when a nearly straight knee came to bend
    in the hip line's plane, soles.KNEE_PLANE_LATERAL)."""
    if rig_name == "robot":
        rig, legs = rv.ROBOT, {"l": "FootL", "r": "FootR"}
    else:
        rig = rv.variant(rv.MANNEQUIN, tmp_path, "footless.glb", rv.footless_shins)
        legs = {"l": "calf_l", "r": "calf_r"}
    clip = "soma_03_full_body_keyframes"
    out = tmp_path / "out.glb"
    result = run_cli("retarget", sweep.NPZ / clip / "motion.npz", "--target", rig, "-o", out)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    soles = _block_soles(out, rig, clip, legs)
    assert soles["lowest_cm"] * 1.7 / _height(Skinned(rig)) >= -0.6, soles


def test_a_host_s_report_follows_the_foot_a_shin_with_no_foot_bone_carries(tmp_path):
    """A host (the Blender add-on) samples the vertices `output.report_vertices` chooses. On a shin with no
    foot bone it chose none (the one-bone fallback asked for a leg without a shin), so the host's report
    measured the floor at the shin's tip. It now follows the shin's own vertices, as the retarget and the
    .glb report do: the lowest vertex it follows on each side is that side's lowest at bind (numpy over
    the bind mesh's weights, here)."""
    from kimodo_rig.formats import read_file
    from kimodo_rig.retarget import feet as retarget_feet, output

    rig = rv.variant(rv.MANNEQUIN, tmp_path, "footless.glb", rv.footless_shins)
    target = character.load_target(str(rig))
    mesh = character.bind_mesh(target)
    motion = read_file(sweep.NPZ / "soma_01_single_text_prompt" / "motion.npz")
    _, info = retarget_feet.retarget_onto(motion, target.skeleton, bind_mesh=mesh)
    chosen = output.report_vertices(info, mesh)
    points = np.array([p for p, _ in mesh])
    for side in "lr":
        shin = [i for i, (_, weights) in enumerate(mesh)
                if sum(w for name, w in weights.items() if name == "calf_" + side) >= 0.5]
        assert chosen.get(side), (side, chosen)
        assert points[chosen[side], 1].min() == pytest.approx(points[shin, 1].min(), abs=1e-6)
