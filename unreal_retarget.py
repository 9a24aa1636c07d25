"""Kimodo .glb (or .fbx) clips onto the Unreal mannequin (or your character), inside the Unreal Editor.

In the Output Log's Cmd box (`py` runs a Python file with arguments):
    py "C:/path/to/unreal_retarget.py" "C:/path/to/walk_150.glb"
    py "C:/path/to/unreal_retarget.py"                                  # every .glb and .fbx clip beside this script
    py "C:/path/to/unreal_retarget.py" "C:/path/walk_150.glb" /Game/MyChars/SK_Hero
    py "C:/path/to/unreal_retarget.py" --root-motion root "C:/path/walk_150.glb"  # travel on the root bone
    py "C:/path/to/unreal_retarget.py" --map "C:/path/bones.json" "C:/path/walk_150.glb" /Game/MyChars/SK_Hero
    py "C:/path/to/unreal_retarget.py" "C:/path/walk_150.fbx" --target "C:/chars/hero.fbx"  # a character file
The options go anywhere. --map is the offline retarget's: which bone of the character plays which part, as
`kimodo-rig map RIG --json` prints it, edited, for a character the automatic map refuses or gets wrong.

A --target character.fbx is imported by the editor's FBX import (a Skeletal Mesh, no animation) into
/Game/Kimodo/Characters/<name>, and mapped by our FBX reader as `kimodo-rig retarget --target` maps it.
Each clip: Interchange import to /Game/Kimodo/Source/<name> (of the .glb, or of the plan's copy of it turned
to the character's facing or given a root bone for --root-motion root), a source IK Rig and an IK Retargeter in
/Game/Kimodo/Rigs, a retarget pose holding the two corrections, a bake to /Game/Kimodo/Retargeted/A_<name>,
and a report read back from the baked sequence. Every decision that needs no editor (names, chains, the
lift, the arm offsets, the report) is made by kimodo_rig (beside this file) with the same functions the
offline `kimodo-rig retarget` uses; this file only carries them out. It is the only `import unreal`.
Works on UE 5.2 to 5.7 and later by asking the engine for features rather than reading its version.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple, Type, TypeVar

HERE = Path(os.path.abspath(globals().get("__file__") or sys.argv[0])).parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))  # Unreal's Python has no packages: kimodo_rig sits beside this file

try:
    import unreal  # noqa: E402
except (ImportError, SyntaxError):  # no editor here (or a type stub for editing that does not even import)
    sys.exit('unreal_retarget.py runs inside the Unreal Editor, not from a shell: in the editor\'s Output Log, '
             'Cmd box, type  py "{}" CLIP.glb'.format(Path(os.path.abspath(globals().get("__file__") or sys.argv[0])).as_posix()))

from kimodo_rig import unreal_plan as plan  # noqa: E402
from kimodo_rig.errors import KimodoError  # noqa: E402
from kimodo_rig.model import Skeleton  # noqa: E402

AssetType = TypeVar("AssetType", bound=unreal.Object)


class EngineError(KimodoError):
    """Something the engine did not do (missing feature, failed import); one line for the log."""


def main(arguments: Sequence[str]) -> int:
    try:
        request = plan.parse_arguments(arguments, HERE)
        require_features()
        if request.character_file is not None:  # planned from the file by our reader, as offline, then imported
            target_plan = plan.plan_character_file(request.character_file, user_map=request.user_map,
                                                   map_source=request.map_source)
            target = import_character(request.character_file)
            plan.check_imported_character(request.character_file, target_plan, engine_skeleton(target))
        else:
            target = find_target(request.target)
            target_plan = plan.plan_target(engine_skeleton(target), user_map=request.user_map,
                                           map_source=request.map_source,
                                           skinned_bones=engine_skinned_bones(target))
        plan.check_root_motion(request.root_motion, target_plan)
        plan.check_target_folder(target.get_path_name(), batch_takes_a_folder())
        if request.root_motion == "root" and not can_add_root_motion_op():
            raise EngineError(NO_ROOT_MOTION_OP + "; nothing was imported")  # once, before any import
        # The plan's own chains where the plan is not the engine's reading: a --map, or a character file.
        planned_chains = request.user_map is not None or request.character_file is not None
        target_rig = target_ik_rig(target, target_plan if planned_chains else None)
        unreal.log("kimodo: target {} ({} bones), root motion in the {}".format(
            target.get_path_name(), target_plan.skeleton.joint_count,
            "pelvis" if request.root_motion == "hips" else "root"))
    except Exception as error:  # ours or the engine's: one red line, never a traceback
        unreal.log_error("kimodo: " + plan.one_line(error))
        return 1
    batch = Batch(request, target, target_plan, target_rig)
    batch.run()
    return 1 if batch.failures else 0


class Batch:
    """The clips, one after another. Where the engine imports in the background (before UE 5.5), a clip
    waits for its assets on the editor's tick, and the batch goes on from there."""

    def __init__(self, request: plan.Request, target: unreal.SkeletalMesh, target_plan: plan.TargetPlan,
                 target_rig: unreal.IKRigDefinition) -> None:
        self.request = request
        self.target = target
        self.target_plan = target_plan
        self.target_rig = target_rig
        self.index = 0
        self.failures = 0

    def run(self) -> None:
        while self.index < len(self.request.clips):
            clip = self.request.clips[self.index]
            job = None  # type: Optional[ClipJob]
            try:
                job = start_clip(clip, self.target, self.target_plan, self.request.root_motion)
                if not job.ready():
                    wait_for(job, self.resume)
                    return
                self.finish(job)
            except Exception as error:  # an engine call raised: report this clip, keep going with the others
                self.fail(clip, error)
            if job is not None:
                job.clean_up()
            self.index += 1
        count = len(self.request.clips)
        unreal.log("kimodo: {} of {} clips retargeted".format(count - self.failures, count))

    def finish(self, job: "ClipJob") -> None:
        report = finish_clip(job, self.target, self.target_rig)
        for line in report.splitlines():
            unreal.log(line)

    def fail(self, clip: Path, error: BaseException) -> None:
        unreal.log_error("kimodo: {}: {}".format(plan.clip_name(clip), plan.one_line(error)))
        self.failures += 1

    def resume(self, job: "ClipJob", timed_out: bool) -> None:
        try:
            if timed_out:
                raise EngineError(plan.import_timeout_message(job.folder, plan.IMPORT_TIMEOUT_S))
            self.finish(job)
        except Exception as error:
            self.fail(job.clip, error)
        job.clean_up()
        self.index += 1
        self.run()


