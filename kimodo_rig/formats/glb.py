"""Binary glTF out (and in): one node per joint, a skin, one box per bone skinned to it, one animation.

Kimodo's frame is glTF's frame, so joints go in unchanged: rest offsets as node translations, rest
rotations (identity on Kimodo skeletons) as node rotations, no extra root node.
"""
from __future__ import annotations

import math
import struct
from array import array
from functools import lru_cache
from operator import truediv
TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    from typing import Dict, List, Optional, Sequence, Tuple

from .. import skeletons
from ..errors import KimodoError
from ..files import file_name, write_bytes_atomic
from ..model import Motion, Skeleton
from ..ops.fk import position_columns_by_frame, rest_pose, rest_positions
from ..rotations import cross, length, normalize, quat_norm, quat_normalize, subtract
from . import gltf_document as gd
from .limits import frame_rate, frame_rate_of_period, increasing_times
from .options import DEFAULT, WriteOptions

NAME = "glb"
DESCRIPTION = "binary glTF 2.0: skeleton, one box per bone, baked animation"
EXTENSIONS = (".glb",)
SELF_CHECK_TOLERANCE_M = 1e-5
NAME_STYLES = ("mannequin", "native")
UNIT_TOLERANCE = 1e-3  # rotation keys read back: |q| within this of 1, as raw clips must be


def encode(motion: Motion, *, names: str = "mannequin") -> bytes:
    """The GLB bytes of `motion`. `names`: "mannequin" (Unreal names for SMPL-X) or "native"."""
    rig, rig_binary = _rig_part(motion.skeleton, names)
    builder = gd.DocumentBuilder()
    builder.binary += rig_binary
    gltf = builder.gltf
    for key, value in rig.items():  # the lists this clip extends are copied; their records are shared
        gltf[key] = list(value) if isinstance(value, list) else value
    gltf["nodes"].append({"name": (motion.name or "kimodo") + "_mesh", "mesh": 0, "skin": 0})
    gltf["animations"] = [_animation(builder, motion)]
    return builder.to_glb()


@lru_cache(maxsize=8)
def _rig_part(skeleton: Skeleton, names: str) -> Tuple[Dict, bytes]:
    """What of the file the skeleton alone decides: one node per joint (the mesh node, named after the
    clip, comes next), the scene, one box per bone, the skin and its inverse bind matrices, as glTF
    JSON and its binary part. Built once per skeleton and name style (a batch meets the same few again
    and again); callers copy what they extend and never change the records."""
    count = skeleton.joint_count
    joint_names = skeletons.display_names(skeleton, names)
    builder = gd.DocumentBuilder()
    gltf = builder.gltf

    nodes: List[Dict] = []
    for joint in range(count):
        node: Dict = {"name": joint_names[joint]}
        offset = skeleton.rest_offsets[joint]
        if any(offset):
            node["translation"] = [float(c) for c in offset]
        rotation = skeleton.rest_rotations[joint]
        if tuple(rotation) != (0.0, 0.0, 0.0, 1.0):
            node["rotation"] = [float(c) for c in quat_normalize(rotation)]
        children = list(skeleton.children(joint))
        if children:
            node["children"] = children
        nodes.append(node)
    mesh_node = count  # appended by encode
    gltf["nodes"] = nodes
    gltf["scenes"] = [{"nodes": [0, mesh_node]}]
    gltf["scene"] = 0

    positions, normals, joints, indices = _bone_box_lists(skeleton)
    vertices = len(joints)
    attributes = {
        "POSITION": builder.add_components(positions, "VEC3", target=gd.ARRAY_BUFFER, with_bounds=True),
        "NORMAL": builder.add_components(normals, "VEC3", target=gd.ARRAY_BUFFER),
        "JOINTS_0": builder.add_components(
            [c for j in joints for c in (j, 0, 0, 0)], "VEC4", gd.UNSIGNED_SHORT, target=gd.ARRAY_BUFFER
        ),
        "WEIGHTS_0": builder.add_components([1.0, 0.0, 0.0, 0.0] * vertices, "VEC4", target=gd.ARRAY_BUFFER),
    }
    index_accessor = builder.add_components(
        indices, "SCALAR", gd.UNSIGNED_SHORT if vertices < 65535 else gd.UNSIGNED_INT,
        target=gd.ELEMENT_ARRAY_BUFFER,
    )
    gltf["materials"] = [
        {"name": "bone", "pbrMetallicRoughness": {"baseColorFactor": [0.7, 0.72, 0.75, 1.0], "metallicFactor": 0.0,
                                                   "roughnessFactor": 0.8}}
    ]
    gltf["meshes"] = [
        {"name": "bones", "primitives": [{"attributes": attributes, "indices": index_accessor, "material": 0}]}
    ]
    gltf["skins"] = [
        {
            "joints": list(range(count)),
            "skeleton": 0,
            "inverseBindMatrices": builder.add_accessor(_inverse_bind_matrices(skeleton), "MAT4"),
        }
    ]
    return gltf, bytes(builder.binary)


