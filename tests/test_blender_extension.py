"""The Blender extension, judged in Blender (the bpy venv): the zip built by scripts/build_blender_extension.py
is installed as Blender installs extensions (bpy.ops.extensions.package_install_files into a temporary user
folder), File > Import > Kimodo motion runs on real characters imported with Blender's own glTF importer
(and on Rigify's metarig made in Blender), and what Blender evaluates is compared with `kimodo-rig
retarget`'s output file read with pygltflib + numpy and with Kimodo's own limb directions (numpy FK from
the skeleton JSON). Every shared clip on every rig; one Blender process per Blender for all of it, both
Blenders at once, and the command line's retargets (each (rig file, clip, options) once) beside them."""
from __future__ import annotations

import ast
import functools
import hashlib
import json
import re
import subprocess
import sys
import threading
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import rig_variants as rv
from conftest import CLIPS, NPZ, RIGS, ROOT, run_blender, run_cli
from gltf_judge import Glb, forward_kinematics, read_raw_clip, skeleton_record
from kimodo_rig import skeletons
from kimodo_rig.retarget.mapping import known_parts
from test_retarget import bind_worlds
from test_retarget_feet import _contacts_by_kimodos_rule as contacts_by_kimodos_rule

KNOWN_PARTS = known_parts()  # every canonical part, as maps print them
MPFB2 = RIGS / "mpfb2"
RIG_FILES = {
    "mannequin": MPFB2 / "mpfb2_game_engine.glb",
    "mixamo": MPFB2 / "mpfb2_mixamo.glb",
    "robot": RIGS / "quaternius" / "RobotExpressive.glb",
    "female": RIGS / "quaternius" / "quaternius_female_dress.glb",
}
RIG_NAMES = ("mannequin", "mixamo", "rigify", "robot", "female")
CLIP_NAMES = sorted(path.name for path in CLIPS.iterdir() if path.is_dir())
# Options and selections that vary across the cases (the rest: defaults, the armature selected).
OPTIONS = {("mannequin", "g1_04"): {"in_place": True}, ("mannequin", "soma_02"): {"root_motion": "ROOT"},
           ("rigify", "soma_03"): {"in_place": True}, ("robot", "g1_02"): {"root_motion": "ROOT"},
           ("female", "soma_04"): {"in_place": True}}
MESH_SELECTED = {("mixamo", "g1_01"), ("robot", "soma_01"), ("female", "soma_02")}
# Bone map edits made through the panel, then the clip imported again: the Quaternius female's palm, which
# the names leave unmapped, set as its left hand; the mannequin's head emptied (it keeps its rest pose).
EDITS = {"female_soma_02": [("hand_l", "Palm.L")], "mannequin_soma_01": [("head", "")]}


def short(clip):
    return "_".join(clip.split("_")[:2])  # soma_01_single_text_prompt -> soma_01


def imported(rig, clip):
    """The key of the character a case imports: the rig, and the importer's options where not its defaults."""
    options = IMPORTS.get((rig, short(clip)), {})
    return "_".join([rig] + [str(value).lower() for _, value in sorted(options.items())])


# Cases whose character is an FBX file, imported by Blender's FBX importer, and whose clip is given as the
# FBX motion `kimodo-rig convert CLIP walk.fbx` writes: the command line retargets that .fbx motion onto
# the same .fbx character. The Quaternius female's original FBX (Blender 2.79's exporter, saved in
# another pose than its bind pose).
FBX_CASES = {"female_fbx_soma_01": RIGS / "quaternius" / "quaternius_female_dress.fbx"}
# (case, rig, clip, operator options, what is selected): every shared clip on every rig, and the FBX cases.
CASES = [
    ("{}_{}".format(rig, short(clip)), rig, clip, OPTIONS.get((rig, short(clip)), {}),
     "mesh" if (rig, short(clip)) in MESH_SELECTED else "armature")
    for rig in RIG_NAMES for clip in CLIP_NAMES
] + [("female_fbx_soma_01", "female", "soma_01_single_text_prompt", {}, "armature")]
# Rigify's metarig has no mesh: on the G1 clips it stays so (the core then stands it on its joints); on
# the SOMA clips it carries a body of one box per bone, made in Blender, whose soles are measured.
SKINNED_RIGIFY = {name for name, rig, clip, _, _ in CASES if rig == "rigify" and clip.startswith("soma")}
SOLE_CASES = [name for name, rig, _, _, _ in CASES if rig != "rigify" or name in SKINNED_RIGIFY]
# On bpy 4.2 LTS, to show that it works without running everything twice: every rig (Rigify bare), both
# Kimodo skeletons, each option (in place, root motion on a root bone), a selected mesh and the map edits
# (test_the_cases_run_every_shared_clip_on_every_rig_and_4_2_covers_each_rig_skeleton_and_option checks it).
LTS_CASES = {"mannequin_soma_01", "mixamo_g1_01", "rigify_g1_02", "robot_g1_02", "female_soma_02", "female_soma_04",
             "female_fbx_soma_01"}
BLENDERS = ("newest", "4.2")


def on_each_blender(names):
    """(version, case) parameters: every case on the newest bpy, the LTS_CASES on 4.2 too."""
    return [pytest.param(version, name, id="{}-{}".format(version, name))
            for version in BLENDERS for name in names if version == "newest" or name in LTS_CASES]


