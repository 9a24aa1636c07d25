"""An SVG contact sheet of a motion: poses from the front and the side at evenly spaced frames, the root
path from above with heading ticks, a foot-contact timeline, constraint markers and the clip's facts.

Projections (Kimodo's frame: +Y up, +Z forward, +X the character's left), stated once because the tests
invert them from the attributes each panel carries:
- front (the viewer stands in front of the character, at +Z, looking back): x = ox + s (X - root X),
  y = oy - s Y; the character's left is on the viewer's right.
- side (the viewer stands at the character's right, -X, looking +X): x = ox + s (Z - root Z), y = oy - s Y;
  forward is to the right.
- top (from above, forward up the page): x = ox - s (X - cx), y = oy - s (Z - cz); the character's left
  is on the page's left when it faces up the page.
Every pose panel is a `<g class="pose">` with data-view, data-frame, data-ox, data-oy, data-scale and the
root X/Z it is centred on (data-root-x, data-root-z); each joint is a `<circle data-joint=NAME>`.
"""
from __future__ import annotations

import textwrap
from typing import List, Sequence, Tuple
from xml.sax.saxutils import escape, quoteattr

from ..model import Skeleton
from ..rotations import Vec3
from .scene import PreviewScene

PANEL_WIDTH = 130.0
PANEL_HEIGHT = 190.0
MARGIN = 20.0
POSES_PER_ROW = 8
TOP_VIEW_SIZE = 300.0
TIMELINE_HEIGHT = 110.0
CONTACT_LABELS = ("left heel", "left toe", "right heel", "right toe")
KIMODO_COLOUR = "#1f77b4"
CHARACTER_COLOUR = "#d62728"
REPORT_FONT_SIZE = 11.0  # px
REPORT_LINE_HEIGHT = 14.0  # px
# The advance of one character of a monospace font, in em: 0.6 for DejaVu Sans Mono, Liberation Mono and
# Courier; a little more so a line wrapped by count still ends inside the sheet in any of them.
MONOSPACE_ADVANCE_EM = 0.62


def _number(value: float) -> str:
    text = "{:.2f}".format(value)
    return "0.00" if text == "-0.00" else text


def sample_frames(frame_count: int, count: int = POSES_PER_ROW) -> List[int]:
    """`count` evenly spaced frames from the first to the last (fewer for short clips)."""
    if frame_count <= count:
        return list(range(frame_count))
    return sorted({round(i * (frame_count - 1) / (count - 1)) for i in range(count)})


def _pose_scale(heights: Sequence[float]) -> float:
    """Pixels per metre so the tallest pose of a row fits its panel with room for the frame label."""
    tallest = max([h for h in heights if h > 0] + [0.5])
    return (PANEL_HEIGHT - 40.0) / tallest


def _pose_group(skeleton: Skeleton, positions: Sequence[Vec3], view: str, frame: int, ox: float, oy: float,
                scale: float, colour: str, root: Vec3) -> List[str]:
    def project(p: Vec3) -> Tuple[float, float]:
        horizontal = (p[0] - root[0]) if view == "front" else (p[2] - root[2])
        return ox + scale * horizontal, oy - scale * p[1]

    points = [project(p) for p in positions]
    out = ['<g class="pose" data-view="{}" data-frame="{}" data-ox="{}" data-oy="{}" data-scale="{}" '
           'data-root-x="{}" data-root-z="{}" data-skeleton={}>'.format(
               view, frame, _number(ox), _number(oy), repr(scale), repr(root[0]), repr(root[2]),
               quoteattr(skeleton.name))]
    for joint, parent in enumerate(skeleton.parents):
        if parent >= 0:
            (x1, y1), (x2, y2) = points[parent], points[joint]
            out.append('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2"/>'.format(
                _number(x1), _number(y1), _number(x2), _number(y2), colour))
    for joint, (x, y) in enumerate(points):
        # Full precision on the joints: the tests read them back.
        out.append('<circle data-joint={} cx="{!r}" cy="{!r}" r="1.8" fill="{}"/>'.format(
            quoteattr(skeleton.joint_names[joint]), x, y, colour))
    out.append("</g>")
    return out


