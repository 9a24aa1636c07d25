"""Independent judges for BVH: a small numpy BVH parser with forward kinematics, numpy FK of a motion on a
Kimodo skeleton JSON, and numpy Euler re-encoding. Nothing here imports kimodo_rig."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

SKELETONS = Path(__file__).resolve().parent.parent / "kimodo_rig" / "skeletons"
CMU_UNIT_M = 0.0254 / 0.45  # CMU's length unit: 1/0.45 inch (CMU mocap FAQ)
AXES = {"X": 0, "Y": 1, "Z": 2}


def skeleton_record(name: str) -> dict:
    return json.loads((SKELETONS / (name + ".json")).read_text(encoding="utf-8"))


def axis_matrices(axis: str, degrees: np.ndarray) -> np.ndarray:
    """(N, 3, 3) rotations about one axis."""
    radians = np.radians(degrees)
    c, s = np.cos(radians), np.sin(radians)
    m = np.zeros(radians.shape + (3, 3))
    i = AXES[axis]
    j, k = (i + 1) % 3, (i + 2) % 3
    m[..., i, i] = 1.0
    m[..., j, j] = c
    m[..., k, k] = c
    m[..., k, j] = s
    m[..., j, k] = -s
    return m


def euler_matrices(order: str, angles: np.ndarray) -> np.ndarray:
    """BVH channels: R = R(order[0]) R(order[1]) R(order[2]); angles (N, len(order)) degrees."""
    result = np.broadcast_to(np.eye(3), angles.shape[:1] + (3, 3)).copy()
    for column, axis in enumerate(order):
        result = result @ axis_matrices(axis, angles[:, column])
    return result


def matrices_to_euler(order: str, m: np.ndarray) -> np.ndarray:
    """Degrees (N, 3) with R = Ri(a) Rj(b) Rk(c) for the Tait-Bryan `order` ijk; checked by the caller."""
    i, j, k = (AXES[a] for a in order)
    sign = 1.0 if (j - i) % 3 == 1 else -1.0
    b = np.arcsin(np.clip(sign * m[:, i, k], -1.0, 1.0))
    a = np.arctan2(-sign * m[:, j, k], m[:, k, k])
    c = np.arctan2(-sign * m[:, i, j], m[:, i, i])
    return np.degrees(np.stack([a, b, c], axis=1))


def quaternion_matrices(q: np.ndarray) -> np.ndarray:
    """xyzw (..., 4) -> (..., 3, 3)."""
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def motion_positions(parents, offsets, rotations_xyzw, roots, rest_rotations_xyzw=None) -> np.ndarray:
    """World joint positions (frames, joints, 3): G[j] = G[p] L[j], p[j] = p[p] + G[p] offset[j]."""
    rotations = quaternion_matrices(np.asarray(rotations_xyzw, dtype=np.float64))
    offsets = np.asarray(offsets, dtype=np.float64)
    frames, joints = rotations.shape[:2]
    globals_ = np.zeros((frames, joints, 3, 3))
    positions = np.zeros((frames, joints, 3))
    for j, p in enumerate(parents):
        if p < 0:
            globals_[:, j] = rotations[:, j]
            positions[:, j] = np.asarray(roots, dtype=np.float64)
        else:
            globals_[:, j] = globals_[:, p] @ rotations[:, j]
            positions[:, j] = positions[:, p] + np.einsum("fab,b->fa", globals_[:, p], offsets[j])
    return positions


def motion_positions_of(motion) -> np.ndarray:
    """numpy FK of one of our Motion objects (its buffers and skeleton only)."""
    skeleton = motion.skeleton
    rotations = np.array(motion.local_rotations).reshape(motion.frame_count, skeleton.joint_count, 4)
    roots = np.array(motion.root_positions).reshape(motion.frame_count, 3)
    return motion_positions(skeleton.parents, skeleton.rest_offsets, rotations, roots)


class BvhFile:
    """A BVH parsed with numpy: names, parents, offsets (file units), channels, frames (F, C)."""

    def __init__(self, path) -> None:
        tokens = Path(path).read_text(encoding="utf-8").split()
        self.names, self.parents, self.offsets, self.channels = [], [], [], []
        stack = []
        i = 0
        while tokens[i].upper() != "MOTION":
            word = tokens[i].upper()
            if word in ("ROOT", "JOINT"):
                self.names.append(tokens[i + 1])
                self.parents.append(stack[-1] if stack else -1)
                self.offsets.append(None)
                self.channels.append([])
                stack.append(len(self.names) - 1)
                i += 3  # name and "{"
            elif word == "END":
                i += 8  # End Site { OFFSET x y z }
            elif word == "OFFSET":
                self.offsets[stack[-1]] = [float(t) for t in tokens[i + 1:i + 4]]
                i += 4
            elif word == "CHANNELS":
                count = int(tokens[i + 1])
                self.channels[stack[-1]] = tokens[i + 2:i + 2 + count]
                i += 2 + count
            elif word == "}":
                stack.pop()
                i += 1
            else:
                i += 1
        self.frame_count = int(tokens[i + 2])
        self.frame_time = float(tokens[i + 5])
        values = np.array([float(t) for t in tokens[i + 6:]])
        self.frames = values.reshape(self.frame_count, -1)
        self.offsets = np.array(self.offsets, dtype=np.float64)

    def positions(self, unit: float = 1.0) -> np.ndarray:
        """World positions (F, J, 3) times `unit`; position channels replace the OFFSET."""
        frames = self.frame_count
        column = 0
        globals_ = np.zeros((frames, len(self.names), 3, 3))
        positions = np.zeros((frames, len(self.names), 3))
        for j, parent in enumerate(self.parents):
            translation = np.repeat(self.offsets[j][None], frames, axis=0)
            order, angles = "", []
            for channel in self.channels[j]:
                axis = channel[0].upper()
                if channel.lower().endswith("position"):
                    translation[:, AXES[axis]] = self.frames[:, column]
                else:
                    order += axis
                    angles.append(self.frames[:, column])
                column += 1
            local = euler_matrices(order, np.stack(angles, 1)) if order else np.broadcast_to(np.eye(3), (frames, 3, 3))
            if parent < 0:
                globals_[:, j] = local
                positions[:, j] = translation
            else:
                globals_[:, j] = globals_[:, parent] @ local
                positions[:, j] = positions[:, parent] + np.einsum("fab,fb->fa", globals_[:, parent], translation)
        return positions * unit
