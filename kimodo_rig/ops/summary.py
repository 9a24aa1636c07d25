"""What a motion holds and whether it is healthy: the numbers `kimodo-rig inspect` shows."""
from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import skeletons
from ..errors import KimodoError
from ..model import Motion, Skeleton
from ..rotations import quat_norm
from .fk import world_positions

# A root whose horizontal path over the clip is shorter than this (m) stays put: the travel is below it.
STILL_ROOT_M = 0.001

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
    bones: Tuple[str, ...] = ()  # a rig that is not Kimodo's: its skin's joints, in order

    def as_json(self) -> Dict[str, object]:
        """Exactly the keys `inspect --json` promises."""
        return {
            "skeleton": self.skeleton, "joints": self.joints, "frames": self.frames, "fps": self.fps,
            "duration_s": self.duration_s, "travelled_m": self.travelled_m, "lowest_foot_m": self.lowest_foot_m,
            "max_quat_norm_error": self.max_quat_norm_error,
            **({"bones": list(self.bones)} if self.bones else {}),
        }

    def text(self, source: str) -> str:
        skeleton = self.label if self.label == self.skeleton else "{} ({})".format(self.label, self.skeleton)
        foot = ("{:.3f} m ({}, frame {})".format(self.lowest_foot_m, self.lowest_foot_joint, self.lowest_foot_frame)
                if self.lowest_foot_m is not None else "no foot joints found")
        frames = ("{} at {:g} fps, {:.2f} s".format(self.frames, self.fps, self.duration_s) if self.fps
                  else "{} (no animation: the pose as stored)".format(self.frames))
        lines = [
            source,
            "  skeleton     {}, {} joints".format(skeleton, self.joints),
            "  frames       " + frames,
            "  travel       {:.3f} m (horizontal path of the root{})".format(
                self.travelled_m, ", or of the hips where it stays" if self.bones else ""),
            "  lowest foot  " + foot,
            "  health       max quaternion norm error {:.1e}".format(self.max_quat_norm_error),
        ]
        if self.bones:
            lines.append("  bones        " + ", ".join(self.bones))
        return "\n".join(lines)


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


