"""The Unreal step without an editor: unreal_retarget.py type-checked by pyright against the engine-generated
UE 5.6 API stub (PyPI unreal-stub), and the editor-free plan (kimodo_rig/unreal_plan.py) checked against
the offline retarget's numbers and independent numpy / pygltflib computations. No fake `unreal` module is
used anywhere: what only an editor can show is listed in the README."""
from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pygltflib
import pytest

from conftest import CLIP_NAMES, CLIPS, ROOT, node_modules

from kimodo_rig import skeletons, unreal_plan as plan
from kimodo_rig.errors import KimodoError
from kimodo_rig.formats import glb, raw
from kimodo_rig.ops.fk import world_positions
from kimodo_rig.retarget.mapping import map_humanoid, rest_leg_reach, retarget_chains
from kimodo_rig.retarget.solve import retarget
from kimodo_rig.retarget.report import format_report, measure_report
from kimodo_rig.retarget.character import load_target

SCRIPT = ROOT / "unreal_retarget.py"
PATCHED_SIGNATURE = "    def __init__(self, *args: Any, **kwargs: Any) -> None:"


# --- pyright against the engine's own API stub ------------------------------------------------------------

def _stub_source() -> Path:
    spec = importlib.util.find_spec("unreal")
    if spec is None or not spec.origin:
        pytest.fail("judge missing: the unreal-stub package is not installed in the test venv (tests/requirements.txt)")
    stub = Path(spec.origin).parent / "unreal.py"
    if not stub.is_file():
        pytest.fail("judge missing: {} not found".format(stub))
    return stub


def _patched_stub(folder: Path) -> Path:
    """The stub as `unreal.pyi`, with its one invalid line (ToolBarStyle.__init__'s default values are
    engine struct literals, not Python) replaced by a catch-all signature."""
    lines = _stub_source().read_text(encoding="utf-8-sig").split("\n")
    cls = next(i for i, line in enumerate(lines) if line.startswith("class ToolBarStyle("))
    init = next(i for i in range(cls, len(lines)) if lines[i].lstrip().startswith("def __init__("))
    original = lines[init]
    with pytest.raises(SyntaxError):
        compile(textwrap.dedent(original) + "\n    ...\n", "ToolBarStyle.__init__", "exec")
    lines[init] = PATCHED_SIGNATURE
    compile(textwrap.dedent(PATCHED_SIGNATURE) + "\n    ...\n", "patched", "exec")
    stubs = folder / "stubs"
    stubs.mkdir()
    (stubs / "unreal.pyi").write_text("\n".join(lines), encoding="utf-8")
    return stubs


# One deliberate mistake per copy; each must be caught.
MUTANTS = {
    "unknown_attribute.py": ("controller.add_default_ops()", "controller.add_default_operations()", "reportAttributeAccessIssue"),
    "extra_argument.py": ("unreal.EditorAssetLibrary.does_asset_exist(path)",
                          "unreal.EditorAssetLibrary.does_asset_exist(path, True)", "reportCallIssue"),
    "unknown_class.py": ("unreal.IKRetargetFactory()", "unreal.IKRetargeterFactoryTypo()", "reportAttributeAccessIssue"),
}


