"""FBX characters come in whole: UVs, normals, materials (one glTF primitive per material a mesh uses),
base colour textures (embedded, or a file beside the FBX), and meshes without a skin (a hat on the head
bone, a prop at the scene root), judged in the retarget's .glb output by code that shares nothing with our
reader: Blender's own view of the character it exported (tests/blender/export_fbx_dressed.py), numpy FK
of the output (gltf_judge), the Khronos validator, and, for the real Quaternius FBX, its .glb twin
(Blender's conversion) and the file's own arrays counted with numpy.
"""
from __future__ import annotations

import hashlib
from array import array
from pathlib import Path
from typing import Dict

import numpy as np
import pytest

from conftest import CLIPS, RIGS, run_blender, run_cli, validate_gltf

MIXAMO_GLB = RIGS / "mpfb2" / "mpfb2_mixamo.glb"
QUATERNIUS_FBX = RIGS / "quaternius" / "quaternius_female_dress.fbx"
QUATERNIUS_GLB = RIGS / "quaternius" / "quaternius_female_dress.glb"
CLIP = CLIPS / "soma_01_single_text_prompt"
PLACE_TOLERANCE_M = 1e-4  # float32 metres through the FBX's centimetres and bind matrices
UV_TOLERANCE = 1e-6  # float32 UVs, one flip (1 - v)


DRESSED = {"mixamo": (MIXAMO_GLB, "mixamorig:Head"), "quaternius": (QUATERNIUS_GLB, "Head")}


@pytest.fixture(scope="module", params=sorted(DRESSED))
def dressed(request, tmp_path_factory) -> Dict:
    """A character dressed and exported by Blender (three ways: texture embedded, beside, outside the FBX's
    folder), with Blender's report of what it exported: the MPFB2 Mixamo rig (1.7 m, boxes), and the
    Quaternius character's .glb (4.6 m, a skirt; her own five materials give way to the two)."""
    source, head = DRESSED[request.param]
    root = tmp_path_factory.mktemp("fbx_dressed_" + request.param)
    report = run_blender("export_fbx_dressed.py", source, head, root)
    report["root"] = root
    return report


def _retarget(target: Path, output: Path):
    before = hashlib.sha256(target.read_bytes()).hexdigest()
    result = run_cli("retarget", CLIP, "--target", target, "-o", output)
    assert result.returncode == 0, result.stderr[-3000:]
    assert hashlib.sha256(target.read_bytes()).hexdigest() == before  # the input is never modified
    return result


def _image_bytes(glb, texture_index: int) -> bytes:
    image = glb.gltf.images[glb.gltf.textures[texture_index].source]
    view = glb.gltf.bufferViews[image.bufferView]
    return glb.blob[view.byteOffset or 0:(view.byteOffset or 0) + view.byteLength]


def _nearest(points: np.ndarray, others: np.ndarray) -> float:
    """The farthest any of `points` lies from its nearest of `others` (both (n, k))."""
    worst = 0.0
    for start in range(0, len(points), 512):
        chunk = points[start:start + 512]
        distances = np.linalg.norm(chunk[:, None, :] - others[None, :, :], axis=-1)
        worst = max(worst, float(distances.min(axis=1).max()))
    return worst


def _same_set(points: np.ndarray, others: np.ndarray) -> float:
    return max(_nearest(points, others), _nearest(others, points))


def _world_points(glb, world: np.ndarray, node: int) -> np.ndarray:
    """(frames, vertices, 3): the vertices of every primitive of `node`'s mesh placed by its world matrix."""
    mesh = glb.gltf.meshes[glb.gltf.nodes[node].mesh]
    points = np.concatenate([glb.accessor(p.attributes.POSITION) for p in mesh.primitives])
    return np.einsum("fij,vj->fvi", world[:, node, :3, :3], points) + world[:, node, None, :3, 3]


