"""The hips' path, solved once for the whole clip: horizontally the source's (scaled), moved (and turned)
toward where the feet in contact stand on their pins, and raised or lowered by the least change from
Kimodo's (scaled) hips height that puts the pinned ankles on their pins, smoothed over HIPS_WINDOW_S and
kept within the closed-form bounds in which every planted leg reaches its pin (knee bent at least KNEE_STRAIGHTEST_DEG) without folding past KNEE_FOLDEST_DEG or its
retargeted fold."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence, Tuple

from ..model import Skeleton
from ..rotations import (Vec3, add, cross, dot, length, quat_conjugate, quat_from_axis_angle, quat_multiply, quat_normalize,
                         quat_rotate, quat_to_rotation_vector, subtract, yaw_rotation)
from .contacts import (FOOT_PITCH_MAX_DEG, HIPS_ROLL_MAX_DEG, HIPS_TURN_RETURN_DEG, HIPS_TURN_SHARE, HIPS_WINDOW_S, Foot, Span,
                       foot_yaw)
from .ease import share, standing_shares
from .legs import Goal, clearing_pitch, goal_toe_point, reach_limits, rigid_rest, rigid_top, rocking_pivot, standing_sole
from .mapping import SIDES
from .soles import _carried, _middle, posed_point, subtree


def carried(skeleton: Skeleton, feet: Dict[str, Foot], spans: Dict[str, List[Span]],
            contacts: Dict[str, Sequence[Tuple[bool, bool]]], poses, fps: float) -> List[Tuple[float, float]]:
    """Move the body horizontally (and turn its hips about the vertical) toward where the feet in contact
    stand on their spans' pins, in `poses`; returns the hips' move (x, z) per frame. Not carried from one
    step to the next: each frame's move is what the feet in contact that frame miss their own pins by
    (the pins stand where the retargeted foot stands over its span, `contacts.plan`, a point in time, not
    a first frame), so the body keeps the source's scaled path but for local corrections, and these do
    not depend on the frame rate (a carry from pin to pin integrated a frame's difference at each step:
    30 cm by 4 s on the robot between 30 and 60 fps). With both feet in contact the hips also turn by
    what points the line between the thighs' roots where the pins want it (hips wider than Kimodo's,
    turned as Kimodo turns its own, swing the feet round with them): all of it with both feet flat (a
    quarter left to the legs turned RobotExpressive's thigh 15 deg off Kimodo's on soma_04),
    HIPS_TURN_SHARE of it while a foot is on its heel or toe alone (a kneel's toe behind), which goes back at
    HIPS_TURN_RETURN_DEG a second otherwise. Filled between contacts by straight lines, smoothed over
    HIPS_WINDOW_S (`_moved`). For legs with a knee, which takes up what the smoothed move leaves a foot
    off its pin: a body on a rigid leg is carried from landing to landing (`carried_from_landings`)."""
    thighs = [foot.hip for foot in feet.values()]
    if not thighs:
        return [(0.0, 0.0)] * len(poses)
    holding: Dict[str, List[Optional[Span]]] = {}
    for side in feet:
        holding[side] = [None] * len(poses)
        for span in spans[side]:
            for frame in range(span.first, span.last + 1):
                holding[side][frame] = span

    misses = []  # per frame: (the thigh's root from the thighs' middle, the foot's miss) of each foot in contact
    flat = []  # per frame: both feet flat in contact (heel and toe)
    for frame, (rotations, positions) in enumerate(poses):
        centre = _middle(positions, thighs)
        wants = []
        for side, foot in feet.items():
            heel, toe = contacts[side][frame]
            span = holding[side][frame]
            if not (heel or toe) or span is None:
                continue
            if heel:
                point, pin = positions[foot.ankle], span.ankle
            else:
                point, pin = posed_point(foot.toe_point, rotations, positions), span.toe_point
            root = positions[foot.hip]
            wants.append(((root[0] - centre[0], root[2] - centre[1]), (pin[0] - point[0], pin[2] - point[2])))
        misses.append(wants)
        flat.append(all(contacts[side][frame][0] and contacts[side][frame][1] for side in feet))
    back = math.radians(HIPS_TURN_RETURN_DEG) / fps
    turns, turn = [], 0.0
    for wants, both_flat in zip(misses, flat):
        if len(wants) == 2:
            turn = _both_turn(wants, 1.0 if both_flat else HIPS_TURN_SHARE)
        else:
            turn -= max(-back, min(back, turn))
        turns.append(turn)
    half = _half_width(fps)
    turns = _moving_average(turns, half)
    offsets: List[Optional[Tuple[float, float]]] = []
    for wants, turn in zip(misses, turns):
        if not wants:
            offsets.append(None)
            continue
        # Each foot's miss less how far the turn swings its thigh's root (the foot goes with it).
        swung = [_carried((r[0], 0.0, r[1]), (0.0, 0.0), turn, (0.0, 0.0)) for r, _ in wants]
        offsets.append((sum(w[0] - s[0] for (_, w), s in zip(wants, swung)) / len(wants),
                        sum(w[1] - s[1] for (_, w), s in zip(wants, swung)) / len(wants)))
    eased = [turns] + [_moving_average(_filled([None if o is None else o[k] for o in offsets]), half) for k in range(2)]
    return _moved(skeleton, thighs, poses, eased)


def carried_from_landings(skeleton: Skeleton, feet: Dict[str, Foot], pinned: Dict[str, Sequence[Tuple[bool, bool]]], poses,
                          fps: float) -> List[Tuple[float, float]]:
    """Move the body horizontally (and turn its hips about the vertical) so the planted feet stay where
    they landed, in `poses`; returns the hips' move (x, z) per frame. For a body on a rigid leg (a foot
    that is the leg's last bone, `Foot.body`): it has no knee to take up a miss, so the body goes where
    its feet put it, step by step (`carried`'s smoothed move toward pins set before it left a rigid sole
    2-5 cm off the floor at a landing). A foot that lands (or rolls from its
    heel onto its toe) is pinned where it is, carried as far as the body already is; with one foot
    planted the body moves by its miss, with both by their mean miss and a turn of HIPS_TURN_SHARE of
    what points the line between the thighs' roots where the pins want it (hips wider than Kimodo's,
    turned as Kimodo turns its own, swing the feet round with them), which goes back at HIPS_TURN_RETURN_DEG
    a second while one foot alone is down; with none the body keeps its move. Smoothed over
    HIPS_WINDOW_S (`_moved`)."""
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
            turn = _both_turn(wants)
            (_, wa), (_, wb) = wants
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
    return _moved(skeleton, thighs, poses, eased)


def _both_turn(wants, share: float = HIPS_TURN_SHARE) -> float:
    """With both feet down (each: its thigh's root from the thighs' middle, its miss), `share` of the turn
    about the vertical that points the line between the thighs' roots where the pins want it."""
    (ra, wa), (rb, wb) = wants
    base = (ra[0] - rb[0], ra[1] - rb[1])
    wanted = (base[0] + wa[0] - wb[0], base[1] + wa[1] - wb[1])
    return share * math.atan2(base[1] * wanted[0] - base[0] * wanted[1], base[0] * wanted[0] + base[1] * wanted[1])


