"""kimodo_rig.retarget.hands on its own: a hand posed under the floor ends on it, the lift eased over the
same seconds at any frame rate, the back turned before the arm, an arm above the floor left alone. The
character is a small stick figure built here; heights are checked by posing the hand points with numpy,
not with the module's own helpers."""
from __future__ import annotations

import math

import numpy as np
import pytest

from kimodo_rig.model import Skeleton
from kimodo_rig.ops.fk import pose_globals
from kimodo_rig.retarget.hands import keep_hands_above
from kimodo_rig.retarget.mapping import HumanoidMap

IDENTITY = (0.0, 0.0, 0.0, 1.0)
PELVIS_HEIGHT = 0.95  # the feet's soles at 0: the rest floor
FLOOR = 0.0
# (name, parent, offset in the parent's frame, metres; +Y up, +Z forward, +X the character's left)
JOINTS = (
    ("pelvis", None, (0.0, PELVIS_HEIGHT, 0.0)),
    ("spine_0", "pelvis", (0.0, 0.1, 0.0)),
    ("chest", "spine_0", (0.0, 0.3, 0.0)),
    ("upperarm_l", "chest", (0.2, 0.1, 0.0)),
    ("lowerarm_l", "upperarm_l", (0.0, -0.3, 0.0)),
    ("hand_l", "lowerarm_l", (0.0, -0.25, 0.0)),
    ("upperarm_r", "chest", (-0.2, 0.1, 0.0)),
    ("lowerarm_r", "upperarm_r", (0.0, -0.3, 0.0)),
    ("hand_r", "lowerarm_r", (0.0, -0.25, 0.0)),
    ("thigh_l", "pelvis", (0.1, -0.05, 0.0)),
    ("calf_l", "thigh_l", (0.0, -0.45, 0.0)),
    ("foot_l", "calf_l", (0.0, -0.45, 0.0)),
    ("thigh_r", "pelvis", (-0.1, -0.05, 0.0)),
    ("calf_r", "thigh_r", (0.0, -0.45, 0.0)),
    ("foot_r", "calf_r", (0.0, -0.45, 0.0)),
)
NAMES = tuple(name for name, _, _ in JOINTS)
SKELETON = Skeleton("stick", NAMES, tuple(-1 if parent is None else NAMES.index(parent) for _, parent, _ in JOINTS),
                    tuple(offset for _, _, offset in JOINTS))
MAP = HumanoidMap(SKELETON, {name: i for i, name in enumerate(NAMES) if name != "chest"})
# Per side: a fingertip and a knuckle on the hand, a point on the forearm ((joint, weight, offset) terms).
HANDS = {s: (((NAMES.index("hand_" + s), 1.0, (0.0, -0.08, 0.0)),),
             ((NAMES.index("hand_" + s), 1.0, (0.03, -0.05, 0.02)),),
             ((NAMES.index("lowerarm_" + s), 0.5, (0.0, -0.1, 0.0)), (NAMES.index("hand_" + s), 0.5, (0.0, 0.15, 0.0))))
         for s in "lr"}


def _rotate(q, v):
    q, v = np.asarray(q, float), np.asarray(v, float)
    t = 2.0 * np.cross(q[:3], v)
    return v + q[3] * t + np.cross(q[:3], t)


def _lowest(pose, side: str) -> float:
    """The side's lowest hand point in `pose` (world rotations and positions), by numpy."""
    rotations, positions = pose
    return min(sum(w * (np.asarray(positions[j]) + _rotate(rotations[j], o)) for j, w, o in point)[1]
               for point in HANDS[side])


def _axis_angle(axis, degrees):
    half = math.radians(degrees) / 2.0
    n = np.asarray(axis, float) / np.linalg.norm(axis)
    return (*(n * math.sin(half)), math.cos(half))


