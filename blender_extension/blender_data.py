"""Blender data in and out: an armature object as kimodo_rig's plain Armature, the box rig, the Action,
and bone positions read back from Blender's own evaluation. Everything here is bpy; the numbers come
from kimodo_rig."""
from typing import Dict, List, Sequence

import bpy

from .kimodo_rig.formats.glb import _bone_boxes as bone_boxes  # step 1's boxes, so the rig looks like its .glb
from .kimodo_rig.model import Skeleton
from .kimodo_rig.ops.fk import rest_positions
from .kimodo_rig.retarget.armature import FROM_Y_UP, TO_Y_UP, Armature, ArmatureBone
from .kimodo_rig.rotations import matrix_apply

BOX_BONE_LENGTH = 0.05  # metres, bones without a child at a distance


def armature_of(obj) -> Armature:
    bones = tuple(
        ArmatureBone(bone.name, bone.parent.name if bone.parent else "", tuple(tuple(row) for row in bone.matrix_local))
        for bone in obj.data.bones
    )
    return Armature(obj.name, bones, tuple(tuple(row) for row in obj.matrix_world))


def _blender(point) -> tuple:
    return tuple(matrix_apply(FROM_Y_UP, point))


def make_box_rig(context, skeleton: Skeleton, name: str, extra_root=None):
    """An armature of `skeleton` (bones from each joint towards its children's mean) and a mesh of one box
    per bone skinned wholly to it, as step 1's .glb holds. `extra_root`: (name, position) of a bone put
    above joint 0 (root motion on a root bone). Returns (armature object, mesh object)."""
    data = bpy.data.armatures.new(name)
    armature = bpy.data.objects.new(name, data)
    context.collection.objects.link(armature)
    world = rest_positions(skeleton)
    previous_active = context.view_layer.objects.active
    context.view_layer.objects.active = armature
    bpy.ops.object.mode_set(mode="EDIT")
    edit_bones = []
    if extra_root is not None:
        root = data.edit_bones.new(extra_root[0])
        root.head = _blender(extra_root[1])
        root.tail = _blender((extra_root[1][0], extra_root[1][1] + BOX_BONE_LENGTH, extra_root[1][2]))
    for joint, joint_name in enumerate(skeleton.joint_names):
        bone = data.edit_bones.new(joint_name)
        head = world[joint]
        tips = [world[c] for c in skeleton.children(joint)
                if sum((world[c][i] - head[i]) ** 2 for i in range(3)) > 1e-6]
        if tips:
            tail = tuple(sum(t[i] for t in tips) / len(tips) for i in range(3))
        else:
            tail = (head[0], head[1] + BOX_BONE_LENGTH, head[2])
        bone.head, bone.tail = _blender(head), _blender(tail)
        parent = skeleton.parents[joint]
        if parent >= 0:
            bone.parent = edit_bones[parent]
        elif extra_root is not None:
            bone.parent = data.edit_bones[extra_root[0]]
        edit_bones.append(bone)
    bpy.ops.object.mode_set(mode="OBJECT")
    context.view_layer.objects.active = previous_active

    positions, _normals, joints, _indices = bone_boxes(skeleton)
    mesh = bpy.data.meshes.new(name + "_mesh")
    faces = [tuple(range(base, base + 4)) for base in range(0, len(positions), 4)]
    mesh.from_pydata([_blender(p) for p in positions], [], faces)
    mesh.update()
    mesh_object = bpy.data.objects.new(name + "_mesh", mesh)
    context.collection.objects.link(mesh_object)
    mesh_object.parent = armature
    for joint, joint_name in enumerate(skeleton.joint_names):
        group = mesh_object.vertex_groups.new(name=joint_name)
        group.add([v for v, j in enumerate(joints) if j == joint], 1.0, "REPLACE")
    modifier = mesh_object.modifiers.new("Armature", "ARMATURE")
    modifier.object = armature
    return armature, mesh_object


def _fcurve_maker(obj, action):
    """fcurves.new for the Blender at hand: Action.fcurves up to 4.3, a slot's channelbag from 4.4 on."""
    animation = obj.animation_data_create()
    animation.action = action
    if not hasattr(action, "slots"):
        def legacy(data_path, index, group):
            return action.fcurves.new(data_path, index=index, action_group=group)
        return legacy
    from bpy_extras import anim_utils

    slot = animation.action_slot
    if slot is None:
        slot = action.slots.new(id_type="OBJECT", name=obj.name)
        animation.action_slot = slot
    channelbag = anim_utils.action_ensure_channelbag_for_slot(action, slot)
    groups: Dict[str, object] = {}

    def layered(data_path, index, group):
        fcurve = channelbag.fcurves.new(data_path, index=index)
        if group not in groups:
            groups[group] = channelbag.groups.new(group)
        fcurve.group = groups[group]
        return fcurve
    return layered


def key_action(obj, name: str, channels, first_frame: int):
    """A new Action on `obj` with, per bone, location, rotation_quaternion and scale keys at first_frame,
    first_frame + 1, ... (linear, as glTF samples are). Every channel is keyed, so the Action holds the
    whole pose: NLA strips below it (a character's own clips) cannot move a bone it leaves unkeyed."""
    action = bpy.data.actions.new(name)
    new_fcurve = _fcurve_maker(obj, action)
    for bone_name, frames in channels.items():
        pose_bone = obj.pose.bones[bone_name]
        pose_bone.rotation_mode = "QUATERNION"
        path = 'pose.bones["{}"]'.format(bpy.utils.escape_identifier(bone_name))
        curves = [(path + ".location", i, [p[i] for p, _ in frames]) for i in range(3)]
        curves += [(path + ".rotation_quaternion", i, [q[i] for _, q in frames]) for i in range(4)]
        curves += [(path + ".scale", i, [1.0] * len(frames)) for i in range(3)]
        for data_path, index, values in curves:
            fcurve = new_fcurve(data_path, index, bone_name)
            points = fcurve.keyframe_points
            points.add(len(values))
            points.foreach_set("co", [c for f, v in enumerate(values) for c in (first_frame + f, v)])
            for point in points:
                point.interpolation = "LINEAR"
            fcurve.update()
    return action


def sample_heads(context, obj, frames: Sequence[int], names: Sequence[str]) -> List[Dict[str, tuple]]:
    """Per scene frame, world bone heads of `names` as Blender evaluates them, in the glTF frame."""
    scene = context.scene
    current = scene.frame_current
    samples = []
    for frame in frames:
        scene.frame_set(frame)
        world = obj.matrix_world
        bones = obj.pose.bones
        samples.append({name: tuple(matrix_apply(TO_Y_UP, tuple(world @ bones[name].head))) for name in names if name in bones})
    scene.frame_set(current)
    return samples


def remove(objects=(), actions=(), datablocks=()) -> None:
    """Delete what an import made before it failed."""
    for obj in objects:
        if obj is not None:
            bpy.data.objects.remove(obj, do_unlink=True)
    for action in actions:
        if action is not None:
            bpy.data.actions.remove(action)
    for block in datablocks:
        if block is None:
            continue
        if isinstance(block, bpy.types.Armature):
            bpy.data.armatures.remove(block)
        elif isinstance(block, bpy.types.Mesh):
            bpy.data.meshes.remove(block)
