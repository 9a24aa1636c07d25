"""Blender as a judge of our .fbx files: import each one with Blender's FBX importer, as a user would, and
report what Blender built.

Usage: python import_fbx.py SPEC.json, where SPEC is [{"path": ..., "frames": [0, 75, 149]}, ...]; an item
with "vertices_frame": k also reports every mesh object's vertices at frame k as Blender evaluates them
(the depsgraph's mesh: the Armature modifier applied), in world space, Y up, by object name.
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


def y_up(point):
    return [point.x, point.z, -point.y]


def mesh_vertices(scene):
    """{object name: [[x, y, z], ...]}: each mesh object's evaluated vertices, world, Y up."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    out = {}
    for obj in scene.objects:
        if obj.type != "MESH":
            continue
        evaluated = obj.evaluated_get(depsgraph)
        mesh = evaluated.to_mesh()
        world = evaluated.matrix_world
        out[obj.name] = [y_up(world @ vertex.co) for vertex in mesh.vertices]
        evaluated.to_mesh_clear()
    return out


def report_one(path, frames, vertices_frame=None):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    bpy.ops.import_scene.fbx(filepath=path, anim_offset=0.0)
    armatures = [o for o in scene.objects if o.type == "ARMATURE"]
    report = {"fps": scene.render.fps / scene.render.fps_base, "armatures": len(armatures), "skinned_meshes": [],
              "bones": [], "heads": {}, "key_counts": [], "vertices": {}}
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
            report["heads"][str(frame)][bone.name] = y_up(world @ bone.head)
    if vertices_frame is not None:
        scene.frame_set(vertices_frame)
        report["vertices"] = mesh_vertices(scene)
    return report


def main():
    spec = json.loads(open(sys.argv[1], encoding="utf-8").read())
    reports = {item["path"]: report_one(item["path"], item["frames"], item.get("vertices_frame")) for item in spec}
    print(json.dumps(reports))


main()
