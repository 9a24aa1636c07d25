"""File > Import > Kimodo motion (`bpy.ops.kimodo.import_motion`) and the bone map's buttons (set one
part's bone, re-detect).

The work is kimodo_rig's: reading the clip, the retarget (kimodo_rig.retarget.api, the same solve as
`kimodo-rig retarget`), the pose channels. Blender data is made only once all of that has succeeded, and
Blender's evaluated bones are then read back and compared with the retarget (the self-check, as
`kimodo-rig retarget` checks the file it writes); any failure removes what was made and reports one line.

The bone map is stored on the armature data as the custom property `kimodo_bone_map`: the JSON text
`kimodo-rig map RIG --json` prints and `kimodo-rig retarget --map` reads. The first import detects it
and stores it; every import retargets with the stored map, as `--map` does.
"""
from dataclasses import replace
from pathlib import Path

import bpy
from bpy.props import BoolProperty, EnumProperty, StringProperty
from bpy_extras.io_utils import ImportHelper

from . import blender_data
from .kimodo_rig import naming
from .kimodo_rig.errors import KimodoError
from .kimodo_rig.formats import raw
from .kimodo_rig.retarget import api
from .kimodo_rig.retarget.armature import added_points, pose_channels, skeleton_of, tip_points, world_poses
from .kimodo_rig.retarget.report import format_report, report_warnings
from .kimodo_rig.retarget.solve import NEW_ROOT_NAME
from .kimodo_rig.rotations import length, subtract

SELF_CHECK_TOLERANCE_M = 1e-4  # Blender evaluates in float32
REPORT_PROPERTY = "kimodo_report"
# Said when the feet's mesh points against the foot bones and meshes hang from the bones of a scaled armature:
# Blender's glTF importer, with Bone Dir "Blender" (its default), shortens the bones by the armature's scale
# but moves such meshes back from the bone's tail by the unshortened length (Blender 4.2 to 5.0), so they
# land (scale - 1) x the bone's length along it (RobotExpressive, scaled 100x: its feet 63 cm behind its
# ankles, where a kneeling toe cannot reach the floor). Imported with "Temperance" they are where the file
# has them.
MESH_OFF_BONES_HINT = ("meshes hang from the bones of an armature scaled {:g}x: if it came from Blender's glTF "
                       "importer, import it again with Bone Dir 'Temperance', which puts them where the file has them")
BONE_MAP_PROPERTY = "kimodo_bone_map"
# A character made of rigid parts (Kenney's platformer characters: a mesh object per limb, no armature) is
# not what the add-on retargets onto; with one selected the motion goes on a box rig and the report says so.
RIGID_PARTS_MIN = 3  # mesh objects in the selected object's hierarchy: a lone mesh (the default cube) is no character
RIGID_PARTS_WARNING = ("{} is one of {} rigid parts with no armature: the motion is on a new Kimodo box rig "
                       "(`kimodo-rig retarget CLIP --target CHARACTER.glb` retargets onto characters of rigid parts)")


def clip_path(filepath: str) -> Path:
    """The clip the user picked: a file inside a kimodo.cpp clip folder means the folder."""
    path = Path(filepath)
    if path.is_file() and path.suffix.lower() in api.CLIP_FOLDER_FILES and raw.clip_files(path.parent) is not None:
        return path.parent
    return path


def target_armature(context):
    """The selected character's armature: the active object, or the armature deforming the active mesh,
    or a selected armature; None when there is none (the box rig is made)."""
    active = context.view_layer.objects.active
    if active is not None and active.select_get():
        if active.type == "ARMATURE":
            return active
        for modifier in getattr(active, "modifiers", ()):
            if modifier.type == "ARMATURE" and modifier.object is not None:
                return modifier.object
        if active.parent is not None and active.parent.type == "ARMATURE":
            return active.parent
    return next((o for o in context.selected_objects if o.type == "ARMATURE"), None)


def bone_map_source(obj) -> str:
    return "{}: bone map".format(obj.name)


def stored_bone_map(obj):
    """The armature's stored map (part -> bone name), None when it has none yet."""
    text = obj.data.get(BONE_MAP_PROPERTY)
    if text is None:
        return None
    if not isinstance(text, str):
        raise KimodoError("{}: the custom property {} is not text".format(bone_map_source(obj), BONE_MAP_PROPERTY))
    return api.bone_map_from_json(text, bone_map_source(obj))


def store_bone_map(obj, bone_map) -> None:
    obj.data[BONE_MAP_PROPERTY] = api.bone_map_json(bone_map)


def detected_bone_map(context, obj, mesh=None):
    """The map the retarget finds for the armature `obj`, told by its mesh at rest (`mesh`: its
    blender_data.bind_mesh vertices, read here when not given) as the command line is by the file's."""
    if mesh is None:
        mesh, _ = blender_data.bind_mesh(context, obj)
    return api.detect_bone_map(skeleton_of(blender_data.armature_of(obj)), obj.name, mesh)


