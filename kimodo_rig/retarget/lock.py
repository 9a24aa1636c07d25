"""The foot lock for two-bone legs: planted feet carried, pinned where they land and reached with
two-bone IK, the hips coming down or up where a leg cannot reach or fold, within a budget of the
legs' directions. Used by kimodo_rig.retarget.feet."""
from __future__ import annotations

import math
from array import array
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from ..model import Skeleton
from ..ops.fk import rest_pose
from ..rotations import (
    IDENTITY,
    Quat,
    Vec3,
    add,
    cross,
    dot,
    length,
    normalize,
    quat_angle,
    quat_between,
    quat_conjugate,
    quat_from_axis_angle,
    quat_multiply,
    quat_normalize,
    quat_rotate,
    quat_slerp,
    scale,
    subtract,
)
from .hips import _moved
from .hips_path import least_turning_offsets
from .mapping import SIDES, HumanoidMap
from .solve import centred_average
from .soles import (
    BLEND_FRAMES,
    _at_most,
    _carried,
    chain_length,
    _ease,
    _leg_length,
    leg_chain,
    _lowest,
    _mean_rotation,
    _middle,
    Point,
    posed_point,
    Soles,
    _solve_chain,
    subtree,
    _turn_about,
    two_bone,
)

REACH_LIMIT = 0.995  # of the leg's length: a locked leg never snaps fully straight
HIPS_TURN_SHARE = 0.75  # of the turn that would keep both planted feet exactly where they were pinned
HIPS_TURN_RETURN_DEG = 2.0  # a frame: how fast the hips' turn goes back to the clip's with one foot down
FOOT_PITCH_MAX_DEG = 90.0
ROLL_PACE_DEG = 3.0  # a frame: how much faster than the animation turns it a planted foot may turn rolling onto its toe
HUMAN_TOE_ARM = 0.175  # of the leg: ankle to toe point on a human foot, where ROLL_PACE_DEG holds (a longer foot rolls slower)
SETTLE_DEG = 8.0  # a frame: how fast a foot comes down from its toe onto its heel (`_foot_goals`)
SLAP_DROP = 0.02  # of the leg: a long foot's flat landing that would drop its ankle more is landed on its front
HOLD_CANDIDATES = 8  # rotations tried per flat span (its frames' own, evenly spread, and their mean)
HOLD_SAMPLES = 16  # frames per flat span the candidates are judged on
TOE_ROLL_MAX_DEG = 30.0  # the most a foot on its toe alone rolls from the animation's rotation
# A foot with no toe bone rolls as one piece on its sole's front, where Kimodo bends its toe (in a kneel,
# the toes tucked under, 60-90 deg): it may roll further, never off its front (`_standing_on_front`). With
# TOE_ROLL_MAX_DEG (30) the mannequin-shaped foot whose mesh hangs 25 cm behind its ankle kneels (g1_02)
# with its toe 10 cm per 1.7 m up; with 90, on the floor.
FRONT_ROLL_MAX_DEG = 90.0
# Of the leg's length: how much higher over the foot's lowest point its front may end rolled than unrolled.
# With none (float noise only) the roll was all or nothing: a toe-less foot still on its heel's side,
# turned on the spot (a roll about the vertical) lifted its front by millimetres and did not roll at
# all, then the frame it came onto its front it rolled wholly, the ankle's goal 4 cm back and 9 forward
# (the dress, g1_04: the thigh 12 deg in a frame beyond Kimodo's).
FRONT_LIFT = 0.004
FRONT_ROLL_STEPS = 24  # bisection steps: 90 deg / 2**24, so float noise between two readers of one rig turns no foot visibly
HIP_DROP_MAX_DEG = 35.0  # the most the hips roll to bring one leg's hip down (a kneel)
LOCK_COSINE_BUDGET = 0.01  # the most the lock takes off a thigh's or a shin's mean cosine over a clip
# Per Kimodo skeleton, the most the lock's reach may take (`_reach_budget`): G1's legs are judged at 0.97
# (its hips, knees and feet are not a human's), SOMA's at 0.99, so on a G1 clip the lock may spend 0.02
# and still keep 0.01 over that bar: a kneeling toe then floats 13 cm per 1.7 m on the long-shinned
# Quaternius female instead of 17 (measured; every segment stays >= 0.98 on the shared rigs). 0.021 since
# the estimate counts the other leg's fold as the hips come down (`_turns_at`): a kneel's front thigh
# cost 0.0007 more than it was estimated at, and at 0.02 the now honest estimate let the kneeling toe of
# the mannequin with its feet's mesh behind the ankles float 8.6 cm instead of 7.9 (thigh 0.9784 -> 0.9793).
REACH_BUDGETS = {"g1skel34": 0.021}
LIFT_GRID = 12
LIFT_STEPS = 8
LET_GO_STEPS = 10
SOLVED_OF_LEG = 1e-5  # of the leg's length: a sole this near its goal is where the solve wants it
FLOOR_SOLVES = 3  # solves per frame and leg, each after raising the goal by what a sole the shin carries is under
# A sole the shin carries (no foot bone) rocks with the shin; its pin is the point it stands on, which it
# rolls over (`_rock`). In a frame the roll may turn a thigh or shin by at most this (1 - cosine, 5.7 deg)
# beyond where the plain lock has it: a kneel folds the leg about a foot that cannot bend, and rolled
# wholly its shin lost 0.04 of its mean cosine over G1's kneeling clip. ROLL_SOLVES: solves per frame.
ROLL_TURN = 0.005
ROLL_SOLVES = 4
# What the rocking leaves above the floor on a planted frame is then turned down about the knee
# (`_press_soles`): into G1's kneel Kimodo's ankle rises 10 -> 38 cm while its toe stays down, which a foot
# the shin carries cannot follow, and the kneeling toe floated 8 cm per 1.7 m. A sole within PRESS_LEAVE of
# the leg's length of the floor (0.7 cm per 1.7 m) stays: where its lowest point is near the knee, the
# last millimetres would swing the shin's far end by centimetres. The turn is found by scanning
# PRESS_SCAN steps up to PRESS_MAX_DEG each way, then bisection; it changes by at most PRESS_RATE_DEG a
# frame (eased into the frames either side, never taking the sole under the floor): unpaced, a kneel's
# end turned the shin 29 deg in one frame where Kimodo's turned 2; paced, 19, where the knee's end of the
# shin lying on the floor stops the easing.
PRESS_LEAVE = 0.008
PRESS_MAX_DEG = 40.0
PRESS_SCAN = 80
PRESS_BISECTIONS = 30
PRESS_RATE_DEG = 5.0


def _follow_planted_feet(tmap: HumanoidMap, soles: Soles, sides: Sequence[str],
                         contacts: Dict[str, List[Tuple[bool, bool]]], poses, roots: array) -> List[Tuple[float, float]]:
    """The hips carried horizontally by the planted feet, so the legs keep the clip's directions: a foot
    that lands is pinned where it is (its heel, or its toe when only the toe is down), and while it stays
    planted the body moves so that point stays put (held through flight). A leg of other proportions
    than Kimodo's then strides its own length instead of sliding. While both feet are planted the hips
    also turn about the vertical through the middle of the thighs' roots, the legs carried along
    keeping their world directions (and the body above the hips its world rotations), by HIPS_TURN_SHARE
    of the turn that keeps both feet where they were pinned: hips wider than Kimodo's for their legs,
    turned as Kimodo turns its own with both feet down, swing the feet round with them (RobotExpressive
    on soma_04: 40 cm each way). What the turn leaves, the legs take (`_foot_goals`' leash): turned
    wholly, the feet's distance apart (which no turn changes) went to the legs, and the hips coming down
    for one of them bent the other more. With one foot down the turn goes back to the clip's (at most
    HIPS_TURN_RETURN_DEG a frame, about that foot's thigh root). Eased over BLEND_FRAMES either side;
    returns the horizontal change (x, z) the hips got in each frame."""
    skeleton = tmap.skeleton
    frames = len(poses)
    thighs = [tmap.bones["thigh_" + side] for side in SIDES]
    pins: Dict[str, Tuple[bool, Tuple[float, float]]] = {}
    turn, offset = 0.0, (0.0, 0.0)
    back = math.radians(HIPS_TURN_RETURN_DEG)
    raw = []
    for frame in range(frames):
        rotations, positions = poses[frame]
        centre = _middle(positions, thighs)
        wants = {}
        for side in sides:
            heel_on, toe_on = contacts[side][frame]
            toe_point = soles.toe_points.get(side)
            if toe_point is None:
                heel_on, toe_on = heel_on or toe_on, False
            if not (heel_on or toe_on):
                pins.pop(side, None)
                continue
            point = positions[tmap.bones["foot_" + side]] if heel_on else posed_point(toe_point, rotations, positions)  # type: ignore[arg-type]
            root = positions[tmap.bones["thigh_" + side]]
            pin = pins.get(side)
            if pin is None or pin[0] != heel_on:  # lands, or rolls onto its toe: pinned where it is now
                moved = _carried(root, centre, turn, offset)
                pins[side] = (heel_on, (point[0] + moved[0], point[2] + moved[1]))
                continue
            wants[side] = ((root[0] - centre[0], root[2] - centre[1]), (pin[1][0] - point[0], pin[1][1] - point[2]))
        if len(wants) == 2:
            # The turn that points the line between the thighs' roots where the pins want it, and the
            # shift that puts the middle of the two where they want it.
            (ra, wa), (rb, wb) = wants[SIDES[0]], wants[SIDES[1]]
            base = (ra[0] - rb[0], ra[1] - rb[1])
            wanted = (base[0] + wa[0] - wb[0], base[1] + wa[1] - wb[1])
            turn = HIPS_TURN_SHARE * math.atan2(base[1] * wanted[0] - base[0] * wanted[1], base[0] * wanted[0] + base[1] * wanted[1])
            offset = ((wa[0] + wb[0]) / 2.0, (wa[1] + wb[1]) / 2.0)
        else:
            turn -= max(-back, min(back, turn))
            if wants:
                (r, w), = wants.values()
                swing = _carried((r[0], 0.0, r[1]), (0.0, 0.0), turn, (0.0, 0.0))
                offset = (w[0] - swing[0], w[1] - swing[1])
        raw.append((turn, offset[0], offset[1]))
    eased = [centred_average([r[k] for r in raw], BLEND_FRAMES) for k in range(3)]
    # The hips and any joint between them and a thigh turn; every other joint moves with the first joint
    # below those (a thigh, the spine: its subtree keeps its world rotations).
    carried = _moved(skeleton, thighs, poses, eased)
    for frame, (dx, dz) in enumerate(carried):
        roots[frame * 3] += dx
        roots[frame * 3 + 2] += dz
    return carried