@pytest.fixture(scope="module")
def pyright_diagnostics(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pyright")
    stubs = _patched_stub(folder)
    script = SCRIPT.read_text(encoding="utf-8")
    (folder / "unreal_retarget.py").write_text(script, encoding="utf-8")
    for name, (good, bad, _rule) in MUTANTS.items():
        assert script.count(good) >= 1, good
        (folder / name).write_text(script.replace(good, bad, 1), encoding="utf-8")
    config = {
        "include": ["unreal_retarget.py"] + sorted(MUTANTS),
        "stubPath": str(stubs),
        "extraPaths": [str(ROOT)],  # kimodo_rig, as the script's sys.path insert finds it in the editor
        "pythonVersion": "3.9",  # UE 5.2/5.3 ship Python 3.9; 5.4+ 3.11
        "typeCheckingMode": "standard",
        # The one rule turned off: the stub types names as `Name` and lists as `Array`, where str and list
        # are accepted at run time. Everything else stays an error, spelled out so no default can weaken it.
        "reportArgumentType": False,
        "reportAttributeAccessIssue": "error",
        "reportCallIssue": "error",
        "reportMissingImports": "error",
        "reportUndefinedVariable": "error",
        "reportOptionalMemberAccess": "error",
        "reportOptionalIterable": "error",
        "reportIndexIssue": "error",
        "reportReturnType": "error",
        "reportPossiblyUnbound": "error",
    }
    (folder / "pyrightconfig.json").write_text(json.dumps(config), encoding="utf-8")
    modules = node_modules()
    pyright = modules / "pyright" / "index.js"
    if not pyright.is_file():
        pytest.fail("judge missing: pyright not installed in {} (run bash scripts/test.sh)".format(modules))
    result = subprocess.run(
        ["node", str(pyright), "--outputjson", "-p", str(folder / "pyrightconfig.json")],
        capture_output=True, text=True, cwd=str(folder), env=dict(os.environ, NODE_PATH=str(modules)),
    )
    try:
        report = json.loads(result.stdout)
    except ValueError:
        pytest.fail("pyright did not run:\n" + result.stdout[-3000:] + result.stderr[-3000:])
    by_file = {}
    for diagnostic in report["generalDiagnostics"]:
        by_file.setdefault(Path(diagnostic["file"]).name, []).append(diagnostic)
    assert report["summary"]["filesAnalyzed"] == 1 + len(MUTANTS)
    return by_file, script


def test_unreal_retarget_type_checks_clean_against_the_ue56_stub(pyright_diagnostics):
    problems = [
        "{}:{}: {} ({})".format(d["file"], d["range"]["start"]["line"] + 1, d["message"], d.get("rule"))
        for d in pyright_diagnostics[0].get("unreal_retarget.py", [])
        # The stub has no module source behind it: that warning is the one expected line.
        if not (d["severity"] == "warning" and d.get("rule") == "reportMissingModuleSource" and '"unreal"' in d["message"])
    ]
    assert problems == []


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_the_type_check_catches_a_deliberate_mistake(pyright_diagnostics, mutant):
    good, bad, rule = MUTANTS[mutant]
    diagnostics, script = pyright_diagnostics
    line = next(i for i, text in enumerate(script.split("\n")) if good in text)
    errors = [d for d in diagnostics.get(mutant, []) if d["severity"] == "error"]
    assert [(d["range"]["start"]["line"], d["rule"]) for d in errors] == [(line, rule)]


def _stub_members():
    """Class name -> method and property names, from the stub's text (the stub is never imported)."""
    members = {}
    current = None
    for line in _stub_source().read_text(encoding="utf-8-sig").split("\n"):
        if line.startswith("class "):
            current = members.setdefault(line[6:].split("(")[0].split(":")[0].strip(), set())
        elif current is not None and line.startswith("    def "):
            current.add(line[8:].split("(")[0])
    return members


def _function_source(name):
    tree = ast.parse(SCRIPT.read_text(encoding="utf-8"))
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    return ast.get_source_segment(SCRIPT.read_text(encoding="utf-8"), node)


def test_feature_checks_name_what_the_engine_really_has():
    """The feature table is strings, which pyright cannot check: each class and method it asks for must be
    in the 5.6 API, or the script would refuse to run on every engine."""
    members = _stub_members()
    tree = ast.parse(SCRIPT.read_text(encoding="utf-8"))
    table = next(n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "REQUIRED_FEATURES")
    features = ast.literal_eval(table)
    assert len(features) >= 8
    for class_name, method, _why in features:
        assert class_name in members, class_name
        assert not method or method in members[class_name], (class_name, method)


def test_calls_only_newer_or_older_engines_have_sit_behind_feature_checks():
    members = _stub_members()
    script = SCRIPT.read_text(encoding="utf-8")
    # 5.7-only and pre-5.6-only calls: absent from the 5.6 API, reached only through getattr.
    for method in ("assign_ik_rig_to_all_ops", "set_source_ik_rig", "set_target_ik_rig"):
        assert method not in members["IKRetargeterController"], method
        assert '"{}"'.format(method) in script and ".{}(".format(method) not in script, method
    # Checked with hasattr, then called directly so pyright checks the call against the 5.6 API.
    for method in ("add_default_ops", "set_ik_rig", "set_preview_mesh", "run_op_initial_setup"):
        assert method in members["IKRetargeterController"], method
        assert 'hasattr(controller, "{}")'.format(method) in script, method


def test_on_56_the_ops_exist_and_hold_the_rigs_before_any_chain_is_mapped():
    """A new 5.6+ retargeter has no ops, and chain mapping lives in the ops: mapping first does nothing."""
    body = _function_source("retargeter")
    order = [body.index(call) for call in ("assign_rig(controller, source_side()", "assign_rig(controller, target_side()",
                                           "controller.add_default_ops()", "assign_rig_to_ops(controller",
                                           "controller.set_source_chain(")]
    assert order == sorted(order)
    assert body.count("set_source_chain(") == 1


# --- the editor-free plan -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def clip_glbs(tmp_path_factory):
    """Every shared clip as the .glb kimodo_to_glb.py writes (the file the user drops into Unreal)."""
    folder = tmp_path_factory.mktemp("glbs")
    paths = {}
    for name in CLIP_NAMES:
        path = folder / (name + ".glb")
        glb.write(raw.read(CLIPS / name), path)
        paths[name] = path
    return paths


def _gltf_hierarchy(path: Path):
    """Joint names and parent names as pygltflib reads the file."""
    gltf = pygltflib.GLTF2().load(str(path))
    parent = {}
    for index, node in enumerate(gltf.nodes):
        for child in node.children or []:
            parent[gltf.nodes[child].name] = node.name
    names = [gltf.nodes[j].name for j in gltf.skins[0].joints]
    return names, parent


@pytest.mark.parametrize("clip", CLIP_NAMES)
def test_the_lift_is_the_rest_leg_reach_of_the_source(clip_glbs, clip):
    source = plan.read_source(clip_glbs[clip])
    record = skeletons.data(source.motion.skeleton.name)
    positions = np.array(record["rest_joint_positions_m"])
    names = record["joint_names"]
    feet = [j for j, n in enumerate(names) if any(w in n.lower() for w in ("foot", "toe", "ankle"))]
    expected = positions[names.index(source.retarget_root)][1] - positions[feet, 1].min()
    assert source.leg_reach_m == pytest.approx(expected, abs=1e-9)
    assert source.leg_reach_m == rest_leg_reach(map_humanoid(source.motion.skeleton))  # the offline function
    assert source.root_lift_cm == pytest.approx((0.0, 0.0, expected * 100.0), abs=1e-6)  # straight up in Unreal
    assert 0.7 < source.leg_reach_m < 1.1


@pytest.mark.parametrize("clip", CLIP_NAMES)
def test_the_chain_table_covers_the_source_limbs_under_the_glb_bone_names(clip_glbs, clip):
    source = plan.read_source(clip_glbs[clip])
    names, parent = _gltf_hierarchy(clip_glbs[clip])
    chains = {c.name: c for c in source.chains}
    assert {"Spine", "LeftArm", "RightArm", "LeftLeg", "RightLeg"} <= set(chains)
    offline, root = retarget_chains(map_humanoid(source.motion.skeleton))
    assert [c.name for c in offline] == [c.name for c in source.chains]
    assert source.retarget_root == names[0]  # the hips: the glb's root joint
    for chain in source.chains:
        assert chain.start in names and chain.end in names
        walk = chain.end
        while walk != chain.start:  # the end lies below the start in the file's hierarchy
            walk = parent[walk]
    for side in ("Left", "Right"):
        arm_end = chains[side + "Arm"].end.lower()
        assert "hand" in arm_end or "wrist" in arm_end, arm_end
        leg_end = chains[side + "Leg"].end.lower()
        assert "toe" in leg_end, leg_end
    if clip.startswith("g1"):
        assert not {"LeftClavicle", "RightClavicle", "Neck", "Head"} & set(chains)
    else:
        assert {"LeftClavicle", "RightClavicle", "Neck", "Head"} <= set(chains)


def _engine_rig(spec="mannequin"):
    """A target as Interchange would hand it to the script: the MPFB2 game-engine rig (Unreal bone names,
    A-pose) with its glTF-frame local transforms converted to Unreal's frame by numpy, independently."""
    skeleton = load_target(spec).skeleton
    mirror = np.array([[1, 0, 0], [0, 0, 1], [0, 1, 0]], dtype=float)
    translations = [tuple(mirror @ np.array(t) * 100.0) for t in skeleton.rest_offsets]
    rotations = [(-q[0], -q[2], -q[1], q[3]) for q in skeleton.rest_rotations]
    parents = ["None" if p < 0 else skeleton.joint_names[p] for p in skeleton.parents]
    return skeleton, (skeleton.name, list(skeleton.joint_names), parents, translations, rotations)


def _matrix(q):
    x, y, z, w = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def test_the_frame_change_is_the_mirror_interchange_applies():
    mirror = np.array([[1, 0, 0], [0, 0, 1], [0, 1, 0]], dtype=float)
    rng = np.random.default_rng(7)
    for _ in range(20):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        p = rng.normal(size=3)
        assert np.allclose(plan.engine_position(p), 100.0 * mirror @ p)
        assert np.allclose(plan.gltf_position(plan.engine_position(p)), p)
        # The same physical rotation seen in the mirrored frame: M R M.
        assert np.allclose(_matrix(plan.engine_rotation(q)), mirror @ _matrix(q) @ mirror)
    # Kimodo's forward (+Z) is Unreal's +Y, its left (+X) stays +X, its up (+Y) is +Z.
    assert plan.engine_position((0, 0, 1)) == (0, 100, 0)
    assert plan.engine_position((0, 1, 0)) == (0, 0, 100)


def _quat_multiply(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz])