# Features, asked for by name: a missing one gets a sentence saying what it is and what provides it.
REQUIRED_FEATURES = (
    ("InterchangeManager", "", "Interchange import (UE 5.2 or later with the Interchange plugins enabled)"),
    ("IKRigController", "add_retarget_chain", "the IK Rig Python API (UE 5.2 or later, IK Rig plugin enabled)"),
    ("IKRetargeterController", "set_rotation_offset_for_retarget_pose_bone",
     "retarget pose editing from Python (UE 5.2 or later, IK Rig plugin enabled)"),
    ("IKRetargeterController", "set_root_offset_in_retarget_pose",
     "retarget pose root offsets from Python (UE 5.2 or later)"),
    ("IKRetargetBatchOperation", "duplicate_and_retarget", "batch retargeting from Python (UE 5.2 or later)"),
    ("AnimationLibrary", "get_time_at_frame", "the Animation Blueprint Library (key times of a sequence)"),
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

class ClipJob:
    """One clip between its import and its bake: what the plan decided, and the import to wait for."""

    def __init__(self, clip: Path, name: str, source: plan.SourcePlan, pose: plan.RetargetPose,
                 root_motion: plan.RootMotionPlan, engine: plan.EngineSource, folder: str) -> None:
        self.clip = clip
        self.name = name
        self.source = source
        self.pose = pose
        self.root_motion = root_motion
        self.engine = engine  # what Interchange imports: the .glb, or the plan's copy of it
        self.folder = folder
        self.scratch = None  # type: Optional[str]
        self.imported = None  # type: Optional[List[unreal.Object]]  # where the import finished in the call

    def ready(self) -> bool:
        if self.imported is not None:
            return True
        return imported_assets(self.folder) is not None

    def clean_up(self) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None


def start_clip(clip: Path, target: unreal.SkeletalMesh, target_plan: plan.TargetPlan, root_motion: str) -> ClipJob:
    name = plan.clip_name(clip)
    source = plan.read_source(clip)  # the clip as the core reads it: skeleton, motion, chains, lift
    pose = plan.retarget_pose(source, target_plan)
    root_plan = plan.plan_root_motion(root_motion, source, target_plan)
    engine = plan.engine_source(source, pose, root_plan)  # turned to the character's facing; root: a ground bone
    # An earlier run's retargeter and source rig use the earlier import: they go first, then the import's
    # folder, so that an import that finishes in the background is seen arriving, not mistaken for the last.
    delete_if_present(plan.retargeter_path(name, target.get_path_name()))
    delete_if_present(plan.source_rig_path(name))
    folder = plan.source_folder(name)
    if unreal.EditorAssetLibrary.does_directory_exist(folder) and not unreal.EditorAssetLibrary.delete_directory(folder):
        raise EngineError("{}: could not replace the earlier import (is one of its assets open?)".format(folder))
    job = ClipJob(clip, name, source, pose, root_plan, engine, folder)
    try:
        path = clip
        if engine.derived:
            job.scratch = tempfile.mkdtemp(prefix="kimodo_")
            path = plan.write_engine_source(engine, Path(job.scratch))
            unreal.log("kimodo: {}: imported as a copy{}{}".format(
                name, " turned {:.1f} deg to the character's facing".format(engine.turn_deg)
                if engine.turn_deg > plan.TURN_TOLERANCE_DEG else "",
                " with a {} bone carrying the heading and travel".format(engine.root_bone) if engine.root_bone else ""))
        job.imported = start_import(path, folder)
    except BaseException:  # the temporary copy goes with the clip that failed
        job.clean_up()
        raise
    return job


def start_import(clip: Path, folder: str) -> Optional[List[unreal.Object]]:
    """Interchange's glTF import of a skinned, animated .glb (metres become centimetres on the way in). The
    imported objects where the call finishes the import (UE 5.5+); None where it only starts it."""
    manager = unreal.InterchangeManager.get_interchange_manager_scripted()
    source_data = unreal.InterchangeManager.create_source_data(str(clip))
    parameters = unreal.ImportAssetParameters()
    parameters.is_automated = True
    if hasattr(parameters, "replace_existing"):  # absent before UE 5.4; true by default where it exists
        parameters.replace_existing = True
    result = manager.import_asset(folder, source_data, parameters)
    if isinstance(result, bool):  # before UE 5.5: True once the import has started in the background
        if not result:
            raise EngineError("{}: Interchange refused to import it (is the glTF Interchange translator "
                              "enabled?)".format(clip))
        if hasattr(manager, "wait_until_all_tasks_done"):  # exposed to Python from UE 5.6 only
            manager.wait_until_all_tasks_done(False)
            return list(assets_in(folder))
        return None
    return list(result or [])


def imported_assets(folder: str) -> Optional[Tuple[unreal.SkeletalMesh, unreal.AnimSequence]]:
    """The import's Skeletal Mesh and Anim Sequence once both are in the folder and the sequence has keys."""
    assets = assets_in(folder)
    meshes = [a for a in assets if isinstance(a, unreal.SkeletalMesh)]
    sequences = [a for a in assets if isinstance(a, unreal.AnimSequence)]
    if not meshes or not sequences or unreal.AnimationLibrary.get_num_frames(sequences[0]) < 1:
        return None
    return meshes[0], sequences[0]


def wait_for(job: ClipJob, then: Callable[[ClipJob, bool], None]) -> None:
    """Call `then(job, timed_out)` on the editor's tick once the job is ready or IMPORT_TIMEOUT_S have passed.
    The wait never blocks the editor: Interchange finishes its import on the same thread."""
    deadline = time.monotonic() + plan.IMPORT_TIMEOUT_S
    handle = []  # type: List[object]

    def tick(_delta: float) -> None:
        try:
            ready = job.ready()
        except Exception:  # an asset half made: look again on the next tick
            ready = False
        if ready or time.monotonic() > deadline:
            unreal.unregister_slate_post_tick_callback(handle[0])
            then(job, not ready)

    unreal.log("kimodo: {}: waiting for Interchange to finish importing into {} (up to {:.0f} s)".format(
        job.name, job.folder, plan.IMPORT_TIMEOUT_S))
    handle.append(unreal.register_slate_post_tick_callback(tick))


# The character

def import_character(character_file: Path) -> unreal.SkeletalMesh:
    """The editor's own FBX import of a character file: a Skeletal Mesh with its materials, no animation,
    into /Game/Kimodo/Characters/<name> (an earlier import of it replaced)."""
    folder = plan.character_folder(character_file)
    options = unreal.FbxImportUI()
    options.import_mesh = True
    options.import_as_skeletal = True
    options.mesh_type_to_import = unreal.FBXImportType.FBXIT_SKELETAL_MESH
    options.import_animations = False
    options.import_materials = True
    options.import_textures = True
    options.create_physics_asset = False
    task = unreal.AssetImportTask()
    task.filename = str(character_file)
    task.destination_path = folder
    task.automated = True
    if hasattr(task, "replace_existing"):  # an earlier import of the character is replaced
        task.replace_existing = True
    task.save = True
    task.options = options
    asset_tools().import_asset_tasks([task])
    meshes = [asset for asset in assets_in(folder) if isinstance(asset, unreal.SkeletalMesh)]
    if not meshes:
        raise EngineError("{}: the editor's FBX import made no Skeletal Mesh in {} (is it a skinned character?)"
                          .format(character_file, folder))
    return meshes[0]


def find_target(path: Optional[str]) -> unreal.SkeletalMesh:
    if path is not None:
        asset = unreal.EditorAssetLibrary.load_asset(path) if unreal.EditorAssetLibrary.does_asset_exist(path) else None
        if not isinstance(asset, unreal.SkeletalMesh):
            raise EngineError("{}: no Skeletal Mesh at this path".format(path))
        return asset
    for candidate in plan.TARGET_CANDIDATES:
        asset = try_engine(candidate, lambda: unreal.EditorAssetLibrary.load_asset(candidate)
                           if unreal.EditorAssetLibrary.does_asset_exist(candidate) else None)
        if isinstance(asset, unreal.SkeletalMesh):
            return asset
    registry = unreal.AssetRegistryHelpers.get_asset_registry()
    for data in registry.get_assets_by_class(unreal.TopLevelAssetPath("/Script/Engine", "SkeletalMesh"), True) or []:
        if str(data.package_path).startswith(plan.SOURCE_ROOT):
            continue  # our own imports are sources, not characters
        asset = try_engine(str(data.package_name), data.get_asset)
        if isinstance(asset, unreal.SkeletalMesh) and try_engine(
                str(data.package_name), lambda: set(plan.MANNEQUIN_BONES) <= set(engine_bones(asset)[0])):
            return asset
    raise EngineError(plan.NO_TARGET_MESSAGE)


def try_engine(what: str, call: Callable[[], object]) -> object:
    """An engine call that may raise on one asset (a broken package, a mesh without a skeleton): one red
    line naming the asset, and the search goes on."""
    try:
        return call()
    except Exception as error:
        unreal.log_error("kimodo: {}: {}".format(what, plan.one_line(error)))
        return None


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


def engine_skinned_bones(mesh: unreal.SkeletalMesh) -> Optional[List[str]]:
    """The bones the mesh's skin weights move (a weight above zero on some vertex of LOD 0), as the offline
    reader's skinned_joints finds them in the file: they tell a deform chain from an FK or IK copy lying in
    the same place. None where the engine cannot read weights (SkinWeightModifier is UE 5.4+, in the
    Modeling Tools plugin): the map then goes by the skeleton's shape and names alone, with a warning."""
    # Checked with hasattr (a plugin the project may have turned off), then called directly: pyright checks
    # the calls against every stub (the class is in 5.4, 5.5 and 5.6).
    modifier = unreal.SkinWeightModifier() if hasattr(unreal, "SkinWeightModifier") else None
    if modifier is None or not modifier.set_skeletal_mesh(mesh):
        unreal.log_warning("kimodo: {}: its skin weights cannot be read in this editor (SkinWeightModifier, UE 5.4+ "
                           "with the Modeling Tools plugin): deform bones are told from their copies by shape and "
                           "names only".format(mesh.get_path_name()))
        return None
    every = len(modifier.get_all_bone_names())
    weighted = set()  # type: Set[str]
    for vertex in range(modifier.get_num_vertices()):
        weighted.update(str(bone) for bone, weight in modifier.get_vertex_weights(vertex).items() if weight > 0.0)
        if len(weighted) >= every:
            break
    return sorted(weighted)


def vector_tuple(vector: unreal.Vector) -> Tuple[float, float, float]:
    return (vector.x, vector.y, vector.z)


def quat_tuple(quat: unreal.Quat) -> Tuple[float, float, float, float]:
    return (quat.x, quat.y, quat.z, quat.w)


# IK Rigs

def target_ik_rig(target: unreal.SkeletalMesh, mapped: Optional[plan.TargetPlan] = None) -> unreal.IKRigDefinition:
    """The target's IK Rig. With a --map (`mapped`: the plan made with it), the plan's own chains on the
    bones the map names, as the source's are made: the engine generates chains from bone names it
    recognises, and a map is given for names it does not. Else the engine's auto-generated retarget
    definition, else the template's."""
    if mapped is not None:
        return mapped_target_ik_rig(target, mapped)
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


def mapped_target_ik_rig(target: unreal.SkeletalMesh, mapped: plan.TargetPlan) -> unreal.IKRigDefinition:
    path = plan.target_map_rig_path(target.get_path_name())
    chains = [(chain.name, chain.start, chain.end) for chain in mapped.chains]
    if unreal.EditorAssetLibrary.does_asset_exist(path):
        # The same map as an earlier run's: kept, as retargeters made then still use it; another map replaces it.
        existing = unreal.EditorAssetLibrary.load_asset(path)
        if isinstance(existing, unreal.IKRigDefinition) and chains_of(existing) == chains:
            return existing
    return ik_rig_of_chains(path, target, mapped.pelvis, chains, "{}: the IK Rig refused the character's Skeletal "
                            "Mesh".format(target.get_name()))


def source_ik_rig(name: str, mesh: unreal.SkeletalMesh, source: plan.SourcePlan) -> unreal.IKRigDefinition:
    return ik_rig_of_chains(plan.source_rig_path(name), mesh, source.retarget_root,
                            [(chain.name, chain.start, chain.end) for chain in source.chains],
                            "{}: the IK Rig refused the imported Skeletal Mesh".format(name))


def ik_rig_of_chains(path: str, mesh: unreal.SkeletalMesh, root: str, chains: Sequence[Tuple[str, str, str]],
                     refused: str) -> unreal.IKRigDefinition:
    """A new IK Rig at `path` on `mesh`: retarget root `root`, the chains (name, start bone, end bone) the
    plan made; `refused` is the line where the rig will not take the mesh."""
    rig = new_asset(path, unreal.IKRigDefinition, unreal.IKRigDefinitionFactory())
    controller = unreal.IKRigController.get_controller(rig)
    if not controller.set_skeletal_mesh(mesh):
        raise EngineError(refused)
    controller.set_retarget_root(root)
    for name, start, end in chains:
        controller.add_retarget_chain(name, start, end, "None")
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
               source_rig: unreal.IKRigDefinition, target_rig: unreal.IKRigDefinition,
               mapping: Dict[str, Optional[str]], root_motion: plan.RootMotionPlan) -> unreal.IKRetargeter:
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
        root_motion_op(controller, root_motion)
    elif root_motion.root_motion_op:
        root_motion_generator(controller, root_motion)  # before UE 5.6 a new retargeter has no ops to remove
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