BOX_CASES = [
    ("box_soma_01", "soma_01_single_text_prompt", {}),
    ("box_g1_01", "g1_01_single_text_prompt", {}),
]
# Limb segments (start bone, end bone), written out here rather than taken from the mapping code:
# {W} Left/Right, {w} left/right, {s} l/r, {S} L/R.
SEGMENT_PATTERNS = {
    "upperarm": {"soma": ("{W}Arm", "{W}ForeArm"), "g1": ("{w}_shoulder_roll_skel", "{w}_elbow_skel"),
                 "mannequin": ("upperarm_{s}", "lowerarm_{s}"), "mixamo": ("mixamorig:{W}Arm", "mixamorig:{W}ForeArm"),
                 "robot": ("UpperArm{S}", "LowerArm{S}"), "female": ("UpperArm.{S}", "LowerArm.{S}"),
                 "rigify": ("upper_arm.{S}", "forearm.{S}")},
    "lowerarm": {"soma": ("{W}ForeArm", "{W}Hand"), "g1": ("{w}_elbow_skel", "{w}_wrist_roll_skel"),
                 "mannequin": ("lowerarm_{s}", "hand_{s}"), "mixamo": ("mixamorig:{W}ForeArm", "mixamorig:{W}Hand"),
                 "robot": ("LowerArm{S}", "Palm2{S}"), "female": ("LowerArm.{S}", "Palm.{S}"),
                 "rigify": ("forearm.{S}", "hand.{S}")},
    "thigh": {"soma": ("{W}Leg", "{W}Shin"), "g1": ("{w}_hip_roll_skel", "{w}_knee_skel"),
              "mannequin": ("thigh_{s}", "calf_{s}"), "mixamo": ("mixamorig:{W}UpLeg", "mixamorig:{W}Leg"),
              "robot": ("UpperLeg{S}", "LowerLeg{S}"), "female": ("UpperLeg.{S}", "LowerLeg.{S}"),
              "rigify": ("thigh.{S}", "shin.{S}")},
    "calf": {"soma": ("{W}Shin", "{W}Foot"), "g1": ("{w}_knee_skel", "{w}_ankle_pitch_skel"),
             "mannequin": ("calf_{s}", "foot_{s}"), "mixamo": ("mixamorig:{W}Leg", "mixamorig:{W}Foot"),
             "robot": ("LowerLeg{S}", "Foot{S}"), "female": ("LowerLeg.{S}", "Foot.{S}"),
             "rigify": ("shin.{S}", "foot.{S}")},
}
SEGMENTS = {
    part + "_" + s: {kind: tuple(n.format(W=w, w=w.lower(), s=s, S=s.upper()) for n in names) for kind, names in kinds.items()}
    for part, kinds in SEGMENT_PATTERNS.items() for s, w in (("l", "Left"), ("r", "Right"))
}
SOURCE_TOES = {"soma": ("LeftToeBase", "RightToeBase"), "g1": ("left_toe_base", "right_toe_base")}
BAD_CLIPS = ["nan_rotation", "joints_25", "truncated_root", "zero_frames"]
# Blender's glTF importer with its default Bone Dir ("Blender") shortens each bone by the armature's scale
# but moves a mesh parented to a bone back from the bone's tail by the unshortened length
# (io_scene_gltf2/blender/imp/node.py, Blender 4.2 and 5.0): such a mesh lands (scale - 1) x the bone's
# length along the bone from where the file has it. RobotExpressive's armature is scaled 100x: its feet
# land 63 cm (of its 4.5 m) behind where the file has them (the foot mesh's front 20 cm ahead of the ankle
# instead of 84), its shins 60 cm up around its knees. Imported with Bone Dir "Temperance" (or "Fortune"),
# which keeps the bones' lengths, every mesh lands where the file has it. Either way the command line
# reads the character as Blender has it, exported, as for Rigify.
EXPORTED = ("robot",)
# How a rig file is imported, where not with the importer's defaults: the robot's kneel (G1's g1_02) as
# its file has the robot. As the default import has it, the knee's mesh is already 24 cm per 1.7 m under
# the floor where the kneeling toe floats 6.6 cm per 1.7 m: no kneel puts both on the floor with Kimodo's
# legs (the report says the feet's mesh points against the foot bones).
IMPORTS = {("robot", "g1_02"): {"bone_heuristic": "TEMPERANCE"}}
# What the add-on's report then says (the robot's armature is scaled 100x).
IMPORTER_HINT = ("; meshes hang from the bones of an armature scaled 100x: if it came from Blender's glTF importer, "
                 "import it again with Bone Dir 'Temperance', which puts them where the file has them")
# Same core, same answer: fed the numbers the add-on reads from Blender, the command line's core gives
# Blender's poses to 1e-14 m. The two read the same character in slightly different numbers (Blender keeps
# bone rests and vertices in float32: the Quaternius female's inputs are 4e-6 m apart), so the core must
# not make much more of a small difference: no cut-off in the swing foot's pitch onto the floor
# (lock._least_pitch; the female's g1_02 was 1.06e-4 m apart with one), and the armature's childless bones
# end in the tip joints the command line reads from the exported file (armature.tip_points; without them the
# robot faced by its hip line instead of heel to toe, 7e-6 rad off, 1.1e-4 m at its hands). Per 1.7 m of
# character, as every other length the retarget is judged by (`bones_bar_m`): the inputs' differences are
# float32's, relative to the character's size, and what the lock's solves make of them is too. The
# 4.6 m female's g1_01 is 1.5e-4 m apart at one frame since the hips' path (lock._hips_offsets) put a
# swing foot's pitch onto the floor there; fed inputs 3e-6 rad and 2e-6 of their size apart, the core
# differs by 1.0-1.7e-4 m with that path and by 0.6-4.6e-4 m without it.
BONES_BAR_M = 1e-4


