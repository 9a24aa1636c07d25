"""Blender as a judge of feet and floor in retargeted .glb files: Blender's own glTF importer reads each
file, its depsgraph deforms the mesh (the armature modifier, `evaluated_get`), and what Blender shows is
reported, in glTF's axes (Blender is Z up: glTF (x, y, z) = Blender (x, z, -y)). Nothing here imports
kimodo_rig.

Usage: python feet_judge.py SPEC.json OUT.json, SPEC a list of cases:
  {"name", "output": retargeted .glb, "rig": the input character (saved at bind), "fps", "frames",
   "feet": {"l": foot bone, "r": ...}, "toes": {"l": toe bone or null, ...}, "points": [bone names],
   "forward": [x, 0, z] the facing the rig was built with (glTF axes; +Z when absent),
   "carried": {name: {"bone", "at": [x, y, z] at rest}}: points fixed in a bone's frame (a dropped hand),
   "hands": {"l": hand bone, ...} (optional), "import": {the importer's options} (optional)}
For each case, from the INPUT character in its rest position (`pose_position = 'REST'`, the bind pose
Blender rebuilt from the file): every foot vertex (vertices carried at least half by the foot bone and
the bones under it; a character of rigid parts with no skin, Kenney's blocks, has no armature in Blender:
its nodes are objects, the foot every mesh object that is the foot's node or under it), the head of every bone in `points`, the height of the whole mesh. From the OUTPUT at every
frame: each foot's lowest vertex height, its front sole vertex (chosen on the input at rest along the
case's "forward", the facing the rig was built with: `sole_front`), the head of every bone in `points`, where
each `carried` point is and the lowest vertex of each hand (the hand bone and the bones under it). Writes one JSON object {name: report}.
"""
import json
import sys

import bpy
import numpy as np

from gltf_import import import_gltf
from soles import sole_front

TO_GLTF = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])  # Blender (x, y, z) -> glTF


def gltf_axes(points):
    return np.asarray(points, dtype=np.float64) @ TO_GLTF.T


def load(path, fps, options):
    """The scene, its armature (None: a character of rigid parts, whose glTF nodes Blender made objects)
    and the mesh objects it moves. `options`: the importer's, where the case gives them."""
    scene = import_gltf(path, fps, **options)
    armatures = [o for o in scene.objects if o.type == "ARMATURE"]
    if not armatures and not any(o.type == "MESH" and o.find_armature() for o in scene.objects):
        return scene, None, [o for o in scene.objects if o.type == "MESH"]
    if len(armatures) != 1:
        raise SystemExit("{}: Blender built {} armatures, expected 1".format(path, len(armatures)))
    armature = armatures[0]
    meshes = [o for o in scene.objects if o.type == "MESH"
              and (_skinned_by(o, armature) or _bone_above(o, armature) is not None)]
    return scene, armature, meshes


def _skinned_by(mesh_object, armature):
    return any(m.type == "ARMATURE" and m.object == armature for m in mesh_object.modifiers)


def _bone_above(mesh_object, armature):
    """The bone a rigid mesh rides on (Blender's importer parents a mesh node under a joint node to that
    bone: the Quaternius robot's feet), through any objects between; None if it rides on none."""
    child = mesh_object
    while child.parent is not None:
        if child.parent == armature and child.parent_type == "BONE":
            return child.parent_bone
        child = child.parent
    return None


def node_matrix(scene, armature, name, posed):
    """A bone's (or, with no armature, a node object's) world matrix in Blender's axes: posed, or at rest."""
    if armature is None:
        return np.array(scene.objects[name].matrix_world)
    world = np.array(armature.matrix_world)
    return world @ np.array(armature.pose.bones[name].matrix if posed else armature.data.bones[name].matrix_local)


def vertices_under(armature, meshes, top):
    """Per mesh object: which vertices a bone (a foot, a hand) and the bones under it carry, by Blender's
    vertex groups (a rigid mesh on a bone: all of it, if that bone is one of them); with no armature, all
    of a mesh object that is the node `top` or under it."""
    if armature is None:
        under = {top} | {o.name for o in bpy.data.objects[top].children_recursive}
        return [np.full(len(m.data.vertices), m.name in under) for m in meshes]
    bone = armature.data.bones[top]
    names = {bone.name} | {child.name for child in bone.children_recursive}
    masks = []
    for mesh_object in meshes:
        if not _skinned_by(mesh_object, armature):  # a rigid mesh: wholly its bone's
            masks.append(np.full(len(mesh_object.data.vertices), _bone_above(mesh_object, armature) in names))
            continue
        on_foot = {g.index for g in mesh_object.vertex_groups if g.name in names}
        bones = {g.index for g in mesh_object.vertex_groups if g.name in armature.data.bones}
        mask = np.zeros(len(mesh_object.data.vertices), bool)
        for vertex in mesh_object.data.vertices:
            total = sum(e.weight for e in vertex.groups if e.group in bones)
            carried = sum(e.weight for e in vertex.groups if e.group in on_foot)
            mask[vertex.index] = total > 0.0 and carried >= 0.5 * total
        masks.append(mask)
    return masks