def test_a_dressed_fbx_character_keeps_materials_uvs_texture_hat_and_prop(dressed, tmp_path):
    """Retargeted from the FBX with the texture embedded: the .glb has Blender's materials (colour, alpha,
    blend), the embedded PNG byte for byte, the body split by material with Blender's UVs at Blender's
    vertex places and Blender's vertex and triangle counts, a hat that moves with the head bone (its
    world place at every frame = the head's world x the head's bind inverse x the hat's place at rest)
    and a prop where Blender has it; the Khronos validator finds no error."""
    from gltf_judge import Glb

    output = tmp_path / "dressed.glb"
    _retarget(dressed["root"] / "embedded" / "dressed.fbx", output)
    issues = validate_gltf(output)[output.name]
    assert issues["numErrors"] == 0, issues["messages"][:5]
    glb = Glb(output)
    materials = {m.name: m for m in glb.gltf.materials}
    for name, expected in dressed["materials"].items():
        pbr = materials[name].pbrMetallicRoughness
        colour = [1.0, 1.0, 1.0, expected["colour"][3]] if expected["textured"] else expected["colour"]
        assert np.allclose(pbr.baseColorFactor, colour, atol=1e-6), (name, pbr.baseColorFactor, colour)
        assert (materials[name].alphaMode == "BLEND") == (expected["colour"][3] < 1.0), name
        assert (pbr.baseColorTexture is not None) == expected["textured"], name
        if expected["textured"]:
            assert _image_bytes(glb, pbr.baseColorTexture.index) == Path(dressed["texture"]).read_bytes()

    body_node = next(i for i, n in enumerate(glb.gltf.nodes) if n.mesh is not None and n.skin is not None)
    primitives = glb.gltf.meshes[glb.gltf.nodes[body_node].mesh].primitives
    assert sorted(glb.gltf.materials[p.material].name for p in primitives) == sorted(dressed["body"])
    for primitive in primitives:
        expected = dressed["body"][glb.gltf.materials[primitive.material].name]
        points = glb.accessor(primitive.attributes.POSITION)
        uvs = glb.accessor(primitive.attributes.TEXCOORD_0)
        assert len(points) == expected["vertices"]
        assert len(glb.accessor(primitive.indices)) == 3 * expected["triangles"]
        normals = glb.accessor(primitive.attributes.NORMAL)
        assert np.allclose(np.linalg.norm(normals, axis=-1), 1.0, atol=1e-5)
        corners = np.array(expected["corners"])
        blender = np.concatenate([corners[:, :3] / PLACE_TOLERANCE_M, corners[:, 3:4] / UV_TOLERANCE,
                                  (1.0 - corners[:, 4:5]) / UV_TOLERANCE], axis=1)  # glTF's V runs down
        ours = np.concatenate([points / PLACE_TOLERANCE_M, uvs / UV_TOLERANCE], axis=1)
        assert _same_set(blender, ours) < 1.0  # every corner's place and UV, each within its tolerance

    world = glb.animated_world_matrices()
    names = [n.name for n in glb.gltf.nodes]
    hat, head = names.index(dressed["hat"]["name"]), names.index(dressed["hat"]["bone"])
    inverse_bind = glb.accessor(glb.gltf.skins[glb.gltf.nodes[body_node].skin].inverseBindMatrices)[
        glb.joint_nodes.index(head)]
    rest = np.array(dressed["hat"]["points"])
    carried = np.einsum("fij,vj->fvi", (world[:, head] @ inverse_bind)[:, :3, :3], rest) + \
        (world[:, head] @ inverse_bind)[:, None, :3, 3]
    placed = _world_points(glb, world, hat)
    middle = len(world) // 2
    for frame in (0, middle, len(world) - 1):
        assert _same_set(placed[frame], carried[frame]) < PLACE_TOLERANCE_M, frame
    assert np.linalg.norm(carried[middle] - rest, axis=-1).min() > 0.1  # the head did move: the test means something
    prop = names.index(dressed["prop"]["name"])
    for frame in (0, middle):
        assert _same_set(_world_points(glb, world, prop)[frame], np.array(dressed["prop"]["points"])) < PLACE_TOLERANCE_M