def bones_bar_m(rest_heads) -> float:
    """BONES_BAR_M for a character as tall as its bones' heads reach, never less than BONES_BAR_M."""
    heights = [head[1] for head in rest_heads.values()]
    return BONES_BAR_M * max(1.0, (max(heights) - min(heights)) / 1.7)


# Every shared rig faces +Z in its file (glTF axes): the judge finds a toe-less foot's front along it.
BUILT_FORWARD = [0.0, 0.0, 1.0]


def kind(clip):
    return "g1" if clip.startswith("g1") else "soma"


@functools.lru_cache(maxsize=None)
def source_positions(clip):
    record = skeleton_record("g1skel34" if kind(clip) == "g1" else "somaskel30")
    quats, roots = read_raw_clip(CLIPS / clip, len(record["parents"]))
    positions = forward_kinematics(record["parents"], record["rest_local_offsets_m"], quats, roots)
    return {n: positions[:, i] for i, n in enumerate(record["joint_names"])}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    work = tmp_path_factory.mktemp("blender_extension")
    zip_path = work / "kimodo_motion.zip"
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_blender_extension.py"), str(zip_path)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return work, zip_path


@pytest.fixture(scope="module")
def command_line(tmp_path_factory):
    """`kimodo-rig` runs, one at a time beside the Blenders, each once per
    module for a target file's bytes: submit(key, call) -> a future of call(), run in submission order."""
    work = tmp_path_factory.mktemp("command_line")
    pool = ThreadPoolExecutor(max_workers=1)
    runs = {}
    lock = threading.Lock()  # both Blenders' threads queue retargets

    def submit(key, call):
        with lock:
            if key not in runs:
                runs[key] = pool.submit(call)
            return runs[key]
    yield work, submit
    pool.shutdown()


def digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()[:16]


def motion_file(name, clip, work):
    """The clip a case imports: its folder, or for an FBX case the .fbx motion `convert` writes of it."""
    if name not in FBX_CASES:
        return CLIPS / clip
    path = work / (clip + ".fbx")
    if not path.is_file():
        result = run_cli("convert", CLIPS / clip, path)
        assert result.returncode == 0, result.stderr
    return path


def character_file(name, rig, targets):
    """The character file a case's command line retargets onto (an FBX case: its .fbx)."""
    if name in FBX_CASES:
        return FBX_CASES[name]
    return targets["rigify_skinned" if name in SKINNED_RIGIFY else rig if rig not in EXPORTED else imported(rig, clip_of(name))]


def clip_of(name):
    return next(c[2] for c in CASES if c[0] == name)


def retarget_arguments(motion, target, options, output, bone_map=None):
    arguments = ["retarget", motion, "--target", target, "-o", output]
    if options.get("in_place"):
        arguments.append("--in-place")
    if options.get("root_motion") == "ROOT":
        arguments += ["--root-motion", "root"]
    if bone_map is not None:
        arguments += ["--map", bone_map]
    return arguments


def submit_retargets(command_line, cases, targets, motions):
    """Futures {case: (output file, CompletedProcess)}: `kimodo-rig retarget` of each case's clip onto its
    rig file with the same options, `map RIG --json` of each case's rig file ("map:<case>": Rigify's metarig
    bare and with a body map differently), and for a case whose map is edited in Blender, the retarget with
    `--map`: the printed map with the same edits ("<case>_edited")."""
    work, submit = command_line
    futures = {}
    for name, rig, clip, options, _ in cases:
        target = character_file(name, rig, targets)
        motion = motions[name]
        key = digest(target)
        printed = submit("map_" + key, lambda target=target: run_cli("map", target, "--json"))
        futures["map:" + name] = (None, printed)
        output = work / "{}_{}.glb".format(name, key)
        futures[name] = (output, submit(output.name, lambda a=retarget_arguments(motion, target, options, output): run_cli(*a)))
        if name not in EDITS:
            continue
        edited_output = work / "{}_{}_edited.glb".format(name, key)

        def edited(name=name, motion=motion, target=target, options=options, printed=printed, output=edited_output):
            bone_map = json.loads(printed.result().stdout)  # submitted before, so already done
            for part, bone in EDITS[name]:
                if bone:
                    bone_map[part] = bone
                else:
                    del bone_map[part]
            path = output.with_suffix(".json")
            path.write_text(json.dumps(bone_map, indent=2), encoding="utf-8")
            return run_cli(*retarget_arguments(motion, target, options, output, path))
        futures[name + "_edited"] = (edited_output, submit(edited_output.name, edited))
    return futures


@pytest.fixture(params=BLENDERS)
def version(request):
    return request.param


@pytest.fixture
def blender(blender_runs, version):
    """The Blender run of the Blender this test is for."""
    return blender_runs[version]


@pytest.fixture(scope="module")
def blender_runs(built, command_line):
    """Both Blenders at once, one process each for all of its cases, the command line's retargets beside
    them. Each Blender first exports the characters the command line reads as that Blender has them
    (Rigify's metarig, the EXPORTED rigs: a few seconds), so every retarget is queued before the cases run."""
    with ThreadPoolExecutor(max_workers=len(BLENDERS)) as pool:
        exported = dict(zip(BLENDERS, pool.map(lambda version: export_characters(version, built), BLENDERS)))
        runs = {version: pool.submit(run_blender_cases, version, built, command_line, exported[version])
                for version in BLENDERS}
        return {version: run.result() for version, run in runs.items()}


