"""The floor and the feet, as a pass after the solve: where the character's soles are, Kimodo's foot
contacts, the feet placed on the floor and locked where they land.

- Soles: with a mesh, each foot's vertices at bind (linear blend skinning of the vertices the foot's
  joints carry, or meshes hung rigidly under a foot bone), kept as the few farthest out in DIRECTIONS
  directions per bone; without one, the foot's joints. The character's REST FLOOR is their lowest at bind.
- Contacts: the clip's own (Kimodo NPZ, [T,4] or [T,6]), else labelled as Kimodo labels them: a foot
  joint slower than 0.15 m/s and lower than 0.10 m.
- Floor: every frame the hips move up or down so the lowest sole sits on the rest floor while a foot is
  planted, and as far above it as Kimodo's lowest foot joint rises above its own planted height (scaled
  by the leg ratio) while none is; the change is eased over BLEND_FRAMES.
- Foot lock: while heel and toe are both down the foot keeps its world rotation (`_held`). Each contact
  span pins its contact point (heel: the foot joint; toe: the toe joint, or the sole's front without one)
  where it lands, the sole on the rest floor in every contact frame; on its toe alone the foot rolls on
  the pinned toe so the ankle stays near where the leg has it (at most TOE_ROLL_MAX_DEG); the leg reaches it with two-bone IK (thigh
  and shin turned, the knee kept in the leg's own plane, the foot keeping its world rotation), the hips
  coming down where a leg cannot reach and up where it cannot fold so far, and up or down by what turns
  the legs least where both feet are planted at different heights (a kneel); where the lock would still
  take more than its budget (`_reach_budget`: 0.01, 0.02 on a G1 clip) off a thigh's or shin's mean
  cosine over the clip, the hips first drop on the side of the foot that must come down (`_drop_hip`, a
  kneel on a long shin), then the frames that still turn them most let the pin's height go (the sole
  floats there); eased in before and out after each span over BLEND_FRAMES. Nothing ends under the rest
  floor; no knee goes deeper under it than Kimodo's own. Before that the hips are carried horizontally by
  the planted feet, and with both down also turned about the vertical by most of what keeps both where
  they landed (hips wider than Kimodo's, turned as its own are, swing the feet round with them).
- Rigid legs (one bone, hip to foot): the hips' roll is theirs, not Kimodo's (`one_bone.hike_hips`:
  levelled, hiked on a swinging leg's side, rolled so both planted soles stand equally low); then the
  lock of `one_bone._pin_one_bone_legs`.
- Hands: a hand (or forearm) that would go under the rest floor (a long-armed character, in a walk as
  much as picking something up) is lifted onto it, first by what the limbs' directions do not include:
  the torso turned up about the spine's base, then the hand turned up at the wrist; then by the whole
  arm swinging up about its shoulder: each the least turn, in closed form, eased over ARM_EASE_S
  (`hands.keep_hands_above`).
"""
from __future__ import annotations

import math
import os
from array import array
from dataclasses import replace
from typing import Dict, List, Optional, Sequence, Tuple

from ..model import Motion, Skeleton
from ..ops.fk import global_rotations_and_positions, rest_pose, shared_poses
from ..rotations import Vec3, add, quat_conjugate, quat_multiply, quat_rotate, scale
from .ankles import with_ankles
from .mapping import SIDES, HumanoidMap, map_humanoid
from .solve import RetargetInfo, centred_average, retarget
from .soles import (
    BLEND_FRAMES,
    BindMesh,
    find_soles,
    leg_chain,
    _leg_length,
    posed_point,
    _ramp,
    source_contacts,
    standing_joint,
)
from .lock import _follow_planted_feet, _foot_goals, _hold_flat_feet, _pitch_onto_floor, _reach_budget, _reach_goals
from .one_bone import _bridged, _pin_one_bone_legs, hike_hips
from .hands import keep_hands_above
from . import contacts as contact_plan, ease, hips, legs

# The leg solver the foot lock runs: "plan" (contacts.py, hips.py, legs.py, ease.py: issue 40's) for legs with
# a knee and a foot; "layers" (lock.py, one_bone.py, hips_path.py) for a character with a rigid leg (one
# bone, or a shin that carries its sole), where the plan does not yet meet the figures the layers meet
# (docs/leg-solver.md). KIMODO_LEG_SOLVER (plan or layers) runs one or the other on any character: for
# tests and benchmarks, not a user option.
LEG_SOLVERS = ("plan", "layers")


