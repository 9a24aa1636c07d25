"""The channels Kimodo derives from a motion when it writes an NPZ (kimodo/exports/motion_io.py
complete_motion_dict, Apache-2.0): the smoothed root path, the root heading and foot contacts."""
from __future__ import annotations

import math
from typing import List, Optional, Sequence

from .. import skeletons
from ..model import Skeleton
from ..rotations import Vec3

ROOT_PATH_MARGIN_M = 0.06  # the path may stray this far from the root (kimodo/motion_rep/smooth_root.py)
_ADMM_ITERATIONS = 500
_OVER_RELAXATION = 1.8
# Kimodo passes (0.15, 0.10) positionally as (vel_thres, height_thresh): 0.15 m/s and 0.10 m.
CONTACT_SPEED_M_S = 0.15
CONTACT_HEIGHT_M = 0.10


class _SmoothingSystem:
    """(s A^T A + W) for second differences A, factorised once (symmetric pentadiagonal, so a banded
    LDL^T); W is `weights` as a diagonal, or rho I with rho the ADMM step Kimodo uses, 0.25 sqrt(max
    diagonal)."""

    def __init__(self, count: int, weights: Optional[Sequence[float]] = None, stiffness: float = 1.0) -> None:
        self.count = count
        band = [[0.0] * 3 for _ in range(count)]  # band[i][k] = M[i][i + k]
        for row in range(1, count - 1):  # second difference -x[i-1] + 2 x[i] - x[i+1]
            taps = ((row - 1, -1.0), (row, 2.0), (row + 1, -1.0))
            for a, va in taps:
                for b, vb in taps:
                    if b >= a:
                        band[a][b - a] += va * vb * stiffness
        self.step = 0.25 * math.sqrt(max([abs(band[i][0]) for i in range(count)] + [0.0]))
        for i in range(count):
            band[i][0] += self.step if weights is None else weights[i]
        # LDL^T of the band: L unit lower with two sub-diagonals, D diagonal.
        self.diagonal = [0.0] * count
        self.lower1 = [0.0] * count  # L[i][i-1]
        self.lower2 = [0.0] * count  # L[i][i-2]
        for i in range(count):
            l2 = band[i - 2][2] / self.diagonal[i - 2] if i >= 2 else 0.0
            l1 = 0.0
            if i >= 1:
                l1 = (band[i - 1][1] - (l2 * self.lower1[i - 1] * self.diagonal[i - 2] if i >= 2 else 0.0)) / self.diagonal[i - 1]
            d = band[i][0] - l1 * l1 * (self.diagonal[i - 1] if i >= 1 else 0.0) - l2 * l2 * (self.diagonal[i - 2] if i >= 2 else 0.0)
            self.lower1[i], self.lower2[i], self.diagonal[i] = l1, l2, d

    def solve(self, right: List[float]) -> List[float]:
        n = self.count
        lower1, lower2, diagonal = self.lower1, self.lower2, self.diagonal
        y = list(right)
        for i in range(1, n):
            y[i] -= lower1[i] * y[i - 1] + (lower2[i] * y[i - 2] if i >= 2 else 0.0)
        x = [y[i] / diagonal[i] for i in range(n)]
        for i in range(n - 2, -1, -1):
            x[i] -= lower1[i + 1] * x[i + 1] + (lower2[i + 2] * x[i + 2] if i + 2 < n else 0.0)
        return x


def least_acceleration(values: Sequence[float], weights: Sequence[float], stiffness: float) -> List[float]:
    """The path x nearest `values` that changes speed least: the least sum of weights[i] (x[i] -
    values[i])^2 plus `stiffness` times the squared second differences (weights > 0)."""
    return _SmoothingSystem(len(values), weights, stiffness).solve([w * v for w, v in zip(weights, values)])


