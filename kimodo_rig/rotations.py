"""Quaternion, matrix and Euler helpers.

Conventions (the same as Kimodo's): quaternions are (x, y, z, w), Hamilton product, active rotations of
column vectors; angles in radians unless a name says degrees; matrices are row-major tuples of rows.
Frame: +Y up, +Z forward, +X the character's left, metres.
"""
from __future__ import annotations

import math
TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    from typing import Iterable, List, Sequence, Tuple

    Quat = Tuple[float, float, float, float]
    Vec3 = Tuple[float, float, float]
    Mat3 = Tuple[Tuple[float, float, float], Tuple[float, float, float], Tuple[float, float, float]]
else:  # at run time the names need only exist: annotations are never evaluated
    Quat = Vec3 = Mat3 = tuple

IDENTITY: Quat = (0.0, 0.0, 0.0, 1.0)


def quat_multiply(a: Sequence[float], b: Sequence[float]) -> Quat:
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    )


def quat_conjugate(q: Sequence[float]) -> Quat:
    return (-q[0], -q[1], -q[2], q[3])


def quat_norm(q: Sequence[float]) -> float:
    return math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])


def quat_normalize(q: Sequence[float]) -> Quat:
    n = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])  # quat_norm, in place (hot)
    if n == 0.0:
        return IDENTITY
    return (q[0] / n, q[1] / n, q[2] / n, q[3] / n)


def quat_canonical(q: Sequence[float]) -> Quat:
    """The same rotation with w >= 0, as Kimodo stores it."""
    if q[3] < 0.0:
        return (-q[0], -q[1], -q[2], -q[3])
    return (q[0], q[1], q[2], q[3])


def quat_rotate(q: Sequence[float], v: Sequence[float]) -> Vec3:
    """Rotate vector v by unit quaternion q."""
    qx, qy, qz, qw = q
    vx, vy, vz = v
    # t = 2 * cross(q.xyz, v); v' = v + w t + cross(q.xyz, t)
    tx = 2.0 * (qy * vz - qz * vy)
    ty = 2.0 * (qz * vx - qx * vz)
    tz = 2.0 * (qx * vy - qy * vx)
    return (
        vx + qw * tx + (qy * tz - qz * ty),
        vy + qw * ty + (qz * tx - qx * tz),
        vz + qw * tz + (qx * ty - qy * tx),
    )


def quat_to_matrix(q: Sequence[float]) -> Mat3:
    x, y, z, w = q
    return (
        (1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)),
        (2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)),
        (2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)),
    )


def matrix_to_quat(m: Sequence[Sequence[float]]) -> Quat:
    """Unit quaternion (w >= 0) of a rotation matrix (Shepperd's method, stable for every angle)."""
    (m00, m01, m02), (m10, m11, m12), (m20, m21, m22) = m[0][:3], m[1][:3], m[2][:3]
    return rotation_quat(m00, m01, m02, m10, m11, m12, m20, m21, m22)


def rotation_quat(m00: float, m01: float, m02: float, m10: float, m11: float, m12: float,
                  m20: float, m21: float, m22: float) -> Quat:
    """matrix_to_quat of the matrix given by its entries, row by row (no rows to build: it runs per
    joint per frame where a clip is read or a .glb written)."""
    trace = m00 + m11 + m22
    if trace > 0.0:
        s = math.sqrt(trace + 1.0) * 2.0
        x, y, z, w = (m21 - m12) / s, (m02 - m20) / s, (m10 - m01) / s, 0.25 * s
    elif m00 > m11 and m00 > m22:
        s = math.sqrt(1.0 + m00 - m11 - m22) * 2.0
        x, y, z, w = 0.25 * s, (m01 + m10) / s, (m02 + m20) / s, (m21 - m12) / s
    elif m11 > m22:
        s = math.sqrt(1.0 + m11 - m00 - m22) * 2.0
        x, y, z, w = (m01 + m10) / s, 0.25 * s, (m12 + m21) / s, (m02 - m20) / s
    else:
        s = math.sqrt(1.0 + m22 - m00 - m11) * 2.0
        x, y, z, w = (m02 + m20) / s, (m12 + m21) / s, 0.25 * s, (m10 - m01) / s
    # quat_canonical(quat_normalize(...)), written out
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if n == 0.0:
        return IDENTITY
    if w / n < 0.0:
        return (-(x / n), -(y / n), -(z / n), -(w / n))
    return (x / n, y / n, z / n, w / n)