def test_a_texture_beside_the_fbx_is_read_and_one_outside_its_folder_is_left_out(dressed, tmp_path):
    from gltf_judge import Glb

    beside, outside = tmp_path / "beside.glb", tmp_path / "outside.glb"
    result = _retarget(dressed["root"] / "beside" / "dressed.fbx", beside)
    assert "warning" not in result.stderr
    glb = Glb(beside)
    cloth = next(m for m in glb.gltf.materials if m.name == "Cloth")
    assert _image_bytes(glb, cloth.pbrMetallicRoughness.baseColorTexture.index) == Path(dressed["texture"]).read_bytes()

    target = dressed["root"] / "outside" / "fbx" / "dressed.fbx"
    result = _retarget(target, outside)
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: {}: texture 'cloth' (../cloth.png) is outside the FBX file's folder; left out".format(
        target)], result.stderr
    glb = Glb(outside)
    assert not glb.gltf.images and not glb.gltf.textures
    assert all(m.pbrMetallicRoughness.baseColorTexture is None for m in glb.gltf.materials)
    issues = validate_gltf(outside)[outside.name]
    assert issues["numErrors"] == 0, issues["messages"][:5]


def test_the_report_s_read_back_has_the_full_reader_s_vertices_without_surfaces(dressed, tmp_path):
    """`retarget -o walk.fbx` measures its report on the file read back without normals, UVs and materials
    (fbx.read_motion_document(surfaces=False): reading speed). Read so, our .fbx of the dressed character
    (UVs, two materials, an embedded texture, a hat and a prop) has the full read's nodes, skins, animation
    and, primitive for primitive, the same vertices (places, joints, weights) and triangles: a normal or UV
    still tells two corners apart; only the surfaces are left out."""
    from kimodo_rig.formats import fbx

    output = tmp_path / "dressed.fbx"
    _retarget(dressed["root"] / "embedded" / "dressed.fbx", output)
    full, bare = fbx.read_motion_document(output, 30.0), fbx.read_motion_document(output, 30.0, surfaces=False)
    assert full.gltf["materials"] and full.gltf.get("textures") and "materials" not in bare.gltf
    assert "textures" not in bare.gltf and "images" not in bare.gltf
    assert full.gltf["nodes"] == bare.gltf["nodes"]
    for skin, same in zip(full.gltf["skins"], bare.gltf["skins"]):
        assert skin["joints"] == same["joints"]
        assert full.accessor(skin["inverseBindMatrices"]) == bare.accessor(same["inverseBindMatrices"])
    kept, left = full.gltf["animations"][0], bare.gltf["animations"][0]
    assert kept["channels"] == left["channels"]
    assert [full.accessor(s["output"]) for s in kept["samplers"]] == [bare.accessor(s["output"]) for s in left["samplers"]]
    surfaced = 0
    assert len(full.gltf["meshes"]) == len(bare.gltf["meshes"])
    for mesh, same in zip(full.gltf["meshes"], bare.gltf["meshes"]):
        assert len(mesh["primitives"]) == len(same["primitives"])
        for primitive, bare_primitive in zip(mesh["primitives"], same["primitives"]):
            attributes, bare_attributes = primitive["attributes"], bare_primitive["attributes"]
            assert set(bare_attributes) == set(attributes) - {"NORMAL", "TEXCOORD_0"}
            assert "material" not in bare_primitive
            surfaced += "NORMAL" in attributes and "TEXCOORD_0" in attributes and "material" in primitive
            for key in bare_attributes:
                assert full.accessor(attributes[key]) == bare.accessor(bare_attributes[key]), key
            assert full.accessor(primitive["indices"]) == bare.accessor(bare_primitive["indices"])
    assert surfaced >= 2  # the body's two materials, with normals and UVs, in the full read


