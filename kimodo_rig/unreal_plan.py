"""Everything the Unreal step decides without the editor: which clips (.glb, or .fbx motions read by our
FBX reader), which asset paths and names, which characters to look for (or the character file to import:
an .fbx the editor imports natively, planned from our own FBX reader as `kimodo-rig retarget --target`
reads it), which bone plays which part (the automatic map, or a --map file as offline), the
frame change between glTF and Unreal, the numbers that go into the retarget pose, how root motion is set
up, the clip the engine imports (turned to the character's facing; for `--root-motion root`, with a bone
above the hips carrying the heading and travel), and the report read back from the bake (the clip sampled
at the baked keys' times, the root bone's track). unreal_retarget.py (the only `import unreal`) only
carries these out.

Frames. Kimodo's and glTF's: +Y up, +Z forward, +X the character's left, right-handed, metres. Unreal's:
+Z up, left-handed, centimetres. Unreal's glTF readers (GLTFCore, which Interchange's glTF translator
uses) map a glTF position (x, y, z) to (x, z, y) * 100 and a rotation (x, y, z, w) to (-x, -z, -y, w):
a mirror that swaps Y and Z, which is its own inverse. A character facing glTF +Z faces Unreal +Y, as
the mannequin does, with its left towards +X. Every rotation R maps to M R M (M the mirror), so rest
corrections computed here in glTF's frame carry over by converting each quaternion the same way.
"""
from __future__ import annotations

import hashlib
import math
import re
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Dict, List, Optional, Sequence, Tuple

from .errors import KimodoError
from .files import open_input, read_input
from .formats import fbx, glb
from .formats import gltf_document as gd
from .formats.options import WriteOptions
from .model import Motion, Skeleton
from .naming import sanitise_asset_name
from .ops.fk import pose_globals, rest_pose, rest_positions, world_positions
from .retarget.character import end_bones, load_target, map_target, read_user_map
from .retarget.mapping import (
    ARM_PARTS,
    SIDES,
    Chain,
    HumanoidMap,
    RestCorrections,
    find_root_bone,
    link_parts,
    map_from_parts,
    map_humanoid,
    rest_corrections,
    rest_leg_reach,
    retarget_chains,
)
from .retarget.report import format_report, measure_report
from .retarget.solve import ROOT_MOTION_MODES
from .rotations import (
    Quat,
    Vec3,
    dot,
    length,
    quat_angle,
    quat_conjugate,
    quat_multiply,
    quat_rotate,
    quat_normalize,
    quat_slerp,
    subtract,
    yaw_angle,
    yaw_rotation,
)

CM_PER_METRE = 100.0

KIMODO_ROOT = "/Game/Kimodo"
SOURCE_ROOT = KIMODO_ROOT + "/Source"
RIGS_ROOT = KIMODO_ROOT + "/Rigs"
RETARGETED_ROOT = KIMODO_ROOT + "/Retargeted"
BAKE_PREFIX = "KimodoBake_"  # the batch retarget's own output name, before it is moved to RETARGETED_ROOT
ANIMATION_PREFIX = "A_"
RETARGET_POSE_NAME = "Kimodo"

# The Third Person template's characters (UE5), then the UE4 mannequin.
TARGET_CANDIDATES = (
    "/Game/Characters/Mannequins/Meshes/SKM_Manny_Simple",
    "/Game/Characters/Mannequins/Meshes/SKM_Manny",
    "/Game/Characters/Mannequins/Meshes/SKM_Quinn_Simple",
    "/Game/Characters/Mannequins/Meshes/SKM_Quinn",
    "/Game/Mannequin/Character/Mesh/SK_Mannequin",
)
# Bones that make a skeletal mesh "mannequin-style" when no known character is present.
MANNEQUIN_BONES = ("upperarm_l", "thigh_l")
# The template's IK Rig, used when the engine cannot auto-generate a retarget definition.
TEMPLATE_IK_RIGS = (
    "/Game/Characters/Mannequins/Rigs/IK_Mannequin",
)
NO_TARGET_MESSAGE = (
    "no mannequin-style character found: add the Third Person content (Add > Add Feature or Content Pack > "
    "Third Person) or pass a Skeletal Mesh path last, e.g. /Game/MyChars/SK_Hero"
)
GLB_EXTENSIONS = (".glb",)
CLIP_EXTENSIONS = (".glb", ".fbx")  # a .glb from kimodo_to_glb.py, or an FBX motion (`kimodo-rig convert CLIP walk.fbx`)
CHARACTER_EXTENSIONS = (".fbx",)  # a character file the editor imports natively (--target)
CHARACTERS_ROOT = KIMODO_ROOT + "/Characters"
USAGE = "give .glb or .fbx clips, then optionally a /Game/... Skeletal Mesh path last (or --target character.fbx); " \
        "--root-motion hips|root and --map bones.json go anywhere"
ROOT_MOTION_OPTION = "--root-motion"
MAP_OPTION = "--map"
TARGET_OPTION = "--target"
OPTIONS = (ROOT_MOTION_OPTION, MAP_OPTION, TARGET_OPTION)  # each takes a value, `--name value` or `--name=value`, anywhere


def one_line(error: BaseException) -> str:
    """What the log shows of an error: ours as it is; an engine exception (or any other) as its type and the
    first line of its message, never a traceback."""
    if isinstance(error, KimodoError):
        return str(error)
    text = str(error).strip().splitlines()
    return "{}: {}".format(type(error).__name__, text[0] if text else "(no message)")


IMPORT_TIMEOUT_S = 300.0  # the longest wait for a background import (before UE 5.5)


def import_timeout_message(folder: str, seconds: float) -> str:
    return ("Interchange has not finished importing into {} after {:.0f} s (this engine imports in the "
            "background); nothing was retargeted for this clip: run the script again once the import is done"
            .format(folder, seconds))


