"""Blender as a judge of BVH, both ways, in one process.

Usage: python bvh_judge.py SPEC.json with SPEC = {
  "imports": [{"path": ..., "scale": 0.01, "frames": [0, 70, 149], "export": {"path": ..., "scale": 100}}],
  "metarig": {"path": ..., "frames": [0, 5, 11]}}
- imports: each BVH is imported as a user would (import_anim.bvh, default axes: BVH Y up / -Z forward
  become Blender Z up / Y forward, BVH frame i = Blender frame i + 1) and every bone head is reported in
  world space at the requested BVH frames, converted back to the BVH's axes (x, y, z) = Blender (x, z, -y).
  With "export", the imported armature is then exported again (export_anim.bvh) and the heads in armature
  space (which is the BVH's own frame) are reported for the same frames.
- metarig: Rigify's human metarig (built here, nothing of ours in it), posed with keyed rotations and a
  moving root, exported with export_anim.bvh (scale 1, armature space, Z up); heads in armature space.
Prints one JSON object as the last line.
"""
import json
import math
import random
import sys

import bpy


def heads(armature, frames, world):
    scene = bpy.context.scene
    report = {}
    for frame in frames:
        scene.frame_set(frame + 1)
        bpy.context.view_layer.update()
        if world:
            report[str(frame)] = {
                bone.name: [p.x, p.z, -p.y] for bone in armature.pose.bones for p in [armature.matrix_world @ bone.head]
            }
        else:
            report[str(frame)] = {bone.name: list(bone.head) for bone in armature.pose.bones}
    return report


def only_armature():
    armatures = [o for o in bpy.context.scene.objects if o.type == "ARMATURE"]
    assert len(armatures) == 1, "expected one armature, got {}".format(len(armatures))
    armature = armatures[0]
    for obj in bpy.context.scene.objects:
        obj.select_set(obj is armature)
    bpy.context.view_layer.objects.active = armature
    return armature


def export(path, scale, frame_count):
    bpy.ops.export_anim.bvh(filepath=path, global_scale=scale, frame_start=1, frame_end=frame_count)


def judge_import(item):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.import_anim.bvh(filepath=item["path"], global_scale=item["scale"], frame_start=1,
                            update_scene_fps=True, update_scene_duration=True)
    armature = only_armature()
    action = armature.animation_data.action if armature.animation_data else None
    report = {"bones": len(armature.pose.bones), "heads": heads(armature, item["frames"], world=True),
              "frame_range": list(action.frame_range) if action else None}
    if "export" in item:
        frame_count = int(round(action.frame_range[1]))
        export(item["export"]["path"], item["export"]["scale"], frame_count)
        report["exported_heads"] = heads(armature, item["frames"], world=False)
    return report


def judge_metarig(item):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.preferences.addon_enable(module="rigify")
    bpy.ops.object.armature_human_metarig_add()
    armature = only_armature()
    bpy.ops.object.mode_set(mode="POSE")
    randomness = random.Random(5)
    frames = item["frames"]
    for frame in frames:
        for bone in armature.pose.bones:
            bone.rotation_mode = "QUATERNION"
            axis = [randomness.uniform(-1, 1) for _ in range(3)]
            norm = math.sqrt(sum(a * a for a in axis)) or 1.0
            angle = randomness.uniform(-0.5, 0.5)
            bone.rotation_quaternion = [math.cos(angle / 2)] + [a / norm * math.sin(angle / 2) for a in axis]
            bone.keyframe_insert("rotation_quaternion", frame=frame + 1)
        root = armature.pose.bones[0]
        root.location = [randomness.uniform(-0.3, 0.3) for _ in range(3)]
        root.keyframe_insert("location", frame=frame + 1)
    bpy.ops.object.mode_set(mode="OBJECT")
    export(item["path"], 1.0, frames[-1] + 1)
    return {"bones": len(armature.pose.bones), "root": armature.pose.bones[0].name,
            "matrix_world_is_identity": armature.matrix_world == armature.matrix_world.Identity(4),
            "heads": heads(armature, frames, world=False)}


def main():
    with open(sys.argv[1], encoding="utf-8") as handle:
        spec = json.load(handle)
    result = {"imports": [judge_import(item) for item in spec.get("imports", [])]}
    if "metarig" in spec:
        result["metarig"] = judge_metarig(spec["metarig"])
    print(json.dumps(result))


main()