def _engine_globals(parents, translations, rotations):
    """Component-space rotation matrices and positions by numpy FK in Unreal's frame."""
    rot, pos = [], []
    for j, parent in enumerate(parents):
        local = _matrix(rotations[j])
        if parent < 0:
            rot.append(local)
            pos.append(np.array(translations[j]))
        else:
            rot.append(rot[parent] @ local)
            pos.append(pos[parent] + rot[parent] @ np.array(translations[j]))
    return rot, pos


@pytest.mark.parametrize("clip", ["soma_01_single_text_prompt", "g1_01_single_text_prompt"])
def test_arm_offsets_aim_the_target_arms_along_the_source_rest_in_unreal(clip_glbs, clip):
    """Apply the offsets the way Unreal's retarget pose does (local rotation = reference local * offset,
    in Unreal's frame), then measure by numpy: every arm segment of the target points where the source's
    points at rest (SOMA: T-pose; G1: arms down, forearms forward), seen in Unreal's frame."""
    source = plan.read_source(clip_glbs[clip])
    rig, engine = _engine_rig()
    target = plan.skeleton_from_engine(*engine)
    offsets = dict(plan.retarget_pose(source, target).offsets)
    names = list(target.joint_names)
    parents = list(target.parents)
    translations, rotations = engine[3], engine[4]
    posed = []
    for j, name in enumerate(names):
        q = np.array(rotations[j])
        if name in offsets:
            d = offsets[name]
            q = _quat_multiply(q, d)
        posed.append(q)
    _, positions = _engine_globals(parents, translations, posed)

    record = skeletons.data(source.motion.skeleton.name)
    source_positions = np.array(record["rest_joint_positions_m"])
    source_names = record["joint_names"]
    mirror = np.array([[1, 0, 0], [0, 0, 1], [0, 1, 0]], dtype=float)
    g1 = clip.startswith("g1")
    # target segment (from, to) : source segment (from, to), joint centre to joint centre (G1: from the
    # shoulder roll joint, as the core measures it; from there the segment turns rigidly with the yaw joint)
    pairs = {
        ("upperarm_l", "lowerarm_l"): ("left_shoulder_roll_skel", "left_elbow_skel") if g1 else ("LeftArm", "LeftForeArm"),
        ("lowerarm_l", "hand_l"): ("left_elbow_skel", "left_wrist_roll_skel") if g1 else ("LeftForeArm", "LeftHand"),
        ("upperarm_r", "lowerarm_r"): ("right_shoulder_roll_skel", "right_elbow_skel") if g1 else ("RightArm", "RightForeArm"),
        ("lowerarm_r", "hand_r"): ("right_elbow_skel", "right_wrist_roll_skel") if g1 else ("RightForeArm", "RightHand"),
    }
    for (a, b), (sa, sb) in pairs.items():
        have = positions[names.index(b)] - positions[names.index(a)]
        want = mirror @ (source_positions[source_names.index(sb)] - source_positions[source_names.index(sa)])
        cosine = have @ want / np.linalg.norm(have) / np.linalg.norm(want)
        assert cosine > 0.9999, (a, b, cosine)
    # Before the offsets the A-pose arms are far off (the 45-55 degree error this fixes) for SOMA.
    _, rest_positions = _engine_globals(parents, translations, rotations)
    have = rest_positions[names.index("lowerarm_l")] - rest_positions[names.index("upperarm_l")]
    if not g1:
        assert have[2] / np.linalg.norm(have) < -0.5  # A-pose: the upper arm points well below horizontal
    assert list(offsets) == [n for n in names if n in offsets]  # parent before child
    assert set(offsets) <= set(plan.ARM_SEGMENTS)