def _moved(skeleton: Skeleton, thighs: Sequence[int], poses, eased: Sequence[Sequence[float]]) -> List[Tuple[float, float]]:
    """Turn the hips about the vertical by eased[0] and move the body by (eased[1], eased[2]) per frame, in
    `poses`: the hips and the joints between them and the thighs turn; every other joint moves with the
    first joint below those, keeping its world rotation. Returns the hips' move (x, z) per frame."""
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


@dataclass
class Bounds:
    """Per frame, how far one side's thigh root may move up or down for its foot: `wanted` puts the pinned
    ankle where its pin has it (None: not pinned); `lower`, `upper` keep a two-bone leg within its reach and
    fold, and a one-bone leg's free sole above the floor; `rigid_lower`, `rigid_upper` are a rigid foot's
    (the leg's last bone) reach from its pin."""

    wanted: List[Optional[float]]
    lower: List[float]
    upper: List[float]
    rigid_lower: List[float]
    rigid_upper: List[float]


def side_bounds(foot: Foot, spans: List[Span], goals: List[Optional[Goal]], poses, floor: Optional[float] = None) -> Bounds:
    """One side's `Bounds` over the clip (`goals`: the span's goal per frame, None outside the spans)."""
    frames = len(poses)
    bounds = Bounds([None] * frames, [-math.inf] * frames, [math.inf] * frames, [-math.inf] * frames, [math.inf] * frames)
    near, far = reach_limits(foot)
    if floor is not None and foot.body == foot.hip:
        # A one-bone leg has no knee to lift its free foot with: the hips keep its sole above `floor`.
        for frame, (rotations, positions) in enumerate(poses):
            if goals[frame] is None:
                lowest = min(posed_point(p, rotations, positions)[1] for p in foot.sole)
                bounds.lower[frame] = floor - lowest
    for span in spans:
        for frame in range(span.first, span.last + 1):
            positions = poses[frame][1]
            goal = goals[frame]
            if goal is None:
                continue
            miss = goal[0][1] - positions[foot.ankle][1]
            hip = positions[foot.hip]
            if foot.body is not None:
                # A rigid foot (the leg's last bone) flat on its pin stands as the pin has it where its
                # top (knee; a one-bone leg's hip) is the thigh's length under the hip; on its heel or
                # toe alone, or where the hip is farther aside than that, it rocks on its sole's lowest
                # point, its top within its reach from there.
                top = rigid_top(foot, poses[frame][0], positions, goal)
                across = math.hypot(hip[0] - top[0], hip[2] - top[2])
                bounds.wanted[frame] = top[1] + math.sqrt(max(0.0, foot.thigh * foot.thigh - across * across)) - hip[1]
                if across < foot.thigh and span.heel[frame - span.first] and span.toe[frame - span.first]:
                    bounds.rigid_lower[frame] = bounds.rigid_upper[frame] = bounds.wanted[frame]
                    continue
                # The point it rocks on depends on where the hip is: picked again with the hip where the
                # first pick's bounds put it (picked for the hip before its move, the block's other front
                # corner left its sole 7 mm under the floor, 1.6 cm per 1.7 m).
                rise = 0.0
                for _ in range(2):
                    raised = (hip[0], hip[1] + rise, hip[2])
                    rocked, pivot = rocking_pivot(foot, poses[frame][0], positions, goal, raised)
                    radius = math.dist(rigid_top(foot, poses[frame][0], positions, rocked), pivot)
                    across = math.hypot(hip[0] - pivot[0], hip[2] - pivot[2])
                    for reach, bound in ((radius + foot.thigh, bounds.rigid_upper), (abs(radius - foot.thigh), bounds.rigid_lower)):
                        if across < reach:
                            bound[frame] = math.sqrt(reach * reach - across * across) - hip[1] + pivot[1]
                    rise = min(max(0.0, bounds.rigid_lower[frame]), bounds.rigid_upper[frame])
                # What the foot's rest leaves its sole over or under its goal there (a block rocking onto
                # its front edge presses one corner under the other), the hips take (on soma_01 a block's
                # corner 0.6 cm under the floor, 1.3 per 1.7 m).
                miss = rigid_rest(foot, poses[frame][0], positions, goal, (hip[0], hip[1] + rise, hip[2]))[2]
                bounds.rigid_lower[frame] -= miss
                bounds.rigid_upper[frame] -= miss
                continue
            bounds.wanted[frame] = miss
            # A leg may fold as far as the retargeted one does (Kimodo kneels past any fixed limit).
            folded = min(near, math.dist(hip, positions[foot.ankle]))
            across = math.hypot(hip[0] - goal[0][0], hip[2] - goal[0][2])
            above = hip[1] - goal[0][1]
            if across < far:
                bounds.upper[frame] = math.sqrt(far * far - across * across) - above
            # A hip over its goal (a kneel's foot up behind) folds no further by rising, to no more over
            # it than the retargeted hip is over its ankle: a shin 1.56 times the thigh (the dress
            # character) kneels with its foot up behind and over the hip, and held by the fold alone its
            # hips stood 48 cm over where its pin wants them, its thigh 50 deg off Kimodo's. A rigid leg
            # (no knee) has no fold of its own to keep: its reach alone holds the hips.
            if across < folded < far and above > 0.0:
                bounds.lower[frame] = min(math.sqrt(folded * folded - across * across), hip[1] - positions[foot.ankle][1]) - above
            if span.knee_lowest and bounds.wanted[frame] < 0.0:
                # The knee no deeper than Kimodo's kneels (the span's lowest): in the upright plane through
                # the hip and its goal, a knee at that height the shin's length from the goal, ahead of
                # it toward the hip, has the hip the thigh's length over it.
                rise = _knee_kept(foot, hip, goal[0], span.knee_lowest[frame - span.first])
                if rise is not None:
                    bounds.lower[frame] = max(bounds.lower[frame], rise)
    return bounds


