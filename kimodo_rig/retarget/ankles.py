"""Where the line of a leg whose last bone has no foot joint ends: at its ankle, measured from its mesh.

A one-bone leg (Kenney's `leg-left`, hip to foot) or a shin without a foot bone ends at a tip the rig
reading guessed from its vertices: the farthest reach towards their centroid, which a foot pulls forward
and down to the toe's front (Kenney's block feet: 39 degrees ahead of the leg's column). Aimed along
Kimodo's hip-to-ankle line, that tip leans the whole leg back by as much. So the leg's line ends where
Kimodo's does, at an ankle: above the sole's footprint, under the bone's start where the footprint lies
under it (else its nearest point: legs spread apart at rest), ANKLE_HEIGHT of the bone's height above the
sole. The ankle is a joint added under the bone (`<bone>_ankle`), so the solve aims it and the report
measures it from the written file like any joint. Used by kimodo_rig.retarget.feet."""
from __future__ import annotations

import math
from dataclasses import replace
from typing import List, Optional, Sequence, Tuple

from ..model import Skeleton
from ..ops.fk import rest_pose
from ..rotations import IDENTITY, Vec3, quat_conjugate, quat_rotate, subtract
from .mapping import SIDES, HumanoidMap
from .soles import BindMesh, added_tip, subtree

ANKLE_HEIGHT = 0.1  # of the bone's start above its sole (Kimodo's SOMA: ankle 8.5 cm, hips 93 cm)
SOLE_BAND = 0.05  # of the bone's start above its sole: vertices this close to the lowest are the sole
CARRIED = 0.5  # a vertex is the bone's when the bone and those below it carry this much of it

Added = Tuple[str, str, Vec3]  # (joint name, the bone it rides on, its rest position in the glTF frame)


def with_ankles(tmap: HumanoidMap, mesh: BindMesh) -> Tuple[HumanoidMap, Tuple[Added, ...]]:
    """`tmap` with an ankle joint under each leg bone that ends at an added tip (a one-bone leg's thigh,
    a footless shin), the bone's segment ending at it; and the joints added. Unchanged without a mesh
    (the tip then comes from the bone's axis, not a foot)."""
    skeleton = tmap.skeleton
    if not mesh:
        return tmap, ()
    rotations, positions = rest_pose(skeleton)
    names = list(skeleton.joint_names)
    parents = list(skeleton.parents)
    offsets = list(skeleton.rest_offsets)
    locals_ = list(skeleton.rest_rotations)
    ends = dict(tmap.ends)
    added: List[Added] = []
    taken = set(names)
    for side in SIDES:
        part = _tipped_leg_part(tmap, side)
        if part is None:
            continue
        bone = tmap.bones[part]
        carrying = {skeleton.joint_names[j] for j in subtree(skeleton, bone)}
        vertices = [p for p, weights in mesh if sum(w for n, w in weights.items() if n in carrying) >= CARRIED]
        ankle = ankle_point(positions[bone], vertices)
        if ankle is None:
            continue
        name = skeleton.joint_names[bone] + "_ankle"
        while name in taken:
            name += "_"
        taken.add(name)
        names.append(name)
        parents.append(bone)
        offsets.append(quat_rotate(quat_conjugate(rotations[bone]), subtract(ankle, positions[bone])))
        locals_.append(IDENTITY)
        ends[part] = (len(names) - 1,)
        added.append((name, skeleton.joint_names[bone], ankle))
    if not added:
        return tmap, ()
    grown = Skeleton(skeleton.name, tuple(names), tuple(parents), tuple(offsets), tuple(locals_), skeleton.label)
    return replace(tmap, skeleton=grown, ends=ends), tuple(added)


def _tipped_leg_part(tmap: HumanoidMap, side: str) -> Optional[str]:
    """The leg part whose segment ends at the foot and whose foot is a tip the reading added: the thigh
    of a one-bone leg, or a shin without a foot bone. None where the foot is the character's own joint."""
    foot = tmap.bones.get("foot_" + side)
    if foot is None or not added_tip(tmap.skeleton, foot):
        return None
    bone = tmap.skeleton.parents[foot]
    for part in ("thigh_" + side, "calf_" + side):
        if tmap.bones.get(part) == bone and tmap.ends.get(part) == (foot,):
            return part
    return None


def ankle_point(start: Sequence[float], vertices: Sequence[Sequence[float]]) -> Optional[Vec3]:
    """The ankle of a leg bone starting at `start` whose own vertices (glTF frame, at bind) include its
    foot: above the sole's footprint (the vertices within SOLE_BAND of the lowest, seen from above) at
    the point nearest under `start`, ANKLE_HEIGHT of the bone's height above the sole. None when the
    vertices do not lie below the start."""
    if not vertices:
        return None
    lowest = min(v[1] for v in vertices)
    height = start[1] - lowest
    if not height > 0.0:
        return None
    footprint = [(v[0], v[2]) for v in vertices if v[1] <= lowest + SOLE_BAND * height]
    x, z = nearest_in_hull((start[0], start[2]), convex_hull(footprint))
    return (x, lowest + ANKLE_HEIGHT * height, z)


def convex_hull(points: Sequence[Tuple[float, float]]) -> List[Tuple[float, float]]:
    """The 2D convex hull, counter-clockwise, without repeated or collinear corners (monotone chain)."""
    unique = sorted(set(points))
    if len(unique) < 3:
        return unique

    def turn(o, a, b) -> float:
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower: List[Tuple[float, float]] = []
    upper: List[Tuple[float, float]] = []
    for point in unique:
        while len(lower) >= 2 and turn(lower[-2], lower[-1], point) <= 0.0:
            lower.pop()
        lower.append(point)
    for point in reversed(unique):
        while len(upper) >= 2 and turn(upper[-2], upper[-1], point) <= 0.0:
            upper.pop()
        upper.append(point)
    return lower[:-1] + upper[:-1]


def nearest_in_hull(point: Tuple[float, float], hull: Sequence[Tuple[float, float]]) -> Tuple[float, float]:
    """`point` when it lies inside the convex polygon `hull` (counter-clockwise), else the hull's nearest
    point (a corner or a point of an edge; one or two corners: a point or a segment)."""
    if len(hull) >= 3 and all((b[0] - a[0]) * (point[1] - a[1]) - (b[1] - a[1]) * (point[0] - a[0]) >= 0.0
                              for a, b in zip(hull, list(hull[1:]) + [hull[0]])):
        return point
    edges = list(zip(hull, list(hull[1:]) + [hull[0]])) if len(hull) >= 2 else [(hull[0], hull[0])]
    nearest, gap = hull[0], math.inf
    for a, b in edges:
        dx, dz = b[0] - a[0], b[1] - a[1]
        size = dx * dx + dz * dz
        t = 0.0 if size <= 0.0 else min(max(((point[0] - a[0]) * dx + (point[1] - a[1]) * dz) / size, 0.0), 1.0)
        at = (a[0] + t * dx, a[1] + t * dz)
        here = (at[0] - point[0]) ** 2 + (at[1] - point[1]) ** 2
        if here < gap:
            nearest, gap = at, here
    return nearest