def _imported_source(path: Path, turn=None):
    """The source skeleton as the engine would report it after the mirror import: the .glb's own node
    transforms (read by pygltflib) mirrored to Unreal's frame by numpy; `turn` (a quaternion) rotates the
    whole import, as an engine with another frame change would."""
    gltf = pygltflib.GLTF2().load(str(path))
    joints = gltf.skins[0].joints
    names = [gltf.nodes[j].name for j in joints]
    parent = {}
    for node in gltf.nodes:
        for child in node.children or []:
            parent[gltf.nodes[child].name] = node.name
    mirror = np.array([[1, 0, 0], [0, 0, 1], [0, 1, 0]], dtype=float)
    translations, rotations = [], []
    for j in joints:
        node = gltf.nodes[j]
        t = mirror @ np.array(node.translation or [0.0, 0.0, 0.0]) * 100.0
        q = node.rotation or [0.0, 0.0, 0.0, 1.0]
        q = np.array([-q[0], -q[2], -q[1], q[3]])
        if turn is not None and j == joints[0]:
            t = _matrix(turn) @ t
            q = _quat_multiply(turn, q)
        translations.append(tuple(t))
        rotations.append(tuple(q))
    return plan.skeleton_from_engine("imported", names, [parent.get(n, "None") for n in names], translations, rotations)