def _knee_kept(foot: Foot, hip: Vec3, ankle: Vec3, lowest: float) -> Optional[float]:
    """How far the hip rises (or sinks) to put the knee, as the leg reaches `ankle` in the upright plane
    through the hip and it, at height `lowest`: closed form, None where no knee there reaches both."""
    across = math.hypot(hip[0] - ankle[0], hip[2] - ankle[2])
    below = lowest - ankle[1]
    if abs(below) > foot.shin:
        return None
    ahead = across - math.sqrt(foot.shin * foot.shin - below * below)  # the knee's way from the hip, across
    if abs(ahead) > foot.thigh:
        return None
    return lowest + math.sqrt(foot.thigh * foot.thigh - ahead * ahead) - hip[1]


def heights(feet: Dict[str, Foot], spans: Dict[str, List[Span]], goals: Dict[str, List[Optional[Goal]]], poses,
            fps: float, source: Sequence[float], floor: Optional[float] = None,
            unpinned: Optional[Sequence[float]] = None) -> List[float]:
    """Per frame the hips' vertical move: the mean of what puts each pinned foot's ankle where its pin
    has it (the hips' height over `source`'s smoothed), filled between contacts by straight lines, smoothed; then kept
    within each frame's bounds (`side_bounds`; a toe-off no roll follows, `_toe_off_upper`) by what it leaves
    them, spread smoothly (`_spread`). Two
    rigid feet may want the hips at different heights (what `rolls` leaves): their bounds are kept apart,
    spread like the others but never clipped to (no frame dips to one of them), the lower one last (a foot
    floats rather than sinks). A clip that pins no foot anywhere moves by `unpinned` (what keeps its
    lowest sole as high over the floor as Kimodo's), smoothed, in place of the pins' fill."""
    frames = len(poses)
    sides = [side_bounds(foot, spans[side], goals[side], poses, floor) for side, foot in feet.items()]
    wanted: List[Optional[float]] = [None] * frames
    for frame in range(frames):
        misses = [b.wanted[frame] for b in sides if b.wanted[frame] is not None]
        if misses:
            wanted[frame] = sum(misses, 0.0) / len(misses)
    upper = [min([math.inf] + [b.upper[t] for b in sides]) for t in range(frames)]
    lower = [max([-math.inf] + [b.lower[t] for b in sides]) for t in range(frames)]
    rigid_upper = [min([math.inf] + [b.rigid_upper[t] for b in sides]) for t in range(frames)]
    rigid_lower = [max([-math.inf] + [b.rigid_lower[t] for b in sides]) for t in range(frames)]
    half = _half_width(fps)
    # Smoothed is the hips' height less the source's (`source`: Kimodo's hips height, scaled), not less the
    # retarget's: the retarget grounds each frame on its lowest foot joint, which jumps where a rigid leg's
    # tip takes over from the other.
    grounded = [positions[0][1] - height for (_, positions), height in zip(poses, source)]
    filled = list(unpinned) if unpinned is not None and all(w is None for w in wanted) else _filled(wanted)
    path = [p - g for p, g in zip(_moving_average([g + w for g, w in zip(grounded, filled)], half), grounded)]
    # A swinging leg with a knee keeps its ankle as high as its foot stands flat (`Foot.standing`): the
    # hips rise for it, before the bounds, so a planted leg's reach still holds them down (lifted by its
    # knee instead, RobotExpressive's swinging thigh turned 30 deg off Kimodo's as its animated ankle
    # hung under the floor behind the other foot's toe roll).
    swinging = [-math.inf] * frames
    for side, foot in feet.items():
        if floor is not None and foot.body is None:
            for frame, goal in enumerate(goals[side]):
                if goal is None:
                    swinging[frame] = max(swinging[frame], floor + foot.standing - poses[frame][1][foot.ankle][1])
    path = [p + e for p, e in zip(path, _spread([max(0.0, s - p) for p, s in zip(path, swinging)], half))]
    # What the path rises over a bound, spread by a max-filter then a moving average of the same half-width
    # (never less than the raw excess), and taken off: the path stays smooth where a bound starts.
    path = [p - e for p, e in zip(path, _spread([max(0.0, p - u) for p, u in zip(path, rigid_upper)], half))]
    path = [p + e for p, e in zip(path, _spread([max(0.0, l - p) for p, l in zip(path, rigid_lower)], half))]
    path = [p - e for p, e in zip(path, _spread([max(0.0, p - u) for p, u in zip(path, upper)], half))]
    path = [p + e for p, e in zip(path, _spread([max(0.0, l - p) for p, l in zip(path, lower)], half))]
    # A leg on its toe alone that no heel-up roll brings after the hips (its toe point behind the ankle)
    # extends no faster than the animated leg from its first toe frame: the body moves on while the toe
    # holds, and the toe-less foot's knee went straight in a frame (soma_01 frames 40-41, 46 -> 12 deg).
    toe_upper = [math.inf] * frames
    for side, foot in feet.items():
        if foot.body is None:
            toe_upper = [min(a, b) for a, b in zip(toe_upper, _toe_off_upper(foot, spans[side], goals[side], poses, path))]
    path = [p - e for p, e in zip(path, _spread([max(0.0, p - u) for p, u in zip(path, toe_upper)], half))]
    # A rigid foot's own bounds, on its pin and easing on and off it (`_reaches`), hold exactly where the
    # spread of a bound rising steeply (a rigid foot pressed into a lunge) took the path past them: a rigid
    # foot has no knee to take that up. Where two conflict (what the roll could not take) the foot floats
    # rather than sinks.
    rigid = [_reaches(foot, spans[side], goals[side], poses, fps, floor, True) for side, foot in feet.items() if foot.body is not None]
    if rigid:
        path = [max(min(p, min(r[t][1] for r in rigid)), max(r[t][0] for r in rigid)) for t, p in enumerate(path)]
    return [min(p, u) for p, u in zip(path, upper)]  # a leg that must both reach and fold: it reaches


