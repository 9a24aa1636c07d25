"""kimodo_rig.retarget.armature and .api without Blender: the errors a user can cause (exact lines), and
the pose channels judged by numpy applying Blender's own posing formula (pose = parent pose @ parent
rest^-1 @ rest @ basis), written out here from Blender's documentation rather than taken from the module."""
from __future__ import annotations

import json

import numpy as np
import pytest

import rig_variants as rv
from conftest import CLIPS, RIGS, run_cli
from kimodo_rig import formats
from kimodo_rig.errors import KimodoError
from kimodo_rig.ops.fk import rest_positions, world_positions
from kimodo_rig.retarget import api, character
from kimodo_rig.retarget.armature import Armature, ArmatureBone, added_points, pose_channels, skeleton_of, tip_points, world_poses
from kimodo_rig.retarget.mapping import map_humanoid

GLTF_TO_BLENDER = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]])  # glTF (x, y, z) -> Blender (x, -z, y)


def quat_matrix(w, x, y, z):
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def blender_armature(target, matrix_world, skip=()):
    """An armature as Blender would hold the target rig: bones whose Y axis points at their first child
    (any rest orientation will do), placed in armature space so that matrix_world puts them at the rig's
    bind pose in the Blender scene; the joints named in `skip` left out."""
    skeleton = target.skeleton
    rest = np.array(rest_positions(skeleton))
    world = np.array(matrix_world)
    inverse = np.linalg.inv(world)
    bones = []
    rng = np.random.default_rng(5)
    for joint, name in enumerate(skeleton.joint_names):
        if name in skip:
            continue
        head = inverse[:3, :3] @ (GLTF_TO_BLENDER @ rest[joint]) + inverse[:3, 3]
        q = rng.normal(size=4)
        rotation = quat_matrix(*(q / np.linalg.norm(q)))
        matrix = np.eye(4)
        matrix[:3, :3], matrix[:3, 3] = rotation, head
        parent = skeleton.parents[joint]
        bones.append(ArmatureBone(name, skeleton.joint_names[parent] if parent >= 0 else "", tuple(map(tuple, matrix))))
    return Armature("rig", tuple(reversed(bones)), tuple(map(tuple, world)))  # any bone order


def blender_pose(armature, channels, frame):
    """World heads (Blender frame) from the basis channels, by Blender's posing formula."""
    rests = {b.name: np.array(b.matrix_local) for b in armature.bones}
    parents = {b.name: b.parent for b in armature.bones}
    posed = {}

    def pose(name):
        if name not in posed:
            location, (w, x, y, z) = channels[name][frame]
            basis = np.eye(4)
            basis[:3, :3], basis[:3, 3] = quat_matrix(w, x, y, z), location
            if parents[name]:
                posed[name] = pose(parents[name]) @ np.linalg.inv(rests[parents[name]]) @ rests[name] @ basis
            else:
                posed[name] = rests[name] @ basis
        return posed[name]

    world = np.array(armature.matrix_world)
    return {name: (world @ pose(name))[:3, 3] for name in rests}


@pytest.mark.parametrize("placement", ["identity", "turned_scaled_moved"])
def test_pose_channels_put_blender_bones_where_the_retarget_has_them(placement):
    world = np.eye(4)
    if placement != "identity":
        angle = 0.7
        world[:3, :3] = 3.78 * np.array([[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0], [0, 0, 1]])
        world[:3, 3] = (1.5, -2.0, 0.25)
    target = character.load_target(str(RIGS / "mpfb2" / "mpfb2_game_engine.glb"))
    armature = blender_armature(target, world)
    skeleton = skeleton_of(armature)
    rest = dict(zip(target.skeleton.joint_names, rest_positions(target.skeleton)))
    for name, position in zip(skeleton.joint_names, rest_positions(skeleton)):
        assert np.allclose(position, rest[name], atol=1e-9)
    motion = formats.read_file(CLIPS / "soma_01_single_text_prompt")
    retargeted, info = api.retarget_motion(motion, skeleton, api.RetargetOptions(root_motion="root"))
    poses = world_poses(skeleton, retargeted, info.root_track, info.root_bone)
    channels = pose_channels(armature, skeleton, poses)
    expected = world_positions(retargeted)
    index = {n: j for j, n in enumerate(retargeted.skeleton.joint_names)}
    for frame in (0, 57, 149):
        heads = blender_pose(armature, channels, frame)
        for name, j in index.items():
            assert np.allclose(GLTF_TO_BLENDER.T @ heads[name], expected[frame][j], atol=1e-9), (frame, name)
        root = info.root_bone
        assert np.allclose(GLTF_TO_BLENDER.T @ heads[root], info.root_track[frame][0], atol=1e-9)
    for frames in channels.values():  # w x y z, unit, sign-continuous
        q = np.array([r for _, r in frames])
        assert np.allclose(np.linalg.norm(q, axis=1), 1.0) and (np.sum(q[1:] * q[:-1], axis=1) >= 0).all()