def root_motion_op(controller: unreal.IKRetargeterController, root_motion: plan.RootMotionPlan) -> None:
    """UE 5.6+: add_default_ops adds a Root Motion op that copies the source root (our hips) onto the target
    root. With root motion in the pelvis it goes; with root motion on the root it copies the engine source's
    root bone (the heading and the travel), snapped to the ground."""
    found = False
    for index in reversed(range(controller.get_num_retarget_ops())):
        op = controller.get_op_controller(index)
        if not isinstance(op, unreal.IKRetargetRootMotionController):
            continue
        found = True
        if not root_motion.root_motion_op:
            if not controller.remove_retarget_op(index):
                raise EngineError("could not remove the IK Retargeter's Root Motion op")
            continue
        settings = op.get_settings()
        settings.root_motion_source = unreal.RootMotionSource.COPY_FROM_SOURCE_ROOT
        settings.root_height_source = unreal.RootMotionHeightSource.SNAP_TO_GROUND
        op.set_settings(settings)
        op.set_source_root_bone(root_motion.source_root)  # after the settings, which hold the bones too
        op.set_target_pelvis_bone(root_motion.target_pelvis)
        op.set_target_root_bone(root_motion.target_root or "None")
    if root_motion.root_motion_op and not found:
        raise EngineError("add_default_ops added no Root Motion op to carry root motion on {}".format(
            root_motion.target_root))


