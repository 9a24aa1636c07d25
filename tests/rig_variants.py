"""Test rigs of the kinds real characters come in, built from the shared rigs with pygltflib + numpy
(nothing here imports kimodo_rig). Each builder takes a loaded pygltflib.GLTF2 and changes it in place;
`load` and `save` read and write files. Shared by the retarget, feet and Blender-extension tests.

    gltf = load(MANNEQUIN)
    turn_scene(gltf, 180)               # the character now faces -Z (a VRM 0.x avatar)
    save(gltf, tmp_path / "back.glb")

Kinds (../shared/rigs/README.md): saved in another pose than the bind pose (`pose_nodes`; `at_bind` undoes
it for a judge), facing -Z or +X (`turn_scene`), viewer-side names (`swap_side_names`), an armature scaled
or rotated from Z-up (`wrap_armature`), a character of another size (`scale_scene`), leaf limb bones and
one-bone limbs (`drop_joints`, `kenney_like`), unknown naming (`rename`, `cesium_like`), IK helpers off a
root bone (`add_helper_joint`, `add_unreal_ik_bones`), .vrm humanoid tables (`add_vrm_table`), rig families as
their exporters write them (`rigify_like` ... `auto_rig_pro_like`), and issue 39's kinds: Sketchfab re-exports
(`sketchfab_like`), Rigify deform-only and all-bones exports, MMD, VRoid names without a table, Blender's
default names, no names, numbered chains, and a quadruped (`quadruped`).
"""
from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence

import numpy as np
import pygltflib

DATA = Path(__file__).resolve().parent / "data"
MANNEQUIN = DATA / "rigs" / "mpfb2" / "mpfb2_game_engine.glb"
MIXAMO = DATA / "rigs" / "mpfb2" / "mpfb2_mixamo.glb"
ROBOT = DATA / "rigs" / "quaternius" / "RobotExpressive.glb"
FEMALE_DRESS = DATA / "rigs" / "quaternius" / "quaternius_female_dress.glb"

_DTYPES = {5120: np.int8, 5121: np.uint8, 5122: np.int16, 5123: np.uint16, 5125: np.uint32, 5126: np.float32}
_WIDTHS = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT4": 16}


def load(path) -> pygltflib.GLTF2:
    gltf = pygltflib.GLTF2().load(str(path))
    gltf.convert_buffers(pygltflib.BufferFormat.BINARYBLOB)
    return gltf


def save(gltf: pygltflib.GLTF2, path) -> Path:
    """Writes a binary glTF (also for a .vrm name)."""
    path = Path(path)
    gltf.save_binary(str(path))
    return path


# --- accessors ---------------------------------------------------------------------------------------

def read_accessor(gltf: pygltflib.GLTF2, index: int) -> np.ndarray:
    """(count, width) array in the accessor's own type (MAT4: (count, 4, 4) row-major)."""
    accessor = gltf.accessors[index]
    view = gltf.bufferViews[accessor.bufferView]
    dtype = np.dtype(_DTYPES[accessor.componentType])
    width = _WIDTHS[accessor.type]
    stride = view.byteStride or dtype.itemsize * width
    start = (view.byteOffset or 0) + (accessor.byteOffset or 0)
    blob = gltf.binary_blob()
    rows = [np.frombuffer(blob, dtype, width, start + i * stride) for i in range(accessor.count)]
    values = np.array(rows, dtype=dtype)
    if accessor.type == "MAT4":
        return values.reshape(-1, 4, 4).transpose(0, 2, 1)
    return values


def add_accessor(gltf: pygltflib.GLTF2, values: np.ndarray, kind: str, component: int = 5126, bounds: bool = False) -> int:
    """A new accessor holding `values` ((count, width), or (count, 4, 4) for MAT4), appended to the blob."""
    values = np.asarray(values)
    if kind == "MAT4":
        values = values.transpose(0, 2, 1).reshape(-1, 16)
    values = values.reshape(len(values), -1).astype(_DTYPES[component])
    blob = bytearray(gltf.binary_blob() or b"")
    while len(blob) % 8:
        blob.append(0)
    offset = len(blob)
    data = values.tobytes()
    blob += data
    gltf.bufferViews.append(pygltflib.BufferView(buffer=0, byteOffset=offset, byteLength=len(data)))
    accessor = pygltflib.Accessor(bufferView=len(gltf.bufferViews) - 1, componentType=component,
                                  count=len(values), type=kind)
    if bounds:
        accessor.min = values.min(axis=0).tolist()
        accessor.max = values.max(axis=0).tolist()
    gltf.accessors.append(accessor)
    gltf.set_binary_blob(bytes(blob))
    gltf.buffers[0].byteLength = len(blob)
    return len(gltf.accessors) - 1


# --- node transforms ----------------------------------------------------------------------------------