def test_an_unevenly_scaled_armature_gets_one_line():
    world = np.diag([1.0, 2.0, 1.0, 1.0])
    armature = Armature("Hero", (ArmatureBone("a", "", tuple(map(tuple, np.eye(4)))),), tuple(map(tuple, world)))
    with pytest.raises(KimodoError) as error:
        skeleton_of(armature)
    assert str(error.value) == "Hero: the armature object is scaled unevenly (1, 2, 1); apply its scale first (Ctrl+A)"


def test_an_armature_without_bones_gets_one_line():
    with pytest.raises(KimodoError) as error:
        skeleton_of(Armature("Empty", ()))
    assert str(error.value) == "Empty: the armature has no bones"


@pytest.mark.parametrize("kind", ["mmd_like", "rigify_like"])
def test_the_bone_map_detected_with_the_mesh_is_the_one_map_prints_for_the_file(kind, tmp_path):
    """The mapper reads the mesh (which bones carry vertices; the feet's facing): the add-on hands in the
    character's vertices at bind as the file has them, and then finds the map `kimodo-rig map FILE --json`
    prints. Without them an MMD-like rig mapped otherwise than its file (and Blender's Rigify metarig with
    a body mapped its head to spine.006, not face: 1.5 mm off the command line's retarget)."""
    path = rv.variant(rv.MANNEQUIN, tmp_path, kind + ".glb", getattr(rv, kind))
    target = character.load_target(str(path))
    printed = run_cli("map", path, "--json")
    printed_parts = json.loads(printed.stdout)
    assert printed.returncode == 0 and printed_parts.pop("check") == "ok"
    assert api.detect_bone_map(target.skeleton, path.name, character.bind_mesh(target)) == printed_parts


def test_the_bone_map_is_the_table_map_prints_and_retarget_map_reads():
    skeleton = character.load_target("mannequin").skeleton
    detected = api.detect_bone_map(skeleton, "mannequin")
    printed = run_cli("map", "mannequin", "--json")
    printed_parts = json.loads(printed.stdout)
    assert printed.returncode == 0 and printed_parts.pop("check") == "ok"  # the check's verdict beside the parts
    assert api.bone_map_json(detected) == json.dumps(printed_parts, indent=2)
    assert api.bone_map_from_json(printed.stdout, "mannequin: bone map") == detected
    assert detected["head"] == "head" and detected["toe_l"] == "ball_l"
    same = api.humanoid_map(skeleton, detected, "mannequin")
    assert {p: skeleton.joint_names[j] for p, j in same.bones.items()} == detected
    # The whole map, as --map reads it: a part left out is unmapped; a part given a bone plays it, once the
    # check agrees (issue 39: a hand at the forearm's joint is refused in one line).
    edited = dict(detected)
    del edited["head"]
    hmap = api.humanoid_map(skeleton, edited, "mannequin")
    assert "head" not in hmap.bones and skeleton.joint_names[hmap.bones["hand_l"]] == "hand_l"
    with pytest.raises(KimodoError) as refused:
        api.humanoid_map(skeleton, dict(edited, hand_l="lowerarm_l"), "mannequin")
    assert str(refused.value).startswith("mannequin: map: hand_l (lowerarm_l) does not hang below lowerarm_l")
    # Printed in the map's order whatever order it was edited in.
    assert list(json.loads(api.bone_map_json(dict(reversed(list(detected.items())))))) == list(detected)
    for bone_map, message in (({"head": "noggin"}, "Hero: bone map: head: no bone named 'noggin' in mpfb2_game_engine"),
                              ({"tail": "pelvis"}, "Hero: bone map: unknown part 'tail'"),
                              ({"hips": "pelvis"}, "Hero: bone map: no humanoid legs and arms found (missing thigh_l")):
        with pytest.raises(KimodoError) as error:
            api.humanoid_map(skeleton, bone_map, "Hero: bone map")
        assert str(error.value).startswith(message), str(error.value)
    for text, message in (("{", "Hero: bone map: not JSON (Expecting property name"),
                          ('["hips"]', "Hero: bone map: a map is a JSON object of part -> bone name")):
        with pytest.raises(KimodoError) as error:
            api.bone_map_from_json(text, "Hero: bone map")
        assert str(error.value).startswith(message), str(error.value)


