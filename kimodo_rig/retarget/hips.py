"""The hips' path, solved once for the whole clip: carried horizontally by the planted feet, and raised or
lowered by the least change from the retargeted hips that puts the planted feet on their pins, kept
within the closed-form bounds in which every planted leg reaches its pin without folding past
KNEE_FOLDEST_DEG or its retargeted fold, by one smoothing over HIPS_WINDOW_S that stays within them."""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple

from .contacts import HIPS_WINDOW_S, Foot, Span
from .legs import Goal, reach_limits
from .soles import posed_point


def carried(feet: Dict[str, Foot], pinned: Dict[str, Sequence[Tuple[bool, bool]]], poses, fps: float) -> List[Tuple[float, float]]:
    """Per frame the horizontal move (x, z) of the whole body that keeps the planted feet where they landed:
    a foot that lands (or rolls from its heel onto its toe) is pinned where it is, carried as far as the
    body already is; while feet stay planted the body moves by their mean miss; with none it keeps its
    move. Smoothed over HIPS_WINDOW_S, so a leg of other proportions than Kimodo's strides its own length."""
    pins: Dict[str, Tuple[bool, Tuple[float, float]]] = {}
    offset = (0.0, 0.0)
    raw = []
    for frame, (rotations, positions) in enumerate(poses):
        wants = []
        for side, foot in feet.items():
            heel, toe = pinned[side][frame]
            if not (heel or toe):
                pins.pop(side, None)
                continue
            point = positions[foot.ankle] if heel else posed_point(foot.toe_point, rotations, positions)
            pin = pins.get(side)
            if pin is None or pin[0] != heel:
                pin = pins[side] = (heel, (point[0] + offset[0], point[2] + offset[1]))
            wants.append((pin[1][0] - point[0], pin[1][1] - point[2]))
        if wants:
            offset = (sum(w[0] for w in wants) / len(wants), sum(w[1] for w in wants) / len(wants))
        raw.append(offset)
    half = _half_width(fps)
    return list(zip(_moving_average([r[0] for r in raw], half), _moving_average([r[1] for r in raw], half)))


def heights(feet: Dict[str, Foot], spans: Dict[str, List[Span]], goals: Dict[str, List[Optional[Goal]]], poses,
            fps: float) -> List[float]:
    """Per frame the hips' vertical move: the mean of what puts each pinned foot's contact point (ankle on
    a heel, else toe point) on its pin, filled between contacts by straight lines, smoothed; then kept
    within each frame's bounds by what it leaves them, spread smoothly (`_spread`)."""
    frames = len(poses)
    wanted: List[Optional[float]] = [None] * frames
    upper = [math.inf] * frames
    lower = [-math.inf] * frames
    sums = [[0.0, 0] for _ in range(frames)]
    for side, foot in feet.items():
        near, far = reach_limits(foot)
        for span in spans[side]:
            for frame in range(span.first, span.last + 1):
                rotations, positions = poses[frame]
                goal = goals[side][frame]
                if goal is None:
                    continue
                k = frame - span.first
                if span.heel[k]:
                    miss = goal[0][1] - positions[foot.ankle][1]
                else:
                    miss = span.toe_point[1] - posed_point(foot.toe_point, rotations, positions)[1]
                sums[frame][0] += miss
                sums[frame][1] += 1
                hip = positions[foot.hip]
                # A leg may fold as far as the retargeted one does (Kimodo kneels past any fixed limit).
                folded = min(near, math.dist(hip, positions[foot.ankle]))
                across = math.hypot(hip[0] - goal[0][0], hip[2] - goal[0][2])
                above = hip[1] - goal[0][1]
                if across < far:
                    upper[frame] = min(upper[frame], math.sqrt(far * far - across * across) - above)
                if across < folded and above > 0.0:  # a hip under its goal (a kneel's foot up behind) folds no further by rising
                    lower[frame] = max(lower[frame], math.sqrt(folded * folded - across * across) - above)
    for frame, (total, count) in enumerate(sums):
        if count:
            wanted[frame] = total / count
    half = _half_width(fps)
    path = _moving_average(_filled(wanted), half)
    # What the path rises over a bound, spread by a max-filter then a moving average of the same half-width
    # (never less than the raw excess), and taken off: the path stays smooth where a bound starts.
    path = [p - e for p, e in zip(path, _spread([max(0.0, p - u) for p, u in zip(path, upper)], half))]
    path = [p + e for p, e in zip(path, _spread([max(0.0, l - p) for p, l in zip(path, lower)], half))]
    return [min(p, u) for p, u in zip(path, upper)]  # a leg that must both reach and fold: it reaches


def _spread(excess: Sequence[float], half: int) -> List[float]:
    return _moving_average(_running(excess, half, max), half)


def _half_width(fps: float) -> int:
    return max(1, int(round(HIPS_WINDOW_S * fps)))


def _filled(values: Sequence[Optional[float]]) -> List[float]:
    """`values` with each gap filled by a straight line between its neighbours (held at the ends; 0 if none)."""
    known = [t for t, v in enumerate(values) if v is not None]
    if not known:
        return [0.0] * len(values)
    out = [values[known[0]]] * known[0]  # type: List[float]  # type: ignore[assignment]
    for a, b in zip(known, known[1:]):
        out += [values[a] + (values[b] - values[a]) * (t - a) / float(b - a) for t in range(a, b)]  # type: ignore[operator]
    return out + [values[known[-1]]] * (len(values) - known[-1])  # type: ignore[list-item]


def _running(values: Sequence[float], half: int, pick) -> List[float]:
    """Each value replaced by the `pick` (min or max) of the values within `half` frames of it."""
    count = len(values)
    return [pick(values[max(0, t - half):t + half + 1]) for t in range(count)]


def _moving_average(values: Sequence[float], half: int) -> List[float]:
    """Centred moving average over `half` frames either side, the window cut at the clip's ends (an
    infinite bound stays infinite only where every bound it averages is)."""
    count = len(values)
    return [sum(values[max(0, t - half):t + half + 1]) / (min(count, t + half + 1) - max(0, t - half)) for t in range(count)]