def _pitch_onto_floor(skeleton: Skeleton, tmap: HumanoidMap, soles: Soles, side: str,
                      flags: Sequence[Tuple[bool, bool]], poses, floor: float) -> None:
    """A foot whose heel is up (on its toes, or in the air) and that reaches under the floor is turned
    about its ankle until its lowest sole point is on the floor: a long foot pitched as
    Kimodo's short one is would push its toes through the ground (or lift the body off it).

    One turn, solved in closed form (`_least_pitch`) about one level axis: across the foot, square to
    its own heading (`Soles.headings`: the facing at rest, turned as the foot is), toe up or heel up, whichever
    is the lesser turn that puts every sole point on the floor (where neither does, the one that brings
    the lowest highest). The turn goes to nothing as the depth does, with no cut-off and no choice of
    one point among near-equals, so a pose a hair different (Blender's float32 rest) gives a foot a hair
    different. Not about the line the points under the floor reach along from the ankle, each by how
    deep it is: where they sit either side of the ankle (a heel's two corners) their reach nearly
    cancels, and its direction swung by 3e-4 rad for 1e-6 m of input (the Quaternius dress, g1_02 f64:
    its foot turned 61 deg about a line 22 deg off its own, its tip 0.5 mm apart between Blender's rest
    and the file's). Not its sole's front either: the robot's, its foot's mesh behind the ankle as
    Blender's importer places it, lies aside, and its thigh turned further from Kimodo's."""
    chain = subtree(skeleton, tmap.bones["foot_" + side])
    for frame, (rotations, positions) in enumerate(poses):
        if flags[frame][0] or flags[frame][1]:  # in contact: the lock grounds it (pinned, its sole on the floor)
            continue
        _pitch_foot(chain, soles.feet[side], soles.headings.get(side), rotations, positions, floor, 0.0)


def _pitch_foot(chain: Sequence[int], sole: Sequence[Point], front: Optional[Point], rotations: List[Quat],
                positions: List[Vec3], floor: float, rise: float) -> None:
    """`_pitch_onto_floor` for one pose, its foot (`chain`'s first joint) as if `rise` higher than it is;
    `front`: a point ahead of the ankle along the foot's heading (None: the line the points under the
    floor reach along)."""
    ankle = positions[chain[0]]
    arms = [subtract(posed_point(p, rotations, positions), ankle) for p in sole]
    height = floor - ankle[1] - rise  # of the floor above the ankle
    depths = [height - arm[1] for arm in arms]
    total = sum(d for d in depths if d > 0.0)
    if not total > 0.0:
        return
    limit = math.radians(FOOT_PITCH_MAX_DEG)
    heading = None if front is None else subtract(posed_point(front, rotations, positions), ankle)
    along = 0.0 if heading is None else math.hypot(heading[0], heading[2])
    if along > 0.0:
        forward = (heading[0] / along, 0.0, heading[2] / along)  # type: ignore[index]
        points = [(arm[1], dot(arm, forward)) for arm in arms]
        behind = [(up, -ahead) for up, ahead in points]  # heel up: a turn lifts what is behind
        toe_up, heel_up = _least_clearing(points, height, limit), _least_clearing(behind, height, limit)
        if toe_up is not None and (heel_up is None or toe_up <= heel_up):
            angle = toe_up
        elif heel_up is not None:
            angle = -heel_up
        else:
            toe_up, heel_up = _highest_lowest(points, limit), _highest_lowest(behind, limit)
            angle = toe_up if _lowest_turned(points, toe_up) >= _lowest_turned(behind, heel_up) else -heel_up
    else:
        out = (sum(d * arm[0] for d, arm in zip(depths, arms) if d > 0.0), 0.0,
               sum(d * arm[2] for d, arm in zip(depths, arms) if d > 0.0))
        size = math.hypot(out[0], out[2])
        if size < 1e-9 * total:  # the points under sit right below the ankle: no turn lifts them
            return
        forward = (out[0] / size, 0.0, out[2] / size)
        angle = _least_pitch([(arm[1], dot(arm, forward)) for arm in arms], height, limit)
    if angle != 0.0:
        axis = (-forward[2], 0.0, forward[0])  # (0, -1, 0) x forward: turning about it lifts what is ahead
        _turn_about(chain, rotations, positions, ankle, quat_from_axis_angle(axis, angle))


def _lowest_turned(points: Sequence[Tuple[float, float]], t: float) -> float:
    """The lowest of the (up, ahead) points after a pitch by t (`_least_pitch`'s measure)."""
    c, s = math.cos(t), math.sin(t)
    return min(up * c + ahead * s for up, ahead in points)


def _least_pitch(points: Sequence[Tuple[float, float]], floor: float, limit: float) -> float:
    """The least turn t in [0, limit] after which every point is at or above `floor`, each point given
    as (up, ahead) from the pivot, its height turned being up cos t + ahead sin t; where none gets them
    all there, the t in that range that brings the lowest of them highest."""
    clearing = _least_clearing(points, floor, limit)
    return clearing if clearing is not None else _highest_lowest(points, limit)


def _least_clearing(points: Sequence[Tuple[float, float]], floor: float, limit: float) -> Optional[float]:
    """`_least_pitch` where a turn in [0, limit] puts every point at or above `floor`; else None."""
    slack = 1e-12 * (1.0 + abs(floor))  # rounding: a point put exactly on the floor is on it
    starts = [0.0]
    for up, ahead in points:
        radius = math.hypot(up, ahead)
        if radius > 0.0 and -1.0 < floor / radius <= 1.0:
            # Heights above the floor form one arc of turns, centred where the point is highest.
            start = (math.atan2(ahead, up) - math.acos(floor / radius)) % (2.0 * math.pi)
            if start <= limit:
                starts.append(start)
    for t in sorted(starts):
        if _lowest_turned(points, t) >= floor - slack:
            return t
    return None


def _highest_lowest(points: Sequence[Tuple[float, float]], limit: float) -> float:
    """The turn in [0, limit] that brings the lowest of the points highest: at an end, where two points
    cross, or at a point's highest."""
    candidates = [0.0, limit]
    for i, (up, ahead) in enumerate(points):
        candidates.append(math.atan2(ahead, up))
        for up2, ahead2 in points[i + 1:]:
            crossing = math.atan2(up - up2, ahead2 - ahead)
            candidates += [crossing, crossing + math.pi]
    inside = sorted(t % (2.0 * math.pi) for t in candidates)
    return max((t for t in inside if t <= limit), key=lambda t: _lowest_turned(points, t))


def _hold_flat_feet(skeleton: Skeleton, tmap: HumanoidMap, soles: Soles, side: str, flags: Sequence[Tuple[bool, bool]],
                    poses) -> None:
    """While heel and toe are both in contact the foot is flat on the floor: its world rotation is held
    through each such span (turned about the ankle), eased from and back to the animation's over
    BLEND_FRAMES before and after. The rotation held is the span's first unless that turns the leg too
    much (`_held`): a big sole held as the animation has it on the span's first frame, while Kimodo's
    small foot still rolls down onto the floor, lifts the ankle by the roll all span long."""
    foot = tmap.bones["foot_" + side]
    chain = subtree(skeleton, foot)
    frames = len(poses)
    deltas: List[Optional[Quat]] = [None] * frames
    start = None
    for frame in range(frames + 1):
        flat = frame < frames and flags[frame][0] and flags[frame][1]
        if flat and start is None:
            start = frame
        if flat or start is None:
            continue
        held = _held(tmap, side, soles.feet[side], poses[start:frame])
        for f in range(start, frame):
            deltas[f] = quat_normalize(quat_multiply(held, quat_conjugate(poses[f][0][foot])))
        start = None
    for frame, delta in enumerate(_eased_turns(deltas, [d is None for d in deltas])):
        if delta is not None:
            rotations, positions = poses[frame]
            _turn_about(chain, rotations, positions, positions[foot], delta)


def _eased_turns(turns: Sequence[Optional[Quat]], free: Sequence[bool]) -> List[Optional[Quat]]:
    """The frames' turns, the `free` frames without one given the nearest's eased in before it and out
    after it over BLEND_FRAMES (between two, the two eased turns weighed by their weights)."""
    frames = len(turns)
    out = list(turns)
    given = [t is not None for t in turns]
    for frame in range(frames):
        if turns[frame] is not None or not free[frame]:
            continue
        near = [(w, turns[u]) for w, u in _blend_neighbours(frame, given)]
        if not near:
            continue
        turn = quat_slerp(IDENTITY, near[0][1], near[0][0])  # type: ignore[arg-type]
        if len(near) == 2:
            turn = quat_slerp(turn, quat_slerp(IDENTITY, near[1][1], near[1][0]), near[1][0] / (near[0][0] + near[1][0]))  # type: ignore[arg-type]
        out[frame] = turn
    return out


