"""ufbx (pip `ufbx`, the C library's own Python binding) as a judge of an FBX file, run in its own process.
ufbx 0.0.5's Python binding caches one wrapper per element and crashes when it hands back a cached wrapper
that Python has already freed (a node met while iterating scene.nodes, then again as a cluster's bone).
So every wrapper this script touches is kept alive in KEEP until the process ends, and the process exits
without freeing anything; a crash would still fail only this file's check, not the whole test run.

Usage: python ufbx_judge.py FILE [FPS]. Loads FILE strictly, once as written and once with axes and units
normalised to Kimodo's (Y up, Z front, right-handed, metres), and prints one JSON object: the settings
(frame rate, metres per unit, axes), the warnings, the bones, the meshes (vertices, faces, skinned or not),
the skin clusters' bones, the textures (name, embedded bytes), the bind pose count,
each take's curves' key times, and, with FPS, every node's world origin at frame/FPS for every frame of
the first take (normalised scene).
"""
import json
import math
import os
import sys

import ufbx

KEEP = []


def kept(items):
    """`items` (a ufbx list) as a Python list whose wrappers live until the process ends."""
    items = list(items)
    KEEP.append(items)
    return items


def describe(path, fps):
    scene = ufbx.load_file(path, strict=True)
    settings = scene.settings
    axes = settings.axes
    metadata = scene.metadata
    warnings = metadata.warnings
    KEEP.extend((scene, settings, axes, metadata, warnings))
    nodes = kept(scene.nodes)
    bones = kept(node.bone for node in nodes)
    report = {
        "version": metadata.version,
        "fps": settings.frames_per_second,
        "unit_meters": settings.unit_meters,
        "axes": [axes.right.name, axes.up.name, axes.front.name],
        "warnings": [str(w.description) for w in warnings],
        "bones": [node.name for node, bone in zip(nodes, bones) if bone is not None],
        "meshes": [],
        "clusters": [],
        "bind_poses": 0,
        "takes": [],
        "textures": [],
        "positions": None,
    }
    for mesh in kept(scene.meshes):
        report["meshes"].append({"vertices": mesh.num_vertices, "faces": mesh.num_faces, "triangles": mesh.num_triangles,
                                 "corners": mesh.num_indices,
                                 "skinned": len(kept(mesh.skin_deformers)) > 0})
    for skin in kept(scene.skin_deformers):
        for cluster in kept(skin.clusters):
            bone = cluster.bone_node
            KEEP.append(bone)
            report["clusters"].append(bone.name)
    for texture in kept(scene.textures):
        report["textures"].append({"name": texture.name, "content": list(texture.content)})
    for pose in kept(scene.poses):
        report["bind_poses"] += 1 if pose.is_bind_pose else 0
    for stack in kept(scene.anim_stacks):
        take = {"name": stack.name, "curves": []}
        for layer in kept(stack.layers):
            for value in kept(layer.anim_values):
                for curve in kept(value.curves):
                    take["curves"].append({"value": value.name, "times": [key.time for key in kept(curve.keyframes)]})
        report["takes"].append(take)
    if fps:
        report["positions"] = world_positions(path, fps)
    return report


def world_positions(path, fps):
    """{node name: [[x, y, z] per frame]}, metres, Y up, at frame/fps over the first take."""
    scene = ufbx.load_file(path, strict=True, target_axes=ufbx.axes_right_handed_y_up, target_unit_meters=1.0)
    stack = kept(scene.anim_stacks)[0]
    anim = stack.anim
    KEEP.extend((scene, anim))
    frames = int(math.floor(stack.time_end * fps + 0.5)) + 1
    positions = {}
    for frame in range(frames):
        evaluated = ufbx.evaluate_scene(scene, anim, frame / fps)
        KEEP.append(evaluated)
        for node in kept(evaluated.nodes):
            origin = node.node_to_world.c3
            positions.setdefault(node.name, []).append([origin.x, origin.y, origin.z])
    return positions


def main():
    path = sys.argv[1]
    fps = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    print(json.dumps(describe(path, fps)))
    sys.stdout.flush()
    os._exit(0)  # skip freeing ufbx's objects at exit (see the module's note)


main()
