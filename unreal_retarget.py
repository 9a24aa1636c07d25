"""Kimodo .glb clips onto the Unreal mannequin (or your character), inside the Unreal Editor.

In the Output Log's Cmd box (`py` runs a Python file with arguments):
    py "C:/path/to/unreal_retarget.py" "C:/path/to/walk_150.glb"
    py "C:/path/to/unreal_retarget.py"                                  # every .glb beside this script
    py "C:/path/to/unreal_retarget.py" "C:/path/walk_150.glb" /Game/MyChars/SK_Hero

Each clip: Interchange import to /Game/Kimodo/Source/<name>, a source IK Rig and an IK Retargeter in
/Game/Kimodo/Rigs, a retarget pose holding the two corrections, a bake to /Game/Kimodo/Retargeted/A_<name>,
and a report read back from the baked sequence. Every decision that needs no editor (names, chains, the
lift, the arm offsets, the report) is made by kimodo_rig (beside this file) with the same functions the
offline `kimodo-rig retarget` uses; this file only carries them out. It is the only `import unreal`.
Works on UE 5.2 to 5.7 by asking the engine for features rather than reading its version.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Type, TypeVar

HERE = Path(os.path.abspath(globals().get("__file__") or sys.argv[0])).parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))  # Unreal's Python has no packages: kimodo_rig sits beside this file

import unreal  # noqa: E402

from kimodo_rig import unreal_plan as plan  # noqa: E402
from kimodo_rig.errors import KimodoError  # noqa: E402
from kimodo_rig.model import Skeleton  # noqa: E402

AssetType = TypeVar("AssetType", bound=unreal.Object)


class EngineError(Exception):
    """Something the engine did not do (missing feature, failed import); one line for the log."""


def main(arguments: Sequence[str]) -> int:
    try:
        request = plan.parse_arguments(arguments, HERE)
        require_features()
        target = find_target(request.target)
        target_skeleton = engine_skeleton(target)
        target_rig = target_ik_rig(target)
    except (KimodoError, EngineError) as error:
        unreal.log_error("kimodo: " + str(error))
        return 1
    unreal.log("kimodo: target {} ({} bones)".format(target.get_path_name(), target_skeleton.joint_count))
    failures = 0
    for clip in request.clips:
        try:
            report = retarget_clip(clip, target, target_skeleton, target_rig)
        except (KimodoError, EngineError) as error:
            unreal.log_error("kimodo: {}: {}".format(clip.name, error))
            failures += 1
            continue
        except Exception as error:  # an engine call raised: report this clip, keep going with the others
            unreal.log_error("kimodo: {}: {}: {}".format(clip.name, type(error).__name__, error))
            failures += 1
            continue
        for line in report.splitlines():
            unreal.log(line)
    unreal.log("kimodo: {} of {} clips retargeted".format(len(request.clips) - failures, len(request.clips)))
    return 1 if failures else 0


# Features, asked for by name: a missing one gets a sentence saying what it is and what provides it.
REQUIRED_FEATURES = (
    ("InterchangeManager", "", "Interchange import (UE 5.2 or later with the Interchange plugins enabled)"),
    ("IKRigController", "add_retarget_chain", "the IK Rig Python API (UE 5.2 or later, IK Rig plugin enabled)"),
    ("IKRetargeterController", "set_rotation_offset_for_retarget_pose_bone",
     "retarget pose editing from Python (UE 5.2 or later, IK Rig plugin enabled)"),
    ("IKRetargeterController", "set_root_offset_in_retarget_pose",
     "retarget pose root offsets from Python (UE 5.2 or later)"),
    ("IKRetargetBatchOperation", "duplicate_and_retarget", "batch retargeting from Python (UE 5.2 or later)"),
    ("IKRigDefinitionFactory", "", "IK Rig asset creation (IK Rig plugin)"),
    ("IKRetargetFactory", "", "IK Retargeter asset creation (IK Rig plugin)"),
    ("RetargetSourceOrTarget", "", "the IK Rig plugin's Python types"),
    ("AnimationLibrary", "get_sequence_length", "the Animation Blueprint Library (Python access to sequences)"),
)


def require_features() -> None:
    missing = []
    for class_name, method, why in REQUIRED_FEATURES:
        owner = getattr(unreal, class_name, None)
        if owner is None or (method and not hasattr(owner, method)):
            missing.append("{}{} ({})".format(class_name, "." + method if method else "", why))
    if missing:
        raise EngineError("this editor lacks " + "; ".join(missing) + "; nothing was imported")


def source_side() -> unreal.RetargetSourceOrTarget:
    return unreal.RetargetSourceOrTarget.SOURCE


def target_side() -> unreal.RetargetSourceOrTarget:
    return unreal.RetargetSourceOrTarget.TARGET


# Assets

def asset_tools() -> unreal.AssetTools:
    return unreal.AssetToolsHelpers.get_asset_tools()


def delete_if_present(path: str) -> None:
    if unreal.EditorAssetLibrary.does_asset_exist(path) and not unreal.EditorAssetLibrary.delete_asset(path):
        raise EngineError("{}: could not replace the earlier asset (is it open in an editor?)".format(path))


def new_asset(path: str, asset_class: Type[AssetType], factory: unreal.Factory) -> AssetType:
    delete_if_present(path)
    folder, name = plan.split_asset_path(path)
    asset = asset_tools().create_asset(name, folder, asset_class, factory)
    if not isinstance(asset, asset_class):
        raise EngineError("{}: could not create the asset".format(path))
    return asset


def assets_in(folder: str) -> List[unreal.Object]:
    found = []
    for path in unreal.EditorAssetLibrary.list_assets(folder, True, False):
        asset = unreal.EditorAssetLibrary.load_asset(path)
        if asset is not None:
            found.append(asset)
    return found


# Import

def import_clip(clip: Path, name: str) -> Tuple[unreal.SkeletalMesh, unreal.AnimSequence]:
    """Interchange's glTF import of a skinned, animated .glb; metres become centimetres on the way in."""
    folder = plan.source_folder(name)
    manager = unreal.InterchangeManager.get_interchange_manager_scripted()
    source_data = unreal.InterchangeManager.create_source_data(str(clip))
    parameters = unreal.ImportAssetParameters()
    parameters.is_automated = True
    parameters.replace_existing = True  # an earlier import of the same clip is replaced in place
    manager.import_asset(folder, source_data, parameters)  # a list of assets on 5.3+, a bool on 5.2
    if hasattr(manager, "wait_until_all_tasks_done"):
        manager.wait_until_all_tasks_done(False)
    meshes = [a for a in assets_in(folder) if isinstance(a, unreal.SkeletalMesh)]
    sequences = [a for a in assets_in(folder) if isinstance(a, unreal.AnimSequence)]
    if not meshes:
        raise EngineError("Interchange imported no Skeletal Mesh into {} (is the glTF Interchange translator "
                          "enabled?)".format(folder))
    if not sequences:
        raise EngineError("Interchange imported no Anim Sequence into {}".format(folder))
    return meshes[0], sequences[0]