def _held(tmap: HumanoidMap, side: str, sole: Sequence[Point], span) -> Quat:
    """The foot's world rotation to hold over a flat span (its poses): the span's first (the foot as it
    lands), unless the ankle moving for that sole to stay on the floor would take more than
    LOCK_COSINE_BUDGET off the leg's cosines (thigh and shin, over HOLD_SAMPLES of the span's frames);
    then of the span's own rotations (HOLD_CANDIDATES of them, evenly spread, and their mean) the one that
    turns the leg least (a turn about the vertical moves no ankle: the heading is the animation's)."""
    foot = tmap.bones["foot_" + side]
    count = len(span)
    picks = sorted({round(k * (count - 1) / max(1, HOLD_CANDIDATES - 2)) for k in range(HOLD_CANDIDATES - 1)})
    candidates = [span[k][0][foot] for k in picks] + [_mean_rotation([rotations[foot] for rotations, _ in span])]
    samples = []
    for k in sorted({round(k * (count - 1) / max(1, HOLD_SAMPLES - 1)) for k in range(HOLD_SAMPLES)}):
        rotations, positions = span[k]
        ankle, inverse = positions[foot], quat_conjugate(rotations[foot])
        local = [quat_rotate(inverse, subtract(posed_point(p, rotations, positions), ankle)) for p in sole]
        samples.append((positions, local, min(quat_rotate(rotations[foot], q)[1] for q in local)))

    def turned(held: Quat) -> float:
        total = 0.0
        for positions, local, low in samples:
            rise = low - min(quat_rotate(held, q)[1] for q in local)
            ankle = positions[foot]
            total += sum(1.0 - c for c in _leg_turns(tmap, side, positions, (ankle[0], ankle[1] + rise, ankle[2])))
        return total

    first = span[0][0][foot]
    if turned(first) <= LOCK_COSINE_BUDGET * len(samples):
        return first
    return min(candidates, key=turned)


def _foot_goals(tmap: HumanoidMap, soles: Soles, side: str, flags: Sequence[Tuple[bool, bool]], poses,
                floor: float, leash: float, source_track: Sequence[Vec3]) -> List[Optional[Vec3]]:
    """Per frame, where the foot joint must be (None: where the animation has it). A contact span pins
    the heel (the foot joint) or the toe point where it lands; when the heel lifts the toe stays, when it
    comes down it stays where the toe put it; the foot's lowest sole point is on the floor throughout.
    On its toe alone the foot (in `poses`) rolls on the pinned toe, turned about the ankle towards where
    the leg has the ankle (at most TOE_ROLL_MAX_DEG; eased out into the air over BLEND_FRAMES).
    When the heel comes down after the toe alone, the foot turns from its last rotation on the toe to
    the held one at SETTLE_DEG a frame, about the pinned toe, and its heel is pinned where it has come
    down: held at once, a foot tucked under in a kneel came flat in one frame, the ankle 26 cm down
    (the dress, raw g1_02: the thigh 13 deg beyond Kimodo's), where Kimodo's comes down over four.
    Where Kimodo's own planted foot drifts on the ground (`source_track`: its foot joint, in the
    character's frame and scale) more than `leash` from where it landed (turning on the spot), the pin
    is dragged by the drift beyond it: a long drift bent into the legs would fold them."""
    foot = tmap.bones["foot_" + side]
    toe_point = soles.toe_points.get(side)
    front_lift = FRONT_LIFT * _leg_length(tmap, side)
    longer = 1.0  # how much shorter, for the leg, a human foot is than this one (1: not longer)
    if toe_point is not None:
        # The same degrees of roll raise the ankle by the foot's length: the robot's foot, 0.55 of its leg
        # against a human's 0.17, rose 6 cm (4% of its leg) in a frame rolling off a one-frame flat contact.
        rest_rotations, rest_positions = rest_pose(tmap.skeleton)
        arm = length(subtract(posed_point(toe_point, rest_rotations, rest_positions), rest_positions[foot]))
        longer = min(1.0, HUMAN_TOE_ARM * _leg_length(tmap, side) / max(arm, 1e-9))
    pace = ROLL_PACE_DEG * longer
    frames = len(poses)
    offsets: List[Optional[Vec3]] = [None] * frames  # ankle goal minus animated ankle, in contact frames
    rolls: List[Optional[Quat]] = [None] * frames  # the foot's turn about the ankle, on its toe alone
    unrolled: List[Optional[Quat]] = [None] * frames  # the foot's world rotation before its roll, in contact frames
    chain = subtree(tmap.skeleton, foot)
    pin_heel: Optional[Vec3] = None
    pin_toe: Optional[Vec3] = None
    on_toe: Optional[Quat] = None  # the foot's rotation the last frame it stood on its toe alone
    settled: Optional[Tuple[int, int]] = None  # coming down from the toe: frames so far, frames it takes
    settling = SETTLE_DEG  # how fast it comes down, a frame
    lifted: Optional[Tuple[Vec3, int]] = None  # the heel's pin when it last lifted off its toe, and the frame
    anchor: Vec3 = (0.0, 0.0, 0.0)
    dragged: Vec3 = (0.0, 0.0, 0.0)
    for frame in range(frames):
        rotations, positions = poses[frame]
        heel_on, toe_on = flags[frame]
        if toe_point is None:
            heel_on, toe_on = heel_on or toe_on, False
        if not (heel_on or toe_on):
            pin_heel = pin_toe = lifted = on_toe = settled = None
            continue
        ankle = positions[foot]
        unrolled[frame] = rotations[foot]
        toe = posed_point(toe_point, rotations, positions) if toe_point is not None else ankle
        if pin_heel is None and pin_toe is None:
            # Where it lands, on the floor: the foot's lowest sole point brought to the rest floor.
            start: Vec3 = (0.0, floor - _lowest(soles.feet[side], rotations, positions), 0.0)
            anchor, dragged = source_track[frame], (0.0, 0.0, 0.0)
            if heel_on and longer < 1.0 and frame > 0 and offsets[frame - 1] is None:
                landing = _landing_on_front(tmap, soles, side, chain, poses[frame - 1], rotations, positions, floor,
                                            start[1], longer)
                if landing is not None:
                    pin_toe, on_toe = landing
                    settling = SETTLE_DEG * longer
        else:
            start = offsets[frame - 1] or (0.0, 0.0, 0.0)
        coming_down = False
        if heel_on and pin_heel is None and on_toe is not None:
            if settled is None:  # the first frame down: how many frames it takes at SETTLE_DEG
                settled = (0, max(1, math.ceil(math.degrees(quat_angle(quat_multiply(rotations[foot], quat_conjugate(on_toe))))
                                               / settling - 1e-9)))
            settled = (settled[0] + 1, settled[1])
            if settled[0] < settled[1]:
                coming_down = True
                down = quat_slerp(on_toe, rotations[foot], settled[0] / float(settled[1]))
                _turn_about(chain, rotations, positions, ankle, quat_normalize(quat_multiply(down, quat_conjugate(rotations[foot]))))
                toe = posed_point(toe_point, rotations, positions)  # type: ignore[arg-type]
                goal = add(pin_toe, subtract(ankle, toe))  # type: ignore[arg-type]
        if heel_on and not coming_down:
            if pin_heel is None:
                # Where it lands; or down from its toe, where the pinned toe keeps it (the foot turns about
                # the toe, which stays: a sole's front far from the ankle swung 5 cm as the foot came flat);
                # a toe-less foot back where it stood when it was up on its front only a moment (a one-frame
                # toe-only label in a stance: re-placed about that front, the Blender robot's heel moved 4 cm
                # and stayed there, bending its leg; kept to toe-less feet, whose front is wherever their mesh
                # is: with toe bones, as before, the mannequin's outputs unchanged).
                if pin_toe is None:
                    pin_heel = add(ankle, start)
                elif lifted is not None and frame - lifted[1] <= BLEND_FRAMES and not tmap.has("toe_" + side):
                    pin_heel = lifted[0]
                else:
                    pin_heel = add(pin_toe, subtract(ankle, toe))
            goal = pin_heel
        elif not heel_on:
            if pin_toe is None:
                pin_toe = add(toe, start)
            # The foot rolls on its pinned toe: turned about the ankle so that the ankle stays as near
            # where the leg has it as the foot's length allows (grounding a big sole as Kimodo's small
            # foot pitches on its toes took the ankle far down, and the hips with it).
            wanted = quat_between(subtract(toe, ankle), subtract(pin_toe, ankle))
            if tmap.has("toe_" + side):
                roll = _at_most(wanted, TOE_ROLL_MAX_DEG)
            else:  # the whole foot rolls where a toe would bend, standing on its front
                roll = _standing_on_front(chain, rotations, positions, _at_most(wanted, FRONT_ROLL_MAX_DEG),
                                          toe_point, soles.feet[side], front_lift)  # type: ignore[arg-type]
            if frame > 0 and offsets[frame - 1] is not None:
                roll = _paced_roll(roll, rotations[foot], unrolled[frame - 1], poses[frame - 1][0][foot], pace)  # type: ignore[arg-type]
            rolls[frame] = roll
            _turn_about(chain, rotations, positions, ankle, rolls[frame])  # type: ignore[arg-type]
            on_toe, settled, settling = rotations[foot], None, SETTLE_DEG
            toe = posed_point(toe_point, rotations, positions)  # type: ignore[arg-type]
            goal = add(pin_toe, subtract(ankle, toe))
        # Horizontally where the pins say; vertically with the sole on the floor in every contact frame
        # (a foot that rolls or pitches on the ground keeps touching it, never floats off it).
        grounded = ankle[1] + floor - _lowest(soles.feet[side], rotations, positions)
        drift = (source_track[frame][0] - anchor[0], 0.0, source_track[frame][2] - anchor[2])
        away = math.hypot(drift[0], drift[2])
        excess = scale(drift, 1.0 - leash / away) if away > leash else (0.0, 0.0, 0.0)
        drag = subtract(excess, dragged)
        dragged = excess
        # And never more than `leash` from where the legs put the foot (two planted feet Kimodo slides
        # apart, which the hips cannot both follow).
        held = add(goal, drag)
        off = math.hypot(held[0] - ankle[0], held[2] - ankle[2])
        if off > leash:
            pull = 1.0 - leash / off
            drag = add(drag, (pull * (ankle[0] - held[0]), 0.0, pull * (ankle[2] - held[2])))
        if drag != (0.0, 0.0, 0.0):
            goal = add(goal, drag)
            if heel_on and not coming_down:
                pin_heel = add(pin_heel, drag)  # type: ignore[arg-type]
            else:
                pin_toe = add(pin_toe, drag)  # type: ignore[arg-type]
        offset = (goal[0] - ankle[0], grounded - ankle[1], goal[2] - ankle[2])
        offsets[frame] = offset
        if heel_on and toe_on:
            pin_toe = add(toe, offset)
        elif toe_on:
            if pin_heel is not None:
                lifted = (pin_heel, frame)
            pin_heel = None
    for frame, roll in enumerate(_eased_turns(rolls, [o is None for o in offsets])):
        if roll is not None and offsets[frame] is None:  # eased out into the air (and in from it)
            rotations, positions = poses[frame]
            _turn_about(chain, rotations, positions, positions[foot], roll)
    blended = _blend_offsets(offsets, [o is not None for o in offsets])
    return [None if o is None else add(poses[f][1][foot], o) for f, o in enumerate(blended)]