def read_only_target_message(target_path: str) -> str:
    return ("{}: this engine's batch retarget (duplicate_and_retarget; it has no run_batch_retarget) takes no output "
            "folder, and this character is plugin or engine content outside /Game (often read-only): copy it into "
            "/Game and pass that path; nothing was imported".format(target_path))


def check_target_folder(target_path: str, batch_takes_a_folder: bool) -> None:
    """Once, before any import: where the engine's batch retarget cannot be told where to write (no
    run_batch_retarget; duplicate_and_retarget has no folder parameter before it), a character outside /Game
    is refused, so nothing is written into plugin or engine content."""
    if not batch_takes_a_folder and not target_path.startswith("/Game/"):
        raise KimodoError(read_only_target_message(target_path))


_ASSET_PATH = re.compile(r"^(/[A-Za-z0-9_][A-Za-z0-9_-]*)+$")


@dataclass(frozen=True)
class Request:
    """What the user asked for: the clips to import (in order) and the character, if one was named."""

    clips: Tuple[Path, ...]
    target: Optional[str]
    root_motion: str = "hips"  # as the offline --root-motion: hips (Kimodo's way) or root
    user_map: Optional[Dict[str, str]] = None  # as the offline --map: canonical part -> bone name
    map_source: str = ""  # the --map file as given, for messages
    character_file: Optional[Path] = None  # --target character.fbx: imported by the editor, planned by our reader


def parse_arguments(arguments: Sequence[str], script_folder: Path) -> Request:
    """`[--root-motion hips|root] [--map bones.json] [--target character.fbx] [clip ...] [/Game/Path/SK_Target]`:
    .glb or .fbx clips, then optionally a Skeletal Mesh path last (or a character file as --target, the
    offline retarget's option), the options anywhere. No clip arguments: every .glb and .fbx beside the
    script. The --map file is read here, once, by the offline reader, so a bad one stops the run before
    anything is imported."""
    arguments, options = _options([a for a in arguments if a.strip()])
    root_motion = options.get(ROOT_MOTION_OPTION, "hips")
    if root_motion not in ROOT_MOTION_MODES:
        raise KimodoError("{}: expected {}, got {!r}".format(
            ROOT_MOTION_OPTION, " or ".join(ROOT_MOTION_MODES), root_motion))
    map_source = options.get(MAP_OPTION)
    if map_source == "":
        raise KimodoError("{}: expected a file after it, e.g. {} bones.json (what kimodo-rig map RIG --json "
                          "prints)".format(MAP_OPTION, MAP_OPTION))
    user_map = read_user_map(map_source) if map_source is not None else None
    target = None  # type: Optional[str]
    character_file = None  # type: Optional[Path]
    given = options.get(TARGET_OPTION)
    if given is not None:
        if not given.lower().endswith(CHARACTER_EXTENSIONS):
            raise KimodoError("{}: expected a character file ({}) after {}, or a /Game/... path last".format(
                given or TARGET_OPTION, ", ".join(CHARACTER_EXTENSIONS), TARGET_OPTION))
        open_input(Path(given), given).close()
        character_file = Path(given)
    if arguments and not arguments[-1].lower().endswith(CLIP_EXTENSIONS) and arguments[-1].startswith("/"):
        target = asset_path(arguments.pop())
    if target is not None and character_file is not None:
        raise KimodoError("{}: one character: a /Game/... path or {} {}, not both".format(target, TARGET_OPTION, given))
    clips = []  # type: List[Path]
    for argument in arguments:
        path = Path(argument)
        if not argument.lower().endswith(CLIP_EXTENSIONS):
            raise KimodoError("{}: not a .glb or .fbx clip ({})".format(argument, USAGE))
        open_input(path, argument).close()  # refused as every reader refuses: missing, a folder, a FIFO, a device
        clips.append(path)
    if not clips:
        clips = sorted(p for p in Path(script_folder).iterdir() if p.is_file() and p.suffix.lower() in CLIP_EXTENSIONS
                       and (character_file is None or p.resolve() != character_file.resolve()))
        if not clips:
            raise KimodoError("{}: no .glb or .fbx clips beside the script; give clip paths (make them with "
                              "kimodo_to_glb.py)".format(script_folder))
    return Request(tuple(clips), target, root_motion, user_map, map_source or "", character_file)


def _options(arguments: List[str]) -> Tuple[List[str], Dict[str, str]]:
    """Each of OPTIONS given, `--name value` or `--name=value`, by name (the last one given counts; one with
    no value, last or before another option, gets ""); the other arguments in order."""
    rest = []  # type: List[str]
    values = {}  # type: Dict[str, str]
    index = 0
    while index < len(arguments):
        name, equals, value = arguments[index].partition("=")
        if name not in OPTIONS:
            rest.append(arguments[index])
        elif equals:
            values[name] = value
        elif index + 1 < len(arguments) and arguments[index + 1].partition("=")[0] not in OPTIONS:
            index += 1
            values[name] = arguments[index]
        else:
            values[name] = ""
        index += 1
    return rest, values


def asset_path(text: str) -> str:
    """A content path such as `/Game/MyChars/SK_Hero` (an object path `.../SK_Hero.SK_Hero` is accepted
    and shortened); anything that could escape the content folders or is not a valid name is refused."""
    path = text.strip()
    if "." in path.rsplit("/", 1)[-1]:
        package, _, object_name = path.rpartition(".")
        if object_name != package.rsplit("/", 1)[-1]:
            raise KimodoError("{}: not a Skeletal Mesh path like /Game/MyChars/SK_Hero".format(text))
        path = package
    if not _ASSET_PATH.match(path) or path.count("/") < 2:
        raise KimodoError("{}: not a Skeletal Mesh path like /Game/MyChars/SK_Hero".format(text))
    return path