def export_characters(version, built):
    """{rig: file}: Rigify's metarig and the EXPORTED characters as this Blender exports them."""
    work = built[0] / version
    work.mkdir()
    exports = [{"rig": "rigify", "out": str(work / "rigify_metarig.glb")},
               {"rig": "rigify", "skin": True, "out": str(work / "rigify_skinned.glb")}]
    characters = {imported(rig, clip): (rig, clip) for _, rig, clip, _, _ in CASES if rig in EXPORTED}
    exports += [{"rig": "glb", "path": str(RIG_FILES[rig]), "import": IMPORTS.get((rig, short(clip)), {}),
                 "out": str(work / (key + "_imported.glb"))} for key, (rig, clip) in sorted(characters.items())]
    (work / "exports.json").write_text(json.dumps({"exports": exports}), encoding="utf-8")
    run_blender("extension.py", work / "exports.json", timeout=600, lts=version == "4.2")
    return dict(zip(["rigify", "rigify_skinned"] + sorted(characters), [Path(e["out"]) for e in exports]))


def run_blender_cases(version, built, command_line, exported):
    """The one Blender run per Blender (the bpy venv's, and bpy 4.2 LTS): install, every case (on 4.2 the
    LTS_CASES), the bad files, unregister. The command line's retargets of those cases (onto the rig
    files, and onto `exported` for Rigify and the EXPORTED rigs) are queued first and run beside it."""
    zip_path = built[1]
    work = built[0] / version
    run = [c for c in CASES if version == "newest" or c[0] in LTS_CASES]
    motions = {name: motion_file(name, clip, work) for name, _, clip, _, _ in run}
    futures = submit_retargets(command_line, run, dict(RIG_FILES, **exported), motions)
    cases = []
    for name, rig, clip, options, select in run:
        case = {"name": name, "rig": "rigify" if rig == "rigify" else "glb", "clip": str(motions[name]),
                "options": options, "select": select, "soles": name in SOLE_CASES, "skin": name in SKINNED_RIGIFY,
                "forward": BUILT_FORWARD}
        if rig != "rigify":
            case["path"] = str(FBX_CASES.get(name, RIG_FILES[rig]))
            case["import"] = IMPORTS.get((rig, short(clip)), {})
        if name in EDITS:
            case["edits"] = EDITS[name]
        if name == "mannequin_soma_01":
            case["draw_panel"] = True
            case["undo"] = True
        cases.append(case)
    for name, clip, options in BOX_CASES:
        reference = work / (name + "_step1.glb")
        result = run_cli("glb", CLIPS / clip, "-o", reference)
        assert result.returncode == 0, result.stderr
        cases.append({"name": name, "rig": "box", "clip": str(CLIPS / clip), "options": options, "select": "none",
                      "reference": str(reference), "compare_frames": [0, 40, 100, 148]})
    truncated = work / "truncated.npz"
    truncated.write_bytes((ROOT / "tests" / "data" / "npz" / "soma_01_single_text_prompt" / "motion.npz").read_bytes()[:5000])
    bad = [str(ROOT / "tests" / "invalid" / name) for name in BAD_CLIPS]
    bad += [str(ROOT / "tests" / "invalid" / "nan_rotation" / "local_rotations_xyzw.f32"), str(truncated),
            str(RIG_FILES["mannequin"]), str(work / "no_such_clip.bvh")]
    rigid = rv.variant(rv.MANNEQUIN, work, "rigid_parts.glb", rv.kenney_platformer_like)
    spec = {"zip": str(zip_path), "work": str(work), "cases": cases, "bad": bad, "bad_rig": str(RIG_FILES["mannequin"]),
            "good_clip": str(CLIPS / "soma_01_single_text_prompt"), "rootless_rig": str(RIG_FILES["mixamo"]),
            "rigid_rig": str(rigid)}
    (work / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    pointer = run_blender("extension.py", work / "spec.json", timeout=1800, lts=version == "4.2")
    result = json.loads(open(pointer["result"], encoding="utf-8").read())
    result["cases"] = {case["name"]: case for case in result["cases"]}
    result["work"] = work
    result["cli"] = futures
    return result


@pytest.fixture
def cli_outputs(blender):
    """Each case's (output file, printed report) from `kimodo-rig retarget`; "map:<case>": (None, the
    printed map)."""
    outputs = {}
    for name, (output, future) in blender["cli"].items():
        result = future.result()
        assert result.returncode == 0, (name, result.stderr)
        outputs[name] = (output, result.stdout if output is None else printed_report(result, output))
    return outputs


def printed_report(result, output):
    """The report lines `kimodo-rig retarget` printed for `output`, then its warning line about that output
    (on stderr, after the file's name) as the add-on's report ends: "  warning: ..."."""
    prefix = "warning: {}: ".format(output.name)
    warnings = [line[len(prefix):] for line in result.stderr.splitlines() if line.startswith(prefix)]
    return result.stdout + "".join("  warning: {}\n".format(line) for line in warnings)


def blender_positions(record):
    """{bone: (frames, 3)} of Blender's evaluated heads, glTF frame."""
    heads = record["heads"]
    return {name: np.array([frame[name] for frame in heads]) for name in heads[0]}


def test_the_cases_run_every_shared_clip_on_every_rig_and_4_2_covers_each_rig_skeleton_and_option():
    assert len(CLIP_NAMES) == 8 and len(CASES) == len(RIG_NAMES) * len(CLIP_NAMES) + len(FBX_CASES)
    assert {(rig, clip) for _, rig, clip, _, _ in CASES} == {(rig, clip) for rig in RIG_NAMES for clip in CLIP_NAMES}
    lts = [c for c in CASES if c[0] in LTS_CASES]
    assert len(lts) == len(LTS_CASES)
    assert {rig for _, rig, _, _, _ in lts} == set(RIG_NAMES)
    assert {kind(clip) for _, _, clip, _, _ in lts} == {"soma", "g1"}
    options = {(key, value) for c in CASES for key, value in c[3].items()}
    assert {(key, value) for c in lts for key, value in c[3].items()} == options
    assert any(c[4] == "mesh" for c in lts) and set(EDITS) <= LTS_CASES
    assert any(c[1] == "rigify" and c[0] not in SKINNED_RIGIFY for c in lts)  # a character with no mesh


def test_the_zip_holds_the_manifest_the_add_on_and_a_copy_of_kimodo_rig(built):
    _, zip_path = built
    with zipfile.ZipFile(zip_path) as archive:
        names = set(archive.namelist())
        manifest = archive.read("blender_manifest.toml").decode("utf-8")
        for path in (ROOT / "kimodo_rig").rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                assert archive.read(path.relative_to(ROOT).as_posix()) == path.read_bytes(), path
    assert {"__init__.py", "operators.py", "panel.py", "blender_data.py"} <= names
    assert 'id = "kimodo_motion"' in manifest and 'blender_version_min = "4.2.0"' in manifest
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    assert not (ROOT / "blender_extension" / "kimodo_rig").exists()  # copied at build time only


def test_the_zip_is_the_same_bytes_every_build(built, tmp_path):
    _, zip_path = built
    again = tmp_path / "again.zip"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "build_blender_extension.py"), str(again)], check=True,
                   capture_output=True)
    assert again.read_bytes() == zip_path.read_bytes()