@pytest.mark.parametrize("clip", ["soma_03_full_body_keyframes", "g1_02_multi_text_ee_constraint"])
def test_an_import_in_another_frame_is_refused_not_silently_misaligned(clip_glbs, clip):
    source = plan.read_source(clip_glbs[clip])
    plan.check_imported_source(source, _imported_source(clip_glbs[clip]))
    quarter_turn = np.array([0.0, 0.0, np.sqrt(0.5), np.sqrt(0.5)])  # 90 degrees about Unreal's up
    with pytest.raises(KimodoError) as error:
        plan.check_imported_source(source, _imported_source(clip_glbs[clip], quarter_turn))
    assert str(error.value).startswith("{}: the imported skeleton does not rest as the .glb does (".format(clip))
    assert str(error.value).endswith("this engine's glTF import changes frames differently from the (x, z, y) * 100 "
                                     "mirror assumed here")


def test_chain_mapping_leaves_what_g1_lacks_at_rest(clip_glbs):
    _, engine = _engine_rig()
    target = plan.skeleton_from_engine(*engine)
    table, _ = retarget_chains(map_humanoid(target))
    engine_chains = [(c.name, c.start, c.end) for c in table] + [("Root", "Root", "Root")]
    soma = plan.chain_mapping(plan.read_source(clip_glbs["soma_01_single_text_prompt"]), target, engine_chains)
    g1 = plan.chain_mapping(plan.read_source(clip_glbs["g1_01_single_text_prompt"]), target, engine_chains)
    for kind in ("Spine", "LeftArm", "RightArm", "LeftLeg", "RightLeg"):
        assert soma[kind] == kind and g1[kind] == kind
    for kind in ("LeftClavicle", "RightClavicle", "Neck", "Head"):
        assert soma[kind] == kind and g1[kind] is None
    assert soma["Root"] is None and g1["Root"] is None