def clip_name(clip: Path) -> str:
    """The asset-safe name of a clip: its file stem with anything but letters, digits and _ replaced."""
    return sanitise_asset_name(Path(clip).stem)


def character_folder(character_file: Path) -> str:
    """Where the editor's FBX import puts a --target character: /Game/Kimodo/Characters/<its name>."""
    return "{}/{}".format(CHARACTERS_ROOT, sanitise_asset_name(Path(character_file).stem, "Character"))


def source_folder(name: str) -> str:
    return "{}/{}".format(SOURCE_ROOT, name)


def animation_path(name: str) -> str:
    return "{}/{}{}".format(RETARGETED_ROOT, ANIMATION_PREFIX, name)


def source_rig_path(name: str) -> str:
    return "{}/IK_Kimodo_{}".format(RIGS_ROOT, name)


def target_rig_path(target_path: str) -> str:
    return "{}/IK_{}".format(RIGS_ROOT, _target_name(target_path))


def target_map_rig_path(target_path: str) -> str:
    """The character's IK Rig built from a --map (its chains on the bones the map names), apart from the one
    the engine generates, which retargeters of earlier runs may still use."""
    return "{}/IK_{}_Map".format(RIGS_ROOT, _target_name(target_path))


def retargeter_path(name: str, target_path: str) -> str:
    return "{}/RTG_Kimodo_{}_to_{}".format(RIGS_ROOT, name, _target_name(target_path))


def _target_name(target_path: str) -> str:
    """`/Game/Chars/SK_Hero.SK_Hero` -> `SK_Hero_` + 8 hex digits of the full package path, so two characters
    with one short name in different folders never share an IK Rig or a retargeter."""
    package = target_path.split(".")[0]
    digest = hashlib.sha1(package.encode("utf-8")).hexdigest()[:8]
    return "{}_{}".format(sanitise_asset_name(package.rsplit("/", 1)[-1], "Target"), digest)


def split_asset_path(path: str) -> Tuple[str, str]:
    """`/Game/A/B` -> (`/Game/A`, `B`)."""
    folder, _, name = path.rpartition("/")
    return folder, name


# Frame change, glTF (metres) <-> Unreal (centimetres). The mirror is its own inverse.

def engine_position(gltf_position: Sequence[float]) -> Vec3:
    """A glTF-frame position in metres as Interchange places it in Unreal, centimetres."""
    x, y, z = gltf_position
    return (x * CM_PER_METRE, z * CM_PER_METRE, y * CM_PER_METRE)


def gltf_position(engine_position_cm: Sequence[float]) -> Vec3:
    x, y, z = engine_position_cm
    return (x / CM_PER_METRE, z / CM_PER_METRE, y / CM_PER_METRE)


def engine_rotation(gltf_rotation: Sequence[float]) -> Quat:
    """A glTF-frame rotation (xyzw) as the same rotation in Unreal's frame (xyzw)."""
    x, y, z, w = gltf_rotation
    return (-x, -z, -y, w)


gltf_rotation = engine_rotation  # the mirror is an involution


def engine_offset(gltf_vector_m: Sequence[float]) -> Vec3:
    """A displacement (not a point) in glTF metres as Unreal centimetres; the same map as positions."""
    return engine_position(gltf_vector_m)


# The source: the clip as the core reads it, under the bone names the .glb (and so the engine) uses.

@dataclass(frozen=True)
class SourcePlan:
    """A clip ready for the IK Rig: its motion on the core's skeleton, that skeleton's humanoid map, the
    chain table and retarget root under the engine's bone names, and its rest leg reach."""

    motion: Motion
    humanoid: HumanoidMap
    bone_names: Tuple[str, ...]  # the motion's joints as the .glb (and so the engine) names them
    chains: Tuple[Chain, ...]
    retarget_root: str
    leg_reach_m: float
    imported_as_is: bool = True  # False for an .fbx clip: the engine imports the plan's .glb copy of it

    @property
    def root_lift_cm(self) -> Vec3:
        """The source root's offset in the retarget pose: up by the rest leg reach (Kimodo's rest has the
        hips at the floor, its motion has them at standing height), in Unreal centimetres."""
        return engine_offset((0.0, self.leg_reach_m, 0.0))


def read_source(clip: Path) -> SourcePlan:
    """Read a .glb written by kimodo_to_glb.py, or an FBX motion on a Kimodo skeleton (by our FBX reader,
    as `kimodo-rig convert` reads it), and plan its IK Rig with the offline retarget's tables. An .fbx is
    imported into the engine as the plan's .glb copy of what our reader reads (engine_source), so the
    engine meets the glTF frame change checked here, never a second one."""
    is_fbx = Path(clip).suffix.lower() == ".fbx"
    motion = fbx.read(clip) if is_fbx else glb.read(clip)
    engine_names = motion.skeleton.joint_names if is_fbx else glb_joint_names(clip, motion.skeleton)
    humanoid = map_humanoid(motion.skeleton, str(clip))
    chains, root = retarget_chains(humanoid)
    rename = dict(zip(motion.skeleton.joint_names, engine_names))
    return SourcePlan(
        motion=motion,
        humanoid=humanoid,
        bone_names=engine_names,
        chains=tuple(Chain(c.name, rename[c.start], rename[c.end]) for c in chains),
        retarget_root=rename[root],
        leg_reach_m=rest_leg_reach(humanoid),
        imported_as_is=not is_fbx,
    )


def glb_joint_names(clip: Path, skeleton: Skeleton) -> Tuple[str, ...]:
    """The skeleton's joints as the .glb names them (Unreal names for SMPL-X by default, else native)."""
    document = gd.parse_glb(read_input(clip), str(clip))  # a regular file within the size budget, as everywhere
    nodes = document.gltf.get("nodes", [])
    return glb.stored_joint_names(skeleton, [nodes[n].get("name", "") for n in document.gltf["skins"][0]["joints"]])