def _fbx_corner_counts(path: Path) -> Dict[int, tuple]:
    """Per material slot: (distinct (control point, normal) pairs, triangles), counted with numpy from the
    file's own arrays (its normals are by polygon corner, Direct; one material slot a polygon); normals
    to 1e-4 (float32 noise between one vertex's corner normals is no crease)."""
    from kimodo_rig.formats import fbx_binary

    nodes = fbx_binary.decode(path.read_bytes(), path.name)
    objects = next(n for n in nodes if n.name == "Objects")
    geometry = next(n for n in objects.children if n.name == "Geometry")
    corners = np.array(geometry.find("PolygonVertexIndex").properties[0])
    element = geometry.find("LayerElementNormal")
    assert element.find("MappingInformationType").properties[0] == "ByPolygonVertex"
    assert element.find("ReferenceInformationType").properties[0] == "Direct"
    normals = np.array(element.find("Normals").properties[0], dtype=np.float32).reshape(-1, 3)
    normals = np.round(normals.astype(np.float64) / 1e-4)
    slots = np.array(geometry.find("LayerElementMaterial").find("Materials").properties[0])
    ends = np.flatnonzero(corners < 0)
    polygon_of = np.searchsorted(ends, np.arange(len(corners)))
    sizes = np.diff(np.concatenate([[-1], ends]))
    points = np.where(corners < 0, -1 - corners, corners)
    counts = {}
    for slot in np.unique(slots):
        mine = slots[polygon_of] == slot
        keys = np.concatenate([points[mine, None].astype(np.float64), normals[mine]], 1)
        counts[int(slot)] = (len(np.unique(keys, axis=0)), int((sizes[slots == slot] - 2).sum()))
    return counts


def test_the_quaternius_fbx_comes_out_in_the_colours_of_its_glb_twin(tmp_path):
    """The real Quaternius FBX (Blender 2.79's exporter: five Phong materials on one mesh, normals per
    corner, no UVs): retargeted, each primitive has its twin's material name and base colour (the twin is
    Blender 5.0's conversion of the same file), its twin's triangle count, and as many vertices as the
    file's distinct (control point, normal) corners of that material. Alpha: the file states
    TransparencyFactor 0 (its template's) with TransparentColor white, opaque by the FBX SDK's rule
    (transparency = colour x factor); Blender's importer (Unity's rule, ufbx likewise) made the twin's
    alpha 0 in MASK mode, which draws nothing; ours is 1, opaque."""
    from gltf_judge import Glb

    output = tmp_path / "quaternius.glb"
    _retarget(QUATERNIUS_FBX, output)
    ours, twin = Glb(output), Glb(QUATERNIUS_GLB)
    counts = _fbx_corner_counts(QUATERNIUS_FBX)

    def primitives(glb):
        node = next(n for n in glb.gltf.nodes if n.mesh is not None and n.skin is not None)
        return glb.gltf.meshes[node.mesh].primitives

    mine, theirs = primitives(ours), primitives(twin)
    assert len(mine) == len(theirs) == len(counts) == 5
    for slot, (a, b) in enumerate(zip(mine, theirs)):
        material, expected = ours.gltf.materials[a.material], twin.gltf.materials[b.material]
        assert material.name == expected.name
        assert np.allclose(material.pbrMetallicRoughness.baseColorFactor[:3],
                           expected.pbrMetallicRoughness.baseColorFactor[:3], atol=1e-7)
        assert material.pbrMetallicRoughness.baseColorFactor[3] == 1.0 and material.alphaMode in (None, "OPAQUE")
        assert len(ours.accessor(a.indices)) == len(twin.accessor(b.indices)) == 3 * counts[slot][1]
        assert len(ours.accessor(a.attributes.POSITION)) == counts[slot][0]
    issues = validate_gltf(output)[output.name]
    assert issues["numErrors"] == 0, issues["messages"][:5]


# --- bad layers and textures: one line naming the file, or a texture left out with one warning -------------

