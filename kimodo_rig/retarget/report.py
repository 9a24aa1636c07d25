"""The retarget health report: numbers measured from the OUTPUT's poses (world joint positions per frame),
so the offline retarget and the Unreal step (positions sampled from a baked Anim Sequence) print the same
report the same way.

    kick_120: SMPL-X, 22 joints
      9 chains mapped, 19 left at rest (Root, LeftThumb, ...)
      reach 102 cm to 95 cm, arms corrected by up to 48 deg
      arms match 0.998 (worst lowerarm_r), legs match 0.996 (worst calf_l), pelvis 93 cm, lowest toe -1 cm, travelled 123 cm over 4.0 s
      facing +Z, planted feet slide 0.04 cm a frame, planted soles 0.1 cm above the floor

Directions are compared in the character's own facing, measured here from its bind geometry (heel to toe,
the hip line), never taken from the retarget; `report_warnings` names what is out of range.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

from ..model import Skeleton
from ..ops.fk import rest_positions
from ..rotations import IDENTITY, Quat, Vec3, cross, dot, length, normalize, quat_from_axis_angle, quat_rotate, scale, subtract
from .mapping import ARM_REPORT_PARTS, LEG_REPORT_PARTS, LIMB_REPORT_PARTS, HumanoidMap, floor_parts, mean_point
from .report_limbs import find_limbs

LEFT_AT_REST_SHOWN = 2
REFERENCE_HEIGHT_CM = 170.0  # the limits below are for a character this tall, scaled with its height
FLOAT_LIMIT_CM = 1.0  # planted soles higher than this above the rest floor float
SINK_LIMIT_CM = 2.0  # any foot point deeper than this under it sinks
SKATE_LIMIT_CM = 0.15  # planted feet faster than this (cm a frame) slide
ARMS_LIMIT = 0.95  # arms (legs) whose mean cosine with the source's falls below this depart from it
LEGS_LIMIT = 0.95
MAP_AGREEMENT = 0.02  # the limbs' figures on the map's bones and on the shape's limbs further apart: a suspect map
AXIS_SNAP_DEG = 10.0


COSINE_KEYS = ("arms_match", "legs_match", "limb_cosine_mean", "limb_cosine_min", "travel_cosine", "arms_match_by_map",
               "legs_match_by_map")
SKATE_KEYS = ("foot_skate_cm_per_frame", "kimodo_skate_cm_per_frame", "source_kimodo_skate_cm_per_frame")
KIMODO_FINE_KEYS = ("kimodo_skate_m_s", "kimodo_skate_ratio", "source_kimodo_skate_m_s", "source_kimodo_skate_ratio")


@dataclass(frozen=True)
class Report:
    skeleton: str  # the source's label: SOMA, G1, SMPL-X
    joints: int  # the source's joint count
    chains_mapped: int
    left_at_rest: List[str]
    reach_source_cm: float
    reach_target_cm: float
    arm_correction_max_deg: float
    arms_match: float  # mean over the upper arms and forearms of each one's mean cosine, source vs target direction
    arms_match_worst_bone: str
    legs_match: float  # the same over the thighs and shins
    legs_match_worst_bone: str
    limb_cosine_mean: float  # the same over the four limbs of each side (thigh, shin, upper arm, forearm)
    limb_cosine_min: float  # the least cosine of any of those segments in any frame
    pelvis_cm: float  # mean hips height over the clip
    lowest_toe_cm: float  # the target's lowest toe over the clip, from its bind-pose toe height
    travelled_cm: float  # horizontal distance of the hips, first to last frame
    duration_s: float
    facing: str = "+Z"  # the character's forward at bind, measured from its geometry: +Z, -X, ... or "37 deg"
    foot_skate_cm_per_frame: Optional[float] = None  # planted-foot speed during the clip's contacts
    planted_sole_cm: Optional[float] = None  # mean height of the planted feet's lowest point over the rest floor
    travel_cosine: Optional[float] = None  # hips travel vs the source's, in the character's facing
    height_cm: Optional[float] = None  # the character at bind (its mesh, or its joints)
    feet_measured_at: str = ""  # "skinned mesh" or "joints": what the floor figures were measured on
    notes: Tuple[str, ...] = ()  # what could not be measured (or done) as asked, and what stood in for it
    facing_warning: str = ""  # the feet's mesh and the foot bones point opposite ways: which one was taken
    # arms_match and legs_match as measured on the bones the map names (the figures above are measured on
    # the limbs the skeleton's shape shows: report_limbs): apart, the map is suspect
    arms_match_by_map: Optional[float] = None
    legs_match_by_map: Optional[float] = None
    # Kimodo's benchmark figures of the feet (`kimodo_feet`), the character's from the written file, the
    # clip's from its own joints: foot_skate_from_pred_contacts (m/s, and cm a frame) and foot_skate_ratio.
    kimodo_skate_m_s: Optional[float] = None
    kimodo_skate_cm_per_frame: Optional[float] = None
    kimodo_skate_ratio: Optional[float] = None
    source_kimodo_skate_m_s: Optional[float] = None
    source_kimodo_skate_cm_per_frame: Optional[float] = None
    source_kimodo_skate_ratio: Optional[float] = None

    def to_json(self) -> Dict:
        record = asdict(self)
        for key, value in record.items():
            if isinstance(value, float):
                digits = 4 if key in COSINE_KEYS or key in KIMODO_FINE_KEYS else 3 if key in SKATE_KEYS else 2
                record[key] = round(value, digits) + 0.0  # never -0.0
        return record


def measure_report(
    *,
    skeleton_label: str,
    joint_count: int,
    source_map: HumanoidMap,
    target_map: HumanoidMap,
    source_positions: Sequence[Sequence[Vec3]],
    target_positions: Sequence[Sequence[Optional[Vec3]]],
    duration_s: float,
    chains_mapped: int,
    left_at_rest: Sequence[str],
    reach_source: float,
    reach_target: float,
    arm_correction_max_deg: float,
    facing: Quat = IDENTITY,
    facing_label: str = "+Z",
    facing_warning: str = "",
    feet: Optional["FeetFigures"] = None,
    character: Optional[Skeleton] = None,
    carriers: Optional[FrozenSet[str]] = None,
) -> Report:
    """The report from per-frame world positions: source_positions[frame][joint of source_map.skeleton],
    target_positions[frame][joint of target_map.skeleton] (metres; None where a joint was not sampled).
    `facing` turns source directions into the target's frame (identity when both face +Z); `feet`, when
    given, carries the floor and foot figures measured from the written file. The limb figures are measured
    on the limbs `character`'s shape shows (the rig as read from its file, before the retarget reshaped
    it; by default target_map.skeleton), found by joint name in target_map.skeleton; `carriers`, the names
    of its joints that carry the mesh (None: no mesh), say which chains are the ones a user sees."""
    frames = min(len(source_positions), len(target_positions))
    by_map = _map_cosines(source_map, target_map, source_positions, target_positions, frames, facing)
    found = _limbs_by_shape(character or target_map.skeleton, target_map.skeleton, facing, carriers)
    per_part: Dict[str, List[float]] = {}
    for part in LIMB_REPORT_PARTS:
        if part in found:
            values = _shape_cosines(source_map, part, found[part], source_positions, target_positions, frames, facing)
            if values:
                per_part[part] = values
        elif part in by_map:  # a limb whose chain the shape does not show (a one-bone limb): the map's bones
            per_part[part] = by_map[part]
    means = {p: sum(v) / len(v) for p, v in per_part.items()}
    map_means = {p: sum(v) / len(v) for p, v in by_map.items()}
    arms, worst_arm = _match(means, ARM_REPORT_PARTS)
    legs, worst_leg = _match(means, LEG_REPORT_PARTS)
    limbs = _match(means, LIMB_REPORT_PARTS)[0]
    names = target_map.skeleton.joint_names

    def bone(part: str) -> str:
        if not part:
            return ""
        return names[found[part][0]] if part in found else target_map.joint_name(part)

    on_map = [p for p in LIMB_REPORT_PARTS if p not in found and p in by_map]
    shape_notes = ("limbs measured on the map's bones where the skeleton's shape shows none: {}".format(
        ", ".join(on_map)),) if on_map else ()
    everything = [c for values in per_part.values() for c in values]
    hips = target_map.bones["hips"]
    hips_path = [target_positions[f][hips] for f in range(frames)]
    floor = floor_parts(target_map)
    bind = target_map.skeleton
    from ..ops.fk import rest_positions

    bind_positions = rest_positions(bind)
    bind_floor = min(bind_positions[j][1] for j in floor)
    lowest = min(target_positions[f][j][1] for f in range(frames) for j in floor)  # type: ignore[index]
    travelled = 0.0
    travel_cosine = None
    if frames:
        first, last = hips_path[0], hips_path[-1]
        travelled = math.hypot(last[0] - first[0], last[2] - first[2])  # type: ignore[index]
        source_hips = source_map.bones["hips"]
        wanted = subtract(source_positions[frames - 1][source_hips], source_positions[0][source_hips])
        wanted = quat_rotate(facing, (wanted[0], 0.0, wanted[2]))
        have = (last[0] - first[0], 0.0, last[2] - first[2])  # type: ignore[index]
        height = feet.height_cm / 100.0 if feet is not None else _joints_height(bind_positions)
        if _travels(wanted, TRAVEL_MEASURED_M) and _travels(have, TRAVEL_MEASURED_M * 100.0 * height / REFERENCE_HEIGHT_CM):
            travel_cosine = dot(normalize(wanted), normalize(have))
    lowest_cm = 100.0 * (lowest - bind_floor)
    if feet is not None:
        lowest_cm = feet.lowest_cm
    return Report(
        skeleton=skeleton_label,
        joints=joint_count,
        chains_mapped=chains_mapped,
        left_at_rest=list(left_at_rest),
        reach_source_cm=reach_source * 100.0,
        reach_target_cm=reach_target * 100.0,
        arm_correction_max_deg=arm_correction_max_deg,
        arms_match=arms,
        arms_match_worst_bone=bone(worst_arm),
        legs_match=legs,
        legs_match_worst_bone=bone(worst_leg),
        limb_cosine_mean=limbs,
        limb_cosine_min=min(everything) if everything else float("nan"),
        pelvis_cm=100.0 * sum(p[1] for p in hips_path) / frames if frames else 0.0,  # type: ignore[index]
        lowest_toe_cm=lowest_cm,
        travelled_cm=100.0 * travelled,
        duration_s=duration_s,
        facing=facing_label,
        foot_skate_cm_per_frame=feet.skate_cm if feet is not None else None,
        planted_sole_cm=feet.planted_cm if feet is not None else None,
        travel_cosine=travel_cosine,
        height_cm=feet.height_cm if feet is not None else None,
        feet_measured_at=feet.measured_at if feet is not None else "",
        notes=(feet.notes if feet is not None else ()) + shape_notes,
        facing_warning=facing_warning,
        arms_match_by_map=_match(map_means, ARM_REPORT_PARTS)[0],
        legs_match_by_map=_match(map_means, LEG_REPORT_PARTS)[0],
    )


def _limbs_by_shape(character: Skeleton, skeleton: Skeleton, facing: Quat,
                    carriers: Optional[FrozenSet[str]]) -> Dict[str, Tuple[int, int]]:
    """report_limbs.find_limbs on `character`, as joints of `skeleton` (a limb whose joints it lacks left out)."""
    index = {name: j for j, name in enumerate(skeleton.joint_names)}
    carrying = None if carriers is None else frozenset(j for j, name in enumerate(character.joint_names) if name in carriers)
    found = {}
    for part, (start, end) in find_limbs(character, facing, carrying).items():
        names = character.joint_names[start], character.joint_names[end]
        if names[0] in index and names[1] in index:
            found[part] = (index[names[0]], index[names[1]])
    return found


def _map_cosines(source_map: HumanoidMap, target_map: HumanoidMap, source_positions, target_positions, frames: int,
                 facing: Quat) -> Dict[str, List[float]]:
    """Per limb part, the cosines frame by frame between the source's segment and the target's on the
    bones the map names (only to be compared with the figures measured on the skeleton's shape)."""
    ends = {part: _segment_end(target_map, part) for part in LIMB_REPORT_PARTS}
    per_part: Dict[str, List[float]] = {}
    for part in LIMB_REPORT_PARTS:
        if not (source_map.has(part) and target_map.has(part)):
            continue
        values = []
        for frame in range(frames):
            try:
                if part in target_map.whole_limbs:  # a one-bone limb runs where the source's two bones do
                    wanted = _span(source_map, part, source_positions[frame])
                else:
                    wanted = source_map.segment(part, source_positions[frame])
                have = _segment(target_map, part, ends[part], target_positions[frame])  # type: ignore[arg-type]
            except TypeError:  # a joint not sampled
                continue
            if wanted is None or have is None:
                continue
            values.append(dot(normalize(quat_rotate(facing, wanted)), normalize(have)))
        if values:
            per_part[part] = values
    return per_part


def _shape_cosines(source_map: HumanoidMap, part: str, joints: Tuple[int, int], source_positions, target_positions,
                   frames: int, facing: Quat) -> List[float]:
    """The cosines frame by frame between the source's segment `part` and the target's from joints[0] to
    joints[1] (report_limbs.find_limbs: the limb the skeleton's shape shows)."""
    if not source_map.has(part):
        return []
    start, end = joints
    values = []
    for frame in range(frames):
        a, b = target_positions[frame][start], target_positions[frame][end]
        wanted = source_map.segment(part, source_positions[frame])
        if a is None or b is None or wanted is None:
            continue
        have = subtract(b, a)
        if dot(have, have) <= 1e-12 or dot(wanted, wanted) <= 1e-12:
            continue
        values.append(dot(normalize(quat_rotate(facing, wanted)), normalize(have)))
    return values


def _match(means: Dict[str, float], parts: Sequence[str]) -> Tuple[float, str]:
    """The mean of the given parts' mean cosines (each segment weighs the same, however many frames
    it was measured on) and the worst part; nan and "" when none was measured."""
    measured = [p for p in parts if p in means]
    if not measured:
        return float("nan"), ""
    return sum(means[p] for p in measured) / len(measured), min(measured, key=lambda p: means[p])


NEXT_PART = {"upperarm": "lowerarm", "lowerarm": "hand", "thigh": "calf", "calf": "foot"}
SAME_END = 0.01  # of the farthest child's distance: children this near it end the bone together


def _segment_end(hmap: HumanoidMap, part: str) -> Tuple[int, ...]:
    """The joints whose mean ends a limb segment: the next part's joint, or where the map has none (a
    forearm without a hand bone: RobotExpressive's ends in three palm bones and a thumb) the bone's
    children farthest from it at rest, where the bone itself ends (the wrist, where the palms start;
    a thumb's root lies short of it and to one side). Chosen here, not taken from the map's ends (the
    retarget's: the mean of all the children), so the report measures the forearm a user sees."""
    after = NEXT_PART[part[:-2]] + part[-2:]
    if not hmap.has(part) or hmap.has(after) or part in hmap.whole_limbs:
        return ()
    skeleton = hmap.skeleton
    joint = hmap.bones[part]
    positions = rest_positions(skeleton)
    away = {c: length(subtract(positions[c], positions[joint])) for c in skeleton.children(joint)}
    farthest = max(away.values(), default=0.0)
    return tuple(c for c, d in away.items() if d >= farthest * (1.0 - SAME_END)) if farthest > 1e-4 else ()


def _segment(hmap: HumanoidMap, part: str, ends: Tuple[int, ...], positions: Sequence[Vec3]) -> Optional[Vec3]:
    """A limb segment's direction (not normalised): to `ends` (`_segment_end`), else as the map has it."""
    if not ends:
        return hmap.segment(part, positions)
    vector = subtract(mean_point(positions, ends), positions[hmap.anchor(part)])  # type: ignore[arg-type]
    return vector if dot(vector, vector) > 1e-12 else None


def _span(hmap: HumanoidMap, part: str, positions: Sequence[Vec3]) -> Optional[Vec3]:
    """Shoulder to wrist (or hip to ankle) on a two-bone limb: where the upper part starts to where the
    lower part ends."""
    lower = ("lowerarm_" if part.startswith("upperarm_") else "calf_") + part[-1]
    ends = hmap.ends.get(lower)
    if not (hmap.has(part) and hmap.has(lower) and ends):
        return None
    end = tuple(sum(positions[j][i] for j in ends) / len(ends) for i in range(3))
    return subtract(end, positions[hmap.anchor(part)])  # type: ignore[arg-type]


# A clip whose hips travel less than this (Kimodo's human-sized metres) is in place, and so is a character
# whose hips travel less than this per 1.7 m of its height (--in-place): no travel direction to compare.
TRAVEL_MEASURED_M = 0.2


def _travels(step: Vec3, at_least: float) -> bool:
    return math.hypot(step[0], step[2]) >= at_least


def _joints_height(positions: Sequence[Vec3]) -> float:
    return max(p[1] for p in positions) - min(p[1] for p in positions)


@dataclass(frozen=True)
class FeetFigures:
    """Floor and foot figures measured from a written file (see output.report_from_output)."""

    lowest_cm: float  # lowest foot point over the clip, from the rest floor
    skate_cm: Optional[float]  # planted-foot speed, cm a frame
    planted_cm: Optional[float]  # mean height of the planted feet's lowest point
    height_cm: float
    measured_at: str = "joints"  # or "skinned mesh"
    notes: Tuple[str, ...] = ()


def measure_facing(left_hip: Vec3, right_hip: Vec3, heel_to_toe: Sequence[Vec3]) -> Tuple[float, str]:
    """The character's forward at bind as a turn about +Y from +Z (radians) and a label. The hip line
    gives the direction (forward = left x up); the feet, heel to toe, say which way along it, and win
    where the names of the sides say otherwise."""
    left = subtract(left_hip, right_hip)
    forward = normalize(cross((left[0], 0.0, left[2]), (0.0, 1.0, 0.0)))
    feet = [normalize((v[0], 0.0, v[2])) for v in heel_to_toe if math.hypot(v[0], v[2]) > 1e-6]
    toes = normalize(tuple(sum(v[k] for v in feet) for k in range(3))) if feet else (0.0, 0.0, 0.0)
    if forward == (0.0, 0.0, 0.0):
        forward = toes
    elif dot(forward, toes) < 0.0:
        forward = scale(forward, -1.0)
    yaw = math.atan2(forward[0], forward[2])
    return yaw, facing_label(yaw)


def facing_label(yaw: float) -> str:
    degrees = math.degrees(yaw)
    for label, axis in (("+Z", 0.0), ("+X", 90.0), ("-Z", 180.0), ("-X", -90.0), ("-Z", -180.0)):
        if abs(degrees - axis) <= AXIS_SNAP_DEG:
            return label
    return "{:.0f} deg".format(degrees)


def facing_rotation(yaw: float) -> Quat:
    return quat_from_axis_angle((0.0, 1.0, 0.0), yaw)


def foot_skate(points: Dict[str, Tuple[Sequence[Vec3], Sequence[Vec3]]],
               contacts: Dict[str, Sequence[Tuple[bool, bool]]]) -> Optional[float]:
    """Kimodo's measure of planted feet, cm a frame: the heel point while the heel is in contact, the toe
    point while the toe is, over steps in contact at both ends; None without a contact."""
    steps = skate_steps(points, contacts)
    return 100.0 * sum(steps) / len(steps) if steps else None


def skate_steps(points: Dict[str, Tuple[Sequence[Vec3], Sequence[Vec3]]],
                contacts: Dict[str, Sequence[Tuple[bool, bool]]]) -> List[float]:
    """`foot_skate`'s steps (metres), side by side, heel then toe, in frame order."""
    steps = []
    for side, (heel, toe) in points.items():
        flags = contacts[side]
        for channel, track in ((0, heel), (1, toe)):
            for t in range(min(len(track), len(flags)) - 1):
                if flags[t][channel] and flags[t + 1][channel]:
                    a, b = track[t], track[t + 1]
                    steps.append(math.sqrt((b[0] - a[0]) ** 2 + (b[1] - a[1]) ** 2 + (b[2] - a[2]) ** 2))
    return steps


def report_warnings(report: Report) -> List[str]:
    """What is out of range, in words (limits for a 1.7 m character, scaled with its height)."""
    scale = (report.height_cm or REFERENCE_HEIGHT_CM) / REFERENCE_HEIGHT_CM
    problems = []
    if report.planted_sole_cm is not None and report.planted_sole_cm > FLOAT_LIMIT_CM * scale:
        problems.append("planted feet float {} cm above the floor".format(_shown(report.planted_sole_cm, 1)))
    if report.lowest_toe_cm < -SINK_LIMIT_CM * scale:
        problems.append("feet sink {} cm into the floor".format(_shown(-report.lowest_toe_cm, 1)))
    if report.foot_skate_cm_per_frame is not None and report.foot_skate_cm_per_frame > SKATE_LIMIT_CM * scale:
        problems.append("planted feet slide {} cm a frame".format(_shown(report.foot_skate_cm_per_frame, 2)))
    if report.arms_match < ARMS_LIMIT or math.isnan(report.arms_match):
        problems.append("arms match only {:.3f}{}".format(report.arms_match, _worst(report.arms_match_worst_bone)))
    if report.legs_match < LEGS_LIMIT or math.isnan(report.legs_match):
        problems.append("legs match only {:.3f}{}".format(report.legs_match, _worst(report.legs_match_worst_bone)))
    for limbs, by_shape, by_map in (("arms", report.arms_match, report.arms_match_by_map),
                                    ("legs", report.legs_match, report.legs_match_by_map)):
        if by_map is not None and abs(by_shape - by_map) > MAP_AGREEMENT:  # False with a nan: warned of above
            problems.append("{} match {:.3f} on the limbs the skeleton's shape shows but {:.3f} on the bones the map "
                            "names: the map may name the wrong bones (see kimodo-rig map)".format(limbs, by_shape, by_map))
    if report.facing_warning:
        problems.append(report.facing_warning)
    if report.travel_cosine is not None and report.travel_cosine < 0.0:
        problems.append("travels against its facing ({}): walks backwards".format(report.facing))
    return problems


def _worst(bone: str) -> str:
    return " (worst {})".format(bone) if bone else ""


def _shown(value: float, digits: int = 0) -> str:
    """Rounded to `digits` decimals, never "-0" or "-0.0" (a value that rounds to zero is shown as 0)."""
    text = "{:.{}f}".format(value, digits)
    return text[1:] if text.startswith("-") and float(text) == 0.0 else text


def format_report(name: str, report: Report) -> str:
    """The four report lines, as the seed's Unreal step prints them."""
    shown = report.left_at_rest[:LEFT_AT_REST_SHOWN]
    if len(report.left_at_rest) > LEFT_AT_REST_SHOWN:
        shown = shown + ["..."]
    left = " ({})".format(", ".join(shown)) if shown else ""
    return "\n".join((
        "{}: {}, {} joints".format(name, report.skeleton, report.joints),
        "  {} chains mapped, {} left at rest{}".format(report.chains_mapped, len(report.left_at_rest), left),
        "  reach {} cm to {} cm, arms corrected by up to {} deg".format(
            _shown(report.reach_source_cm), _shown(report.reach_target_cm), _shown(report.arm_correction_max_deg)),
        "  arms match {:.3f} (worst {}), legs match {:.3f} (worst {}), pelvis {} cm, lowest toe {} cm, travelled {} cm "
        "over {:.1f} s".format(
            report.arms_match, report.arms_match_worst_bone, report.legs_match, report.legs_match_worst_bone,
            _shown(report.pelvis_cm), _shown(report.lowest_toe_cm), _shown(report.travelled_cm), report.duration_s),
    ) + ((_feet_line(report),) if report.foot_skate_cm_per_frame is not None or report.planted_sole_cm is not None
         else ()) + ((_kimodo_feet_line(report),) if report.kimodo_skate_m_s is not None or report.kimodo_skate_ratio is not None
                  else ()))


def _feet_line(report: Report) -> str:
    parts = ["facing " + report.facing]
    if report.foot_skate_cm_per_frame is not None:
        parts.append("planted feet slide {} cm a frame".format(_shown(report.foot_skate_cm_per_frame, 2)))
    if report.planted_sole_cm is not None:
        parts.append("planted soles {} cm above the floor".format(_shown(report.planted_sole_cm, 1)))
    return "  " + ", ".join(parts)


# --- Kimodo's benchmark figures of the feet ----------------------------------------------------------------
# As Kimodo's benchmark defines them (kimodo/metrics/foot_skate.py: FootSkateFromContacts, FootSkateRatio):
# speeds are each joint's whole (3D) step from a frame to the next times the frame rate; its thresholds are
# for Kimodo's own skeleton and are scaled here with the character's height per 1.7 m.
KIMODO_TOE_ON_FLOOR_M = 0.05  # per 1.7 m: a toe joint lower than this over the floor is on it (height_thresh)
KIMODO_SKATING_M_S = 0.2  # per 1.7 m: a toe on the floor faster than this skates (vel_thresh)


@dataclass(frozen=True)
class KimodoFeet:
    """foot_skate_from_pred_contacts (m/s; None without a contact), its largest speed, foot_skate_ratio
    (None without a toe on the floor) and the frame rate they were measured at."""

    skate_m_s: Optional[float]
    skate_max_m_s: Optional[float]
    skate_ratio: Optional[float]
    fps: float

    @property
    def skate_cm_per_frame(self) -> Optional[float]:
        return None if self.skate_m_s is None else 100.0 * self.skate_m_s / self.fps


def kimodo_feet(ankles: Dict[str, Sequence[Vec3]], toes: Dict[str, Sequence[Vec3]],
                contacts: Dict[str, Sequence[Tuple[bool, bool]]], fps: float, floor: float = 0.0,
                height_m: float = REFERENCE_HEIGHT_CM / 100.0) -> KimodoFeet:
    """Kimodo's figures from per-side tracks of the ankle and toe joints (metres, per frame) and the
    clip's (heel, toe) contacts: foot_skate_from_pred_contacts is the mean speed of the ankle over the
    frames its heel is in contact and of the toe over the frames its toe is, each from that frame to the
    next (the last frame has none); foot_skate_ratio is the share of the steps a toe is on the floor at
    both ends (lower than KIMODO_TOE_ON_FLOOR_M over `floor`) in which it moves faster than
    KIMODO_SKATING_M_S, contacts aside. `height_m`: the character's, which the thresholds scale with."""
    size = height_m / (REFERENCE_HEIGHT_CM / 100.0)
    speeds = []
    for side in ankles:
        flags = contacts[side]
        for channel, track in ((0, ankles[side]), (1, toes[side])):
            speeds += [_speed(track, t, fps) for t in range(min(len(track), len(flags)) - 1) if flags[t][channel]]
    on_floor = skating = 0
    for track in toes.values():
        low = [p[1] - floor < KIMODO_TOE_ON_FLOOR_M * size for p in track]
        for t in range(len(track) - 1):
            if low[t] and low[t + 1]:
                on_floor += 1
                skating += _speed(track, t, fps) > KIMODO_SKATING_M_S * size
    return KimodoFeet(sum(speeds) / len(speeds) if speeds else None, max(speeds) if speeds else None,
                      skating / on_floor if on_floor else None, fps)


def _speed(track: Sequence[Vec3], t: int, fps: float) -> float:
    a, b = track[t], track[t + 1]
    return math.sqrt((b[0] - a[0]) ** 2 + (b[1] - a[1]) ** 2 + (b[2] - a[2]) ** 2) * fps


def with_kimodo_feet(report: Report, character: KimodoFeet, source: KimodoFeet) -> Report:
    """The report with Kimodo's figures of the character's feet and, beside them, the clip's own."""
    return replace(report, kimodo_skate_m_s=character.skate_m_s, kimodo_skate_cm_per_frame=character.skate_cm_per_frame,
                   kimodo_skate_ratio=character.skate_ratio, source_kimodo_skate_m_s=source.skate_m_s,
                   source_kimodo_skate_cm_per_frame=source.skate_cm_per_frame,
                   source_kimodo_skate_ratio=source.skate_ratio)


def _kimodo_feet_line(report: Report) -> str:
    def figures(cm, m_s, ratio) -> str:
        text = "{} cm a frame ({} m/s)".format(_shown(cm, 2), _shown(m_s, 3)) if cm is not None else "no contact"
        return text + (", skate ratio {}".format(_shown(ratio, 3)) if ratio is not None else "")

    return "  Kimodo's foot skate {}; the clip's own {}".format(
        figures(report.kimodo_skate_cm_per_frame, report.kimodo_skate_m_s, report.kimodo_skate_ratio),
        figures(report.source_kimodo_skate_cm_per_frame, report.source_kimodo_skate_m_s, report.source_kimodo_skate_ratio))