IMPORT_TOLERANCE_M = 0.005


def check_imported_source(source: SourcePlan, engine: EngineSource, imported: Skeleton) -> None:
    """The imported source skeleton (from the engine, in Kimodo's frame) must rest where the imported file
    says, relative to the hips: otherwise the engine's glTF import did not apply the frame change assumed
    here, and every correction computed in that frame would be wrong."""
    skeleton = engine.motion.skeleton
    expected = dict(zip(skeleton.joint_names, rest_positions(skeleton)))
    found = dict(zip(imported.joint_names, rest_positions(imported)))
    missing = [bone for bone in skeleton.joint_names if bone not in found]
    if missing:
        raise KimodoError("{}: the imported skeleton lacks {} of the clip's bones ({}, ...)".format(
            source.motion.name, len(missing), missing[0]))
    hips = source.retarget_root
    for bone in skeleton.joint_names:
        want = subtract(expected[bone], expected[hips])
        have = subtract(found[bone], found[hips])
        if length(subtract(want, have)) > IMPORT_TOLERANCE_M:
            raise KimodoError(
                "{}: the imported skeleton does not rest as the .glb does ({} is {:.1f} cm off, relative to {}): "
                "this engine's glTF import changes frames differently from the (x, z, y) * 100 mirror assumed "
                "here".format(source.motion.name, bone, 100.0 * length(subtract(want, have)), hips))


# The character, as the engine describes it.

def skeleton_from_engine(name: str, bone_names: Sequence[str], parent_names: Sequence[str],
                         translations_cm: Sequence[Sequence[float]], rotations: Sequence[Sequence[float]]) -> Skeleton:
    """An engine reference skeleton (local transforms, Unreal frame) as a core Skeleton in Kimodo's frame."""
    index = {bone: j for j, bone in enumerate(bone_names)}
    parents = tuple(index.get(parent, -1) for parent in parent_names)
    try:
        return Skeleton(
            name=name,
            joint_names=tuple(bone_names),
            parents=parents,
            rest_offsets=tuple(gltf_position(t) for t in translations_cm),
            rest_rotations=tuple(gltf_rotation(q) for q in rotations),
        )
    except ValueError as error:
        raise KimodoError("{}: unusable reference skeleton ({})".format(name, error)) from error


# A character file (--target character.fbx): planned from the file by our reader, as offline.

def plan_character_file(character_file: Path, *, user_map: Optional[Dict[str, str]] = None,
                        map_source: str = "") -> "TargetPlan":
    """The character in `character_file` as `kimodo-rig retarget --target FILE` reads and maps it
    (load_target: our FBX reader; map_target: the automatic map, or the --map), so the plan is the offline
    map; the editor imports the same file natively (as a Skeletal Mesh, no animation), and
    check_imported_character holds the import to the skeleton planned here."""
    target = load_target(str(character_file))
    humanoid = map_target(target, user_map, map_source or MAP_OPTION)
    chains, pelvis = retarget_chains(humanoid)
    root = find_root_bone(target.skeleton, humanoid.bones["hips"])
    return TargetPlan(target.skeleton, humanoid, tuple(chains), pelvis,
                      None if root is None else target.skeleton.joint_names[root])


def check_imported_character(character_file: Path, target: "TargetPlan", imported: Skeleton) -> None:
    """The editor's import of a character file (its skeleton from the engine, in Kimodo's frame) must hold
    every bone the plan maps, resting where our reader has it relative to the pelvis: otherwise the IK
    Rig would be built on bones the plan never read, or its corrections turned by another frame change."""
    mapped = sorted({target.skeleton.joint_names[joint] for joint in target.humanoid.bones.values()} | {target.pelvis})
    planned = dict(zip(target.skeleton.joint_names, rest_positions(target.skeleton)))
    found = dict(zip(imported.joint_names, rest_positions(imported)))
    missing = [bone for bone in mapped if bone not in found]
    if missing:
        raise KimodoError("{}: the editor's import lacks {} of the bones the map uses ({}, ...): it renamed or "
                          "dropped them; import it yourself and pass its /Game path".format(
                              character_file, len(missing), missing[0]))
    for bone in mapped:
        off = length(subtract(subtract(planned[bone], planned[target.pelvis]), subtract(found[bone], found[target.pelvis])))
        if off > IMPORT_TOLERANCE_M:
            raise KimodoError("{}: the editor's import does not rest as the file does ({} is {:.1f} cm off, relative "
                              "to {}): its FBX import changes frames differently from the (x, z, y) * 100 mirror "
                              "assumed here".format(character_file, bone, 100.0 * off, target.pelvis))


# The character's humanoid reading, made once with the offline retarget's own functions (map_humanoid, or
# map_from_parts for a --map; retarget_chains, find_root_bone, rest_corrections), so a character passed by
# path gets the same sides, leaf bones and facing as `kimodo-rig retarget --target` gives it.

@dataclass(frozen=True)
class TargetPlan:
    """The character as the offline retarget reads it: its humanoid map, its IK chain table, the bone above
    the pelvis that can carry root motion (None when the pelvis is the top bone)."""

    skeleton: Skeleton
    humanoid: HumanoidMap
    chains: Tuple[Chain, ...]
    pelvis: str
    root_bone: Optional[str]


