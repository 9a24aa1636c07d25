"""The hips' path, solved once for the whole clip: carried horizontally (and turned) by the planted feet,
and raised or lowered by the least change from Kimodo's (scaled) hips height that puts the pinned ankles
on their pins, smoothed over HIPS_WINDOW_S and kept within the closed-form bounds in which every planted
leg reaches its pin (knee bent at least KNEE_STRAIGHTEST_DEG) without folding past KNEE_FOLDEST_DEG or its
retargeted fold."""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple

from ..model import Skeleton
from ..rotations import Vec3, quat_from_axis_angle, quat_multiply, quat_normalize
from .contacts import HIPS_TURN_RETURN_DEG, HIPS_TURN_SHARE, HIPS_WINDOW_S, Foot, Span
from .legs import Goal, reach_limits, rigid_top, standing_sole
from .soles import _carried, _middle, posed_point


def carried(skeleton: Skeleton, feet: Dict[str, Foot], pinned: Dict[str, Sequence[Tuple[bool, bool]]], poses,
            fps: float) -> List[Tuple[float, float]]:
    """Move the body horizontally (and turn its hips about the vertical) so the planted feet stay where
    they landed, in `poses`; returns the hips' move (x, z) per frame. A foot that lands (or rolls from its
    heel onto its toe) is pinned where it is, carried as far as the body already is; with one foot
    planted the body moves by its miss, with both by their mean miss and a turn of HIPS_TURN_SHARE of
    what points the line between the thighs' roots where the pins want it (hips wider than Kimodo's,
    turned as Kimodo turns its own, swing the feet round with them), which goes back at HIPS_TURN_RETURN_DEG
    a second while one foot alone is down; with none the body keeps its move. Smoothed over
    HIPS_WINDOW_S. The hips and the joints between them and the thighs turn; every other joint moves
    with the first joint below those, keeping its world rotation."""
    thighs = [foot.hip for foot in feet.values()]
    if not thighs:
        return [(0.0, 0.0)] * len(poses)
    pins: Dict[str, Tuple[bool, Tuple[float, float]]] = {}
    turn, offset = 0.0, (0.0, 0.0)
    back = math.radians(HIPS_TURN_RETURN_DEG) / fps
    raw = []
    for rotations, positions in poses:
        centre = _middle(positions, thighs)
        wants = []
        for side, foot in feet.items():
            heel, toe = pinned[side][len(raw)]
            if not (heel or toe):
                pins.pop(side, None)
                continue
            point = positions[foot.ankle] if heel else posed_point(foot.toe_point, rotations, positions)
            state = heel
            if foot.body is not None and heel and toe:  # a rigid foot flat on the floor holds its top
                point, state = positions[foot.knee], None
            root = positions[foot.hip]
            pin = pins.get(side)
            if pin is None or pin[0] != state:
                moved = _carried(root, centre, turn, offset)
                pins[side] = (state, (point[0] + moved[0], point[2] + moved[1]))
                continue
            wants.append(((root[0] - centre[0], root[2] - centre[1]), (pin[1][0] - point[0], pin[1][1] - point[2])))
        if len(wants) == 2:
            (ra, wa), (rb, wb) = wants
            base = (ra[0] - rb[0], ra[1] - rb[1])
            wanted = (base[0] + wa[0] - wb[0], base[1] + wa[1] - wb[1])
            turn = HIPS_TURN_SHARE * math.atan2(base[1] * wanted[0] - base[0] * wanted[1], base[0] * wanted[0] + base[1] * wanted[1])
            offset = ((wa[0] + wb[0]) / 2.0, (wa[1] + wb[1]) / 2.0)
        else:
            turn -= max(-back, min(back, turn))
            if wants:
                (r, w), = wants
                swing = _carried((r[0], 0.0, r[1]), (0.0, 0.0), turn, (0.0, 0.0))
                offset = (w[0] - swing[0], w[1] - swing[1])
        raw.append((turn, offset[0], offset[1]))
    half = _half_width(fps)
    eased = [_moving_average([r[k] for r in raw], half) for k in range(3)]
    turned = set()
    for thigh in thighs:
        joint = skeleton.parents[thigh]
        while joint >= 0:
            turned.add(joint)
            joint = skeleton.parents[joint]
    anchor: Dict[int, int] = {}
    for j in range(skeleton.joint_count):  # parents before children
        if j not in turned:
            anchor[j] = j if skeleton.parents[j] in turned or skeleton.parents[j] < 0 else anchor[skeleton.parents[j]]
    moves = []
    for frame, (rotations, positions) in enumerate(poses):
        turn, offset = eased[0][frame], (eased[1][frame], eased[2][frame])
        centre = _middle(positions, thighs)
        shifts = {j: _carried(positions[j], centre, turn, offset) for j in turned | set(anchor.values())}
        moves.append(shifts[0] if 0 in shifts else offset)
        if turn != 0.0:
            yaw = quat_from_axis_angle((0.0, 1.0, 0.0), turn)
            for j in turned:
                rotations[j] = quat_normalize(quat_multiply(yaw, rotations[j]))
        positions[:] = [(p[0] + d[0], p[1], p[2] + d[1]) for p, d in
                        zip(positions, [shifts[j] if j in turned else shifts[anchor[j]] for j in range(skeleton.joint_count)])]
    return moves


