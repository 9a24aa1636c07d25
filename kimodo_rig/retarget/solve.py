"""Motion onto another humanoid rig, as a pure operation on the model.

Order of work, parent before child on the target:
1. rest correction (humanoid.rest_corrections): each aimed target bone turned at rest so its segment
   points where the source's does at rest;
2. per frame, the source bone's world rotation relative to its own rest applied on top (feet, toes, head
   and hips: that change only, on the target's own rest; a one-bone limb: the swing of the source's
   shoulder-to-wrist or hip-to-ankle line), all in the target's measured facing; unmapped bones keep
   their rest;
3. bone lengths stay the target's; the hips travel by the source's path scaled by the ratio of the two
   rest leg reaches (never the first frame: a clip that starts crouched stays crouched);
4. floor, every frame: the target's lowest toe sits as far from its bind-pose toe height as the source's
   lowest toe sits from Kimodo's floor (y = 0), scaled by the same ratio, so legs of other proportions
   neither dip nor float and a character of any size moves the same.
"""
from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import KimodoError
from ..model import Motion, Skeleton
from ..rotations import (
    IDENTITY,
    Quat,
    Vec3,
    quat_between,
    quat_conjugate,
    quat_from_axis_angle,
    quat_multiply,
    quat_normalize,
    quat_rotate,
    quat_slerp,
    subtract,
    yaw_angle,
)
from ..ops.fk import global_rotations_and_positions, rest_global_rotations, rest_pose, rest_positions, shared_poses
from .mapping import (
    FINGERS,
    HumanoidMap,
    facing_label,
    RestCorrections,
    find_root_bone,
    floor_parts,
    map_humanoid,
    rest_corrections,
    rest_leg_reach,
    retarget_chains,
)

ROOT_MOTION_MODES = ("hips", "root")
NEW_ROOT_NAME = "root"
IN_PLACE_WINDOW_S = 0.5  # s: --in-place removes the hips' path averaged over this, so a step's sway stays


@dataclass(frozen=True)
class RetargetInfo:
    """What the retarget decided, for the writers and the report."""

    target: Skeleton  # the target rig as given
    source_map: HumanoidMap
    target_map: HumanoidMap  # on the output motion's skeleton (hips first)
    corrections: RestCorrections
    reach_source: float  # metres
    reach_target: float
    floor_shift: float  # metres: the largest per-frame change of the hips height that grounds the feet
    chains_mapped: int
    left_at_rest: Tuple[str, ...]  # target IK chains the clip does not drive
    root_bone: Optional[str] = None  # --root-motion root: the target's root bone, or NEW_ROOT_NAME
    root_is_new: bool = False
    root_track: Optional[Tuple[Tuple[Vec3, Quat], ...]] = None  # world position and rotation per frame
    forward: Vec3 = (0.0, 0.0, 1.0)  # the character's facing measured from its rest geometry (unit, horizontal)
    facing: str = "+Z"  # the same as a label: "+Z", "-Z", "+X", "-X", or "<yaw from +Z> deg"
    warnings: Tuple[str, ...] = ()  # decisions against the rig's names (already logged once)
    # --in-place with the foot lock: per frame, the horizontal travel (x, z) taken out after the feet
    # were locked on the travelling motion (the report adds it back to measure the planted feet).
    removed_travel: Optional[Tuple[Tuple[float, float], ...]] = None
    foot_locked: bool = False  # the feet pass locked planted feet (not with --no-foot-lock)
    # Joints the retarget added to the character (a tipped leg's ankle, retarget.ankles): (name, the bone
    # it rides on, rest position in the glTF frame). The writers place them as the tips are placed.
    added_joints: Tuple[Tuple[str, str, Vec3], ...] = ()


def _descendant(skeleton: Skeleton, joint: int, ancestor: int) -> bool:
    while joint >= 0:
        if joint == ancestor:
            return True
        joint = skeleton.parents[joint]
    return False


