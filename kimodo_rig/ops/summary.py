"""What a motion holds and whether it is healthy: the numbers `kimodo-rig inspect` shows."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from .. import skeletons
from ..model import Motion, Skeleton
from ..rotations import quat_norm
from .fk import world_positions

# Foot joints of a rig that is not Kimodo's, by name: LeftFoot, l_ankle, RightToeBase, heel.L, ball_r ...
_FOOT_NAME = re.compile(r"foot|toe|ankle|heel|(^|[^a-z])ball([^a-z]|$)")


@dataclass(frozen=True)
class Summary:
    skeleton: str  # skeleton name: a built-in id (somaskel77) or the rig's own name
    label: str  # SOMA, G1, SMPL-X, or the rig's name
    joints: int
    frames: int
    fps: float
    duration_s: float  # first to last frame
    travelled_m: float  # horizontal (XZ) path length of the root
    lowest_foot_m: Optional[float]  # lowest height (Y) any foot joint reaches; None when no joint is a foot
    lowest_foot_joint: str
    lowest_foot_frame: int
    max_quat_norm_error: float  # largest | |q| - 1 | over every stored local rotation

    def as_json(self) -> Dict[str, object]:
        """Exactly the keys `inspect --json` promises."""
        return {
            "skeleton": self.skeleton, "joints": self.joints, "frames": self.frames, "fps": self.fps,
            "duration_s": self.duration_s, "travelled_m": self.travelled_m, "lowest_foot_m": self.lowest_foot_m,
            "max_quat_norm_error": self.max_quat_norm_error,
        }

    def text(self, source: str) -> str:
        skeleton = self.label if self.label == self.skeleton else "{} ({})".format(self.label, self.skeleton)
        foot = ("{:.3f} m ({}, frame {})".format(self.lowest_foot_m, self.lowest_foot_joint, self.lowest_foot_frame)
                if self.lowest_foot_m is not None else "no foot joints found")
        return "\n".join([
            source,
            "  skeleton     {}, {} joints".format(skeleton, self.joints),
            "  frames       {} at {:g} fps, {:.2f} s".format(self.frames, self.fps, self.duration_s),
            "  travel       {:.3f} m (horizontal path of the root)".format(self.travelled_m),
            "  lowest foot  " + foot,
            "  health       max quaternion norm error {:.1e}".format(self.max_quat_norm_error),
        ])


def foot_joints(skeleton: Skeleton) -> Tuple[int, ...]:
    """Kimodo skeletons: their semantic foot chains; other rigs: joints named like feet, toes or ankles."""
    if skeleton.name in skeletons.BUILTIN:
        groups = skeletons.data(skeleton.name)["semantic_groups"]
        names = groups["left_foot_chain"] + groups["right_foot_chain"]
        return tuple(skeleton.index(n) for n in names)
    return tuple(j for j, n in enumerate(skeleton.joint_names) if _FOOT_NAME.search(n.lower()))


def summarize(motion: Motion) -> Summary:
    roots = motion.root_positions
    travelled = sum(
        math.hypot(roots[i + 3] - roots[i], roots[i + 5] - roots[i + 2]) for i in range(0, len(roots) - 3, 3)
    )
    rotations = motion.local_rotations
    norm_error = max(
        (abs(quat_norm(rotations[i:i + 4]) - 1.0) for i in range(0, len(rotations), 4)),
        default=0.0,
    )
    feet = foot_joints(motion.skeleton)
    lowest: Optional[float] = None
    lowest_joint = ""
    lowest_frame = 0
    if feet:
        for frame, positions in enumerate(world_positions(motion)):
            for joint in feet:
                height = positions[joint][1]
                if lowest is None or height < lowest:
                    lowest, lowest_joint, lowest_frame = height, motion.skeleton.joint_names[joint], frame
    return Summary(
        skeleton=motion.skeleton.name, label=motion.skeleton.label, joints=motion.joint_count,
        frames=motion.frame_count, fps=motion.fps, duration_s=motion.duration, travelled_m=travelled,
        lowest_foot_m=lowest, lowest_foot_joint=lowest_joint, lowest_foot_frame=lowest_frame,
        max_quat_norm_error=norm_error,
    )