def test_the_box_rig_motion_is_kimodos_own_but_for_the_travel():
    motion = formats.read_file(CLIPS / "g1_01_single_text_prompt")
    plain, _ = api.own_skeleton_motion(motion)
    assert plain.local_rotations == motion.local_rotations and plain.root_positions == motion.root_positions
    still, _ = api.own_skeleton_motion(motion, api.RetargetOptions(in_place=True))
    roots, original = np.array(still.root_positions).reshape(-1, 3), np.array(motion.root_positions).reshape(-1, 3)
    assert np.array_equal(roots[:, 1], original[:, 1])
    travel = np.linalg.norm(original[-1, [0, 2]] - original[0, [0, 2]])
    assert travel > 1.0 and np.linalg.norm(roots[-1, [0, 2]] - roots[0, [0, 2]]) < 0.05 * travel
    _, info = api.own_skeleton_motion(motion, api.RetargetOptions(root_motion="root"))
    assert info.root_is_new and len(info.root_track) == motion.frame_count


def test_childless_bones_end_where_the_gltf_reader_ends_them():
    # The mannequin's childless bones (fingers, head, balls) get their tips from their skinned vertices
    # in the reader; an armature of the same rig, handed the same vertices, gets the same tips.
    target = character.load_target(str(RIGS / "mpfb2" / "mpfb2_game_engine.glb"))
    tips = {name: bone for name, bone, _ in target.tips}
    assert len(tips) >= 10
    armature = blender_armature(target, np.eye(4), skip=tips)
    leaves = set(tips.values())
    samples = {}
    for point, weights in character.bind_mesh(target):
        for bone, weight in weights.items():
            if bone in leaves:
                samples.setdefault(bone, []).append((weight, tuple(point)))
    armature = Armature(armature.name, armature.bones, armature.matrix_world, tuple((b, tuple(v)) for b, v in samples.items()))
    ours = dict(zip(skeleton_of(armature).joint_names, rest_positions(skeleton_of(armature))))
    theirs = dict(zip(target.skeleton.joint_names, rest_positions(target.skeleton)))
    assert {name for name in ours if name.endswith("_tip")} == set(tips)
    for name in tips:
        assert np.allclose(ours[name], theirs[name], atol=1e-9), name


def facing_armature(yaw_deg, length=0.15, foot_names=("foot_l", "foot_r")):
    """The mannequin without toe bones (its feet childless), each foot bone's Y axis (heel to toe) turned
    `yaw_deg` about up from +Z, in an armature turned, scaled and moved in the scene."""
    target = character.load_target(str(RIGS / "mpfb2" / "mpfb2_game_engine.glb"))
    skip = {name for name in target.skeleton.joint_names if name.startswith("ball_") or name.endswith("_tip")}
    world = np.eye(4)
    world[:3, :3] = 2.0 * np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # a quarter turn, 2x
    world[:3, 3] = (0.5, 1.0, 0.0)
    armature = blender_armature(target, world, skip=skip)
    a = np.radians(yaw_deg)
    toe = np.linalg.inv(world[:3, :3]) @ GLTF_TO_BLENDER @ np.array([np.sin(a), 0.0, np.cos(a)])
    y = toe / np.linalg.norm(toe)
    z = np.array([0.0, 0.0, 1.0])
    bones = []
    for bone in armature.bones:
        if bone.name in foot_names:
            matrix = np.array(bone.matrix_local)
            matrix[:3, :3] = np.column_stack([np.cross(y, z), y, z])
            bone = ArmatureBone(bone.name, bone.parent, tuple(map(tuple, matrix)), length)
        bones.append(bone)
    return Armature(armature.name, tuple(bones), armature.matrix_world)