def restructure(skeleton: Skeleton, root: int, new_parents: Dict[int, int], source: str = "",
                labels: Optional[Dict[int, str]] = None) -> Tuple[Skeleton, List[int]]:
    """The subtree under `root` (now joint 0), with some joints moved under other parents (keeping their
    rest world pose), ordered parent before child. Returns the skeleton and old index of each new joint.
    A move under a joint that hangs below the moved one (a map that swaps the hips and a hand) would make
    a loop: a KimodoError naming `source` and the joints (by `labels`, else by name)."""
    parents = [new_parents.get(j, p) for j, p in enumerate(skeleton.parents)]
    _refuse_loop(skeleton, parents, new_parents, source, labels or {})
    rest_rotations, rest_world = rest_pose(skeleton)
    children: Dict[int, List[int]] = {}
    for j, p in enumerate(parents):
        children.setdefault(p, []).append(j)
    order: List[int] = []
    stack = [root]
    while stack:
        joint = stack.pop()
        order.append(joint)
        stack.extend(reversed(children.get(joint, [])))
    index = {old: new for new, old in enumerate(order)}
    offsets: List[Vec3] = []
    locals_: List[Quat] = []
    new_parent_list: List[int] = []
    for old in order:
        parent = parents[old] if old != root else -1
        if parent < 0:
            offsets.append(rest_world[old])
            locals_.append(rest_rotations[old])
            new_parent_list.append(-1)
        else:
            inverse = quat_conjugate(rest_rotations[parent])
            offsets.append(quat_rotate(inverse, subtract(rest_world[old], rest_world[parent])))
            locals_.append(quat_normalize(quat_multiply(inverse, rest_rotations[old])))
            new_parent_list.append(index[parent])
    names = tuple(skeleton.joint_names[old] for old in order)
    return Skeleton(skeleton.name, names, tuple(new_parent_list), tuple(offsets), tuple(locals_), skeleton.label), order


def _refuse_loop(skeleton: Skeleton, parents: Sequence[int], moves: Dict[int, int], source: str,
                 labels: Dict[int, str]) -> None:
    """A KimodoError when a moved joint is among its own new ancestors. Every loop passes through a moved
    joint (the others keep the file's tree), and a walk up of more steps than joints has looped."""
    for moved in moves:
        joint = parents[moved]
        for _ in range(len(parents)):
            if joint < 0 or joint == moved:
                break
            joint = parents[joint]
        if joint == moved:
            above = parents[moved]
            raise KimodoError("{}: {} cannot hang from {}, which hangs below it".format(
                source or skeleton.name, labels.get(moved) or repr(skeleton.joint_names[moved]),
                labels.get(above) or repr(skeleton.joint_names[above])))


def _remap(hmap: HumanoidMap, skeleton: Skeleton, order: Sequence[int]) -> HumanoidMap:
    new = {old: i for i, old in enumerate(order)}
    return replace(
        hmap,
        skeleton=skeleton,
        bones={part: new[j] for part, j in hmap.bones.items() if j in new},
        anchors={part: new[j] for part, j in hmap.anchors.items() if j in new},
        ends={part: tuple(new[j] for j in joints) for part, joints in hmap.ends.items() if all(j in new for j in joints)},
    )


