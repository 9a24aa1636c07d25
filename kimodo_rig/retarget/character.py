"""Retarget targets: a rigged character (.glb/.gltf with a skin), a .bvh, or a built-in rig.

A skinned glTF's rest is its BIND pose, read from the skin's inverse bind matrices (the node transforms
may hold any frame of any animation). Positions are metres as the bones appear in the scene, whatever
scale nodes above or inside the armature carry; rotations are the bind matrices' rotations with scale
removed.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from ..errors import KimodoError
from ..formats import gltf_document as gd
from ..model import Skeleton
from ..ops.fk import rest_positions
from ..rotations import Quat, Vec3, quat_conjugate, quat_multiply, quat_rotate, subtract

LOG = logging.getLogger("kimodo_rig")
RIGS = Path(__file__).resolve().parent.parent / "rigs"
BUILTIN_TARGETS = {"mannequin": RIGS / "mpfb2_game_engine.glb", "mixamo": RIGS / "mpfb2_mixamo.glb"}


@dataclass(frozen=True)
class Target:
    """A target rig: its skeleton at the bind pose, and where it came from. For a glTF target,
    `nodes[j]` is the glTF node of joint j and `scales[j]` the joint's world scale at bind."""

    skeleton: Skeleton
    source: str
    document: Optional[gd.Document] = None
    nodes: Tuple[int, ...] = ()
    scales: Tuple[Vec3, ...] = ()
    skin_to_world: Tuple[float, ...] = (1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0)

    @property
    def has_mesh(self) -> bool:
        gltf = self.document.gltf if self.document else {}
        return any("mesh" in node for node in gltf.get("nodes", []))


def load_target(spec: str) -> Target:
    """A built-in name (mannequin, mixamo), a .glb/.gltf with a skin, or a .bvh."""
    path = BUILTIN_TARGETS.get(spec.lower())
    if path is not None:
        target = read_gltf_target(path)
        return Target(target.skeleton, spec, target.document, target.nodes, target.scales, target.skin_to_world)
    suffix = Path(spec).suffix.lower()
    if suffix in (".glb", ".gltf"):
        return read_gltf_target(spec)
    if suffix == ".bvh":
        from .. import formats

        # A BVH rest has no floor: stand it on y = 0 by its lowest joint, as a character file would be.
        skeleton = formats.read_file(spec).skeleton
        lowest = min(p[1] for p in rest_positions(skeleton))
        root = skeleton.rest_offsets[0]
        offsets = ((root[0], root[1] - lowest, root[2]),) + tuple(skeleton.rest_offsets[1:])
        return Target(Skeleton(skeleton.name, skeleton.joint_names, skeleton.parents, offsets,
                               skeleton.rest_rotations, skeleton.label), spec)
    if not Path(spec).exists():
        raise KimodoError("{}: no such file, and not a built-in target (mannequin, mixamo)".format(spec))
    raise KimodoError("{}: a target must be a .glb/.gltf with a skin, a .bvh, or mannequin/mixamo".format(spec))


