"""One ease pass: within EASE_S before a span and after it, a foot's goal is the animated foot carried by
the share (a smoothstep of the time to the span) of what the span's pin changes at its boundary, so the
goal reaches the pin as the span starts and lets go of it after the span ends, in seconds at any rate."""
from __future__ import annotations

from typing import Callable, List, Optional, Sequence

from ..rotations import IDENTITY, add, quat_conjugate, quat_multiply, quat_normalize, quat_slerp, scale, subtract
from .contacts import EASE_S, Span
from .legs import Goal


def share(seconds: float) -> float:
    """How much of a pin's change holds `seconds` from its span (1 at the span, 0 from EASE_S on)."""
    x = max(0.0, 1.0 - seconds / EASE_S)
    return x * x * (3.0 - 2.0 * x)


def eased_goals(spans: Sequence[Span], frames: int, fps: float, planned: Callable[[Span, int], Goal],
                animated: Callable[[int], Goal]) -> List[Optional[Goal]]:
    """Per frame the foot's goal: the span's own inside a span; near one, the animated foot plus the share
    of the change at the span's nearest boundary (both spans' where two are near); elsewhere None."""
    goals: List[Optional[Goal]] = [None] * frames
    changes: List[list] = [[] for _ in range(frames)]
    for span in spans:
        for frame in range(span.first, span.last + 1):
            goals[frame] = planned(span, frame)
        for boundary, step in ((span.first, -1), (span.last, 1)):
            goal, now = goals[boundary], animated(boundary)
            moved = subtract(goal[0], now[0])  # type: ignore[index]
            turned = quat_multiply(goal[1], quat_conjugate(now[1]))  # type: ignore[index]
            toe = goal[2]  # type: ignore[index]
            frame = boundary + step
            while 0 <= frame < frames:
                weight = share(abs(frame - boundary) / fps)
                if weight <= 0.0:
                    break
                changes[frame].append((weight, moved, turned, toe))
                frame += step
    for frame in range(frames):
        if goals[frame] is not None or not changes[frame]:
            continue
        ankle, rotation, toe_local = animated(frame)
        for weight, moved, turned, toe in changes[frame]:
            ankle = add(ankle, scale(moved, weight))
            rotation = quat_normalize(quat_multiply(quat_slerp(IDENTITY, turned, weight), rotation))
            if toe is not None and toe_local is not None:
                toe_local = quat_slerp(toe_local, toe, weight)
        goals[frame] = (ankle, rotation, toe_local)
    return goals