def test_the_file_browser_offers_every_clip_the_command_line_reads_fbx_included(blender, cli_outputs):
    """File > Import > Kimodo motion's filter lists every extension `convert` reads, .fbx among them; and an
    .fbx motion picked there, onto a character imported with Blender's FBX importer, gives the command
    line's report for the same two .fbx files (the poses: test_blender_bones_match_kimodo_rig_retarget...)."""
    from kimodo_rig import formats

    offered = set(blender["filter_glob"].split(";"))
    readable = {"*" + extension for module in formats.FORMATS.values() for extension in module.EXTENSIONS}
    assert "*.fbx" in offered and readable <= offered
    for name in FBX_CASES:
        record = blender["cases"][name]
        assert record["result"] == ["FINISHED"], record["output"]
        assert report_lines(record["report"]) == report_lines(cli_outputs[name][1])


def test_blender_installs_registers_and_unregisters_the_extension(blender, version):
    assert blender["blender"].startswith("4.2.") == (version == "4.2")
    assert blender["installed"] and blender["operator"] and blender["panel"] and blender["menu"]
    assert blender["unregistered"] == {"operator": False, "panel": False, "set_bone": False}
    assert blender["re_registered"]


def disagreement(heads, rest_heads, output, rig):
    """The largest distance, over every frame and bone, between Blender's evaluated bone heads and the
    `kimodo-rig retarget` output's joints (pygltflib + numpy), and the one translation between the two
    rests that it allows."""
    glb = Glb(output)
    worlds = glb.animated_world_matrices()
    node_index = {node.name: i for i, node in enumerate(glb.gltf.nodes)}
    ours = blender_positions({"heads": heads})
    assert worlds.shape[0] == len(heads)
    # A box-rig output also carries `<bone>_tip` joints the retarget adds to childless bones; the armature
    # in Blender has only the rig's own bones.
    own = [name for name in glb.joint_names if not (name.endswith("_tip") and name[:-4] in glb.joint_names)]
    compared = [name for name in own if name in ours]
    assert len(compared) >= 20 and len(compared) == len(set(own)), (len(compared), len(own))
    # Each against the rest it reads: Blender's importer may place a character's bind elsewhere than the
    # file's scene does (RobotExpressive: 2.37 m lower); that must be one translation of the whole rig.
    binds = bind_worlds(output)
    shifts = np.array([np.array(rest_heads[n]) - binds[n][:3, 3] for n in compared])
    shift = shifts.mean(axis=0)
    assert np.abs(shifts - shift).max() <= 1e-4
    if rig != "robot":
        assert np.abs(shift).max() <= 1e-4, shift
    worst = max(float(np.linalg.norm(ours[n] - shift - worlds[:, node_index[n], :3, 3], axis=1).max()) for n in compared)
    return worst, shift


def report_lines(text):
    """A report's lines after its first (which names the file), and its pelvis heights. Which arm bone is
    named worst may differ where every arm matches to 1.000; the pelvis height is absolute, so it moves
    with the importer's placement of the rig (each figure rounded to a cm). The add-on's hint about
    Blender's importer (IMPORTER_HINT) is left out: the command line does not know where its file came from."""
    text = re.sub(r"\(worst [^)]*\)", "(worst ...)", text)
    text = re.sub(r"; meshes hang from the bones of an armature scaled .*", "", text)
    pelvis = [int(p) for p in re.findall(r"pelvis (-?\d+) cm", text)]
    return re.sub(r"pelvis (-?\d+) cm", "pelvis ... cm", text).strip().splitlines()[1:], pelvis