def _geometry_hook(*elements, material_texture=None, material_rows=(("DiffuseColor", "Color", 0.2, 0.4, 0.6),),
                   link="DiffuseColor"):
    """A build_fbx hook: the Geometry given layer `elements` ((name, mapping, reference, {child: array})),
    and with `material_texture` ({Texture child: value}, Video Content bytes) a Material on the mesh (its
    Properties70 `material_rows`: name, type, values) whose `link` property a Texture with a Video feeds."""
    from kimodo_rig.formats.fbx_binary import Long, Node

    def hook(nodes):
        objects = next(node for node in nodes if node.name == "Objects")
        geometry = next(node for node in objects.children if node.name == "Geometry")
        for name, mapping, reference, arrays in elements:
            element = geometry.add(name, 0)
            element.add("MappingInformationType", mapping)
            element.add("ReferenceInformationType", reference)
            for key, values in arrays.items():
                element.add(key, values)
        if material_texture is not None:
            fields, content = material_texture
            connections = next(node for node in nodes if node.name == "Connections")
            mesh = next(node for node in objects.children if node.name == "Model" and node.properties[2] == "Mesh")
            material = objects.add("Material", Long(90001), "Cloth\x00\x01Material", "")
            rows = material.add("Properties70")
            for name, kind, *values in material_rows:
                rows.add("P", name, kind, "", "A", *values)
            texture = objects.add("Texture", Long(90002), "cloth\x00\x01Texture", "")
            video = objects.add("Video", Long(90003), "cloth\x00\x01Video", "Clip")
            for key, value in fields.items():
                texture.add(key, value)
            video.add("Content", content)
            connections.add("C", "OO", Long(90001), mesh.properties[0])
            connections.add("C", "OP", Long(90002), Long(90001), link)
            connections.add("C", "OO", Long(90003), Long(90002))
    return hook


BAD_LAYERS = {  # the one quad of build_fbx's mesh: 4 control points, 4 corners, 1 polygon
    "uv_index_past_its_values": (("LayerElementUV", "ByPolygonVertex", "IndexToDirect",
                                  {"UV": array("d", [0.0, 0.0, 1.0, 1.0]), "UVIndex": array("i", [0, 1, 5, 1])}),
                                 "LayerElementUV points past its 2 values"),
    "uv_indexes_too_few": (("LayerElementUV", "ByPolygonVertex", "IndexToDirect",
                            {"UV": array("d", [0.0, 0.0]), "UVIndex": array("i", [0])}), "holds 1 indexes for 4 items"),
    "uv_not_finite": (("LayerElementUV", "ByVertice", "Direct", {"UV": array("d", [float("nan")] * 8)}), "not finite"),
    "normals_by_edge": (("LayerElementNormal", "ByEdge", "Direct", {"Normals": array("d", [0.0, 1.0, 0.0] * 4)}),
                        "maps values 'ByEdge'"),
    "normals_too_few": (("LayerElementNormal", "ByPolygonVertex", "Direct", {"Normals": array("d", [0.0, 1.0, 0.0])}),
                        "LayerElementNormal points past its 1 values"),
    "material_slots_too_few": (("LayerElementMaterial", "ByPolygon", "IndexToDirect", {"Materials": array("i", [])}),
                               "holds 0 slots for 1 polygons"),
}


@pytest.mark.parametrize("kind", sorted(BAD_LAYERS))
def test_a_broken_layer_is_refused_in_one_line(tmp_path, kind):
    from test_fbx_read import assert_refused, build_fbx

    element, words = BAD_LAYERS[kind]
    target = build_fbx(tmp_path / (kind + ".fbx"), hook=_geometry_hook(element))
    before = target.read_bytes()
    assert_refused(target, words)
    assert target.read_bytes() == before


PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415408d763f8cf"
                    "c0000003010100c9fe92ef0000000049454e44ae426082")  # a 1x1 PNG