def _landing_on_front(tmap: HumanoidMap, soles: Soles, side: str, chain: Sequence[int], before, rotations: Sequence[Quat],
                      positions: Sequence[Vec3], floor: float, lift: float, longer: float) -> Optional[Tuple[Vec3, Quat]]:
    """(the toe's pin, the rotation it comes down from) for a foot longer than a human's (`longer` < 1: a
    human toe arm over its own) landing flat from toe-down, where landing flat at once (lifted by `lift` to
    the floor) would take its ankle more than SLAP_DROP of the leg lower than landing on its front as it
    was the frame before (`before`, its pose); None otherwise. `_foot_goals` then brings it down onto its
    heel at SETTLE_DEG scaled by `longer`: Kimodo's foot slapped 10 deg flat in a frame, and the robot's
    ankle fell 14 cm with it, the leg pulled straight (soma_06 f87: 13.3 deg). Every landing settled so
    (no SLAP_DROP) spread the heel's fall into the contact: skate up 2-4x."""
    foot = chain[0]
    toe_point = soles.toe_points[side]
    before_rotations, before_positions = before
    was = before_rotations[foot]
    if math.degrees(quat_angle(quat_multiply(rotations[foot], quat_conjugate(was)))) <= SETTLE_DEG * longer:
        return None
    ankle = before_positions[foot]
    front = subtract(posed_point(toe_point, before_rotations, before_positions), ankle)  # type: ignore[arg-type]
    lowest = min(soles.feet[side], key=lambda p: posed_point(p, before_rotations, before_positions)[1])
    low = subtract(posed_point(lowest, before_rotations, before_positions), ankle)
    if front[0] * low[0] + front[2] * low[2] <= 0.0:  # not toe-down: its lowest point is not on the toe's side
        return None
    landed_rotations, landed_positions = list(rotations), list(positions)
    _turn_about(chain, landed_rotations, landed_positions, positions[foot], quat_normalize(quat_multiply(was, quat_conjugate(rotations[foot]))))
    on_front = floor - _lowest(soles.feet[side], landed_rotations, landed_positions)
    if on_front - lift <= SLAP_DROP * _leg_length(tmap, side):
        return None
    return add(posed_point(toe_point, landed_rotations, landed_positions), (0.0, on_front, 0.0)), was  # type: ignore[arg-type]


def _paced_roll(roll: Quat, unrolled: Quat, unrolled_before: Quat, before: Quat, pace: float = ROLL_PACE_DEG) -> Quat:
    """`roll` (a turn of the foot, whose world rotation is `unrolled` before it) cut so the foot turns from
    its rotation the frame before (`before`, planted) at most `pace` degrees more than the unrolled foot
    turned since (`unrolled_before`): as the heel lifts, a foot held flat rolled onto its toe in one frame
    (the ankle 4 cm up, the shin 14 deg more than Kimodo's: g1_03 onto the mannequin), while a foot Kimodo
    pitches fast (kneeling) still rolls as fast as the animation turns it."""
    wanted = quat_multiply(roll, unrolled)
    allowed = quat_angle(quat_multiply(unrolled, quat_conjugate(unrolled_before))) + math.radians(pace)
    step = quat_angle(quat_multiply(wanted, quat_conjugate(before)))
    if step <= allowed:
        return roll
    paced = quat_slerp(before, wanted, allowed / step)
    return quat_normalize(quat_multiply(paced, quat_conjugate(unrolled)))


def _standing_on_front(chain: Sequence[int], rotations: Sequence[Quat], positions: Sequence[Vec3], roll: Quat,
                       front: Point, sole: Sequence[Point], lift: float) -> Quat:
    """As far along `roll` (about the foot's joint, the chain's first) as keeps a toe-less foot's front,
    its toe point, no more than `lift` higher over the foot's lowest point than it is unrolled: a foot on its toe alone
    stands on that toe. Pointed at its pin, a foot whose mesh lies behind its ankle would turn heel-down,
    come down on its heel's back and lift the toe off the floor (4.6 cm in a frame)."""
    ankle = positions[chain[0]]

    def gap(fraction: float) -> float:
        turned_rotations, turned_positions = list(rotations), list(positions)
        _turn_about(chain, turned_rotations, turned_positions, ankle, quat_slerp(IDENTITY, roll, fraction))
        return posed_point(front, turned_rotations, turned_positions)[1] - _lowest(sole, turned_rotations, turned_positions)

    allowed = gap(0.0) + lift
    if gap(1.0) <= allowed:
        return roll
    low, high = 0.0, 1.0
    for _ in range(FRONT_ROLL_STEPS):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if gap(middle) <= allowed else (low, middle)
    return quat_slerp(IDENTITY, roll, low)