def leg_solver(rigid: bool = False) -> str:
    """The solver for a character with (`rigid`) or without a rigid leg, or the one the environment names."""
    chosen = os.environ.get("KIMODO_LEG_SOLVER", "")
    if chosen in LEG_SOLVERS:
        return chosen
    return "layers" if rigid else "plan"


LEASH = 0.05  # of the leg's reach: how far Kimodo's planted foot may drift before the pin follows it
SPIKE = 0.01  # of the leg's reach: a floor shift this far from its neighbours' median is a one-frame jump
SPIKE_FRAMES = 2  # either side: the neighbours a frame's floor shift is judged against
# The most the pin takes off a one-bone leg's mean cosine over a clip (its bar: 0.99 on SOMA, 0.97 on G1),
# per Kimodo skeleton; the rest of the bar is left for what the solve and the measure differ by.
ONE_BONE_BUDGETS = {"g1skel34": 0.02}
ONE_BONE_BUDGET = 0.005
# Of Kimodo's leg reach: how far its heel or toe may be from where it lifted for the lift to be held down
# (g1_02's kneeling toe 0.6 cm, the bridge helping; raw g1_02's walk labels heels lifting 1.3-1.5 cm, held
# down there the kneel that follows was pinned that far off and turned its leg 1 degree more).
ONE_BONE_SLIP = 0.01


def unlocked_legs(tmap: HumanoidMap, locked: bool = True) -> List[str]:
    """The sides whose leg two-bone IK cannot lock, in words for the report: a one-bone leg is locked by
    the hips and its own direction (`_pin_one_bone_legs`) when the lock ran, a leg without a foot is not."""
    return ["{}: one-bone leg (no thigh-shin-foot chain): foot-locked by the hips and the leg's own direction, "
            "its sole rocking heel to toe".format(tmap.joint_name("thigh_" + side))
            if locked and not tmap.has("calf_" + side) and tmap.has("foot_" + side) else
            "{}: {} leg (no thigh-shin-foot chain): stands on the floor, not foot-locked".format(
                tmap.joint_name("thigh_" + side), "one-bone" if not tmap.has("calf_" + side) else "footless")
            for side in SIDES if leg_chain(tmap, side) is None]


def _planted_heights(source_positions, contacts, source_map: HumanoidMap) -> Dict[int, float]:
    """Each source foot joint's height when Kimodo has it planted (median over its contact frames), so
    the source's clearance is measured from its own sole, not from its joints."""
    heights = {}
    for side in SIDES:
        heel = standing_joint(source_map, side)
        toe = source_map.bones.get("toe_" + side)
        for joint, channel in ((heel, 0), (toe, 1)):
            if joint is None or joint in heights:
                continue
            values = sorted(source_positions[f][joint][1] for f, flags in enumerate(contacts[side]) if flags[channel])
            heights[joint] = values[len(values) // 2] if values else min(
                p[joint][1] for p in source_positions) if source_positions else 0.0
    return heights


def retarget_onto(motion: Motion, target: Skeleton, *, bind_mesh: BindMesh = (), in_place: bool = False,
                  root_motion: str = "hips", foot_lock: bool = True, target_map: Optional[HumanoidMap] = None,
                  target_name: str = "", source_name: str = "") -> Tuple[Motion, RetargetInfo]:
    """`motion` on the humanoid `target`: the solve, then this pass. The one retarget every front end
    calls (`kimodo-rig retarget`, the preview, the Blender add-on through api.retarget_motion), so they
    all put the same motion on a character. `bind_mesh`: the character's vertices at bind (soles on the
    mesh; none: on the joints). With --in-place and the lock, the travel taken out is in
    `info.removed_travel` (locked feet walk a treadmill, locked on the travelling motion). A leg whose
    foot is a tip guessed from the mesh gets an ankle joint its line ends at (`ankles.with_ankles`,
    listed in `info.added_joints`)."""
    target_map, added = with_ankles(target_map or map_humanoid(target, target_name or target.name), bind_mesh)
    target = target_map.skeleton
    retargeted, info = retarget(motion, target, in_place=in_place, root_motion=root_motion,
                                target_map=target_map, target_name=target_name, source_name=source_name)
    treadmill = None
    if in_place and foot_lock:
        travelling, _ = retarget(motion, target, root_motion=root_motion, target_map=target_map,
                                 target_name=target_name, source_name=source_name)
        treadmill = removed_travel(travelling, retargeted)
        retargeted = travelling
    placed, moved, treadmill = place_feet(retargeted, motion, info, bind_mesh, lock=foot_lock, treadmill=treadmill)
    root_track = info.root_track
    if root_track is not None:  # the root bone travels with the hips
        root_track = tuple(((p[0] + d[0], p[1], p[2] + d[1]), q) for (p, q), d in zip(root_track, moved))
    return placed, replace(info, added_joints=added, removed_travel=tuple(treadmill) if treadmill is not None else None, root_track=root_track,
                           foot_locked=foot_lock)