def _poses(drops, bend_deg: float = 0.0, raise_right_deg: float = 0.0):
    """One pose per frame: the body lowered by `drops` (metres, per frame), the back bent forward at the
    spine's base by `bend_deg` with the arms kept hanging straight down, the right arm raised sideways."""
    poses = []
    for drop in drops:
        local = [IDENTITY] * len(NAMES)
        bend = _axis_angle((1.0, 0.0, 0.0), bend_deg)
        local[NAMES.index("spine_0")] = bend
        back = (-bend[0], -bend[1], -bend[2], bend[3])
        local[NAMES.index("upperarm_l")] = back
        local[NAMES.index("upperarm_r")] = _mul(back, _axis_angle((0.0, 0.0, 1.0), -raise_right_deg))
        rotations, positions = pose_globals(SKELETON, local, (0.0, PELVIS_HEIGHT - drop, 0.0))
        poses.append((list(rotations), list(positions)))
    return poses


def _mul(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz)


def _copy(poses):
    return [(list(r), list(p)) for r, p in poses]


def _direction(pose, top: str, end: str):
    positions = pose[1]
    d = np.subtract(positions[NAMES.index(end)], positions[NAMES.index(top)])
    return d / np.linalg.norm(d)


def _angle_deg(a, b) -> float:
    return math.degrees(math.acos(min(1.0, float(np.dot(a, b)))))


def test_a_hand_posed_under_the_floor_ends_on_it():
    """A crouch that takes both fingertips 8 cm under the floor, the back upright: each arm swings up by
    the least turn, so the lowest hand point ends on the floor (not under it, and not above it where it
    was under); the frames around the crouch are lifted no lower than the floor either."""
    drops = [0.0, 0.3, 0.6, 0.82, 0.9, 0.82, 0.6, 0.3, 0.0]
    poses = _poses(drops)
    assert min(_lowest(poses[4], s) for s in "lr") < FLOOR - 0.07  # the pose does go under
    keep_hands_above(SKELETON, MAP, HANDS, poses, FLOOR, 30.0)
    for s in "lr":
        assert _lowest(poses[4], s) == pytest.approx(FLOOR, abs=1e-6)
        assert all(_lowest(pose, s) >= FLOOR - 1e-6 for pose in poses)


def _dip(fps: float):
    """The body lowered 0.9 m (the fingertips 8 cm under) from 0.4 s to 0.6 s, standing before and after."""
    frames = int(round(fps)) + 1
    return [0.9 if 0.4 - 1e-9 <= f / fps <= 0.6 + 1e-9 else 0.0 for f in range(frames)]


def test_the_lift_is_eased_over_the_same_seconds_at_30_and_120_fps():
    """The same dip sampled at 30 and 120 fps: at every instant the two share, the forearm points the
    same way (within 0.01 deg), and the arm starts turning before the dip (eased in) but not earlier than
    the ease's seconds allow."""
    results = {}
    for fps in (30.0, 120.0):
        poses = _poses(_dip(fps))
        keep_hands_above(SKELETON, MAP, HANDS, poses, FLOOR, fps)
        results[fps] = poses
    rest = _direction(_poses([0.0])[0], "lowerarm_l", "hand_l")
    for frame in range(31):
        at_30, at_120 = results[30.0][frame], results[120.0][frame * 4]
        for s in "lr":
            a, b = _direction(at_30, "lowerarm_" + s, "hand_" + s), _direction(at_120, "lowerarm_" + s, "hand_" + s)
            assert _angle_deg(a, b) <= 0.01, (frame, s)
    turned = [_angle_deg(_direction(pose, "lowerarm_l", "hand_l"), rest) for pose in results[120.0]]
    assert turned[47] > 1.0  # eased in: 1/120 s before the dip
    assert turned[48 - 12] == 0.0 and turned[72 + 12] == 0.0  # 0.1 s from the dip, nothing yet (or any longer)