@pytest.mark.parametrize("version, case", on_each_blender([c[0] for c in CASES]))
def test_blender_bones_match_kimodo_rig_retarget_at_every_frame(blender, cli_outputs, case):
    record = blender["cases"][case]
    assert record["result"] == ["FINISHED"], record["output"]
    rig, clip = next(c[1:3] for c in CASES if c[0] == case)
    output, printed = cli_outputs[case]
    worst, shift = disagreement(record["heads"], record["rest_heads"], output, rig)
    assert worst <= bones_bar_m(record["rest_heads"]), worst
    frames = len(record["heads"])
    # Named after the clip, the scene set to its rate and range, the same report lines as the CLI.
    motion_frames = len(source_positions(clip)["LeftFoot" if kind(clip) == "soma" else "pelvis_skel"])
    assert record["action"].endswith("_{}".format(motion_frames)) and frames == motion_frames
    assert (record["fps"], record["frame_start"], record["frame_end"]) == (30, 1, motion_frames)
    (ours, our_pelvis), (theirs, their_pelvis) = report_lines(record["report"]), report_lines(printed)
    assert ours == theirs and len(our_pelvis) == len(their_pelvis) == 1
    # The robot as the importer's default Bone Dir assembles it: its feet's mesh behind its ankles, which
    # the report says (as the command line does) with what the user can do about it (the add-on only).
    hinted = IMPORTER_HINT in record["report"]
    assert hinted == (rig == "robot" and (rig, short(clip)) not in IMPORTS), record["report"]
    assert abs(our_pelvis[0] - (their_pelvis[0] + 100 * shift[1])) <= 1.0, (our_pelvis, their_pelvis, shift)
    assert record["report"].splitlines()[0].startswith(record["action"] + ": ")
    assert record["quaternion_modes"] == ["QUATERNION"]


@pytest.mark.parametrize("version, case", on_each_blender([c[0] for c in CASES]))
def test_blender_limbs_point_where_kimodo_puts_them(blender, case):
    _, rig, clip, _, _ = next(c for c in CASES if c[0] == case)
    source = source_positions(clip)
    ours = blender_positions(blender["cases"][case])
    cosines = {}
    for segment, table in SEGMENTS.items():
        sa, sb = table[kind(clip)]
        ta, tb = table[rig]
        s, t = source[sb] - source[sa], ours[tb] - ours[ta]
        cosines[segment] = float(np.mean(np.sum(s * t, -1) / np.linalg.norm(s, axis=-1) / np.linalg.norm(t, axis=-1)))
    # Issue 8's bars: SOMA 0.99, G1 0.97 (G1's g1_02 kneel included: the hips share the kneeling toe's
    # height with the legs, and where a character cannot kneel so the toe floats rather than the shin
    # turning), on every case and every limb: the robot's thighs too under the foot lock (a flat foot
    # holds the rotation that keeps its leg, a foot on its toe rolls on it, the swinging foot pitches onto
    # the floor rather than its leg lifting it; worst g1_04 0.979, soma_02 0.992), and its arms picking
    # something up in soma_03 (its long arms would put its hands under its floor: they are turned up at
    # the wrist and the back bends less before any arm turns; 0.995).
    issue_bar = 0.97 if kind(clip) == "g1" else 0.99
    assert min(cosines.values()) >= issue_bar, cosines


def kimodos_contacts(clip):
    """(frames, 4) left heel, left toe, right heel, right toe: Kimodo's rule on its posed_joints."""
    posed = np.load(NPZ / clip / "motion.npz", allow_pickle=False)["posed_joints"]
    record = skeletons.data("g1skel34" if kind(clip) == "g1" else "somaskel30")
    assert posed.shape[1] == len(record["joint_names"])
    groups, names = record["semantic_groups"], record["joint_names"]
    chain = [names.index(n) for n in groups["left_foot_chain"][:2] + groups["right_foot_chain"][:2]]
    return contacts_by_kimodos_rule(posed, chain)


@pytest.mark.parametrize("version, case", on_each_blender(SOLE_CASES))
def test_the_deformed_mesh_soles_are_on_the_floor_at_every_planted_frame(blender, case):
    """Issue 8's bar, as tests/test_retarget_feet.py holds the command line's files to it, measured on
    Blender's deformed mesh: at every frame where Kimodo has a foot's heel or toe in contact, the lowest
    vertex carried by that foot (its bone and those below it) is within 1 cm of the character's rest
    floor (its lowest foot vertex at rest), and no foot vertex goes more than 2 cm under it on any
    frame; both scaled with the character's height / 1.7 m. The contacts are the clip's: a kimodo.cpp
    clip carries none, so they are Kimodo's labels as Kimodo makes them (below 0.10 m and slower than
    0.15 m/s), numpy on Kimodo's own posed_joints of the same motion (its NPZ). Not the NPZ's
    foot_contacts, which a clip folder does not carry: those differ on 0.2-7% of frames, and on such a
    frame the foot is not locked (the robot's sole then 22 cm x height/1.7 m up)."""
    _, rig, clip, _, _ = next(c for c in CASES if c[0] == case)
    record = blender["cases"][case]
    contacts = kimodos_contacts(clip)
    floor = min(record["rest_soles"].values())
    scale = record["rest_height"] / 1.7
    lowest = {side: (np.array(record["soles"][side]) - floor) * 100.0 for side in "lr"}
    assert len(contacts) == len(lowest["l"]) and np.isfinite(np.concatenate(list(lowest.values()))).all()
    assert rig == "robot" or abs(floor) <= 0.03, floor  # the importer keeps these characters on the ground
    planted = np.concatenate([lowest[side][contacts[:, 2 * i] | contacts[:, 2 * i + 1]] for i, side in enumerate("lr")])
    assert len(planted) >= 10
    worst, under = float(np.abs(planted).max()), float(min(lowest[side].min() for side in "lr"))
    assert worst <= 1.0 * scale, (worst, np.sort(np.abs(planted))[-5:])
    assert under >= -2.0 * scale, under


# Cases whose planted feet slide more than issue 8's bar on Blender's mesh, with the figure met (none).
SKATE_NOT_MET = {}
# An in-place import slides its planted feet on purpose (the travel taken out of the hips after the lock:
# the report adds it back, this test does not): those cases are not held here.
SKATE_CASES = [name for name in SOLE_CASES if not next(c for c in CASES if c[0] == name)[3].get("in_place")]


