"""The retarget health report: numbers measured from the OUTPUT's poses (world joint positions per frame),
so the offline retarget and the Unreal step (positions sampled from a baked Anim Sequence) print the same
report the same way.

    kick_120: SMPL-X, 22 joints
      9 chains mapped, 19 left at rest (Root, LeftThumb, ...)
      reach 102 cm to 95 cm, arms corrected by up to 48 deg
      arms match 0.998 (worst lowerarm_r), pelvis 93 cm, lowest toe -1 cm, travelled 123 cm over 4.0 s
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional, Sequence

from ..rotations import IDENTITY, Quat, Vec3, dot, normalize, quat_rotate
from .mapping import ARM_REPORT_PARTS, LIMB_REPORT_PARTS, HumanoidMap, floor_parts

LEFT_AT_REST_SHOWN = 2


@dataclass(frozen=True)
class Report:
    skeleton: str  # the source's label: SOMA, G1, SMPL-X
    joints: int  # the source's joint count
    chains_mapped: int
    left_at_rest: List[str]
    reach_source_cm: float
    reach_target_cm: float
    arm_correction_max_deg: float
    arms_match: float  # mean cosine of source vs target upper-arm and forearm directions
    arms_match_worst_bone: str
    limb_cosine_mean: float  # the same over every mapped limb bone
    limb_cosine_min: float
    pelvis_cm: float  # mean hips height over the clip
    lowest_toe_cm: float  # the target's lowest toe over the clip, from its bind-pose toe height
    travelled_cm: float  # horizontal distance of the hips, first to last frame
    duration_s: float

    def to_json(self) -> Dict:
        record = asdict(self)
        for key, value in record.items():
            if isinstance(value, float):
                record[key] = round(value, 4 if key in ("arms_match", "limb_cosine_mean", "limb_cosine_min") else 2)
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
) -> Report:
    """The report from per-frame world positions: source_positions[frame][joint of source_map.skeleton],
    target_positions[frame][joint of target_map.skeleton] (metres; None where a joint was not sampled).
    `facing` turns source directions into the target's frame (identity when both face +Z)."""
    frames = min(len(source_positions), len(target_positions))
    per_part: Dict[str, List[float]] = {}
    for part in LIMB_REPORT_PARTS:
        if not (source_map.has(part) and target_map.has(part)):
            continue
        values = []
        for frame in range(frames):
            try:
                wanted = source_map.segment(part, source_positions[frame])
                have = target_map.segment(part, target_positions[frame])  # type: ignore[arg-type]
            except TypeError:  # a joint not sampled
                continue
            if wanted is None or have is None:
                continue
            values.append(dot(normalize(quat_rotate(facing, wanted)), normalize(have)))
        if values:
            per_part[part] = values
    arm_means = {p: sum(v) / len(v) for p, v in per_part.items() if p in ARM_REPORT_PARTS}
    arms = sum(arm_means.values()) / len(arm_means) if arm_means else float("nan")
    worst = min(arm_means, key=lambda p: arm_means[p]) if arm_means else ""
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
    if frames:
        first, last = hips_path[0], hips_path[-1]
        travelled = math.hypot(last[0] - first[0], last[2] - first[2])  # type: ignore[index]
    return Report(
        skeleton=skeleton_label,
        joints=joint_count,
        chains_mapped=chains_mapped,
        left_at_rest=list(left_at_rest),
        reach_source_cm=reach_source * 100.0,
        reach_target_cm=reach_target * 100.0,
        arm_correction_max_deg=arm_correction_max_deg,
        arms_match=arms,
        arms_match_worst_bone=target_map.joint_name(worst) if worst else "",
        limb_cosine_mean=sum(everything) / len(everything) if everything else float("nan"),
        limb_cosine_min=min(everything) if everything else float("nan"),
        pelvis_cm=100.0 * sum(p[1] for p in hips_path) / frames if frames else 0.0,  # type: ignore[index]
        lowest_toe_cm=100.0 * (lowest - bind_floor),
        travelled_cm=100.0 * travelled,
        duration_s=duration_s,
    )


def _whole(value: float) -> str:
    """Rounded to a whole number, never "-0"."""
    text = "{:.0f}".format(value)
    return "0" if text == "-0" else text


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
            _whole(report.reach_source_cm), _whole(report.reach_target_cm), _whole(report.arm_correction_max_deg)),
        "  arms match {:.3f} (worst {}), pelvis {} cm, lowest toe {} cm, travelled {} cm over {:.1f} s".format(
            report.arms_match, report.arms_match_worst_bone, _whole(report.pelvis_cm), _whole(report.lowest_toe_cm),
            _whole(report.travelled_cm), report.duration_s),
    ))