def _despiked(values: Sequence[float], tolerance: float) -> List[float]:
    """`values` with each that lies more than `tolerance` from the median of its SPIKE_FRAMES
    neighbours either side replaced by that median (a jump of a frame or two); the rest as they are."""
    result = list(values)
    for frame, value in enumerate(values):
        window = sorted(values[max(0, frame - SPIKE_FRAMES):frame + SPIKE_FRAMES + 1])
        middle = window[len(window) // 2] if len(window) % 2 else 0.5 * (window[len(window) // 2 - 1] + window[len(window) // 2])
        if abs(value - middle) > tolerance:
            result[frame] = middle
    return result


def _eased_steps(values: Sequence[float], tolerance: float, over: int = BLEND_FRAMES) -> List[float]:
    """`values` with each step between two frames larger than `tolerance` spread over `over` frames either
    side of it (a smoothstep), so what follows a change of the feet that stand is reached, not jumped to."""
    result = list(values)
    count = len(values)
    for frame in range(1, count):
        step = values[frame] - values[frame - 1]
        if abs(step) <= tolerance:
            continue
        for other in range(max(0, frame - over), min(count, frame + over)):
            t = (other - (frame - over) + 0.5) / (2.0 * over)
            eased = t * t * (3.0 - 2.0 * t)
            result[other] += step * (eased - (1.0 if other >= frame else 0.0))
    return result


def removed_travel(travelling: Motion, in_place: Motion) -> List[Tuple[float, float]]:
    """Per frame, the horizontal travel --in-place took out of the hips (the same retarget with and without)."""
    return [(travelling.root_positions[f * 3] - in_place.root_positions[f * 3],
             travelling.root_positions[f * 3 + 2] - in_place.root_positions[f * 3 + 2])
            for f in range(travelling.frame_count)]


def place_feet(retargeted: Motion, source: Motion, info: RetargetInfo, bind_mesh: BindMesh = (), *,
               lock: bool = True, treadmill: Optional[Sequence[Tuple[float, float]]] = None
               ) -> Tuple[Motion, List[Tuple[float, float]], Optional[List[Tuple[float, float]]]]:
    """The retargeted motion with its soles on the character's rest floor and, with `lock`, its
    planted feet pinned where they land (the hips carried with them). `treadmill` (--in-place:
    `removed_travel`) is taken out of the hips afterwards, with the travel the feet carried, so the feet
    are locked to a floor that moves with the travel removed. Returns the motion, the horizontal change
    (x, z) its hips got per frame, and the travel taken out (None without `treadmill`)."""
    skeleton = retargeted.skeleton
    tmap = info.target_map
    smap = info.source_map
    soles = find_soles(bind_mesh, info)
    floor = soles.rest_floor
    frames = retargeted.frame_count
    if not frames:
        return retargeted, [], treadmill
    ratio = info.reach_target / info.reach_source
    source_positions = shared_poses(source)[1]
    contacts = source_contacts(source, smap, source_positions)
    planted = _planted_heights(source_positions, contacts, smap)
    any_contact = [any(contacts[s][f][0] or contacts[s][f][1] for s in SIDES) for f in range(frames)]
    planted_weight = _ramp(any_contact, BLEND_FRAMES)

    lockable = [side for side in SIDES if leg_chain(tmap, side) is not None]
    roots = array("d", retargeted.root_positions)
    poses = list(zip(*global_rotations_and_positions(retargeted)))  # pose_globals per frame, in one pass
    feet_ = contact_plan.feet(tmap, soles, info.forward)
    rigid = any(side not in lockable and tmap.has("foot_" + side) for side in SIDES) or any(
        foot.body is not None for foot in feet_.values())
    if lock and leg_solver(rigid) == "plan":
        carried = _locked_by_plan(retargeted, info, soles, feet_, contacts, poses, roots, source_positions)
        return _finished(retargeted, info, soles, poses, roots, carried, treadmill, between=True)
    if lock and any(tmap.has("foot_" + side) and side not in lockable for side in SIDES):
        hike_hips(skeleton, tmap, soles, contacts, poses)  # a rigid leg's roll of the hips, not Kimodo's
    shifts = []
    for frame, (rotations, positions) in enumerate(poses):
        clearance = max(0.0, min(source_positions[frame][j][1] - h for j, h in planted.items())) * ratio
        # The feet that stand: heels down first (a foot on its toes pitches, its sole's front reaching
        # far below the ankle on a long foot: it is turned up onto the floor below, not stood on); a leg
        # the lock cannot turn (one bone) always.
        standing = [side for side in SIDES if contacts[side][frame][0]] or [
            side for side in SIDES if contacts[side][frame][1]] or list(SIDES)
        standing = sorted(set(standing) | {side for side in SIDES if side not in lockable})
        lowest = min(posed_point(p, rotations, positions)[1] for side in standing for p in soles.feet[side])
        shifts.append(floor + (1.0 - planted_weight[frame]) * clearance - lowest)
    # The feet that stand change from one frame to the next (a heel lifts and the foot on its toes, pitched
    # far down, is lowest for a frame): the body must not jump with them. Not with a one-bone leg: its pins
    # move the hips by what each rigid leg needs from this height, and eased, its leg turns past the bar.
    if all(side in lockable for side in SIDES):
        shifts = _eased_steps(_despiked(shifts, SPIKE * info.reach_target), SPIKE * info.reach_target)
    for frame, shift in enumerate(shifts):
        roots[frame * 3 + 1] += shift
        rotations, positions = poses[frame]
        poses[frame] = (rotations, [add(p, (0.0, shift, 0.0)) for p in positions])

    carried = [(0.0, 0.0)] * frames
    if lock:
        # A one-bone leg cannot bend to stay pinned, but its planted foot still carries the hips (its
        # direction stays Kimodo's): it slides only as far as its rigid length differs from Kimodo's leg.
        carrying = [side for side in SIDES if tmap.has("foot_" + side)]
        one_bone = [side for side in carrying if side not in lockable]
        held = contacts
        if one_bone:  # a foot Kimodo lifts for a frame or two and sets down where it was stays pinned
            held = {side: _bridged(contacts[side], source_positions, standing_joint(smap, side),
                                   smap.bones.get("toe_" + side, standing_joint(smap, side)), ONE_BONE_SLIP * info.reach_source)
                    for side in SIDES}
        carried = _follow_planted_feet(tmap, soles, carrying, held, poses, roots)
        if one_bone:
            moved = _pin_one_bone_legs(tmap, soles, one_bone, held, poses, roots, floor,
                                       ONE_BONE_BUDGETS.get(source.skeleton.name, ONE_BONE_BUDGET))
            carried = [(c[0] + m[0], c[1] + m[2]) for c, m in zip(carried, moved)]
        for side in lockable:
            _hold_flat_feet(skeleton, tmap, soles, side, contacts[side], poses)
    for side in lockable:
        _pitch_onto_floor(skeleton, tmap, soles, side, contacts[side], poses, floor)
    leash = LEASH * info.reach_target
    facing = info.corrections.facing
    tracks = {side: [quat_rotate(facing, scale(positions[standing_joint(smap, side)], ratio)) for positions in source_positions]
              for side in SIDES}
    goals = {side: _foot_goals(tmap, soles, side, contacts[side], poses, floor, leash, tracks[side]) if lock and side in lockable
             else [None] * frames for side in SIDES}
    # How low each knee may go: under the floor only as far as Kimodo's own does (G1 kneels with its
    # knee joint 11 cm under its floor), scaled by the legs' length.
    knee_floors = {}
    for side in lockable:
        if smap.has("calf_" + side) and leg_chain(smap, side) is not None:
            legs = _leg_length(tmap, side) / max(1e-9, _leg_length(smap, side))
            knee = smap.bones["calf_" + side]
            knee_floors[side] = [floor + min(0.0, positions[knee][1] * legs) for positions in source_positions]
    _reach_goals(skeleton, tmap, soles, goals, poses, roots, floor, _reach_budget(source.skeleton.name), knee_floors,
                 contacts if lock else None)
    return _finished(retargeted, info, soles, poses, roots, carried, treadmill)


def _locked_by_plan(retargeted: Motion, info: RetargetInfo, soles, feet_: Dict[str, contact_plan.Foot], contacts,
                    poses, roots: array, source_positions) -> List[Tuple[float, float]]:
    """The foot lock of issue 40: the contact plan (contacts.py) of the legs `feet_` (`contacts.feet`), the
    hips' path (hips.py), each frame's legs (legs.py), eased (ease.py). Changes `poses` and `roots` in place; returns the hips' horizontal
    move per frame."""
    skeleton = retargeted.skeleton
    frames, fps = retargeted.frame_count, retargeted.fps
    # The feet move the body on their contact frames alone, not through the step out or the short lifts
    # the pins hold: there the foot moves away from its pin. Legs with a knee: the pins stand where the
    # retargeted feet stand over their spans, before the body moves toward them (not carried from step to
    # step, so not integrating the frame rate's differences). A rigid leg has no knee to take up what that
    # smoothed move leaves: the body goes where its landing feet put it, and the pins where it then has them.
    rigid = any(foot.body is not None for foot in feet_.values())
    if rigid:
        moves = hips.carried_from_landings(skeleton, feet_, contacts, poses, fps)
    spans = {side: contact_plan.plan(foot, contacts[side], poses, soles.rest_floor, fps) for side, foot in feet_.items()}
    for side, foot in feet_.items():
        spans[side] = _knees_kept(spans[side], foot, info, source_positions, soles.rest_floor)
    if not rigid:
        moves = hips.carried(skeleton, feet_, spans, contacts, poses, fps)
    for frame, (dx, dz) in enumerate(moves):
        roots[frame * 3] += dx
        roots[frame * 3 + 2] += dz
    inside: Dict[str, List] = {}
    for side, foot in feet_.items():
        inside[side] = [None] * frames
        for span in spans[side]:
            flats = [t for t in range(span.first, span.last + 1) if span.heel[t - span.first] and span.toe[t - span.first]]
            pinned_height = poses[contact_plan.pin_frame(span)][1][foot.ankle][1]
            for frame in range(span.first, span.last + 1):
                nearest = min(flats, key=lambda t: abs(t - frame)) if flats else None
                flat = None if nearest is None else (poses[nearest][0][foot.ankle], poses[nearest][1][foot.ankle])
                goal = legs.planned(foot, span, frame, poses[frame][0][foot.ankle], poses[frame][1][foot.ankle], flat,
                                    poses[frame][1][foot.ankle][1] - pinned_height)
                if foot.body is not None:  # a rigid foot on its heel or toe alone turns about its sole's lowest point: on the floor
                    lowest = min(p[1] for p in legs.standing_sole(foot, poses[frame][0], poses[frame][1], goal))
                    goal = ((goal[0][0], goal[0][1] + soles.rest_floor - lowest, goal[0][2]), goal[1], goal[2])
                else:  # on its heel or toe alone, or rolled heel-up on its toe
                    goal = legs.stood_on(skeleton, foot, poses[frame][0], poses[frame][1], goal, soles.rest_floor)
                inside[side][frame] = goal
    # Two legs that cannot both reach at one height of the hips (rigid legs planted at different heights,
    # a one-bone leg swinging beside a planted one) have the pelvis rolled for them first.
    hips.rolls(skeleton, feet_, spans, inside, poses, fps, soles.rest_floor)
    hips_joint = info.source_map.bones["hips"]
    ratio = info.reach_target / info.reach_source
    unpinned = None
    if not any(spans.values()):  # no pin holds the body up or down: its lowest sole keeps Kimodo's clearance
        planted = _planted_heights(source_positions, contacts, info.source_map)
        unpinned = [soles.rest_floor + max(0.0, min(source_positions[frame][j][1] - h for j, h in planted.items())) * ratio
                    - min(posed_point(p, rotations, positions)[1] for foot in feet_.values() for p in foot.sole)
                    for frame, (rotations, positions) in enumerate(poses)]
    rises = hips.heights(feet_, spans, inside, poses, fps, [p[hips_joint][1] * ratio for p in source_positions],
                         soles.rest_floor, unpinned)
    for frame, rise in enumerate(rises):
        roots[frame * 3 + 1] += rise
        positions = poses[frame][1]
        positions[:] = [(p[0], p[1] + rise, p[2]) for p in positions]
    # On the toe alone the leg extends no further than the animated leg does, or where it came onto its toe
    # more bent than that, no more than the animated leg extends from there, the heel rolling up for it: the
    # body moves on while the toe holds (the robot's knee went straight on its pin and popped 26 deg as it
    # let go), and a leg that caught up with the animated one at once popped as much.
    for side, foot in feet_.items():
        for span in spans[side]:
            before = None  # the previous frame's extension (goal's and animated)
            for frame in range(span.first, span.last + 1):
                positions = poses[frame][1]
                hip = positions[foot.hip]
                own = math.dist(hip, positions[foot.ankle])
                if span.toe[frame - span.first] and not span.heel[frame - span.first] and foot.body is None:
                    reach = own if before is None else before[0] + own - before[1]
                    inside[side][frame] = legs.rolled_within(foot, span, inside[side][frame], hip, reach)
                before = (math.dist(hip, inside[side][frame][0]), own)

    def animated(foot):
        def at(frame: int):
            rotations, positions = poses[frame]
            toe = None if foot.toe is None else quat_multiply(quat_conjugate(rotations[foot.ankle]), rotations[foot.toe])
            return positions[foot.ankle], rotations[foot.ankle], toe
        return at

    planes: Dict[str, Dict[int, Vec3]] = {side: {} for side in feet_}

    def leaving(foot, side):
        def at(span, frame: int):
            rotations, positions = poses[frame]
            goal, planes[side][frame] = legs.rested(foot, rotations, positions, inside[side][frame], positions[foot.hip])
            return goal
        return at

    # A rigid foot under a thigh (a shin that carries the sole) leaves and meets its pin as a two-bone leg
    # reaching its eased goal, from and to where the pin's rest rocks it; a one-bone leg, which has no knee
    # to reach with, stands as its pins have it a while either side of a span (`ease.standing_shares`).
    kneed = {side for side, foot in feet_.items() if foot.body is not None and foot.thigh > 0.0}
    goals = {side: ease.eased_goals(spans[side], frames, fps, lambda span, frame, side=side: inside[side][frame],
                                    animated(foot), leaving(foot, side) if side in kneed else None) for side, foot in feet_.items()}
    standing = {side: [float(g is not None) for g in inside[side]] if side in kneed else ease.standing_shares(spans[side], frames, fps)
                for side in feet_}
    # A free foot's sole is kept above the floor by a turn and a lift planned over the clip (a foot bone's:
    # a rigid foot is lifted by its leg's reach, `legs.solve`).
    for side, foot in feet_.items():
        if foot.body is None:
            goals[side] = hips.cleared_swings(foot, goals[side], [g is None for g in inside[side]], poses, fps, soles.rest_floor)
    # Its knee's plane eases, as its goal does (`ease.share`), from where the rest leaves it at a span's end
    # to the leg's own: reaching from the first frame off the pin in its own plane, the knee swung from
    # behind the line from hip to ankle to in front of it (the shin 26 deg in a frame on soma_01). Between
    # two spans both ends ease, the earlier first, so the plane does not switch from one to the other.
    swivels: Dict[str, List[List[Tuple[Vec3, float]]]] = {side: [[] for _ in range(frames)] for side in feet_}
    for side in kneed:
        for frame in range(frames):
            if inside[side][frame] is None:
                swivels[side][frame] = [(plane, ease.share(abs(frame - end) / fps)) for end, plane in sorted(planes[side].items())]
    one_end = {side: [False] * frames for side in feet_}  # held on the heel or the toe alone
    for side in feet_:
        for span in spans[side]:
            for frame in range(span.first, span.last + 1):
                one_end[side][frame] = span.heel[frame - span.first] != span.toe[frame - span.first]
    rest_hips = rest_pose(skeleton)[0][0]
    for frame, (rotations, positions) in enumerate(poses):
        towards = legs.leg_towards(rotations, rest_hips, info.forward)
        for side, foot in feet_.items():
            goal = goals[side][frame]
            if goal is not None:  # a pinned foot is where its pin is; a free one is kept above the floor
                for plane, share in swivels[side][frame]:
                    legs.swivel(skeleton, foot, rotations, positions, plane, share)
                given = legs.leg_pose(skeleton, foot, rotations, positions)
                legs.solve(skeleton, foot, rotations, positions, goal, towards,
                           None if inside[side][frame] is not None else soles.rest_floor, standing[side][frame])
                # A foot that is the leg's last bone already stands on its sole's lowest point (legs._reach_rigid).
                if inside[side][frame] is not None and one_end[side][frame] and foot.body is None:
                    legs.stand_on(skeleton, foot, rotations, positions, towards, soles.rest_floor, given)
            else:
                legs.lift_above(skeleton, foot, rotations, positions, towards, soles.rest_floor)
    return moves


def _knees_kept(spans, foot, info: RetargetInfo, source_positions, floor: float):
    """`spans` with each frame's lowest knee (`contacts.Span.knee_lowest`): Kimodo's knee as deep under
    its floor (none over it) per the knee's height at rest over the floor, from `floor` (g1_02's kneel,
    its knee joint 11 cm under: the pelvis rolled down onto the kneeling leg took the mannequin's knee
    2 cm deeper). A leg with no knee, or a source without one: the spans as they are."""
    knee = info.source_map.bones.get("calf_" + foot.side)
    if foot.body is not None or knee is None or not source_positions or source_positions[0][knee] is None:
        return spans
    source_rest = rest_pose(info.source_map.skeleton)[1]
    source_height = source_rest[knee][1] - min(p[1] for p in source_rest)
    height = rest_pose(info.target_map.skeleton)[1][foot.knee][1] - floor
    if source_height <= 0.0 or height <= 0.0:
        return spans
    return [replace(span, knee_lowest=tuple(floor + min(0.0, source_positions[t][knee][1]) * height / source_height
                                             for t in range(span.first, span.last + 1))) for span in spans]


def _local_rotations(skeleton: Skeleton, poses) -> array:
    """Every frame's local rotations from its world ones, flat: `soles._locals` per frame (conjugate,
    product and normalisation written out in place, the same arithmetic in the same order)."""
    out = array("d")
    plan = list(enumerate(skeleton.parents))
    sqrt = math.sqrt
    for rotations, _ in poses:
        frame = []
        for joint, parent in plan:
            if parent < 0:
                frame.extend(rotations[joint])
                continue
            ax, ay, az, aw = rotations[parent]
            bx, by, bz, bw = rotations[joint]
            x = aw * bx - ax * bw - ay * bz + az * by
            y = aw * by + ax * bz - ay * bw - az * bx
            z = aw * bz - ax * by + ay * bx - az * bw
            w = aw * bw + ax * bx + ay * by + az * bz
            n = sqrt(x * x + y * y + z * z + w * w)
            frame.extend((0.0, 0.0, 0.0, 1.0) if n == 0.0 else (x / n, y / n, z / n, w / n))
        out.extend(frame)
    return out


def _finished(retargeted: Motion, info: RetargetInfo, soles, poses, roots: array, carried, treadmill,
              between: bool = False):
    """The hands kept above the floor, the poses back to local rotations, and --in-place's travel out."""
    skeleton = retargeted.skeleton
    tmap = info.target_map
    floor = soles.rest_floor
    keep_hands_above(skeleton, tmap, soles.hands, poses, floor, retargeted.fps, between=between)

    local_rotations = _local_rotations(skeleton, poses)
    moved = carried
    if treadmill is not None:
        # In place: the solve's travel out, and the travel the planted feet carried the hips (its smooth
        # part; the sway stays), so the character walks a treadmill where it stands.
        window = max(1, int(round(retargeted.fps * 0.5)))
        smooth = [centred_average([c[axis] for c in carried], window) for axis in (0, 1)]
        removed = [(dx + smooth[0][f] - smooth[0][0], dz + smooth[1][f] - smooth[1][0]) for f, (dx, dz) in enumerate(treadmill)]
        moved = [(c[0] - r[0] + t[0], c[1] - r[1] + t[1]) for c, r, t in zip(carried, removed, treadmill)]
        for frame, (dx, dz) in enumerate(removed):
            roots[frame * 3] -= dx
            roots[frame * 3 + 2] -= dz
        treadmill = removed
    placed = Motion(skeleton, local_rotations, roots, retargeted.fps, name=retargeted.name, prompt=retargeted.prompt)
    return placed, moved, treadmill