def _animation(builder: gd.DocumentBuilder, motion: Motion) -> Dict:
    """One rotation channel per joint and the root translation, keyed at frame/fps. Each channel is built
    as a flat float32 array straight from the motion's buffer (no per-frame tuples), normalised."""
    frames = motion.frame_count
    time_accessor = builder.add_floats(array("f", [frame / motion.fps for frame in range(frames)]), "SCALAR",
                                       with_bounds=True)
    samplers = []
    channels = []
    count = motion.joint_count
    rotations = motion.local_rotations
    stride = 4 * count
    # One component of a channel as float32 bytes: struct packs floats in fewer steps than array('f')
    # takes them from a list (which parses each item), and rounds them the same way.
    pack_column = struct.Struct("={}f".format(frames)).pack  # native order, as array("f") reads it
    for joint in range(count):
        columns = [rotations[4 * joint + c::stride] for c in range(4)]
        norms = list(map(math.hypot, *columns))
        values = array("f", bytes(16 * frames))
        if all(norms):
            for component, column in enumerate(columns):
                values[component::4] = array("f", pack_column(*map(truediv, column, norms)))
        else:  # a zero quaternion (never in a checked input) is written as the identity, as quat_normalize does
            values = array("f", [c for q in zip(*columns) for c in quat_normalize(q)])
        samplers.append({"input": time_accessor, "output": builder.add_floats(values, "VEC4"), "interpolation": "LINEAR"})
        channels.append({"sampler": len(samplers) - 1, "target": {"node": joint, "path": "rotation"}})
    roots = array("f", motion.root_positions)
    samplers.append({"input": time_accessor, "output": builder.add_floats(roots, "VEC3"), "interpolation": "LINEAR"})
    channels.append({"sampler": len(samplers) - 1, "target": {"node": 0, "path": "translation"}})
    return {"name": motion.name or "kimodo", "samplers": samplers, "channels": channels}


def _inverse_bind_matrices(skeleton: Skeleton) -> List[Tuple[float, ...]]:
    """Inverse of each joint's rest world transform (rotation R, translation p): [R^T | -R^T p]."""
    matrices = []
    for rotation, position in zip(*rest_pose(skeleton)):
        m = gd.trs_matrix((0.0, 0.0, 0.0), quat_normalize(rotation), (1.0, 1.0, 1.0))
        # Transpose the 3x3 block (column-major storage), then the translation column is -R^T p.
        rt = [m[0], m[4], m[8], 0.0, m[1], m[5], m[9], 0.0, m[2], m[6], m[10], 0.0]
        tx = -(rt[0] * position[0] + rt[4] * position[1] + rt[8] * position[2])
        ty = -(rt[1] * position[0] + rt[5] * position[1] + rt[9] * position[2])
        tz = -(rt[2] * position[0] + rt[6] * position[1] + rt[10] * position[2])
        matrices.append(tuple(rt + [tx, ty, tz, 1.0]))
    return matrices


def _bone_boxes(skeleton: Skeleton):
    """`_bone_box_lists` with a tuple a vertex and a tuple a normal (what the Blender add-on builds its
    box rig from, so that the rig looks like its .glb)."""
    positions, normals, joints, indices = _bone_box_lists(skeleton)
    return (list(zip(positions[0::3], positions[1::3], positions[2::3])),
            list(zip(normals[0::3], normals[1::3], normals[2::3])), joints, indices)


