"""Independent judges for our output: pygltflib reads the .glb, numpy composes the transforms, and reference
motion is built with numpy from Kimodo's own data. Nothing here imports kimodo_rig."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pygltflib

COMPONENT_DTYPES = {5120: "<i1", 5121: "<u1", 5122: "<i2", 5123: "<u2", 5125: "<u4", 5126: "<f4"}
TYPE_WIDTHS = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}
SKELETONS = Path(__file__).resolve().parent.parent / "kimodo_rig" / "skeletons"


class Glb:
    """A .glb opened with pygltflib, with accessors read by numpy."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.gltf = pygltflib.GLTF2().load(str(path))
        self.blob = self.gltf.binary_blob()

    def accessor(self, index: int) -> np.ndarray:
        """(count, width) array; MAT4 as (count, 4, 4) row-major matrices."""
        accessor = self.gltf.accessors[index]
        view = self.gltf.bufferViews[accessor.bufferView]
        dtype = np.dtype(COMPONENT_DTYPES[accessor.componentType])
        width = TYPE_WIDTHS[accessor.type]
        stride = view.byteStride or dtype.itemsize * width
        start = (view.byteOffset or 0) + (accessor.byteOffset or 0)
        rows = [
            np.frombuffer(self.blob, dtype, width, start + i * stride) for i in range(accessor.count)
        ]
        values = np.array(rows, dtype=np.float64 if dtype.kind == "f" else np.int64)
        if accessor.type == "MAT4":
            return values.reshape(-1, 4, 4).transpose(0, 2, 1)  # glTF stores columns
        return values

    @property
    def joint_nodes(self):
        return list(self.gltf.skins[0].joints)

    @property
    def joint_names(self):
        return [self.gltf.nodes[n].name for n in self.joint_nodes]

    def parents(self):
        parents = [-1] * len(self.gltf.nodes)
        for index, node in enumerate(self.gltf.nodes):
            for child in node.children or []:
                parents[child] = index
        return parents

    def key_times(self) -> np.ndarray:
        """The one time grid every sampler shares (fails if they differ)."""
        animation = self.gltf.animations[0]
        grids = {sampler.input for sampler in animation.samplers}
        assert len(grids) == 1 or len({self.accessor(g).tobytes() for g in grids}) == 1, "samplers disagree on times"
        return self.accessor(animation.samplers[0].input)[:, 0]

    def animated_world_matrices(self) -> np.ndarray:
        """World matrix of every node at every keyframe: (frames, nodes, 4, 4)."""
        frames = len(self.key_times())
        nodes = self.gltf.nodes
        translation = np.array([n.translation or [0.0, 0.0, 0.0] for n in nodes], dtype=np.float64)
        rotation = np.array([n.rotation or [0.0, 0.0, 0.0, 1.0] for n in nodes], dtype=np.float64)
        scale = np.array([n.scale or [1.0, 1.0, 1.0] for n in nodes], dtype=np.float64)
        translation = np.repeat(translation[None], frames, axis=0)
        rotation = np.repeat(rotation[None], frames, axis=0)
        scale = np.repeat(scale[None], frames, axis=0)
        animation = self.gltf.animations[0]
        for channel in animation.channels:
            sampler = animation.samplers[channel.sampler]
            assert sampler.interpolation == "LINEAR"
            values = self.accessor(sampler.output)
            assert len(values) == frames, "a channel keys {} of {} frames".format(len(values), frames)
            target = {"translation": translation, "rotation": rotation, "scale": scale}[channel.target.path]
            target[:, channel.target.node] = values
        local = trs_matrices(translation, rotation, scale)
        world = np.empty_like(local)
        parents = self.parents()
        done = [False] * len(nodes)

        def solve(index: int) -> None:
            if done[index]:
                return
            parent = parents[index]
            if parent < 0:
                world[:, index] = local[:, index]
            else:
                solve(parent)
                world[:, index] = world[:, parent] @ local[:, index]
            done[index] = True

        for index in range(len(nodes)):
            solve(index)
        return world

    def joint_world_positions(self) -> np.ndarray:
        """(frames, joints, 3): each skin joint's world position at each keyframe."""
        return self.animated_world_matrices()[:, self.joint_nodes][..., :3, 3]