def quat_matrix(q: Sequence[float]) -> np.ndarray:
    x, y, z, w = np.asarray(q, dtype=np.float64) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def matrix_quat(m: np.ndarray) -> List[float]:
    m = np.asarray(m, dtype=np.float64)
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0:
        s = np.sqrt(trace + 1.0) * 2
        q = [(m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, s / 4]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2
        q = [s / 4, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s, (m[2, 1] - m[1, 2]) / s]
    elif m[1, 1] > m[2, 2]:
        s = np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2
        q = [(m[0, 1] + m[1, 0]) / s, s / 4, (m[1, 2] + m[2, 1]) / s, (m[0, 2] - m[2, 0]) / s]
    else:
        s = np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2
        q = [(m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, s / 4, (m[1, 0] - m[0, 1]) / s]
    q = np.array(q)
    return (q / np.linalg.norm(q)).tolist()


def axis_angle_quat(axis: Sequence[float], degrees: float) -> List[float]:
    axis = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    half = np.radians(degrees) / 2
    return list(axis * np.sin(half)) + [float(np.cos(half))]


def local_matrix(node: pygltflib.Node) -> np.ndarray:
    if node.matrix:
        return np.array(node.matrix, dtype=np.float64).reshape(4, 4).T
    m = np.eye(4)
    m[:3, :3] = quat_matrix(node.rotation or [0, 0, 0, 1]) * np.array(node.scale or [1, 1, 1], dtype=np.float64)
    m[:3, 3] = node.translation or [0, 0, 0]
    return m


def set_local_matrix(node: pygltflib.Node, m: np.ndarray) -> None:
    """TRS from a matrix without shear (rotation x scale, scale may be negative only with a mirror: not used)."""
    scale = np.linalg.norm(m[:3, :3], axis=0)
    node.matrix = None
    node.translation = m[:3, 3].tolist()
    node.rotation = matrix_quat(m[:3, :3] / scale)
    node.scale = scale.tolist()


def parents(gltf: pygltflib.GLTF2) -> List[int]:
    result = [-1] * len(gltf.nodes)
    for index, node in enumerate(gltf.nodes):
        for child in node.children or []:
            result[child] = index
    return result


def world_matrices(gltf: pygltflib.GLTF2) -> np.ndarray:
    """(nodes, 4, 4) world matrices of the nodes as saved."""
    parent = parents(gltf)
    world: Dict[int, np.ndarray] = {}

    def of(index: int) -> np.ndarray:
        if index not in world:
            local = local_matrix(gltf.nodes[index])
            world[index] = local if parent[index] < 0 else of(parent[index]) @ local
        return world[index]

    return np.array([of(i) for i in range(len(gltf.nodes))])


def node_index(gltf: pygltflib.GLTF2, name: str) -> int:
    for index, node in enumerate(gltf.nodes):
        if node.name == name:
            return index
    raise KeyError(name)


def bind_worlds(gltf: pygltflib.GLTF2, skin: int = 0) -> Dict[str, np.ndarray]:
    """Bind world matrix per joint name: inverse of each inverse bind matrix, placed in the scene by the
    skin root's parent (its non-joint ancestors) as saved."""
    joints = list(gltf.skins[skin].joints)
    ibm = read_accessor(gltf, gltf.skins[skin].inverseBindMatrices).astype(np.float64)
    return {gltf.nodes[j].name: np.linalg.inv(m) for j, m in zip(joints, ibm)}


# --- builders -----------------------------------------------------------------------------------------

def pose_nodes(gltf: pygltflib.GLTF2, *, animation: Optional[int] = None, frame: int = 10, seed: int = 1,
               degrees: float = 25.0, hips: str = "", hips_move=(0.12, -0.2, 0.3)) -> None:
    """Save the rig in another pose than its bind pose: each joint node takes the TRS of `frame` of an
    animation the file carries (or a random turn up to `degrees` when it has none), and the node `hips`
    (default: the skin's first root joint) moves by `hips_move` metres (in its parent's frame). The
    inverse bind matrices are left as they were."""
    joints = sorted({j for skin in gltf.skins for j in skin.joints})
    if animation is not None:
        chosen = gltf.animations[animation]
        for channel in chosen.channels:
            sampler = chosen.samplers[channel.sampler]
            values = read_accessor(gltf, sampler.output).astype(np.float64)
            value = values[min(frame, len(values) - 1)].tolist()
            node = gltf.nodes[channel.target.node]
            if node.matrix:
                set_local_matrix(node, local_matrix(node))
            setattr(node, channel.target.path, value)
    else:
        rng = np.random.default_rng(seed)
        for j in joints:
            node = gltf.nodes[j]
            if node.matrix:
                set_local_matrix(node, local_matrix(node))
            turn = axis_angle_quat(rng.normal(size=3), rng.uniform(-degrees, degrees))
            rotation = quat_matrix(node.rotation or [0, 0, 0, 1]) @ quat_matrix(turn)
            node.rotation = matrix_quat(rotation)
    parent = parents(gltf)
    root = node_index(gltf, hips) if hips else min(gltf.skins[0].joints, key=lambda j: _depth(parent, j))
    node = gltf.nodes[root]
    if node.matrix:
        set_local_matrix(node, local_matrix(node))
    node.translation = (np.array(node.translation or [0, 0, 0]) + np.asarray(hips_move)).tolist()


def at_bind(gltf: pygltflib.GLTF2, skin: int = 0) -> None:
    """Save the rig at its bind pose (RobotExpressive's file holds a frame of a clip: its head 46 cm and
    fingers 3 m off their bind places): every joint of the skin gets the node transform that puts it at
    its bind world, inverse(inverse bind matrix), placed in the scene as the skin's root joint stands as
    saved (a root joint saved off its bind place is the rig's placement). Rigid meshes under joints follow."""
    if not gltf.skins:
        return  # rigid parts on nodes: the nodes as saved are the rest
    parent = parents(gltf)
    joints = list(gltf.skins[skin].joints)
    ibm = dict(zip(joints, read_accessor(gltf, gltf.skins[skin].inverseBindMatrices).astype(np.float64)))
    root = min(joints, key=lambda j: _depth(parent, j))
    space = world_matrices(gltf)[root] @ ibm[root]
    for joint in sorted(joints, key=lambda j: _depth(parent, j)):
        above = world_matrices(gltf)[parent[joint]] if parent[joint] >= 0 else np.eye(4)
        set_local_matrix(gltf.nodes[joint], np.linalg.inv(above) @ space @ np.linalg.inv(ibm[joint]))


def _depth(parent: Sequence[int], node: int) -> int:
    return 0 if parent[node] < 0 else 1 + _depth(parent, parent[node])


def _skinned_primitives(gltf: pygltflib.GLTF2):
    for node in gltf.nodes:
        if node.mesh is not None and node.skin is not None:
            for primitive in gltf.meshes[node.mesh].primitives:
                yield primitive


def turn_scene(gltf: pygltflib.GLTF2, degrees: float, axis=(0.0, 1.0, 0.0)) -> None:
    """Turn the whole character in its scene (180: it faces -Z like a VRM 0.x avatar; 90: +X): a new top
    node carries the turn, skinned vertices and inverse bind matrices follow, as an exporter writes it."""
    m = np.eye(4)
    m[:3, :3] = quat_matrix(axis_angle_quat(axis, degrees))
    _transform_scene(gltf, m)


def _transform_scene(gltf: pygltflib.GLTF2, m: np.ndarray) -> None:
    taken = {node.name for node in gltf.nodes}
    name = next(n for n in ["Turned"] + ["Turned_{}".format(k) for k in range(2, len(gltf.nodes) + 2)] if n not in taken)
    top = pygltflib.Node(name=name, children=list(gltf.scenes[gltf.scene or 0].nodes))  # a second turn: a name of its own
    set_local_matrix(top, m)
    gltf.nodes.append(top)
    gltf.scenes[gltf.scene or 0].nodes = [len(gltf.nodes) - 1]
    _transform_vertices(gltf, m)
    inverse = np.linalg.inv(m)
    for skin in gltf.skins:
        ibm = read_accessor(gltf, skin.inverseBindMatrices).astype(np.float64)
        skin.inverseBindMatrices = add_accessor(gltf, ibm @ inverse, "MAT4")


def _transform_vertices(gltf: pygltflib.GLTF2, m: np.ndarray) -> None:
    """Skinned vertices (positions, normals, tangents) moved by the affine `m`, into new accessors."""
    normals = np.linalg.inv(m[:3, :3]).T
    done = set()
    for primitive in _skinned_primitives(gltf):
        for attribute in ("POSITION", "NORMAL", "TANGENT"):
            index = getattr(primitive.attributes, attribute, None)
            if index is None or (attribute, index) in done:
                continue
            done.add((attribute, index))
            values = read_accessor(gltf, index).astype(np.float64)
            if attribute == "POSITION":
                values = values @ m[:3, :3].T + m[:3, 3]
            else:
                turned = values[:, :3] @ (normals if attribute == "NORMAL" else m[:3, :3]).T
                values[:, :3] = turned / np.linalg.norm(turned, axis=1, keepdims=True)
            setattr(primitive.attributes, attribute, add_accessor(gltf, values, "VEC{}".format(values.shape[1]),
                                                                  bounds=attribute == "POSITION"))


def scale_scene(gltf: pygltflib.GLTF2, factor: float) -> None:
    """The whole character made `factor` times its size (a child, a giant), as an exporter writes it: a
    new top node carries the scale, skinned vertices and inverse bind matrices follow."""
    m = np.eye(4)
    m[:3, :3] *= factor
    _transform_scene(gltf, m)


def wrap_armature(gltf: pygltflib.GLTF2, *, scale: float = 1.0, z_up: bool = False, ibm: str = "world") -> None:
    """Put the character under an armature node scaled by `scale` (and turned from Z-up when `z_up`)
    while it looks the same in the scene: every node below is re-expressed in the armature's units and
    axes (bone translations divided by the scale, as an exporter writes a centimetre rig). `ibm`:
    "world" (inverse bind matrices of the joints' scene transforms, as Blender writes them) or
    "armature" (relative to the armature node, vertices too; the armature places them in the scene)."""
    w = np.eye(4)
    w[:3, :3] = (quat_matrix(axis_angle_quat((1, 0, 0), -90.0)) if z_up else np.eye(3)) * scale
    inverse = np.linalg.inv(w)
    for node in gltf.nodes:
        if node.mesh is not None and not (node.children or []):
            local = inverse @ local_matrix(node)  # rigid meshes keep their scene place
        else:
            local = inverse @ local_matrix(node) @ w
        set_local_matrix(node, local)
    armature = pygltflib.Node(name="Armature", children=list(gltf.scenes[gltf.scene or 0].nodes))
    set_local_matrix(armature, w)
    gltf.nodes.append(armature)
    gltf.scenes[gltf.scene or 0].nodes = [len(gltf.nodes) - 1]
    for skin in gltf.skins:
        matrices = read_accessor(gltf, skin.inverseBindMatrices).astype(np.float64)
        matrices = inverse @ matrices if ibm == "world" else inverse @ matrices @ w
        skin.inverseBindMatrices = add_accessor(gltf, matrices, "MAT4")
    if ibm == "armature":
        _transform_vertices(gltf, inverse)


def rename(gltf: pygltflib.GLTF2, names) -> None:
    """Rename nodes: `names` is {old: new} or a function old -> new (return the name to keep it)."""
    for node in gltf.nodes:
        if node.name is None:
            continue
        node.name = names(node.name) if callable(names) else names.get(node.name, node.name)


_SIDE_SWAPS = ((r"\.L\b", ".R"), (r"\.R\b", ".L"), (r"_l$", "_r"), (r"_r$", "_l"), (r"^Left", "Right"),
               (r"^Right", "Left"), (r"Left", "Right"), (r"Right", "Left"), (r"(?<=[a-z0-9])L$", "R"), (r"(?<=[a-z0-9])R$", "L"),
               (r"_l_", "_r_"), (r"_r_", "_l_"), (r"-left", "-right"), (r"-right", "-left"), (r"_L_", "_R_"), (r"_R_", "_L_"))


def swap_side(name: str) -> str:
    """The name with its side word swapped (thigh_l <-> thigh_r, Foot.L <-> Foot.R, LeftArm <-> RightArm)."""
    for pattern, replacement in _SIDE_SWAPS:
        swapped, count = re.subn(pattern, replacement, name)
        if count:
            return swapped
    return name


def swap_side_names(gltf: pygltflib.GLTF2) -> None:
    """Viewer-side names: every left bone is called right and the other way round."""
    rename(gltf, swap_side)


def drop_joints(gltf: pygltflib.GLTF2, names: Iterable[str], weights_to: Optional[Dict[str, str]] = None) -> None:
    """Remove joints (and everything below them) from the rig: they leave the scene and every skin, and
    their vertices are weighted to the nearest kept ancestor joint (a forearm keeps its hand's mesh).
    `weights_to` ({joint: other joint}) moves the weights of kept joints too (a forearm no vertex follows)."""
    parent = parents(gltf)
    moved = {node_index(gltf, a): node_index(gltf, b) for a, b in (weights_to or {}).items()}
    drop = set()
    stack = [node_index(gltf, name) for name in names]
    while stack:
        node = stack.pop()
        drop.add(node)
        stack.extend(gltf.nodes[node].children or [])
    for index, node in enumerate(gltf.nodes):
        if node.children:
            node.children = [c for c in node.children if c not in drop]
    for scene in gltf.scenes:
        scene.nodes = [n for n in scene.nodes if n not in drop]
    remapped = {}
    for skin_index, skin in enumerate(gltf.skins):
        joints = list(skin.joints)
        kept = [j for j in joints if j not in drop]
        new_index = {}
        for k, j in enumerate(joints):
            target = j
            while target in drop:
                target = parent[target]
            target = moved.get(target, target)
            new_index[k] = kept.index(target) if target in kept else 0
        ibm = read_accessor(gltf, skin.inverseBindMatrices).astype(np.float64)
        skin.inverseBindMatrices = add_accessor(gltf, np.array([m for j, m in zip(joints, ibm) if j not in drop]), "MAT4")
        skin.joints = kept
        remapped[skin_index] = new_index
    done = set()
    for node in gltf.nodes:
        if node.mesh is None or node.skin is None:
            continue
        for primitive in gltf.meshes[node.mesh].primitives:
            for attribute in ("JOINTS_0", "JOINTS_1"):
                index = getattr(primitive.attributes, attribute, None)
                if index is None or index in done:
                    continue
                done.add(index)
                values = read_accessor(gltf, index)
                lookup = np.vectorize(lambda k: remapped[node.skin].get(int(k), 0))
                new = lookup(values).astype(values.dtype)
                setattr(primitive.attributes, attribute,
                        add_accessor(gltf, new, "VEC4", component=gltf.accessors[index].componentType))
    for node in sorted(drop, reverse=True):
        gltf.nodes[node].name = "dropped_" + (gltf.nodes[node].name or "")
        gltf.nodes[node].mesh = None if gltf.nodes[node].skin is None else gltf.nodes[node].mesh
    # Orphaned nodes stay in the list (indices keep), out of every scene and skin.


def add_helper_joint(gltf: pygltflib.GLTF2, name: str, parent_name: str, at_world: Sequence[float]) -> None:
    """A joint no vertex follows (an IK target, a pole), placed at `at_world` metres under `parent_name`,
    added to every skin that holds its parent."""
    parent = node_index(gltf, parent_name)
    world = world_matrices(gltf)
    local = np.linalg.inv(world[parent]) @ np.append(np.asarray(at_world, dtype=np.float64), 1.0)
    gltf.nodes.append(pygltflib.Node(name=name, translation=local[:3].tolist()))
    new = len(gltf.nodes) - 1
    gltf.nodes[parent].children = list(gltf.nodes[parent].children or []) + [new]
    offset = np.eye(4)
    offset[:3, 3] = local[:3]
    for skin in gltf.skins:
        if parent not in skin.joints:
            continue
        ibm = read_accessor(gltf, skin.inverseBindMatrices).astype(np.float64)
        bind = np.linalg.inv(ibm[list(skin.joints).index(parent)]) @ offset
        skin.joints = list(skin.joints) + [new]
        skin.inverseBindMatrices = add_accessor(gltf, np.concatenate([ibm, np.linalg.inv(bind)[None]]), "MAT4")


def footless_shins(gltf: pygltflib.GLTF2) -> None:
    """The mannequin's shins as leaf bones: its foot bones dropped, their mesh skinned to the shins."""
    drop_joints(gltf, ["foot_l", "foot_r"])


def shoes_in_a_skin_of_their_own(gltf: pygltflib.GLTF2) -> None:
    """The feet's mesh moved out of the body's into a mesh of its own with a skin of its own, as
    exporters that write one skin per mesh do (VRoid's body, hair and face; shoes as separate objects):
    the new skin lists only the shins, feet and balls, in another order than the body's, its inverse
    binds the same joints' binds; the body's mesh keeps no foot vertex."""
    node = next(n for n in gltf.nodes if n.mesh is not None and n.skin is not None)
    body = gltf.skins[node.skin]
    feet = ["ball_r", "foot_r", "calf_r", "ball_l", "foot_l", "calf_l"]
    foot_slots = {list(body.joints).index(node_index(gltf, name)) for name in ("foot_l", "ball_l", "foot_r", "ball_r")}
    body_ibm = read_accessor(gltf, body.inverseBindMatrices).astype(np.float64)
    new_slot = {list(body.joints).index(node_index(gltf, name)): k for k, name in enumerate(feet)}
    kept, shoes = [], []
    for primitive in gltf.meshes[node.mesh].primitives:
        a = primitive.attributes
        positions, joints, weights = (read_accessor(gltf, i) for i in (a.POSITION, a.JOINTS_0, a.WEIGHTS_0))
        triangles = read_accessor(gltf, primitive.indices).reshape(-1, 3)
        on_foot = (np.isin(joints, list(foot_slots)) * weights).sum(1) >= 0.5
        for mine, wanted in ((kept, ~on_foot), (shoes, on_foot)):
            chosen = triangles[wanted[triangles].all(1)]
            used = np.unique(chosen)
            if not len(used):
                continue
            renumber = np.full(len(positions), -1)
            renumber[used] = np.arange(len(used))
            slots = joints[used]
            if mine is shoes:
                slots = np.vectorize(lambda k: new_slot.get(int(k), 0))(slots) * (weights[used] > 0)
            attributes = pygltflib.Attributes(POSITION=add_accessor(gltf, positions[used], "VEC3", bounds=True),
                                              JOINTS_0=add_accessor(gltf, slots, "VEC4", component=5123),
                                              WEIGHTS_0=add_accessor(gltf, weights[used], "VEC4"))
            mine.append(pygltflib.Primitive(attributes=attributes, material=primitive.material,
                                            indices=add_accessor(gltf, renumber[chosen].reshape(-1, 1), "SCALAR", component=5125)))
    gltf.meshes[node.mesh].primitives = kept
    ibm = np.stack([body_ibm[list(body.joints).index(node_index(gltf, name))] for name in feet])
    gltf.skins.append(pygltflib.Skin(name="Shoes", joints=[node_index(gltf, name) for name in feet],
                                     inverseBindMatrices=add_accessor(gltf, ibm, "MAT4")))
    gltf.meshes.append(pygltflib.Mesh(name="Shoes", primitives=shoes))
    gltf.nodes.append(pygltflib.Node(name="Shoes", mesh=len(gltf.meshes) - 1, skin=len(gltf.skins) - 1))
    gltf.scenes[gltf.scene or 0].nodes.append(len(gltf.nodes) - 1)


def shield_on_the_left_forearm(gltf: pygltflib.GLTF2) -> None:
    """A prop the way Quaternius' Soldier carries one: a ShieldSlot joint at the middle of the left
    forearm (`lowerarm_l`), a 55 x 45 cm board skinned to it alone, out at the arm's left side and
    reaching 27 cm below it, below the fingertips where the arm hangs."""
    bind = bind_worlds(gltf)
    middle = (bind["lowerarm_l"][:3, 3] + bind["hand_l"][:3, 3]) / 2.0
    add_helper_joint(gltf, "ShieldSlot", "lowerarm_l", middle)
    node = next(n for n in gltf.nodes if n.mesh is not None and n.skin is not None)
    skin = gltf.skins[node.skin]
    slot = list(skin.joints).index(node_index(gltf, "ShieldSlot"))
    low, high = middle + [0.05, -0.275, -0.225], middle + [0.08, 0.275, 0.225]
    corners = np.array([[x, y, z] for x in (low[0], high[0]) for y in (low[1], high[1]) for z in (low[2], high[2])])
    faces = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1),
             (2, 3, 7), (2, 7, 6), (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)]
    attributes = {"POSITION": add_accessor(gltf, corners, "VEC3", bounds=True),
                  "JOINTS_0": add_accessor(gltf, np.tile([slot, 0, 0, 0], (8, 1)), "VEC4", component=5123),
                  "WEIGHTS_0": add_accessor(gltf, np.tile([1.0, 0.0, 0.0, 0.0], (8, 1)), "VEC4")}
    indices = add_accessor(gltf, np.array(faces).reshape(-1, 1), "SCALAR", component=5123)
    gltf.meshes[node.mesh].primitives.append(pygltflib.Primitive(attributes=pygltflib.Attributes(**attributes),
                                                                  indices=indices))