BAD_TEXTURES = {  # Texture fields, Video Content -> the warning's end
    "absolute": ({"RelativeFilename": "/etc/passwd"}, b"", " (/etc/passwd) is not a file in the FBX file's folder"),
    "drive": ({"RelativeFilename": "C:\\Users\\a\\cloth.png"}, b"", " (C:\\Users\\a\\cloth.png) is not a file in the FBX file's folder"),
    "above": ({"RelativeFilename": "..\\..\\cloth.png"}, b"", " (..\\..\\cloth.png) is outside the FBX file's folder"),
    "missing": ({"RelativeFilename": "textures/cloth.png"}, b"", " (textures/cloth.png) is not there"),
    "not_an_image": ({"RelativeFilename": "cloth.gif"}, b"GIF89a" + bytes(40), " (cloth.gif) is not a PNG or JPEG image"),
    "named_nothing": ({}, b"", " embeds no image and names no file"),
}


@pytest.mark.parametrize("kind", sorted(BAD_TEXTURES))
def test_a_texture_that_cannot_be_carried_is_left_out_with_one_warning(tmp_path, kind, caplog):
    """Paths that leave the FBX's folder (absolute, a drive, `..`), files not there, bytes that are no PNG
    or JPEG: the character reads with the material's own colour and no image, and one warning line names
    the file; a PNG embedded in the same place is carried byte for byte (and replaces the colour)."""
    from kimodo_rig.formats import fbx
    from test_fbx_read import build_fbx

    fields, content, words = BAD_TEXTURES[kind]
    target = build_fbx(tmp_path / "character.fbx", hook=_geometry_hook(material_texture=(fields, content)))
    (tmp_path / "cloth.gif").write_bytes(content)
    with caplog.at_level("WARNING", logger="kimodo_rig"):
        gltf = fbx.read_document(target).gltf
    assert [r.getMessage() for r in caplog.records] == ["{}: texture 'cloth'{}; left out".format(target, words)]
    assert "images" not in gltf and "baseColorTexture" not in gltf["materials"][0]["pbrMetallicRoughness"]
    assert np.allclose(gltf["materials"][0]["pbrMetallicRoughness"]["baseColorFactor"], [0.2, 0.4, 0.6, 1.0])

    caplog.clear()
    embedded = build_fbx(tmp_path / "embedded.fbx", hook=_geometry_hook(material_texture=(fields, PNG)))
    document = fbx.read_document(embedded)
    assert not caplog.records
    view = document.gltf["bufferViews"][document.gltf["images"][0]["bufferView"]]
    assert bytes(document.binary[view["byteOffset"]:view["byteOffset"] + view["byteLength"]]) == PNG
    assert document.gltf["images"][0]["mimeType"] == "image/png"
    assert document.gltf["materials"][0]["pbrMetallicRoughness"]["baseColorFactor"] == [1.0, 1.0, 1.0, 1.0]


def test_a_material_slot_past_the_model_s_materials_draws_with_no_material(tmp_path):
    """A polygon's slot past the Model's one Material (99) or below (-5): drawn with glTF's default
    material, in one primitive however many such slots the file claims; slot 0 takes the Material."""
    from kimodo_rig.formats import fbx
    from test_fbx_read import build_fbx

    for slots, material in (([99], None), ([-5], None), ([0], 0)):
        element = ("LayerElementMaterial", "ByPolygon", "IndexToDirect", {"Materials": array("i", slots)})
        target = build_fbx(tmp_path / "slots.fbx", hook=_geometry_hook(element, material_texture=({}, PNG)))
        primitives = fbx.read_document(target).gltf["meshes"][0]["primitives"]
        assert len(primitives) == 1 and primitives[0].get("material") == material, (slots, primitives)