def working_skeleton(target: Skeleton, target_map: HumanoidMap, source: str = "") -> Tuple[HumanoidMap, List[int]]:
    """The target's subtree from the hips, with feet that hang off a root bone (IK-style rigs such as
    Quaternius' robot) moved under their shins, so they follow the legs, and limbs that hang beside the
    hips (Kenney's legs off a `root` at the floor that also carries the torso) moved under the hips.
    A map these moves would loop (its hips below a hand) is a KimodoError naming `source`, the map's."""
    moves = {}
    hips = target_map.bones["hips"]
    for side in ("l", "r"):
        foot, calf = target_map.bones.get("foot_" + side), target_map.bones.get("calf_" + side)
        if foot is not None and calf is not None and not _descendant(target, foot, calf):
            moves[foot] = calf
        for part in ("thigh_", "clavicle_" if "clavicle_" + side in target_map.bones else "upperarm_"):
            start = target_map.bones.get(part + side)
            if start is not None and not _descendant(target, start, hips):
                moves[start] = hips
    labels = {j: "{} ({!r})".format(part, target.joint_names[j]) for part, j in target_map.bones.items()}
    skeleton, order = restructure(target, hips, moves, source and source + ": map", labels)
    return _remap(target_map, skeleton, order), order


def centred_average(values: Sequence[float], window: int, keep_ends: bool = True) -> List[float]:
    """Centred moving average whose window shrinks symmetrically at the ends (so the first and last
    values are kept: the path's travel is removed whole, the sway around it stays); with `keep_ends`
    False, cut at the ends instead (the last frames averaged like any other)."""
    out = []
    count = len(values)
    for i in range(count):
        if keep_ends:
            half = min(window, i, count - 1 - i)
            out.append(sum(values[i - half: i + half + 1]) / (2 * half + 1))
        else:
            near = values[max(0, i - window): i + window + 1]
            out.append(sum(near) / len(near))
    return out


def _carried_turn(source: Quat, inverse_rest: Quat, facing: Quat, inverse_facing: Quat, correction: Quat) -> Quat:
    """quat_normalize(F (S R^-1) F^-1 C): a source bone's turn from its rest, seen facing the target, onto
    the target bone's corrected rest; the four quat_multiply and the normalisation written out in place
    (the same arithmetic in the same order: it runs per mapped joint per frame)."""
    ax, ay, az, aw = source
    bx, by, bz, bw = inverse_rest
    x, y, z, w = (aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                  aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz)
    ax, ay, az, aw = facing
    x, y, z, w = (aw * x + ax * w + ay * z - az * y, aw * y - ax * z + ay * w + az * x,
                  aw * z + ax * y - ay * x + az * w, aw * w - ax * x - ay * y - az * z)
    for bx, by, bz, bw in (inverse_facing, correction):
        x, y, z, w = (w * bx + x * bw + y * bz - z * by, w * by - x * bz + y * bw + z * bx,
                      w * bz + x * by - y * bx + z * bw, w * bw - x * bx - y * by - z * bz)
    n = math.sqrt(x * x + y * y + z * z + w * w)
    return IDENTITY if n == 0.0 else (x / n, y / n, z / n, w / n)


