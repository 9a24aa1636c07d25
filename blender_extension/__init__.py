"""Kimodo motion for Blender: File > Import > Kimodo motion puts a Kimodo clip (a kimodo.cpp clip folder
or a file in it, a Kimodo .npz, SOMA .bvh, G1 .csv, AMASS .npz, or a .glb or .fbx from step 1 or
`kimodo-rig convert`) on the selected character's armature (imported from any file Blender reads: .glb,
.vrm, .fbx), or on a new Kimodo box rig when no armature is selected. A thin front end: the
retarget is kimodo_rig's (copied into this extension when it is built by
scripts/build_blender_extension.py)."""
import bpy

from . import operators, panel

CLASSES = panel.CLASSES + operators.CLASSES


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.TOPBAR_MT_file_import.append(operators.menu_import)


def unregister():
    bpy.types.TOPBAR_MT_file_import.remove(operators.menu_import)
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
