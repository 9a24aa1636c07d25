"""How far a one-bone leg's planted sole slides, as a user sees it, by numpy skinning of the written file
(pygltflib + numpy, no kimodo_rig). A leg of one bone hip to foot (Kenney's `leg-left`) cannot keep a flat
foot flat while the body passes over it: it rocks on its sole's back or front, and whichever end Kimodo's
heel or toe channel names may lift. So the slide is not measured at a heel or toe point but at the sole's
vertices on the floor: those of the leg within TOUCH_CM (per 1.7 m) of the rest floor in both frames of a
step Kimodo has that foot planted at both ends, their mean horizontal step; steps where none touches at
both ends are the planted-height bar's (the foot is up). The rest floor is the input rig's lowest leg
vertex at bind, as tests/feet_judge.py has it."""
from __future__ import annotations

from pathlib import Path
from typing import Dict

import numpy as np

from feet_judge import Skinned, _carried_by, _descendants, _node_world_static

TOUCH_CM = 1.0
REFERENCE_HEIGHT_M = 1.7


def sole_slide(output: Path, rig: Path, legs: Dict[str, str], contacts: np.ndarray) -> dict:
    """{"skate_cm": mean slide (cm a frame, the character's own size), "steps": planted steps judged,
    "planted_steps": planted steps, "worst_cm": the largest step}. legs: {"l": bone, "r": bone};
    contacts: (frames, 4) left heel, left toe, right heel, right toe."""
    source = Skinned(Path(rig))
    static = _node_world_static(source.glb)[None]
    everything = source.skin(static, [np.ones(len(p[2]), bool) for p in source.parts])[0]
    height = float(np.ptp(everything[:, 1]))
    floor = min(source.skin(static, _carried_by(source, _descendants(source.glb, legs[s])))[0][:, 1].min() for s in "lr")
    touch = TOUCH_CM / 100.0 * height / REFERENCE_HEIGHT_M
    written = Skinned(Path(output))
    world = written.glb.animated_world_matrices()
    frames = min(len(world), len(contacts))
    steps, planted_steps = [], 0
    for k, s in enumerate("lr"):
        posed = written.skin(world[:frames], _carried_by(written, _descendants(written.glb, legs[s])))
        down = posed[..., 1] - floor <= touch
        on = (contacts[:frames, 2 * k] | contacts[:frames, 2 * k + 1]).astype(bool)
        for f in np.flatnonzero(on[:-1] & on[1:]):
            planted_steps += 1
            both = down[f] & down[f + 1]
            if both.any():
                steps.append(float(np.linalg.norm((posed[f + 1, both] - posed[f, both])[:, [0, 2]], axis=1).mean()))
    return {"skate_cm": 100.0 * float(np.mean(steps)) if steps else 0.0, "steps": len(steps),
            "planted_steps": planted_steps, "worst_cm": 100.0 * max(steps, default=0.0)}