def matrices_to_quats(matrices: Iterable[Sequence[float]]) -> List[float]:
    """matrix_to_quat of each flat row-major 3x3 (m00, m01, m02, m10, ... m22), x, y, z, w of each end to end."""
    out: List[float] = []
    for m in matrices:
        out.extend(rotation_quat(*m))
    return out


def quat_from_axis_angle(axis: Sequence[float], angle: float) -> Quat:
    n = math.sqrt(axis[0] ** 2 + axis[1] ** 2 + axis[2] ** 2)
    if n == 0.0:
        return IDENTITY
    s = math.sin(angle / 2.0) / n
    return (axis[0] * s, axis[1] * s, axis[2] * s, math.cos(angle / 2.0))


def rotation_vector_to_quat(v: Sequence[float]) -> Quat:
    angle = length(v)
    return quat_from_axis_angle(v, angle) if angle > 0.0 else (0.0, 0.0, 0.0, 1.0)


def quat_to_rotation_vector(q: Sequence[float]) -> Sequence[float]:
    x, y, z, w = q if q[3] >= 0.0 else (-q[0], -q[1], -q[2], -q[3])
    s = math.sqrt(x * x + y * y + z * z)
    if s < 1e-12:
        return (2.0 * x, 2.0 * y, 2.0 * z)
    angle = 2.0 * math.atan2(s, w)
    return (x / s * angle, y / s * angle, z / s * angle)


def quat_angle(q: Sequence[float]) -> float:
    """Rotation angle of unit quaternion q, radians in [0, pi]."""
    w = min(1.0, abs(q[3]) / max(quat_norm(q), 1e-300))
    return 2.0 * math.acos(w)


def quat_between(a: Sequence[float], b: Sequence[float]) -> Quat:
    """Shortest rotation taking direction a onto direction b (neither needs unit length)."""
    ax, ay, az = normalize(a)
    bx, by, bz = normalize(b)
    dot = ax * bx + ay * by + az * bz
    if dot < -0.999999:
        # Opposite: any perpendicular axis will do; pick the one least aligned with a.
        axis = cross((1.0, 0.0, 0.0) if abs(ax) < 0.9 else (0.0, 1.0, 0.0), (ax, ay, az))
        return quat_from_axis_angle(axis, math.pi)
    c = cross((ax, ay, az), (bx, by, bz))
    return quat_normalize((c[0], c[1], c[2], 1.0 + dot))


def quat_slerp(a: Sequence[float], b: Sequence[float], t: float) -> Quat:
    dot = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]
    if dot < 0.0:
        b = (-b[0], -b[1], -b[2], -b[3])
        dot = -dot
    if dot > 0.9995:
        return quat_normalize(tuple(a[i] + (b[i] - a[i]) * t for i in range(4)))
    theta = math.acos(dot)
    s = math.sin(theta)
    wa = math.sin((1.0 - t) * theta) / s
    wb = math.sin(t * theta) / s
    return (a[0] * wa + b[0] * wb, a[1] * wa + b[1] * wb, a[2] * wa + b[2] * wb, a[3] * wa + b[3] * wb)


def yaw_rotation(angle: float) -> Quat:
    """A turn of `angle` radians about +Y (positive turns +Z towards +X)."""
    return (0.0, math.sin(angle / 2.0), 0.0, math.cos(angle / 2.0))


