"""ufbx (pip `ufbx`) as an independent judge of where an FBX character's bones sit at BIND, run in its own
process (see ufbx_judge.py for why every wrapper is kept alive and the process exits without freeing).

Usage: python ufbx_bind_judge.py FILE. Loads FILE strictly with ufbx's own conversion to Kimodo's frame
(Y up, Z front, right-handed, metres; geometry and transforms modified, no extra root) and prints one JSON
object {"clusters": {bone: [x, y, z]}, "poses": {...}, "nodes": {...}, "bind_vertices": {mesh: [[x, y, z],
...]}}: each skin cluster's bone at bind (ufbx's bind_to_world, from the cluster's TransformLink), each bone
of a BindPose (bone_to_world), every node's world origin as the file saved it, and each skinned mesh's
vertices at bind (its first cluster's geometry_to_world: TransformLink, Transform, geometric transform),
"rigid_vertices": {mesh node: [...]}: each mesh without a skin where the file saved it (its node's
geometry_to_world).
Node places are ufbx's own evaluation of the FBX transform chain (pivots, offsets, pre/post rotation, order).
"""
import json
import os
import sys

import ufbx

KEEP = []


def kept(items):
    items = list(items)
    KEEP.append(items)
    return items


def origin(matrix):
    KEEP.append(matrix)
    column = matrix.c3
    KEEP.append(column)
    return [column.x, column.y, column.z]


def transform(matrix, vertex):
    KEEP.append(matrix)
    columns = [matrix.c0, matrix.c1, matrix.c2, matrix.c3]
    KEEP.extend(columns)
    x, y, z, t = ((c.x, c.y, c.z) for c in columns)
    return [x[k] * vertex.x + y[k] * vertex.y + z[k] * vertex.z + t[k] for k in range(3)]


def main():
    scene = ufbx.load_file(sys.argv[1], strict=True, target_axes=ufbx.axes_right_handed_y_up, target_unit_meters=1.0,
                           space_conversion=ufbx.SpaceConversion.MODIFY_GEOMETRY)
    KEEP.append(scene)
    report = {"clusters": {}, "poses": {}, "nodes": {}, "bind_vertices": {}, "rigid_vertices": {}}
    for skin in kept(scene.skin_deformers):
        for cluster in kept(skin.clusters):
            bone = cluster.bone_node
            KEEP.append(bone)
            report["clusters"].setdefault(bone.name, origin(cluster.bind_to_world))
    for mesh in kept(scene.meshes):  # each skinned mesh's vertices at bind, through its first cluster
        skins = kept(mesh.skin_deformers)
        clusters = kept(skins[0].clusters) if skins else []
        if clusters:
            matrix = clusters[0].geometry_to_world
            KEEP.append(matrix)
            columns = [matrix.c0, matrix.c1, matrix.c2, matrix.c3]
            KEEP.extend(columns)
            x, y, z, t = ((c.x, c.y, c.z) for c in columns)
            places = []
            for vertex in kept(mesh.vertices):
                places.append([x[k] * vertex.x + y[k] * vertex.y + z[k] * vertex.z + t[k] for k in range(3)])
            report["bind_vertices"][mesh.name] = places
    for node in kept(scene.nodes):  # each mesh without a skin where the file saved it (node_to_world, geometric)
        mesh = node.mesh
        KEEP.append(mesh)
        if mesh is None or kept(mesh.skin_deformers):
            continue
        report["rigid_vertices"][node.name] = [transform(node.geometry_to_world, vertex) for vertex in kept(mesh.vertices)]
    for pose in kept(scene.poses):
        if pose.is_bind_pose:
            for bone_pose in kept(pose.bone_poses):
                bone = bone_pose.bone_node
                KEEP.append(bone)
                report["poses"].setdefault(bone.name, origin(bone_pose.bone_to_world))
    for node in kept(scene.nodes):
        if not node.is_root:
            report["nodes"][node.name] = origin(node.node_to_world)
    print(json.dumps(report))
    sys.stdout.flush()
    os._exit(0)


main()
