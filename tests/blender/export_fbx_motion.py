"""Blender's FBX exporter as another writer of a Kimodo motion: import a .glb clip (the scene at the clip's
frame rate first, so no frame is resampled), export binary FBX with the animation baked at every frame, no
leaf bones. Blender puts the armature under a node turned from Z up and scaled by 100, and gives each bone
its own frame (Y along the bone).

Usage: python export_fbx_motion.py IN.glb OUT.fbx FPS. Prints one JSON object ({"frames": [start, end]})."""
import json
import sys

import bpy

bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.context.scene.render.fps = int(round(float(sys.argv[3])))
bpy.context.scene.render.fps_base = 1.0
bpy.ops.import_scene.gltf(filepath=sys.argv[1])
armature = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
start, end = (int(round(f)) for f in armature.animation_data.action.frame_range)
bpy.context.scene.frame_start, bpy.context.scene.frame_end = start, end
bpy.ops.export_scene.fbx(filepath=sys.argv[2], add_leaf_bones=False, bake_anim=True, bake_anim_use_all_actions=False,
                         bake_anim_use_nla_strips=False, bake_anim_simplify_factor=0.0)
print(json.dumps({"frames": [start, end]}))