def add_unreal_ik_bones(gltf: pygltflib.GLTF2) -> None:
    """The Unreal mannequin's IK bones (no vertex follows them): ik_foot_root and ik_hand_root off `Root`,
    ik_foot_l/r at the feet and ik_hand_l/r at the hands under them."""
    world = world_matrices(gltf)
    at = {name: world[node_index(gltf, name)][:3, 3].tolist() for name in ("foot_l", "foot_r", "hand_l", "hand_r")}
    add_helper_joint(gltf, "ik_foot_root", "Root", [0.0, 0.0, 0.0])
    add_helper_joint(gltf, "ik_hand_root", "Root", [0.0, 0.0, 0.0])
    for s in "lr":
        add_helper_joint(gltf, "ik_foot_" + s, "ik_foot_root", at["foot_" + s])
        add_helper_joint(gltf, "ik_hand_" + s, "ik_hand_root", at["hand_" + s])


# VRM humanoid bone names of the canonical parts, for tables written onto test rigs.
VRM_BONES = ("hips", "spine", "chest", "upperChest", "neck", "head",
             "leftShoulder", "leftUpperArm", "leftLowerArm", "leftHand",
             "rightShoulder", "rightUpperArm", "rightLowerArm", "rightHand",
             "leftUpperLeg", "leftLowerLeg", "leftFoot", "leftToes",
             "rightUpperLeg", "rightLowerLeg", "rightFoot", "rightToes")

MANNEQUIN_VRM = {"hips": "pelvis", "spine": "spine_01", "chest": "spine_02", "upperChest": "spine_03", "neck": "neck_01",
                 "head": "head"}
for _side, _s in (("left", "l"), ("right", "r")):
    MANNEQUIN_VRM.update({_side + "Shoulder": "clavicle_" + _s, _side + "UpperArm": "upperarm_" + _s,
                          _side + "LowerArm": "lowerarm_" + _s, _side + "Hand": "hand_" + _s,
                          _side + "UpperLeg": "thigh_" + _s, _side + "LowerLeg": "calf_" + _s,
                          _side + "Foot": "foot_" + _s, _side + "Toes": "ball_" + _s})


def add_vrm_table(gltf: pygltflib.GLTF2, bones: Dict[str, str], version: int = 0) -> None:
    """The VRM humanoid table ({VRM bone: node name}): VRM 0.x `extensions.VRM.humanoid.humanBones` as a
    list of {bone, node}, VRM 1.0 `extensions.VRMC_vrm.humanoid.humanBones` as {bone: {node}}."""
    nodes = {bone: node_index(gltf, name) for bone, name in bones.items()}
    extensions = dict(gltf.extensions or {})
    if version == 0:
        extensions["VRM"] = {"specVersion": "0.0", "humanoid": {"humanBones": [{"bone": b, "node": n, "useDefaultValues": True}
                                                                                for b, n in nodes.items()]}}
        used = "VRM"
    else:
        extensions["VRMC_vrm"] = {"specVersion": "1.0", "humanoid": {"humanBones": {b: {"node": n} for b, n in nodes.items()}}}
        used = "VRMC_vrm"
    gltf.extensions = extensions
    gltf.extensionsUsed = sorted(set(gltf.extensionsUsed or []) | {used})


# Khronos CesiumMan's naming, on the mannequin's bones (its arms count down on the left, up on the right).
CESIUM_NAMES = {"pelvis": "Skeleton_torso_joint_1", "spine_01": "Skeleton_torso_joint_2", "spine_02": "torso_joint_3",
                "spine_03": "torso_joint_4", "neck_01": "Skeleton_neck_joint_1", "head": "Skeleton_neck_joint_2",
                "clavicle_l": "Skeleton_arm_joint_L__5_", "upperarm_l": "Skeleton_arm_joint_L__4_",
                "lowerarm_l": "Skeleton_arm_joint_L__3_", "hand_l": "Skeleton_arm_joint_L__2_",
                "clavicle_r": "Skeleton_arm_joint_R", "upperarm_r": "Skeleton_arm_joint_R__2_",
                "lowerarm_r": "Skeleton_arm_joint_R__3_", "hand_r": "Skeleton_arm_joint_R__4_",
                "thigh_l": "leg_joint_L_1", "calf_l": "leg_joint_L_2", "foot_l": "leg_joint_L_3", "ball_l": "leg_joint_L_5",
                "thigh_r": "leg_joint_R_1", "calf_r": "leg_joint_R_2", "foot_r": "leg_joint_R_3", "ball_r": "leg_joint_R_5"}


def cesium_like(gltf: pygltflib.GLTF2) -> None:
    """The mannequin as Khronos CesiumMan names its joints (fingers dropped: CesiumMan has none)."""
    fingers = [n.name for n in gltf.nodes if n.name and re.match(r"^(thumb|index|middle|ring|pinky)_01_[lr]$", n.name)]
    drop_joints(gltf, fingers)
    rename(gltf, CESIUM_NAMES)


def kenney_like(gltf: pygltflib.GLTF2) -> None:
    """The mannequin as Kenney's blocky characters are rigged: one bone per limb, shoulder to hand
    (`arm-left`) and hip to foot (`leg-left`), the rest of each limb's mesh weighted to it."""
    drop_joints(gltf, ["lowerarm_l", "lowerarm_r", "calf_l", "calf_r"])
    rename(gltf, {"upperarm_l": "arm-left", "upperarm_r": "arm-right", "thigh_l": "leg-left", "thigh_r": "leg-right",
                  "pelvis": "torso", "spine_01": "body"})


def copy_gltf(gltf: pygltflib.GLTF2) -> pygltflib.GLTF2:
    return copy.deepcopy(gltf)


def variant(path, tmp_path: Path, name: str, *builders: Callable[[pygltflib.GLTF2], None]) -> Path:
    """Load `path`, apply the builders in order, save as tmp_path/name."""
    gltf = load(path)
    for build in builders:
        build(gltf)
    return save(gltf, Path(tmp_path) / name)


def feet_mesh_moved(gltf: pygltflib.GLTF2, feet: Iterable[str], offset: Sequence[float]) -> None:
    """The vertices weighted most to the named foot joints (and the joints below them) moved by `offset`
    in the mesh's space, the bones left where they are: a foot mesh hanging off its bones, as Blender's
    importer leaves RobotExpressive's (its foot meshes 22 cm behind the ankles)."""
    parent = parents(gltf)
    named = {node_index(gltf, name) for name in feet}
    below = {n for n in range(len(gltf.nodes)) if any(a in named for a in _ancestry(parent, n))}
    done = set()
    for node in gltf.nodes:
        if node.mesh is None or node.skin is None:
            continue
        joints_of_skin = gltf.skins[node.skin].joints
        for primitive in gltf.meshes[node.mesh].primitives:
            key = (primitive.attributes.POSITION, primitive.attributes.JOINTS_0)
            if key in done:
                continue
            done.add(key)
            positions = read_accessor(gltf, primitive.attributes.POSITION).astype(np.float64)
            joints = read_accessor(gltf, primitive.attributes.JOINTS_0).astype(int)
            weights = read_accessor(gltf, primitive.attributes.WEIGHTS_0).astype(np.float64)
            top = joints[np.arange(len(joints)), np.argmax(weights, axis=1)]
            moved = np.array([joints_of_skin[j] in below for j in top])
            positions[moved] += np.asarray(offset, dtype=np.float64)
            primitive.attributes.POSITION = add_accessor(gltf, positions, "VEC3", bounds=True)


def _ancestry(parent: Sequence[int], node: int) -> List[int]:
    chain = [node]
    while parent[node] >= 0:
        node = parent[node]
        chain.append(node)
    return chain


# --- rig families as their exporters write them (Rigify, UE5, Character Creator, Daz, Mixamo, Unity) --------

def _skin_slots(gltf: pygltflib.GLTF2, node: int) -> List[tuple]:
    return [(skin, list(skin.joints).index(node)) for skin in gltf.skins if node in skin.joints]


def _add_joint_node(gltf: pygltflib.GLTF2, name: str, parent: int, world: np.ndarray) -> int:
    """A new joint node `name` under `parent` whose world (bind) matrix is `world`, in every skin that
    holds the parent (its inverse bind matrix from the parent's bind times the node's local transform)."""
    worlds = world_matrices(gltf)
    node = pygltflib.Node(name=name)
    set_local_matrix(node, np.linalg.inv(worlds[parent]) @ world)
    gltf.nodes.append(node)
    new = len(gltf.nodes) - 1
    gltf.nodes[parent].children = list(gltf.nodes[parent].children or []) + [new]
    local = local_matrix(node)
    for skin, slot in _skin_slots(gltf, parent):
        ibm = read_accessor(gltf, skin.inverseBindMatrices).astype(np.float64)
        bind = np.linalg.inv(ibm[slot]) @ local
        skin.joints = list(skin.joints) + [new]
        skin.inverseBindMatrices = add_accessor(gltf, np.concatenate([ibm, np.linalg.inv(bind)[None]]), "MAT4")
    return new


def reparent(gltf: pygltflib.GLTF2, name: str, new_parent: str) -> None:
    """Move a node under another, keeping where it stands in the scene."""
    node, parent = node_index(gltf, name), node_index(gltf, new_parent)
    worlds = world_matrices(gltf)
    for other in gltf.nodes:
        if other.children and node in other.children:
            other.children = [c for c in other.children if c != node]
    set_local_matrix(gltf.nodes[node], np.linalg.inv(worlds[parent]) @ worlds[node])
    gltf.nodes[parent].children = list(gltf.nodes[parent].children or []) + [node]


def move_weights(gltf: pygltflib.GLTF2, source: str, target: str, where: Callable[[np.ndarray], np.ndarray]) -> None:
    """The weights `source` carries on vertices whose bind-space position passes `where` ((n, 3) -> bool
    mask) go to `target` (both joints of the same skins)."""
    a, b = node_index(gltf, source), node_index(gltf, target)
    done = set()
    for node in gltf.nodes:
        if node.mesh is None or node.skin is None:
            continue
        joints_of_skin = list(gltf.skins[node.skin].joints)
        if a not in joints_of_skin or b not in joints_of_skin:
            continue
        slot_a, slot_b = joints_of_skin.index(a), joints_of_skin.index(b)
        for primitive in gltf.meshes[node.mesh].primitives:
            key = primitive.attributes.JOINTS_0
            if key in done:
                continue
            done.add(key)
            positions = read_accessor(gltf, primitive.attributes.POSITION).astype(np.float64)
            joints = read_accessor(gltf, key).astype(np.int64)
            chosen = where(positions)[:, None] & (joints == slot_a)
            joints[chosen] = slot_b
            component = 5123 if joints.max() > 255 else gltf.accessors[key].componentType
            primitive.attributes.JOINTS_0 = add_accessor(gltf, joints, "VEC4", component=component)


def insert_joint(gltf: pygltflib.GLTF2, name: str, bone: str, toward: str, fraction: float, *,
                 in_chain: bool = True, weights: bool = True) -> None:
    """A joint `fraction` of the way from `bone` to its child `toward`, turned as `bone` is. In the chain
    (Rigify's DEF-thigh.L.001, Daz's lThighTwist): `toward` hangs from it. Otherwise a leaf child lying
    along the bone (Unreal's thigh_twist_01_l). With `weights`, it carries the bone's vertices beyond it."""
    worlds = world_matrices(gltf)
    start, end = worlds[node_index(gltf, bone)], worlds[node_index(gltf, toward)]
    place = start.copy()
    place[:3, 3] = start[:3, 3] + fraction * (end[:3, 3] - start[:3, 3])
    _add_joint_node(gltf, name, node_index(gltf, bone), place)
    if in_chain:
        reparent(gltf, toward, name)
    if weights:
        move_weights(gltf, bone, name, _beyond(gltf, bone, toward, fraction))


def slide_joint(gltf: pygltflib.GLTF2, bone: str, toward: str, fraction: float) -> None:
    """The joint `bone` moved `fraction` of the way toward its child `toward`, its children left where they
    stand and its inverse bind matrix following it, the mesh and its weights as they were: one side's
    joint sitting elsewhere along a symmetric limb (Quaternius' robot's right shoulder joint lies 7 cm
    farther out than its left, its elbows mirror each other). The rig must be saved at its bind pose."""
    worlds = world_matrices(gltf)
    parent = parents(gltf)
    node = node_index(gltf, bone)
    moved = worlds[node].copy()
    moved[:3, 3] += fraction * (worlds[node_index(gltf, toward)][:3, 3] - worlds[node][:3, 3])
    set_local_matrix(gltf.nodes[node], np.linalg.inv(worlds[parent[node]]) @ moved)
    for child in gltf.nodes[node].children or []:
        set_local_matrix(gltf.nodes[child], np.linalg.inv(moved) @ worlds[child])
    for skin, slot in _skin_slots(gltf, node):
        ibm = read_accessor(gltf, skin.inverseBindMatrices).astype(np.float64)
        ibm[slot] = np.linalg.inv(np.linalg.inv(ibm[slot]) @ np.linalg.inv(worlds[node]) @ moved)
        skin.inverseBindMatrices = add_accessor(gltf, ibm, "MAT4")