def summarize_gltf_rig(path, fps: Optional[float] = None) -> Summary:
    """A rigged glTF whose joints are not a Kimodo skeleton (a character, a `retarget` output): its skin's
    bones, its first animation sampled at its own key rate (or `fps`), and the same health figures, read
    from the nodes' world positions. The travel is the root's or, where the root stays put while the body
    walks (the travel on the hips, as `retarget` writes by default), that of the first joint down the
    trunk that moves."""
    from ..formats import gltf_document as gd
    from ..formats.limits import frame_rate, frame_rate_of_period

    source = str(path)
    document = gd.read_file(path)
    gltf = document.gltf
    skins = gltf.get("skins") or []
    if not skins:
        raise KimodoError("{}: no skin (skeleton) in this glTF".format(source))
    joints = list(max(skins, key=lambda skin: len(skin.get("joints", []))).get("joints", []))
    nodes = gltf.get("nodes", [])
    if not joints or any(not isinstance(n, int) or not 0 <= n < len(nodes) for n in joints):
        raise KimodoError("{}: the skin lists no valid joints".format(source))
    names = tuple(nodes[n].get("name") or "node{}".format(n) for n in joints)
    channels: Dict[int, Dict[str, List[float]]] = {}
    rotations: List[Sequence[float]] = []
    frames, rate, duration = 1, 0.0, 0.0
    if gltf.get("animations"):
        keyed = _animation_channels(document)
        starts = [times[0] for _, _, times, _ in keyed if times]
        ends = [times[-1] for _, _, times, _ in keyed if times]
        longest = max((times for _, _, times, _ in keyed), key=len, default=[])
        if len(longest) > 1:
            rate = frame_rate(fps, source) if fps else round(frame_rate_of_period(
                (longest[-1] - longest[0]) / (len(longest) - 1), source, "the key times' frame period"), 3)
            duration = max(ends) - min(starts)
            frames = int(round(duration * rate)) + 1
            for node, target_path, times, values in keyed:
                flat = channels.setdefault(node, {}).setdefault(target_path, [])
                for frame in range(frames):
                    flat.extend(_sample(times, values, min(starts) + frame / rate, target_path))
                if target_path == "rotation" and node in joints:
                    rotations.extend(values)
    joint_of = {node: j for j, node in enumerate(joints)}
    parents = gd.node_parents(gltf)
    children: Dict[int, List[int]] = {j: [] for j in range(len(joints))}
    for j, node in enumerate(joints):
        if joint_of.get(parents[node]) is not None:
            children[joint_of[parents[node]]].append(j)
    trunk = _trunk(children, next(j for j, node in enumerate(joints) if joint_of.get(parents[node]) is None))
    feet = [j for j, name in enumerate(names) if _FOOT_NAME.search(name.lower())]
    paths = [0.0] * len(trunk)
    previous: Optional[List[Tuple[float, float, float]]] = None
    lowest: Optional[float] = None
    lowest_joint, lowest_frame = "", 0
    for frame, positions in enumerate(gd.world_positions_by_frame(gltf, channels, frames, joints)):
        if previous is not None:
            for k, j in enumerate(trunk):
                paths[k] += math.hypot(positions[j][0] - previous[j][0], positions[j][2] - previous[j][2])
        previous = list(positions)
        for j in feet:
            if lowest is None or positions[j][1] < lowest:
                lowest, lowest_joint, lowest_frame = positions[j][1], names[j], frame
    # The root's travel; where the root stays put (the travel is on the hips), the first trunk joint's that moves.
    travelled = next((path for path in paths if path > STILL_ROOT_M), 0.0)
    rotations.extend(nodes[n]["rotation"] for n in joints if "rotation" in nodes[n])
    norm_error = max((abs(quat_norm(q) - 1.0) for q in rotations), default=0.0)
    label = Path(source).stem
    return Summary(skeleton=label, label=label, joints=len(joints), frames=frames, fps=rate, duration_s=duration,
                   travelled_m=travelled, lowest_foot_m=lowest, lowest_foot_joint=lowest_joint,
                   lowest_foot_frame=lowest_frame, max_quat_norm_error=norm_error, bones=names)


def _trunk(children: Dict[int, List[int]], top: int) -> List[int]:
    """The joints from `top` down the body: each time into the child that carries the most joints."""
    def size(j: int) -> int:
        return 1 + sum(size(k) for k in children[j])

    trunk = [top]
    while children[trunk[-1]]:
        trunk.append(max(children[trunk[-1]], key=size))
    return trunk


def _animation_channels(document: Any) -> List[Tuple[int, str, List[float], List[Tuple[float, ...]]]]:
    """(node, path, key times, values) of each node channel of the first animation; each channel keeps
    its own key times (a character's channels need not share them)."""
    animation = document.gltf["animations"][0]
    found = []
    for channel in animation.get("channels", []):
        target = channel.get("target", {})
        if "node" not in target or target.get("path") not in ("translation", "rotation", "scale"):
            continue
        sampler = animation["samplers"][channel["sampler"]]
        times = [t[0] for t in document.accessor(sampler["input"])]
        values = document.accessor(sampler["output"])
        if sampler.get("interpolation") == "CUBICSPLINE":
            values = values[1::3]
        if times and len(values) == len(times):
            found.append((target["node"], target["path"], times, values))
    return found


def _sample(times: Sequence[float], values: Sequence[Sequence[float]], at: float, path: str) -> Sequence[float]:
    """The channel at time `at`: linear between keys (normalised for rotations), held beyond its ends."""
    after = bisect.bisect_left(times, at)
    if after <= 0:
        return values[0]
    if after >= len(times):
        return values[-1]
    t0, t1 = times[after - 1], times[after]
    w = (at - t0) / (t1 - t0) if t1 > t0 else 1.0
    a, b = values[after - 1], values[after]
    if path == "rotation" and sum(x * y for x, y in zip(a, b)) < 0:
        b = [-x for x in b]
    mixed = [x + (y - x) * w for x, y in zip(a, b)]
    if path == "rotation":
        norm = math.sqrt(sum(x * x for x in mixed)) or 1.0
        mixed = [x / norm for x in mixed]
    return mixed