@pytest.mark.parametrize("version, case", on_each_blender(SKATE_CASES))
def test_the_planted_feet_stay_where_they_land_on_blenders_mesh(blender, case):
    """Issue 8's planted-foot speed, Kimodo's measure on what Blender evaluates, at Kimodo's labels (as
    above): the foot bone's head while the heel is down, the toe bone's head (or, on a foot without one,
    the sole's front vertex of the deformed mesh, chosen at rest along the rig's facing: on the robot as
    Blender has it, its foot mesh 28 cm per 1.7 m behind the ankle, not the heel's back that is farthest
    from it) while the toe is, over frame steps in contact at both ends: at most 0.15 cm a frame per
    1.7 m of character."""
    _, rig, clip, _, _ = next(c for c in CASES if c[0] == case)
    record = blender["cases"][case]
    contacts = kimodos_contacts(clip)
    heads = blender_positions(record)
    bone_map = json.loads(record["bone_map"])
    steps = []
    for i, side in enumerate("lr"):
        heel = heads[bone_map["foot_" + side]]
        toe = heads[bone_map["toe_" + side]] if bone_map.get("toe_" + side) else np.array(record["fronts"][side])
        assert len(heel) == len(toe) == len(contacts)
        for channel, point in ((0, heel), (1, toe)):
            both = contacts[:-1, 2 * i + channel] & contacts[1:, 2 * i + channel]
            steps.append(np.linalg.norm(np.diff(point, axis=0), axis=1)[both])
    skate = float(np.concatenate(steps).mean()) * 100.0 / (record["rest_height"] / 1.7)
    assert skate <= SKATE_NOT_MET.get(case, 0.15), skate


@pytest.mark.parametrize("case", [c[0] for c in BOX_CASES])
def test_with_no_armature_selected_the_box_rig_matches_step_1_glb(blender, case):
    record = blender["cases"][case]
    assert record["result"] == ["FINISHED"], record["output"]
    assert [kind for _, kind in record["made"]] == ["ARMATURE", "MESH"]
    ours, theirs = record["heads"], record["reference_heads"]
    assert len(ours) == len(theirs) and set(ours[0]) == set(theirs[0])
    worst = max(float(np.linalg.norm(np.array(a[n]) - np.array(b[n]))) for a, b in zip(ours, theirs) for n in a)
    assert worst <= 1e-4, worst
    assert record["box_vertices"] == record["reference_vertices"]
    assert record["mesh_distance"] <= 1e-4
    assert "worst joint disagreement" in record["report"]


def test_bad_files_give_one_error_and_change_nothing(blender):
    for entry in blender["bad"]:
        path = entry["path"]
        assert entry["unchanged"], entry
        assert len(entry["errors"]) == 1, entry
        assert entry["result"].startswith("RuntimeError: Error: "), entry
        if entry["selection"] == "stick":
            assert "stick: no humanoid legs and arms found" in entry["errors"][0], entry
            continue
        if entry["selection"] == "constrained":
            assert "mpfb_rig: self-check failed: Blender puts a bone " in entry["errors"][0], entry
            continue
        if entry["selection"] == "rootless":
            assert entry["errors"][0].endswith(": no bone above the hips to carry root motion; choose root motion "
                                               "in the hips"), entry
            continue
        # The same line the command line gives reading the same file as a motion (`convert`: `inspect`
        # reads a rigged glTF such as the mannequin's as a pose, issue 41), and nothing written.
        clip = path.rsplit("/", 1)[0] if path.endswith(".f32") else path
        written = blender["work"] / "bad_converted.bvh"
        cli = run_cli("convert", clip, written)
        assert cli.returncode == 1 and not written.exists()
        assert entry["errors"][0] == "Error: " + cli.stderr.strip(), (entry, cli.stderr)
    assert {e["selection"] for e in blender["bad"]} == {"armature", "none", "stick", "rootless", "constrained"}


def test_a_character_of_rigid_parts_selected_gets_a_box_rig_and_a_warning_naming_it(blender):
    """The add-on retargets onto armatures. Kenney's platformer characters have none (a mesh object per
    limb, `rig_variants.kenney_platformer_like` imported by Blender's glTF importer): with one of their
    parts selected the motion went on a new box rig and nothing said the character was not used. The
    report now warns in one line naming the part and pointing at the command line; a lone mesh selected
    (Blender's default cube) is no character and gets the box rig without it."""
    part, cube = blender["rigid"]
    assert part["result"] == cube["result"] == ["FINISHED"] and part["new_armatures"] == cube["new_armatures"] == 1
    warnings = [line for line in part["report"].splitlines() if line.startswith("  warning: ")]
    assert warnings == ["  warning: torso is one of {} rigid parts with no armature: the motion is on a new Kimodo box "
                        "rig (`kimodo-rig retarget CLIP --target CHARACTER.glb` retargets onto characters of rigid "
                        "parts)".format(part["meshes"])], part["report"]
    assert part["meshes"] >= 3 and "warning" not in cube["report"], cube["report"]


@pytest.mark.parametrize("version, case", on_each_blender([c[0] for c in CASES]))
def test_the_stored_bone_map_is_the_table_kimodo_rig_map_prints(blender, cli_outputs, case):
    """The armature's `kimodo_bone_map` property after the first import: the JSON text `kimodo-rig map
    RIG --json` prints for the same rig file (and `retarget --map` reads)."""
    printed = json.loads(cli_outputs["map:" + case][1])
    # `map --json` prints the check's verdict beside the parts; the add-on stores the parts (it runs the
    # same check through kimodo_rig.retarget.api and refuses a map that fails it).
    assert printed.pop("check") == "ok"
    assert list(json.loads(blender["cases"][case]["bone_map"]).items()) == list(printed.items())  # in the printed order