def _admm_smooth(targets: List[List[float]], start: List[List[float]], margin: float) -> List[List[float]]:
    """Least acceleration path in the plane that keeps each point within `margin` of its target (Kimodo's
    TrajectorySmoother with pos_weight 0: z-, u- and x-updates in its order)."""
    count = len(targets)
    if count < 3:
        # No acceleration to minimise: Kimodo's solver meets a singular system here (it cannot smooth
        # clips this short); the points themselves are the smoothest path through them.
        return [list(p) for p in targets]
    system = _SmoothingSystem(count)
    step = system.step
    target_a = [p[0] for p in targets]
    target_b = [p[1] for p in targets]
    xa = [p[0] for p in start]
    xb = [p[1] for p in start]
    ua = [0.0] * count
    ub = [0.0] * count
    indices = range(count)
    for _ in range(_ADMM_ITERATIONS):
        za = [0.0] * count
        zb = [0.0] * count
        for i in indices:
            da = xa[i] + ua[i] - target_a[i]
            db = xb[i] + ub[i] - target_b[i]
            norm = math.sqrt(da * da + db * db)
            if norm > margin:
                da *= margin / norm
                db *= margin / norm
            za[i] = da + target_a[i]
            zb[i] = db + target_b[i]
            ua[i] += _OVER_RELAXATION * (xa[i] - za[i])
            ub[i] += _OVER_RELAXATION * (xb[i] - zb[i])
        xa = system.solve([step * (za[i] - ua[i]) for i in indices])
        xb = system.solve([step * (zb[i] - ub[i]) for i in indices])
    return [[a, b] for a, b in zip(xa, xb)]


def smooth_root_path(root_positions: Sequence[Vec3]) -> List[Vec3]:
    """Kimodo's `smooth_root_pos`: the ground-plane (x, z) root path smoothed coarse to fine (multigrid),
    height kept."""
    count = len(root_positions)
    if count < 3:
        return [tuple(p) for p in root_positions]  # type: ignore[misc]
    signal = [[p[0], p[2]] for p in root_positions]
    mean = [sum(p[k] for p in signal) / count for k in range(2)]
    smoothed = [list(mean) for _ in range(count)]
    levels = max(int(math.floor(math.log2(count))) - 4, 1)
    step = 2 ** levels
    while True:
        coarse = list(range(0, count, step))
        result = _admm_smooth([signal[i] for i in coarse], [smoothed[i] for i in coarse], ROOT_PATH_MARGIN_M)
        for position, i in enumerate(coarse):
            smoothed[i] = result[position]
        # Fill the in-between points of the next level. Kimodo does this even after the finest level
        # (half step 0), where it replaces each point by the mean of it and the next one and
        # extrapolates the last: kept, because that is what its NPZ holds.
        half = step // 2
        between = list(range(half, count, step))
        averages = [list(smoothed[i]) for i in coarse]
        if len(between) == len(coarse):
            last, before = averages[-1], averages[-2]
            smoothed[between[-1]] = [last[k] + (last[k] - before[k]) / 2 for k in range(2)]
            if half == 0:
                averages[-1] = smoothed[between[-1]]
            between = between[:-1]
        for position, i in enumerate(between):
            a, b = averages[position], averages[position + 1]
            smoothed[i] = [(a[k] + b[k]) / 2 for k in range(2)]
        if step == 1:
            break
        step //= 2
    return [(s[0], p[1], s[1]) for s, p in zip(smoothed, root_positions)]


def _joint_indices(skeleton: Skeleton, group: str) -> List[int]:
    return [skeleton.index(name) for name in skeletons.data(skeleton.name)["semantic_groups"][group]]


def root_headings(skeleton: Skeleton, positions: Sequence[Sequence[Vec3]]) -> List[Vec3]:
    """Kimodo's `global_root_heading` (cos, sin) per frame: the angle atan2(d.z, -d.x) of the vector d
    from the left hip to the right hip."""
    right, left = _joint_indices(skeleton, "hip_joints_right_left")
    headings = []
    for frame in positions:
        dx = frame[right][0] - frame[left][0]
        dz = frame[right][2] - frame[left][2]
        angle = math.atan2(dz, -dx)
        headings.append((math.cos(angle), math.sin(angle)))
    return headings


def detect_foot_contacts(skeleton: Skeleton, positions: Sequence[Sequence[Vec3]], fps: float) -> List[float]:
    """Kimodo's derived foot contacts, 4 a frame (left heel, left toe, right heel, right toe): a foot joint
    touches when it is below 0.10 m and moves slower than 0.15 m/s (forward difference, last repeated)."""
    feet = _joint_indices(skeleton, "left_foot_chain")[:2] + _joint_indices(skeleton, "right_foot_chain")[:2]
    count = len(positions)
    contacts = []
    for frame in range(count):
        a, b = (frame, frame + 1) if frame + 1 < count else (frame - 1, frame)
        for joint in feet:
            if count > 1:
                speed = math.sqrt(sum((positions[b][joint][k] - positions[a][joint][k]) ** 2 for k in range(3))) * fps
            else:
                speed = 0.0
            touching = speed < CONTACT_SPEED_M_S and positions[frame][joint][1] < CONTACT_HEIGHT_M
            contacts.append(1.0 if touching else 0.0)
    return contacts