# The character

def find_target(path: Optional[str]) -> unreal.SkeletalMesh:
    if path is not None:
        asset = unreal.EditorAssetLibrary.load_asset(path) if unreal.EditorAssetLibrary.does_asset_exist(path) else None
        if not isinstance(asset, unreal.SkeletalMesh):
            raise EngineError("{}: no Skeletal Mesh at this path".format(path))
        return asset
    for candidate in plan.TARGET_CANDIDATES:
        if unreal.EditorAssetLibrary.does_asset_exist(candidate):
            asset = unreal.EditorAssetLibrary.load_asset(candidate)
            if isinstance(asset, unreal.SkeletalMesh):
                return asset
    registry = unreal.AssetRegistryHelpers.get_asset_registry()
    for data in registry.get_assets_by_class(unreal.TopLevelAssetPath("/Script/Engine", "SkeletalMesh"), True) or []:
        if str(data.package_path).startswith(plan.SOURCE_ROOT):
            continue  # our own imports are sources, not characters
        asset = data.get_asset()
        if isinstance(asset, unreal.SkeletalMesh) and set(plan.MANNEQUIN_BONES) <= set(engine_bones(asset)[0]):
            return asset
    raise EngineError(plan.NO_TARGET_MESSAGE)


def engine_bones(mesh: unreal.SkeletalMesh) -> Tuple[List[str], List[str], List[Tuple[float, float, float]],
                                                     List[Tuple[float, float, float, float]]]:
    """The mesh's reference skeleton as the engine holds it: bone names, parent names ("None" at the root),
    local reference translations (cm) and rotations (xyzw), parent before child."""
    component = unreal.new_object(unreal.SkeletalMeshComponent)
    if hasattr(component, "set_skeletal_mesh_asset"):
        component.set_skeletal_mesh_asset(mesh)
    else:
        component.set_skeletal_mesh(mesh)
    names = [str(component.get_bone_name(i)) for i in range(component.get_num_bones())]
    parents = [str(component.get_parent_bone(n)) for n in names]
    translations = []
    rotations = []
    for index in range(len(names)):
        transform = component.get_ref_pose_transform(index)
        translations.append(vector_tuple(transform.translation))
        rotations.append(quat_tuple(transform.rotation))
    return names, parents, translations, rotations


