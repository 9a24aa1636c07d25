"""Forward kinematics on the model (see model.py for the formula)."""
from __future__ import annotations

import math

TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    from typing import Iterator, List, Optional, Sequence, Set, Tuple

from ..model import Motion, Skeleton
from ..rotations import IDENTITY, Quat, Vec3, quat_conjugate, quat_multiply, quat_normalize, quat_rotate, subtract


def pose_globals(
    skeleton: Skeleton, local_rotations: Sequence[Sequence[float]], root_position: Sequence[float]
) -> Tuple[List[Quat], List[Vec3]]:
    """Global rotations and world positions of every joint for one frame."""
    parents = skeleton.parents
    offsets = skeleton.rest_offsets
    rotations: List[Quat] = []
    positions: List[Vec3] = []
    for joint, parent in enumerate(parents):
        if parent < 0:
            rotations.append(tuple(local_rotations[joint]))  # type: ignore[arg-type]
            positions.append((root_position[0], root_position[1], root_position[2]))
            continue
        parent_rotation = rotations[parent]
        offset = quat_rotate(parent_rotation, offsets[joint])
        p = positions[parent]
        positions.append((p[0] + offset[0], p[1] + offset[1], p[2] + offset[2]))
        rotations.append(quat_multiply(parent_rotation, local_rotations[joint]))
    return rotations, positions


def global_rotations_and_positions(motion: Motion, joints: Optional[Sequence[int]] = None
                                   ) -> Tuple[List[List[Quat]], List[List[Vec3]]]:
    """Per frame: global rotations and world positions of every joint (with `joints`, of those and the
    joints above them only, the others None). pose_globals of each frame, with quat_multiply and
    quat_rotate written out in place (the same arithmetic, in the same order): it runs per joint per
    frame, several times a retarget."""
    skeleton = motion.skeleton
    count = skeleton.joint_count
    parents = skeleton.parents
    needed = range(count) if joints is None else sorted(_with_ancestors(parents, joints))
    # The offset's 2 v worked out once, as position_columns_by_frame has it (2 (a x v) = a x 2v to the bit).
    plan = [(joint, parents[joint]) + tuple(skeleton.rest_offsets[joint]) + tuple(2.0 * c for c in skeleton.rest_offsets[joint])
            for joint in needed]
    rotations, roots = motion.local_rotations, motion.root_positions
    width = 4 * count
    all_rotations = []
    all_positions = []
    for frame in range(motion.frame_count):
        q = rotations[frame * width:(frame + 1) * width].tolist()  # one frame, as floats, in one call
        frame_rotations = list(zip(q[0::4], q[1::4], q[2::4], q[3::4]))
        root = (roots[3 * frame], roots[3 * frame + 1], roots[3 * frame + 2])
        globals_: List[Optional[Quat]] = [None] * count
        positions: List[Optional[Vec3]] = [None] * count
        for joint, parent, vx, vy, vz, wx, wy, wz in plan:
            if parent < 0:
                globals_[joint] = frame_rotations[joint]
                positions[joint] = root
                continue
            ax, ay, az, aw = globals_[parent]  # type: ignore[misc]
            tx = ay * wz - az * wy
            ty = az * wx - ax * wz
            tz = ax * wy - ay * wx
            px, py, pz = positions[parent]  # type: ignore[misc]
            positions[joint] = (px + (vx + aw * tx + (ay * tz - az * ty)), py + (vy + aw * ty + (az * tx - ax * tz)),
                                pz + (vz + aw * tz + (ax * ty - ay * tx)))
            bx, by, bz, bw = frame_rotations[joint]
            globals_[joint] = (aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                               aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz)
        all_rotations.append(globals_)
        all_positions.append(positions)
    return all_rotations, all_positions  # type: ignore[return-value]


def shared_poses(motion: Motion) -> Tuple[List[List[Quat]], List[List[Vec3]]]:
    """global_rotations_and_positions(motion), worked out once per motion and shared (read it, never change
    it): the clip a retarget reads is posed by the solve, the feet pass and the report alike."""
    return motion.derived("global_rotations_and_positions", global_rotations_and_positions)


def turn_joints(joints: Sequence[int], rotations: List[Quat], positions: List[Vec3], pivot: Vec3, turn: Quat,
                fixed: int = -1) -> None:
    """Turn `joints` as one piece by the world rotation `turn` about the point `pivot`, in place: each
    rotation quat_normalize(quat_multiply(turn, r)), each position (but `fixed`'s, the pivot joint's own)
    add(pivot, quat_rotate(turn, subtract(p, pivot))), the same arithmetic written out (the feet and
    hands passes turn whole limbs so, several times a frame)."""
    ax, ay, az, aw = turn
    cx, cy, cz = pivot
    sqrt = math.sqrt
    for j in joints:
        bx, by, bz, bw = rotations[j]
        x = aw * bx + ax * bw + ay * bz - az * by
        y = aw * by - ax * bz + ay * bw + az * bx
        z = aw * bz + ax * by - ay * bx + az * bw
        w = aw * bw - ax * bx - ay * by - az * bz
        n = sqrt(x * x + y * y + z * z + w * w)
        rotations[j] = IDENTITY if n == 0.0 else (x / n, y / n, z / n, w / n)
        if j == fixed:
            continue
        px, py, pz = positions[j]
        vx, vy, vz = px - cx, py - cy, pz - cz
        tx = 2.0 * (ay * vz - az * vy)
        ty = 2.0 * (az * vx - ax * vz)
        tz = 2.0 * (ax * vy - ay * vx)
        positions[j] = (cx + (vx + aw * tx + (ay * tz - az * ty)), cy + (vy + aw * ty + (az * tx - ax * tz)),
                        cz + (vz + aw * tz + (ax * ty - ay * tx)))


