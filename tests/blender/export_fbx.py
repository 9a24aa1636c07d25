"""Blender's FBX exporter as a maker of test characters: import a .glb, export it as binary FBX the way a
user exports a character (Blender's defaults but no leaf bones added, no animation baked).

Usage: python export_fbx.py IN.glb OUT.fbx. Prints one JSON object ({"bones": count}) as its last line."""
import json
import sys

import bpy

bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.import_scene.gltf(filepath=sys.argv[1])
bpy.ops.export_scene.fbx(filepath=sys.argv[2], add_leaf_bones=False, bake_anim=False)
armatures = [o for o in bpy.context.scene.objects if o.type == "ARMATURE"]
print(json.dumps({"bones": sum(len(a.data.bones) for a in armatures)}))