def quats_to_matrices(q: np.ndarray) -> np.ndarray:
    """xyzw (..., 4) -> (..., 3, 3), normalising first."""
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
            np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
            np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


def matrices_to_quats(m: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotation matrices -> xyzw quaternions, w >= 0 (Shepperd: divide by the largest term)."""
    m = np.asarray(m, dtype=np.float64)
    trace = m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]
    candidates = np.stack([trace, m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]], -1)
    choice = candidates.argmax(-1)
    q = np.empty(m.shape[:-2] + (4,))
    for case in range(4):
        pick = choice == case
        a = m[pick]
        if case == 0:
            s = np.sqrt(1 + a[:, 0, 0] + a[:, 1, 1] + a[:, 2, 2]) * 2
            q[pick] = np.stack([(a[:, 2, 1] - a[:, 1, 2]) / s, (a[:, 0, 2] - a[:, 2, 0]) / s,
                                (a[:, 1, 0] - a[:, 0, 1]) / s, s / 4], -1)
        elif case == 1:
            s = np.sqrt(1 + a[:, 0, 0] - a[:, 1, 1] - a[:, 2, 2]) * 2
            q[pick] = np.stack([s / 4, (a[:, 0, 1] + a[:, 1, 0]) / s, (a[:, 0, 2] + a[:, 2, 0]) / s,
                                (a[:, 2, 1] - a[:, 1, 2]) / s], -1)
        elif case == 2:
            s = np.sqrt(1 - a[:, 0, 0] + a[:, 1, 1] - a[:, 2, 2]) * 2
            q[pick] = np.stack([(a[:, 0, 1] + a[:, 1, 0]) / s, s / 4, (a[:, 1, 2] + a[:, 2, 1]) / s,
                                (a[:, 0, 2] - a[:, 2, 0]) / s], -1)
        else:
            s = np.sqrt(1 - a[:, 0, 0] - a[:, 1, 1] + a[:, 2, 2]) * 2
            q[pick] = np.stack([(a[:, 0, 2] + a[:, 2, 0]) / s, (a[:, 1, 2] + a[:, 2, 1]) / s, s / 4,
                                (a[:, 1, 0] - a[:, 0, 1]) / s], -1)
    q *= np.where(q[..., 3:] < 0, -1.0, 1.0)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def trs_matrices(translation: np.ndarray, rotation: np.ndarray, scale: np.ndarray) -> np.ndarray:
    out = np.zeros(translation.shape[:-1] + (4, 4))
    out[..., :3, :3] = quats_to_matrices(rotation) * scale[..., None, :]
    out[..., :3, 3] = translation
    out[..., 3, 3] = 1.0
    return out


def skeleton_record(name: str) -> dict:
    """A built-in skeleton's JSON (Kimodo's data as shipped), read directly."""
    return json.loads((SKELETONS / (name + ".json")).read_text(encoding="utf-8"))


def forward_kinematics(parents, offsets, local_quats: np.ndarray, roots: np.ndarray) -> np.ndarray:
    """Kimodo's FK with numpy: G[root] = L[root], p[root] = root; p[j] = p[parent] + G[parent] offset[j].
    local_quats (frames, joints, 4) xyzw, roots (frames, 3) -> positions (frames, joints, 3)."""
    local = quats_to_matrices(np.asarray(local_quats, dtype=np.float64))
    offsets = np.asarray(offsets, dtype=np.float64)
    frames, joints = local.shape[:2]
    rotations = np.empty_like(local)
    positions = np.empty((frames, joints, 3))
    for joint, parent in enumerate(parents):
        if parent < 0:
            rotations[:, joint] = local[:, joint]
            positions[:, joint] = roots
        else:
            rotations[:, joint] = rotations[:, parent] @ local[:, joint]
            positions[:, joint] = positions[:, parent] + rotations[:, parent] @ offsets[joint]
    return positions


def write_raw_clip(folder: Path, quats: np.ndarray, roots: np.ndarray, prompt: str = "") -> Path:
    """A kimodo.cpp clip folder written with numpy: little-endian float32, no header."""
    folder.mkdir(parents=True, exist_ok=True)
    np.asarray(quats, dtype="<f4").tofile(str(folder / "local_rotations_xyzw.f32"))
    np.asarray(roots, dtype="<f4").tofile(str(folder / "root_positions.f32"))
    if prompt:
        (folder / "prompt.txt").write_text(prompt + "\n", encoding="utf-8")
    return folder


def read_raw_clip(folder: Path, joints: int):
    quats = np.fromfile(str(next(folder.glob("*local_rotations_xyzw.f32"))), dtype="<f4").reshape(-1, joints, 4)
    roots = np.fromfile(str(next(folder.glob("*root_positions.f32"))), dtype="<f4").reshape(-1, 3)
    return quats.astype(np.float64), roots.astype(np.float64)


def long_clip_world_positions(path: Path, chunk: int = 4096):
    """Key times (frames,) and each skin joint's world position (frames, joints, 3) of a long clip, read
    with pygltflib and numpy in chunks of frames (Glb.animated_world_matrices holds every 4x4 at once):
    each accessor as one strided numpy view, quaternions to matrices, parent before child by the file's
    own `children`."""
    gltf = pygltflib.GLTF2().load(str(path))
    blob = gltf.binary_blob()

    def read(index: int) -> np.ndarray:
        accessor = gltf.accessors[index]
        view = gltf.bufferViews[accessor.bufferView]
        dtype = np.dtype(COMPONENT_DTYPES[accessor.componentType])
        width = TYPE_WIDTHS[accessor.type]
        stride = view.byteStride or dtype.itemsize * width
        start = (view.byteOffset or 0) + (accessor.byteOffset or 0)
        return np.ndarray((accessor.count, width), dtype, buffer=blob, offset=start, strides=(stride, dtype.itemsize))

    animation = gltf.animations[0]
    times = read(animation.samplers[0].input)[:, 0].astype(np.float64)
    frames, nodes = len(times), gltf.nodes
    animated = {}
    for channel in animation.channels:
        sampler = animation.samplers[channel.sampler]
        assert sampler.interpolation == "LINEAR" and channel.target.path in ("rotation", "translation")
        animated[(channel.target.node, channel.target.path)] = read(sampler.output)
    parents = [-1] * len(nodes)
    for index, node in enumerate(nodes):
        for child in node.children or []:
            parents[child] = index
    order = []
    placed = set()

    def place(index: int) -> None:
        if index in placed:
            return
        if parents[index] >= 0:
            place(parents[index])
        placed.add(index)
        order.append(index)

    for index in range(len(nodes)):
        place(index)
    joints = list(gltf.skins[0].joints)
    positions = np.empty((frames, len(joints), 3))
    for begin in range(0, frames, chunk):
        end = min(begin + chunk, frames)
        rotation, position = {}, {}
        for index in order:
            node = nodes[index]
            assert node.matrix is None and (node.scale is None or list(node.scale) == [1, 1, 1])
            local_t = animated.get((index, "translation"))
            local_t = local_t[begin:end].astype(np.float64) if local_t is not None else \
                np.tile(np.asarray(node.translation or [0.0, 0.0, 0.0], dtype=np.float64), (end - begin, 1))
            local_q = animated.get((index, "rotation"))
            local_q = local_q[begin:end].astype(np.float64) if local_q is not None else \
                np.tile(np.asarray(node.rotation or [0.0, 0.0, 0.0, 1.0], dtype=np.float64), (end - begin, 1))
            local_r = quats_to_matrices(local_q)
            parent = parents[index]
            if parent < 0:
                rotation[index], position[index] = local_r, local_t
            else:
                rotation[index] = rotation[parent] @ local_r
                position[index] = position[parent] + (rotation[parent] @ local_t[..., None])[..., 0]
        for slot, index in enumerate(joints):
            positions[begin:end, slot] = position[index]
    return times, positions