def _reach_goals(skeleton: Skeleton, tmap: HumanoidMap, soles: Soles, goals: Dict[str, List[Optional[Vec3]]],
                 poses, roots: array, floor: float, budget: float, knee_floors: Mapping[str, Sequence[float]],
                 contacts: Optional[Mapping[str, Sequence[Tuple[bool, bool]]]] = None) -> None:
    """Bring each foot to its goal with two-bone IK, turning the legs as little as the goals allow:
    where both feet have goals at different heights (one on its heel, the other on its toes or kneeling
    behind it) the hips first go up or down by what turns the legs least (`_shared_lift`). Where the
    lock would still take more than `budget` off a thigh's or shin's mean cosine over the
    clip, the hips first drop the side of the foot that must come down most (`_drop_hip`), then the
    frames that still turn them most have their goals' heights let go towards where the legs have the
    feet (`_loosened`: there a planted sole floats, still pinned horizontally). Where a leg cannot
    reach its goal the hips come down, where it cannot fold so far they go up; the letting go and those
    changes are eased over BLEND_FRAMES either side, then the hips take the path near the eased one that
    turns the legs least (`_hips_offsets`); no foot ends under the floor. A sole the shin
    carries rocks on the floor through the `contacts` (the lock's; None: no lock) as `_rock` has it, and
    what that leaves over the floor is turned down onto it (`_press_soles`)."""
    frames = len(poses)
    sides = [side for side in SIDES if leg_chain(tmap, side) is not None]
    # Where the goals were set: a goal eased in or out of a span (`_blend_offsets`) is the animation's
    # foot plus part of the span's offset, but the hips move below (rolled, lifted, lowered), and a foot
    # with no goal moves with them. Eased goals follow that move by the share they are not pinned
    # (`_pinned_shares`), or the leg snapped where the easing began: 29 deg of knee in one frame where
    # the hips had come down 4 cm (g1_03 onto the mannequin).
    set_at = {side: [poses[frame][1][tmap.bones["foot_" + side]] for frame in range(frames)] for side in sides}
    pinned = _pinned_shares(goals, contacts, sides)

    def let_go_amounts() -> List[float]:
        settled = [_settle(tmap, soles, sides, goals, poses[frame], frame, floor, 0.0) for frame in range(frames)]
        bar = _turn_bar([turns for _, turns in settled], budget)
        return [_let_go(tmap, soles, sides, goals, poses[frame], frame, floor, bar) if min(settled[frame][1], default=1.0) < bar else 0.0
                for frame in range(frames)]

    amounts = let_go_amounts()
    if _drop_hip(skeleton, tmap, sides, goals, poses, roots, amounts, knee_floors):
        amounts = let_go_amounts()  # the hips rolled: what the lock must still let go
    for frame, amount in enumerate(centred_average(_ease(amounts), BLEND_FRAMES)):
        if amount > 0.0:
            for side in sides:
                goal = goals[side][frame]
                if goal is not None:
                    goals[side][frame] = _loosened(goal, poses[frame][1][tmap.bones["foot_" + side]], amount)
    # Averaged at the clip's ends as anywhere: kept raw there, a contact in the last frame dropped the
    # hips 6 cm in it (the robot, soma_02).
    lifts = centred_average([_shared_lift(tmap, soles, sides, {side: goals[side][frame] for side in sides}, poses[frame], floor)
                             for frame in range(frames)], BLEND_FRAMES, keep_ends=False)
    reach = [_hips_reach(tmap, sides, {side: goals[side][frame] for side in sides}, poses[frame][1], lifts[frame])
             for frame in range(frames)]
    downs, ups = _ease([down for down, _ in reach]), _ease([up for _, up in reach])
    on_shin = {side: _sole_on_shin(skeleton, tmap, soles, side) for side in sides}
    # The foot and what it carries, where it carries the sole (pitched onto the floor below).
    feet_carrying = {side: subtree(skeleton, tmap.bones["foot_" + side]) for side in sides if not on_shin[side]}
    offsets = _hips_offsets(skeleton, tmap, soles, sides, goals, poses, lifts, reach, [b - a for a, b in zip(downs, ups)],
                            pinned, on_shin, feet_carrying, contacts, floor)
    eased = [lift + offset for lift, offset in zip(lifts, offsets)]  # the hips' change: negative comes down
    rocking = {side: _Rocking() for side in sides if contacts is not None and on_shin[side]}
    for frame in range(frames):
        rotations, positions = poses[frame]
        for side, rock in rocking.items():
            rock.next_frame(contacts[side][frame][0] or contacts[side][frame][1], goals[side], frame)  # type: ignore[index]
        if eased[frame] != 0.0:
            roots[frame * 3 + 1] += eased[frame]
            positions[:] = [(p[0], p[1] + eased[frame], p[2]) for p in positions]
        for side in SIDES:
            chain = leg_chain(tmap, side)
            if chain is None:  # a one-bone leg: the floor pass above has it on the floor
                continue
            thigh, calf, foot = chain
            goal = goals[side][frame] or positions[foot]
            share = pinned[side][frame]
            if goals[side][frame] is not None and share < 1.0:
                goal = add(goal, scale(subtract(positions[foot], set_at[side][frame]), 1.0 - share))
            low = _lowest(soles.feet[side], rotations, positions, subtract(goal, positions[foot]))
            if low < floor and side in feet_carrying and not (contacts is not None and any(contacts[side][frame])):
                # A foot brought down towards a contact is pitched up onto the floor where its goal puts
                # it, as `_pitch_onto_floor` does where the animation puts it: raised instead, a long foot
                # Kimodo still has toe-down the frame before it lands flat held the ankle up, then
                # dropped it 22 cm in the frame it landed (the robot, soma_06: the thigh 27 deg beyond Kimodo's).
                _pitch_foot(feet_carrying[side], soles.feet[side], soles.headings.get(side), rotations, positions, floor,
                            goal[1] - positions[foot][1])
                low = _lowest(soles.feet[side], rotations, positions, subtract(goal, positions[foot]))
            if low < floor:  # nothing under the floor, locked or not
                goal = add(goal, (0.0, floor - low, 0.0))
            rock = rocking.get(side)
            if rock is not None and rock.planted:
                _rock(skeleton, tmap, soles, side, poses[frame], goal, floor, rock)
            elif length(subtract(goal, positions[foot])) >= 1e-7:
                _reach_sole(skeleton, tmap, soles, side, rotations, positions, goal, floor)
    for side in rocking:
        _press_soles(skeleton, tmap, soles, side, poses, [any(contacts[side][frame]) for frame in range(frames)], floor)  # type: ignore[index]


def _hips_offsets(skeleton: Skeleton, tmap: HumanoidMap, soles: Soles, sides: Sequence[str],
                  goals: Mapping[str, Sequence[Optional[Vec3]]], poses, lifts: Sequence[float],
                  reach: Sequence[Tuple[float, float]], eased: Sequence[float], pinned: Mapping[str, Sequence[float]],
                  on_shin: Mapping[str, bool], feet_carrying: Mapping[str, List[int]],
                  contacts: Optional[Mapping[str, Sequence[Tuple[bool, bool]]]], floor: float) -> List[float]:
    """The hips' offset per frame beyond the lift: of those near the `eased` reach needs (`_hips_reach`,
    each eased in and out over BLEND_FRAMES) that still meet each frame's own need, the path that turns
    the legs least beyond the animation (`hips_path`). Eased alone, a need that ends in a frame still
    took the hips most of its depth down in the next ones, and a leg standing nearly straight there bent
    by degrees per millimetre: its knee 35 deg where Kimodo's is at 5, then back, the thigh 20 deg beyond
    Kimodo's turn in one frame (the shins carrying the soles, soma_06 f166: landing, a sole tipped by the
    bend is raised, which bends the knee further). Each leg is solved as `_reach_goals` solves it: two
    bones to the goal, following the hips by the share it is not pinned, a foot that would end under the
    floor pitched up onto it where it swings and raised by what is left (a leg with no goal too: the
    robot's swinging foot, dragged along the floor by hips that came down, bent its knee 18 deg where
    Kimodo's is straight), a sole the shin carries raised onto the floor (`_reach_sole`)."""
    if not sides:
        return list(eased)
    leg = max(chain_length(*(poses[0][1][j] for j in leg_chain(tmap, side))) for side in sides)  # type: ignore[misc, union-attr]

    def segments(positions: Sequence[Vec3]) -> List[Vec3]:
        return [normalize(segment) for side in sides for segment in _leg_segments(tmap, side, positions)]

    sole_below: Dict[Tuple[int, str], float] = {}

    def lowest_at(frame: int, side: str, rotations, positions, foot: int, goal: Vec3) -> float:
        """`_lowest` of the sole brought to `goal`: the sole's depth under the ankle is the same whatever
        the hips' offset (they move the foot and its sole alike), so it is found once per frame and side."""
        key = (frame, side)
        if key not in sole_below:
            sole_below[key] = _lowest(soles.feet[side], rotations, positions) - positions[foot][1]
        return goal[1] + sole_below[key]

    def solved(frame: int, offset: float) -> List[Vec3]:
        rotations, positions = poses[frame]
        rise = lifts[frame] + offset
        moved = [(p[0], p[1] + rise, p[2]) for p in positions]
        out: List[Vec3] = []
        for side in sides:
            foot = tmap.bones["foot_" + side]
            goal = goals[side][frame]
            goal = moved[foot] if goal is None else (goal[0], goal[1] + rise * (1.0 - pinned[side][frame]), goal[2])
            low = lowest_at(frame, side, rotations, positions, foot, goal)
            if low < floor and side in feet_carrying and not (contacts is not None and any(contacts[side][frame])):
                turned, placed = list(rotations), list(moved)
                _pitch_foot(feet_carrying[side], soles.feet[side], soles.headings.get(side), turned, placed, floor,
                            goal[1] - placed[foot][1])
                low = _lowest(soles.feet[side], turned, placed, subtract(goal, placed[foot]))
            if low < floor:
                goal = add(goal, (0.0, floor - low, 0.0))
            if length(subtract(goal, moved[foot])) < 1e-7:  # not turned
                legs = _leg_segments(tmap, side, moved)
            elif on_shin[side]:
                turned, placed = list(rotations), list(moved)
                _reach_sole(skeleton, tmap, soles, side, turned, placed, goal, floor)
                legs = _leg_segments(tmap, side, placed)
            else:
                legs = _solved_segments(tmap, side, moved, goal)
            out += [normalize(segment) for segment in legs]
        return out

    bounds = []
    for frame, (down, up) in enumerate(reach):
        low, high = (up if up > 0.0 else -math.inf), (-down if down > 0.0 else math.inf)
        bounds.append((low, high) if low <= high else (eased[frame], eased[frame]))  # both needs: as eased
    active = [any(goals[side][frame] is not None for side in sides) for frame in range(len(poses))]
    return least_turning_offsets(eased, bounds, active, solved, [segments(pose[1]) for pose in poses], leg)


def _pinned_shares(goals: Mapping[str, Sequence[Optional[Vec3]]], contacts: Optional[Mapping[str, Sequence[Tuple[bool, bool]]]],
                   sides: Sequence[str]) -> Dict[str, List[float]]:
    """Per side and frame, how much the goal pins the foot: 1 in a contact span (and wherever the goal is
    not eased: no contacts given), the easing's weight (`_blend_neighbours`) next to one, 0 without a goal."""
    shares = {}
    for side in sides:
        if contacts is None:
            shares[side] = [1.0 if goal is not None else 0.0 for goal in goals[side]]
            continue
        held = [any(flags) for flags in contacts[side]]
        shares[side] = [1.0 if held[frame] else min(1.0, sum(w for w, _ in _blend_neighbours(frame, held))) if goal is not None else 0.0
                        for frame, goal in enumerate(goals[side])]
    return shares


