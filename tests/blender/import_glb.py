"""Blender as a judge of our .glb files: import each one as a user would and report what Blender built.

Usage: python import_glb.py SPEC.json, where SPEC is [{"path": ..., "fps": 30, "frames": [0, 70, 149]}, ...].
For each file, in a fresh empty scene with the scene fps set BEFORE import (Blender turns key times into
frames with it): the armatures, the meshes an armature modifier deforms, every bone head in world space
at each requested frame converted back to glTF's axes (Blender is Z up: glTF (x, y, z) = Blender
(x, z, -y)), and how far the deformed mesh is from where linear blend skinning with Blender's own pose puts
it. Prints one JSON object (file name -> report) as the last line.
"""
import json
import sys

import bpy

from gltf_import import import_gltf


def to_gltf_axes(vector):
    return [vector.x, vector.z, -vector.y]


def report_one(path, fps, frames):
    scene = import_gltf(path, fps)
    armatures = [o for o in scene.objects if o.type == "ARMATURE"]
    report = {"armatures": len(armatures), "skinned_meshes": [], "heads": {}, "deform_error": None,
              "deform_travel": None, "has_action": False}
    if len(armatures) != 1:
        return report
    armature = armatures[0]
    report["has_action"] = bool(armature.animation_data and armature.animation_data.action)
    skinned = [
        o for o in scene.objects
        if o.type == "MESH" and any(m.type == "ARMATURE" and m.object == armature for m in o.modifiers)
    ]
    report["skinned_meshes"] = [o.name for o in skinned]
    rest_vertices = {o.name: [o.matrix_world @ v.co for v in o.data.vertices] for o in skinned}
    deform_error = 0.0
    deform_travel = 0.0
    for frame in frames:
        scene.frame_set(frame)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        arm_world = armature.matrix_world
        report["heads"][str(frame)] = {
            bone.name: to_gltf_axes(arm_world @ bone.head) for bone in armature.pose.bones
        }
        for mesh_object in skinned:
            evaluated = mesh_object.evaluated_get(depsgraph)
            mesh = evaluated.to_mesh()
            groups = mesh_object.vertex_groups
            for vertex, rest_world in zip(mesh.vertices, rest_vertices[mesh_object.name]):
                # Linear blend skinning in armature space with Blender's own pose matrices.
                expected = rest_world * 0.0
                total = 0.0
                for element in mesh_object.data.vertices[vertex.index].groups:
                    bone = armature.pose.bones.get(groups[element.group].name)
                    if bone is None or element.weight == 0.0:
                        continue
                    skin = arm_world @ bone.matrix @ bone.bone.matrix_local.inverted() @ arm_world.inverted()
                    expected = expected + (skin @ rest_world) * element.weight
                    total += element.weight
                deformed = mesh_object.matrix_world @ vertex.co
                if total == 0.0:
                    deform_error = float("inf")
                    continue
                deform_error = max(deform_error, (deformed - expected / total).length)
                deform_travel = max(deform_travel, (deformed - rest_world).length)
            evaluated.to_mesh_clear()
    report["deform_error"] = deform_error
    report["deform_travel"] = deform_travel
    return report


def main():
    spec = json.loads(open(sys.argv[1], encoding="utf-8").read())
    results = {}
    for item in spec:
        results[item["path"]] = report_one(item["path"], item["fps"], item["frames"])
    print(json.dumps(results))


main()