def test_the_target_skeleton_from_the_engine_is_the_rig_in_kimodos_frame():
    rig, engine = _engine_rig()
    target = plan.skeleton_from_engine(*engine)
    assert target.joint_names == rig.joint_names and target.parents == rig.parents
    assert np.allclose(target.rest_offsets, rig.rest_offsets, atol=1e-12)
    assert np.allclose(target.rest_rotations, rig.rest_rotations, atol=1e-12)


# --- arguments, names and paths --------------------------------------------------------------------------

def test_no_arguments_means_every_glb_beside_the_script(tmp_path):
    for name in ("b_walk.glb", "a_run.glb", "notes.txt", "c.GLB"):
        (tmp_path / name).write_bytes(b"x")
    request = plan.parse_arguments([], tmp_path)
    assert [p.name for p in request.clips] == ["a_run.glb", "b_walk.glb", "c.GLB"]
    assert request.target is None


def test_clips_then_a_character_path_last(tmp_path):
    clip = tmp_path / "walk_150.glb"
    clip.write_bytes(b"x")
    request = plan.parse_arguments([str(clip), "/Game/MyChars/SK_Hero"], tmp_path)
    assert request.clips == (clip,) and request.target == "/Game/MyChars/SK_Hero"
    assert plan.parse_arguments([str(clip), "/Game/MyChars/SK_Hero.SK_Hero"], tmp_path).target == "/Game/MyChars/SK_Hero"


def test_bad_arguments_get_one_clear_line(tmp_path):
    with pytest.raises(KimodoError) as error:
        plan.parse_arguments([], tmp_path)
    assert str(error.value) == "{}: no .glb files beside the script; give .glb paths (make them with kimodo_to_glb.py)".format(tmp_path)
    with pytest.raises(KimodoError) as error:
        plan.parse_arguments([str(tmp_path / "missing.glb")], tmp_path)
    assert str(error.value) == "{}: no such file".format(tmp_path / "missing.glb")
    with pytest.raises(KimodoError) as error:
        plan.parse_arguments(["walk.fbx"], tmp_path)
    assert str(error.value) == "walk.fbx: not a .glb file (give .glb files, then optionally a /Game/... Skeletal Mesh path last)"
    for bad in ("/Game/../Engine/SK_X", "/Game/My Chars/SK_Hero", "/SK_Hero", "/Game/a//b", "/Game/SK_A.SK_B"):
        with pytest.raises(KimodoError) as error:
            plan.asset_path(bad)
        assert str(error.value) == "{}: not a Skeletal Mesh path like /Game/MyChars/SK_Hero".format(bad)