def plan_target(target: Skeleton, *, user_map: Optional[Dict[str, str]] = None, map_source: str = "",
                skinned_bones: Optional[Collection[str]] = None) -> TargetPlan:
    """The character as the offline retarget reads it. `user_map` (a --map file's part -> bone name; its
    messages name `map_source`) is the map when given, as offline `map_target` takes it, so a rig the bone
    names cannot map is fixed by the same edit in both. `skinned_bones`: the bones the mesh's skin weights
    move, as the engine reads them (offline: `skinned_joints` of the file), None or empty where not known;
    they tell a deform chain from an FK or IK copy lying in the same place (MMD's 足D legs beside its 足
    legs), which the skeleton alone cannot, and the end bones that carry no vertex (Blender's FBX leaf
    bones), which are no joints of the skeleton planned, as offline (`character.end_bones`)."""
    weighted = set(skinned_bones or ())
    target = _without_end_bones(target, weighted)
    if user_map is not None:
        humanoid = map_from_parts(target, user_map, map_source or MAP_OPTION)
    else:
        skinned = frozenset(j for j, name in enumerate(target.joint_names) if name in weighted) or None
        humanoid = map_humanoid(target, target.name, skinned=skinned)
    chains, pelvis = retarget_chains(humanoid)
    root = find_root_bone(target, humanoid.bones["hips"])
    return TargetPlan(target, humanoid, tuple(chains), pelvis, None if root is None else target.joint_names[root])


def _without_end_bones(skeleton: Skeleton, skinned: Collection[str]) -> Skeleton:
    """`skeleton` without its end bones (`character.end_bones`, by the bones the skin moves; none when
    those are not known), the other joints in their order."""
    children: Dict[int, List[int]] = {}
    for joint, parent in enumerate(skeleton.parents):
        children.setdefault(parent, []).append(joint)
    ends = end_bones(skeleton.parents, children, set(skinned), skeleton.joint_names,
                     lambda j: math.degrees(2.0 * math.acos(min(1.0, abs(skeleton.rest_rotations[j][3])))))
    if not ends:
        return skeleton
    kept = [joint for joint in range(skeleton.joint_count) if joint not in ends]
    index = {old: new for new, old in enumerate(kept)}
    return Skeleton(skeleton.name, tuple(skeleton.joint_names[j] for j in kept),
                    tuple(index[skeleton.parents[j]] if skeleton.parents[j] >= 0 else -1 for j in kept),
                    tuple(skeleton.rest_offsets[j] for j in kept), tuple(skeleton.rest_rotations[j] for j in kept),
                    skeleton.label)


def chain_mapping(source: SourcePlan, target: TargetPlan,
                  target_chains: Sequence[Tuple[str, str, str]]) -> Dict[str, Optional[str]]:
    """Target chain -> source chain, or None for a chain left at rest. A target chain is recognised by
    the core's chain table for the target (same start bone, else the same name); it is mapped when the
    source has a chain of that kind (G1 has no clavicles, neck or head)."""
    kind_by_start = {chain.start: chain.name for chain in target.chains}
    kinds = {chain.name for chain in target.chains}
    source_kinds = {chain.name for chain in source.chains}
    mapping = {}  # type: Dict[str, Optional[str]]
    for name, start, _end in target_chains:
        kind = kind_by_start.get(start, name if name in kinds else None)
        mapping[name] = kind if kind in source_kinds else None
    return mapping


ARM_SEGMENTS = tuple(part + "_" + side for side in SIDES for part in ARM_PARTS)


@dataclass(frozen=True)
class RetargetPose:
    """The target's side of the retarget pose: one rotation offset per arm segment, parent before child, as
    Unreal quaternions (local frame: new local = reference local * offset), and the core's measurements."""

    offsets: Tuple[Tuple[str, Quat], ...]
    corrections: RestCorrections
    target: TargetPlan

    @property
    def target_map(self) -> HumanoidMap:
        return self.target.humanoid


def retarget_pose(source: SourcePlan, target: TargetPlan) -> RetargetPose:
    """The core's rest correction (D = Rg^-1 G Rg in the bone's local frame, Rg its global rest rotation after
    its parent's offset) restricted to the arm segments: the IK Retargeter's FK chains carry the rest-pose
    difference (T-pose or G1 zero pose vs A-pose) into every frame unless the retarget pose cancels it.
    The offsets aim the arms along the source's rest turned by the character's facing (the offline
    retarget's facing_between, measured from its feet, hips and shoulders), as the clip the engine imports
    is turned by that facing too (engine_source)."""
    links = [link for link in link_parts(source.humanoid, target.humanoid) if link.part in ARM_SEGMENTS]
    corrections = rest_corrections(source.humanoid, target.humanoid, links)
    offsets = tuple((bone, engine_rotation(offset)) for bone, offset in corrections.named_offsets(target.skeleton))
    return RetargetPose(offsets, corrections, target)

# Root motion, the offline --root-motion choice carried out by the IK Retargeter.

@dataclass(frozen=True)
class RootMotionPlan:
    """`hips` (default): root motion stays in the pelvis as Kimodo makes it, the character's root bone keeps
    its reference pose, so no Root Motion op may run (UE 5.6+ adds one with its defaults: copy the source
    root, which for a Kimodo .glb is the hips, onto the root bone, tilting it with the pelvis). `root`: as
    the offline `--root-motion root`, the root carries the ground-projected travel and the heading (the yaw
    of the hips about up), the pelvis the rest. The engine's op cannot make that from the pelvis (it copies
    the pelvis's whole rotation or none), so the imported clip gets a bone above its hips that already
    carries the heading (engine_source), and the op copies that bone, snapped to the ground."""

    mode: str
    source_root: str  # the source bone the op copies: the engine source's root bone (root), else the hips
    target_pelvis: str
    target_root: Optional[str]

    @property
    def root_motion_op(self) -> bool:
        return self.mode == "root"

    copy_from_source_root = True  # RootMotionSource.COPY_FROM_SOURCE_ROOT: the heading and travel as made here
    snap_to_ground = True  # RootMotionHeightSource.SNAP_TO_GROUND: the source root rides with the hips