NO_ROOT_MOTION_OP = "this engine cannot add a Root Motion op from Python: use {} hips".format(plan.ROOT_MOTION_OPTION)


def can_add_root_motion_op() -> bool:
    """UE 5.6+: add_default_ops brings one; UE 5.4/5.5: RootMotionGeneratorOp, added by class."""
    controller = unreal.IKRetargeterController
    return hasattr(controller, "add_default_ops") or (
        getattr(unreal, "RootMotionGeneratorOp", None) is not None
        and hasattr(controller, "get_retarget_op_at_index") and hasattr(controller, "add_retarget_op"))


def root_motion_generator(controller: unreal.IKRetargeterController, root_motion: plan.RootMotionPlan) -> None:
    """UE 5.4/5.5: the Root Motion Generator op is an object added by class, set up through its properties."""
    op_class = getattr(unreal, "RootMotionGeneratorOp", None)
    op_at = getattr(controller, "get_retarget_op_at_index", None)  # before UE 5.6 only
    if op_class is None or op_at is None or not hasattr(controller, "add_retarget_op"):
        raise EngineError(NO_ROOT_MOTION_OP)
    op = op_at(controller.add_retarget_op(op_class))
    if op is None:
        raise EngineError("the IK Retargeter refused a Root Motion Generator op")
    op.set_editor_property("root_motion_source", unreal.RootMotionSource.COPY_FROM_SOURCE_ROOT)
    op.set_editor_property("root_height_source", unreal.RootMotionHeightSource.SNAP_TO_GROUND)
    op.set_editor_property("source_root_bone", root_motion.source_root)
    op.set_editor_property("target_pelvis_bone", root_motion.target_pelvis)
    op.set_editor_property("target_root_bone", root_motion.target_root or "None")


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

