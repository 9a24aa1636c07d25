"""One ease pass: within EASE_S before a span and after it, a foot's goal is the animated foot moved by
the share (a smoothstep of the time to the span) of what the span's pin moves it at its boundary, so the
goal reaches the pin as the span starts and lets go of it after the span ends, in seconds at any rate;
the foot's turn onto its pins is interpolated in time from one span to the next."""
from __future__ import annotations

from typing import Callable, List, Optional, Sequence

from ..rotations import add, quat_conjugate, quat_multiply, quat_normalize, quat_slerp, scale, subtract
from .contacts import EASE_S, RIGID_EASE_S, Span
from .legs import Goal


def share(seconds: float) -> float:
    """How much of a pin's change holds `seconds` from its span (1 at the span, 0 from EASE_S on)."""
    x = max(0.0, 1.0 - seconds / EASE_S)
    return x * x * (3.0 - 2.0 * x)


def standing_shares(spans: Sequence[Span], frames: int, fps: float) -> List[float]:
    """Per frame how far a foot stands as its pins have it: 1 inside a span, `share` of the time to the
    nearest one outside."""
    shares = [0.0] * frames
    window = RIGID_EASE_S
    for span in spans:
        for frame in range(max(0, span.first - int(window * fps) - 1), min(frames, span.last + int(window * fps) + 2)):
            seconds = max(span.first - frame, frame - span.last, 0) / fps
            x = max(0.0, 1.0 - seconds / window)
            shares[frame] = max(shares[frame], x * x * (3.0 - 2.0 * x))
    return shares


def eased_goals(spans: Sequence[Span], frames: int, fps: float, planned: Callable[[Span, int], Goal],
                animated: Callable[[int], Goal], leaving: Optional[Callable[[Span, int], Goal]] = None) -> List[Optional[Goal]]:
    """Per frame the foot's goal: the span's own inside a span; outside, the animated foot turned by the
    turn the spans either side give it at their boundaries (interpolated over the time between them: a
    foot the retarget pitches off flat keeps the pins' correction through its swing), moved by the
    share of the move at the span's nearest boundary, and its toe eased likewise; no spans: None.
    `leaving`: where the foot stands at a span's first or last frame, where not as `planned` has it (a
    rigid foot rocks off its pin's turn: `legs.rested`)."""
    goals: List[Optional[Goal]] = [None] * frames
    if not spans:
        return goals
    moves: List[list] = [[] for _ in range(frames)]
    changes = []
    for span in spans:
        for frame in range(span.first, span.last + 1):
            goals[frame] = planned(span, frame)
        ends = []
        for boundary, step in ((span.first, -1), (span.last, 1)):
            goal, now = goals[boundary] if leaving is None else leaving(span, boundary), animated(boundary)
            moved = subtract(goal[0], now[0])  # type: ignore[index]
            ends.append(quat_normalize(quat_multiply(goal[1], quat_conjugate(now[1]))))  # type: ignore[index]
            frame = boundary + step
            while 0 <= frame < frames:
                weight = share(abs(frame - boundary) / fps)
                if weight <= 0.0:
                    break
                moves[frame].append((weight, moved, goal[2]))  # type: ignore[index]
                frame += step
        changes.append((span.first, span.last, ends[0], ends[1]))
    before = (-1, -1, changes[0][2], changes[0][2])
    after = (frames, frames, changes[-1][3], changes[-1][3])
    for (_, last, _, leaving), (first, _, arriving, _) in zip([before] + changes, changes + [after]):
        for frame in range(max(0, last + 1), min(frames, first)):
            x = (frame - last) / float(first - last)
            turned = quat_slerp(leaving, arriving, x * x * (3.0 - 2.0 * x))
            ankle, rotation, toe_local = animated(frame)
            for weight, moved, toe in moves[frame]:
                ankle = add(ankle, scale(moved, weight))
                if toe is not None and toe_local is not None:
                    toe_local = quat_slerp(toe_local, toe, weight)
            goals[frame] = (ankle, quat_normalize(quat_multiply(turned, rotation)), toe_local)
    return goals