def deformed(meshes):
    """World positions (glTF axes) of every deformed vertex of each mesh object, as the depsgraph has them."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    out = []
    for mesh_object in meshes:
        evaluated = mesh_object.evaluated_get(depsgraph)
        mesh = evaluated.to_mesh()
        co = np.empty(len(mesh.vertices) * 3)
        mesh.vertices.foreach_get("co", co)
        evaluated.to_mesh_clear()
        world = np.array(evaluated.matrix_world)
        out.append(gltf_axes(co.reshape(-1, 3) @ world[:3, :3].T + world[:3, 3]))
    return out


def rest_of(case):
    scene, armature, meshes = load(case["rig"], case["fps"], case.get("import", {}))
    if armature is not None:
        armature.data.pose_position = "REST"
    bpy.context.view_layer.update()
    vertices = deformed(meshes)
    if armature is not None and not all(_skinned_by(m, armature) for m in meshes):
        # A mesh riding on a bone is where its node is in the pose the file stores (the judged rigs are
        # saved at bind), as numpy and three.js read it: at REST Blender has it where the bone's own rest
        # puts it (the Quaternius robot's feet 2.4 m under).
        armature.data.pose_position = "POSE"
        bpy.context.view_layer.update()
        vertices = [v if _skinned_by(m, armature) else p for v, p, m in zip(vertices, deformed(meshes), meshes)]
    everything = np.concatenate(vertices)

    def head(name):
        return gltf_axes(node_matrix(scene, armature, name, posed=False)[:3, 3]).tolist()

    feet = {}
    for side, foot in case["feet"].items():
        masks = vertices_under(armature, meshes, foot)
        toe = case["toes"].get(side)
        feet[side] = {"vertices": np.concatenate([v[m] for v, m in zip(vertices, masks)]).tolist(),
                      "heel": head(foot), "toe": head(toe) if toe else None}
    carried = {}  # a point fixed in a bone's frame: where it sits in the bone's rest frame
    for name, item in case.get("carried", {}).items():
        rest = node_matrix(scene, armature, item["bone"], posed=False)
        carried[name] = (np.linalg.inv(rest) @ np.append(TO_GLTF.T @ item["at"], 1.0)).tolist()
    return {"height": float(np.ptp(everything[:, 1])), "feet": feet, "meshes": len(meshes),
            "points": {name: head(name) for name in case["points"]}, "carried": carried}


def fronts_at_rest(case, rest):
    """Per side, the sole's front vertex chosen on the INPUT character at rest (its foot vertices, in the
    order the output's are read: the same meshes), so the same vertex is followed whatever the first
    frame does."""
    forward = case.get("forward", (0.0, 0.0, 1.0))
    return {side: sole_front(np.array(foot["vertices"]), np.array(foot["heel"]), forward, rest["height"])
            for side, foot in rest["feet"].items()}


def output_of(case, rest):
    scene, armature, meshes = load(case["output"], case["fps"], case.get("import", {}))
    masks = {side: vertices_under(armature, meshes, foot) for side, foot in case["feet"].items()}
    lowest = {side: [] for side in masks}
    chosen = fronts_at_rest(case, rest)  # per side: the sole's front vertex
    front = {side: [] for side in masks}
    points = {name: [] for name in list(case["points"]) + list(rest["carried"])}
    hands = {side: vertices_under(armature, meshes, hand) for side, hand in case.get("hands", {}).items()}
    hand_lowest = {side: [] for side in hands}
    for frame in range(case["frames"]):
        scene.frame_set(frame)
        vertices = deformed(meshes)
        for name in case["points"]:
            points[name].append(gltf_axes(node_matrix(scene, armature, name, posed=True)[:3, 3]).tolist())
        for name, local in rest["carried"].items():
            matrix = node_matrix(scene, armature, case["carried"][name]["bone"], posed=True)
            points[name].append(gltf_axes((matrix @ local)[:3]).tolist())
        for side, side_masks in masks.items():
            foot = np.concatenate([v[m] for v, m in zip(vertices, side_masks)])
            lowest[side].append(float(foot[:, 1].min()))
            if len(foot) != len(rest["feet"][side]["vertices"]):
                raise SystemExit("{}: the output's {} foot has other vertices than the rig's".format(case["output"], side))
            front[side].append(foot[chosen[side]].tolist())
        for side, side_masks in hands.items():
            hand_lowest[side].append(float(min(v[m][:, 1].min() for v, m in zip(vertices, side_masks) if m.any())))
    animated = [armature] if armature is not None else list(scene.objects)
    action = next((o.animation_data.action for o in animated if o.animation_data and o.animation_data.action), None)
    return {"lowest": lowest, "front": front, "points": points, "hand_lowest": hand_lowest, "meshes": len(meshes),
            "has_action": action is not None}


def main():
    spec = json.loads(open(sys.argv[1], encoding="utf-8").read())
    results, rests = {}, {}
    for case in spec:
        key = json.dumps([case[k] for k in ("rig", "feet", "toes", "points")] + [case.get("carried")])
        if key not in rests:  # several outputs of one character: its rest is read once
            rests[key] = rest_of(case)
        rest = rests[key]
        results[case["name"]] = {"rest": rest, "output": output_of(case, rest)}
    with open(sys.argv[2], "w", encoding="utf-8") as handle:
        json.dump(results, handle)
    print(json.dumps({"cases": len(results)}))


main()