def yaw_angle(q: Sequence[float]) -> float:
    """The heading of rotation q: the angle about +Y of where it sends +Z, seen from above."""
    forward = quat_rotate(q, (0.0, 0.0, 1.0))
    return math.atan2(forward[0], forward[2])


def wrap_angle(angle: float) -> float:
    """The same angle in (-pi, pi]."""
    return math.atan2(math.sin(angle), math.cos(angle))


_AXES = {"X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}


def euler_to_quat(order: str, angles_deg: Sequence[float]) -> Quat:
    """Rotation of BVH-style Euler channels: `order` lists axes as declared (e.g. "ZYX"), angles in degrees,
    applied as R = R(order[0]) @ R(order[1]) @ R(order[2]) (intrinsic, the BVH convention)."""
    q = IDENTITY
    for axis, angle in zip(order.upper(), angles_deg):
        q = quat_multiply(q, quat_from_axis_angle(_AXES[axis], math.radians(angle)))
    return q


def quat_to_euler(order: str, q: Sequence[float]) -> Vec3:
    """Inverse of euler_to_quat: degrees for the axes in `order` (any of the six Tait-Bryan orders)."""
    order = order.upper()
    m = quat_to_matrix(q)
    i, j, k = ("XYZ".index(order[0]), "XYZ".index(order[1]), "XYZ".index(order[2]))
    # R = Ri(a) Rj(b) Rk(c). Parity sign: +1 for cyclic (XYZ, YZX, ZXY).
    sign = 1.0 if (j - i) % 3 == 1 else -1.0
    sb = sign * m[i][k]
    sb = max(-1.0, min(1.0, sb))
    b = math.asin(sb)
    if abs(sb) < 0.9999999:
        a = math.atan2(-sign * m[j][k], m[k][k])
        c = math.atan2(-sign * m[i][j], m[i][i])
    else:
        # Gimbal lock: fold the first angle into the last.
        a = math.atan2(sign * m[k][j], m[j][j])
        c = 0.0
    return (math.degrees(a), math.degrees(b), math.degrees(c))


def cross(a: Sequence[float], b: Sequence[float]) -> Vec3:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def length(v: Sequence[float]) -> float:
    return math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])


def normalize(v: Sequence[float]) -> Vec3:
    n = length(v)
    if n == 0.0:
        return (0.0, 0.0, 0.0)
    return (v[0] / n, v[1] / n, v[2] / n)


def add(a: Sequence[float], b: Sequence[float]) -> Vec3:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def subtract(a: Sequence[float], b: Sequence[float]) -> Vec3:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def scale(v: Sequence[float], s: float) -> Vec3:
    return (v[0] * s, v[1] * s, v[2] * s)


