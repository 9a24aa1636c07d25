"""Blender's FBX exporter as a maker of an FBX character SAVED IN ANOTHER POSE than its bind pose (as
many downloads are): import a .glb, pose its armature (the hips moved and turned, the arms and a leg
turned), export binary FBX without leaf bones and without animation. The exporter writes the pose into the
nodes' transforms and the rest into the clusters' TransformLink and the BindPose.

Usage: python export_fbx_posed.py IN.glb OUT.fbx. Prints one JSON object ({"bones": count, "posed": names})."""
import json
import math
import sys

import bpy
from mathutils import Euler

bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.import_scene.gltf(filepath=sys.argv[1])
armature = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
posed = []
for index, bone in enumerate(armature.pose.bones):
    if bone.parent is None:
        bone.location = (0.1, 0.05, -0.2)  # bone space: the hips moved off their bind place
    if index % 3 == 0:  # every third bone turned: spine, limbs and fingers alike
        bone.rotation_mode = "XYZ"
        bone.rotation_euler = Euler((math.radians(25), math.radians(-15), math.radians(35)))
        posed.append(bone.name)
bpy.context.view_layer.update()
bpy.ops.export_scene.fbx(filepath=sys.argv[2], add_leaf_bones=False, bake_anim=False)
print(json.dumps({"bones": len(armature.data.bones), "posed": posed}))