def check_root_motion(mode: str, target: TargetPlan) -> None:
    """The choice must be one the character can carry out (checked once, before any clip is imported)."""
    if mode not in ROOT_MOTION_MODES:
        raise KimodoError("{}: expected {}, got {!r}".format(ROOT_MOTION_OPTION, " or ".join(ROOT_MOTION_MODES), mode))
    if mode == "root" and target.root_bone is None:
        raise KimodoError("{}: no bone above the pelvis ({}) to carry root motion: use {} hips".format(
            target.skeleton.name, target.pelvis, ROOT_MOTION_OPTION))


def plan_root_motion(mode: str, source: SourcePlan, target: TargetPlan) -> RootMotionPlan:
    check_root_motion(mode, target)
    source_root = engine_root_name(source) if mode == "root" else source.retarget_root
    return RootMotionPlan(mode, source_root, target.pelvis, target.root_bone)


# The clip as the engine imports it. The IK Retargeter applies each source bone's world-space rotation change
# to the target bone as it is, and its Root Motion op copies a source bone's transform as it is: it can
# neither turn the motion for a character that faces another way (the offline retarget turns it by the
# facing) nor split the hips into travel and heading. So the clip it gets needs neither: turned by the
# character's facing, and for `root` given a bone above the hips carrying the heading and the travel (the
# offline root track's rule), the hips below it keeping the rest. The user's .glb goes in as it is when it
# already is that clip (hips, a character facing the clip's way).

ENGINE_ROOT_NAMES = ("root", "kimodo_root", "kimodo_ground")
TURN_TOLERANCE_DEG = 0.01


@dataclass(frozen=True)
class EngineSource:
    """What Interchange imports for one clip: `motion` under the .glb's bone names, its root bone above the
    hips (None: the hips are the top bone), the yaw it was turned by, and whether it differs from the .glb."""

    motion: Motion
    root_bone: Optional[str]
    turn_deg: float
    derived: bool


def engine_root_name(source: SourcePlan) -> str:
    return next(name for name in ENGINE_ROOT_NAMES if name not in source.bone_names)


def engine_source(source: SourcePlan, pose: RetargetPose, root_motion: RootMotionPlan) -> EngineSource:
    """The clip turned by the character's facing F (world positions F p, world rotations F q); for `root`,
    a new top bone with, every frame, the heading H (yaw about up of the hips' turn from rest, the offline
    root track's `turn`) times the character's root rest rotation R, and the hips' position, the hips below
    it at (H R)^-1 of their world rotation. FK of the result gives the turned hips exactly."""
    motion = source.motion
    facing = pose.corrections.facing
    turn_deg = math.degrees(quat_angle(facing))
    turned = turn_deg > TURN_TOLERANCE_DEG
    skeleton = motion.skeleton.renamed(source.bone_names)
    if not turned and not root_motion.root_motion_op:
        return EngineSource(Motion(skeleton, motion.local_rotations, motion.root_positions, motion.fps,
                                   name=motion.name, prompt=motion.prompt), None, turn_deg, not source.imported_as_is)
    count = skeleton.joint_count
    hips_rest_rotation = quat_multiply(facing, skeleton.rest_rotations[0])
    hips_rest_position = quat_rotate(facing, skeleton.rest_offsets[0])
    inverse_hips_rest = quat_conjugate(hips_rest_rotation)
    rotations = array("d")
    roots = array("d")
    if not root_motion.root_motion_op:
        for frame in range(motion.frame_count):
            rotations.extend(quat_normalize(quat_multiply(facing, motion.rotation(frame, 0))))
            base = (frame * count + 1) * 4
            rotations.extend(motion.local_rotations[base:base + (count - 1) * 4])
            roots.extend(quat_rotate(facing, motion.root_position(frame)))
        turned_skeleton = Skeleton(skeleton.name, skeleton.joint_names, skeleton.parents,
                                   (hips_rest_position,) + skeleton.rest_offsets[1:],
                                   (hips_rest_rotation,) + skeleton.rest_rotations[1:], label=skeleton.label)
        return EngineSource(Motion(turned_skeleton, rotations, roots, motion.fps, name=motion.name,
                                   prompt=motion.prompt), None, turn_deg, True)
    target = pose.target
    root_index = target.skeleton.index(target.root_bone or "")
    root_rest = rest_pose(target.skeleton)[0][root_index]
    inverse_root_rest = quat_conjugate(root_rest)
    name = root_motion.source_root
    # The root sits below the hips' rest position, on the ground; the hips hang at their rest height above it.
    root_rest_position = (hips_rest_position[0], 0.0, hips_rest_position[2])
    hips_offset = quat_rotate(inverse_root_rest, (0.0, hips_rest_position[1], 0.0))
    lift = (0.0, hips_rest_position[1], 0.0)
    for frame in range(motion.frame_count):
        hips = quat_multiply(facing, motion.rotation(frame, 0))
        heading = yaw_rotation(yaw_angle(quat_multiply(hips, inverse_hips_rest)))
        root = quat_normalize(quat_multiply(heading, root_rest))
        rotations.extend(root)
        rotations.extend(quat_normalize(quat_multiply(quat_conjugate(root), hips)))
        base = (frame * count + 1) * 4
        rotations.extend(motion.local_rotations[base:base + (count - 1) * 4])
        roots.extend(subtract(quat_rotate(facing, motion.root_position(frame)), lift))
    with_root = Skeleton(
        skeleton.name, (name,) + skeleton.joint_names, (-1,) + tuple(parent + 1 for parent in skeleton.parents),
        (root_rest_position, hips_offset) + skeleton.rest_offsets[1:],
        (root_rest, quat_normalize(quat_multiply(inverse_root_rest, hips_rest_rotation))) + skeleton.rest_rotations[1:],
        label=skeleton.label)
    return EngineSource(Motion(with_root, rotations, roots, motion.fps, name=motion.name, prompt=motion.prompt),
                        name, turn_deg, True)


