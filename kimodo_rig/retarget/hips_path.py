"""The hips' height through a locked clip, chosen for the legs: of the heights near the eased one that
let every locked leg reach its goal, the path that turns the legs least beyond the animation, from
frame to frame most of all. Used by kimodo_rig.retarget.lock."""
from __future__ import annotations

import math
from typing import Callable, List, Sequence, Tuple

from ..rotations import Vec3, dot

# Offsets tried per frame: the eased one (`lock._reach_goals`' own path) and HIPS_PATH_STATES either side
# of it, HIPS_PATH_STEP of the leg apart (so within 3% of the leg of it), with the bounds of the legs'
# reach and no change at all where those allow them.
HIPS_PATH_STATES = 12
HIPS_PATH_STEP = 0.0025
# What a path costs, added over its frames. Per frame: a leg segment's turn beyond the animation's since
# the frame before (radians, squared: the judges' pop), HIPS_PATH_AWAY times each segment's 1 - cosine
# to the animation's, HIPS_PATH_SPEED times the squared change of the offset (in legs) since the frame
# before, HIPS_PATH_HOME times the offset's square (in legs). Tuned on 36 clip and rig pairs: with the
# 1 - cosine weighed as much as a pop (HIPS_PATH_AWAY 1) the shin-carried soles still popped 16 deg;
# with none, legs drifted from the animation (the footless shins' worst segment 0.9818 on soma_05, bar 0.99).
HIPS_PATH_AWAY = 0.05
HIPS_PATH_SPEED = 30.0
HIPS_PATH_HOME = 0.3

Directions = Sequence[Vec3]  # per locked leg, its thigh's and its shin's unit directions


def least_turning_offsets(eased: Sequence[float], bounds: Sequence[Tuple[float, float]], active: Sequence[bool],
                          directions: Callable[[int, float], Directions], animation: Sequence[Directions],
                          leg: float) -> List[float]:
    """Per frame, the hips' offset (metres; negative: down) of the cheapest path (Viterbi) through the
    offsets tried near `eased` within `bounds` (lowest, highest: where every leg still folds and reaches;
    the eased offset itself is always tried). `directions(frame, offset)`: the legs' segments once solved
    with the hips so moved; `animation`: the same per frame as the animation has them. Frames not
    `active` (no leg locked) keep their eased offset."""
    frames = len(eased)
    states: List[List[float]] = []
    for frame in range(frames):
        low, high = bounds[frame]
        tried = {eased[frame]}
        if active[frame]:
            for k in range(-HIPS_PATH_STATES, HIPS_PATH_STATES + 1):
                offset = eased[frame] + k * HIPS_PATH_STEP * leg
                if low <= offset <= high:
                    tried.add(offset)
            tried.update(bound for bound in (low, high, 0.0) if low <= bound <= high and math.isfinite(bound))
        states.append(sorted(tried))
    solved = [[directions(frame, offset) for offset in states[frame]] for frame in range(frames)]

    def standing(frame: int, offset: float, legs: Directions) -> float:
        away = sum(1.0 - dot(u, v) for u, v in zip(legs, animation[frame]))
        return HIPS_PATH_AWAY * away + HIPS_PATH_HOME * (offset / leg) ** 2

    costs = [standing(0, offset, legs) for offset, legs in zip(states[0], solved[0])]
    came_from: List[List[int]] = [[0] * len(states[0])]
    for frame in range(1, frames):
        turned = [_angle(u, v) for u, v in zip(animation[frame - 1], animation[frame])]
        # A segment whose cosine to its place the frame before is at least its turn's turned no further:
        # no acos for it. A step whose cost without the turns already reaches the best has lost (the
        # turns add nothing negative): the same path, at a fraction of the work.
        within = [math.cos(turn) for turn in turned]
        here, back = [], []
        for offset, legs in zip(states[frame], solved[frame]):
            best, best_state = math.inf, 0
            for state, (before, legs_before) in enumerate(zip(states[frame - 1], solved[frame - 1])):
                cost = costs[state] + HIPS_PATH_SPEED * ((offset - before) / leg) ** 2
                if not cost < best:
                    continue
                for u, v, turn, least in zip(legs_before, legs, turned, within):
                    cosine = u[0] * v[0] + u[1] * v[1] + u[2] * v[2]
                    if cosine < least:
                        beyond = math.acos(max(-1.0, cosine)) - turn
                        if beyond > 0.0:
                            cost += beyond * beyond
                if cost < best:
                    best, best_state = cost, state
            here.append(best + standing(frame, offset, legs))
            back.append(best_state)
        costs = here
        came_from.append(back)
    state = min(range(len(costs)), key=lambda k: costs[k])
    path = [0.0] * frames
    for frame in range(frames - 1, -1, -1):
        path[frame] = states[frame][state]
        state = came_from[frame][state]
    return path


def _angle(u: Vec3, v: Vec3) -> float:
    return math.acos(max(-1.0, min(1.0, dot(u, v))))