def add_joint_above(gltf: pygltflib.GLTF2, name: str, bone: str, children: Sequence[str]) -> None:
    """A joint at `bone`'s place under it, the named children moved under it (Character Creator's
    CC_Base_Pelvis and Daz's pelvis between the hip and the thighs), carrying the bone's vertices below it."""
    bone_node = node_index(gltf, bone)
    place = world_matrices(gltf)[bone_node]
    _add_joint_node(gltf, name, bone_node, place)
    for child in children:
        reparent(gltf, child, name)
    skin = gltf.skins[0]
    ibm = read_accessor(gltf, skin.inverseBindMatrices).astype(np.float64)
    height = np.linalg.inv(ibm[list(skin.joints).index(bone_node)])[1, 3]
    move_weights(gltf, bone, name, lambda p: p[:, 1] < height)


def copy_tree(gltf: pygltflib.GLTF2, top: str, under: str, name: Callable[[str], str]) -> None:
    """An unskinned copy of the joint tree from `top` (each joint at its place, named by `name`) under
    the joint `under`: Rigify's ORG- bones beside the DEF- ones."""
    worlds = world_matrices(gltf)

    def copy(node: int, parent: int) -> None:
        new = _add_joint_node(gltf, name(gltf.nodes[node].name), parent, worlds[node])
        for child in list(gltf.nodes[node].children or []):
            if any(child in skin.joints for skin in gltf.skins):
                copy(child, new)

    copy(node_index(gltf, top), node_index(gltf, under))


def add_controls(gltf: pygltflib.GLTF2, controls: Sequence[tuple]) -> None:
    """Joints no vertex follows: (name, parent name, name of the joint whose place it takes), in order."""
    for name, parent, at in controls:
        add_helper_joint(gltf, name, parent, world_matrices(gltf)[node_index(gltf, at)][:3, 3].tolist())


def add_loose_joint(gltf: pygltflib.GLTF2, name: str, parent_name: str, world: np.ndarray, skin: int = 0) -> int:
    """A joint of skin `skin` under a node that is NOT a joint (the armature node): the root of a tree of
    its own beside the skeleton, as exporters write IK controls and prop slots off the armature."""
    parent = node_index(gltf, parent_name)
    node = pygltflib.Node(name=name)
    set_local_matrix(node, np.linalg.inv(world_matrices(gltf)[parent]) @ world)
    gltf.nodes.append(node)
    new = len(gltf.nodes) - 1
    gltf.nodes[parent].children = list(gltf.nodes[parent].children or []) + [new]
    record = gltf.skins[skin]
    ibm = read_accessor(gltf, record.inverseBindMatrices).astype(np.float64)
    record.joints = list(record.joints) + [new]
    record.inverseBindMatrices = add_accessor(gltf, np.concatenate([ibm, np.linalg.inv(world)[None]]), "MAT4")
    return new


def _at(world: np.ndarray, point) -> np.ndarray:
    place = np.eye(4)
    place[:3, :3] = world[:3, :3]
    place[:3, 3] = point
    return place


def feet_on_loose_controls(gltf: pygltflib.GLTF2) -> None:
    """Quaternius' medieval characters (Saxon, Soldier) as Blender exports them: each foot hangs from a
    FootControl bone off the armature, beside the body's tree (its own tree in the skin), with an
    IKLegPole that carries nothing; a helmet on a HelmetSlot bone off the armature carries the head's
    top. The constraints that held them to the legs and head are gone from the file."""
    worlds = world_matrices(gltf)
    for s in "lr":
        foot = worlds[node_index(gltf, "foot_" + s)]
        add_loose_joint(gltf, "FootControl_" + s, "mpfb_rig", _at(np.eye(4), [foot[0, 3], 0.0, foot[2, 3] - 0.05]))
        reparent(gltf, "foot_" + s, "FootControl_" + s)
        knee = worlds[node_index(gltf, "calf_" + s)]
        add_loose_joint(gltf, "IKLegPole_" + s, "mpfb_rig", _at(np.eye(4), knee[:3, 3] + [0.0, 0.0, 0.5]))
    head = worlds[node_index(gltf, "head")]
    add_loose_joint(gltf, "HelmetSlot", "mpfb_rig", _at(np.eye(4), head[:3, 3] + [0.0, 0.12, 0.02]))
    move_weights(gltf, "head", "HelmetSlot", lambda p: p[:, 1] > head[1, 3] + 0.1)


def controls_outnumber_bones(gltf: pygltflib.GLTF2) -> None:
    """A Mixamo-style character with a control rig exported beside it (Paladin from a Blender control-rig
    add-on): an unskinned Ctrl_ copy of the whole skeleton, and foot-roll controls, off the armature in
    the same skin; the control tree has more joints than the bones the mesh is skinned to."""
    worlds = world_matrices(gltf)
    add_loose_joint(gltf, "Ctrl_Master", "mpfb_rig", np.eye(4))
    copy_tree(gltf, "pelvis", "Ctrl_Master", lambda n: "Ctrl_" + n)
    for s in "lr":
        for k, extra in enumerate(("FootRoll", "HeelOut", "HeelIn", "ToeEnd")):
            _add_joint_node(gltf, "Ctrl_{}_{}".format(extra, s), node_index(gltf, "Ctrl_foot_" + s),
                            worlds[node_index(gltf, "foot_" + s)])


def rigid_parts(gltf: pygltflib.GLTF2) -> None:
    """The character as rigid parts with no skin at all (Kenney's platformer and mini characters, node
    animated): each skinned mesh split by the joint that carries each vertex most, each part a mesh on
    that joint's own node (triangles that span two parts are dropped); the skinned mesh nodes and the
    skins gone."""
    parts: Dict[int, List[pygltflib.Primitive]] = {}
    skinned = [i for i, node in enumerate(gltf.nodes) if node.mesh is not None and node.skin is not None]
    for index in skinned:
        node = gltf.nodes[index]
        skin = gltf.skins[node.skin]
        ibm = read_accessor(gltf, skin.inverseBindMatrices).astype(np.float64)
        for primitive in gltf.meshes[node.mesh].primitives:
            positions = read_accessor(gltf, primitive.attributes.POSITION).astype(np.float64)
            owner = np.argmax(read_accessor(gltf, primitive.attributes.WEIGHTS_0), axis=1)
            slots = read_accessor(gltf, primitive.attributes.JOINTS_0).astype(np.int64)[np.arange(len(positions)), owner]
            triangles = read_accessor(gltf, primitive.indices).astype(np.int64).reshape(-1, 3)
            for slot in np.unique(slots):
                keep = triangles[(slots[triangles] == slot).all(axis=1)]
                if not len(keep):
                    continue
                used = np.unique(keep)
                local = (ibm[slot] @ np.c_[positions[used], np.ones(len(used))].T).T[:, :3]
                remap = np.full(len(positions), -1)
                remap[used] = np.arange(len(used))
                parts.setdefault(skin.joints[slot], []).append(pygltflib.Primitive(
                    attributes=pygltflib.Attributes(POSITION=add_accessor(gltf, local, "VEC3", bounds=True)),
                    indices=add_accessor(gltf, remap[keep].reshape(-1, 1), "SCALAR", component=5125)))
    for joint, primitives in parts.items():
        gltf.meshes.append(pygltflib.Mesh(primitives=primitives))
        gltf.nodes[joint].mesh = len(gltf.meshes) - 1
    for index in skinned:  # the skinned mesh's node leaves the scene
        gltf.nodes[index].mesh = gltf.nodes[index].skin = None
        for other in gltf.nodes:
            if other.children and index in other.children:
                other.children = [c for c in other.children if c != index]
        for scene in gltf.scenes:
            scene.nodes = [n for n in scene.nodes if n != index]
    gltf.skins = []


def kenney_platformer_like(gltf: pygltflib.GLTF2) -> None:
    """The mannequin as Kenney's platformer characters are made: one-bone limbs (`kenney_like`), the legs
    and the `torso` carried by a `root` node at the floor, rigid parts on the nodes, no skin."""
    kenney_like(gltf)
    add_loose_joint(gltf, "root", "mpfb_rig", _at(np.eye(4), [0.0, 0.02, 0.0]))
    for name in ("torso", "leg-left", "leg-right"):
        reparent(gltf, name, "root")
    rigid_parts(gltf)
    gltf.nodes[node_index(gltf, "Root")].mesh = None  # the mannequin's box at its root bone: Kenney has none


# Kenney's platformer proportions, as measured on one of its characters (numbers of our own, no data of
# theirs): legs shorter than the hips are wide, each a block whose foot reaches as far ahead of the leg's
# column as the leg is long, arms held out, no head bone. Metres, node origins in the parent's frame.
BLOCK_LEG = 0.2  # the hip's height above the sole
BLOCK_HIPS_APART = 0.25
BLOCKS = {  # name: (parent, origin, [box (min corner, max corner) in the node's frame, ...])
    "root": ("character", (0.0, 0.02, 0.0), []),
    "torso": ("root", (0.0, 0.18, 0.0), [((-0.2, 0.0, -0.12), (0.2, 0.55, 0.12))]),
    "arm-left": ("torso", (0.22, 0.3, 0.0), [((0.0, -0.05, -0.05), (0.25, 0.05, 0.05))]),
    "arm-right": ("torso", (-0.22, 0.3, 0.0), [((-0.25, -0.05, -0.05), (0.0, 0.05, 0.05))]),
    "leg-left": ("root", (BLOCK_HIPS_APART / 2, 0.18, 0.0),
                 [((-0.075, -0.2, -0.075), (0.075, 0.1, 0.075)), ((-0.075, -0.2, 0.075), (0.075, -0.05, 0.15))]),
    "leg-right": ("root", (-BLOCK_HIPS_APART / 2, 0.18, 0.0),
                  [((-0.075, -0.2, -0.075), (0.075, 0.1, 0.075)), ((-0.075, -0.2, 0.075), (0.075, -0.05, 0.15))]),
}


def kenney_blocks(path) -> Path:
    """A character of Kenney's platformer kind made here from boxes (`BLOCKS`): rigid parts on nodes, no
    skin, one-bone limbs, its feet as long ahead of the leg as the leg is tall, the hips wider apart than
    the legs are long. Saved at `path`."""
    gltf = pygltflib.GLTF2()
    kenney_blocks_instead(gltf)
    return save(gltf, path)


def kenney_blocks_instead(gltf: pygltflib.GLTF2) -> None:
    """Replaces everything in `gltf` with the box character of `kenney_blocks` (a builder for the sweep,
    whose variants are built from a shared rig)."""
    gltf.__init__(scene=0, scenes=[pygltflib.Scene(nodes=[0])], nodes=[pygltflib.Node(name="character")],
                  buffers=[pygltflib.Buffer(byteLength=0)])
    gltf.set_binary_blob(b"")
    corners = np.array([[(i >> 0) & 1, (i >> 1) & 1, (i >> 2) & 1] for i in range(8)], dtype=np.float64)
    faces = [(0, 2, 1), (1, 2, 3), (4, 5, 6), (5, 7, 6), (0, 1, 4), (1, 5, 4),
             (2, 6, 3), (3, 6, 7), (0, 4, 2), (2, 4, 6), (1, 3, 5), (3, 7, 5)]
    index = {"character": 0}
    for name, (parent, origin, boxes) in BLOCKS.items():
        node = pygltflib.Node(name=name, translation=list(origin))
        if boxes:
            points = np.concatenate([np.asarray(low) + corners * (np.asarray(high) - np.asarray(low)) for low, high in boxes])
            triangles = np.concatenate([np.array(faces) + 8 * k for k in range(len(boxes))])
            gltf.meshes.append(pygltflib.Mesh(primitives=[pygltflib.Primitive(
                attributes=pygltflib.Attributes(POSITION=add_accessor(gltf, points, "VEC3", bounds=True)),
                indices=add_accessor(gltf, triangles.reshape(-1, 1), "SCALAR", component=5125))]))
            node.mesh = len(gltf.meshes) - 1
        gltf.nodes.append(node)
        index[name] = len(gltf.nodes) - 1
        holder = gltf.nodes[index[parent]]
        holder.children = list(holder.children or []) + [index[name]]


def end_bones_from_the_scene(gltf: pygltflib.GLTF2) -> None:
    """End bones as THREE.GLTFExporter adds them (a Quaternius knight re-exported from three.js): a `_end`
    joint under each foot, the head and the hands, in the skin, with an inverse bind matrix taken from the
    SCENE (the armature node's 100x scale and axis turn included) where the others are in armature space."""
    worlds = world_matrices(gltf)
    for name in ("FootL", "FootR", "Head", "HandL", "HandR"):
        if not any(node.name == name for node in gltf.nodes):
            continue
        parent = node_index(gltf, name)
        node = pygltflib.Node(name=name + "_end", translation=[0.0, 0.3, 0.0])
        gltf.nodes.append(node)
        new = len(gltf.nodes) - 1
        gltf.nodes[parent].children = list(gltf.nodes[parent].children or []) + [new]
        scene_world = worlds[parent] @ local_matrix(node)
        for skin in gltf.skins:
            if parent in skin.joints:
                ibm = read_accessor(gltf, skin.inverseBindMatrices).astype(np.float64)
                skin.joints = list(skin.joints) + [new]
                skin.inverseBindMatrices = add_accessor(gltf, np.concatenate([ibm, np.linalg.inv(scene_world)[None]]), "MAT4")