def test_asset_names_are_sanitised_and_stay_in_the_kimodo_folders():
    assert plan.clip_name(Path("C:/clips/walk 150 (v2).glb")) == "walk_150_v2"
    assert plan.clip_name(Path("../../../etc/..glb")) == "clip"
    name = plan.clip_name(Path("/x/../evil/../../name;rm -rf.glb"))
    assert name == "name_rm_rf"
    assert plan.source_folder(name) == "/Game/Kimodo/Source/name_rm_rf"
    assert plan.animation_path(name) == "/Game/Kimodo/Retargeted/A_name_rm_rf"
    assert plan.source_rig_path(name) == "/Game/Kimodo/Rigs/IK_Kimodo_name_rm_rf"
    manny = "/Game/Characters/Mannequins/Meshes/SKM_Manny_Simple.SKM_Manny_Simple"
    assert plan.retargeter_path(name, manny) == "/Game/Kimodo/Rigs/RTG_Kimodo_name_rm_rf_to_SKM_Manny_Simple"
    assert plan.target_rig_path(manny) == "/Game/Kimodo/Rigs/IK_SKM_Manny_Simple"
    assert plan.target_rig_path("/Game/A/SK-Hero (2)") == "/Game/Kimodo/Rigs/IK_SK_Hero_2"
    for path in (plan.source_rig_path(name), plan.retargeter_path(name, manny), plan.animation_path(name)):
        assert plan.asset_path(path) == path  # valid, inside /Game/Kimodo


def test_the_target_candidates_are_the_template_characters_then_the_ue4_mannequin():
    assert [p.rsplit("/", 1)[-1] for p in plan.TARGET_CANDIDATES] == [
        "SKM_Manny_Simple", "SKM_Manny", "SKM_Quinn_Simple", "SKM_Quinn", "SK_Mannequin"]
    assert plan.MANNEQUIN_BONES == ("upperarm_l", "thigh_l")
    assert plan.NO_TARGET_MESSAGE.startswith("no mannequin-style character found: ")


# --- the baked sequence, read back --------------------------------------------------------------------------

def _still_frames(engine, count=4):
    return [[(t, q) for t, q in zip(engine[3], engine[4])] for _ in range(count)]


def test_a_reference_pose_only_bake_is_detected_and_refused(clip_glbs):
    _, engine = _engine_rig()
    target = plan.skeleton_from_engine(*engine)
    source = plan.read_source(clip_glbs["soma_01_single_text_prompt"])
    pose = plan.retarget_pose(source, target)
    still = _still_frames(engine)
    assert plan.is_reference_pose_only(target, still)
    moved = _still_frames(engine)
    t, q = moved[2][target.index("lowerarm_l")]
    moved[2][target.index("lowerarm_l")] = (t, (q[0] + 0.05, q[1], q[2], q[3]))
    assert not plan.is_reference_pose_only(target, moved)
    with pytest.raises(KimodoError) as error:
        plan.baked_report("walk_150", source, pose, {"LeftArm": "LeftArm"}, still, 5.0)
    assert str(error.value) == (
        "walk_150: the baked sequence holds only the reference pose: the IK Retargeter mapped no motion "
        "(check the IK Rigs' chains and, on UE 5.6+, the retargeter's op stack)")


def test_baked_positions_follow_the_engine_pelvis_below_a_still_root():
    _, engine = _engine_rig()
    target = plan.skeleton_from_engine(*engine)
    frames = _still_frames(engine, 3)
    pelvis = target.index("pelvis")
    for k, row in enumerate(frames):  # the engine moves the pelvis 10 cm forward (+Y) per frame
        t, q = row[pelvis]
        row[pelvis] = ((t[0], t[1] + 10.0 * k, t[2]), q)
    positions = plan.baked_positions(target, frames)
    for k, row in enumerate(frames):
        _, expected = _engine_globals(list(target.parents), [t for t, _ in row], [q for _, q in row])
        for j in range(target.joint_count):
            assert np.allclose(positions[k][j], mirror_np(expected[j] / 100.0), atol=1e-9)
    hips = [np.array(positions[k][pelvis]) for k in range(3)]
    assert np.linalg.norm(hips[2] - hips[0]) == pytest.approx(0.2, abs=1e-9)