def _bone_box_lists(skeleton: Skeleton):
    """One box per joint, in the rest pose: from the joint towards its children's mean, or a small cube
    where the joint has no child at a distance. Each box is skinned fully to its joint. Flat lists, as
    the accessors take them: x, y, z of each vertex; the same of each normal; each vertex's joint; the
    triangles' vertex indices."""
    world = rest_positions(skeleton)
    positions: List[float] = []
    normals: List[float] = []
    joints: List[int] = []
    indices: List[int] = []
    for joint in range(skeleton.joint_count):
        tips = [world[c] for c in skeleton.children(joint) if length(subtract(world[c], world[joint])) > 1e-3]
        start = world[joint]
        if tips:
            tip = tuple(sum(t[i] for t in tips) / len(tips) for i in range(3))
            axis = subtract(tip, start)
            bone_length = length(axis)
            half_width = min(max(0.12 * bone_length, 0.008), 0.04)
            direction = normalize(axis)
            begin, end = 0.0, bone_length
        else:
            direction = (0.0, 1.0, 0.0)
            half_width = 0.012
            begin, end = -half_width, half_width
        helper = (1.0, 0.0, 0.0) if abs(direction[0]) < 0.9 else (0.0, 0.0, 1.0)
        side = normalize(cross(direction, helper))
        up = cross(side, direction)
        _add_box(positions, normals, indices, start, direction, side, up, begin, end, half_width)
        joints.extend([joint] * 24)
    return positions, normals, joints, indices


# A box's six faces: the face's normal (which of axis, side, up and its sign) and its four corners
# counter-clockwise seen from outside, each as (0 at `begin` or 1 at `end` along the axis, side sign, up sign).
_BOX_FACES = (
    ((0, -1), ((0, -1, -1), (0, -1, 1), (0, 1, 1), (0, 1, -1))),
    ((0, 1), ((1, -1, -1), (1, 1, -1), (1, 1, 1), (1, -1, 1))),
    ((1, -1), ((0, -1, -1), (1, -1, -1), (1, -1, 1), (0, -1, 1))),
    ((1, 1), ((0, 1, -1), (0, 1, 1), (1, 1, 1), (1, 1, -1))),
    ((2, -1), ((0, -1, -1), (0, 1, -1), (1, 1, -1), (1, -1, -1))),
    ((2, 1), ((0, -1, 1), (1, -1, 1), (1, 1, 1), (0, 1, 1))),
)


def _add_box(positions, normals, indices, origin, axis, side, up, begin, end, half_width) -> None:
    """Append one box (24 vertices, four a face, so each face has its own normal) to the flat lists."""
    ox, oy, oz = origin
    (ax, ay, az), (sx, sy, sz), (ux, uy, uz) = axis, side, up
    corners = {}  # the box's 8 corners, each worked out once
    for at, a in ((0, begin), (1, end)):
        for s in (-1, 1):
            for u in (-1, 1):
                sw, uw = s * half_width, u * half_width
                corners[at, s, u] = (ox + ax * a + sx * sw + ux * uw, oy + ay * a + sy * sw + uy * uw,
                                     oz + az * a + sz * sw + uz * uw)
    directions = (axis, side, up)
    for (which, sign), face in _BOX_FACES:
        normal = tuple(directions[which]) if sign > 0 else tuple(-c for c in directions[which])
        base = len(positions) // 3
        for corner in face:
            positions.extend(corners[corner])
            normals.extend(normal)
        indices.extend((base, base + 1, base + 2, base, base + 2, base + 3))