def editable_bone_map(context, obj):
    """The map an edit starts from: the stored one, else the detected one, else (a rig the names cannot
    map, which the user maps by hand) none."""
    bone_map = stored_bone_map(obj)
    if bone_map is not None:
        return bone_map
    try:
        return detected_bone_map(context, obj)
    except KimodoError:
        return {}


def rigid_parts(obj) -> int:
    """How many mesh objects make up the hierarchy `obj` is in (from its topmost parent down)."""
    top = obj
    while top.parent is not None:
        top = top.parent
    return sum(1 for o in [top] + list(top.children_recursive) if o.type == "MESH")


def import_motion(context, filepath: str, options: api.RetargetOptions, set_scene: bool):
    """Returns (armature object, action, report text). Raises KimodoError with nothing left behind."""
    path = clip_path(filepath)
    motion = api.read_motion(path)
    name = naming.clip_stem(motion.prompt, motion.name, motion.frame_count)
    made = []  # objects and datablocks to remove on failure
    obj = target_armature(context)
    active = context.view_layer.objects.active
    passed_over = None  # a selected character of rigid parts the box rig is made instead of
    if obj is None and active is not None and active.select_get():
        parts = rigid_parts(active)
        if parts >= RIGID_PARTS_MIN:
            passed_over = RIGID_PARTS_WARNING.format(active.name, parts)
    scene = context.scene
    saved_scene = (scene.render.fps, scene.render.fps_base, scene.frame_start, scene.frame_end)
    animation = obj.animation_data if obj is not None else None
    saved_action = (animation.action, getattr(animation, "action_slot", None)) if animation is not None else None
    saved_modes = {bone.name: bone.rotation_mode for bone in obj.pose.bones} if obj is not None else {}
    action = None
    new_map = None
    mesh, where = [], []  # the character's vertices at rest (its soles), and where each is in Blender
    try:
        if obj is None:
            retargeted, info = api.own_skeleton_motion(motion, options)
            extra_root = None
            if info.root_is_new:
                hips = motion.skeleton.rest_offsets[0]
                extra_root = (NEW_ROOT_NAME, (hips[0], 0.0, hips[2]))
            obj, mesh = blender_data.make_box_rig(context, motion.skeleton, "kimodo_" + name, extra_root)
            made += [mesh, obj, mesh.data, obj.data]
            armature = blender_data.armature_of(obj)
        else:
            armature = blender_data.armature_of(obj)
            target = skeleton_of(armature)
            mesh, where = blender_data.bind_mesh(context, obj)
            bone_map = stored_bone_map(obj)
            if bone_map is None:
                bone_map = new_map = detected_bone_map(context, obj, mesh)
            api.humanoid_map(target, bone_map, bone_map_source(obj))  # its errors name the map
            options = replace(options, bone_map=tuple(bone_map.items()))
            retargeted, info = api.retarget_motion(motion, target, options, target_name=obj.name, source_name=str(path),
                                                   bind_mesh=mesh)
            if info.root_is_new:
                raise KimodoError("{}: no bone above the hips to carry root motion; choose root motion in the hips".format(obj.name))
        full = skeleton_of(armature)
        poses = world_poses(full, retargeted, info.root_track, info.root_bone)
        channels = pose_channels(armature, full, poses)

        if set_scene:
            fps = int(round(motion.fps)) or 1
            scene.render.fps, scene.render.fps_base = fps, fps / motion.fps
            scene.frame_start, scene.frame_end = 1, motion.frame_count
        first = scene.frame_start
        action = blender_data.key_action(obj, name, channels, first)
        names = retargeted.skeleton.joint_names
        samples = blender_data.sample_heads(context, obj, [first + f for f in range(motion.frame_count)], full.joint_names,
                                            tip_points(armature) + added_points(armature, info.added_joints))
        worst = 0.0
        for frame, sample in enumerate(samples):
            for joint, joint_name in enumerate(full.joint_names):
                worst = max(worst, length(subtract(sample[joint_name], poses[frame][joint][1])))
        if not worst <= SELF_CHECK_TOLERANCE_M:
            raise KimodoError("{}: self-check failed: Blender puts a bone {:.3g} m from where the retarget has it "
                              "(constraints or drivers on the armature?)".format(obj.name, worst))
        if made:
            text = "{}: {}, {} joints, {} frames on a new Kimodo box rig, worst joint disagreement {:.1e} m".format(
                name, motion.skeleton.label, motion.joint_count, motion.frame_count, worst)
            if passed_over is not None:
                text += "\n  warning: " + passed_over
        else:
            picks = {side: [where[i] for i in chosen] for side, chosen in api.report_vertices(info, mesh).items()}
            foot_vertices = blender_data.sample_vertices(context, [first + f for f in range(motion.frame_count)], picks) if picks else None
            report = api.report_from_positions(motion, info, [{n: s[n] for n in names} for s in samples], mesh, foot_vertices)
            text = format_report(name, report)
            problems = report_warnings(report)
            scaled = blender_data.scale_carrying_meshes(obj)
            if report.facing_warning and scaled is not None:
                problems.append(MESH_OFF_BONES_HINT.format(scaled))
            if problems:  # as `kimodo-rig retarget` prints them, one line
                text += "\n  warning: " + "; ".join(problems)
        obj.data[REPORT_PROPERTY] = text
        if new_map is not None:
            store_bone_map(obj, new_map)
    except Exception:
        if action is not None and not made:  # the character's own animation back as it was
            if saved_action is None:
                obj.animation_data_clear()
            else:
                obj.animation_data.action = saved_action[0]
                if saved_action[1] is not None:
                    obj.animation_data.action_slot = saved_action[1]
            for bone_name, mode in saved_modes.items():
                obj.pose.bones[bone_name].rotation_mode = mode
        blender_data.remove(objects=[o for o in made if isinstance(o, bpy.types.Object)], actions=[action],
                            datablocks=[d for d in made if not isinstance(d, bpy.types.Object)])
        scene.render.fps, scene.render.fps_base, scene.frame_start, scene.frame_end = saved_scene
        raise
    return obj, action, text