def _pose_rows(scene: PreviewScene, frames: Sequence[int], top: float) -> Tuple[List[str], float]:
    rows = [("Kimodo", scene.motion.skeleton, scene.positions, KIMODO_COLOUR)]
    if scene.character is not None:
        rows.append((scene.character_label, scene.character.skeleton, scene.character_positions, CHARACTER_COLOUR))
    out: List[str] = []
    y = top
    for view in ("front", "side"):
        for label, skeleton, positions, colour in rows:
            scale = _pose_scale([max(p[1] for p in positions[f]) for f in frames])
            out.append('<text x="{}" y="{}" font-size="13" font-weight="bold">{} from the {}</text>'.format(
                MARGIN, _number(y + 14), escape(label), "front" if view == "front" else "side (facing right)"))
            floor = y + PANEL_HEIGHT - 12
            for column, frame in enumerate(frames):
                ox = MARGIN + PANEL_WIDTH * (column + 0.5)
                out.append('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#bbb"/>'.format(
                    _number(ox - PANEL_WIDTH * 0.45), _number(floor), _number(ox + PANEL_WIDTH * 0.45), _number(floor)))
                marked = frame in scene.constrained_frames
                if marked:
                    out.append('<rect class="constrained" x="{}" y="{}" width="{}" height="{}" fill="none" '
                               'stroke="#9467bd" stroke-dasharray="4 2"/>'.format(
                                   _number(ox - PANEL_WIDTH / 2 + 2), _number(y + 20), _number(PANEL_WIDTH - 4),
                                   _number(PANEL_HEIGHT - 22)))
                out.extend(_pose_group(skeleton, positions[frame], view, frame, ox, floor, scale, colour,
                                       positions[frame][0]))
                out.append('<text x="{}" y="{}" font-size="11" text-anchor="middle">frame {}</text>'.format(
                    _number(ox), _number(floor + 11), frame))
            y += PANEL_HEIGHT
    return out, y