def read_gltf_target(path) -> Target:
    source = str(path)
    document = gd.read_file(path)
    gltf = document.gltf
    skins = gltf.get("skins") or []
    if not skins:
        raise KimodoError("{}: no skin (skeleton) in this glTF: a target needs a rigged character".format(source))
    # The skin with the most joints (characters split into several meshes share one armature).
    skin = max(skins, key=lambda s: len(s.get("joints", [])))
    joints = list(skin.get("joints", []))
    node_count = len(gltf.get("nodes", []))
    if not joints or any(not isinstance(n, int) or not 0 <= n < node_count for n in joints):
        raise KimodoError("{}: the skin lists no valid joints".format(source))
    if "inverseBindMatrices" in skin:
        inverse_binds = document.accessor(skin["inverseBindMatrices"])
        if len(inverse_binds) != len(joints):
            raise KimodoError("{}: the skin has {} joints but {} inverse bind matrices".format(source, len(joints), len(inverse_binds)))
        if any(len(matrix) != 16 or not gd.is_finite(matrix) for matrix in inverse_binds):
            raise KimodoError("{}: the skin's inverse bind matrices are not 4x4 matrices of finite numbers".format(source))
        binds = []
        for matrix in inverse_binds:
            try:
                binds.append(gd.invert4(matrix))
            except ValueError:
                raise KimodoError("{}: a skin inverse bind matrix is singular".format(source)) from None
    else:
        binds = None
    world = gd.world_matrices(gltf, {})
    node_parents = gd.node_parents(gltf)
    in_skin = {node: i for i, node in enumerate(joints)}

    def skin_parent(node: int) -> int:
        parent = node_parents[node]
        while parent >= 0 and parent not in in_skin:
            parent = node_parents[parent]
        return in_skin[parent] if parent >= 0 else -1

    parents = [skin_parent(n) for n in joints]
    children: Dict[int, List[int]] = {}
    for i, p in enumerate(parents):
        children.setdefault(p, []).append(i)

    def tree(root: int) -> List[int]:
        order, stack = [], [root]
        while stack:
            joint = stack.pop()
            order.append(joint)
            stack.extend(reversed(children.get(joint, [])))
        return order

    trees = sorted((tree(root) for root in children.get(-1, [])), key=len, reverse=True)
    order = trees[0]
    if len(trees) > 1:
        # Loose helper bones (IK targets, props) beside the armature: the body is the largest tree.
        LOG.warning("%s: the skin's joints form %d separate trees; the largest (%d joints, from %s) is the character",
                    source, len(trees), len(order), gltf["nodes"][joints[order[0]]].get("name", "?"))
    skin_to_world = gd.trs_matrix((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (1.0, 1.0, 1.0))
    if binds is None:
        binds = [world[n] for n in joints]
    else:
        # Inverse bind matrices are relative to whatever space the exporter chose (an armature with a
        # scale or an axis change above it); the character's root joint's node places that space in the scene.
        try:
            skin_to_world = gd.multiply4(world[joints[order[0]]], gd.invert4(binds[order[0]]))
        except ValueError:
            raise KimodoError("{}: the skin's root joint has a singular bind matrix".format(source)) from None
        binds = [gd.multiply4(skin_to_world, b) for b in binds]
    new_index = {old: new for new, old in enumerate(order)}
    positions: List[Vec3] = []
    rotations: List[Quat] = []
    scales: List[Vec3] = []
    for old in order:
        translation, rotation, scale = gd.decompose4(binds[old])
        positions.append(translation)
        rotations.append(rotation)
        scales.append(scale)
    names = []
    seen: Dict[str, int] = {}
    for old in order:
        name = gltf["nodes"][joints[old]].get("name") or "joint{}".format(old)
        if name in seen:
            name = "{}_{}".format(name, joints[old])
        seen[name] = old
        names.append(name)
    skeleton_parents = tuple(new_index[parents[old]] if parents[old] >= 0 else -1 for old in order)
    offsets: List[Vec3] = []
    local_rotations: List[Quat] = []
    for j, parent in enumerate(skeleton_parents):
        if parent < 0:
            offsets.append(positions[j])
            local_rotations.append(rotations[j])
        else:
            inverse_parent = quat_conjugate(rotations[parent])
            offsets.append(quat_rotate(inverse_parent, subtract(positions[j], positions[parent])))
            local_rotations.append(quat_multiply(inverse_parent, rotations[j]))
    if not all(gd.is_finite(value) for value in offsets + local_rotations + scales):
        raise KimodoError("{}: the skin's bind pose is not finite numbers (scales or matrices too large?)".format(source))
    skeleton = Skeleton(Path(source).stem, tuple(names), skeleton_parents, tuple(offsets), tuple(local_rotations))
    return Target(skeleton, source, document, tuple(joints[old] for old in order), tuple(scales), tuple(skin_to_world))
