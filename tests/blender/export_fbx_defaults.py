"""Blender's FBX exporter as a user runs it: import a .glb, export binary FBX with the exporter's DEFAULT
options (leaf bones added, every action baked as a take), or with the options a Unity user sets ("unity":
-Z forward, Y up, Apply Unit, Apply Scalings "FBX All", Apply Transform).

Usage: python export_fbx_defaults.py IN.glb OUT.fbx [unity]. Prints one JSON object ({"bones": count,
"actions": count}) as its last line."""
import json
import sys

import bpy

bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.import_scene.gltf(filepath=sys.argv[1])
options = {}
if sys.argv[3:4] == ["unity"]:
    options = dict(axis_forward="-Z", axis_up="Y", apply_unit_scale=True, apply_scale_options="FBX_SCALE_ALL",
                   bake_space_transform=True)
bpy.ops.export_scene.fbx(filepath=sys.argv[2], **options)
armatures = [o for o in bpy.context.scene.objects if o.type == "ARMATURE"]
print(json.dumps({"bones": sum(len(a.data.bones) for a in armatures), "actions": len(bpy.data.actions)}))
