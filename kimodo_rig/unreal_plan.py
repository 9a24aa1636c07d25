"""Everything the Unreal step decides without the editor: which clips, which asset paths and names, which
characters to look for, the frame change between glTF and Unreal, and the numbers that go into the
retarget pose. unreal_retarget.py (the only `import unreal`) only carries these out in the engine.

Frames. Kimodo's and glTF's: +Y up, +Z forward, +X the character's left, right-handed, metres. Unreal's:
+Z up, left-handed, centimetres. Unreal's glTF readers (GLTFCore, which Interchange's glTF translator
uses) map a glTF position (x, y, z) to (x, z, y) * 100 and a rotation (x, y, z, w) to (-x, -z, -y, w):
a mirror that swaps Y and Z, which is its own inverse. A character facing glTF +Z faces Unreal +Y, as
the mannequin does, with its left towards +X. Every rotation R maps to M R M (M the mirror), so rest
corrections computed here in glTF's frame carry over by converting each quaternion the same way.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .errors import KimodoError
from .formats import glb
from .formats import gltf_document as gd
from .model import Motion, Skeleton
from .naming import sanitise_asset_name
from .ops.fk import pose_globals, rest_positions, world_positions
from .retarget.mapping import (
    ARM_PARTS,
    SIDES,
    Chain,
    HumanoidMap,
    RestCorrections,
    link_parts,
    map_humanoid,
    rest_corrections,
    rest_leg_reach,
    retarget_chains,
)
from .retarget.report import format_report, measure_report
from .rotations import Quat, Vec3, length, subtract

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
USAGE = "give .glb files, then optionally a /Game/... Skeletal Mesh path last"

_ASSET_PATH = re.compile(r"^(/[A-Za-z0-9_][A-Za-z0-9_-]*)+$")


@dataclass(frozen=True)
class Request:
    """What the user asked for: the clips to import (in order) and the character, if one was named."""

    clips: Tuple[Path, ...]
    target: Optional[str]


def parse_arguments(arguments: Sequence[str], script_folder: Path) -> Request:
    """`[glb ...] [/Game/Path/SK_Target]`: .glb files, then optionally a Skeletal Mesh path last.
    No file arguments: every .glb beside the script."""
    arguments = [a for a in arguments if a.strip()]
    target = None  # type: Optional[str]
    if arguments and not arguments[-1].lower().endswith(GLB_EXTENSIONS) and arguments[-1].startswith("/"):
        target = asset_path(arguments.pop())
    clips = []  # type: List[Path]
    for argument in arguments:
        path = Path(argument)
        if not argument.lower().endswith(GLB_EXTENSIONS):
            raise KimodoError("{}: not a .glb file ({})".format(argument, USAGE))
        if not path.is_file():
            raise KimodoError("{}: no such file".format(argument))
        clips.append(path)
    if not clips:
        clips = sorted(p for p in Path(script_folder).iterdir() if p.is_file() and p.suffix.lower() == ".glb")
        if not clips:
            raise KimodoError("{}: no .glb files beside the script; give .glb paths (make them with kimodo_to_glb.py)"
                              .format(script_folder))
    return Request(tuple(clips), target)


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


def source_folder(name: str) -> str:
    return "{}/{}".format(SOURCE_ROOT, name)


def animation_path(name: str) -> str:
    return "{}/{}{}".format(RETARGETED_ROOT, ANIMATION_PREFIX, name)


def source_rig_path(name: str) -> str:
    return "{}/IK_Kimodo_{}".format(RIGS_ROOT, name)


def target_rig_path(target_path: str) -> str:
    return "{}/IK_{}".format(RIGS_ROOT, _target_name(target_path))


def retargeter_path(name: str, target_path: str) -> str:
    return "{}/RTG_Kimodo_{}_to_{}".format(RIGS_ROOT, name, _target_name(target_path))


def _target_name(target_path: str) -> str:
    """`/Game/Chars/SK_Hero.SK_Hero` -> `SK_Hero` (sanitised)."""
    return sanitise_asset_name(target_path.split(".")[0].rsplit("/", 1)[-1], "Target")


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

    @property
    def root_lift_cm(self) -> Vec3:
        """The source root's offset in the retarget pose: up by the rest leg reach (Kimodo's rest has the
        hips at the floor, its motion has them at standing height), in Unreal centimetres."""
        return engine_offset((0.0, self.leg_reach_m, 0.0))


def read_source(clip: Path) -> SourcePlan:
    """Read a .glb written by kimodo_to_glb.py and plan its IK Rig with the offline retarget's tables."""
    motion = glb.read(clip)
    engine_names = glb_joint_names(clip, motion.skeleton)
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
    )