def test_an_arm_above_the_floor_is_untouched():
    """The left hand 8 cm under the floor, the right arm raised 60 deg out to the side, well above it: the
    right arm (every joint's world rotation and place) is exactly as it was; a clip whose hands never go
    under is returned as it came."""
    poses = _poses([0.9], raise_right_deg=60.0)
    before = _copy(poses)
    assert _lowest(poses[0], "l") < FLOOR - 0.05 and _lowest(poses[0], "r") > FLOOR + 0.2
    keep_hands_above(SKELETON, MAP, HANDS, poses, FLOOR, 30.0)
    assert _lowest(poses[0], "l") == pytest.approx(FLOOR, abs=1e-6)
    for name in ("upperarm_r", "lowerarm_r", "hand_r"):
        j = NAMES.index(name)
        assert poses[0][0][j] == before[0][0][j] and poses[0][1][j] == before[0][1][j], name
    standing = _poses([0.0, 0.2, 0.4])
    kept = _copy(standing)
    keep_hands_above(SKELETON, MAP, HANDS, standing, FLOOR, 30.0)
    assert standing == kept


def test_a_bent_back_lifts_the_hand_before_the_arm_turns():
    """The back bent 40 deg forward, the arms hanging straight down, the fingertips a few cm under the
    floor: the back turns up (less bent, never past upright) and lifts the hands onto the floor, the arms
    keeping the directions the clip gives them (the limb measure's), where swinging the arm would turn them."""
    poses = _poses([0.78], bend_deg=40.0)
    before = _copy(poses)
    depth = FLOOR - min(_lowest(poses[0], s) for s in "lr")
    assert 0.01 < depth < 0.2
    keep_hands_above(SKELETON, MAP, HANDS, poses, FLOOR, 30.0)
    assert min(_lowest(poses[0], s) for s in "lr") == pytest.approx(FLOOR, abs=1e-6)
    for s in "lr":
        for top, end in (("upperarm_", "lowerarm_"), ("lowerarm_", "hand_")):
            assert _angle_deg(_direction(poses[0], top + s, end + s), _direction(before[0], top + s, end + s)) < 1e-6
    spine = _direction(poses[0], "spine_0", "chest")
    bent = math.degrees(math.acos(spine[1]))
    assert 0.0 < bent < 40.0 - 1.0


def _rolling(fps: float):
    """The back bent 40 deg forward, the arms hanging, the body lowered 0.8 m and rolled from 20 deg to
    one side to 20 deg to the other over a second: both hands under the floor, their depths crossing at
    0.5 s (sampled at `fps`; a slerp between 30 fps frames is the same roll, so 120 fps is that clip
    resampled)."""
    poses = []
    for frame in range(int(round(fps)) + 1):
        local = [IDENTITY] * len(NAMES)
        roll = _axis_angle((0.0, 0.0, 1.0), 20.0 * (frame / fps - 0.5) / 0.5)
        bend = _axis_angle((1.0, 0.0, 0.0), 40.0)
        local[NAMES.index("pelvis")] = roll
        local[NAMES.index("spine_0")] = bend
        hanging = _mul((-bend[0], -bend[1], -bend[2], bend[3]), (-roll[0], -roll[1], -roll[2], roll[3]))
        local[NAMES.index("upperarm_l")] = local[NAMES.index("upperarm_r")] = hanging
        rotations, positions = pose_globals(SKELETON, local, (0.0, PELVIS_HEIGHT - 0.8, 0.0))
        poses.append((list(rotations), list(positions)))
    return poses


def test_the_backs_lift_where_two_hands_depths_cross_is_the_same_at_30_and_120_fps():
    """Where both hands are under and their depths cross, the back's axis swings within a frame and its
    least turn peaks between 30 fps frames: read every HAND_SAMPLE_S (`between`, the plan's), the back at
    30 fps turns as at 120 fps at every shared instant (read on frames alone: 1.1 deg apart)."""
    results = {}
    for fps in (30.0, 120.0):
        poses = _rolling(fps)
        assert min(_lowest(poses[15 * int(fps) // 30], s) for s in "lr") < FLOOR - 0.05
        keep_hands_above(SKELETON, MAP, HANDS, poses, FLOOR, fps, between=True)
        results[fps] = poses
    for frame in range(31):
        a = _direction(results[30.0][frame], "spine_0", "chest")
        b = _direction(results[120.0][4 * frame], "spine_0", "chest")
        assert _angle_deg(a, b) <= 0.05, frame