class KIMODO_OT_import_motion(bpy.types.Operator, ImportHelper):
    """Put a Kimodo clip on the selected character (or on a new Kimodo box rig)"""

    bl_idname = "kimodo.import_motion"
    bl_label = "Import Kimodo motion"
    bl_options = {"REGISTER", "UNDO"}

    filter_glob: StringProperty(default=api.motion_file_patterns(), options={"HIDDEN"})
    in_place: BoolProperty(name="In place", description="Remove the horizontal travel", default=False)
    root_motion: EnumProperty(
        name="Root motion",
        items=(("HIPS", "In the hips", "The hips travel, as Kimodo makes it"),
               ("ROOT", "On the root bone", "Travel and turning on the bone above the hips")),
        default="HIPS",
    )
    foot_lock: BoolProperty(name="Foot lock", description="Planted feet stay where they land while Kimodo has them in "
                            "contact (off: the feet as the solve leaves them, still on the floor)", default=True)
    set_scene: BoolProperty(name="Set scene frame rate and range", default=True)

    def execute(self, context):
        options = api.RetargetOptions(in_place=self.in_place, root_motion=self.root_motion.lower(), foot_lock=self.foot_lock)
        try:
            obj, action, text = import_motion(context, self.filepath, options, self.set_scene)
        except KimodoError as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        for line in text.splitlines():
            self.report({"WARNING"} if line.startswith("  warning: ") else {"INFO"}, line)
        return {"FINISHED"}


class KIMODO_OT_detect_bone_map(bpy.types.Operator):
    """Find again which bone plays each part of the body (replaces the stored map)"""

    bl_idname = "kimodo.detect_bone_map"
    bl_label = "Re-detect bone map"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        return obj is not None and obj.type == "ARMATURE"

    def execute(self, context):
        obj = context.active_object
        try:
            detected = detected_bone_map(context, obj)
        except KimodoError as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        store_bone_map(obj, detected)
        self.report({"INFO"}, "{}: {} parts mapped".format(obj.name, len(detected)))
        return {"FINISHED"}


def _bone_names(self, context, edit_text):
    obj = context.active_object
    if obj is None or obj.type != "ARMATURE":
        return []
    typed = edit_text.lower()
    return [bone.name for bone in obj.data.bones if typed in bone.name.lower()]


class KIMODO_OT_set_bone(bpy.types.Operator):
    """Choose the bone that plays this part of the body (stored on the armature; the next import uses it)"""

    bl_idname = "kimodo.set_bone"
    bl_label = "Set bone"
    bl_options = {"REGISTER", "UNDO", "INTERNAL"}

    part: StringProperty(name="Part", options={"HIDDEN"})
    bone: StringProperty(name="Bone", description="The bone that plays this part (empty: none, it keeps its rest pose)",
                         search=_bone_names, search_options={"SORT", "SUGGESTION"})

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        return obj is not None and obj.type == "ARMATURE"

    def invoke(self, context, event):
        try:
            self.bone = editable_bone_map(context, context.active_object).get(self.part, "")
        except KimodoError:
            self.bone = ""
        return context.window_manager.invoke_props_dialog(self)

    def draw(self, context):
        self.layout.prop(self, "bone", text=self.part)

    def execute(self, context):
        obj = context.active_object
        try:
            if self.part not in api.PARTS:
                raise KimodoError("{}: unknown part {!r}".format(bone_map_source(obj), self.part))
            if self.bone and self.bone not in obj.data.bones:
                raise KimodoError("{}: {}: no bone named {!r} in {}".format(bone_map_source(obj), self.part, self.bone, obj.name))
            bone_map = editable_bone_map(context, obj)
        except KimodoError as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        if self.bone:
            bone_map[self.part] = self.bone
        else:
            bone_map.pop(self.part, None)
        store_bone_map(obj, bone_map)
        return {"FINISHED"}


def menu_import(self, context):
    self.layout.operator(KIMODO_OT_import_motion.bl_idname, text="Kimodo motion")


CLASSES = (KIMODO_OT_import_motion, KIMODO_OT_detect_bone_map, KIMODO_OT_set_bone)