def test_an_armature_faces_where_its_childless_feet_point():
    # Without a tip past the feet, the facing would come from the hip line (+Z); the feet's own axis
    # says 20 degrees off it, as the reader reads the same bones from Blender's export.
    armature = facing_armature(20.0)
    skeleton = skeleton_of(armature)
    positions = dict(zip(skeleton.joint_names, rest_positions(skeleton)))
    for side in ("l", "r"):
        step = np.array(positions["foot_{}_tip".format(side)]) - np.array(positions["foot_" + side])
        # Twice the bone's length: the armature object is scaled 2x in the scene.
        assert np.allclose(step, 2.0 * 0.15 * np.array([np.sin(np.radians(20.0)), 0.0, np.cos(np.radians(20.0))]), atol=1e-9)
    forward = map_humanoid(skeleton).forward
    assert abs(np.degrees(np.arctan2(forward[0], forward[2])) - 20.0) < 1e-6
    # Tip joints are no bones: no channels, and the bones' channels still put them where the retarget has them.
    motion = formats.read_file(CLIPS / "soma_01_single_text_prompt")
    retargeted, info = api.retarget_motion(motion, skeleton)
    poses = world_poses(skeleton, retargeted, info.root_track, info.root_bone)
    channels = pose_channels(armature, skeleton, poses)
    assert set(channels) == {bone.name for bone in armature.bones}
    expected = {name: pose[1] for name, pose in zip(skeleton.joint_names, poses[40])}
    heads = blender_pose(armature, channels, 40)
    for name, head in heads.items():
        assert np.allclose(GLTF_TO_BLENDER.T @ head, expected[name], atol=1e-9), name


def test_an_end_marker_bone_gets_no_tip():
    # A childless bone named as an exporter's end (`Foot.L_end`) is a tip already, as the reader has it.
    armature = facing_armature(0.0)
    bones = tuple(ArmatureBone("foot_l_end" if b.name == "foot_l" else b.name, b.parent, b.matrix_local, b.length)
                  for b in armature.bones)
    tips = tip_points(Armature(armature.name, bones, armature.matrix_world))
    assert [(name, bone) for name, bone, _ in tips] == [("foot_r_tip", "foot_r")]


def test_an_armature_of_several_top_bones_hangs_them_as_the_gltf_reader_does(tmp_path):
    """Feet under IK controls and a helmet slot off the armature (Quaternius' Saxon / Soldier), its loose
    trees listed first: the body is the tree the mesh is skinned to, each skinned tree hangs from the body
    bone nearest what it carries (the helmet from the head, as its lost constraint held it), as the glTF
    reader hangs the same rig; with no mesh the largest tree is the body and the others hang from its root."""
    import rig_variants as rv

    rig = rv.variant(rv.MANNEQUIN, tmp_path, "loose_feet.glb", rv.feet_on_loose_controls)
    target = character.load_target(str(rig))
    tips = {name for name, _, _ in target.tips}
    loose = {"FootControl_l", "FootControl_r", "HelmetSlot"}
    built = blender_armature(target, np.eye(4), skip=tips)
    bones = tuple(ArmatureBone(b.name, "" if b.name in loose else b.parent, b.matrix_local) for b in built.bones)
    assert [b.name for b in bones if not b.parent][:1] != ["Root"]  # a loose tree's top bone comes first
    sums = {}
    for point, weights in character.bind_mesh(target):
        for bone, weight in weights.items():
            total = sums.setdefault(bone, np.zeros(4))
            total += weight * np.array([1.0, *point])
    carried = tuple((bone, float(t[0]), tuple(t[1:] / t[0])) for bone, t in sums.items())
    skeleton = skeleton_of(Armature("rig", bones, built.matrix_world, (), carried))
    parent_of = {name: skeleton.joint_names[p] if p >= 0 else "" for name, p in zip(skeleton.joint_names, skeleton.parents)}
    reader = {name: target.skeleton.joint_names[p] if p >= 0 else ""
              for name, p in zip(target.skeleton.joint_names, target.skeleton.parents)}
    assert skeleton.joint_names[0] == "Root"
    assert {name: parent_of[name] for name in loose} == {name: reader[name] for name in loose} == {
        "FootControl_l": "calf_l", "FootControl_r": "calf_r", "HelmetSlot": "head"}
    bare = skeleton_of(Armature("rig", bones, built.matrix_world))
    bare_parent = {name: bare.joint_names[p] for name, p in zip(bare.joint_names, bare.parents) if p >= 0}
    assert bare.joint_names[0] == "Root" and all(bare_parent[name] == "Root" for name in loose)