def engine_skeleton(mesh: unreal.SkeletalMesh) -> Skeleton:
    """The mesh's reference skeleton as a core Skeleton in Kimodo's frame."""
    return plan.skeleton_from_engine(mesh.get_name(), *engine_bones(mesh))


def vector_tuple(vector: unreal.Vector) -> Tuple[float, float, float]:
    return (vector.x, vector.y, vector.z)


def quat_tuple(quat: unreal.Quat) -> Tuple[float, float, float, float]:
    return (quat.x, quat.y, quat.z, quat.w)


# IK Rigs

def target_ik_rig(target: unreal.SkeletalMesh) -> unreal.IKRigDefinition:
    """The target's IK Rig from the engine's auto-generated retarget definition, else the template's."""
    path = plan.target_rig_path(target.get_path_name())
    if unreal.EditorAssetLibrary.does_asset_exist(path):
        # Kept from an earlier run: retargeters made then still use it, so it is reused, not replaced.
        existing = unreal.EditorAssetLibrary.load_asset(path)
        if isinstance(existing, unreal.IKRigDefinition) and len(chains_of(existing)) > 0:
            return existing
    rig = new_asset(path, unreal.IKRigDefinition, unreal.IKRigDefinitionFactory())
    controller = unreal.IKRigController.get_controller(rig)
    controller.set_skeletal_mesh(target)
    # Calls present in the 5.6 stub are made directly (so pyright checks them) behind hasattr; getattr is kept
    # for the calls the stub lacks (5.7-only or pre-5.6-only), which the type check cannot see.
    if (hasattr(controller, "apply_auto_generated_retarget_definition")
            and controller.apply_auto_generated_retarget_definition() and len(controller.get_retarget_chains()) > 0):
        return rig
    for template in plan.TEMPLATE_IK_RIGS:
        if unreal.EditorAssetLibrary.does_asset_exist(template):
            asset = unreal.EditorAssetLibrary.load_asset(template)
            if not isinstance(asset, unreal.IKRigDefinition):
                continue
            template_controller = unreal.IKRigController.get_controller(asset)
            if (hasattr(template_controller, "is_skeletal_mesh_compatible")
                    and not template_controller.is_skeletal_mesh_compatible(target)):
                continue
            delete_if_present(path)
            return asset
    raise EngineError("{}: the engine generated no retarget chains for it (auto-generation needs a recent engine and "
                      "a skeleton it recognises) and no compatible IK_Mannequin from the Third Person template is in "
                      "the project".format(target.get_name()))


def source_ik_rig(name: str, mesh: unreal.SkeletalMesh, source: plan.SourcePlan) -> unreal.IKRigDefinition:
    rig = new_asset(plan.source_rig_path(name), unreal.IKRigDefinition, unreal.IKRigDefinitionFactory())
    controller = unreal.IKRigController.get_controller(rig)
    if not controller.set_skeletal_mesh(mesh):
        raise EngineError("{}: the IK Rig refused the imported Skeletal Mesh".format(name))
    controller.set_retarget_root(source.retarget_root)
    for chain in source.chains:
        controller.add_retarget_chain(chain.name, chain.start, chain.end, "None")
    return rig


