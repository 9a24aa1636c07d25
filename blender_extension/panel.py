"""3D view > sidebar (N) > Kimodo: the last import's report and the bone map of the active armature,
editable. The map lives on the armature data (`kimodo_bone_map`, saved with the .blend), so a fix is
made once per character and every later import uses it."""
import bpy
from bpy.props import CollectionProperty, StringProperty

from .operators import REPORT_PROPERTY, KIMODO_OT_detect_bone_map


class KimodoBonePart(bpy.types.PropertyGroup):
    part: StringProperty(name="Part", description="Canonical body part (hips, spine_0, upperarm_l, ...)")
    bone: StringProperty(name="Bone", description="The armature's bone that plays this part (empty: none)")


class VIEW3D_PT_kimodo(bpy.types.Panel):
    bl_label = "Kimodo"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Kimodo"

    def draw(self, context):
        layout = self.layout
        obj = context.active_object
        if obj is None or obj.type != "ARMATURE":
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
        layout.operator(KIMODO_OT_detect_bone_map.bl_idname, icon="FILE_REFRESH")
        column = layout.column(align=True)
        for item in obj.data.kimodo_bone_map:
            column.prop_search(item, "bone", obj.data, "bones", text=item.part)


CLASSES = (KimodoBonePart, VIEW3D_PT_kimodo)


def register_properties():
    bpy.types.Armature.kimodo_bone_map = CollectionProperty(type=KimodoBonePart)


def unregister_properties():
    del bpy.types.Armature.kimodo_bone_map
