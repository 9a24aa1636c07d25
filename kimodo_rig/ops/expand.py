"""SOMA 30 -> SOMA 77, as Kimodo's SOMASkeleton30.to_SOMASkeleton77 does: start every frame from the
77-joint relaxed-hands rest (curled fingers), overwrite the 30 shared joints' local rotations."""
from __future__ import annotations

from array import array

from .. import skeletons
from ..model import Motion


def soma30_to_soma77(motion: Motion) -> Motion:
    if motion.skeleton.name != "somaskel30":
        raise ValueError("soma30_to_soma77 takes a somaskel30 motion")
    record77 = skeletons.data("somaskel77")
    target = skeletons.load("somaskel77")
    relaxed = [tuple(q) for q in record77["relaxed_hands_rest_pose"]["quat_xyzw"]]
    index77 = skeletons.data("somaskel30")["somaskel77_index_of_each_joint"]
    source_index_of = {target_joint: source_joint for source_joint, target_joint in enumerate(index77)}
    rotations = array("d")
    for frame in range(motion.frame_count):
        current = motion.frame_rotations(frame)
        for joint in range(target.joint_count):
            source_joint = source_index_of.get(joint)
            rotations.extend(current[source_joint] if source_joint is not None else relaxed[joint])
    return Motion(target, rotations, array("d", motion.root_positions), motion.fps,
                  foot_contacts=motion.foot_contacts, name=motion.name, prompt=motion.prompt)