MATERIALS = {  # Properties70 rows -> (baseColorFactor, alpha mode)
    "diffuse": ((("DiffuseColor", "Color", 0.2, 0.4, 0.6),), [0.2, 0.4, 0.6, 1.0], None),
    "maya_base_colour_first": ((("DiffuseColor", "Color", 0.2, 0.4, 0.6), ("Maya|baseColor", "Color", 0.9, 0.1, 0.1)),
                               [0.9, 0.1, 0.1, 1.0], None),
    "opacity_stated": ((("DiffuseColor", "Color", 0.2, 0.4, 0.6), ("Opacity", "Number", 0.3),
                        ("TransparencyFactor", "Number", 0.0)), [0.2, 0.4, 0.6, 0.3], "BLEND"),
    # the FBX SDK's transparency: TransparentColor x TransparencyFactor
    "maya_opaque": ((("DiffuseColor", "Color", 0.2, 0.4, 0.6), ("TransparentColor", "Color", 0.0, 0.0, 0.0),
                     ("TransparencyFactor", "Number", 1.0)), [0.2, 0.4, 0.6, 1.0], None),
    "quaternius_opaque": ((("DiffuseColor", "Color", 0.2, 0.4, 0.6), ("TransparentColor", "Color", 1.0, 1.0, 1.0)),
                          [0.2, 0.4, 0.6, 1.0], None),
    "grey_transparency": ((("DiffuseColor", "Color", 0.2, 0.4, 0.6), ("TransparentColor", "Color", 0.5, 0.5, 0.5),
                           ("TransparencyFactor", "Number", 0.5)), [0.2, 0.4, 0.6, 0.75], "BLEND"),
    "factor_alone": ((("DiffuseColor", "Color", 0.2, 0.4, 0.6), ("TransparencyFactor", "Number", 0.25)),
                     [0.2, 0.4, 0.6, 0.75], "BLEND"),
    "colour_out_of_range": ((("DiffuseColor", "Color", 1.5, -0.5, 0.6),), [1.0, 0.0, 0.6, 1.0], None),
    "colour_of_the_wrong_kind": ((("DiffuseColor", "Color", "red", 0.4, 0.6),), [1.0, 1.0, 1.0, 1.0], None),
}


@pytest.mark.parametrize("kind", sorted(MATERIALS))
def test_a_material_s_colour_and_alpha_are_read_as_the_fbx_sdk_states_them(tmp_path, kind):
    """Base colour: Maya|baseColor, else DiffuseColor, kept within glTF's 0-1 (white when neither is a
    colour); alpha: Opacity where stated, else 1 - TransparencyFactor x TransparentColor's mean (white where
    no row states it), BLEND below 1 (Quaternius's TransparentColor white with no factor is opaque)."""
    from kimodo_rig.formats import fbx
    from test_fbx_read import build_fbx

    rows, colour, mode = MATERIALS[kind]
    target = build_fbx(tmp_path / "m.fbx", hook=_geometry_hook(material_texture=({}, b""), material_rows=rows))
    material = fbx.read_document(target).gltf["materials"][0]
    assert np.allclose(material["pbrMetallicRoughness"]["baseColorFactor"], colour), material
    assert material.get("alphaMode") == mode


@pytest.mark.parametrize("link", ["DiffuseColor", "Maya|baseColor", "3dsMax|maps|texmap_diffuse", "SpecularColor"])
def test_a_texture_on_the_base_colour_is_read_and_one_on_another_property_is_not(tmp_path, link):
    from kimodo_rig.formats import fbx
    from test_fbx_read import build_fbx

    target = build_fbx(tmp_path / "t.fbx", hook=_geometry_hook(material_texture=({}, PNG), link=link))
    gltf = fbx.read_document(target).gltf
    pbr = gltf["materials"][0]["pbrMetallicRoughness"]
    if link == "SpecularColor":
        assert "baseColorTexture" not in pbr and "images" not in gltf and pbr["baseColorFactor"] == [0.2, 0.4, 0.6, 1.0]
    else:
        assert pbr["baseColorTexture"] == {"index": 0} and gltf["images"][0]["mimeType"] == "image/png"
