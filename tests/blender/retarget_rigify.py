"""One Blender process: build Rigify's human metarig (A-pose, .L/.R names), export it to GLB, retarget a
Kimodo clip onto it with kimodo_rig (standard library only, so Blender's Python runs it), import our
output GLB back into Blender and compare the imported bones' world directions with ours.

Usage: python retarget_rigify.py CLIP_FOLDER WORK_FOLDER ; prints one JSON object as its last line."""
import json
import math
import sys
from pathlib import Path

import bpy

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kimodo_rig.formats import raw  # noqa: E402
from kimodo_rig.ops.fk import world_positions  # noqa: E402
from kimodo_rig.retarget.solve import retarget  # noqa: E402
from kimodo_rig.retarget import character as targets, output as retarget_output  # noqa: E402

clip, work = Path(sys.argv[1]), Path(sys.argv[2])
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.preferences.addon_enable(module="rigify")
bpy.ops.object.armature_human_metarig_add()
metarig = bpy.context.active_object
upper = metarig.data.bones["upper_arm.L"]
droop = math.degrees(math.atan2(-(upper.tail_local - upper.head_local).z,
                                math.hypot((upper.tail_local - upper.head_local).x, (upper.tail_local - upper.head_local).y)))
metarig_bones = len(metarig.data.bones)
rig_path = work / "rigify_metarig.glb"
bpy.ops.export_scene.gltf(filepath=str(rig_path), export_format="GLB")

motion = raw.read(clip)
target = targets.load_target(str(rig_path))
retargeted, info = retarget(motion, target.skeleton)
output = work / "on_rigify.glb"
retarget_output.write(retargeted, info, target, output)
report = retarget_output.report_from_output(output, motion, retargeted, info).to_json()
ours = world_positions(retargeted)
names = retargeted.skeleton.joint_names
parents = retargeted.skeleton.parents

bpy.ops.wm.read_factory_settings(use_empty=True)
scene = bpy.context.scene
scene.render.fps = int(round(motion.fps))
bpy.ops.import_scene.gltf(filepath=str(output))
armature = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
action = armature.animation_data.action
start = int(round(action.frame_range[0]))
mapped = sorted(set(info.target_map.bones.values()))
worst = 1.0
compared = 0
frames = list(range(0, motion.frame_count, 7))
for frame in frames:
    scene.frame_set(start + frame)
    heads = {}
    for joint in range(len(names)):
        bone = armature.pose.bones.get(names[joint])
        if bone is not None:
            head = armature.matrix_world @ bone.head
            heads[joint] = (head.x, head.z, -head.y)  # Blender Z-up back to glTF Y-up
    for joint in mapped:
        parent = parents[joint]
        if parent < 0 or joint not in heads or parent not in heads:
            continue
        a = [heads[joint][i] - heads[parent][i] for i in range(3)]
        b = [ours[frame][joint][i] - ours[frame][parent][i] for i in range(3)]
        na, nb = math.sqrt(sum(c * c for c in a)), math.sqrt(sum(c * c for c in b))
        if na < 1e-4 or nb < 1e-4:
            continue
        worst = min(worst, sum(x * y for x, y in zip(a, b)) / na / nb)
        compared += 1
print(json.dumps({"metarig_bones": metarig_bones, "upperarm_droop_deg": droop, "compared": compared,
                  "frames": len(frames), "worst_cosine": worst, "report": report,
                  "thigh": info.target_map.joint_name("thigh_l"), "head": info.target_map.joint_name("head"),
                  "imported_bones": len(armature.data.bones)}))