def _toe_off_upper(foot: Foot, spans: List[Span], goals: List[Optional[Goal]], poses, path: Sequence[float]) -> List[float]:
    """Per frame the highest rise of the hips at which a two-bone leg on its toe alone, whose heel-up roll
    about the pinned toe point takes the ankle away from the hip (a toe point behind the ankle), extends no
    further than the animated leg does, by no more than it did on the run's first toe frame with the hips
    on `path`: the body moves on while the toe holds, and no roll brings the ankle after it (inf
    elsewhere)."""
    frames = len(poses)
    upper = [math.inf] * frames
    for span in spans:
        over = None  # how much further than the animated leg the leg extends on the run's first toe frame
        for frame in range(span.first, span.last + 1):
            k = frame - span.first
            goal = goals[frame]
            if goal is None or span.heel[k] or not span.toe[k]:
                over = None
                continue
            positions = poses[frame][1]
            hip = positions[foot.hip]
            own = math.dist(hip, positions[foot.ankle])
            raised = (hip[0], hip[1] + path[frame], hip[2])
            if over is None:
                over = max(0.0, math.dist(raised, goal[0]) - own)
            # The ankle's way as the heel lifts about the toe point (axis x arm): toward the hip, the roll
            # (`legs.rolled_within`) takes the leg's extension.
            axis = quat_rotate(yaw_rotation(span.yaw), foot.lateral)
            if dot(cross(axis, subtract(goal[0], goal_toe_point(span, goal))), subtract(raised, goal[0])) > 0.0:
                continue
            reach = own + over
            across = math.hypot(hip[0] - goal[0][0], hip[2] - goal[0][2])
            if across < reach:
                upper[frame] = math.sqrt(reach * reach - across * across) - (hip[1] - goal[0][1])
    return upper


