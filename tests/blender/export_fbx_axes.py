"""Blender's FBX exporter writing a character in another frame or scale: import a .glb, export binary FBX
with the given up and forward axes, global scale and scale option (no leaf bones, no animation).

Usage: python export_fbx_axes.py IN.glb OUT.fbx UP FORWARD SCALE SCALE_OPTION (as Blender names them:
UP, FORWARD in X Y Z -X -Y -Z; SCALE_OPTION FBX_SCALE_NONE, FBX_SCALE_UNITS, FBX_SCALE_CUSTOM, FBX_SCALE_ALL).
Prints one JSON object ({"bones": count}) as its last line."""
import json
import sys

import bpy

bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.import_scene.gltf(filepath=sys.argv[1])
bpy.ops.export_scene.fbx(filepath=sys.argv[2], add_leaf_bones=False, bake_anim=False, axis_up=sys.argv[3],
                         axis_forward=sys.argv[4], global_scale=float(sys.argv[5]), apply_scale_options=sys.argv[6])
armatures = [o for o in bpy.context.scene.objects if o.type == "ARMATURE"]
print(json.dumps({"bones": sum(len(a.data.bones) for a in armatures)}))