def batch_takes_a_folder() -> bool:
    """run_batch_retarget (after UE 5.7) takes the output folder; duplicate_and_retarget before it takes none."""
    return (getattr(unreal.IKRetargetBatchOperation, "run_batch_retarget", None) is not None
            and getattr(unreal, "IKRetargetBatchOperationInputs", None) is not None)


def bake(name: str, source_mesh: unreal.SkeletalMesh, target: unreal.SkeletalMesh, sequence: unreal.AnimSequence,
         asset: unreal.IKRetargeter) -> unreal.AnimSequence:
    """The batch retarget into RETARGETED_ROOT, then the result moved to its final name. After UE 5.7
    run_batch_retarget takes the output folder; before, the engine writes beside the target mesh."""
    final_path = plan.animation_path(name)
    delete_if_present(final_path)
    folder, _ = plan.split_asset_path(final_path)
    unreal.EditorAssetLibrary.make_directory(folder)
    data = unreal.EditorAssetLibrary.find_asset_data(sequence.get_path_name().split(".")[0])
    run_batch = getattr(unreal.IKRetargetBatchOperation, "run_batch_retarget", None)
    inputs_type = getattr(unreal, "IKRetargetBatchOperationInputs", None)
    if run_batch is not None and inputs_type is not None:
        inputs = inputs_type()
        inputs.assets_to_retarget = [data]
        inputs.source_mesh = source_mesh
        inputs.target_mesh = target
        inputs.ik_retarget_asset = asset
        inputs.prefix = plan.BAKE_PREFIX
        inputs.target_path = folder
        inputs.include_referenced_assets = False
        inputs.overwrite_existing_files = True
        results = run_batch(inputs)
    else:
        # By keyword: the parameters after the 8th differ between versions (remap_referenced_assets on 5.3,
        # include_referenced_assets on 5.4+, target_path inserted after 5.7); their defaults are right.
        results = unreal.IKRetargetBatchOperation.duplicate_and_retarget(
            assets_to_retarget=[data], source_mesh=source_mesh, target_mesh=target, ik_retarget_asset=asset,
            prefix=plan.BAKE_PREFIX)
    sequences = [s for s in (d.get_asset() for d in results or []) if isinstance(s, unreal.AnimSequence)]
    if not sequences:
        raise EngineError("the IK Retargeter produced no Anim Sequence")
    produced = sequences[0].get_path_name().split(".")[0]
    if produced != final_path and not unreal.EditorAssetLibrary.rename_asset(produced, final_path):
        raise EngineError("{}: could not move the baked sequence here from {}".format(final_path, produced))
    result = unreal.EditorAssetLibrary.load_asset(final_path)
    if not isinstance(result, unreal.AnimSequence):
        raise EngineError("{}: the baked sequence is missing after the move".format(final_path))
    return result