def long_end_bones(gltf: pygltflib.GLTF2, length: float = 0.8) -> None:
    """An end bone under every joint without a child joint, carrying no vertex, `length` m on along its
    bone (from its parent joint): as Blender's FBX exporter writes its leaf bones under an armature scaled
    by 100 (`head_end` 0.82 m from `head`). Named `<bone>.leaf`, no end marker's name."""
    worlds = world_matrices(gltf)
    parent = parents(gltf)
    joints = list(gltf.skins[0].joints)
    for node in [j for j in joints if not any(c in joints for c in (gltf.nodes[j].children or []))]:
        run = worlds[node][:3, 3] - worlds[parent[node]][:3, 3]
        _add_joint_node(gltf, gltf.nodes[node].name + ".leaf", node,
                        _at(worlds[node], worlds[node][:3, 3] + length * run / np.linalg.norm(run)))


def repeat_a_bone_name(gltf: pygltflib.GLTF2) -> None:
    """Two bones of one name (exporters that do not make names unique: a finger's end named as the other
    hand's): the left little finger's last joint named `index_03_r`."""
    gltf.nodes[node_index(gltf, "index_03_l")].name = "index_03_r"


_FINGER_WORDS = ("thumb", "index", "middle", "ring", "pinky")


def _mannequin_names(pattern: Callable[[str, str, str, int], str]) -> Dict[str, str]:
    """{mannequin bone: family's name} for the sided bones: pattern(part, side "l"/"r", finger or "", k)."""
    names = {}
    for s in "lr":
        for part in ("clavicle", "upperarm", "lowerarm", "hand", "thigh", "calf", "foot", "ball"):
            names[part + "_" + s] = pattern(part, s, "", 0)
        for finger in _FINGER_WORDS:
            for k in (1, 2, 3):
                names["{}_{:02d}_{}".format(finger, k, s)] = pattern("finger", s, finger, k)
    return names


RIGIFY_PARTS = {"clavicle": "shoulder", "upperarm": "upper_arm", "lowerarm": "forearm", "hand": "hand", "thigh": "thigh",
                "calf": "shin", "foot": "foot", "ball": "toe"}
RIGIFY_NAMES = {"Root": "root", "mpfb_rig": "rig", "pelvis": "DEF-spine", "spine_01": "DEF-spine.001",
                "spine_02": "DEF-spine.002", "spine_03": "DEF-spine.003", "neck_01": "DEF-spine.004", "head": "DEF-spine.006"}
RIGIFY_NAMES.update(_mannequin_names(lambda part, s, finger, k: "DEF-{}.{}".format(
    RIGIFY_PARTS[part] if part != "finger" else ("thumb" if finger == "thumb" else "f_" + finger) + ".{:02d}".format(k),
    s.upper())))


def rigify_like(gltf: pygltflib.GLTF2) -> None:
    """The mannequin as a Rigify GENERATED rig exported to glTF with all its bones: the skinned DEF- chain
    with its bendy segments (DEF-thigh.L.001, DEF-shin.L.001, DEF-upper_arm.L.001, DEF-forearm.L.001,
    DEF-spine.005 in the neck), an unskinned ORG- copy of every bone at the same places (no segments), the
    DEF- fingers hanging off the ORG- hand (as Rigify parents them, off its ORG- palms), and controls and
    mechanism bones no vertex follows (root, torso, hips, chest, neck, head, shoulder.L,
    thigh_fk.L .. toe.L, foot_ik.L, MCH-thigh_ik.L, thigh_parent.L, hand_ik.L, tweaks)."""
    copy_tree(gltf, "pelvis", "Root", lambda n: "ORG-" + RIGIFY_NAMES.get(n, n)[4:] if n in RIGIFY_NAMES else "ORG-" + n)
    _rigify_deform_chain(gltf)
    controls = [("torso", "root", "DEF-spine"), ("hips", "torso", "DEF-spine"), ("chest", "torso", "DEF-spine.003"),
                ("neck", "chest", "DEF-spine.004"), ("head", "neck", "DEF-spine.006"), ("MCH-torso.parent", "root", "DEF-spine")]
    for s in "LR":
        d = lambda bone: "DEF-{}.{}".format(bone, s)  # noqa: E731
        controls += [("shoulder." + s, "chest", d("shoulder")),
                     ("upper_arm_parent." + s, "shoulder." + s, d("upper_arm")),
                     ("upper_arm_fk." + s, "upper_arm_parent." + s, d("upper_arm")),
                     ("forearm_fk." + s, "upper_arm_fk." + s, d("forearm")), ("hand_fk." + s, "forearm_fk." + s, d("hand")),
                     ("MCH-upper_arm_ik." + s, "upper_arm_parent." + s, d("upper_arm")),
                     ("MCH-forearm_ik." + s, "MCH-upper_arm_ik." + s, d("forearm")),
                     ("upper_arm_ik." + s, "upper_arm_parent." + s, d("upper_arm")), ("hand_ik." + s, "root", d("hand")),
                     ("upper_arm_tweak." + s, "upper_arm_fk." + s, d("upper_arm")),
                     ("forearm_tweak." + s, "forearm_fk." + s, d("forearm")),
                     ("thigh_parent." + s, "hips", d("thigh")), ("thigh_fk." + s, "thigh_parent." + s, d("thigh")),
                     ("shin_fk." + s, "thigh_fk." + s, d("shin")), ("foot_fk." + s, "shin_fk." + s, d("foot")),
                     ("toe." + s, "foot_fk." + s, d("toe")), ("MCH-thigh_ik." + s, "thigh_parent." + s, d("thigh")),
                     ("MCH-shin_ik." + s, "MCH-thigh_ik." + s, d("shin")), ("thigh_ik." + s, "thigh_parent." + s, d("thigh")),
                     ("foot_ik." + s, "root", d("foot")), ("MCH-foot_roll." + s, "foot_ik." + s, d("foot")),
                     ("foot_heel_ik." + s, "foot_ik." + s, d("foot")), ("MCH-thigh_ik_target." + s, "foot_ik." + s, d("foot")),
                     ("thigh_tweak." + s, "thigh_fk." + s, d("thigh")), ("shin_tweak." + s, "shin_fk." + s, d("shin"))]
    add_controls(gltf, controls)
    # Rigify's DEF- fingers hang off ORG- bones (its palms), not off DEF-hand.L.
    for s in "LR":
        for finger in ("thumb", "f_index", "f_middle", "f_ring", "f_pinky"):
            reparent(gltf, "DEF-{}.01.{}".format(finger, s), "ORG-hand." + s)


def ue5_like(gltf: pygltflib.GLTF2) -> None:
    """The mannequin as Unreal 5's mannequin is rigged: spine_01..05 (clavicles off spine_05), neck_01/02,
    twist bones lying along each limb bone as its children (thigh_twist_01_l, calf_twist_01_l,
    upperarm_twist_01_l, lowerarm_twist_01_l, skinned to the bone's far half) and IK bones no vertex
    follows (ik_foot_root > ik_foot_l/r, ik_hand_root > ik_hand_gun > ik_hand_l/r)."""
    insert_joint(gltf, "spine_04", "spine_03", "neck_01", 1.0 / 3.0)
    insert_joint(gltf, "spine_05", "spine_04", "neck_01", 0.5)
    for s in "lr":
        reparent(gltf, "clavicle_" + s, "spine_05")
    insert_joint(gltf, "neck_02", "neck_01", "head", 0.5)
    for s in "lr":
        for bone, toward in (("thigh", "calf"), ("calf", "foot"), ("upperarm", "lowerarm"), ("lowerarm", "hand")):
            insert_joint(gltf, "{}_twist_01_{}".format(bone, s), "{}_{}".format(bone, s), "{}_{}".format(toward, s), 0.5,
                         in_chain=False)
    add_controls(gltf, [("ik_foot_root", "Root", "Root"), ("ik_foot_l", "ik_foot_root", "foot_l"),
                        ("ik_foot_r", "ik_foot_root", "foot_r"), ("ik_hand_root", "Root", "Root"),
                        ("ik_hand_gun", "ik_hand_root", "hand_r"), ("ik_hand_l", "ik_hand_gun", "hand_l"),
                        ("ik_hand_r", "ik_hand_gun", "hand_r")])


CC_PARTS = {"clavicle": "Clavicle", "upperarm": "Upperarm", "lowerarm": "Forearm", "hand": "Hand", "thigh": "Thigh",
            "calf": "Calf", "foot": "Foot", "ball": "ToeBase"}
CC_FINGERS = {"thumb": "Thumb", "index": "Index", "middle": "Mid", "ring": "Ring", "pinky": "Pinky"}
CC_NAMES = {"Root": "CC_Base_BoneRoot", "mpfb_rig": "Armature", "pelvis": "CC_Base_Hip", "spine_01": "CC_Base_Waist",
            "spine_02": "CC_Base_Spine01", "spine_03": "CC_Base_Spine02", "neck_01": "CC_Base_NeckTwist01",
            "head": "CC_Base_Head"}
CC_NAMES.update(_mannequin_names(lambda part, s, finger, k: "CC_Base_{}_{}".format(
    s.upper(), CC_PARTS[part] if part != "finger" else CC_FINGERS[finger] + str(k))))


def character_creator_like(gltf: pygltflib.GLTF2) -> None:
    """The mannequin as Character Creator / iClone exports it: CC_Base_ names, the thighs off CC_Base_Pelvis
    which sits under CC_Base_Hip beside the spine (CC_Base_Waist), CC_Base_NeckTwist01/02, and twist
    bones as children of each limb bone (CC_Base_L_ThighTwist01 at the hip carrying the thigh's upper
    half, ThighTwist02 its lower half, so the thigh bone itself carries no vertex; CalfTwist01/02,
    UpperarmTwist01/02, ForearmTwist01/02 alike)."""
    rename(gltf, CC_NAMES)
    add_joint_above(gltf, "CC_Base_Pelvis", "CC_Base_Hip", ["CC_Base_L_Thigh", "CC_Base_R_Thigh"])
    insert_joint(gltf, "CC_Base_NeckTwist02", "CC_Base_NeckTwist01", "CC_Base_Head", 0.5)
    for s in "LR":
        for bone, toward in (("Thigh", "Calf"), ("Calf", "Foot"), ("Upperarm", "Forearm"), ("Forearm", "Hand")):
            start, end = "CC_Base_{}_{}".format(s, bone), "CC_Base_{}_{}".format(s, toward)
            insert_joint(gltf, "CC_Base_{}_{}Twist02".format(s, bone), start, end, 0.5, in_chain=False)
            insert_joint(gltf, "CC_Base_{}_{}Twist01".format(s, bone), start, end, 0.0, in_chain=False)
        add_controls(gltf, [("CC_Base_{}_KneeShareBone".format(s), "CC_Base_{}_Calf".format(s), "CC_Base_{}_Calf".format(s)),
                            ("CC_Base_{}_ElbowShareBone".format(s), "CC_Base_{}_Forearm".format(s),
                             "CC_Base_{}_Forearm".format(s))])


DAZ_PARTS = {"clavicle": "Collar", "upperarm": "ShldrBend", "lowerarm": "ForearmBend", "hand": "Hand",
             "thigh": "ThighBend", "calf": "Shin", "foot": "Foot", "ball": "Toe"}
DAZ_FINGERS = {"thumb": "Thumb", "index": "Index", "middle": "Mid", "ring": "Ring", "pinky": "Pinky"}
DAZ_NAMES = {"Root": "Genesis8Female", "mpfb_rig": "Genesis8Female.Armature", "pelvis": "hip", "spine_01": "abdomenLower",
             "spine_02": "abdomenUpper", "spine_03": "chestLower", "neck_01": "neckLower", "head": "head"}
DAZ_NAMES.update(_mannequin_names(lambda part, s, finger, k: s + (DAZ_PARTS[part] if part != "finger"
                                                                  else DAZ_FINGERS[finger] + str(k))))


DAZ9_PARTS = {"clavicle": "shoulder", "upperarm": "upperarm", "lowerarm": "forearm", "hand": "hand", "thigh": "thigh",
              "calf": "shin", "foot": "foot", "ball": "toes"}
DAZ9_NAMES = {"Root": "Genesis9", "mpfb_rig": "Genesis9.Armature", "pelvis": "hip", "spine_01": "spine1",
              "spine_02": "spine2", "spine_03": "spine3", "neck_01": "neck1", "head": "head"}
DAZ9_NAMES.update(_mannequin_names(lambda part, s, finger, k: "{}_{}".format(
    s, DAZ9_PARTS[part] if part != "finger" else ("mid" if finger == "middle" else finger) + str(k))))


def _daz_trunk(gltf: pygltflib.GLTF2, thighs: Sequence[str], chest: Sequence[str], collars: Sequence[str],
               neck: Sequence[str]) -> None:
    """Daz's trunk on the renamed mannequin: a pelvis under the hip holding the thighs, an upper chest
    (chest = (lower chest, its new name, the neck above)) holding the collars, a second neck bone."""
    add_joint_above(gltf, "pelvis", "hip", thighs)
    insert_joint(gltf, chest[1], chest[0], chest[2], 0.5)
    for collar in collars:
        reparent(gltf, collar, chest[1])
    insert_joint(gltf, neck[1], neck[0], "head", 0.5)