def glb_joint_names(clip: Path, skeleton: Skeleton) -> Tuple[str, ...]:
    """The skeleton's joints as the .glb names them (Unreal names for SMPL-X by default, else native)."""
    document = gd.parse_glb(Path(clip).read_bytes(), str(clip))
    nodes = document.gltf.get("nodes", [])
    return glb.stored_joint_names(skeleton, [nodes[n].get("name", "") for n in document.gltf["skins"][0]["joints"]])


IMPORT_TOLERANCE_M = 0.005


def check_imported_source(source: SourcePlan, imported: Skeleton) -> None:
    """The imported source skeleton (from the engine, in Kimodo's frame) must rest where the .glb says,
    relative to the hips: otherwise the engine's glTF import did not apply the frame change assumed here,
    and every correction computed in that frame would be wrong."""
    expected = dict(zip(source.bone_names, rest_positions(source.motion.skeleton)))
    found = dict(zip(imported.joint_names, rest_positions(imported)))
    missing = [bone for bone in source.bone_names if bone not in found]
    if missing:
        raise KimodoError("{}: the imported skeleton lacks {} of the clip's bones ({}, ...)".format(
            source.motion.name, len(missing), missing[0]))
    hips = source.retarget_root
    for bone in source.bone_names:
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


def chain_mapping(source: SourcePlan, target: Skeleton,
                  target_chains: Sequence[Tuple[str, str, str]]) -> Dict[str, Optional[str]]:
    """Target chain -> source chain, or None for a chain left at rest. A target chain is recognised by
    the core's chain table for the target (same start bone, else the same name); it is mapped when the
    source has a chain of that kind (G1 has no clavicles, neck or head)."""
    table, _ = retarget_chains(map_humanoid(target, target.name))
    kind_by_start = {chain.start: chain.name for chain in table}
    kinds = {chain.name for chain in table}
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
    target_map: HumanoidMap


def retarget_pose(source: SourcePlan, target: Skeleton) -> RetargetPose:
    """The core's rest correction (D = Rg^-1 G Rg in the bone's local frame, Rg its global rest rotation after
    its parent's offset) restricted to the arm segments: the IK Retargeter's FK chains carry the rest-pose
    difference (T-pose or G1 zero pose vs A-pose) into every frame unless the retarget pose cancels it."""
    target_map = map_humanoid(target, target.name)
    links = [link for link in link_parts(source.humanoid, target_map) if link.part in ARM_SEGMENTS]
    corrections = rest_corrections(source.humanoid, target_map, links)
    offsets = tuple((bone, engine_rotation(offset)) for bone, offset in corrections.named_offsets(target))
    return RetargetPose(offsets, corrections, target_map)


# The baked sequence, read back: per frame, per target bone, the engine's local (translation cm, rotation xyzw).

BakedFrames = Sequence[Sequence[Tuple[Sequence[float], Sequence[float]]]]
REFERENCE_POSE_TOLERANCE = 1e-4


def baked_positions(target: Skeleton, frames: BakedFrames) -> List[List[Vec3]]:
    """World positions (Kimodo's frame, metres) of every target bone per frame, by the core's FK with each
    frame's own local translations (the engine moves the pelvis below a still root)."""
    positions = []
    for row in frames:
        posed = Skeleton(target.name, target.joint_names, target.parents,
                         tuple(gltf_position(translation) for translation, _ in row), label=target.label)
        rotations = [gltf_rotation(rotation) for _, rotation in row]
        positions.append(pose_globals(posed, rotations, posed.rest_offsets[0])[1])
    return positions


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


def baked_report(name: str, source: SourcePlan, pose: RetargetPose, mapping: Dict[str, Optional[str]],
                 frames: BakedFrames, duration_s: float) -> str:
    """The offline retarget's report, measured on the baked sequence's poses. A bake that holds only the
    reference pose is an error, not a report."""
    target = pose.target_map.skeleton
    if not frames or is_reference_pose_only(target, frames):
        raise KimodoError("{}: the baked sequence holds only the reference pose: the IK Retargeter mapped no motion "
                          "(check the IK Rigs' chains and, on UE 5.6+, the retargeter's op stack)".format(name))
    report = measure_report(
        skeleton_label=source.motion.skeleton.label,
        joint_count=source.motion.joint_count,
        source_map=source.humanoid,
        target_map=pose.target_map,
        source_positions=world_positions(source.motion),
        target_positions=baked_positions(target, frames),
        duration_s=duration_s,
        chains_mapped=sum(1 for chain in mapping.values() if chain),
        left_at_rest=[chain for chain, source_chain in mapping.items() if not source_chain],
        reach_source=source.leg_reach_m,
        reach_target=rest_leg_reach(pose.target_map),
        arm_correction_max_deg=pose.corrections.arm_max_deg,
        facing=pose.corrections.facing,
    )
    return format_report(name, report)
