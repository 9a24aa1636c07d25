"""Writing a retargeted motion (.glb on the character or a box rig, .bvh on the target skeleton) and
measuring the report from the file as written."""
from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Dict, List, Sequence

from .. import formats
from ..errors import KimodoError
from ..files import write_bytes_atomic
from ..formats import glb
from ..formats import gltf_document as gd
from ..model import Motion, rest_motion
from ..ops.fk import rest_pose, world_positions
from . import character_glb
from .solve import RetargetInfo
from .report import Report, measure_report
from .character import Target

LOG = logging.getLogger("kimodo_rig")
OUTPUT_EXTENSIONS = (".glb", ".bvh")


def check_output_path(path) -> str:
    extension = Path(str(path)).suffix.lower()
    if extension not in OUTPUT_EXTENSIONS:
        raise KimodoError("{}: retarget writes .glb or .bvh, not {!r}".format(path, extension or "(none)"))
    return extension


def encode_glb(motion: Motion, info: RetargetInfo, target: Target) -> bytes:
    """The character with the new animation when the target carries a mesh, else a box rig of the
    target skeleton."""
    if target.document is not None and target.has_mesh:
        document = _with_tip_nodes(target)
        names = target.skeleton.joint_names
        joint_nodes = dict(zip(names, target.nodes))  # tip joints (after the file's own) have no node to animate
        scales = dict(zip(names, target.scales))
        skin_to_world: Sequence[float] = target.skin_to_world
    else:
        rig = info.target
        data = glb.encode(rest_motion(rig), names="native")
        document = gd.parse_glb(data, target.source)
        joint_nodes = {name: i for i, name in enumerate(rig.joint_names)}
        scales: Dict[str, Sequence[float]] = {}
        skin_to_world = gd.trs_matrix((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (1.0, 1.0, 1.0))
        # The box rig's mesh node carries the clip name; keep the document's own generator fields.
    rig = info.target
    rotations, positions = rest_pose(rig)
    bind_worlds = {name: gd.trs_matrix(positions[j], rotations[j], scales.get(name, (1.0, 1.0, 1.0)))
                   for j, name in enumerate(rig.joint_names) if name in joint_nodes}
    return character_glb.encode(
        document, motion, joint_nodes, scales, root_track=info.root_track, root_node_name=info.root_bone,
        new_root=info.root_is_new, skin_to_world=skin_to_world, bind_worlds=bind_worlds,
    )


def _with_tip_nodes(target: Target) -> gd.Document:
    """The character's document with one plain node per tip joint, under its bone at the tip's place, so
    the written file carries where each childless limb bone ends (read back like any joint)."""
    document = target.document
    if not target.tips:
        return document  # type: ignore[return-value]
    gltf = copy.deepcopy(document.gltf)  # type: ignore[union-attr]
    nodes = gltf["nodes"]
    node_of = dict(zip(target.skeleton.joint_names, target.nodes))
    for tip_name, bone, local in target.tips:
        nodes.append({"name": tip_name, "translation": list(local)})
        parent = nodes[node_of[bone]]
        parent["children"] = list(parent.get("children", [])) + [len(nodes) - 1]
    return gd.Document(gltf, document.binary, document.source)  # type: ignore[union-attr]


def write(motion: Motion, info: RetargetInfo, target: Target, path) -> None:
    extension = check_output_path(path)
    if extension == ".glb":
        data = encode_glb(motion, info, target)
        positions = character_glb.joint_world_positions(data, motion.skeleton.joint_names, str(path))
        worst = _worst_distance(positions, world_positions(motion))
        if not worst <= character_glb.SELF_CHECK_TOLERANCE_M:
            raise KimodoError("{}: self-check failed: the written file puts a joint {:.3g} m from where the "
                              "retarget has it".format(Path(path).name, worst))
        write_bytes_atomic(path, data)
        return
    if info.root_track is not None:
        LOG.warning("%s: .bvh keeps root motion in the hips; --root-motion root needs .glb output", path)
    formats.write_file(motion, path)


def _worst_distance(a: Sequence[Sequence[Sequence[float]]], b: Sequence[Sequence[Sequence[float]]]) -> float:
    if len(a) != len(b):
        return float("inf")
    worst = 0.0
    for frame_a, frame_b in zip(a, b):
        for p, q in zip(frame_a, frame_b):
            distance = ((p[0] - q[0]) ** 2 + (p[1] - q[1]) ** 2 + (p[2] - q[2]) ** 2) ** 0.5
            if not distance <= worst:
                worst = distance
    return worst


def output_positions(path, motion: Motion) -> List[List[Sequence[float]]]:
    """Per frame, world positions of the retargeted joints read back from the written file."""
    if Path(str(path)).suffix.lower() == ".glb":
        return character_glb.joint_world_positions(Path(path).read_bytes(), motion.skeleton.joint_names, str(path))  # type: ignore[return-value]
    written = formats.read_file(path, fps=motion.fps)
    order = [written.skeleton.joint_names.index(n) for n in motion.skeleton.joint_names]
    return [[frame[j] for j in order] for frame in world_positions(written)]


def report_from_output(path, source: Motion, retargeted: Motion, info: RetargetInfo) -> Report:
    return report_from_positions(source, info, output_positions(path, retargeted))


def report_from_positions(source: Motion, info: RetargetInfo, target_positions) -> Report:
    """The report from per-frame world positions of the retargeted skeleton's joints (None where one was
    not sampled), however they were read back: from the written file, or from a host's evaluation."""
    return measure_report(
        skeleton_label=source.skeleton.label,
        joint_count=source.joint_count,
        source_map=info.source_map,
        target_map=info.target_map,
        source_positions=world_positions(source),
        target_positions=target_positions,
        duration_s=source.duration,
        chains_mapped=info.chains_mapped,
        left_at_rest=info.left_at_rest,
        reach_source=info.reach_source,
        reach_target=info.reach_target,
        arm_correction_max_deg=info.corrections.arm_max_deg,
        facing=info.corrections.facing,
    )