def daz_genesis8_like(gltf: pygltflib.GLTF2) -> None:
    """The mannequin as Daz Genesis 8 is rigged: hip > pelvis > lThighBend > lThighTwist > lShin > lFoot >
    lMetatarsals > lToe; hip > abdomenLower > abdomenUpper > chestLower > chestUpper > neckLower > neckUpper >
    head; chestUpper > lCollar > lShldrBend > lShldrTwist > lForearmBend > lForearmTwist > lHand. The twist
    bones sit IN the chain, halfway, carrying the far half of the bone's vertices."""
    rename(gltf, DAZ_NAMES)
    _daz_trunk(gltf, ["lThighBend", "rThighBend"], ("chestLower", "chestUpper", "neckLower"), ["lCollar", "rCollar"],
               ("neckLower", "neckUpper"))
    for s in "lr":
        for bone, toward in (("ThighBend", "Shin"), ("ShldrBend", "ForearmBend"), ("ForearmBend", "Hand")):
            twist = s + bone.replace("Bend", "Twist")
            insert_joint(gltf, twist, s + bone, s + toward, 0.5)
        insert_joint(gltf, s + "Metatarsals", s + "Foot", s + "Toe", 0.5)


def daz_genesis9_like(gltf: pygltflib.GLTF2) -> None:
    """The mannequin as Daz Genesis 9 names it: hip > pelvis > l_thigh > l_shin > l_foot > l_toes,
    spine1..4, neck1/2, head, l_shoulder > l_upperarm > l_forearm > l_hand, twist bones l_thightwist1,
    l_upperarmtwist1, l_forearmtwist1 as children lying along their limb bone."""
    rename(gltf, DAZ9_NAMES)
    _daz_trunk(gltf, ["l_thigh", "r_thigh"], ("spine3", "spine4", "neck1"), ["l_shoulder", "r_shoulder"], ("neck1", "neck2"))
    for s in "lr":
        for bone, toward in (("thigh", "shin"), ("upperarm", "forearm"), ("forearm", "hand")):
            insert_joint(gltf, "{}_{}twist1".format(s, bone), "{}_{}".format(s, bone), "{}_{}".format(s, toward), 0.5,
                         in_chain=False)


def mixamo_prefix(prefix: str) -> Callable[[pygltflib.GLTF2], None]:
    """The Mixamo rig with `mixamorig:` replaced (`mixamorig1:`, `mixamorig2:` from a second download into
    one scene, "" as FBX converters that strip namespaces write it)."""
    return lambda gltf: rename(gltf, lambda n: prefix + n[len("mixamorig:"):] if n.startswith("mixamorig:") else n)


UNITY_NAMES = {"Hips": "Hips", "Spine": "Spine", "Spine1": "Chest", "Spine2": "UpperChest", "Neck": "Neck", "Head": "Head"}
for _side in ("Left", "Right"):
    UNITY_NAMES.update({_side + "Shoulder": _side + "Shoulder", _side + "Arm": _side + "UpperArm",
                        _side + "ForeArm": _side + "LowerArm", _side + "Hand": _side + "Hand",
                        _side + "UpLeg": _side + "UpperLeg", _side + "Leg": _side + "LowerLeg", _side + "Foot": _side + "Foot",
                        _side + "ToeBase": _side + "Toes"})
    for _finger in ("Thumb", "Index", "Middle", "Ring", "Pinky"):
        for _k, _word in enumerate(("Proximal", "Intermediate", "Distal"), 1):
            UNITY_NAMES["{}Hand{}{}".format(_side, _finger, _k)] = "{}{}{}".format(
                _side, "Little" if _finger == "Pinky" else _finger, _word)


def unity_humanoid_like(gltf: pygltflib.GLTF2) -> None:
    """The Mixamo rig named as Unity's humanoid avatar names its bones (HumanBodyBones: Hips, Spine, Chest,
    UpperChest, LeftUpperLeg, LeftLowerLeg, LeftToes, LeftUpperArm, LeftLowerArm, LeftIndexProximal ...),
    as a character saved from a Unity project carries them."""
    rename(gltf, lambda n: UNITY_NAMES.get(n[len("mixamorig:"):], n) if n.startswith("mixamorig:") else n)


def rigify_split_like(gltf: pygltflib.GLTF2) -> None:
    """A Rigify rig whose deform bones are not one tree (as older Rigify generates them): the DEF- thighs
    and shoulders hang off the ORG- spine, so the skinned DEF- spine is on a branch of its own."""
    rigify_like(gltf)
    for s in "LR":
        reparent(gltf, "DEF-thigh." + s, "ORG-spine")
        reparent(gltf, "DEF-shoulder." + s, "ORG-spine.003")


BIPED_PARTS = {"clavicle": "Clavicle", "upperarm": "UpperArm", "lowerarm": "Forearm", "hand": "Hand", "thigh": "Thigh",
               "calf": "Calf", "foot": "Foot", "ball": "Toe0"}
BIPED_NAMES = {"Root": "Bip01", "mpfb_rig": "Biped", "pelvis": "Bip01 Pelvis", "spine_01": "Bip01 Spine",
               "spine_02": "Bip01 Spine1", "spine_03": "Bip01 Spine2", "neck_01": "Bip01 Neck", "head": "Bip01 Head"}
BIPED_NAMES.update(_mannequin_names(lambda part, s, finger, k: "Bip01 {} {}".format(
    s.upper(), BIPED_PARTS[part] if part != "finger" else "Finger{}{}".format(
        _FINGER_WORDS.index(finger), "" if k == 1 else k - 1))))


def biped_like(gltf: pygltflib.GLTF2) -> None:
    """The mannequin as 3ds Max's Biped (Character Studio) names and parents it: `Bip01 L Thigh` with a
    space, the thighs off `Bip01 Spine` (not the pelvis), the clavicles off `Bip01 Neck`, fingers
    `Bip01 L Finger0` (thumb) .. `Finger4` (pinky) with their joints `Finger01`, `Finger02`, and an unskinned
    `Bip01 Footsteps` under the root."""
    rename(gltf, BIPED_NAMES)
    for s in "LR":
        reparent(gltf, "Bip01 {} Thigh".format(s), "Bip01 Spine")
        reparent(gltf, "Bip01 {} Clavicle".format(s), "Bip01 Neck")
    add_controls(gltf, [("Bip01 Footsteps", "Bip01", "Bip01")])


ARP_PARTS = {"clavicle": "shoulder", "upperarm": "arm_stretch", "lowerarm": "forearm_stretch", "hand": "hand",
             "thigh": "thigh_stretch", "calf": "leg_stretch", "foot": "foot", "ball": "toes_01"}
ARP_NAMES = {"Root": "c_traj", "mpfb_rig": "rig", "pelvis": "root.x", "spine_01": "spine_01.x", "spine_02": "spine_02.x",
             "spine_03": "spine_03.x", "neck_01": "neck.x", "head": "head.x"}
ARP_NAMES.update(_mannequin_names(lambda part, s, finger, k: "{}.{}".format(
    ARP_PARTS[part] if part != "finger" else "{}{}".format(finger, k), s)))


def auto_rig_pro_like(gltf: pygltflib.GLTF2) -> None:
    """The mannequin as Auto-Rig Pro's game-engine export names it: `.x` on the centre bones (`root.x` is the
    hips, `spine_01.x`, `neck.x`, `head.x`), the limbs' deforming `_stretch` bones (`thigh_stretch.l`,
    `leg_stretch.l` = the shin, `arm_stretch.l`, `forearm_stretch.l`), `toes_01.l`, and the `_twist` bones at
    the start of each limb bone as its children, carrying its upper half (`thigh_twist.l`, `leg_twist.l`,
    `arm_twist.l`, `forearm_twist.l`)."""
    rename(gltf, ARP_NAMES)
    for s in "lr":
        for bone, toward in (("thigh", "leg"), ("leg", "foot"), ("arm", "forearm"), ("forearm", "hand")):
            start = "{}_stretch.{}".format(bone, s)
            end = "{}{}.{}".format(toward, "" if toward in ("foot", "hand") else "_stretch", s)
            insert_joint(gltf, "{}_twist.{}".format(bone, s), start, end, 0.0, in_chain=False)
            move_weights(gltf, "{}_twist.{}".format(bone, s), start, _beyond(gltf, start, end, 0.5))


def _beyond(gltf: pygltflib.GLTF2, bone: str, toward: str, fraction: float) -> Callable[[np.ndarray], np.ndarray]:
    """Vertices further than `fraction` of the way from `bone` to `toward` (bind space)."""
    skin = gltf.skins[0]
    ibm = read_accessor(gltf, skin.inverseBindMatrices).astype(np.float64)
    head = np.linalg.inv(ibm[list(skin.joints).index(node_index(gltf, bone))])[:3, 3]
    tail = np.linalg.inv(ibm[list(skin.joints).index(node_index(gltf, toward))])[:3, 3]
    axis = tail - head
    return lambda p: (p - head) @ axis / (axis @ axis) > fraction


# --- issue 39: exporters' decorations, joint trees split at the armature, names that say nothing, a quadruped --

def add_joints(gltf: pygltflib.GLTF2, joints: Sequence[tuple]) -> None:
    """Many joints no vertex follows, added in one pass (Rigify's hundreds of controls): (name, parent name,
    a world point (the joint turned as its parent) or a 4x4 world matrix), in order; a parent may be one
    added before. Each joins every skin that holds its parent, its bind the parent's bind times its local."""
    world = dict(enumerate(world_matrices(gltf)))
    index: Dict[str, int] = {}
    for k, node in enumerate(gltf.nodes):
        index.setdefault(node.name, k)
    binds = [{j: np.linalg.inv(m) for j, m in zip(skin.joints, read_accessor(gltf, skin.inverseBindMatrices).astype(np.float64))}
             for skin in gltf.skins]
    added: List[List[int]] = [[] for _ in gltf.skins]
    for name, parent_name, at in joints:
        parent = index[parent_name]
        at = np.asarray(at, dtype=np.float64)
        if at.shape == (4, 4):
            local = np.linalg.inv(world[parent]) @ at
        else:
            local = np.eye(4)
            local[:3, 3] = (np.linalg.inv(world[parent]) @ np.append(at, 1.0))[:3]
        node = pygltflib.Node(name=name)
        set_local_matrix(node, local)
        gltf.nodes.append(node)
        new = len(gltf.nodes) - 1
        index.setdefault(name, new)
        gltf.nodes[parent].children = list(gltf.nodes[parent].children or []) + [new]
        world[new] = world[parent] @ local_matrix(node)
        for k, bind in enumerate(binds):
            if parent in bind:
                bind[new] = bind[parent] @ local_matrix(node)
                added[k].append(new)
    for skin, bind, new in zip(gltf.skins, binds, added):
        if new:
            ibm = read_accessor(gltf, skin.inverseBindMatrices).astype(np.float64)
            skin.joints = list(skin.joints) + new
            skin.inverseBindMatrices = add_accessor(gltf, np.concatenate([ibm, np.linalg.inv([bind[j] for j in new])]), "MAT4")


_BOX_FACES = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1),
              (2, 3, 7), (2, 7, 6), (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)]


def add_skinned_box(gltf: pygltflib.GLTF2, joint: str, low: Sequence[float], high: Sequence[float]) -> None:
    """An axis-aligned box (bind-space corners) in the first skinned mesh, weighted wholly to `joint`
    (hair, a skirt's panel: mesh that secondary bones carry)."""
    node = next(n for n in gltf.nodes if n.mesh is not None and n.skin is not None)
    slot = list(gltf.skins[node.skin].joints).index(node_index(gltf, joint))
    corners = np.array([[x, y, z] for x in (low[0], high[0]) for y in (low[1], high[1]) for z in (low[2], high[2])])
    attributes = {"POSITION": add_accessor(gltf, corners, "VEC3", bounds=True),
                  "JOINTS_0": add_accessor(gltf, np.tile([slot, 0, 0, 0], (8, 1)), "VEC4", component=5123),
                  "WEIGHTS_0": add_accessor(gltf, np.tile([1.0, 0.0, 0.0, 0.0], (8, 1)), "VEC4")}
    indices = add_accessor(gltf, np.array(_BOX_FACES).reshape(-1, 1), "SCALAR", component=5123)
    gltf.meshes[node.mesh].primitives.append(pygltflib.Primitive(attributes=pygltflib.Attributes(**attributes),
                                                                  indices=indices))


def _everything(_points: np.ndarray) -> np.ndarray:
    return np.ones(len(_points), dtype=bool)


def _place(gltf: pygltflib.GLTF2, name: str) -> np.ndarray:
    return world_matrices(gltf)[node_index(gltf, name)][:3, 3].copy()


def suffix_node_indices(gltf: pygltflib.GLTF2, pad: int = 2) -> None:
    """Every named node gets `_<its node index>` (zero-padded to `pad` digits), as Sketchfab's re-export
    names them (`mixamorig:LeftLeg_02`, `Bip01 L Thigh_46`)."""
    for k, node in enumerate(gltf.nodes):
        if node.name is not None:
            node.name = "{}_{}".format(node.name, str(k).zfill(pad))


