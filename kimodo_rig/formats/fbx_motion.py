"""An FBX motion on a Kimodo skeleton, from the glTF document formats/fbx.py reads it into, whoever wrote it.

A file this tool wrote carries Kimodo's own joint frames: its local rotations are Kimodo's. Another writer
(Blender's FBX exporter, say, re-exporting a Kimodo .glb) puts the skeleton under an armature node turned
from Z up and scaled by 100, and gives every bone its own frame (Blender's: Y along the bone). So the
motion is read from what does not depend on either: each joint's WORLD rotation and the root's world
place at every frame (the document's nodes, ancestors included). A joint's turn from its bind is the
same in any frame convention, so Kimodo's global rotation is  world(frame) * bind^-1 * Kimodo's rest
(the bind from the skin's inverse bind matrices), and its local rotation follows from its parent's.
"""
from __future__ import annotations

from array import array
TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    from typing import List, Optional

from ..errors import KimodoError
from ..model import Motion
from ..ops.fk import rest_pose
from ..rotations import quat_conjugate, quat_multiply, quat_normalize
from . import gltf_document as gd
from .glb import animated_skeleton


def motion_from_scene(document: gd.Document, source: str, name: str, *, fps: Optional[float] = None) -> Motion:
    """The Motion an FBX scene document (one skin, one sampled animation) holds; `source` names the file
    in messages, `name` is the clip's."""
    gltf = document.gltf
    builtin, slots, skin, times, channels, rate = animated_skeleton(document, source, "FBX", fps=fps)
    joint_nodes = [skin["joints"][slot] for slot in slots]
    frames = len(times)
    parents = gd.node_parents(gltf)
    if "inverseBindMatrices" in skin:
        inverse_binds = document.accessor(skin["inverseBindMatrices"])
        binds = [gd.invert4(inverse_binds[slot]) for slot in slots]
    else:  # a skeleton without a mesh: bound where its nodes stand
        binds = gd.world_matrices(gltf, {}, joint_nodes, parents)
    rest_rotations = rest_pose(builtin)[0]
    # Per joint: the file's bone frame -> Kimodo's, at bind (identity for a file this tool wrote).
    corrections = [quat_multiply(quat_conjugate(gd.decompose4(bind)[1]), rest)
                   for bind, rest in zip(binds, rest_rotations)]
    rotations, roots = array("d"), array("d")
    previous: List = [None] * builtin.joint_count
    for frame in range(frames):
        worlds = gd.world_matrices(gltf, gd.keyframe_overrides(channels, frame), joint_nodes, parents)
        globals_: List = []
        for joint, world in enumerate(worlds):
            turned = quat_normalize(quat_multiply(gd.decompose4(world)[1], corrections[joint]))
            globals_.append(turned)
            parent = builtin.parents[joint]
            local = turned if parent < 0 else quat_normalize(quat_multiply(quat_conjugate(globals_[parent]), turned))
            if previous[joint] is not None and sum(a * b for a, b in zip(local, previous[joint])) < 0.0:
                local = tuple(-c for c in local)  # the same turn, on the previous key's side (no long way round)
            previous[joint] = local
            rotations.extend(local)
        roots.extend(worlds[0][12:15])
    if not (gd.is_finite(rotations) and gd.is_finite(roots)):
        raise KimodoError("{}: the animation holds values that are not finite numbers".format(source))
    return Motion(builtin, rotations, roots, rate, name=name)