def rolls(skeleton: Skeleton, feet: Dict[str, Foot], spans: Dict[str, List[Span]], goals: Dict[str, List[Optional[Goal]]],
          poses, fps: float, floor: Optional[float] = None) -> List[float]:
    """Roll the pelvis by the least that lets both legs reach (`_rolled`), then, on rigid legs, by what
    that roll leaves (a rolled pelvis also moves the thigh roots aside, which moves the point a rigid foot
    rocks on and its reach: rolled once, the one-bone limbs' planted sole on soma_03 stood 1.04 cm per
    1.7 m over the floor). Returns the rise of the left thigh root against the right per frame."""
    first = _rolled(skeleton, feet, spans, goals, poses, fps, floor)
    if not any(foot.body is not None for foot in feet.values()):
        return first
    return [a + b for a, b in zip(first, _rolled(skeleton, feet, spans, goals, poses, fps, floor))]


def _rolled(skeleton: Skeleton, feet: Dict[str, Foot], spans: Dict[str, List[Span]], goals: Dict[str, List[Optional[Goal]]],
            poses, fps: float, floor: Optional[float] = None) -> List[float]:
    """Roll the pelvis (the thighs' nearest common joint and the joints from it to the thighs) about the
    body's forward, in `poses`: two legs with a knee pinned at once by what their pins want the hips apart
    (`_wanted_rises`), and by the least that lets both legs reach: where the bounds of the two thigh
    roots' heights (`side_bounds`) do not meet (two rigid legs planted at different heights; a one-bone leg
    swinging, which has no knee to clear the floor with, beside a planted one), the left root rises against
    the right by what they lack, smoothed over HIPS_WINDOW_S as the hips' bounds are (`_spread`, never less
    than what a frame needs), at most HIPS_ROLL_MAX_DEG; every other joint moves with the first turned one
    above it, keeping its world rotation. Returns the rise of the left thigh root against the right per
    frame (metres: 0 where the bounds meet and no pins want it)."""
    frames = len(poses)
    if set(feet) != set(SIDES) or not frames:
        return [0.0] * frames
    reaches = [_reaches(feet[side], spans[side], goals[side], poses, fps, floor) for side in SIDES]
    least, most = [0.0] * frames, [0.0] * frames  # what the left root must rise against the right: at least, at most
    for frame in range(frames):
        (low_l, high_l), (low_r, high_r) = reaches[0][frame], reaches[1][frame]
        least[frame], most[frame] = low_l - high_r, high_l - low_r
        if least[frame] > most[frame]:  # a leg that must both reach and fold: halfway
            least[frame] = most[frame] = 0.5 * (least[frame] + most[frame])
    half = _half_width(fps)
    base = _wanted_rises(feet, spans, goals, poses, fps, floor)
    rises = [b + e for b, e in zip(base, _spread([max(0.0, a - b) for a, b in zip(least, base)], half))]
    rises = [r - e for r, e in zip(rises, _spread([max(0.0, r - b) for r, b in zip(rises, most)], half))]
    rises = [min(max(r, a), b) for r, a, b in zip(rises, least, most)]  # a frame that needs it has all of it
    thighs = [feet[side].hip for side in SIDES]
    pelvis = _common_parent(skeleton, thighs)
    turned = set()
    for thigh in thighs:
        joint = skeleton.parents[thigh]
        while joint >= 0 and joint != skeleton.parents[pelvis]:
            turned.add(joint)
            joint = skeleton.parents[joint]
    anchor: Dict[int, int] = {}
    for j in subtree(skeleton, pelvis):  # parents before children
        if j not in turned:
            anchor[j] = j if skeleton.parents[j] in turned else anchor[skeleton.parents[j]]
    limit = math.radians(HIPS_ROLL_MAX_DEG)
    for frame, rise in enumerate(rises):
        if rise == 0.0:
            continue
        rotations, positions = poses[frame]
        line = subtract(positions[thighs[0]], positions[thighs[1]])
        across = math.hypot(line[0], line[2])
        if across < 1e-9:
            continue
        # Rolled by t about the level axis square to the line, the line's height is across sin t + its
        # height cos t over its length: the t that raises it by `rise`, less the roll it has.
        apart = math.hypot(across, line[1])
        has = math.atan2(line[1], across)
        angle = math.asin(max(-1.0, min(1.0, (line[1] + rise) / apart))) - has
        angle = max(-limit, min(limit, angle))
        axis = (-line[2] / across, 0.0, line[0] / across)  # the line's level direction x up: + lifts the left
        turn = quat_from_axis_angle(axis, angle)
        pivot = positions[pelvis]
        shifts = {j: subtract(quat_rotate(turn, subtract(positions[j], pivot)), subtract(positions[j], pivot))
                  for j in turned | set(anchor.values())}
        for j in subtree(skeleton, pelvis):
            if j in turned:
                rotations[j] = quat_normalize(quat_multiply(turn, rotations[j]))
            positions[j] = add(positions[j], shifts[j if j in turned else anchor[j]])
    return rises