def self_check(data: bytes, motion: Motion, source: str = "output") -> float:
    """Rebuild every joint's world position at every frame from the GLB bytes (the file's nodes, children
    and animation, read back as float32 arrays and evaluated by glTF's rules: gltf_document's own
    quaternion FK) and return the worst distance, metres, from FK of `motion` (ops.fk, float64). An
    animation that does not key each frame at frame/fps in every channel fails outright."""
    name = file_name(source)
    document = gd.parse_glb(data, source)
    joint_nodes = document.gltf["skins"][0]["joints"]
    if len(joint_nodes) != motion.joint_count:
        raise KimodoError("{}: self-check failed: the written skin has {} joints, the motion {}".format(
            name, len(joint_nodes), motion.joint_count))
    channels = animation_keyframes_checked(document, motion)
    if channels is None:
        raise KimodoError("{}: self-check failed: the written animation does not key the motion's {} frames at "
                          "frame/fps".format(name, motion.frame_count))
    worst = 0.0
    written = gd.world_position_columns_by_frame(document.gltf, channels, motion.frame_count, joint_nodes)
    dist = math.dist  # |p - q| of each joint, the differences and their norm in one call (hypot's arithmetic)
    for (xs, ys, zs), (ex, ey, ez) in zip(written, position_columns_by_frame(motion)):
        distances = list(map(dist, zip(xs, ys, zs), zip(ex, ey, ez)))
        if not math.isfinite(math.fsum(distances)):  # NaN or inf anywhere counts as worst
            return math.inf
        worst = max(worst, max(distances))
    return worst


def key_time_tolerance(seconds: float) -> float:
    """Half a float32 step at `seconds`: how far a key time stored as float32 may lie from the exact
    frame/fps at any clip length (2.4e-7 s at 4 s, 1.5e-5 s at 403 s, 1 ms at 9 hours)."""
    return math.ldexp(1.0, math.frexp(abs(seconds))[1] - 25)


def animation_keyframes_checked(document: gd.Document, motion: Motion):
    """The animation's values per node and path (flat arrays), or None unless every channel keys every
    frame of `motion` at frame/fps, within half a float32 step, at increasing times (a wrong time base
    would play the right poses at the wrong moments)."""
    times, channels = gd.animation_arrays(document)
    frames, fps = motion.frame_count, motion.fps
    if len(times) != frames:
        return None
    for frame, time in enumerate(times):
        exact = frame / fps
        if not abs(time - exact) <= key_time_tolerance(exact) or (frame and not time > times[frame - 1]):
            return None
    for paths in channels.values():
        for path, values in paths.items():
            width = gd.PATH_WIDTHS.get(path)
            if width is None or len(values) != width * frames:
                return None
    return channels


def write(motion: Motion, path, options: WriteOptions = DEFAULT) -> float:
    """Encode, self-check and write atomically; returns the self-check's worst disagreement in metres.
    Above SELF_CHECK_TOLERANCE_M nothing is written."""
    data, worst = checked_bytes(motion, path, options)
    write_bytes_atomic(path, data)
    return worst


def checked_bytes(motion: Motion, path, options: WriteOptions = DEFAULT) -> Tuple[bytes, float]:
    """The GLB bytes of `motion`, self-checked (messages name `path`), and the worst disagreement in
    metres; raises KimodoError above SELF_CHECK_TOLERANCE_M. For callers that write the bytes elsewhere
    (a batch worker hands them to the process that names the files)."""
    data = encode(motion, names=options.names)
    worst = self_check(data, motion, str(path))
    if not worst <= SELF_CHECK_TOLERANCE_M:
        raise KimodoError(
            "{}: self-check failed: the written file puts a joint {:.3g} m from where the motion has it".format(
                file_name(path), worst
            )
        )
    return data, worst


def read(path, *, fps: Optional[float] = None) -> Motion:
    """A GLB written by this tool (or any skinned GLB whose animation keys every joint on one time grid)
    back into a Motion; built-in skeletons are recognised by joint names or mannequin names."""
    from pathlib import Path  # not at the top: writing a .glb never needs it (see files.file_name)

    return motion_from_document(gd.read_file(path), str(path), Path(path).stem, fps=fps)