def retarget(
    motion: Motion,
    target: Skeleton,
    *,
    in_place: bool = False,
    root_motion: str = "hips",
    source_map: Optional[HumanoidMap] = None,
    target_map: Optional[HumanoidMap] = None,
    target_name: str = "",
    source_name: str = "",
) -> Tuple[Motion, RetargetInfo]:
    """`motion` on the humanoid `target`. The returned motion's skeleton is the target's subtree from its
    hips (joint 0, the bone that travels); `info.root_track` carries root motion for --root-motion root."""
    if root_motion not in ROOT_MOTION_MODES:
        raise ValueError("root_motion must be one of " + ", ".join(ROOT_MOTION_MODES))
    smap = source_map or map_humanoid(motion.skeleton, source_name or motion.name or motion.skeleton.name)
    tmap_full = target_map or map_humanoid(target, target_name or target.name)
    tmap, order = working_skeleton(target, tmap_full, target_name or target.name)
    skeleton = tmap.skeleton
    corrections = rest_corrections(smap, tmap)
    reach_source = rest_leg_reach(smap)
    reach_target = rest_leg_reach(tmap)
    if not reach_source > 0 or not reach_target > 0:
        raise KimodoError("{}: the rest pose has no legs standing below the hips".format(
            target_name or target.name if not reach_target > 0 else source_name or motion.name or motion.skeleton.name))
    ratio = reach_target / reach_source
    facing = corrections.facing

    source_globals, source_positions = shared_poses(motion)
    source_rest = rest_global_rotations(motion.skeleton)
    source_rest_positions = rest_positions(motion.skeleton)
    inverse_source_rest = [quat_conjugate(q) for q in source_rest]
    inverse_facing = quat_conjugate(facing)
    links = {link.target_joint: link for link in corrections.links}
    frames = motion.frame_count
    count = skeleton.joint_count
    target_rest_world = rest_positions(skeleton)

    parents = skeleton.parents
    plan = [(joint, parents[joint], links.get(joint), skeleton.rest_rotations[joint]) for joint in range(count)]
    local_rotations = array("d")
    for frame in range(frames):
        globals_: List[Quat] = []
        frame_globals = source_globals[frame]
        for joint, parent, link, rest_rotation in plan:
            if link is None and parent >= 0:
                # A bone the clip does not drive keeps its rest turn under its parent: global G R,
                # quat_multiply written out (most of a big rig's bones).
                ax, ay, az, aw = globals_[parent]
                bx, by, bz, bw = rest_rotation
                rotation = (aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                            aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz)
            elif link is not None and link.span:
                # A one-bone limb: the turn taking the source's rest root-to-end line to this frame's.
                start, end = link.span
                delta = quat_between(subtract(source_rest_positions[end], source_rest_positions[start]),
                                     subtract(source_positions[frame][end], source_positions[frame][start]))
                delta = quat_multiply(quat_multiply(facing, delta), inverse_facing)
                rotation = quat_normalize(quat_multiply(delta, corrections.globals[joint]))
            elif link is not None:
                a, b = link.source_joints
                if b != a and link.weight > 0.0:
                    delta = quat_multiply(frame_globals[a], inverse_source_rest[a])
                    delta = quat_slerp(delta, quat_multiply(frame_globals[b], inverse_source_rest[b]), link.weight)
                    delta = quat_multiply(quat_multiply(facing, delta), inverse_facing)
                    rotation = quat_normalize(quat_multiply(delta, corrections.globals[joint]))
                else:
                    rotation = _carried_turn(frame_globals[a], inverse_source_rest[a], facing, inverse_facing,
                                             corrections.globals[joint])
            else:
                rotation = quat_multiply(globals_[parent], rest_rotation)
            globals_.append(rotation)
            if parent < 0:
                local_rotations.extend(quat_normalize(rotation))
                continue
            # The local rotation: quat_normalize(quat_multiply(quat_conjugate(parent's), rotation)), written out.
            ax, ay, az, aw = globals_[parent]
            ax, ay, az = -ax, -ay, -az
            x, y, z, w = rotation
            lx = aw * x + ax * w + ay * z - az * y
            ly = aw * y - ax * z + ay * w + az * x
            lz = aw * z + ax * y - ay * x + az * w
            lw = aw * w - ax * x - ay * y - az * z
            n = math.sqrt(lx * lx + ly * ly + lz * lz + lw * lw)
            local_rotations.extend((lx / n, ly / n, lz / n, lw / n) if n != 0.0 else IDENTITY)

    # The hips' path: scaled by the leg ratio, turned by the facing, standing on the target's floor.
    source_hips = smap.bones["hips"]
    target_floor_joints = floor_parts(tmap)
    bind_floor = min(target_rest_world[j][1] for j in target_floor_joints)
    hips_bind = target_rest_world[0]
    path: List[List[float]] = []
    for frame in range(frames):
        p = source_positions[frame][source_hips]
        horizontal = quat_rotate(facing, (p[0] * ratio, 0.0, p[2] * ratio))
        path.append([hips_bind[0] + horizontal[0], bind_floor + p[1] * ratio, hips_bind[2] + horizontal[2]])
    if in_place and frames:
        for axis in (0, 2):
            smooth = centred_average([p[axis] for p in path], max(1, int(round(motion.fps * IN_PLACE_WINDOW_S))))
            for frame in range(frames):
                path[frame][axis] -= smooth[frame] - smooth[0]

    roots = array("d", (c for p in path for c in p))
    draft = Motion(skeleton, local_rotations, roots, motion.fps)
    target_positions = global_rotations_and_positions(draft, target_floor_joints)[1]
    # Ground every frame: legs of other proportions bent by the same angles (a robot's long shins in a
    # landing crouch) would dip through the floor or float; the hips move so the target's lowest foot sits
    # as far from its bind height as the source's lowest foot sits from Kimodo's floor, in the target's
    # size (unscaled, a 0.5 m character's crouch jumped by Kimodo's centimetres and the feet pass eased
    # those jumps as if they were its own).
    source_floor_joints = floor_parts(smap)
    floor_shift = 0.0
    for frame in range(frames):
        source_low = min(source_positions[frame][j][1] for j in source_floor_joints)
        target_low = min(target_positions[frame][j][1] for j in target_floor_joints)
        shift = (bind_floor + source_low * ratio) - target_low
        roots[frame * 3 + 1] += shift
        floor_shift = max(floor_shift, abs(shift))
    result = Motion(skeleton, local_rotations, roots, motion.fps, name=motion.name, prompt=motion.prompt)

    root_bone: Optional[str] = None
    root_is_new = False
    root_track = None
    if root_motion == "root":
        root_joint = find_root_bone(target, tmap_full.bones["hips"])
        target_rest_rotations, target_full_world = rest_pose(target)
        if root_joint is None:
            root_bone, root_is_new = NEW_ROOT_NAME, True
            root_rest: Tuple[Vec3, Quat] = ((hips_bind[0], 0.0, hips_bind[2]), IDENTITY)
        else:
            root_bone = target.joint_names[root_joint]
            root_rest = (target_full_world[root_joint], target_rest_rotations[root_joint])
        track = []
        for frame in range(frames):
            # Facing yaw: how far the hips have turned about +Y from their rest heading.
            hips_rotation = quat_multiply(source_globals[frame][source_hips], inverse_source_rest[source_hips])
            turn = quat_from_axis_angle((0.0, 1.0, 0.0), yaw_angle(quat_multiply(quat_multiply(facing, hips_rotation), inverse_facing)))
            position = (root_rest[0][0] + roots[frame * 3] - hips_bind[0], root_rest[0][1],
                        root_rest[0][2] + roots[frame * 3 + 2] - hips_bind[2])
            track.append((position, quat_normalize(quat_multiply(turn, root_rest[1]))))
        root_track = tuple(track)

    chains, _ = retarget_chains(tmap_full)
    linked_names = {skeleton.joint_names[j] for j in links}
    if root_bone is not None:
        linked_names.add(root_bone)
    # Counted by IK chains, as the Unreal step's IK Retargeter counts them: a chain follows the clip when
    # its first bone does. Body chains the source lacks first (G1: clavicles, neck, head), then fingers.
    finger_chains = {side + finger.capitalize() for side in ("Left", "Right") for finger in FINGERS}
    chains_mapped = sum(1 for chain in chains if chain.start in linked_names)
    left = [chain.name for chain in chains if chain.start not in linked_names]
    left.sort(key=lambda chain_name: chain_name in finger_chains)
    info = RetargetInfo(
        target=target, source_map=smap, target_map=tmap, corrections=corrections,
        reach_source=reach_source, reach_target=reach_target, floor_shift=floor_shift,
        chains_mapped=chains_mapped, left_at_rest=tuple(left),
        root_bone=root_bone, root_is_new=root_is_new, root_track=root_track,
        forward=tmap.forward, facing=facing_label(tmap.forward), warnings=tmap.warnings,
    )
    return result, info
