"""Blender as a judge of our .fbx files: import each one with Blender's FBX importer, as a user would, and
report what Blender built.

Usage: python import_fbx.py SPEC.json, where SPEC is [{"path": ..., "frames": [0, 75, 149]}, ...].
For each file, in a fresh empty scene: the importer's defaults but anim_offset=0 (its default shifts the
animation to start at frame 1; with 0, clip frame k is Blender frame k). Reports the scene's frame rate
(the importer sets it from the file's GlobalSettings), the armatures, the meshes an armature modifier
deforms, the keyframe counts of the armature's action, and every bone head in world space at each
requested frame converted back to Y up (the importer turns the file's Y up into Blender's Z up:
(x, y, z) = Blender (x, z, -y)). Prints one JSON object (file name -> report) as the last line.
"""
import json
import sys

import bpy


def report_one(path, frames):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    bpy.ops.import_scene.fbx(filepath=path, anim_offset=0.0)
    armatures = [o for o in scene.objects if o.type == "ARMATURE"]
    report = {"fps": scene.render.fps / scene.render.fps_base, "armatures": len(armatures), "skinned_meshes": [],
              "bones": [], "heads": {}, "key_counts": []}
    if len(armatures) != 1:
        return report
    armature = armatures[0]
    report["bones"] = [bone.name for bone in armature.data.bones]
    report["skinned_meshes"] = [
        o.name for o in scene.objects
        if o.type == "MESH" and any(m.type == "ARMATURE" and m.object == armature for m in o.modifiers)
    ]
    action = armature.animation_data.action if armature.animation_data else None
    if action is not None:
        curves = action.fcurves if hasattr(action, "fcurves") else [
            c for layer in action.layers for strip in layer.strips for bag in strip.channelbags for c in bag.fcurves]
        report["key_counts"] = sorted({len(curve.keyframe_points) for curve in curves})
    for frame in frames:
        scene.frame_set(frame)
        world = armature.matrix_world
        report["heads"][str(frame)] = {}
        for bone in armature.pose.bones:
            head = world @ bone.head
            report["heads"][str(frame)][bone.name] = [head.x, head.z, -head.y]
    return report


def main():
    spec = json.loads(open(sys.argv[1], encoding="utf-8").read())
    print(json.dumps({item["path"]: report_one(item["path"], item["frames"]) for item in spec}))


main()