def _top_view(scene: PreviewScene, left: float, top: float) -> List[str]:
    roots = [frame[0] for frame in scene.positions]
    xs = [p[0] for p in roots] + [m[0] for m in scene.markers]
    zs = [p[2] for p in roots] + [m[2] for m in scene.markers]
    cx, cz = (min(xs) + max(xs)) / 2, (min(zs) + max(zs)) / 2
    extent = max(max(xs) - min(xs), max(zs) - min(zs), 1.0)
    scale = (TOP_VIEW_SIZE - 40.0) / extent
    ox, oy = left + TOP_VIEW_SIZE / 2, top + 20 + TOP_VIEW_SIZE / 2

    def project(x: float, z: float) -> Tuple[float, float]:
        return ox - scale * (x - cx), oy - scale * (z - cz)

    out = ['<text x="{}" y="{}" font-size="13" font-weight="bold">Root path from above (forward is up at '
           'the start)</text>'.format(_number(left), _number(top + 14)),
           '<rect x="{}" y="{}" width="{}" height="{}" fill="#fafafa" stroke="#ddd"/>'.format(
               _number(left), _number(top + 20), TOP_VIEW_SIZE, TOP_VIEW_SIZE),
           '<g class="top" data-ox="{!r}" data-oy="{!r}" data-scale="{!r}" data-cx="{!r}" data-cz="{!r}">'.format(
               ox, oy, scale, cx, cz)]
    path = " ".join("{!r},{!r}".format(*project(p[0], p[2])) for p in roots)
    out.append('<polyline class="root-path" points="{}" fill="none" stroke="{}" stroke-width="2"/>'.format(
        path, KIMODO_COLOUR))
    step = max(1, len(roots) // 12)
    for frame in range(0, len(roots), step):
        heading = scene.headings[frame] if scene.headings else None
        if heading is None:
            continue
        x0, y0 = project(roots[frame][0], roots[frame][2])
        # Forward on the floor is (sin a, cos a) in (X, Z); a tick 14 px long.
        x1, y1 = project(roots[frame][0] + heading[0] * 14 / scale, roots[frame][2] + heading[1] * 14 / scale)
        out.append('<line class="heading" data-frame="{}" x1="{}" y1="{}" x2="{}" y2="{}" stroke="#555"/>'.format(
            frame, _number(x0), _number(y0), _number(x1), _number(y1)))
    for label, p, colour in (("start", roots[0], "#2ca02c"), ("end", roots[-1], "#d62728")):
        x, y = project(p[0], p[2])
        out.append('<circle class="{}" cx="{!r}" cy="{!r}" r="5" fill="{}"/>'.format(label, x, y, colour))
        out.append('<text x="{}" y="{}" font-size="11">{}</text>'.format(_number(x + 7), _number(y - 7), label))
    for marker in scene.markers:
        x, y = project(marker[0], marker[2])
        out.append('<rect class="constraint-marker" data-kind={} data-frame="{}" x="{}" y="{}" width="7" height="7" '
                   'fill="#9467bd" transform="rotate(45 {} {})"/>'.format(
                       quoteattr(marker[3]), marker[4], _number(x - 3.5), _number(y - 3.5), _number(x), _number(y)))
    out.append("</g>")
    return out


def _timeline(scene: PreviewScene, left: float, top: float, width: float) -> List[str]:
    frames = scene.motion.frame_count
    per_frame = width / max(frames, 1)
    out = ['<text x="{}" y="{}" font-size="13" font-weight="bold">Foot contacts{}</text>'.format(
        _number(left), _number(top + 14), "" if scene.contacts_from_file else " (detected: slower than 0.15 m/s "
        "and lower than 0.10 m)"), '<g class="contacts" data-frames="{}">'.format(frames)]
    for row, label in enumerate(CONTACT_LABELS):
        y = top + 24 + row * 18
        out.append('<text x="{}" y="{}" font-size="11">{}</text>'.format(_number(left), _number(y + 11), label))
        if scene.contacts is None:
            continue
        start = None
        for frame in range(frames + 1):
            on = frame < frames and scene.contacts[frame * 4 + row] >= 0.5
            if on and start is None:
                start = frame
            elif not on and start is not None:
                out.append('<rect class="contact" data-channel="{}" data-start="{}" data-end="{}" x="{}" y="{}" '
                           'width="{}" height="12" fill="#2ca02c"/>'.format(
                               row, start, frame, _number(left + 70 + start * per_frame), _number(y),
                               _number((frame - start) * per_frame)))
                start = None
    for frame, kind in sorted(scene.constrained_frame_kinds):
        x = left + 70 + (frame + 0.5) * per_frame
        out.append('<line class="constraint-frame" data-frame="{}" data-kind={} x1="{}" y1="{}" x2="{}" y2="{}" '
                   'stroke="#9467bd"/>'.format(frame, quoteattr(kind), _number(x), _number(top + 20), _number(x),
                                               _number(top + 24 + 4 * 18)))
    out.append("</g>")
    return out


def report_rows(lines: Sequence[str], width: float) -> List[str]:
    """The report's lines wrapped at word breaks to fit `width` px of monospace text; a continued line is
    indented two spaces past where its line starts."""
    columns = max(20, int(width / (REPORT_FONT_SIZE * MONOSPACE_ADVANCE_EM)))
    rows: List[str] = []
    for line in lines:
        indent = line[:len(line) - len(line.lstrip(" "))]
        rows.extend(textwrap.wrap(line, columns, subsequent_indent=indent + "  ") or [""])
    return rows


def render(scene: PreviewScene) -> bytes:
    """The contact sheet as UTF-8 SVG bytes."""
    motion = scene.motion
    frames = sample_frames(motion.frame_count)
    width = MARGIN * 2 + PANEL_WIDTH * POSES_PER_ROW
    facts = "{}, {} joints, {} frames at {:g} fps ({:.2f} s)".format(
        motion.skeleton.label, motion.joint_count, motion.frame_count, motion.fps, motion.duration)
    body = ['<text x="{}" y="24" font-size="18" font-weight="bold">{}</text>'.format(MARGIN, escape(scene.title)),
            '<text x="{}" y="42" font-size="12">{}</text>'.format(MARGIN, escape(facts))]
    if motion.prompt:
        body.append('<text x="{}" y="58" font-size="12" font-style="italic">{}</text>'.format(
            MARGIN, escape('"' + motion.prompt + '"')))
    rows, y = _pose_rows(scene, frames, 66.0)
    body.extend(rows)
    body.extend(_top_view(scene, MARGIN, y + 10))
    timeline_left = MARGIN * 2 + TOP_VIEW_SIZE
    body.extend(_timeline(scene, timeline_left, y + 10, width - timeline_left - MARGIN - 70))
    report_top = y + 10 + TIMELINE_HEIGHT
    lines = report_rows(scene.report_lines, width - timeline_left - MARGIN)
    for index, line in enumerate(lines):
        body.append('<text class="report" x="{}" y="{}" font-size="{:g}" font-family="monospace" '
                    'xml:space="preserve">{}</text>'.format(
                        _number(timeline_left), _number(report_top + REPORT_LINE_HEIGHT * index), REPORT_FONT_SIZE,
                        escape(line)))
    height = max(y + 10 + TOP_VIEW_SIZE + 30, report_top + REPORT_LINE_HEIGHT * len(lines) + MARGIN)
    head = ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
            'font-family="sans-serif">\n<rect width="100%" height="100%" fill="white"/>\n').format(
                w=_number(width), h=_number(height))
    return (head + "\n".join(body) + "\n</svg>\n").encode("utf-8")