def _reach_sole(skeleton: Skeleton, tmap: HumanoidMap, soles: Soles, side: str, rotations: List[Quat],
                positions: List[Vec3], goal: Vec3, floor: float, pin: Optional[Tuple[Point, Tuple[float, float]]] = None) -> None:
    """The leg's two-bone solve towards `goal`. A sole the shin carries (no foot bone: the foot is the
    shin's tip) turns with the shin, so where the solve leaves it is measured again and the goal raised
    by what it is under (FLOOR_SOLVES solves at most). With `pin` (a sole point and where it must stand,
    x and z) the goal also moves by what that point misses horizontally (ROLL_SOLVES), never out of the
    leg's reach (`_within_reach`: a leg stretched behind slides its toe rather than lift it)."""
    thigh, calf, foot = leg_chain(tmap, side)  # type: ignore[misc]
    # Close enough, in the leg's own size: in metres (1e-5) a 0.3x character stopped solving later than
    # its 1x self, and its crouching sole ended 2.3 cm per 1.7 m elsewhere (footless shins, soma_03).
    near = SOLVED_OF_LEG * chain_length(positions[thigh], positions[calf], positions[foot])
    for _ in range(FLOOR_SOLVES if pin is None else ROLL_SOLVES):
        _solve_chain(skeleton, rotations, positions, thigh, calf, foot, goal, _lateral(tmap, side, positions),
                     subtree(skeleton, calf), subtree(skeleton, foot))
        under = max(0.0, floor - _lowest(soles.feet[side], rotations, positions))
        if pin is None:
            if under <= near:
                break
            goal = add(positions[foot], (0.0, under, 0.0))
            continue
        at = posed_point(pin[0], rotations, positions)
        miss = (pin[1][0] - at[0], under, pin[1][1] - at[2])
        if length(miss) <= near:
            break
        goal = _within_reach(positions[thigh], positions[calf], positions[foot], add(positions[foot], miss))


class _Rocking:
    """A sole the shin carries through one leg's contact spans (`_rock`): the point it stands on and
    where (x, z), and how far the rolling has moved the foot off its goal (eased out after a span)."""

    def __init__(self) -> None:
        self.planted = False
        self.pin: Optional[Tuple[Point, Tuple[float, float]]] = None
        self.rolled: Vec3 = (0.0, 0.0, 0.0)
        self.since = BLEND_FRAMES + 1  # frames since the last contact

    def next_frame(self, planted: bool, goals: List[Optional[Vec3]], frame: int) -> None:
        """Into `frame`: a new span starts unrolled; after one the rolling eases out of `goals` over
        BLEND_FRAMES, so the foot does not jump back where the lock had it as it lifts."""
        self.planted = planted
        if planted:
            if self.pin is None:
                self.rolled = (0.0, 0.0, 0.0)
            self.since = 0
            return
        self.pin = None
        self.since += 1
        goal = goals[frame]
        if self.since <= BLEND_FRAMES and goal is not None:
            x = 1.0 - self.since / float(BLEND_FRAMES + 1)
            goals[frame] = add(goal, scale(self.rolled, x * x * (3.0 - 2.0 * x)))


def _rock(skeleton: Skeleton, tmap: HumanoidMap, soles: Soles, side: str, pose, goal: Vec3, floor: float,
          rock: _Rocking) -> None:
    """A planted sole the shin carries, solved so that it rolls on the floor. Its foot cannot keep its
    rotation (it has none of its own), so a foot pinned by its ankle swung its sole about the ankle as
    the shin pitched through a step, the point on the floor sliding 0.3-0.7 cm a frame per 1.7 m. Instead
    the point lowest in the frame before stays where it stood (`_reach_sole`'s pin), the foot moving
    off its goal by what that takes, which carries on into the next frame: the sole rolls over its
    points as a rocker does. Where the roll would turn a thigh or shin more than ROLL_TURN beyond the
    plain lock's solve, the foot goes only part of the way (1 - cosine grows as the square of it)."""
    rotations, positions = pose
    chain = leg_chain(tmap, side)
    foot = chain[2]  # type: ignore[index]
    if rock.pin is not None:
        before = (list(rotations), list(positions))
        _reach_sole(skeleton, tmap, soles, side, rotations, positions, add(goal, rock.rolled), floor, rock.pin)
        rolled_turns = _segment_cosines(before[1], positions, chain)  # type: ignore[arg-type]
        if min(rolled_turns) < 1.0 - ROLL_TURN:
            full = subtract(positions[foot], goal)
            rolled_pose = (list(rotations), list(positions))
            rotations[:], positions[:] = before
            _reach_sole(skeleton, tmap, soles, side, rotations, positions, goal, floor)
            extra = max(b - r for b, r in zip(_segment_cosines(before[1], positions, chain), rolled_turns))  # type: ignore[arg-type]
            if extra <= ROLL_TURN:
                rotations[:], positions[:] = rolled_pose
            else:
                rotations[:], positions[:] = before
                share = math.sqrt(ROLL_TURN / extra)
                _reach_sole(skeleton, tmap, soles, side, rotations, positions, add(goal, (full[0] * share, 0.0, full[2] * share)), floor)
        moved = subtract(positions[foot], goal)
        rock.rolled = (moved[0], 0.0, moved[2])
    else:  # where it lands
        _reach_sole(skeleton, tmap, soles, side, rotations, positions, goal, floor)
    lowest = min(soles.feet[side], key=lambda p: posed_point(p, rotations, positions)[1])
    at = posed_point(lowest, rotations, positions)
    rock.pin = (lowest, (at[0], at[2]))


def _press_soles(skeleton: Skeleton, tmap: HumanoidMap, soles: Soles, side: str, poses, planted: Sequence[bool],
                 floor: float) -> None:
    """A sole the shin carries, on the planted frames where the lock leaves it more than PRESS_LEAVE above
    the floor, turned down about the knee: the least turn that sets its lowest point there, the same way as
    the frame before where both ways would. The turns are eased (PRESS_RATE_DEG) and never take the sole
    under the floor. Where the frame before stood on a point, that point is then brought back where it
    stood by the leg's two-bone solve (the hip and knee reaching for it) and the sole set down again: the
    turn alone slid a kneeling toe 1.5 cm a frame. Where that holding turns a thigh or shin by more than
    ROLL_TURN it goes part of the way, as the rocking does."""
    frames = len(poses)
    needs = [0.0] * frames
    way: Optional[float] = None
    above = floor + PRESS_LEAVE * _leg_length(tmap, side)  # where a sole is set down
    for frame in range(frames):
        if not planted[frame]:
            way = None
            continue
        needs[frame] = _press_turn(skeleton, tmap, soles, side, poses[frame], above, way)
        if needs[frame] != 0.0:
            way = math.copysign(1.0, needs[frame])
    rate = math.radians(PRESS_RATE_DEG)
    turns = [0.0] * frames
    for frame, need in enumerate(needs):
        reach = int(abs(need) / rate)
        for other in range(max(0, frame - reach), min(frames, frame + reach + 1)):
            eased = abs(need) - rate * abs(other - frame)
            if eased > abs(turns[other]):
                turns[other] = math.copysign(eased, need)
    held: Optional[Tuple[int, float, float]] = None  # the sole point the frame before stood on, and its x, z
    points = soles.feet[side]
    for frame in range(frames):
        rotations, positions = poses[frame]
        turn = turns[frame]
        if turn != 0.0:
            bottom = min(floor, _lowest(points, rotations, positions))  # never lower than that
            turned = _shin_turned(skeleton, tmap, side, poses[frame], turn)
            if _lowest(points, *turned) < bottom:
                turn = _floor_crossing(skeleton, tmap, soles, side, poses[frame], bottom, 0.0, turn)
                turned = _shin_turned(skeleton, tmap, side, poses[frame], turn)
        if turn != 0.0:
            rotations[:], positions[:] = turned
            if planted[frame] and held is not None:
                _hold_point(skeleton, tmap, soles, side, poses[frame], held, above)
        if planted[frame]:
            posed = [posed_point(point, rotations, positions) for point in points]
            lowest = min(range(len(posed)), key=lambda k: posed[k][1])
            held = (lowest, posed[lowest][0], posed[lowest][2])
        else:
            held = None


def _hold_point(skeleton: Skeleton, tmap: HumanoidMap, soles: Soles, side: str, pose,
                held: Tuple[int, float, float], above: float) -> None:
    """`_press_soles`' holding: the sole point `held` names brought back to its x, z by the leg's two-bone
    solve for that point, the sole set down again (onto `above`); part of the way where a thigh or shin
    would turn more than ROLL_TURN."""
    rotations, positions = pose
    chain = leg_chain(tmap, side)
    thigh, calf, _ = chain  # type: ignore[misc]
    before = (list(rotations), list(positions))
    share = 1.0
    for attempt in range(2):
        at = posed_point(soles.feet[side][held[0]], rotations, positions)
        goal = (at[0] + share * (held[1] - at[0]), at[1], at[2] + share * (held[2] - at[2]))
        swing, bend = two_bone(positions[thigh], positions[calf], at, goal, _lateral(tmap, side, positions))
        _turn_about(subtree(skeleton, calf), rotations, positions, positions[calf], bend)
        _turn_about(subtree(skeleton, thigh), rotations, positions, positions[thigh], swing)
        again = _press_turn(skeleton, tmap, soles, side, pose, above, None)
        if again != 0.0:
            rotations[:], positions[:] = _shin_turned(skeleton, tmap, side, pose, again)
        turned = 1.0 - min(_segment_cosines(before[1], positions, chain))  # type: ignore[arg-type]
        if turned <= ROLL_TURN or attempt:
            return
        rotations[:], positions[:] = before
        share *= math.sqrt(ROLL_TURN / turned)