def _wanted_rises(feet: Dict[str, Foot], spans: Dict[str, List[Span]], goals: Dict[str, List[Optional[Goal]]], poses,
                  fps: float, floor: Optional[float]) -> List[float]:
    """Per frame what the left thigh root rises against the right for two legs with a knee pinned at once:
    what their pins want the hips' height apart (`side_bounds`' wanted; 0 with a foot free), smoothed
    over HIPS_WINDOW_S (a kneel on the dress character, whose shin is 1.56 times its thigh: the toe
    behind wants the hips up to 60 cm lower than the foot in front; met halfway, its thigh turned 50
    deg off Kimodo's). Rigid legs: none (their bounds alone roll the pelvis)."""
    frames = len(poses)
    if any(foot.body is not None for foot in feet.values()):
        return [0.0] * frames
    wanted = [side_bounds(feet[side], spans[side], goals[side], poses, floor).wanted for side in SIDES]
    return _moving_average([wl - wr if wl is not None and wr is not None else 0.0 for wl, wr in zip(*wanted)], _half_width(fps))


def _reaches(foot: Foot, spans: List[Span], goals: List[Optional[Goal]], poses, fps: float,
             floor: Optional[float], may_lift: bool = False) -> List[Tuple[float, float]]:
    """Per frame the least and most the side's thigh root may rise (`side_bounds`). A rigid foot stands on
    its pin a while after its span and before it (`ease.standing_shares`): there it holds the root as on
    the span's nearest frame, from below as on the span (a foot easing onto or off its pin is not pressed
    under the floor: a one-bone leg has no knee to give) and from above widened by its leg's length times
    the share it does not stand (nothing at the span, all at the window's end), so the roll meets a foot's
    landing and the other's lifting smoothly rather than in the frame the pins change hands; `may_lift`: not
    from above at all there (it may lift: held down, a leap's hips were pulled 48 cm down before landing)."""
    frames = len(poses)
    shares = standing_shares(spans, frames, fps) if foot.body is not None else [0.0] * frames
    owner: List[Optional[int]] = [None] * frames  # the span a frame of the ease window belongs to
    for index, span in enumerate(spans):
        for frame in range(span.first, span.last + 1):
            owner[frame] = index
    for frame in range(frames):
        if owner[frame] is None and shares[frame] > 0.0:
            owner[frame] = min(range(len(spans)), key=lambda k: max(spans[k].first - frame, frame - spans[k].last))
    held = list(goals)
    widened = []
    for index, span in enumerate(spans):
        mine = [t for t in range(frames) if owner[t] == index]
        first, last = min(mine + [span.first]), max(mine + [span.last])
        for frame in range(first, last + 1):
            if held[frame] is None:
                held[frame] = goals[span.first if frame < span.first else span.last]
        widened.append(replace(span, first=first, last=last,
                               heel=(span.heel[0],) * (span.first - first) + span.heel + (span.heel[-1],) * (last - span.last),
                               toe=(span.toe[0],) * (span.first - first) + span.toe + (span.toe[-1],) * (last - span.last)))
    free = side_bounds(foot, spans, goals, poses, floor)
    if not any(owner[t] is not None and goals[t] is None for t in range(frames)):
        return [(max(free.lower[t], free.rigid_lower[t]), min(free.upper[t], free.rigid_upper[t])) for t in range(frames)]
    bounds = side_bounds(foot, widened, held, poses, floor)
    result = []
    for t, share in enumerate(shares):
        low, high = max(bounds.lower[t], bounds.rigid_lower[t]), min(bounds.upper[t], bounds.rigid_upper[t])
        if owner[t] is not None and goals[t] is None:  # in the window, above the floor as a free foot too
            slack = (1.0 - share) * (foot.thigh + foot.shin)
            low, high = max(free.lower[t], low), math.inf if may_lift else high + slack
        result.append((low, max(low, high)))
    return result


