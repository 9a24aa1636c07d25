"""A one-file HTML player: the motion as a GLB (the retargeted character when there is one, else step 1's
box rig) played by three.js, both embedded in the page, so it works offline from a double-click.

The page (player.html) exposes `window.kimodoPreview` (ready, frameCount, fps, setFrame(n), frame(),
bonePositions(), lastFrameReached, view() -> {camera, character}) so a browser test can drive it and
measure what it shows; `#frame=N` in the address opens it paused at frame N.

The camera frames the drawn character (the retargeted one when there is one) and follows its hips, whose
floor position per frame the page carries as `follow`; Kimodo's skeleton is an overlay the viewer can
switch on and off (on by default only when it is all there is to see).
"""
from __future__ import annotations

import base64
import json
import re
from pathlib import Path

from .. import skeletons
from ..formats import glb
from ..ops.fk import rest_positions
from .scene import PreviewScene

HERE = Path(__file__).resolve().parent
TEMPLATE = HERE / "player.html"
THREE = HERE / "vendor" / "three.min.js"


def _feet(scene: PreviewScene):
    """Kimodo's foot joints with the contact channel each one shows: heel and toe of each side."""
    skeleton = scene.motion.skeleton
    if skeleton.name not in skeletons.BUILTIN or scene.contacts is None:
        return []
    groups = skeletons.data(skeleton.name)["semantic_groups"]
    joints = groups["left_foot_chain"][:2] + groups["right_foot_chain"][:2]
    return [{"joint": skeleton.index(name), "channel": channel} for channel, name in enumerate(joints)]


def _script_safe(text: str) -> str:
    # Inside <script>, "</" could close the element; "<\/" means the same in JSON and JavaScript strings.
    return text.replace("</", "<\\/")


def render(scene: PreviewScene) -> bytes:
    motion = scene.motion
    data = scene.character_glb or glb.encode(motion)
    shown = scene.character.skeleton if scene.character is not None else motion.skeleton
    if scene.character is not None:
        hips = [frame[scene.character_hips] for frame in scene.character_positions]
    else:
        hips = [frame[0] for frame in scene.positions]
    payload = {
        "title": scene.title,
        "facts": "{}, {} joints, {} frames at {:g} fps ({:.2f} s){}".format(
            motion.skeleton.label, motion.joint_count, motion.frame_count, motion.fps, motion.duration,
            "; prompt: " + motion.prompt if motion.prompt else ""),
        "frames": motion.frame_count,
        "fps": motion.fps,
        "report": scene.report_lines,
        "height": max(p[1] for p in rest_positions(shown)) - min(p[1] for p in rest_positions(shown)),
        "contacts": [round(c) for c in scene.contacts] if scene.contacts is not None else None,
        "follow": [round(c, 4) for p in hips for c in (p[0], p[2])],
        "overlay": scene.character is None,
        "opaque_materials": scene.invisible_materials,
        "hidden_root_nodes": scene.hidden_root_nodes,
        "kimodo": {
            "parents": list(motion.skeleton.parents),
            "positions": [round(c, 5) for frame in scene.positions for p in frame for c in p],
            "feet": _feet(scene),
        },
        "glb": base64.b64encode(data).decode("ascii"),
    }
    values = {
        "TITLE": scene.title,  # a slug: [a-z0-9_] only
        "DATA": _script_safe(json.dumps(payload, separators=(",", ":"))),
        "THREE": THREE.read_text(encoding="utf-8"),
    }
    # One pass, so text from the clip (a prompt) can never be taken for a placeholder.
    page = re.sub(r"@@(TITLE|DATA|THREE)@@", lambda m: values[m.group(1)], TEMPLATE.read_text(encoding="utf-8"))
    return page.encode("utf-8")