def _shin_turned(skeleton: Skeleton, tmap: HumanoidMap, side: str, pose, angle: float) -> Tuple[List[Quat], List[Vec3]]:
    """The pose with the shin (and what it carries) turned by `angle` about the knee, in the leg's plane."""
    rotations, positions = list(pose[0]), list(pose[1])
    thigh, calf, foot = leg_chain(tmap, side)  # type: ignore[misc]
    bend = cross(subtract(positions[calf], positions[thigh]), subtract(positions[foot], positions[calf]))
    axis = normalize(bend) if length(bend) > 1e-9 else normalize(_lateral(tmap, side, positions))
    _turn_about(subtree(skeleton, calf), rotations, positions, positions[calf], quat_from_axis_angle(axis, angle))
    return rotations, positions


def _floor_crossing(skeleton: Skeleton, tmap: HumanoidMap, soles: Soles, side: str, pose, floor: float,
                    above: float, below: float) -> float:
    """Between the shin turns `above` (the sole over `floor`) and `below` (under it), the one where its
    lowest point reaches `floor` (bisection, never under it)."""
    for _ in range(PRESS_BISECTIONS):
        middle = 0.5 * (above + below)
        if _lowest(soles.feet[side], *_shin_turned(skeleton, tmap, side, pose, middle)) <= floor:
            below = middle
        else:
            above = middle
    return below if _lowest(soles.feet[side], *_shin_turned(skeleton, tmap, side, pose, below)) >= floor - 1e-9 else above


def _press_turn(skeleton: Skeleton, tmap: HumanoidMap, soles: Soles, side: str, pose, floor: float,
                way: Optional[float]) -> float:
    """The least turn of the shin about the knee (`_shin_turned`, radians) that sets the sole's lowest point
    on `floor`, `way` (+1 or -1) first where both ways would; 0.0 where it is not above `floor` or no turn
    within PRESS_MAX_DEG sets it down."""
    if _lowest(soles.feet[side], *pose) <= floor:
        return 0.0
    found = {}
    for sign in (1.0, -1.0):
        previous = 0.0
        for step in range(1, PRESS_SCAN + 1):
            angle = sign * math.radians(PRESS_MAX_DEG) * step / PRESS_SCAN
            if _lowest(soles.feet[side], *_shin_turned(skeleton, tmap, side, pose, angle)) <= floor:
                found[sign] = _floor_crossing(skeleton, tmap, soles, side, pose, floor, previous, angle)
                break
            previous = angle
    if not found:
        return 0.0
    return found[way] if way in found else min(found.values(), key=abs)


def _sole_on_shin(skeleton: Skeleton, tmap: HumanoidMap, soles: Soles, side: str) -> bool:
    """No point of the side's sole rides on its foot joint or below it: a shin with no foot bone carries
    the foot's mesh, its foot joint only the tip where the shin ends."""
    below = set(subtree(skeleton, tmap.bones["foot_" + side]))
    return not any(joint in below for point in soles.feet[side] for joint, _, _ in point)


def _longest_reach(hip: Vec3, knee: Vec3, ankle: Vec3) -> float:
    """How far from its hip a locked leg may reach: no straighter than REACH_LIMIT, or than the animation
    has it (a leg standing straight bent by a few millimetres of hips turns its thigh by degrees)."""
    legs = chain_length(hip, knee, ankle)
    return max(legs * REACH_LIMIT, min(length(subtract(ankle, hip)), legs * (1.0 - 1e-6)))


def _within_reach(hip: Vec3, knee: Vec3, ankle: Vec3, goal: Vec3) -> Vec3:
    """`goal`, brought horizontally towards the hip until the leg reaches it (`_longest_reach`)."""
    longest = _longest_reach(hip, knee, ankle)
    dx, dy, dz = subtract(goal, hip)
    horizontal = math.hypot(dx, dz)
    if dx * dx + dy * dy + dz * dz <= longest * longest or horizontal < 1e-12:
        return goal
    k = math.sqrt(max(0.0, longest * longest - dy * dy)) / horizontal
    return (hip[0] + dx * k, goal[1], hip[2] + dz * k)


def _segment_cosines(before: Sequence[Vec3], after: Sequence[Vec3], chain: Sequence[int]) -> List[float]:
    """Thigh's and shin's cosines between two poses' positions of the leg's (hip, knee, ankle)."""
    return [_cosine(subtract(before[b], before[a]), subtract(after[b], after[a])) for a, b in zip(chain, chain[1:])]


def _cosine(u: Vec3, v: Vec3) -> float:
    return dot(u, v) / max(1e-12, length(u) * length(v))


def _drop_hip(skeleton: Skeleton, tmap: HumanoidMap, sides: Sequence[str], goals: Dict[str, List[Optional[Vec3]]],
              poses, roots: array, amounts: Sequence[float], knee_floors: Mapping[str, Sequence[float]]) -> bool:
    """On the frames whose goals the lock would let go (`amounts`), the hips roll about the other leg's
    hip so that the hip of the leg whose foot must come down most drops by as much, at most
    HIP_DROP_MAX_DEG and never taking its knee lower than `knee_floors` (as deep as Kimodo's own); the
    spine and both thighs keep their world rotations, so the legs and the back stay as Kimodo has them
    and that foot comes down with its hip. A kneel on a character whose shin is long for its thigh: the
    kneeling knee is on the floor and the foot behind it points straight down, still above the floor
    (the Quaternius female's toe floated 13 cm per 1.7 m); one hip lower than the other grounds it.
    Eased (and averaged) over BLEND_FRAMES like the letting go; True if any frame rolled."""
    hips = tmap.bones["hips"]
    if len(sides) < 2 or hips != 0 or not any(amount > 0.0 for amount in amounts):
        return False
    frames = len(poses)
    thighs = {side: tmap.bones["thigh_" + side] for side in sides}
    limit = math.radians(HIP_DROP_MAX_DEG)
    raw = [0.0] * frames
    lowered: List[Optional[str]] = [None] * frames
    for frame in range(frames):
        if amounts[frame] <= 0.0:
            continue
        positions = poses[frame][1]
        gaps = {side: positions[tmap.bones["foot_" + side]][1] - goals[side][frame][1]  # type: ignore[index]
                for side in sides if goals[side][frame] is not None and side in knee_floors}
        if not gaps:
            continue
        side = max(gaps, key=lambda s: gaps[s])
        knee = positions[leg_chain(tmap, side)[1]]  # type: ignore[index]
        drop = min(gaps[side], knee[1] - knee_floors[side][frame])
        width = length(subtract(positions[thighs["l"]], positions[thighs["r"]]))
        if drop > 0.0 and width > 0.0:
            raw[frame] = min(limit, math.asin(min(1.0, drop / width)))
            lowered[frame] = side
    rolling = [u for u in range(frames) if lowered[u] is not None]
    if not rolling:
        return False
    # What keeps its world rotation: the thighs, and whatever else hangs off the hips (the spine).
    keep = [j for j in range(skeleton.joint_count) if skeleton.parents[j] == hips
            and not any(t in subtree(skeleton, j) for t in thighs.values())] + list(thighs.values())
    for frame, angle in enumerate(centred_average(_ease(raw), BLEND_FRAMES)):
        if angle <= 0.0:
            continue
        side = lowered[min(rolling, key=lambda u: abs(u - frame))]  # eased in or out: the nearest's side
        rotations, positions = poses[frame]
        room = positions[leg_chain(tmap, side)[1]][1] - knee_floors[side][frame]  # type: ignore[index]
        width = length(subtract(positions[thighs["l"]], positions[thighs["r"]]))
        angle = min(angle, math.asin(max(0.0, min(1.0, room / width))))  # the easing never takes a knee deeper
        if angle <= 0.0:
            continue
        other = thighs["r" if side == "l" else "l"]
        pivot, line = positions[other], subtract(positions[thighs[side]], positions[other])  # type: ignore[index]
        turn = quat_from_axis_angle(normalize(cross((0.0, 1.0, 0.0), line)), angle)  # brings `line`'s end down
        before = positions[hips]
        _turn_about(subtree(skeleton, hips), rotations, positions, pivot, turn)
        for k in range(3):
            roots[frame * 3 + k] += positions[hips][k] - before[k]
        back = quat_conjugate(turn)
        for joint in keep:
            _turn_about(subtree(skeleton, joint), rotations, positions, positions[joint], back)
    return True


def _lateral(tmap: HumanoidMap, side: str, positions: Sequence[Vec3]) -> Vec3:
    """The leg's plane normal where it is straight: the hip line (the knee bends forward)."""
    other = tmap.bones["thigh_" + ("r" if side == "l" else "l")]
    return scale(subtract(positions[tmap.bones["thigh_" + side]], positions[other]), 1.0 if side == "l" else -1.0)


def _hips_reach(tmap: HumanoidMap, sides: Sequence[str], goals: Mapping[str, Optional[Vec3]], positions: Sequence[Vec3],
                lift: float) -> Tuple[float, float]:
    """How far the hips, risen by `lift`, must still come down for every locked leg to reach its goal,
    and how far go up for none to fold further than it can (both >= 0)."""
    down = up = 0.0
    for side in sides:
        goal = goals[side]
        chain = leg_chain(tmap, side)
        if goal is None or chain is None:
            continue
        hip, knee, ankle = (positions[j] for j in chain)
        upper, lower = length(subtract(knee, hip)), length(subtract(ankle, knee))
        longest = _longest_reach(hip, knee, ankle)
        shortest = abs(upper - lower) + (upper + lower) * (1.0 - REACH_LIMIT)
        dx, dy, dz = subtract(goal, hip)
        dy -= lift
        horizontal = dx * dx + dz * dz
        if horizontal + dy * dy > longest * longest:
            # Lower the hip so that |goal - hip| = longest (the goal is below the hip).
            down = max(down, max(0.0, -dy - math.sqrt(max(0.0, longest * longest - horizontal))))
        elif horizontal + dy * dy < shortest * shortest and dy < 0.0:
            # A leg that cannot fold so far (a shin longer than its thigh, deep in a crouch): raise it.
            up = max(up, math.sqrt(shortest * shortest - horizontal) + dy)
    return down, up