def write_engine_source(engine: EngineSource, folder: Path) -> Path:
    """The engine source as a .glb in `folder` (a temporary folder), named as the clip so Interchange names
    its assets as for the .glb itself; self-checked like every .glb this project writes."""
    path = Path(folder) / (engine.motion.name + ".glb")
    glb.write(engine.motion, path, WriteOptions(names="native"))
    return path


# Frame times. Interchange's glTF import resamples the animation (at 30 fps), and the batch retarget bakes one
# key per imported key: the report compares the clip and the bake at the baked keys' times.

def sample_motion(motion: Motion, times: Sequence[float]) -> Motion:
    """The motion at the given times (seconds), rotations slerped and root positions interpolated linearly
    between the two nearest frames; times outside the clip hold its first or last frame."""
    count = motion.joint_count
    rotations = array("d")
    roots = array("d")
    last = motion.frame_count - 1
    for time in times:
        position = min(max(time * motion.fps, 0.0), float(last))
        frame = min(int(math.floor(position)), max(last - 1, 0))
        weight = position - frame if last > 0 else 0.0
        following = min(frame + 1, last)
        for joint in range(count):
            rotations.extend(quat_slerp(motion.rotation(frame, joint), motion.rotation(following, joint), weight))
        a, b = motion.root_position(frame), motion.root_position(following)
        roots.extend(a[axis] + (b[axis] - a[axis]) * weight for axis in range(3))
    fps = (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 and times[-1] > times[0] else motion.fps
    return Motion(motion.skeleton, rotations, roots, fps, name=motion.name, prompt=motion.prompt)


def check_key_times(name: str, source: SourcePlan, times: Sequence[float]) -> None:
    """The baked keys must cover the clip: first at 0, last at its end (within one baked key)."""
    if not times:
        raise KimodoError("{}: the baked sequence has no keys".format(name))
    step = (times[-1] - times[0]) / (len(times) - 1) if len(times) > 1 else 0.0
    if any(b <= a for a, b in zip(times, times[1:])) or abs(times[0]) > 1e-4 or \
            abs(times[-1] - source.motion.duration) > step + 1e-4:
        raise KimodoError("{}: the baked keys run from {:.3f} s to {:.3f} s, the clip from 0 s to {:.3f} s".format(
            name, times[0], times[-1], source.motion.duration))


# The baked sequence, read back: per key, per target bone, the engine's local (translation cm, rotation xyzw),
# evaluated on the target mesh without retargeting, so every translation is the baked track's own.

BakedFrames = Sequence[Sequence[Tuple[Sequence[float], Sequence[float]]]]
REFERENCE_POSE_TOLERANCE = 1e-4


def baked_globals(target: Skeleton, frames: BakedFrames) -> List[Tuple[List[Quat], List[Vec3]]]:
    """Global rotations and world positions (Kimodo's frame, metres) of every target bone per key, by the
    core's FK with each key's own local translations (the engine moves the pelvis below the root)."""
    result = []
    for row in frames:
        posed = Skeleton(target.name, target.joint_names, target.parents,
                         tuple(gltf_position(translation) for translation, _ in row), label=target.label)
        rotations = [gltf_rotation(rotation) for _, rotation in row]
        result.append(pose_globals(posed, rotations, posed.rest_offsets[0]))
    return result


def baked_positions(target: Skeleton, frames: BakedFrames) -> List[List[Vec3]]:
    return [positions for _, positions in baked_globals(target, frames)]


def is_reference_pose_only(target: Skeleton, frames: BakedFrames) -> bool:
    """True when no frame moves any bone away from the reference pose: what the IK Retargeter bakes,
    silently, when a rig or the chain mapping is missing."""
    rest_rotations = [engine_rotation(q) for q in target.rest_rotations]
    rest_translations = [engine_position(t) for t in target.rest_offsets]
    for row in frames:
        for (translation, rotation), rest_rotation, rest_translation in zip(row, rest_rotations, rest_translations):
            if 1.0 - abs(sum(a * b for a, b in zip(rotation, rest_rotation))) > REFERENCE_POSE_TOLERANCE:
                return False
            if any(abs(a - b) > REFERENCE_POSE_TOLERANCE * CM_PER_METRE for a, b in zip(translation, rest_translation)):
                return False
    return True


UP = (0.0, 1.0, 0.0)
ROOT_TOLERANCE_CM = 1.0
ROOT_TOLERANCE_DEG = 1.0
ROOT_FOLLOW_TOLERANCE_CM = 5.0
ROOT_HEADING_TOLERANCE_DEG = 2.0


@dataclass(frozen=True)
class RootTrack:
    """The baked root bone over the clip, measured in Kimodo's frame against its reference pose, and
    against the baked pelvis (never against the clip or the plan that made the engine source)."""

    moved_cm: float  # largest distance from its reference position
    turned_deg: float  # largest rotation away from its reference rotation
    height_cm: float  # largest distance above (or below) the ground
    tilt_deg: float  # largest angle between its reference up and the world's up
    travelled_cm: float  # horizontal, first key to last
    off_pelvis_cm: float  # largest horizontal change of its offset from the pelvis, against the reference
    heading_deg: float = 0.0  # largest yaw about up away from its reference
    heading_off_deg: float = 0.0  # largest difference between its yaw and the pelvis's yaw, each from reference


def _yaw_from(rotation: Quat, reference: Quat) -> float:
    """Radians about up of the world-space turn taking `reference` to `rotation`."""
    return yaw_angle(quat_multiply(rotation, quat_conjugate(reference)))


def _angle_between(a: float, b: float) -> float:
    return abs(math.atan2(math.sin(a - b), math.cos(a - b)))


def measure_root_track(target: TargetPlan, frames: BakedFrames) -> RootTrack:
    skeleton = target.skeleton
    root = skeleton.index(target.root_bone) if target.root_bone is not None else 0
    pelvis = skeleton.index(target.pelvis)
    rest_rotations, rest_world = rest_pose(skeleton)
    reference_rotation, reference_position = rest_rotations[root], rest_world[root]
    reference_up = quat_rotate(quat_conjugate(reference_rotation), UP)  # the root's own axis that points up
    reference_offset = subtract(rest_world[pelvis], reference_position)
    moved = turned = height = tilt = off = heading = heading_off = 0.0
    path = []
    for rotations, positions in baked_globals(skeleton, frames):
        rotation, position = rotations[root], positions[root]
        path.append(position)
        moved = max(moved, length(subtract(position, reference_position)))
        turned = max(turned, math.degrees(quat_angle(quat_multiply(rotation, quat_conjugate(reference_rotation)))))
        height = max(height, abs(position[1]))
        up = quat_rotate(rotation, reference_up)
        tilt = max(tilt, math.degrees(math.acos(max(-1.0, min(1.0, dot(up, UP))))))
        offset = subtract(subtract(positions[pelvis], position), reference_offset)
        off = max(off, math.hypot(offset[0], offset[2]))
        root_yaw = _yaw_from(rotation, reference_rotation)
        heading = max(heading, math.degrees(abs(root_yaw)))
        heading_off = max(heading_off, math.degrees(_angle_between(
            root_yaw, _yaw_from(rotations[pelvis], rest_rotations[pelvis]))))
    travelled = math.hypot(path[-1][0] - path[0][0], path[-1][2] - path[0][2]) if path else 0.0
    return RootTrack(moved * CM_PER_METRE, turned, height * CM_PER_METRE, tilt, travelled * CM_PER_METRE,
                     off * CM_PER_METRE, heading, heading_off)


def root_motion_line(name: str, plan: RootMotionPlan, track: RootTrack) -> str:
    """The report's root line; a root that does not do what was asked is an error naming what it does."""
    if plan.target_root is None:
        return "  root motion in the pelvis ({} is the top bone)".format(plan.target_pelvis)
    if plan.mode == "hips":
        if track.moved_cm > ROOT_TOLERANCE_CM or track.turned_deg > ROOT_TOLERANCE_DEG:
            raise KimodoError(
                "{}: the baked {} moves up to {:.0f} cm and turns up to {:.0f} deg from its reference pose, though "
                "root motion was to stay in the pelvis ({} hips): a Root Motion op ran".format(
                    name, plan.target_root, track.moved_cm, track.turned_deg, ROOT_MOTION_OPTION))
        return "  root motion in the pelvis, {} at rest".format(plan.target_root)
    if track.height_cm > ROOT_TOLERANCE_CM or track.tilt_deg > ROOT_TOLERANCE_DEG:
        raise KimodoError(
            "{}: the baked {} rides up to {:.0f} cm off the ground and tilts up to {:.0f} deg ({} root wants it on "
            "the ground and upright): the Root Motion op copied the source's hips".format(
                name, plan.target_root, track.height_cm, track.tilt_deg, ROOT_MOTION_OPTION))
    if track.off_pelvis_cm > ROOT_FOLLOW_TOLERANCE_CM:
        raise KimodoError("{}: the baked {} does not follow the pelvis (up to {:.0f} cm off its reference offset)"
                          .format(name, plan.target_root, track.off_pelvis_cm))
    if track.heading_off_deg > ROOT_HEADING_TOLERANCE_DEG:
        raise KimodoError(
            "{}: the baked {} does not turn with the pelvis (its heading is up to {:.0f} deg off the pelvis's; {} "
            "root puts the heading on the root)".format(name, plan.target_root, track.heading_off_deg,
                                                        ROOT_MOTION_OPTION))
    return "  root motion on {}: travelled {:.0f} cm on the ground, upright, heading turned up to {:.0f} deg".format(
        plan.target_root, track.travelled_cm, track.heading_deg)


def baked_report(name: str, source: SourcePlan, pose: RetargetPose, mapping: Dict[str, Optional[str]],
                 frames: BakedFrames, key_times: Sequence[float], root_motion: RootMotionPlan) -> str:
    """The offline retarget's report, measured on the baked sequence's poses against the clip sampled at the
    baked keys' times, and a line for the root bone. A bake that holds only the reference pose, keys that do
    not cover the clip, or a root that does not do what was asked is an error, not a report."""
    target = pose.target.skeleton
    if not frames or is_reference_pose_only(target, frames):
        raise KimodoError("{}: the baked sequence holds only the reference pose: the IK Retargeter mapped no motion "
                          "(check the IK Rigs' chains and, on UE 5.6+, the retargeter's op stack)".format(name))
    if len(key_times) != len(frames):
        raise KimodoError("{}: {} baked keys read back, {} key times".format(name, len(frames), len(key_times)))
    check_key_times(name, source, key_times)
    report = measure_report(
        skeleton_label=source.motion.skeleton.label,
        joint_count=source.motion.joint_count,
        source_map=source.humanoid,
        target_map=pose.target_map,
        source_positions=world_positions(sample_motion(source.motion, key_times)),
        target_positions=baked_positions(target, frames),
        duration_s=source.motion.duration,
        chains_mapped=sum(1 for chain in mapping.values() if chain),
        left_at_rest=[chain for chain, source_chain in mapping.items() if not source_chain],
        reach_source=source.leg_reach_m,
        reach_target=rest_leg_reach(pose.target_map),
        arm_correction_max_deg=pose.corrections.arm_max_deg,
        facing=pose.corrections.facing,
        character=target,
    )
    root_line = root_motion_line(name, root_motion, measure_root_track(pose.target, frames))
    return format_report(name, report) + "\n" + root_line