def _with_ancestors(parents: Sequence[int], joints: Sequence[int]) -> Set[int]:
    found: Set[int] = set()
    for joint in joints:
        while joint >= 0 and joint not in found:
            found.add(joint)
            joint = parents[joint]
    return found


def world_positions(motion: Motion) -> List[List[Vec3]]:
    """Per frame, the world position of every joint, metres."""
    return list(positions_by_frame(motion))


def positions_by_frame(motion: Motion) -> Iterator[List[Vec3]]:
    """The world position of every joint, one frame at a time (a long clip is never held whole), read
    straight from the motion's flat buffers (`position_columns_by_frame`)."""
    for xs, ys, zs in position_columns_by_frame(motion):
        yield list(zip(xs, ys, zs))


def position_columns_by_frame(motion: Motion) -> Iterator[Tuple[List[float], List[float], List[float]]]:
    """`positions_by_frame` as three lists a frame: x, y and z of every joint. The same lists come back
    every frame, refilled: read them before asking for the next. The same FK as pose_globals, with
    quat_multiply and quat_rotate written out in place, and no world rotation kept for joints without
    children; the offset's 2 v is worked out once (2 (a x v) = a x 2v: doubling is exact short of
    overflow and subnormals), and each frame's x, y, z and w come as four lists."""
    skeleton = motion.skeleton
    count = skeleton.joint_count
    has_children = [False] * count
    for parent in skeleton.parents:
        if parent >= 0:
            has_children[parent] = True
    plan = []
    for joint, parent in enumerate(skeleton.parents):
        if parent >= 0:
            vx, vy, vz = skeleton.rest_offsets[joint]
            plan.append((joint, parent, has_children[joint], vx, vy, vz, 2.0 * vx, 2.0 * vy, 2.0 * vz))
    rotations, roots = motion.local_rotations, motion.root_positions
    width = 4 * count
    gx, gy, gz, gw = [0.0] * count, [0.0] * count, [0.0] * count, [1.0] * count
    px, py, pz = [0.0] * count, [0.0] * count, [0.0] * count
    for frame in range(motion.frame_count):
        q = rotations[frame * width:(frame + 1) * width].tolist()  # one frame, as floats, in one call
        qx, qy, qz, qw = q[0::4], q[1::4], q[2::4], q[3::4]
        gx[0], gy[0], gz[0], gw[0] = qx[0], qy[0], qz[0], qw[0]
        px[0], py[0], pz[0] = roots[3 * frame], roots[3 * frame + 1], roots[3 * frame + 2]
        for joint, parent, has_child, vx, vy, vz, wx, wy, wz in plan:
            ax, ay, az, aw = gx[parent], gy[parent], gz[parent], gw[parent]
            tx = ay * wz - az * wy
            ty = az * wx - ax * wz
            tz = ax * wy - ay * wx
            px[joint] = px[parent] + vx + aw * tx + (ay * tz - az * ty)
            py[joint] = py[parent] + vy + aw * ty + (az * tx - ax * tz)
            pz[joint] = pz[parent] + vz + aw * tz + (ax * ty - ay * tx)
            if has_child:
                bx, by, bz, bw = qx[joint], qy[joint], qz[joint], qw[joint]
                gx[joint] = aw * bx + ax * bw + ay * bz - az * by
                gy[joint] = aw * by - ax * bz + ay * bw + az * bx
                gz[joint] = aw * bz + ax * by - ay * bx + az * bw
                gw[joint] = aw * bw - ax * bx - ay * by - az * bz
        yield px, py, pz


def rest_pose(skeleton: Skeleton) -> Tuple[List[Quat], List[Vec3]]:
    """Global rotations and world positions of the rest pose with the root at its rest offset (worked out
    once per skeleton: a retarget asks it of the same rigs some thirty times; new lists each call)."""
    rotations, positions = skeleton.derived("rest_pose", _rest_pose)
    return list(rotations), list(positions)


def _rest_pose(skeleton: Skeleton) -> Tuple[Tuple[Quat, ...], Tuple[Vec3, ...]]:
    rotations, positions = pose_globals(skeleton, skeleton.rest_rotations, skeleton.rest_offsets[0])
    return tuple(rotations), tuple(positions)


def rest_positions(skeleton: Skeleton) -> List[Vec3]:
    """World positions of the rest pose with the root at its rest offset."""
    return rest_pose(skeleton)[1]


def rest_global_rotations(skeleton: Skeleton) -> List[Quat]:
    return rest_pose(skeleton)[0]


def locals_from_globals(parents: Sequence[int], rotations: Sequence[Quat], positions: Sequence[Vec3]
                        ) -> Tuple[List[Vec3], List[Quat]]:
    """The inverse of pose_globals: each joint's offset and rotation in its parent's frame (a root keeps
    its world placement), for skeletons read as world-space bind poses."""
    offsets: List[Vec3] = []
    local_rotations: List[Quat] = []
    for joint, parent in enumerate(parents):
        if parent < 0:
            offsets.append(tuple(positions[joint]))
            local_rotations.append(tuple(rotations[joint]))
            continue
        inverse = quat_conjugate(rotations[parent])
        offsets.append(quat_rotate(inverse, subtract(positions[joint], positions[parent])))
        local_rotations.append(quat_normalize(quat_multiply(inverse, rotations[joint])))
    return offsets, local_rotations
