"""Retarget targets: a rigged character (.glb/.gltf with a skin), a .bvh, or a built-in rig.

A skinned glTF's rest is its BIND pose, read from the skin's inverse bind matrices (the node transforms
may hold any frame of any animation). Positions are metres as the bones appear in the scene, whatever
scale nodes above or inside the armature carry; rotations are the bind matrices' rotations with scale
removed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .errors import KimodoError
from .formats import gltf_document as gd
from .model import Skeleton
from .rotations import Quat, Vec3, matrix_to_quat, quat_conjugate, quat_multiply, quat_rotate, subtract

RIGS = Path(__file__).resolve().parent / "rigs"
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

    @property
    def has_mesh(self) -> bool:
        gltf = self.document.gltf if self.document else {}
        return any("mesh" in node for node in gltf.get("nodes", []))


def load_target(spec: str) -> Target:
    """A built-in name (mannequin, mixamo), a .glb/.gltf with a skin, or a .bvh."""
    path = BUILTIN_TARGETS.get(spec.lower())
    if path is not None:
        target = read_gltf_target(path)
        return Target(target.skeleton.renamed(target.skeleton.joint_names), spec, target.document, target.nodes, target.scales)
    suffix = Path(spec).suffix.lower()
    if suffix in (".glb", ".gltf"):
        return read_gltf_target(spec)
    if suffix == ".bvh":
        from . import formats

        motion = formats.read_file(spec)
        return Target(motion.skeleton, spec)
    if not Path(spec).exists():
        raise KimodoError("{}: no such file, and not a built-in target (mannequin, mixamo)".format(spec))
    raise KimodoError("{}: a target must be a .glb/.gltf with a skin, a .bvh, or mannequin/mixamo".format(spec))


def invert4(m: Sequence[float]) -> List[float]:
    """Inverse of a column-major 4x4 affine matrix."""
    a = [[m[c * 4 + r] for c in range(3)] for r in range(3)]  # row-major 3x3
    det = (a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0])
           + a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]))
    if abs(det) < 1e-30:
        raise ValueError("singular matrix")
    inv = [[0.0] * 3 for _ in range(3)]
    for r in range(3):
        for c in range(3):
            r1, r2 = (c + 1) % 3, (c + 2) % 3
            c1, c2 = (r + 1) % 3, (r + 2) % 3
            inv[r][c] = (a[r1][c1] * a[r2][c2] - a[r1][c2] * a[r2][c1]) / det
    t = (m[12], m[13], m[14])
    out = [0.0] * 16
    for c in range(3):
        for r in range(3):
            out[c * 4 + r] = inv[r][c]
    for r in range(3):
        out[12 + r] = -(inv[r][0] * t[0] + inv[r][1] * t[1] + inv[r][2] * t[2])
    out[15] = 1.0
    return out


def decompose4(m: Sequence[float]) -> Tuple[Vec3, Quat, Vec3]:
    """Translation, rotation (xyzw) and scale of a column-major 4x4 without shear."""
    columns = [(m[c * 4], m[c * 4 + 1], m[c * 4 + 2]) for c in range(3)]
    scale = [math.sqrt(sum(v * v for v in column)) for column in columns]
    det = (columns[0][0] * (columns[1][1] * columns[2][2] - columns[1][2] * columns[2][1])
           - columns[1][0] * (columns[0][1] * columns[2][2] - columns[0][2] * columns[2][1])
           + columns[2][0] * (columns[0][1] * columns[1][2] - columns[0][2] * columns[1][1]))
    if det < 0:
        scale[0] = -scale[0]
    rows = tuple(tuple(columns[c][r] / (scale[c] or 1.0) for c in range(3)) for r in range(3))
    return (m[12], m[13], m[14]), matrix_to_quat(rows), (scale[0], scale[1], scale[2])


def node_parents_of(gltf) -> List[int]:
    return gd.node_parents(gltf)


def _node_depth(parents: Sequence[int], node: int) -> int:
    depth = 0
    while parents[node] >= 0:
        node = parents[node]
        depth += 1
    return depth


def read_gltf_target(path) -> Target:
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise KimodoError("{}: cannot read ({})".format(source, error.strerror or error)) from error
    document = gd.parse_glb(data, source)
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
        binds = []
        for matrix in inverse_binds:
            try:
                binds.append(invert4(matrix))
            except ValueError:
                raise KimodoError("{}: a skin inverse bind matrix is singular".format(source)) from None
    else:
        binds = None
    world = gd.world_matrices(gltf, {})
    if binds is None:
        binds = [world[n] for n in joints]
    else:
        # Inverse bind matrices are relative to whatever space the exporter chose (an armature with a
        # scale or an axis change above it); the root joint's node transform places that space in the scene.
        root = min(range(len(joints)), key=lambda i: _node_depth(node_parents_of(gltf), joints[i]))
        skin_to_world = gd.multiply4(world[joints[root]], invert4(binds[root]))
        binds = [gd.multiply4(skin_to_world, b) for b in binds]
    node_parents = gd.node_parents(gltf)
    in_skin = {node: i for i, node in enumerate(joints)}

    def skin_parent(node: int) -> int:
        parent = node_parents[node]
        while parent >= 0 and parent not in in_skin:
            parent = node_parents[parent]
        return in_skin[parent] if parent >= 0 else -1

    parents = [skin_parent(n) for n in joints]
    roots = [i for i, p in enumerate(parents) if p < 0]
    if len(roots) != 1:
        raise KimodoError("{}: the skin's joints form {} separate trees; one armature root is needed".format(source, len(roots)))
    order: List[int] = []

    def visit(i: int) -> None:
        order.append(i)
        for child in range(len(joints)):
            if parents[child] == i:
                visit(child)

    visit(roots[0])
    new_index = {old: new for new, old in enumerate(order)}
    positions: List[Vec3] = []
    rotations: List[Quat] = []
    scales: List[Vec3] = []
    for old in order:
        translation, rotation, scale = decompose4(binds[old])
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
    skeleton = Skeleton(Path(source).stem, tuple(names), skeleton_parents, tuple(offsets), tuple(local_rotations))
    return Target(skeleton, source, document, tuple(joints[old] for old in order), tuple(scales))
