"""Where the Blender judges measure a toe-less foot's toe contact (numpy only: tests/blender/feet_judge.py and
tests/blender/extension.py import it; nothing here imports kimodo_rig)."""
import numpy as np


def sole_front(foot, ankle, forward, height):
    """Index of the sole's front vertex, where a toe contact is measured without a toe bone: of the sole
    (within 2% of the height of the foot's lowest), the vertex a foot pitched toe-down stands on, along
    `forward` (the facing the rig was built with): reach ahead of the ankle, less its height over the
    sole (a 45 deg pitch) and a tenth of its distance aside from the ankle's line. Not the vertex
    farthest from the ankle: on a foot whose mesh hangs behind the ankle that is the heel's back."""
    forward = np.array([forward[0], 0.0, forward[2]], dtype=np.float64) / np.hypot(forward[0], forward[2])
    aside = np.array([forward[2], 0.0, -forward[0]])
    offset = (foot - ankle) * [1.0, 0.0, 1.0]
    low = foot[:, 1].min()
    score = offset @ forward - (foot[:, 1] - low) - 0.1 * np.abs(offset @ aside)
    return int(np.argmax(np.where(foot[:, 1] <= low + 0.02 * height, score, -np.inf)))