def matrix_multiply(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> Mat3:
    return tuple(
        tuple(sum(a[r][k] * b[k][c] for k in range(3)) for c in range(3)) for r in range(3)
    )  # type: ignore[return-value]


def matrix_apply(m: Sequence[Sequence[float]], v: Sequence[float]) -> Vec3:
    """The 3x3 matrix m (rows) times the column vector v."""
    return (m[0][0] * v[0] + m[0][1] * v[1] + m[0][2] * v[2],
            m[1][0] * v[0] + m[1][1] * v[1] + m[1][2] * v[2],
            m[2][0] * v[0] + m[2][1] * v[1] + m[2][2] * v[2])


def matrix_transpose(m: Sequence[Sequence[float]]) -> Mat3:
    return tuple(tuple(m[c][r] for c in range(3)) for r in range(3))  # type: ignore[return-value]


def sphere_directions(count: int) -> List[Vec3]:
    """`count` unit vectors spread evenly over the sphere (a Fibonacci lattice)."""
    golden = math.pi * (3.0 - math.sqrt(5.0))
    out = []
    for i in range(count):
        y = 1.0 - 2.0 * (i + 0.5) / count
        r = math.sqrt(max(0.0, 1.0 - y * y))
        out.append((math.cos(golden * i) * r, y, math.sin(golden * i) * r))
    return out


STRAIGHT_SINE = 0.02  # sine of the elbow/knee angle (about 1.1 deg) below which a limb counts as straight
# In lean reaches (`bend_direction`): a knee behind the line counts as straight within one reach and not at
# all from this many, fading between so the plane never switches; a knee bent further back (a kneel's)
# keeps its own plane.
BEHIND_FADE_REACHES = 2.0


def bend_direction(top: Vec3, middle: Vec3, end: Vec3, towards: Vec3, lean: float = 0.0) -> Vec3:
    """Where the elbow or knee sits off the line from the chain's top to its end (its bending plane), or
    `towards` where the limb is straight; with `lean` (a sine), that offset plus `towards` as long as the
    upper bone's offset is when bent that much, fading to nothing as the offset grows to it: the plane
    turns smoothly, never switches, as the limb straightens, and a limb bent further keeps its own plane
    (reached again to where it is, it does not move)."""
    upper, lower = subtract(middle, top), subtract(end, middle)
    if lean > 0.0:
        axis = normalize(subtract(end, top))
        offset = subtract(upper, scale(axis, dot(upper, axis)))
        reach = lean * length(upper)
        # A knee a hair behind the line (against `towards`, within `reach`; fading out by BEHIND_FADE_REACHES) is
        # straight: bent further by a nearer goal, the leg bends toward `towards` (a straight swinging leg
        # folded backwards, 55 deg in a frame); a knee bent further back keeps its plane (a kneel's).
        ahead = normalize(subtract(towards, scale(axis, dot(towards, axis))))
        behind = min(0.0, dot(offset, ahead)) * min(1.0, max(0.0, BEHIND_FADE_REACHES - length(offset) / reach)) if reach > 0.0 else 0.0
        offset = subtract(offset, scale(ahead, behind))
        fade = max(0.0, 1.0 - length(offset) / reach) if reach > 0.0 else 0.0
        return add(offset, scale(normalize(towards), reach * fade * fade))
    sine = length(cross(upper, lower)) / max(length(upper) * length(lower), 1e-300)
    if sine < STRAIGHT_SINE:
        return towards
    axis = normalize(subtract(end, top))
    return subtract(upper, scale(axis, dot(upper, axis)))


def two_bone_points(top: Vec3, middle: Vec3, end: Vec3, goal: Vec3, towards: Vec3, lean: float = 0.0) -> Tuple[Vec3, Vec3]:
    """The new elbow/knee and effector positions that put the effector on `goal` (or as near as the limb
    reaches), the elbow/knee in the limb's bending plane (`bend_direction`, `lean`)."""
    upper = length(subtract(middle, top))
    lower = length(subtract(end, middle))
    span = subtract(goal, top)
    distance = length(span)
    axis = normalize(span) if distance > 0.0 else normalize(subtract(end, top))
    distance = min(max(distance, abs(upper - lower)), upper + lower)
    bend = bend_direction(top, middle, end, towards, lean)
    side = subtract(bend, scale(axis, dot(bend, axis)))
    if length(side) < 1e-9 * max(length(bend), 1e-300):  # the bend lies along the goal: any perpendicular
        side = cross(axis, (1.0, 0.0, 0.0) if abs(axis[0]) < 0.9 else (0.0, 1.0, 0.0))
    side = normalize(side)
    cosine = (upper * upper + distance * distance - lower * lower) / max(2.0 * upper * distance, 1e-300)
    cosine = min(1.0, max(-1.0, cosine))
    sine = math.sqrt(1.0 - cosine * cosine)
    new_middle = add(top, add(scale(axis, upper * cosine), scale(side, upper * sine)))
    return new_middle, add(top, scale(axis, distance))
