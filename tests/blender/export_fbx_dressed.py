"""Blender's FBX exporter as a maker of a DRESSED test character: import a .glb (a skinned body), give the
body UVs and two materials on one mesh (one with a base colour texture, one a plain colour at half
alpha), put a hat parented to the head bone and a static prop at the scene root (each with a material of
its own), and export it as binary FBX three ways:
  embedded/dressed.fbx   the texture embedded (path_mode COPY, embed_textures),
  beside/dressed.fbx     the texture beside it (beside/textures/cloth.png, path_mode RELATIVE),
  outside/fbx/dressed.fbx the texture one folder above it (outside/cloth.png, path_mode RELATIVE).
The glTF importer's bone-shape sphere (collection glTF_not_exported) is removed first: it is no part of the
character.

Usage: python export_fbx_dressed.py IN.glb HEAD_BONE OUT_FOLDER. Prints one JSON object as its last line:
Blender's own view of what it exported, in the glTF frame (Y up, metres: Blender's (x, y, z) is (x, z, -y)):
{"texture": PNG path, "materials": {name: {"colour": [r, g, b, a], "textured": bool}}, "body": {material:
{"corners": [[x, y, z, u, v], ...], "vertices": distinct (vertex, normal to 1e-4, UV) count, "triangles": n}},
"hat": {"name", "bone", "points": [[x, y, z], ...] at rest}, "prop": {"name", "points"}}."""
import json
import os
import shutil
import sys

import bpy
import numpy as np

SOURCE, HEAD_BONE, OUT = sys.argv[1], sys.argv[2], sys.argv[3]


def gltf_frame(point):
    return [point[0], point[2], -point[1]]


def plain_material(name, colour):
    material = bpy.data.materials.new(name)
    material.use_nodes = True
    shader = material.node_tree.nodes["Principled BSDF"]
    shader.inputs["Base Color"].default_value = list(colour[:3]) + [1.0]
    shader.inputs["Alpha"].default_value = colour[3]
    return material


bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.import_scene.gltf(filepath=SOURCE)
helpers = bpy.data.collections.get("glTF_not_exported")
for obj in list(helpers.objects) if helpers else []:
    bpy.data.objects.remove(obj)
armature = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
body = next(o for o in bpy.context.scene.objects if o.type == "MESH" and o.parent == armature)
mesh = body.data

# A 4x4 PNG, saved as a file (what the exporter embeds or points at).
os.makedirs(OUT, exist_ok=True)
texture_path = os.path.join(OUT, "cloth.png")
image = bpy.data.images.new("cloth", 4, 4, alpha=False)
image.pixels = [value for i in range(16) for value in ((i * 16) / 255.0, 1.0 - i / 15.0, 0.25 + (i % 3) / 8.0, 1.0)]
image.filepath_raw = texture_path
image.file_format = "PNG"
image.save()

cloth = bpy.data.materials.new("Cloth")
cloth.use_nodes = True
nodes = cloth.node_tree.nodes
texture_node = nodes.new("ShaderNodeTexImage")
texture_node.image = image
cloth.node_tree.links.new(texture_node.outputs["Color"], nodes["Principled BSDF"].inputs["Base Color"])
skin = plain_material("Skin", (0.8, 0.45, 0.3, 0.5))
mesh.materials.clear()  # the character's own materials (if any) give way to these two
mesh.materials.append(cloth)
mesh.materials.append(skin)
# Polygons on the character's left (+x in Blender) wear cloth, the others skin.
for polygon in mesh.polygons:
    polygon.material_index = 0 if polygon.center.x > 0.0 else 1

# UVs made up from the vertex place, shifted on every fourth polygon: corners of one vertex share a UV except
# at those seams.
uv_layer = mesh.uv_layers.new(name="UVMap")
for polygon in mesh.polygons:
    for loop in polygon.loop_indices:
        co = mesh.vertices[mesh.loops[loop].vertex_index].co
        uv_layer.data[loop].uv = (0.5 + 0.6 * co.x + (0.05 if polygon.index % 4 == 0 else 0.0), 0.2 + 0.4 * co.z)