def chains_of(rig: unreal.IKRigDefinition) -> List[Tuple[str, str, str]]:
    controller = unreal.IKRigController.get_controller(rig)
    chains = []
    for chain in controller.get_retarget_chains():
        name = chain.chain_name
        chains.append((str(name), str(controller.get_retarget_chain_start_bone(name)),
                       str(controller.get_retarget_chain_end_bone(name))))
    return chains


# The retargeter

def retargeter(name: str, source_mesh: unreal.SkeletalMesh, target: unreal.SkeletalMesh,
               source_rig: unreal.IKRigDefinition, target_rig: unreal.IKRigDefinition, mapping: Dict[str, Optional[str]]) -> unreal.IKRetargeter:
    asset = new_asset(plan.retargeter_path(name, target.get_path_name()), unreal.IKRetargeter,
                      unreal.IKRetargetFactory())
    controller = unreal.IKRetargeterController.get_controller(asset)
    assign_rig(controller, source_side(), source_rig)
    assign_rig(controller, target_side(), target_rig)
    if hasattr(controller, "add_default_ops"):
        # UE 5.6+: a new retargeter has no ops, and chain mapping lives in the ops. Ops first, rigs assigned
        # to them, THEN the mapping; otherwise set_source_chain silently maps nothing.
        controller.add_default_ops()
        assign_rig_to_ops(controller, source_rig, target_rig)
    for target_chain, source_chain in mapping.items():
        controller.set_source_chain(source_chain or "None", target_chain)
    if hasattr(controller, "set_preview_mesh"):  # so the asset opens showing both characters
        controller.set_preview_mesh(source_side(), source_mesh)
        controller.set_preview_mesh(target_side(), target)
    return asset


def assign_rig(controller: unreal.IKRetargeterController, side: unreal.RetargetSourceOrTarget,
               rig: unreal.IKRigDefinition) -> None:
    if hasattr(controller, "set_ik_rig"):
        controller.set_ik_rig(side, rig)
        return
    older = getattr(controller, "set_source_ik_rig" if side == source_side() else "set_target_ik_rig", None)
    if older is None:
        raise EngineError("this engine's IK Retargeter controller cannot assign IK Rigs")
    older(rig)


def assign_rig_to_ops(controller: unreal.IKRetargeterController, source_rig: unreal.IKRigDefinition,
                      target_rig: unreal.IKRigDefinition) -> None:
    assign_all = getattr(controller, "assign_ik_rig_to_all_ops", None)  # UE 5.7
    if assign_all is not None:
        assign_all(source_side(), source_rig)
        assign_all(target_side(), target_rig)
        return
    # UE 5.6: the ops that hold a target IK Rig say so in their settings.
    for index in range(controller.get_num_retarget_ops()):
        op = controller.get_op_controller(index)
        if isinstance(op, (unreal.IKRetargetFKChainsController, unreal.IKRetargetRunIKRigController,
                           unreal.IKRetargetAlignPoleVectorController)):
            settings = op.get_settings()
            settings.ik_rig_asset = target_rig
            op.set_settings(settings)
        if hasattr(controller, "run_op_initial_setup"):
            controller.run_op_initial_setup(index)


def apply_retarget_pose(asset: unreal.IKRetargeter, source: plan.SourcePlan, pose: plan.RetargetPose) -> None:
    """The two corrections, in a retarget pose of their own: the source root lifted by its rest leg reach
    (Kimodo's rest has the hips at the floor), and one rotation offset per target arm segment."""
    controller = unreal.IKRetargeterController.get_controller(asset)
    for side in (source_side(), target_side()):
        pose_name = controller.create_retarget_pose(plan.RETARGET_POSE_NAME, side)
        controller.set_current_retarget_pose(pose_name, side)
    lift = source.root_lift_cm
    controller.set_root_offset_in_retarget_pose(unreal.Vector(lift[0], lift[1], lift[2]), source_side())
    for bone, (x, y, z, w) in pose.offsets:  # parent before child
        controller.set_rotation_offset_for_retarget_pose_bone(bone, unreal.Quat(x, y, z, w), target_side())