def sketchfab_like(gltf: pygltflib.GLTF2, *, centimetres: bool = False, pad: int = 2) -> None:
    """The character as Sketchfab re-exports it: every node name suffixed with its index
    (`suffix_node_indices`), the skeleton under `Sketchfab_model` > `RootNode` > the armature >
    `GLTF_created_0` > `GLTF_created_0_rootJoint` (a joint of the skin, at the armature's origin, above the
    rig's top joint; the skinned mesh beside it under GLTF_created_0). Scales: `Sketchfab_model` turns Z-up
    to Y-up and `RootNode` scales by 0.01 while the armature inside scales by 100 (the pair cancels, the bone
    translations stay in metres); with `centimetres`, the rig itself is in centimetres and Z-up under a 0.01
    `Sketchfab_model` (its inverse bind matrices re-expressed, `wrap_armature`). The bind shape is the
    original's either way."""
    suffix_node_indices(gltf, pad)
    armature = gltf.scenes[gltf.scene or 0].nodes[0]
    created = pygltflib.Node(name="GLTF_created_0", children=list(gltf.nodes[armature].children or []))
    gltf.nodes.append(created)
    gltf.nodes[armature].children = [len(gltf.nodes) - 1]
    skin = gltf.skins[0]
    parent = parents(gltf)
    tops = [j for j in skin.joints if parent[j] not in skin.joints]
    add_joints(gltf, [("GLTF_created_0_rootJoint", "GLTF_created_0", world_matrices(gltf)[len(gltf.nodes) - 1])])
    root_joint = len(gltf.nodes) - 1
    if root_joint not in skin.joints:  # GLTF_created_0 holds no joint: add it to the skin by hand
        ibm = read_accessor(gltf, skin.inverseBindMatrices).astype(np.float64)
        skin.joints = list(skin.joints) + [root_joint]
        bind = world_matrices(gltf)[root_joint]
        skin.inverseBindMatrices = add_accessor(gltf, np.concatenate([ibm, np.linalg.inv(bind)[None]]), "MAT4")
    created.children = [c for c in created.children if c not in tops]
    gltf.nodes[root_joint].children = list(tops)  # the root joint is at the armature's origin: locals keep
    if centimetres:
        wrap_armature(gltf, scale=0.01, z_up=True)
        top = gltf.scenes[gltf.scene or 0].nodes[0]
        gltf.nodes[top].name = "Sketchfab_model"
        root = pygltflib.Node(name="RootNode", children=list(gltf.nodes[top].children))
        gltf.nodes.append(root)
        gltf.nodes[top].children = [len(gltf.nodes) - 1]
        return
    z_up, back = np.eye(4), np.eye(4)
    z_up[:3, :3] = quat_matrix(axis_angle_quat((1, 0, 0), -90.0))
    back[:3, :3] = quat_matrix(axis_angle_quat((1, 0, 0), 90.0)) * 0.01
    model = pygltflib.Node(name="Sketchfab_model")
    set_local_matrix(model, z_up)
    root = pygltflib.Node(name="RootNode", children=[armature])
    set_local_matrix(root, back)
    gltf.nodes += [model, root]
    model.children = [len(gltf.nodes) - 1]
    gltf.scenes[gltf.scene or 0].nodes = [len(gltf.nodes) - 2]
    set_local_matrix(gltf.nodes[armature], np.linalg.inv(z_up @ back) @ local_matrix(gltf.nodes[armature]))


def sketchfab_mixamo(gltf: pygltflib.GLTF2) -> None:
    """A Mixamo character re-exported by Sketchfab from an FBX whose namespace was dropped: `LeftLeg_02` is
    the shin, `LeftUpLeg_03` the thigh; the 0.01 / 100 scale pair."""
    mixamo_prefix("")(gltf)
    sketchfab_like(gltf)


def sketchfab_biped(gltf: pygltflib.GLTF2) -> None:
    """A 3ds Max Biped character re-exported by Sketchfab: `Bip01 L Thigh_46`, the rig in centimetres, Z-up,
    under a 0.01 `Sketchfab_model`."""
    biped_like(gltf)
    sketchfab_like(gltf, centimetres=True, pad=0)


def sketchfab_biped_underscores(gltf: pygltflib.GLTF2) -> None:
    """The same with the spaces written as underscores (`Bip01_L_Thigh_46`), the 0.01 / 100 scale pair."""
    biped_like(gltf)
    rename(gltf, lambda n: n.replace(" ", "_"))
    sketchfab_like(gltf, pad=0)


def _rigify_deform_chain(gltf: pygltflib.GLTF2) -> None:
    """The mannequin's bones under Rigify's DEF- names with its bendy segments (DEF-thigh.L.001, ...,
    DEF-spine.005 in the neck)."""
    rename(gltf, RIGIFY_NAMES)
    insert_joint(gltf, "DEF-spine.005", "DEF-spine.004", "DEF-spine.006", 0.5)
    for s in "LR":
        for bone, toward in (("thigh", "shin"), ("shin", "foot"), ("upper_arm", "forearm"), ("forearm", "hand")):
            insert_joint(gltf, "DEF-{}.{}.001".format(bone, s), "DEF-{}.{}".format(bone, s), "DEF-{}.{}".format(toward, s), 0.5)


RIGIFY_CHAIN_TOPS = ["DEF-spine", "DEF-spine.004"] + ["DEF-{}.{}".format(bone, s) for s in "LR" for bone in (
    "shoulder", "upper_arm", "thigh", "thumb.01", "f_index.01", "f_middle.01", "f_ring.01", "f_pinky.01")]


def rigify_deform_only(gltf: pygltflib.GLTF2) -> None:
    """A Rigify rig exported with "deform bones only" (the usual game export): only DEF- bones, with their
    `.001` bendy segments; each DEF- chain whose parent was an ORG- or MCH- bone (the torso DEF-spine ..
    .003, the neck and head DEF-spine.004 .. .006 of Rigify's head rig, each shoulder, upper arm, thigh and
    finger) hangs off the armature node `rig`, which is no joint: 18 joint trees, the largest a leg."""
    _rigify_deform_chain(gltf)
    for top in RIGIFY_CHAIN_TOPS:
        reparent(gltf, top, "rig")
    move_weights(gltf, "root", "DEF-spine", _everything)
    drop_joints(gltf, ["root"])


# Rigify's face and finger and limb mechanism, as the generated rig of its human metarig carries them (names
# in its style, places of our own): with rigify_like's bones, about 700.
_RIGIFY_FACE = ("lip.T", "lip.B", "lid.T", "lid.B", "brow.T", "brow.B", "cheek.T", "cheek.B", "nose", "ear", "jaw",
                "chin", "temple", "forehead")
_RIGIFY_FINGER_EXTRAS = ("{f}.01_master.{s}", "MCH-{f}.01.drv.{s}", "{f}.01.{s}", "{f}.02.{s}", "{f}.03.{s}",
                         "{f}.01.{s}.001", "{f}.03.{s}.001", "MCH-{f}.02.{s}")
_RIGIFY_LIMB_EXTRAS = ("VIS_{b}_ik_pole.{s}", "{b}_ik_target.{s}", "MCH-{b}_parent_socket.{s}", "MCH-{b}_tweak.{s}",
                       "MCH-{b}_ik_swing.{s}", "MCH-{b}_ik_stretch.{s}", "{b}_ik.{s}.001", "MCH-{b}_parent_widget.{s}",
                       "{b}_tweak.{s}.001", "MCH-{b}_tweak.{s}.001", "MCH-{b}_fk.{s}", "MCH-{b}_ik_end.{s}")


def rigify_all_bones(gltf: pygltflib.GLTF2) -> None:
    """A Rigify generated rig exported with all its bones (about 700): rigify_like's DEF- chain, ORG- copy,
    controls and mechanism, plus the face (ORG-, DEF-, MCH- and control bones around the head), the fingers'
    controls and drivers, the limbs' IK and tweak mechanism and the spine's tweaks. Only the DEF- body
    chain carries vertices."""
    rigify_like(gltf)
    head, neck = _place(gltf, "DEF-spine.006"), _place(gltf, "DEF-spine.004")
    centre = head + np.array([0.0, 0.09, 0.02])
    extra = [("ORG-face", "ORG-spine.006", centre)]
    k = 0
    for word in _RIGIFY_FACE:
        for s in ("L", "R"):
            for n in range(3):
                angle = np.radians(10 + 24 * n) * (1 if s == "L" else -1)
                height = 0.06 * np.sin(k * 0.7)
                at = centre + [0.08 * np.sin(angle), height, 0.08 * np.cos(angle)]
                name = "{}.{}{}".format(word, s, "" if n == 0 else ".{:03d}".format(n))
                extra += [("ORG-" + name, "ORG-face", at), ("DEF-" + name, "ORG-" + name, at),
                          ("MCH-" + name, "ORG-face", at), (name, "MCH-" + name, at)]
                k += 1
    for s in "LR":
        for finger in ("thumb", "f_index", "f_middle", "f_ring", "f_pinky"):
            at = _place(gltf, "DEF-{}.01.{}".format(finger, s))
            extra.append(("ORG-palm.{}.{}".format(finger, s), "ORG-hand." + s, at))
            extra += [(pattern.format(f=finger, s=s), "ORG-hand." + s, at) for pattern in _RIGIFY_FINGER_EXTRAS]
        for bone, parent in (("upper_arm", "upper_arm_parent."), ("forearm", "forearm_fk."), ("thigh", "thigh_parent."),
                             ("shin", "shin_fk.")):
            at = _place(gltf, "DEF-{}.{}".format(bone, s))
            extra += [(pattern.format(b=bone, s=s), parent + s, at) for pattern in _RIGIFY_LIMB_EXTRAS]
    for k, bone in enumerate(("DEF-spine", "DEF-spine.001", "DEF-spine.002", "DEF-spine.003", "DEF-spine.004",
                              "DEF-spine.005", "DEF-spine.006")):
        at = _place(gltf, bone)
        suffix = "" if k == 0 else ".{:03d}".format(k)
        extra += [("tweak_spine" + suffix, "torso", at), ("MCH-spine" + suffix, "torso", at),
                  ("MCH-WGT-spine" + suffix, "root", at)]
    extra.append(("MCH-neck_bend", "neck", (head + neck) / 2))
    add_joints(gltf, extra)


_FULL_WIDTH = "０１２３"
MMD_PARTS = {"clavicle": "肩", "upperarm": "腕", "lowerarm": "ひじ", "hand": "手首", "thigh": "足", "calf": "ひざ",
             "foot": "足首", "ball": "つま先"}
MMD_FINGERS = {"thumb": "親指", "index": "人指", "middle": "中指", "ring": "薬指", "pinky": "小指"}
MMD_NAMES = {"Root": "全ての親", "mpfb_rig": "ミク_arm", "pelvis": "腰", "spine_01": "上半身", "spine_02": "上半身2",
             "spine_03": "上半身3", "neck_01": "首", "head": "頭"}
MMD_NAMES.update(_mannequin_names(lambda part, s, finger, k: ("左" if s == "l" else "右") + (
    MMD_PARTS[part] if part != "finger" else MMD_FINGERS[finger] + _FULL_WIDTH[k - 1 if finger == "thumb" else k])))


def mmd_like(gltf: pygltflib.GLTF2) -> None:
    """The mannequin as an MMD / PMX model imports (Japanese names): 全ての親 > センター > グルーブ (below
    the hips) > 腰 (the hips) > 上半身 > 上半身2 > 上半身3 > 首 > 頭, and 腰 > 下半身 holding the legs
    (左足 > 左ひざ > 左足首 > 左つま先, 左肩 > 左腕 > 左ひじ > 左手首, fingers 左親指０ ...). The legs' mesh is
    on the deform chains beside them (下半身 > 左足D > 左ひざD > 左足首D > 左足先EX), which the FK chain
    drove through MMD's append-rotation (lost in glTF): the FK legs carry no vertex. IK bones under the
    root (左足ＩＫ at the ankle > 左つま先ＩＫ at the toe's floor) and eyes (両目, 左目, 右目) carry none."""
    rename(gltf, MMD_NAMES)
    add_joint_above(gltf, "下半身", "腰", ["左足", "右足"])
    hips = _place(gltf, "腰")
    centre = hips * [1.0, 0.7, 1.0]
    add_joints(gltf, [("センター", "全ての親", centre), ("グルーブ", "センター", centre)])
    reparent(gltf, "腰", "グルーブ")
    world = world_matrices(gltf)
    extra = []
    for side in "左右":
        at = {part: world[node_index(gltf, side + part)] for part in ("足", "ひざ", "足首", "つま先")}
        extra += [(side + "足D", "下半身", at["足"]), (side + "ひざD", side + "足D", at["ひざ"]),
                  (side + "足首D", side + "ひざD", at["足首"]), (side + "足先EX", side + "足首D", at["つま先"]),
                  (side + "足ＩＫ", "全ての親", at["足首"][:3, 3]),
                  (side + "つま先ＩＫ", side + "足ＩＫ", at["つま先"][:3, 3] * [1.0, 0.0, 1.0])]
    head = _place(gltf, "頭")
    extra += [("両目", "頭", head + [0.0, 0.1, 0.08]), ("左目", "頭", head + [0.03, 0.08, 0.08]),
              ("右目", "頭", head + [-0.03, 0.08, 0.08])]
    add_joints(gltf, extra)
    for side in "左右":
        for fk, deform in (("足", "足D"), ("ひざ", "ひざD"), ("足首", "足首D"), ("つま先", "足先EX")):
            move_weights(gltf, side + fk, side + deform, _everything)