def _common_parent(skeleton: Skeleton, joints: Sequence[int]) -> int:
    """The nearest joint above every one of `joints` (the pelvis above the thighs)."""
    chains = []
    for joint in joints:
        chain = []
        joint = skeleton.parents[joint]
        while joint >= 0:
            chain.append(joint)
            joint = skeleton.parents[joint]
        chains.append(chain)
    shared = set(chains[0]).intersection(*chains[1:])
    return next((j for j in chains[0] if j in shared), 0)


def _spread(excess: Sequence[float], half: float) -> List[float]:
    return _moving_average(_running(excess, half, max), half)


def _half_width(fps: float) -> float:
    """HIPS_WINDOW_S in frames, not rounded to whole frames (0.133 s at 30 fps, 0.117 at 60 and 120 fps)."""
    return max(1.0, HIPS_WINDOW_S * fps)


def _filled(values: Sequence[Optional[float]]) -> List[float]:
    """`values` with each gap filled by a straight line between its neighbours (held at the ends; 0 if none)."""
    known = [t for t, v in enumerate(values) if v is not None]
    if not known:
        return [0.0] * len(values)
    out = [values[known[0]]] * known[0]  # type: List[float]  # type: ignore[assignment]
    for a, b in zip(known, known[1:]):
        out += [values[a] + (values[b] - values[a]) * (t - a) / float(b - a) for t in range(a, b)]  # type: ignore[operator]
    return out + [values[known[-1]]] * (len(values) - known[-1])  # type: ignore[list-item]


def _running(values: Sequence[float], half: float, pick) -> List[float]:
    """Each value replaced by the `pick` (min or max) of the values within `half` frames of it (a
    fraction of a frame: the values between frames on straight lines, read at the window's ends)."""
    count = len(values)
    whole = int(math.floor(half + 1e-9))
    part = half - whole
    out = []
    for t in range(count):
        window = list(values[max(0, t - whole):t + whole + 1])
        if part > 1e-9:
            for inner, outer in ((t - whole, t - whole - 1), (t + whole, t + whole + 1)):
                if 0 <= outer < count:
                    window.append(values[inner] + part * (values[outer] - values[inner]))
        out.append(pick(window))
    return out


def _moving_average(values: Sequence[float], half: float) -> List[float]:
    """Centred moving average over `half` frames either side (a fraction of a frame: the outer frames
    weighed by it), the window cut at the clip's ends (an infinite bound stays infinite only where every
    bound it averages is)."""
    count = len(values)
    whole = int(math.floor(half + 1e-9))
    part = half - whole
    out = []
    for t in range(count):
        low, high = max(0, t - whole), min(count, t + whole + 1)
        total, weight = sum(values[low:high]), float(high - low)
        if part > 1e-9:
            for outer in (t - whole - 1, t + whole + 1):
                if 0 <= outer < count:
                    total += part * values[outer]
                    weight += part
        out.append(total / weight)
    return out