# A hat on the head bone, and a static prop at the scene root.
head = armature.data.bones[HEAD_BONE]
head_top = armature.matrix_world @ head.tail_local
bpy.ops.mesh.primitive_cube_add(size=0.12, location=(head_top.x, head_top.y + 0.02, head_top.z + 0.05))
hat = bpy.context.active_object
hat.name = "Hat"
hat.rotation_euler = (0.2, 0.1, 0.4)
hat.data.materials.append(plain_material("Felt", (0.1, 0.2, 0.9, 1.0)))
bpy.context.view_layer.update()
world = hat.matrix_world.copy()
hat.parent = armature
hat.parent_type = "BONE"
hat.parent_bone = HEAD_BONE
bpy.context.view_layer.update()
hat.matrix_world = world
bpy.ops.mesh.primitive_cylinder_add(radius=0.1, depth=0.4, location=(0.6, 0.1, 0.2))
prop = bpy.context.active_object
prop.name = "Crate"
prop.data.materials.append(plain_material("Wood", (0.5, 0.3, 0.1, 1.0)))
bpy.context.view_layer.update()

exports = {"embedded": (os.path.join(OUT, "embedded", "dressed.fbx"), None, "COPY", True),
           "beside": (os.path.join(OUT, "beside", "dressed.fbx"), os.path.join(OUT, "beside", "textures", "cloth.png"),
                      "RELATIVE", False),
           "outside": (os.path.join(OUT, "outside", "fbx", "dressed.fbx"), os.path.join(OUT, "outside", "cloth.png"),
                       "RELATIVE", False)}
for path, image_at, mode, embed in exports.values():
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if image_at:
        os.makedirs(os.path.dirname(image_at), exist_ok=True)
        shutil.copyfile(texture_path, image_at)
        image.filepath = image_at
    else:
        image.filepath = texture_path
    bpy.ops.export_scene.fbx(filepath=path, add_leaf_bones=False, bake_anim=False, path_mode=mode,
                             embed_textures=embed)

# Blender's own view: every corner's place (at rest) and UV per material, distinct vertices (vertex, normal to
# 1e-4: float noise between one vertex's corner normals is no crease, UV as float32, as glTF keeps it), triangles.
normals = np.array([tuple(n.vector) for n in mesh.corner_normals], dtype=np.float32)
report_body = {}
for number, material in enumerate(mesh.materials):
    corners, distinct, triangles = [], set(), 0
    for polygon in mesh.polygons:
        if polygon.material_index != number:
            continue
        triangles += len(polygon.loop_indices) - 2
        for loop in polygon.loop_indices:
            vertex = mesh.loops[loop].vertex_index
            uv = np.array(tuple(uv_layer.data[loop].uv), dtype=np.float32)
            normal = np.round(normals[loop].astype(np.float64) / 1e-4).astype(np.int64)
            distinct.add((vertex,) + tuple(normal.tolist()) + tuple(uv.tolist()))
            corners.append(gltf_frame(body.matrix_world @ mesh.vertices[vertex].co) + [float(uv[0]), float(uv[1])])
    report_body[material.name] = {"corners": corners, "vertices": len(distinct), "triangles": triangles}


def colour_of(material):
    shader = material.node_tree.nodes["Principled BSDF"]
    base = shader.inputs["Base Color"]
    return {"colour": list(base.default_value[:3]) + [shader.inputs["Alpha"].default_value], "textured": base.is_linked}


materials = {m.name: colour_of(m) for m in (cloth, skin, hat.data.materials[0], prop.data.materials[0])}
print(json.dumps({
    "texture": texture_path,
    "materials": materials,
    "body": report_body,
    "hat": {"name": hat.name, "bone": HEAD_BONE, "points": [gltf_frame(hat.matrix_world @ v.co) for v in hat.data.vertices]},
    "prop": {"name": prop.name, "points": [gltf_frame(prop.matrix_world @ v.co) for v in prop.data.vertices]},
}))
