"""3D view > sidebar (N) > Kimodo: the last import's report and the bone map of the active armature, every
canonical part with the bone that plays it, each a button that sets it (fingers in a sub-panel). The map
lives on the armature data as the custom property `kimodo_bone_map` (the JSON `kimodo-rig map RIG --json`
prints, saved with the .blend), so a fix is made once per character and every later import uses it."""
import bpy

from .kimodo_rig.errors import KimodoError
from .kimodo_rig.retarget import api
from .operators import BONE_MAP_PROPERTY, REPORT_PROPERTY, KIMODO_OT_detect_bone_map, KIMODO_OT_set_bone, stored_bone_map

FINGER_WORDS = ("thumb", "index", "middle", "ring", "pinky")
BODY = tuple(p for p in api.PARTS if not p.startswith(FINGER_WORDS))
FINGERS = tuple(p for p in api.PARTS if p.startswith(FINGER_WORDS))


def _armature(context):
    obj = context.active_object
    return obj if obj is not None and obj.type == "ARMATURE" else None


def draw_parts(layout, obj, parts, bone_map) -> None:
    column = layout.column(align=True)
    for part in parts:
        bone = bone_map.get(part, "")
        row = column.row(align=True)
        row.alert = bool(bone) and bone not in obj.data.bones  # a renamed or deleted bone
        row.label(text=part)
        button = row.operator(KIMODO_OT_set_bone.bl_idname, text=bone or "(none)")
        button.part = part


class VIEW3D_PT_kimodo(bpy.types.Panel):
    bl_label = "Kimodo"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Kimodo"

    def draw(self, context):
        layout = self.layout
        obj = _armature(context)
        if obj is None:
            layout.label(text="Select an armature (or none: File > Import >")
            layout.label(text="Kimodo motion makes a Kimodo box rig)")
            return
        report = obj.data.get(REPORT_PROPERTY)
        box = layout.box()
        if report:
            for line in str(report).splitlines():
                box.label(text=line.strip())
        else:
            box.label(text="No Kimodo motion imported yet")
        try:
            bone_map = stored_bone_map(obj)
        except KimodoError as error:
            layout.operator(KIMODO_OT_detect_bone_map.bl_idname, icon="FILE_REFRESH")
            layout.label(text=str(error), icon="ERROR")
            return
        if bone_map is None:
            layout.operator(KIMODO_OT_detect_bone_map.bl_idname, text="Detect bone map", icon="FILE_REFRESH")
            layout.label(text="(or the first import detects it)")
            return
        layout.operator(KIMODO_OT_detect_bone_map.bl_idname, icon="FILE_REFRESH")
        draw_parts(layout, obj, BODY, bone_map)
        unknown = [part for part in bone_map if part not in api.PARTS]
        if unknown:
            layout.label(text="Unknown parts in the map: " + ", ".join(unknown), icon="ERROR")


class VIEW3D_PT_kimodo_fingers(bpy.types.Panel):
    bl_label = "Fingers"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Kimodo"
    bl_parent_id = "VIEW3D_PT_kimodo"
    bl_options = {"DEFAULT_CLOSED"}

    @classmethod
    def poll(cls, context):
        obj = _armature(context)
        return obj is not None and obj.data.get(BONE_MAP_PROPERTY) is not None

    def draw(self, context):
        obj = _armature(context)
        try:
            bone_map = stored_bone_map(obj)
        except KimodoError:
            return  # the main panel says what is wrong
        draw_parts(self.layout, obj, FINGERS, bone_map)


CLASSES = (VIEW3D_PT_kimodo, VIEW3D_PT_kimodo_fingers)