def mirror_np(v):
    """Unreal's frame back to glTF's, by numpy."""
    return np.array([v[0], v[2], v[1]])


@pytest.mark.parametrize("clip", ["soma_02_multi_text_prompt", "g1_04_ee_constraint"])
def test_the_report_read_from_baked_poses_says_what_the_offline_report_says(clip_glbs, clip):
    """Feed the offline retarget's own output poses in as if the engine had baked them (the full rig, a still
    Root, the pelvis moving below it, Unreal's frame by numpy): the report reads the same, word for word
    and number for number, as the offline report measured on those poses."""
    source = plan.read_source(clip_glbs[clip])
    rig, engine = _engine_rig()
    target = plan.skeleton_from_engine(*engine)
    result, info = retarget(source.motion, rig)
    names = list(result.skeleton.joint_names)
    pelvis = rig.index(names[0])
    assert rig.parents[pelvis] == 0  # the pelvis hangs below a Root that stays put
    root_rotation = np.array(rig.rest_rotations[0])
    root_position = np.array(rig.rest_offsets[0])
    inverse_root = root_rotation * np.array([-1.0, -1.0, -1.0, 1.0])
    frames = []
    for frame in range(result.frame_count):
        local = {names[j]: np.array(result.rotation(frame, j)) for j in range(len(names))}
        row = []
        for j, bone in enumerate(rig.joint_names):
            translation = np.array(rig.rest_offsets[j])
            rotation = np.array(rig.rest_rotations[j])
            if j == pelvis:
                rotation = _quat_multiply(inverse_root, local[bone])
                offset = np.array(result.root_position(frame)) - root_position
                translation = _matrix(inverse_root) @ offset
            elif bone in local:
                rotation = local[bone]
            mirror = np.array([translation[0], translation[2], translation[1]]) * 100.0
            row.append((tuple(mirror), (-rotation[0], -rotation[2], -rotation[1], rotation[3])))
        frames.append(row)
    pose = plan.retarget_pose(source, target)
    table, _ = retarget_chains(map_humanoid(target))
    mapping = plan.chain_mapping(source, target, [(c.name, c.start, c.end) for c in table])
    lines = plan.baked_report("clip", source, pose, mapping, frames, source.motion.duration).split("\n")

    offline = format_report("clip", measure_report(
        skeleton_label=source.motion.skeleton.label, joint_count=source.motion.joint_count,
        source_map=info.source_map, target_map=info.target_map,
        source_positions=world_positions(source.motion), target_positions=world_positions(result),
        duration_s=source.motion.duration, chains_mapped=info.chains_mapped, left_at_rest=info.left_at_rest,
        reach_source=info.reach_source, reach_target=info.reach_target,
        arm_correction_max_deg=info.corrections.arm_max_deg, facing=info.corrections.facing,
    )).split("\n")
    assert lines[0] == offline[0]  # "clip: SOMA, 30 joints"
    assert lines[2].split(",")[0] == offline[2].split(",")[0]  # "reach 99 cm to 87 cm"
    # arms match, pelvis, lowest toe, travelled, duration; the worst arm bone is named by the last digits of
    # near-equal means (1.000 each), so where those tie to 1e-9 either name is right.
    worst = re.compile(r"\(worst \w+\)")
    assert worst.sub("(worst)", lines[3]) == worst.sub("(worst)", offline[3])
    arms = float(lines[3].split("arms match ")[1].split()[0])
    assert arms >= 0.98  # the offline retarget's own bar, met by the poses the engine would hold
    mapped = sum(1 for chain in mapping.values() if chain)
    left = [chain for chain, source_chain in mapping.items() if not source_chain]
    assert lines[1].startswith("  {} chains mapped, {} left at rest (".format(mapped, len(left)))
    assert lines[1] == offline[1]  # both count IK chains: the same words for the same clip and rig
    if clip.startswith("g1"):
        assert {"LeftClavicle", "RightClavicle", "Neck", "Head"} <= set(left)