def save(assets: Sequence[Optional[unreal.Object]]) -> None:
    """Save what this clip changed, where it changed (the target's Skeleton gains the clip's curve names)."""
    unsaved = [a.get_path_name() for a in assets
               if a is not None and not unreal.EditorAssetLibrary.save_loaded_asset(a, True)]
    if unsaved:
        unreal.log_warning("kimodo: could not save {} (read-only, or not checked out?)".format(", ".join(unsaved)))


def baked_frames(sequence: unreal.AnimSequence, target: unreal.SkeletalMesh,
                 names: Sequence[str]) -> Tuple[List[float], List[List[Tuple[Tuple[float, ...], ...]]]]:
    """The baked keys' times, and per key, per bone: (local translation cm, local rotation xyzw) as the engine
    evaluates the sequence on the target mesh, without retargeting (so a bone in Skeleton translation mode
    reports its baked track, not the Skeleton's reference): through the AnimPose API where the engine has
    it, else AnimationLibrary's bone poses."""
    if hasattr(unreal.AnimationLibrary, "get_num_keys"):
        keys = unreal.AnimationLibrary.get_num_keys(sequence)
    else:
        keys = unreal.AnimationLibrary.get_num_frames(sequence) + 1
    times = [unreal.AnimationLibrary.get_time_at_frame(sequence, key) for key in range(keys)]
    options = None
    if hasattr(unreal, "AnimPoseExtensions"):
        options = unreal.AnimPoseEvaluationOptions()
        options.should_retarget = False
        options.optional_skeletal_mesh = target
        options.evaluation_type = unreal.AnimDataEvalType.RAW
    result = []
    for key in range(keys):
        if options is not None:
            pose = unreal.AnimPoseExtensions.get_anim_pose_at_frame(sequence, key, options)
            transforms = [unreal.AnimPoseExtensions.get_bone_pose(pose, bone, unreal.AnimPoseSpaces.LOCAL)
                          for bone in names]
        else:
            transforms = list(unreal.AnimationLibrary.get_bone_poses_for_frame(sequence, list(names), key, False,
                                                                               target))
        result.append([(vector_tuple(t.translation), quat_tuple(t.rotation)) for t in transforms])
    return times, result


def finish_clip(job: ClipJob, target: unreal.SkeletalMesh, target_rig: unreal.IKRigDefinition) -> str:
    found = imported_assets(job.folder)
    if found is None:
        raise EngineError("Interchange imported no Skeletal Mesh and Anim Sequence into {} (is the glTF Interchange "
                          "translator enabled?)".format(job.folder))
    source_mesh, sequence = found
    plan.check_imported_source(job.source, job.engine, engine_skeleton(source_mesh))  # the frame change we assume
    source_rig = source_ik_rig(job.name, source_mesh, job.source)
    mapping = plan.chain_mapping(job.source, job.pose.target, chains_of(target_rig))
    asset = retargeter(job.name, source_mesh, target, source_rig, target_rig, mapping, job.root_motion)
    apply_retarget_pose(asset, job.source, job.pose)
    baked = bake(job.name, source_mesh, target, sequence, asset)
    save([source_mesh, source_mesh.skeleton, sequence, source_rig, target_rig, asset, baked, target.skeleton])
    times, frames = baked_frames(baked, target, job.pose.target.skeleton.joint_names)
    return plan.baked_report(job.name, job.source, job.pose, mapping, frames, times, job.root_motion)


if __name__ == "__main__":
    main(sys.argv[1:])