def cleared_swings(foot: Foot, goals: Sequence[Optional[Goal]], free: Sequence[bool], poses, fps: float,
                   floor: float) -> List[Optional[Goal]]:
    """`goals` with each free frame's (`free`; the posed foot where `goals` has none) turned toward
    standing flat (as at bind, its heading kept) and lifted by what keeps the sole above `floor`,
    planned over the clip so neither steps from frame to frame: each frame by the least turn that clears
    it (closed form about the axis that takes it to flat, `legs.clearing_pitch`, at most
    FOOT_PITCH_MAX_DEG, never past flat), spread as the hips' excess is (`_spread`), then what the turn
    leaves under the floor spread the same way, less what a frame already clears it by. Each is never
    less than the frame itself needs; what the spread adds beyond that is faded out as the ease brings
    the foot onto a pin (`ease.share` of the time to the nearest pinned frame), which has the foot's
    height and turn (unfaded, a spread turn left its pin in a step, and the frame rate moved it 5 cm).
    One way to turn, continuous in the pose, so float noise has no choice to flip (toe-up or toe-down
    about the foot's pitch axis, whichever left less to lift, did). Kimodo's foot comes down heel first
    pitched and rolled: turned in pitch alone, and near its landing not at all (all of the turn faded),
    the swinging sole of RobotExpressive as Blender imports it (63 cm of its 4.5 m behind the ankle, 50
    cm wide) was left 10-25 cm under the floor, the leg lifting it 15-22 cm (its thigh 30 deg off
    Kimodo's). What a frame still needs is the solve's (`legs.solve`'s floor branch). A free frame with
    nothing planned keeps its goal (None: the foot left as posed)."""
    frames = len(poses)
    half = _half_width(fps)
    limit = math.radians(FOOT_PITCH_MAX_DEG)
    arms = {}  # type: Dict[int, Tuple[Goal, Vec3, float, List[Vec3]]]
    for frame in range(frames):
        if free[frame]:
            rotations, positions = poses[frame]
            goal = goals[frame]
            if goal is None:
                toe = None if foot.toe is None else quat_multiply(quat_conjugate(rotations[foot.ankle]), rotations[foot.toe])
                goal = (positions[foot.ankle], rotations[foot.ankle], toe)
            sole = [subtract(p, goal[0]) for p in standing_sole(foot, rotations, positions, goal)]
            flat = quat_multiply(yaw_rotation(foot_yaw(foot, goal[1])), foot.bind_rotation)
            turn = quat_to_rotation_vector(quat_multiply(flat, quat_conjugate(goal[1])))
            angle = length(turn)
            axis = tuple(c / angle for c in turn) if angle > 0.0 else foot.lateral
            arms[frame] = (goal, axis, angle, sole)

    def lowest(frame: int, turn: float) -> float:
        """The sole's lowest point over `floor` turned by `turn` toward flat."""
        goal, axis, angle, sole = arms[frame]
        turned = quat_from_axis_angle(axis, min(turn, limit))
        return goal[0][1] + min(quat_rotate(turned, p)[1] for p in sole) - floor

    raw = [0.0] * frames
    for frame, (goal, axis, angle, sole) in arms.items():
        if angle > 0.0:
            raw[frame] = min(angle, clearing_pitch(sole, axis, floor - goal[0][1], True))
    # Frames from the nearest pinned frame, forward then back.
    apart = [math.inf] * frames
    for order in (range(frames), range(frames - 1, -1, -1)):
        last = math.inf
        for frame in order:
            last = 0.0 if not free[frame] else last + 1.0
            apart[frame] = min(apart[frame], last)
    fades = [1.0 - share(a / fps) if f else 0.0 for a, f in zip(apart, free)]
    # Never past flat; never less than a frame needs, the spread's surplus faded near a pin.
    turns = [min(max(r, s * f), arms[t][2]) if t in arms else 0.0
             for t, (r, s, f) in enumerate(zip(raw, _spread(raw, half), fades))]
    heights = [lowest(t, turns[t]) if t in arms else 0.0 for t in range(frames)]
    needs = _spread([max(0.0, -h) for h in heights], half)
    lifts = [max(-h, (n - max(0.0, h)) * f, 0.0) for n, h, f in zip(needs, heights, fades)]
    result = list(goals)
    for frame, (goal, axis, angle, _) in arms.items():
        if turns[frame] != 0.0 or lifts[frame] != 0.0:
            turn = quat_from_axis_angle(axis, min(turns[frame], limit))
            result[frame] = ((goal[0][0], goal[0][1] + lifts[frame], goal[0][2]), quat_normalize(quat_multiply(turn, goal[1])), goal[2])
    return result