VROID_PARTS = {"clavicle": "Shoulder", "upperarm": "UpperArm", "lowerarm": "LowerArm", "hand": "Hand",
               "thigh": "UpperLeg", "calf": "LowerLeg", "foot": "Foot", "ball": "ToeBase"}
VROID_FINGERS = {"thumb": "Thumb", "index": "Index", "middle": "Middle", "ring": "Ring", "pinky": "Little"}
VROID_NAMES = {"Root": "Root", "mpfb_rig": "Armature", "pelvis": "J_Bip_C_Hips", "spine_01": "J_Bip_C_Spine",
               "spine_02": "J_Bip_C_Chest", "spine_03": "J_Bip_C_UpperChest", "neck_01": "J_Bip_C_Neck",
               "head": "J_Bip_C_Head"}
VROID_NAMES.update(_mannequin_names(lambda part, s, finger, k: "J_Bip_{}_{}".format(
    s.upper(), VROID_PARTS[part] if part != "finger" else VROID_FINGERS[finger] + str(k))))


def vroid_names(gltf: pygltflib.GLTF2) -> None:
    """The mannequin as a VRoid avatar names its bones, saved as a plain .glb (no VRM table): J_Bip_C_Hips,
    J_Bip_L_UpperLeg, J_Bip_L_UpperArm ..., with J_Sec_ secondary bones that carry mesh: six hair strands
    from the head down the back to the shoulders (J_Sec_Hair1_01 > J_Sec_Hair2_01 > J_Sec_Hair3_01), a skirt
    of eight two-bone chains from the hips to above the knees (J_Sec_L_SkirtBack0_01 > ..1_01), the bust
    (J_Sec_L_Bust1 > J_Sec_L_Bust2); and J_Adj_ eye bones carrying nothing."""
    rename(gltf, VROID_NAMES)
    head, hips = _place(gltf, "J_Bip_C_Head"), _place(gltf, "J_Bip_C_Hips")
    knee = _place(gltf, "J_Bip_L_LowerLeg")
    chest = _place(gltf, "J_Bip_C_UpperChest")
    chains = []  # (names, parent, points: one more than names)
    for k in range(6):
        x = -0.075 + 0.03 * k
        top = head + [x, 0.1, -0.06]
        chains.append((["J_Sec_Hair{}_{:02d}".format(n, k + 1) for n in (1, 2, 3)], "J_Bip_C_Head",
                       [top + [0.0, -0.1 * n, -0.03 * n] for n in range(4)]))
    for side, sx in (("L", 1.0), ("R", -1.0)):
        for place, (dx, dz) in (("Front", (0.07, 0.11)), ("Side", (0.15, 0.0)), ("Back", (0.07, -0.11)),
                                ("SideBack", (0.12, -0.07))):
            top = hips + [sx * dx, 0.02, dz]
            bottom_y = knee[1] + 0.1
            chains.append((["J_Sec_{}_Skirt{}{}_01".format(side, place, n) for n in (0, 1)], "J_Bip_C_Hips",
                           [top + [sx * 0.02 * n, (bottom_y - top[1]) * n / 2, 0.02 * n * np.sign(dz)] for n in range(3)]))
        front = chest + [sx * 0.09, -0.05, 0.08]
        chains.append((["J_Sec_{}_Bust{}".format(side, n) for n in (1, 2)], "J_Bip_C_UpperChest",
                       [front, front + [0.0, 0.0, 0.06], front + [0.0, 0.0, 0.1]]))
    extra = []
    for names, parent, points in chains:
        extra += [(name, above, point) for name, above, point in zip(names, [parent] + names[:-1], points)]
    extra += [("J_Adj_L_FaceEye", "J_Bip_C_Head", head + [0.03, 0.08, 0.08]),
              ("J_Adj_R_FaceEye", "J_Bip_C_Head", head + [-0.03, 0.08, 0.08])]
    add_joints(gltf, extra)
    for names, _, points in chains:
        for name, start, end in zip(names, points[:-1], points[1:]):
            low, high = np.minimum(start, end) - 0.02, np.maximum(start, end) + 0.02
            add_skinned_box(gltf, name, low, high)


def blender_default_names(gltf: pygltflib.GLTF2) -> None:
    """Bones as Blender names them when nobody renames them: `Bone`, `Bone.001`, ... in node order; the
    armature `Armature`, the mesh `Cube`."""
    joints = sorted({j for skin in gltf.skins for j in skin.joints})
    for k, j in enumerate(joints):
        gltf.nodes[j].name = "Bone" if k == 0 else "Bone.{:03d}".format(k)
    for node in gltf.nodes:
        if node.mesh is not None:
            node.name = "Cube"
        elif node.name == "mpfb_rig":
            node.name = "Armature"


def empty_names(gltf: pygltflib.GLTF2) -> None:
    """No node has a name: every other one "" and the rest without the field."""
    for k, node in enumerate(gltf.nodes):
        node.name = "" if k % 2 else None


def numbered_names(gltf: pygltflib.GLTF2) -> None:
    """The Mixamo rig named as exporters that number each chain's joints name them (CesiumMan's kind, here
    with fingers and legs): `Skeleton_arm_joint_L__5_` (the clavicle) down to `_L__2_` (the hand) on the left
    while the right counts up (`Skeleton_arm_joint_R`, `_R__2_` the upper arm .. `_R__4_` the hand); the legs
    alike (`leg_joint_L__4_` the thigh .. `leg_joint_L` the toe; `leg_joint_R` the thigh .. `_R__4_`); the
    fingers one chain per hand counting down on the left (`finger_joint_L__15_` ..) and up on the right."""
    rename(gltf, lambda n: NUMBERED_NAMES.get(n[len("mixamorig:"):], n) if n.startswith("mixamorig:") else n)


def _numbered(stem: str, k: int) -> str:
    return stem if k == 1 else "{}__{}_".format(stem, k)


NUMBERED_NAMES = {"Hips": "Skeleton_torso_joint_1", "Spine": "Skeleton_torso_joint_2", "Spine1": "torso_joint_3",
                  "Spine2": "torso_joint_4", "Neck": "Skeleton_neck_joint_1", "Head": "Skeleton_neck_joint_2"}
for _side, _s in (("Left", "L"), ("Right", "R")):
    _down = _side == "Left"
    for _k, _bone in enumerate(("Shoulder", "Arm", "ForeArm", "Hand")):
        NUMBERED_NAMES[_side + _bone] = _numbered("Skeleton_arm_joint_" + _s, 5 - _k if _down else _k + 1)
    for _k, _bone in enumerate(("UpLeg", "Leg", "Foot", "ToeBase")):
        NUMBERED_NAMES[_side + _bone] = _numbered("leg_joint_" + _s, 4 - _k if _down else _k + 1)
    for _f, _finger in enumerate(("Thumb", "Index", "Middle", "Ring", "Pinky")):
        for _j in (1, 2, 3):
            _n = 3 * _f + _j
            NUMBERED_NAMES["{}Hand{}{}".format(_side, _finger, _j)] = _numbered("finger_joint_" + _s, 16 - _n if _down else _n)


# A four-legged animal rigged with 3ds Max Biped names (as horses and dogs often are), standing on all fours
# facing +Z: (name, parent, joint place in metres). Its limbs' names are a humanoid's; its shape is not.
QUADRUPED = (
    ("Bip01", None, (0.0, 0.0, 0.0)),
    ("Bip01 Pelvis", "Bip01", (0.0, 0.62, -0.35)),
    ("Bip01 Spine", "Bip01 Pelvis", (0.0, 0.63, -0.12)),
    ("Bip01 Spine1", "Bip01 Spine", (0.0, 0.64, 0.1)),
    ("Bip01 Spine2", "Bip01 Spine1", (0.0, 0.64, 0.3)),
    ("Bip01 Neck", "Bip01 Spine2", (0.0, 0.72, 0.42)),
    ("Bip01 Head", "Bip01 Neck", (0.0, 0.85, 0.55)),
    ("Bip01 Tail", "Bip01 Pelvis", (0.0, 0.63, -0.45)),
    ("Bip01 Tail1", "Bip01 Tail", (0.0, 0.58, -0.65)),
    ("Bip01 Tail2", "Bip01 Tail1", (0.0, 0.5, -0.82)),
) + tuple(row for side, x in (("L", 0.12), ("R", -0.12)) for row in (
    ("Bip01 {} Thigh".format(side), "Bip01 Pelvis", (x, 0.55, -0.35)),
    ("Bip01 {} Calf".format(side), "Bip01 {} Thigh".format(side), (x, 0.33, -0.28)),
    ("Bip01 {} HorseLink".format(side), "Bip01 {} Calf".format(side), (x, 0.16, -0.4)),
    ("Bip01 {} Foot".format(side), "Bip01 {} HorseLink".format(side), (x, 0.05, -0.38)),
    ("Bip01 {} Toe0".format(side), "Bip01 {} Foot".format(side), (x, 0.02, -0.32)),
    ("Bip01 {} Clavicle".format(side), "Bip01 Spine2", (x * 0.6, 0.6, 0.3)),
    ("Bip01 {} UpperArm".format(side), "Bip01 {} Clavicle".format(side), (x, 0.5, 0.32)),
    ("Bip01 {} Forearm".format(side), "Bip01 {} UpperArm".format(side), (x, 0.3, 0.3)),
    ("Bip01 {} Hand".format(side), "Bip01 {} Forearm".format(side), (x, 0.08, 0.3)),
    ("Bip01 {} Finger0".format(side), "Bip01 {} Hand".format(side), (x, 0.02, 0.35))))


def quadruped_instead(gltf: pygltflib.GLTF2) -> None:
    """Replaces everything in `gltf` with a four-legged animal (`QUADRUPED`): a horizontal spine, four legs
    down to the floor, a neck and head ahead, a tail behind, one box per bone (from its joint to its child's,
    or a short end) skinned to it, under an armature node `Biped`."""
    gltf.__init__(scene=0, scenes=[pygltflib.Scene(nodes=[0])], nodes=[pygltflib.Node(name="Biped")],
                  buffers=[pygltflib.Buffer(byteLength=0)])
    gltf.set_binary_blob(b"")
    index = {}
    places = {name: np.array(at, dtype=np.float64) for name, _, at in QUADRUPED}
    for name, parent, at in QUADRUPED:
        above = places[parent] if parent else np.zeros(3)
        gltf.nodes.append(pygltflib.Node(name=name, translation=(places[name] - above).tolist()))
        index[name] = len(gltf.nodes) - 1
        holder = gltf.nodes[index[parent]] if parent else gltf.nodes[0]
        holder.children = list(holder.children or []) + [index[name]]
    names = [name for name, _, _ in QUADRUPED]
    ibm = np.array([np.linalg.inv(_at(np.eye(4), places[name])) for name in names])
    points, joints, triangles = [], [], []
    corners = np.array([[(i >> 2) & 1, (i >> 1) & 1, i & 1] for i in range(8)], dtype=np.float64)
    for slot, (name, _, _) in enumerate(QUADRUPED):
        children = [child for child, parent, _ in QUADRUPED if parent == name]
        if name == "Bip01":
            continue
        end = places[children[0]] if children else places[name] + [0.0, -0.02, 0.06]
        low, high = np.minimum(places[name], end) - 0.04, np.maximum(places[name], end) + 0.04
        low[1] = max(low[1], 0.0)
        triangles.append(np.array(_BOX_FACES) + len(points) * 8)
        points.append(low + corners * (high - low))
        joints.append(slot)
    positions = np.concatenate(points)
    influence = np.repeat(np.array(joints), 8)
    primitive = pygltflib.Primitive(attributes=pygltflib.Attributes(
        POSITION=add_accessor(gltf, positions, "VEC3", bounds=True),
        JOINTS_0=add_accessor(gltf, np.c_[influence, np.zeros((len(influence), 3), int)], "VEC4", component=5123),
        WEIGHTS_0=add_accessor(gltf, np.tile([1.0, 0.0, 0.0, 0.0], (len(influence), 1)), "VEC4")),
        indices=add_accessor(gltf, np.concatenate(triangles).reshape(-1, 1), "SCALAR", component=5125))
    gltf.meshes.append(pygltflib.Mesh(name="Horse", primitives=[primitive]))
    gltf.skins.append(pygltflib.Skin(joints=[index[name] for name in names],
                                     inverseBindMatrices=add_accessor(gltf, ibm, "MAT4")))
    gltf.nodes.append(pygltflib.Node(name="Horse", mesh=0, skin=0))
    gltf.nodes[0].children = list(gltf.nodes[0].children) + [len(gltf.nodes) - 1]


def quadruped(path) -> Path:
    """The four-legged animal of `quadruped_instead`, saved at `path`."""
    gltf = pygltflib.GLTF2()
    quadruped_instead(gltf)
    return save(gltf, path)
