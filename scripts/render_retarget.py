"""Render a retargeted clip to a picture for the README, several frames side by side, with Cycles on the
CPU (no GPU needed). Runs in Blender's Python (the `bpy` module, e.g. the test venv):

    python scripts/render_retarget.py [CLIP] [TARGET.glb] [OUT.png]
    python scripts/render_retarget.py --extension [CLIP] [CHARACTER.glb] [OUT.png]

The first form retargets with kimodo_rig (standard library only, so Blender's Python imports it from this
checkout) and imports the output .glb with Blender's glTF importer. With --extension the extension zip is
built, installed as Blender installs it (into a temporary user folder), the character is imported with
Blender's glTF importer and File > Import > Kimodo motion (bpy.ops.kimodo.import_motion) puts the clip on
it, as tests/test_blender_extension.py does.
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

EXTENSION = "--extension" in sys.argv[1:]
ARGS = [a for a in sys.argv[1:] if a != "--extension"]
if EXTENSION:  # Blender reads these when bpy is imported: keep the user's own Blender folders untouched
    USER = tempfile.mkdtemp(prefix="kimodo_render_user_")
    for variable in ("BLENDER_USER_RESOURCES", "BLENDER_USER_CONFIG", "BLENDER_USER_SCRIPTS", "BLENDER_USER_EXTENSIONS"):
        os.environ[variable] = os.path.join(USER, variable.lower())

import bpy  # noqa: E402
import numpy as np  # noqa: E402
from mathutils import Vector  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kimodo_rig.retarget import character as targets, output as retarget_output  # noqa: E402
from kimodo_rig.formats import raw  # noqa: E402
from kimodo_rig.retarget.solve import retarget  # noqa: E402

RIGS = ROOT / "tests" / "data" / "rigs" / "quaternius"
CLIPS = ROOT / "tests" / "data" / "clips"
if EXTENSION:
    CLIP = Path(ARGS[0]) if len(ARGS) > 0 else CLIPS / "soma_02_multi_text_prompt"
    TARGET = ARGS[1] if len(ARGS) > 1 else str(RIGS / "quaternius_female_dress.glb")
    OUTPUT = Path(ARGS[2]) if len(ARGS) > 2 else ROOT / "docs" / "blender_extension_female.png"
    FRAMES = (0, 50, 100, 150, 200)
    SIZE = (240, 320)
else:
    CLIP = Path(ARGS[0]) if len(ARGS) > 0 else CLIPS / "soma_01_single_text_prompt"
    TARGET = ARGS[1] if len(ARGS) > 1 else str(RIGS / "RobotExpressive.glb")
    OUTPUT = Path(ARGS[2]) if len(ARGS) > 2 else ROOT / "docs" / "retarget_robot.png"
    FRAMES = (0, 30, 55, 75, 95, 120)
    SIZE = (360, 480)


def retargeted_by_the_command_line(work: Path):
    """The clip retargeted by kimodo_rig into a .glb, imported: (armature, first frame, hips bone)."""
    motion = raw.read(CLIP)
    target = targets.load_target(TARGET)
    retargeted, info = retarget(motion, target.skeleton)
    glb = work / "retargeted.glb"
    retarget_output.write(retargeted, info, target, glb)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.context.scene.render.fps = int(round(motion.fps))
    bpy.ops.import_scene.gltf(filepath=str(glb))
    armature = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
    start = int(round(armature.animation_data.action.frame_range[0]))
    return armature, start, info.target_map.joint_name("hips")


def imported_by_the_extension(work: Path):
    """The character imported, the extension installed from its zip and its operator run on it."""
    package = work / "kimodo_motion.zip"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "build_blender_extension.py"), str(package)], check=True)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.extensions.package_install_files(filepath=str(package), repo="user_default", enable_on_install=True)
    bpy.ops.import_scene.gltf(filepath=TARGET)
    armature = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
    for obj in bpy.context.scene.objects:
        obj.select_set(obj is armature)
    bpy.context.view_layer.objects.active = armature
    bpy.ops.kimodo.import_motion(filepath=str(CLIP))
    print(armature.data["kimodo_report"])
    hips = json.loads(armature.data["kimodo_bone_map"])["hips"]  # the map the import stored
    return armature, bpy.context.scene.frame_start, hips


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="kimodo_render_"))
    armature, start, hips_name = (imported_by_the_extension if EXTENSION else retargeted_by_the_command_line)(work)
    scene = bpy.context.scene
    hips = armature.pose.bones[hips_name]

    bpy.ops.mesh.primitive_plane_add(size=200.0)
    floor = bpy.context.active_object
    floor_material = bpy.data.materials.new("floor")
    floor_material.diffuse_color = (0.8, 0.8, 0.82, 1.0)
    floor.data.materials.append(floor_material)
    bpy.ops.object.light_add(type="SUN", rotation=(0.7, 0.2, 0.6))
    bpy.context.active_object.data.energy = 4.0
    world = bpy.data.worlds.new("sky")
    world.color = (0.55, 0.6, 0.7)
    background = world.node_tree.nodes.get("Background") if world.node_tree else None
    if background is not None:  # Blender 5 gives new worlds nodes, which Cycles uses instead of .color
        background.inputs["Color"].default_value = (0.55, 0.6, 0.7, 1.0)
    for material in bpy.data.materials:
        # The Quaternius female's materials carry alpha 0 from their FBX conversion (invisible in Cycles).
        principled = next((n for n in material.node_tree.nodes if n.type == "BSDF_PRINCIPLED"), None) if material.node_tree else None
        if principled is not None and not principled.inputs["Alpha"].is_linked:
            principled.inputs["Alpha"].default_value = 1.0
    scene.world = world
    bpy.ops.object.camera_add()
    camera = bpy.context.active_object
    camera.data.lens = 40
    scene.camera = camera

    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = 24
    scene.render.resolution_x, scene.render.resolution_y = SIZE
    scene.render.image_settings.file_format = "PNG"
    scene.frame_set(start)
    scene.view_layers[0].update()
    corners = [o.matrix_world @ Vector(c) for o in scene.objects
               if o.type == "MESH" and o is not floor and o.visible_get() for c in o.bound_box]
    height = max(c.z for c in corners) - min(c.z for c in corners)
    tiles = []
    for index, frame in enumerate(FRAMES):
        scene.frame_set(start + frame)
        centre = armature.matrix_world @ hips.head
        # Three-quarter view from the character's front-left, following the hips.
        camera.location = (centre.x + 0.9 * height, centre.y - 1.6 * height, 0.55 * height)
        direction = (centre.x - camera.location[0], centre.y - camera.location[1], 0.4 * height - camera.location[2])
        camera.rotation_euler = Vector(direction).to_track_quat("-Z", "Y").to_euler()
        scene.render.filepath = str(work / "tile_{}.png".format(index))
        bpy.ops.render.render(write_still=True)
        image = bpy.data.images.load(scene.render.filepath)
        pixels = np.array(image.pixels[:], dtype=np.float32).reshape(SIZE[1], SIZE[0], 4)
        tiles.append(pixels)
    strip = np.concatenate(tiles, axis=1)
    out = bpy.data.images.new("strip", width=strip.shape[1], height=strip.shape[0], alpha=True)
    out.pixels = strip.ravel().tolist()
    out.filepath_raw = str(OUTPUT)
    out.file_format = "PNG"
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    out.save()
    print("wrote {} ({} frames of {}: {})".format(OUTPUT, len(FRAMES), CLIP.name, ", ".join(map(str, FRAMES))))


main()
sys.stdout.flush()
os._exit(0)  # bpy 4.2 as a module can crash while Python tears it down