@pytest.mark.parametrize("version, case", on_each_blender(sorted(EDITS)))
def test_an_edited_bone_map_is_what_the_next_import_uses_and_re_detect_restores_it(blender, cli_outputs, case):
    record = blender["cases"][case]
    edited = record["edited"]
    rig = next(c[1] for c in CASES if c[0] == case)
    assert edited["set_results"] == [["FINISHED"]] * len(EDITS[case]) and edited["result"] == ["FINISHED"], edited["output"]
    # The stored map: the printed one with the edits, still in the printed order.
    expected = json.loads(cli_outputs["map:" + case][1])
    assert expected.pop("check") == "ok"  # the check's verdict, which a --map file may carry and the add-on does not store
    for part, bone in EDITS[case]:
        if bone:
            expected[part] = bone
        else:
            del expected[part]
    assert list(json.loads(edited["map"]).items()) == sorted(expected.items(), key=lambda item: KNOWN_PARTS.index(item[0]))
    # Blender's bones at every frame: `kimodo-rig retarget --map` with that map.
    output, printed = cli_outputs[case + "_edited"]
    worst, _ = disagreement(edited["heads"], record["rest_heads"], output, rig)
    assert worst <= 1e-4, worst
    assert report_lines(edited["report"]) == report_lines(printed)
    # A bone the armature lacks: one error line, the map unchanged. Re-detect: the map as first stored.
    bad = record["bad_edit"]
    assert bad["result"].startswith("RuntimeError: Error: ") and bad["unchanged"], bad
    assert bad["errors"] == ["Error: {}: bone map: head: no bone named 'no such bone' in {}".format(record["armature"], record["armature"])]
    assert record["bone_map_redetected"] == record["bone_map"]


def test_the_palm_set_as_the_left_hand_follows_kimodos_left_hand(blender):
    """The Quaternius female's palm, unmapped by the names, set as hand_l: it then points (its head to its
    children's mean) where Kimodo's left hand points (LeftHand to LeftHandMiddleEnd) at every frame;
    before the edit it did not follow."""
    record = blender["cases"]["female_soma_02"]
    source = source_positions("soma_02_multi_text_prompt")
    kimodo_hand = source["LeftHandMiddleEnd"] - source["LeftHand"]

    def cosines(heads):
        bones = blender_positions({"heads": heads})
        palm = (bones["MiddleHand.L"] + bones["Thumb1.L"]) / 2 - bones["Palm.L"]
        return np.sum(palm * kimodo_hand, -1) / np.linalg.norm(palm, axis=-1) / np.linalg.norm(kimodo_hand, axis=-1)
    before, after = cosines(record["heads"]), cosines(record["edited"]["heads"])
    assert after.min() >= 0.99 and before.mean() < 0.9, (after.min(), before.mean())


def test_an_emptied_part_keeps_its_rest_pose(blender):
    """The mannequin's head emptied in the map: one chain fewer follows the clip, and the head keeps its
    rest pose in its neck's frame (Blender's pose basis for it stays the identity)."""
    record = blender["cases"]["mannequin_soma_01"]
    before, after = record["report"].splitlines()[1], record["edited"]["report"].splitlines()[1]
    assert before.strip().startswith("9 chains mapped") and after.strip().startswith("8 chains mapped"), (before, after)
    assert "head" not in json.loads(record["edited"]["map"])
    assert record["edited"]["emptied_basis"]["head"] <= 1e-5, record["edited"]["emptied_basis"]


def test_the_sidebar_panel_shows_the_last_report_and_every_part_with_its_bone(blender):
    record = blender["cases"]["mannequin_soma_01"]
    panel = [tuple(entry) for entry in record["panel"]]
    assert [entry[1] for entry in panel if entry[0] == "panel"] == ["Kimodo", "Fingers"]
    first_button = next(k for k, entry in enumerate(panel) if entry[0] == "operator")
    labels = [entry[1] for entry in panel[:first_button] if entry[0] == "label"]
    assert labels == [line.strip() for line in record["report"].splitlines()]
    assert panel[first_button][1] == "kimodo.detect_bone_map"
    # One row per canonical part: its name, then a button showing its bone that sets it.
    rows = [(panel[k - 1], entry) for k, entry in enumerate(panel) if entry[0] == "operator" and entry[1] == "kimodo.set_bone"]
    assert [label for (_, label), _ in rows] == list(KNOWN_PARTS)
    assert all(button[3] == {"part": label} for (_, label), button in rows)
    bone_map = json.loads(record["bone_map"])
    assert {label: button[2] for (_, label), button in rows} == {part: bone_map.get(part, "(none)") for part in KNOWN_PARTS}
    assert ("alert",) not in panel  # every stored bone is there
    assert [entry[0] for entry in record["panel_without_armature"]] == ["panel", "label", "label"]


def test_undo_removes_the_import(blender):
    record = blender["cases"]["mannequin_soma_01"]
    assert record["actions_after_import"] == 1
    assert record["undo_result"] == ["FINISHED"] and record["actions_after_undo"] == 0


def _imports(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            yield (node.module or "").split(".")[0]


def test_bpy_is_imported_only_by_the_add_on_blender_tests_and_scripts_and_nothing_imports_the_add_on():
    skipped = {".venvs", "node_modules", "data", ".git", "build"}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if skipped & set(parts):
            continue
        modules = set(_imports(path))
        assert "blender_extension" not in modules, path
        if "bpy" in modules:
            assert parts[0] in ("blender_extension", "scripts", "benchmarks") or parts[:2] == ("tests", "blender"), path
