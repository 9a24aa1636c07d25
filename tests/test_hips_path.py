"""retarget.hips_path: the hips' offsets chosen for the legs, on a leg whose bend is a known function of
the hips' height (a straight leg of two unit bones reaching a goal below the hip)."""
from __future__ import annotations

import math

from kimodo_rig.retarget import hips_path
from kimodo_rig.retarget.soles import _ease

LEG = 2.0  # two bones of 1


def leg_at(reach: float) -> list:
    """Thigh and shin directions of a leg of two unit bones whose hip is `reach` above its ankle (knee forward)."""
    half = math.acos(max(-1.0, min(1.0, reach / LEG)))
    return [(0.0, -math.cos(half), math.sin(half)), (0.0, -math.cos(half), -math.sin(half))]


def excess_turns(path, reaches, animation):
    """Per frame, the largest turn of a segment beyond the animation's since the frame before (radians)."""
    worst = []
    for frame in range(1, len(path)):
        before, now = leg_at(reaches[frame - 1] + path[frame - 1]), leg_at(reaches[frame] + path[frame])
        for u, v, a, b in zip(before, now, animation[frame - 1], animation[frame]):
            worst.append(math.acos(min(1.0, sum(x * y for x, y in zip(u, v))))
                         - math.acos(min(1.0, sum(x * y for x, y in zip(a, b)))))
    return max(worst)


def spike_case():
    """A leg standing at 99% of its length whose goal is out of reach by 3% in one frame (the hips must come
    down 6 cm there) and back in the next: the reach's need eased as `lock._reach_goals` eases it."""
    frames = 15
    reaches = [0.99 * LEG] * frames
    reaches[7] = 1.03 * LEG
    needs = [max(0.0, reach - 0.995 * LEG) for reach in reaches]
    eased = [-down for down in _ease(needs)]
    bounds = [(-math.inf, -need if need > 0.0 else math.inf) for need in needs]
    animation = [leg_at(min(reach, 0.995 * LEG)) for reach in reaches]
    return reaches, eased, bounds, animation


def test_the_path_bends_a_straight_leg_less_than_the_eased_need_and_meets_every_need():
    reaches, eased, bounds, animation = spike_case()
    path = hips_path.least_turning_offsets(eased, bounds, [True] * len(eased),
                                           lambda frame, offset: leg_at(reaches[frame] + offset), animation, LEG)
    for frame, (offset, (low, high)) in enumerate(zip(path, bounds)):
        assert low - 1e-12 <= offset <= high + 1e-12, (frame, offset, high)
    assert path[7] <= -(reaches[7] - 0.995 * LEG) + 1e-12  # the leg reaches where it must
    # Eased, the hips come down around the spike as deep as it needs and the leg straightens in the spike's
    # frame: its segments turn 8.4 deg beyond the animation's there. The path spreads the bend: 3.2.
    eased_worst = excess_turns(eased, reaches, animation)
    path_worst = excess_turns(path, reaches, animation)
    assert math.degrees(eased_worst) > 6.0, math.degrees(eased_worst)
    assert path_worst < 0.5 * eased_worst, (math.degrees(path_worst), math.degrees(eased_worst))


def test_frames_with_no_locked_leg_keep_the_eased_offset():
    reaches, eased, bounds, animation = spike_case()
    active = [frame not in (0, 1, 13, 14) for frame in range(len(eased))]
    path = hips_path.least_turning_offsets(eased, bounds, active,
                                           lambda frame, offset: leg_at(reaches[frame] + offset), animation, LEG)
    assert [path[f] for f in (0, 1, 13, 14)] == [eased[f] for f in (0, 1, 13, 14)]
