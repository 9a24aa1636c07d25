"""Render a retargeted clip to a picture for the README: Kimodo's run-and-leap clip on the Quaternius robot,
several frames side by side. Runs in Blender's Python (the `bpy` module, e.g. the test venv):

    python scripts/render_retarget.py [CLIP] [TARGET.glb] [OUT.png]

It retargets with kimodo_rig (standard library only, so Blender's Python imports it from this checkout),
imports the output .glb with Blender's glTF importer and renders with Cycles on the CPU (no GPU needed).
"""
import sys
import tempfile
from pathlib import Path

import bpy
import numpy as np
from mathutils import Vector

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kimodo_rig.retarget import character as targets, output as retarget_output  # noqa: E402
from kimodo_rig.formats import raw  # noqa: E402
from kimodo_rig.retarget.solve import retarget  # noqa: E402

CLIP = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests" / "data" / "clips" / "soma_01_single_text_prompt"
TARGET = sys.argv[2] if len(sys.argv) > 2 else str(ROOT / "tests" / "data" / "rigs" / "quaternius" / "RobotExpressive.glb")
OUTPUT = Path(sys.argv[3]) if len(sys.argv) > 3 else ROOT / "docs" / "retarget_robot.png"
FRAMES = (0, 30, 55, 75, 95, 120)
SIZE = (360, 480)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="kimodo_render_"))
    motion = raw.read(CLIP)
    target = targets.load_target(TARGET)
    retargeted, info = retarget(motion, target.skeleton)
    glb = work / "retargeted.glb"
    retarget_output.write(retargeted, info, target, glb)

    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps = int(round(motion.fps))
    bpy.ops.import_scene.gltf(filepath=str(glb))
    armature = next(o for o in scene.objects if o.type == "ARMATURE")
    start = int(round(armature.animation_data.action.frame_range[0]))
    hips = armature.pose.bones[info.target_map.joint_name("hips")]

    bpy.ops.mesh.primitive_plane_add(size=200.0)
    floor = bpy.context.active_object
    floor_material = bpy.data.materials.new("floor")
    floor_material.diffuse_color = (0.8, 0.8, 0.82, 1.0)
    floor.data.materials.append(floor_material)
    bpy.ops.object.light_add(type="SUN", rotation=(0.7, 0.2, 0.6))
    bpy.context.active_object.data.energy = 4.0
    world = bpy.data.worlds.new("sky")
    world.color = (0.55, 0.6, 0.7)
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
    corners = [o.matrix_world @ Vector(c) for o in scene.objects if o.type == "MESH" and o is not floor for c in o.bound_box]
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
    print("wrote {} ({} frames of {}: {})".format(OUTPUT, len(FRAMES), motion.name, ", ".join(map(str, FRAMES))))


main()
