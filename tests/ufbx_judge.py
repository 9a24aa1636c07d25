"""ufbx (pip `ufbx`, the C library's own Python binding) as a judge of an FBX file, run in its own process.
ufbx 0.0.5's Python binding caches one wrapper per element and crashes when it hands back a cached wrapper
that Python has already freed (a node met while iterating scene.nodes, then again as a cluster's bone).
So every wrapper this script touches is kept alive in KEEP until the process ends, and the process exits
without freeing anything; a crash would still fail only this file's check, not the whole test run.

Usage: python ufbx_judge.py FILE [FPS [FOOT,FOOT]]. Loads FILE strictly, once as written and once with axes and units
normalised to Kimodo's (Y up, Z front, right-handed, metres), and prints one JSON object: the settings
(frame rate, metres per unit, axes), the warnings, the bones, the meshes (vertices, faces, skinned or not),
the skin clusters' bones, the textures (name, embedded bytes), the bind pose count,
each take's curves' key times, and, with FPS, every node's world origin at frame/FPS for every frame of
the first take (normalised scene). With FOOT bones named too: each foot's skinned vertices (those weighted
at least half to that bone and the bones under it, skinned by ufbx's clusters: sum of weight * bone world *
geometry_to_bone * vertex) at bind and at every frame, as "feet": {FOOT: {"rest": [[x, y, z]...], "frames":
[lowest y per frame]}}; and "rest_height": the whole skinned mesh's height at bind.
"""
import json
import math
import os
import sys

import numpy as np
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


def matrix(m):
    """A ufbx Matrix (3 columns and a translation) as a 4x4 numpy array."""
    columns = [m.c0, m.c1, m.c2, m.c3]
    KEEP.extend(columns)
    out = np.eye(4)
    for k, c in enumerate(columns):
        out[:3, k] = (c.x, c.y, c.z)
    return out


def feet(path, fps, foot_names):
    """Per foot bone: its vertices at bind and the lowest of them at every frame, as ufbx skins them."""
    scene = ufbx.load_file(path, strict=True, target_axes=ufbx.axes_right_handed_y_up, target_unit_meters=1.0)
    stack = kept(scene.anim_stacks)[0]
    anim = stack.anim
    KEEP.extend((scene, anim))
    nodes = kept(scene.nodes)
    parent_of = {}
    for node in nodes:
        parent = node.parent
        KEEP.append(parent)
        parent_of[node.name] = parent.name if parent is not None else None

    def under(name, foot):
        while name is not None:
            if name == foot:
                return True
            name = parent_of.get(name)
        return False

    skins = []  # (local vertices (n, 4), [(bone name, geometry_to_bone, bind_to_world, weights (n,))])
    for mesh in kept(scene.meshes):
        for skin in kept(mesh.skin_deformers):
            points = kept(mesh.vertices)
            local = np.array([[p.x, p.y, p.z, 1.0] for p in points])
            clusters = []
            for cluster in kept(skin.clusters):
                bone = cluster.bone_node
                KEEP.append(bone)
                weights = np.zeros(len(local))
                weights[np.array(list(cluster.vertices), dtype=int)] = list(cluster.weights)
                clusters.append((bone.name, matrix(cluster.geometry_to_bone), matrix(cluster.bind_to_world), weights))
            skins.append((local, clusters))

    def skinned(worlds):
        out = []
        for local, clusters in skins:
            total = np.zeros((len(local), 4))
            for bone, geometry_to_bone, bind, weights in clusters:
                total += weights[:, None] * (local @ (worlds.get(bone, bind) @ geometry_to_bone).T)
            out.append(total[:, :3])
        return out

    rest = skinned({bone: bind for _, clusters in skins for bone, _, bind, _ in clusters})
    chosen = {}
    for foot in foot_names:
        chosen[foot] = []
        for local, clusters in skins:
            on_foot = sum(w for bone, _, _, w in clusters if under(bone, foot))
            every = sum(w for _, _, _, w in clusters)
            chosen[foot].append(on_foot >= 0.5 * np.maximum(every, 1e-12))
    result = {foot: {"rest": np.concatenate([r[c] for r, c in zip(rest, chosen[foot])]).tolist(), "frames": []}
              for foot in foot_names}
    frames = int(math.floor(stack.time_end * fps + 0.5)) + 1
    for frame in range(frames):
        evaluated = ufbx.evaluate_scene(scene, anim, frame / fps)
        KEEP.append(evaluated)
        worlds = {node.name: matrix(node.node_to_world) for node in kept(evaluated.nodes)}
        posed = skinned(worlds)
        for foot in foot_names:
            result[foot]["frames"].append(float(min(p[c][:, 1].min() for p, c in zip(posed, chosen[foot]) if c.any())))
    every_rest = np.concatenate(rest)
    return result, float(every_rest[:, 1].max() - every_rest[:, 1].min())


def main():
    path = sys.argv[1]
    fps = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    report = describe(path, fps)
    if len(sys.argv) > 3:
        report["feet"], report["rest_height"] = feet(path, fps, sys.argv[3].split(","))
    print(json.dumps(report))
    sys.stdout.flush()
    os._exit(0)  # skip freeing ufbx's objects at exit (see the module's note)


main()