def motion_from_document(document: gd.Document, source: str, name: str, *, fps: Optional[float] = None) -> Motion:
    """`read` of a parsed document; `source` names it in messages, `name` is the clip's."""
    gltf = document.gltf
    builtin, order, skin, times, channels, rate = animated_skeleton(document, source, "glTF", fps=fps)
    skin_joints = skin.get("joints", [])
    frames = len(times)

    def keys(node: int, path: str, width: int):
        values = channels.get(node, {}).get(path)
        if values is not None and (len(values) != frames or any(len(value) != width for value in values)):
            raise KimodoError("{}: the {} keys of node {} do not match the animation's {} key times".format(
                source, path, node, frames))
        return values

    rotations = array("d")
    roots = array("d")
    root_node = skin_joints[order[0]]
    joint_rotations = [keys(skin_joints[order[joint]], "rotation", 4) for joint in range(builtin.joint_count)]
    translation = keys(root_node, "translation", 3)
    for frame in range(frames):
        for joint in range(builtin.joint_count):
            node = skin_joints[order[joint]]
            value = joint_rotations[joint]
            rotations.extend(value[frame] if value else gltf["nodes"][node].get("rotation", (0.0, 0.0, 0.0, 1.0)))
        roots.extend(translation[frame] if translation else gltf["nodes"][root_node].get("translation", (0.0, 0.0, 0.0)))
    if not (gd.is_finite(rotations) and gd.is_finite(roots)):
        raise KimodoError("{}: the animation holds values that are not finite numbers".format(source))
    for at in range(0, len(rotations), 4):  # as the raw reader requires: a zero or scaled key is no rotation
        if not abs(quat_norm(rotations[at:at + 4]) - 1.0) <= UNIT_TOLERANCE:
            raise KimodoError("{}: the animation's rotation keys are not unit quaternions (frame {}, joint {})".format(
                source, at // 4 // builtin.joint_count, at // 4 % builtin.joint_count))
    return Motion(builtin, rotations, roots, float(rate), name=name)


def animated_skeleton(document: gd.Document, source: str, container: str, *, fps: Optional[float] = None) -> Tuple:
    """What a motion document (a .glb, or the glTF document formats/fbx_scene.py reads an FBX into) says before
    its keys are read: (Kimodo's skeleton its first skin's joint names are, the skin slot of each of that
    skeleton's joints in its order, the skin, the key times (s), the channels as gd.animation_keyframes
    gives them, the frame rate: `fps`, else the key times' period, else 30). `container` ("glTF", "FBX")
    names the file's kind in messages."""
    gltf = document.gltf
    if not gltf.get("skins"):
        raise KimodoError("{}: no skin (skeleton) in this {}".format(source, container))
    skin = gltf["skins"][0]
    skin_joints = skin.get("joints", [])
    node_names = [gltf["nodes"][n].get("name", "joint{}".format(i)) for i, n in enumerate(skin_joints)]
    builtin = _builtin_for_names(node_names)
    if builtin is None:
        raise KimodoError("{}: joints match no Kimodo skeleton (read a rig as a retarget target instead)".format(source))
    slots = [node_names.index(n) for n in stored_joint_names(builtin, node_names)]
    if not gltf.get("animations"):
        raise KimodoError("{}: no animation in this {}".format(source, container))
    times, channels = gd.animation_keyframes(document)
    frames = len(times)
    if frames == 0:
        raise KimodoError("{}: the animation has no keyframes".format(source))
    increasing_times(times, source, "the animation's key times")
    if fps:
        rate = frame_rate(fps, source)
    elif frames > 1:
        period = (times[-1] - times[0]) / (frames - 1)
        rate = round(frame_rate_of_period(period, source, "the key times' frame period"), 3)
    else:
        rate = 30.0
    return builtin, slots, skin, times, channels, float(rate)


def stored_joint_names(skeleton: Skeleton, node_names: Sequence[str]) -> Tuple[str, ...]:
    """The skeleton's joints as a file with these node names stores them: mannequin names (what `encode`
    writes by default for SMPL-X) where they are the file's names, else Kimodo's own."""
    mannequin = tuple(skeletons.display_names(skeleton, "mannequin"))
    return mannequin if set(mannequin) == set(node_names) else skeleton.joint_names


def is_kimodo_skeleton(names: Sequence[str]) -> bool:
    """Whether joints of these names are one of Kimodo's skeletons (by its names or the mannequin's)."""
    return _builtin_for_names(names) is not None


def _builtin_for_names(names: Sequence[str]) -> Optional[Skeleton]:
    for name in skeletons.BUILTIN:
        skeleton = skeletons.load(name)
        if set(names) in (set(skeleton.joint_names), set(skeletons.display_names(skeleton, "mannequin"))):
            return skeleton
    return None