def heights(feet: Dict[str, Foot], spans: Dict[str, List[Span]], goals: Dict[str, List[Optional[Goal]]], poses,
            fps: float, source: Sequence[float], floor: Optional[float] = None) -> List[float]:
    """Per frame the hips' vertical move: the mean of what puts each pinned foot's ankle where its pin
    has it (the hips' height over `source`'s smoothed), filled between contacts by straight lines, smoothed; then kept
    within each frame's bounds by what it leaves them, spread smoothly (`_spread`)."""
    frames = len(poses)
    wanted: List[Optional[float]] = [None] * frames
    upper = [math.inf] * frames
    lower = [-math.inf] * frames
    rigid_upper = [math.inf] * frames
    rigid_lower = [-math.inf] * frames
    sums = [[0.0, 0] for _ in range(frames)]
    for side, foot in feet.items():
        near, far = reach_limits(foot)
        if floor is not None and foot.body == foot.hip:
            # A one-bone leg has no knee to lift its free foot with: the hips keep its sole above `floor`.
            for frame, (rotations, positions) in enumerate(poses):
                if goals[side][frame] is None:
                    lowest = min(posed_point(p, rotations, positions)[1] for p in foot.sole)
                    lower[frame] = max(lower[frame], floor - lowest)
        for span in spans[side]:
            for frame in range(span.first, span.last + 1):
                positions = poses[frame][1]
                goal = goals[side][frame]
                if goal is None:
                    continue
                miss = goal[0][1] - positions[foot.ankle][1]
                hip = positions[foot.hip]
                if foot.body is not None:
                    # A rigid foot (the leg's last bone) flat on its pin stands as the pin has it where its
                    # top (knee; a one-bone leg's hip) is the thigh's length under the hip; on its heel or
                    # toe alone, or where the hip is farther aside than that, it rocks on its sole's lowest
                    # point. Two such feet may want the hips at different heights: their bounds are kept
                    # apart, spread like the others but never clipped to (no frame dips to one of them),
                    # the lower one last (a foot floats rather than sinks).
                    top = rigid_top(foot, poses[frame][0], positions, goal)
                    across = math.hypot(hip[0] - top[0], hip[2] - top[2])
                    miss = top[1] + math.sqrt(max(0.0, foot.thigh * foot.thigh - across * across)) - hip[1]
                    sums[frame][0] += miss
                    sums[frame][1] += 1
                    if across < foot.thigh and span.heel[frame - span.first] and span.toe[frame - span.first]:
                        rigid_upper[frame], rigid_lower[frame] = min(rigid_upper[frame], miss), max(rigid_lower[frame], miss)
                        continue
                    pivot = min(standing_sole(foot, poses[frame][0], positions, goal), key=lambda p: p[1])
                    radius = math.dist(top, pivot)
                    across = math.hypot(hip[0] - pivot[0], hip[2] - pivot[2])
                    for reach, bound in ((radius + foot.thigh, rigid_upper), (abs(radius - foot.thigh), rigid_lower)):
                        if across < reach:
                            height = math.sqrt(reach * reach - across * across) - hip[1] + pivot[1]
                            bound[frame] = min(bound[frame], height) if bound is rigid_upper else max(bound[frame], height)
                    continue
                sums[frame][0] += miss
                sums[frame][1] += 1
                # A leg may fold as far as the retargeted one does (Kimodo kneels past any fixed limit).
                folded = min(near, math.dist(hip, positions[foot.ankle]))
                across = math.hypot(hip[0] - goal[0][0], hip[2] - goal[0][2])
                above = hip[1] - goal[0][1]
                if across < far:
                    upper[frame] = min(upper[frame], math.sqrt(far * far - across * across) - above)
                # A hip under its goal (a kneel's foot up behind) folds no further by rising; a rigid leg
                # (no knee) has no fold of its own to keep: its reach alone holds the hips.
                if across < folded < far and above > 0.0:
                    lower[frame] = max(lower[frame], math.sqrt(folded * folded - across * across) - above)
    for frame, (total, count) in enumerate(sums):
        if count:
            wanted[frame] = total / count
    half = _half_width(fps)
    # Smoothed is the hips' height less the source's (`source`: Kimodo's hips height, scaled), not less the
    # retarget's: the retarget grounds each frame on its lowest foot joint, which jumps where a rigid leg's
    # tip takes over from the other.
    grounded = [positions[0][1] - height for (_, positions), height in zip(poses, source)]
    path = [p - g for p, g in zip(_moving_average([g + w for g, w in zip(grounded, _filled(wanted))], half), grounded)]
    # What the path rises over a bound, spread by a max-filter then a moving average of the same half-width
    # (never less than the raw excess), and taken off: the path stays smooth where a bound starts.
    path = [p - e for p, e in zip(path, _spread([max(0.0, p - u) for p, u in zip(path, rigid_upper)], half))]
    path = [p + e for p, e in zip(path, _spread([max(0.0, l - p) for p, l in zip(path, rigid_lower)], half))]
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