# Bake and read back

def bake(name: str, source_mesh: unreal.SkeletalMesh, target: unreal.SkeletalMesh, sequence: unreal.AnimSequence,
         asset: unreal.IKRetargeter) -> unreal.AnimSequence:
    final_path = plan.animation_path(name)
    delete_if_present(final_path)
    data = unreal.EditorAssetLibrary.find_asset_data(sequence.get_path_name().split(".")[0])
    results = unreal.IKRetargetBatchOperation.duplicate_and_retarget(
        [data], source_mesh, target, asset, "", "", plan.BAKE_PREFIX, "", False)
    baked = [d.get_asset() for d in results]
    sequences = [s for s in baked if isinstance(s, unreal.AnimSequence)]
    if not sequences:
        raise EngineError("the IK Retargeter produced no Anim Sequence")
    produced = sequences[0].get_path_name().split(".")[0]
    folder, _ = plan.split_asset_path(final_path)
    unreal.EditorAssetLibrary.make_directory(folder)
    if not unreal.EditorAssetLibrary.rename_asset(produced, final_path):
        raise EngineError("{}: could not move the baked sequence here from {}".format(final_path, produced))
    result = unreal.EditorAssetLibrary.load_asset(final_path)
    if not isinstance(result, unreal.AnimSequence):
        raise EngineError("{}: the baked sequence is missing after the move".format(final_path))
    unreal.EditorAssetLibrary.save_directory(plan.KIMODO_ROOT, True, True)
    return result


def baked_frames(sequence: unreal.AnimSequence, names: Sequence[str]) -> List[List[Tuple[Tuple[float, ...], ...]]]:
    """Per key, per bone: (local translation cm, local rotation xyzw) as the engine evaluates the sequence;
    through the AnimPose API where the engine has it, else AnimationLibrary's bone poses."""
    if hasattr(unreal.AnimationLibrary, "get_num_keys"):
        keys = unreal.AnimationLibrary.get_num_keys(sequence)
    else:
        keys = unreal.AnimationLibrary.get_num_frames(sequence) + 1
    with_poses = hasattr(unreal, "AnimPoseExtensions")
    options = unreal.AnimPoseEvaluationOptions() if with_poses else None
    result = []
    for frame in range(keys):
        if with_poses:
            pose = unreal.AnimPoseExtensions.get_anim_pose_at_frame(sequence, frame, options)
            transforms = [unreal.AnimPoseExtensions.get_bone_pose(pose, bone, unreal.AnimPoseSpaces.LOCAL)
                          for bone in names]
        else:
            transforms = list(unreal.AnimationLibrary.get_bone_poses_for_frame(sequence, list(names), frame, False))
        result.append([(vector_tuple(t.translation), quat_tuple(t.rotation)) for t in transforms])
    return result


def retarget_clip(clip: Path, target: unreal.SkeletalMesh, target_skeleton: Skeleton,
                  target_rig: unreal.IKRigDefinition) -> str:
    name = plan.clip_name(clip)
    source = plan.read_source(clip)  # the clip as the core reads it: skeleton, motion, chains, lift
    pose = plan.retarget_pose(source, target_skeleton)
    # An earlier run's retargeter uses the earlier source rig: it goes first, then both are made anew.
    delete_if_present(plan.retargeter_path(name, target.get_path_name()))
    source_mesh, sequence = import_clip(clip, name)
    plan.check_imported_source(source, engine_skeleton(source_mesh))  # the glTF frame change is what we assume
    source_rig = source_ik_rig(name, source_mesh, source)
    mapping = plan.chain_mapping(source, target_skeleton, chains_of(target_rig))
    asset = retargeter(name, source_mesh, target, source_rig, target_rig, mapping)
    apply_retarget_pose(asset, source, pose)
    baked = bake(name, source_mesh, target, sequence, asset)
    frames = baked_frames(baked, target_skeleton.joint_names)
    duration = unreal.AnimationLibrary.get_sequence_length(baked)
    return plan.baked_report(name, source, pose, mapping, frames, duration)


if __name__ == "__main__":
    main(sys.argv[1:])