def _leg_segments(tmap: HumanoidMap, side: str, positions: Sequence[Vec3]) -> Tuple[Vec3, Vec3]:
    """The leg's thigh (hip to knee) and shin (knee to ankle) as `positions` have them."""
    hip, knee, ankle = (positions[j] for j in leg_chain(tmap, side))  # type: ignore[union-attr]
    return subtract(knee, hip), subtract(ankle, knee)


def _solved_segments(tmap: HumanoidMap, side: str, positions: Sequence[Vec3], goal: Vec3) -> Tuple[Vec3, Vec3]:
    """The leg's thigh and shin once the IK brings the foot to `goal` (`two_bone`, as `_solve_chain` turns them)."""
    hip, knee, ankle = (positions[j] for j in leg_chain(tmap, side))  # type: ignore[union-attr]
    swing, bend = two_bone(hip, knee, ankle, goal, _lateral(tmap, side, positions))
    upper, lower = _leg_segments(tmap, side, positions)
    return quat_rotate(swing, upper), quat_rotate(quat_multiply(swing, bend), lower)


def _leg_turns(tmap: HumanoidMap, side: str, positions: Sequence[Vec3], goal: Vec3) -> Tuple[float, float]:
    """Cosines between the thigh's and the shin's direction now and after the IK brings the foot to `goal`."""
    return tuple(_cosine(before, after)  # type: ignore[return-value]
                 for before, after in zip(_leg_segments(tmap, side, positions), _solved_segments(tmap, side, positions, goal)))


def _turns_at(tmap: HumanoidMap, sides: Sequence[str], goals: Mapping[str, Optional[Vec3]], positions: Sequence[Vec3],
              lift: float, *, reached: bool = False) -> List[float]:
    """Per locked leg, thigh and shin: their cosines after the hips rise by `lift` and the IK (1: no goal).
    `reached`: the hips then also come down or go up as far as a leg that cannot reach its goal (or fold
    so far) takes them (`_hips_reach`, as `_reach_goals` moves them). Without it a goal out of one leg's
    reach costs only that leg straightening, not the other's folding as the hips come down for it
    (RobotExpressive on soma_04: its wide hips rolled as Kimodo's leave the planted left foot 4% of the
    leg under its reach; the right thigh lost 0.011 of its mean cosine, estimated at 0.002). Not in
    `_shared_lift`'s search: every rise above the reach would cost the same there, and which of them
    it picked moved with the last bits of the input (Blender's armature against the file's)."""
    if reached:
        down, up = _hips_reach(tmap, sides, goals, positions, lift)
        lift += up - down
    lifted = [(p[0], p[1] + lift, p[2]) for p in positions] if lift else positions
    turns: List[float] = []
    for side in sides:
        goal = goals[side]
        turns.extend(_leg_turns(tmap, side, lifted, goal) if goal is not None else (1.0, 1.0))
    return turns


def _shared_lift(tmap: HumanoidMap, soles: Soles, sides: Sequence[str], goals: Mapping[str, Optional[Vec3]], pose,
               floor: float) -> float:
    """Where both feet have goals (planted, or easing in or out), the hips' rise (negative: down) that
    turns the two legs least on their way to them (the sum over thighs and shins of 1 - cosine, as the
    judges add it up), searched between the rises that leave one leg or the other nothing to reach
    vertically; never so far down that a hand goes under the floor. A foot kneeling behind on its toes,
    whose sole the character's proportions put above the floor, comes down with the hips as much as by
    its own leg."""
    if len(sides) < 2 or any(goals[side] is None for side in sides):
        return 0.0
    rotations, positions = pose
    needs = [goals[side][1] - positions[tmap.bones["foot_" + side]][1] for side in sides]  # type: ignore[index]
    hands = [_lowest(soles.hands[side], rotations, positions) - floor for side in SIDES if soles.hands.get(side)]
    low, high = max(min(needs + [0.0]), -max(0.0, min(hands or [math.inf]))), max(needs + [0.0])
    if high - low < 1e-6:
        return 0.0

    def turned(lift: float) -> float:
        return sum(1.0 - c for c in _turns_at(tmap, sides, goals, positions, lift))

    grid = [low + (high - low) * k / (LIFT_GRID - 1) for k in range(LIFT_GRID)]
    costs = [turned(lift) for lift in grid]
    best = min(range(LIFT_GRID), key=lambda k: (costs[k], abs(grid[k])))
    a, b = grid[max(0, best - 1)], grid[min(LIFT_GRID - 1, best + 1)]
    golden = (math.sqrt(5.0) - 1.0) / 2.0  # golden-section search between the best's grid neighbours
    c, d = b - golden * (b - a), a + golden * (b - a)
    fc, fd = turned(c), turned(d)
    for _ in range(LIFT_STEPS):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - golden * (b - a)
            fc = turned(c)
        else:
            a, c, fc = c, d, fd
            d = a + golden * (b - a)
            fd = turned(d)
    refined = (a + b) / 2.0
    return refined if turned(refined) < costs[best] else grid[best]


def _settle(tmap: HumanoidMap, soles: Soles, sides: Sequence[str], goals: Dict[str, List[Optional[Vec3]]], pose,
            frame: int, floor: float, amount: float) -> Tuple[float, List[float]]:
    """The frame's goals let go by `amount` (`_loosened`), the hips' best rise for them, and the legs'
    cosines (thigh and shin per locked leg) there, the hips' reach included (`_turns_at`)."""
    positions = pose[1]
    loosened = {side: None if goals[side][frame] is None else
                _loosened(goals[side][frame], positions[tmap.bones["foot_" + side]], amount)  # type: ignore[arg-type]
                for side in sides}
    lift = _shared_lift(tmap, soles, sides, loosened, pose, floor)
    return lift, _turns_at(tmap, sides, loosened, positions, lift, reached=True)


def _loosened(goal: Vec3, ankle: Vec3, amount: float) -> Vec3:
    """The goal's height let go by `amount` (0..1) towards the ankle's where the leg has it; it stays
    pinned horizontally."""
    return (goal[0], goal[1] + amount * (ankle[1] - goal[1]), goal[2])


def _reach_budget(source_skeleton: str) -> float:
    """The most the lock's reach takes off a thigh's or shin's mean cosine over a clip of that skeleton."""
    return REACH_BUDGETS.get(source_skeleton, LOCK_COSINE_BUDGET)


def _turn_bar(turns: Sequence[Sequence[float]], budget: float) -> float:
    """The cosine no frame's thigh or shin may turn below so that the lock takes no more than `budget`
    off any one's mean cosine over the clip (-1: the lock as it is takes less)."""
    frames = max(1, len(turns))
    segments = len(turns[0]) if turns else 0

    def cost(bar: float) -> float:
        return max([sum(1.0 - max(t[k], bar) for t in turns) / frames for k in range(segments)] or [0.0])

    if cost(-1.0) <= budget:
        return -1.0
    low, high = -1.0, 1.0
    for _ in range(30):
        middle = (low + high) / 2.0
        if cost(middle) <= budget:
            high = middle
        else:
            low = middle
    return high


def _let_go(tmap: HumanoidMap, soles: Soles, sides: Sequence[str], goals: Dict[str, List[Optional[Vec3]]], pose,
            frame: int, floor: float, bar: float) -> float:
    """How far (`_loosened`'s amount, 0..1) the frame's goals must be let go for no thigh or shin to turn
    below the cosine `bar` (1 where even letting go wholly does not get there)."""
    def worst(amount: float) -> float:
        return min(_settle(tmap, soles, sides, goals, pose, frame, floor, amount)[1], default=1.0)

    if worst(1.0) < bar:
        return 1.0
    low, high = 0.0, 1.0
    for _ in range(LET_GO_STEPS):
        middle = (low + high) / 2.0
        if worst(middle) >= bar:
            high = middle
        else:
            low = middle
    return high


def _blend_neighbours(frame: int, held: Sequence[bool]) -> List[Tuple[float, int]]:
    """(smoothstep weight, frame) of the nearest `held` frame within BLEND_FRAMES before `frame`, then
    after it: what a frame next to a held span eases from."""
    near = []
    for direction in (-1, 1):
        for step in range(1, BLEND_FRAMES + 1):
            u = frame + direction * step
            if 0 <= u < len(held) and held[u]:
                x = 1.0 - step / float(BLEND_FRAMES + 1)
                near.append((x * x * (3.0 - 2.0 * x), u))
                break
    return near


def _blend_offsets(offsets: Sequence[Optional[Vec3]], in_contact: Sequence[bool]) -> List[Optional[Vec3]]:
    """Contact frames keep their offset; the BLEND_FRAMES either side of a span ease from it to none."""
    count = len(offsets)
    out: List[Optional[Vec3]] = list(offsets)
    for t in range(count):
        if in_contact[t]:
            continue
        total = (0.0, 0.0, 0.0)
        weight_sum = 0.0
        for w, u in _blend_neighbours(t, in_contact):
            total = add(total, scale(offsets[u], w))  # type: ignore[arg-type]
            weight_sum += w
        if weight_sum > 0.0:
            out[t] = scale(total, 1.0 / max(1.0, weight_sum))
    return out