def test_the_joints_the_retarget_adds_are_sampled_where_the_skeleton_has_them(tmp_path):
    """A one-bone leg's ankle (`RetargetInfo.added_joints`, glTF frame) in armature space for the add-on
    to sample as it samples the tips: carried back by the armature's own placement (a 100x scale, turned
    and moved, as the Blender importer leaves some rigs), it lands where the retarget's skeleton has it."""
    import rig_variants as rv

    rig = rv.variant(rv.MANNEQUIN, tmp_path, "kenney.glb", rv.kenney_like)
    target = character.load_target(str(rig))
    motion = formats.read_file(str(CLIPS / "soma_01_single_text_prompt"))
    retargeted, info = api.retarget_motion(motion, target.skeleton, bind_mesh=character.bind_mesh(target))
    assert [name for name, _, _ in info.added_joints] == ["leg-left_ankle", "leg-right_ankle"]
    placement = np.array([[0.0, -100.0, 0.0, 1.5], [100.0, 0.0, 0.0, -2.0], [0.0, 0.0, 100.0, 0.25], [0.0, 0.0, 0.0, 1.0]])
    armature = Armature("kenney", (), placement.tolist())
    rest = dict(zip(retargeted.skeleton.joint_names, rest_positions(retargeted.skeleton)))
    for (name, bone, point), (_, _, world) in zip(added_points(armature, info.added_joints), info.added_joints):
        blender = placement @ np.r_[point, 1.0]
        assert np.allclose(GLTF_TO_BLENDER.T @ blender[:3], rest[name], atol=1e-9) and np.allclose(world, rest[name])


def test_end_bones_that_carry_no_vertex_are_left_out_as_the_gltf_reader_leaves_them(tmp_path):
    """An unweighted end bone 0.8 m on along each childless bone (`rig_variants.long_end_bones`: Blender's
    leaf bones as it writes them under an armature scaled by 100): the armature's skeleton is the glTF
    reader's (no end bones; their bones end where their vertices reach), and the map detected with the mesh
    is the one `kimodo-rig map` prints for the file. Before: the end bones were joints, their bones got no
    tip, and the map was refused ("hand_l is not at the limb's end")."""
    path = rv.variant(rv.MANNEQUIN, tmp_path, "long_end_bones.glb", rv.long_end_bones)
    target = character.load_target(str(path))
    names = target.skeleton.joint_names
    tips = {name: bone for name, bone, _ in target.tips}
    built = blender_armature(target, np.eye(4), skip=tips)
    rest = dict(zip(names, np.array(rest_positions(target.skeleton))))
    ends = []
    built_matrix = {b.name: np.array(b.matrix_local, float) for b in built.bones}
    for bone in tips.values():
        run = rest[bone] - rest[names[target.skeleton.parents[names.index(bone)]]]
        matrix = built_matrix[bone].copy()  # a leaf bone rests as its bone (the dress's in Blender: within 0.0005 deg)
        matrix[:3, 3] = GLTF_TO_BLENDER @ (rest[bone] + 0.8 * run / np.linalg.norm(run))
        ends.append(ArmatureBone(bone + ".leaf", bone, tuple(map(tuple, matrix))))
    samples, sums = {}, {}
    for point, weights in character.bind_mesh(target):
        for bone, weight in weights.items():
            samples.setdefault(bone, []).append((weight, tuple(point)))
            sums.setdefault(bone, np.zeros(4))[:] += weight * np.array([1.0, *point])
    carried = tuple((bone, float(t[0]), tuple(t[1:] / t[0])) for bone, t in sums.items())
    armature = Armature("rig", built.bones + tuple(ends), built.matrix_world,
                        tuple((b, tuple(v)) for b, v in samples.items()), carried)
    skeleton = skeleton_of(armature)
    ours = dict(zip(skeleton.joint_names, rest_positions(skeleton)))
    assert set(ours) == set(names)
    for name in names:
        assert np.allclose(ours[name], rest[name], atol=1e-6), name
    printed = run_cli("map", path, "--json")
    parts = json.loads(printed.stdout)
    assert printed.returncode == 0 and parts.pop("check") == "ok"
    assert api.detect_bone_map(skeleton, path.name, character.bind_mesh(target)) == parts
