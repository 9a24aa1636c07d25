"""Writing a retargeted motion (.glb or .fbx on the character or a box rig, .bvh on the target skeleton)
and measuring the report from the file as written (.fbx: read back by our FBX reader, formats/fbx_scene.py)."""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from .. import formats
from ..errors import KimodoError
from ..files import file_name, write_bytes_atomic
from ..formats import draco
from ..formats import gltf_document as gd
from ..model import Motion, Skeleton, rest_motion
from ..ops.fk import global_rotations_and_positions, rest_pose, shared_poses, world_positions
from ..rotations import Quat, Vec3, sphere_directions, subtract
from . import character_glb, feet, soles
from .character import Target, skinned_joints
from .mapping import SIDES
from .report import (REFERENCE_HEIGHT_CM, FeetFigures, KimodoFeet, Report, facing_rotation, foot_skate, kimodo_feet,
                     measure_facing, measure_report, skate_steps, with_kimodo_feet)
from .solve import RetargetInfo

Matrix4 = gd.Matrix4
Poses = Tuple[List[List[Quat]], List[List[Vec3]]]  # global_rotations_and_positions: per frame, per joint

LOG = logging.getLogger("kimodo_rig")
OUTPUT_EXTENSIONS = (".glb", ".fbx", ".bvh")


def check_output_path(path) -> str:
    extension = Path(str(path)).suffix.lower()
    if extension not in OUTPUT_EXTENSIONS:
        raise KimodoError("{}: retarget writes .glb, .fbx or .bvh, not {!r}".format(path, extension or "(none)"))
    return extension


def encode_glb(motion: Motion, info: RetargetInfo, target: Target, poses: Optional[Poses] = None) -> bytes:
    """The character with the new animation when the target carries a mesh, else a box rig of the
    target skeleton. `poses`: the motion's global_rotations_and_positions, when known."""
    return _built_glb(motion, info, target, poses).to_glb()


def _built_glb(motion: Motion, info: RetargetInfo, target: Target, poses: Optional[Poses]) -> gd.DocumentBuilder:
    """encode_glb's scene, built and not yet serialised."""
    if target.document is not None and target.has_mesh:
        document = _written_document(target, _added_nodes(info, target))
        names = target.skeleton.joint_names
        joint_nodes = dict(zip(names, target.nodes))  # tip joints (after the file's own) have no node to animate
        scales = dict(zip(names, target.scales))
        skin_to_world: Sequence[float] = target.skin_to_world
        inverse_binds = dict(target.mended)
    else:
        from ..formats import glb  # a character with a mesh (most runs) needs no box rig

        rig = info.target
        data = glb.encode(rest_motion(rig), names="native")
        document = gd.parse_glb(data, target.source)
        joint_nodes = {name: i for i, name in enumerate(rig.joint_names)}
        scales: Dict[str, Sequence[float]] = {}
        skin_to_world = gd.trs_matrix((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (1.0, 1.0, 1.0))
        inverse_binds = {}
        # The box rig's mesh node carries the clip name; keep the document's own generator fields.
    rig = info.target
    rotations, positions = rest_pose(rig)
    bind_worlds = {name: gd.trs_matrix(positions[j], rotations[j], scales.get(name, (1.0, 1.0, 1.0)))
                   for j, name in enumerate(rig.joint_names) if name in joint_nodes}
    return character_glb.build(
        document, motion, joint_nodes, scales, root_track=info.root_track, root_node_name=info.root_bone,
        new_root=info.root_is_new, skin_to_world=skin_to_world, bind_worlds=bind_worlds, inverse_binds=inverse_binds,
        poses=poses,
    )


def _added_nodes(info: RetargetInfo, target: Target) -> List[Tuple[str, str, Vec3]]:
    """The joints the retarget added (`info.added_joints`) as tips are kept: (name, bone, the joint's
    place in the bone NODE's own frame at bind, scale included)."""
    names = list(target.skeleton.joint_names)
    rotations, positions = rest_pose(target.skeleton)
    nodes = []
    for name, bone, world in info.added_joints:
        j = names.index(bone)
        bind = gd.trs_matrix(positions[j], rotations[j], target.scales[j])
        nodes.append((name, bone, gd.apply4(gd.invert4(bind), world)))
    return nodes


def _written_document(target: Target, added: Sequence[Tuple[str, str, Vec3]] = ()) -> gd.Document:
    """The character's document with one plain node per tip joint (and per joint the retarget `added`),
    under its bone at the tip's place, so
    the written file carries where each childless limb bone ends (read back like any joint); and every
    joint's node named as the skeleton names it: a name the file repeats (two bones `index_03_r`, a mesh
    node named as a bone) is made unique as the reader made it, so the written file says which node is
    which (as Blender and Unreal rename repeated bones on import)."""
    document = target.document
    node_of = dict(zip(target.skeleton.joint_names, target.nodes))
    joint_name = {node: name for name, node in node_of.items()}
    nodes = document.gltf.get("nodes", [])  # type: ignore[union-attr]
    clashing = [i for i, node in enumerate(nodes) if node.get("name") in node_of and joint_name.get(i) != node.get("name")]
    if not target.tips and not added and not clashing:
        return document  # type: ignore[return-value]
    gltf = dict(document.gltf)  # type: ignore[union-attr]  # only its nodes change (build copies the whole)
    nodes = gltf["nodes"] = [dict(node) for node in gltf["nodes"]]
    for i in clashing:
        nodes[i]["name"] = joint_name.get(i) or "{}_node{}".format(nodes[i]["name"], i)
    for tip_name, bone, local in list(target.tips) + list(added):
        nodes.append({"name": tip_name, "translation": list(local)})
        parent = nodes[node_of[bone]]
        parent["children"] = list(parent.get("children", [])) + [len(nodes) - 1]
    return gd.Document(gltf, document.binary, document.source)  # type: ignore[union-attr]


def written_nodes(info: RetargetInfo, target: Optional[Target]) -> Optional[Dict[str, int]]:
    """Joint name -> node index in the .glb encode_glb writes on a character: each joint keeps its node,
    the tips and the joints the retarget added follow the file's nodes in that order (_written_document).
    The nodes keep the character's own names (an engine binds animation by node name), which may be empty
    or repeated, so the written joints are found by index. None where the file's names say which node is
    which: a box rig (named by the skeleton), or no target (a file another host wrote)."""
    if target is None or target.document is None or not target.has_mesh:
        return None
    node_of = dict(zip(target.skeleton.joint_names, target.nodes))
    count = len(target.document.gltf.get("nodes", []))
    for k, (name, _, _) in enumerate(list(target.tips) + list(info.added_joints)):
        node_of[name] = count + k
    return node_of


def checked_glb(motion: Motion, info: RetargetInfo, target: Target, shown: str) -> bytes:
    """encode_glb's bytes, read back and compared with the retarget (the self-check); a failure names
    `shown`, the user's own output (a preview embeds these bytes in its page: no file of their own)."""
    poses = global_rotations_and_positions(motion)  # once: what is written, and where the check wants it
    data = encode_glb(motion, info, target, poses)
    positions = character_glb.joint_world_positions(data, motion.skeleton.joint_names, shown, written_nodes(info, target))
    worst = _worst_distance(positions, poses[1])
    if not worst <= character_glb.SELF_CHECK_TOLERANCE_M:
        raise KimodoError("{}: self-check failed: the written file puts a joint {:.3g} m from where the "
                          "retarget has it".format(file_name(shown), worst))
    return data


def write(motion: Motion, info: RetargetInfo, target: Target, path) -> None:
    """Write the retargeted motion to `path` (.glb, .fbx or .bvh)."""
    extension = check_output_path(path)
    if extension == ".glb":
        write_bytes_atomic(path, checked_glb(motion, info, target, str(path)))
        return
    if extension == ".fbx":  # the .glb's scene, written as FBX: one retarget, two containers
        from ..formats import fbx  # loaded for .fbx output only

        # Built in memory (no .glb bytes written, parsed and thrown away) and not self-checked as a .glb
        # scene: the written .fbx itself is read back and compared with the retarget (report_from_output).
        document = _built_glb(motion, info, target, None).to_document(str(path))
        write_bytes_atomic(path, fbx.encode_gltf(document, take=motion.name or Path(str(path)).stem, fps=motion.fps))
        return
    if info.root_track is not None:
        LOG.warning("%s: .bvh keeps root motion in the hips; --root-motion root needs .glb output", path)
    formats.write_file(motion, path)


def _worst_distance(a: Sequence[Sequence[Sequence[float]]], b: Sequence[Sequence[Sequence[float]]]) -> float:
    if len(a) != len(b):
        return float("inf")
    worst = 0.0  # squared: the root taken once, of the largest (a NaN kept as the loop met it)
    for frame_a, frame_b in zip(a, b):
        for (px, py, pz), (qx, qy, qz) in zip(frame_a, frame_b):
            dx, dy, dz = px - qx, py - qy, pz - qz
            squared = dx * dx + dy * dy + dz * dz
            if not squared <= worst:
                worst = squared
    return math.sqrt(worst)


def output_positions(path, motion: Motion) -> List[List[Sequence[float]]]:
    """Per frame, world positions of the retargeted joints read back from a written .bvh (the file's own
    reader, on the target skeleton)."""
    written = formats.read_file(path, fps=motion.fps)
    order = [written.skeleton.joint_names.index(n) for n in motion.skeleton.joint_names]
    return [[frame[j] for j in order] for frame in world_positions(written)]


def report_from_output(path, source: Motion, retargeted: Motion, info: RetargetInfo,
                       target: Optional[Target] = None) -> Report:
    """The report measured from the file as written: joint positions and, for a character with a mesh,
    its skinned foot vertices, evaluated from the file's own nodes, skins and animation (an .fbx as our
    FBX reader reads it back: nodes, clusters, the take sampled at the clip's rate); the facing from the
    file's bind geometry; the contacts from the clip. The travel --in-place removed after the lock
    (`info.removed_travel`) is added back to the feet for the skate (an in-place walk slides on purpose).
    An .fbx (written without a self-check) read back with a joint farther than SELF_CHECK_TOLERANCE_M
    from the retarget is measured all the same, with a warning saying how far."""
    if Path(str(path)).suffix.lower() == ".glb":
        return report_from_glb(Path(path).read_bytes(), str(path), source, retargeted, info, target)
    if Path(str(path)).suffix.lower() == ".fbx":
        from ..formats import fbx  # loaded for .fbx output only

        # Without normals, UVs and materials: the report measures vertex places, not surfaces.
        document = fbx.read_motion_document(path, fps=retargeted.fps, surfaces=False)
        node_of = _nodes_of_read_fbx(document, info, target, retargeted.skeleton.joint_names, str(path))
        positions = character_glb.document_joint_world_positions(document, retargeted.skeleton.joint_names,
                                                                 str(path), node_of)
        worst = _worst_distance(positions, global_rotations_and_positions(retargeted)[1])
        if not worst <= character_glb.SELF_CHECK_TOLERANCE_M:  # the file is measured as it is, and said to be off
            LOG.warning("%s: read back, the written file puts a joint %.3g m from where the retarget has it",
                        file_name(str(path)), worst)
        return _report_from_scene(document, positions, str(path), source, info, target, node_of)
    written = output_positions(path, retargeted)
    return _measured(source, info, written, _joint_feet(written, retargeted.skeleton, info), _carriers(target))


def report_from_glb(data: bytes, shown: str, source: Motion, retargeted: Motion, info: RetargetInfo,
                    target: Optional[Target] = None) -> Report:
    """report_from_output of .glb bytes as written (`shown` names them in a message): the preview measures
    the bytes it embeds, with no file written for it."""
    node_of = written_nodes(info, target)
    written = character_glb.joint_world_positions(data, retargeted.skeleton.joint_names, shown, node_of)
    return _report_from_scene(character_glb.parsed_glb(data, shown), written, shown, source, info, target, node_of)


def _report_from_scene(document: gd.Document, written, shown: str, source: Motion, info: RetargetInfo,
                       target: Optional[Target], node_of: Optional[Dict[str, int]]) -> Report:
    """The report of a written scene as a glTF document (`written`: its joints' positions per frame)."""
    with_mesh = target is not None and target.has_mesh
    return _measured(source, info, written, _glb_feet(document, info, with_mesh, shown, node_of), _carriers(target))  # type: ignore[arg-type]


def _nodes_of_read_fbx(document: gd.Document, info: RetargetInfo, target: Optional[Target],
                       joint_names: Sequence[str], shown: str) -> Dict[str, int]:
    """Joint name -> node of a written .fbx as our reader reads it back. The writer names each Model as
    the .glb scene it wrote names the node (fbx.model_name), and the joints' names there are unique
    (_written_document), so each joint is found by that name; one missing or repeated is an error."""
    from ..formats import fbx  # loaded for .fbx output only

    if target is None or target.document is None or not target.has_mesh:
        named = {name: name for name in joint_names}  # a box rig: its nodes are named as its joints
    else:
        glb_nodes = _written_document(target, _added_nodes(info, target)).gltf["nodes"]
        named = {name: fbx.model_name(glb_nodes[index], index)
                 for name, index in (written_nodes(info, target) or {}).items()}
    found: Dict[str, List[int]] = {}
    for index, node in enumerate(document.gltf.get("nodes", [])):
        found.setdefault(node.get("name", ""), []).append(index)
    node_of = {}
    for joint in joint_names:
        nodes = found.get(named.get(joint, joint), [])
        if len(nodes) != 1:
            raise KimodoError("{}: read back, the file has {} Models named {!r} (joint {}), not one".format(
                shown, len(nodes), named.get(joint, joint), joint))
        node_of[joint] = nodes[0]
    return node_of


def _carriers(target: Optional[Target]) -> Optional[FrozenSet[str]]:
    """The names of the joints the character's mesh is skinned to; None without weights to go by (a Draco
    mesh with no decoder reads as no vertices at all)."""
    if target is None or not target.has_mesh:
        return None
    carried = skinned_joints(target)
    return frozenset(target.skeleton.joint_names[j] for j in carried) if carried else None


def report_from_positions(source: Motion, info: RetargetInfo, target_positions, bind_mesh: feet.BindMesh = (),
                          foot_vertices: Optional[Dict[str, Sequence[Sequence[Vec3]]]] = None) -> Report:
    """The report from per-frame world positions of the retargeted skeleton's joints, however they were
    read back (a host's own evaluation, such as Blender's). With the character's `bind_mesh` and, per
    side and frame, the host's deformed positions of the vertices `report_vertices` chose
    (`foot_vertices[side][frame]`, in that order), the floor figures are the mesh's; else the joints'."""
    geometry = _joint_feet(target_positions, info.target_map.skeleton, info)
    if bind_mesh and foot_vertices is not None:
        geometry = _sampled_feet(geometry, info, bind_mesh, foot_vertices)
    carriers = frozenset(name for _, weights in bind_mesh for name, w in weights.items() if w > 0.0) if bind_mesh else None
    return _measured(source, info, target_positions, geometry, carriers)


def _foot_vertices(info: RetargetInfo, bind_mesh: feet.BindMesh) -> Dict[str, List[int]]:
    """Per side, the indices into `bind_mesh` of the foot's vertices: weighted at least half to the
    foot's bones (where none are, as at a one-bone leg's or a footless shin's tip: to the bone above it,
    as `soles.find_soles` and `_glb_feet` have them), by the rig's own weights over its own bones."""
    tmap = info.target_map
    skeleton = tmap.skeleton
    bones = set(info.target.joint_names)
    result = {}
    for side in SIDES:
        for _, names in soles.foot_carriers(skeleton, feet.standing_joint(tmap, side)):
            result[side] = [i for i, (_, weights) in enumerate(bind_mesh)
                            if _share(weights, names, bones) >= 0.5]
            if result[side]:
                break
    return result


def _share(weights, names, bones) -> float:
    total = sum(w for name, w in weights.items() if name in bones and w > 0.0)
    return sum(w for name, w in weights.items() if name in names and w > 0.0) / total if total > 0.0 else 0.0


def report_vertices(info: RetargetInfo, bind_mesh: feet.BindMesh) -> Dict[str, List[int]]:
    """Per side, the indices into `bind_mesh` whose deformed positions a host samples every frame for
    `report_from_positions` (the foot's support vertices, the sole's front last); empty without a mesh."""
    return {side: chosen + [front] for side, (chosen, _, front) in _mesh_feet(info, bind_mesh).items()}


def _mesh_feet(info: RetargetInfo, bind_mesh: feet.BindMesh) -> Dict[str, Tuple[List[int], int, int]]:
    """Per side, indices into `bind_mesh`: the support vertices, the sole's long end and its front
    (`_foot_choice`, then `_front_of` along the facing measured at bind); empty without a mesh."""
    height = _mesh_height(bind_mesh)
    tmap = info.target_map
    joints = _joint_feet([], tmap.skeleton, info)
    members = _foot_vertices(info, bind_mesh)
    if not all(members.get(side) for side in SIDES):
        return {}
    points = {side: [bind_mesh[i][0] for i in members[side]] for side in SIDES}
    _add_heels(joints.bind, tmap)
    choices = {side: _foot_choice(points[side], [_carrier(bind_mesh[i][1]) for i in members[side]],
                                  joints.bind["heel_" + side], height) for side in SIDES}  # type: ignore[arg-type]
    bind_toe = {side: joints.bind_toe[side] if tmap.has("toe_" + side) else tuple(points[side][choices[side][2]])
                for side in SIDES}
    yaw = _facing_at_bind(joints.bind, bind_toe, joints.bone_toe, True)[0]  # type: ignore[arg-type]
    return {side: ([members[side][i] for i in chosen], members[side][long_end],
                   members[side][_front_of(points[side], sole, joints.bind["foot_" + side], yaw)])  # type: ignore[arg-type]
            for side, (chosen, sole, long_end) in choices.items()}


def _one_bone_legs(tmap) -> Set[str]:
    """The sides whose leg is one bone, hip to foot (Kenney's `leg-left`): no shin, no two-bone chain."""
    return {side for side in SIDES if feet.leg_chain(tmap, side) is None and not tmap.has("calf_" + side)}


def _add_heels(bind: Dict[str, Vec3], tmap) -> None:
    """Where each foot's mesh is seen from for which way it points (`heel_l`, `heel_r` in `bind`): the
    foot joint, or on a one-bone leg, which has no ankle, the hip its sole reaches out from under (the
    leg's tip, from its vertices, can lie at the toe's front: Kenney's box feet pointed backwards)."""
    one_bone = _one_bone_legs(tmap)
    for side in SIDES:
        bind["heel_" + side] = bind["thigh_" + side] if side in one_bone else bind["foot_" + side]


def _carrier(weights) -> str:
    return max(sorted(weights), key=lambda name: weights[name])


def _mesh_height(bind_mesh: feet.BindMesh) -> float:
    return max(p[1] for p, _ in bind_mesh) - min(p[1] for p, _ in bind_mesh) if bind_mesh else 0.0


def _sampled_feet(joints: "_Feet", info: RetargetInfo, bind_mesh: feet.BindMesh,
                  foot_vertices: Dict[str, Sequence[Sequence[Vec3]]]) -> "_Feet":
    """The feet as a host deformed the mesh: the lowest of the sampled support vertices each frame, the
    sole's front (the last sampled) for a toe contact without a toe bone, the rest floor at the lowest
    foot vertex at bind."""
    members = _foot_vertices(info, bind_mesh)
    mesh_feet = _mesh_feet(info, bind_mesh)
    chosen = {side: support + [front] for side, (support, _, front) in mesh_feet.items()}
    frames = len(joints.heel["l"])
    if not chosen or any(len(foot_vertices.get(side, ())) != frames or any(
            len(sample) != len(chosen[side]) for sample in foot_vertices[side]) for side in SIDES):
        return replace(joints, notes=joints.notes + ["the host's foot vertices did not come as asked: the floor "
                                                     "measured at the foot joints"])
    tmap = info.target_map
    lowest = {side: [min(p[1] for p in sample[:-1]) for sample in foot_vertices[side]] for side in SIDES}
    toe = {side: joints.toe[side] if tmap.has("toe_" + side) else [tuple(sample[-1]) for sample in foot_vertices[side]]
           for side in SIDES}
    bind_toe = {side: joints.bind_toe[side] if tmap.has("toe_" + side) else tuple(bind_mesh[mesh_feet[side][1]][0])
                for side in SIDES}  # where the feet's mesh points, for the facing
    rest_floor = min(bind_mesh[i][0][1] for side in SIDES for i in members[side])
    return replace(joints, toe=toe, lowest=lowest, rest_floor=rest_floor, height=_mesh_height(bind_mesh),
                   bind_toe=bind_toe, from_mesh=True)  # type: ignore[arg-type]


def _measured(source: Motion, info: RetargetInfo, written, geometry: "_Feet",
              carriers: Optional[FrozenSet[str]] = None) -> Report:
    treadmill = info.removed_travel
    source_positions = shared_poses(source)[1]
    yaw, label, facing_warning = _facing(geometry)
    contacts = feet.source_contacts(source, info.source_map, source_positions)
    figures = FeetFigures(
        lowest_cm=100.0 * (min(min(track) for track in geometry.lowest.values()) - geometry.rest_floor),
        skate_cm=_one_bone_skate(geometry, treadmill, contacts) if geometry.soles else foot_skate(
            {side: (_on_treadmill(geometry.heel[side], treadmill), _on_treadmill(geometry.toe[side], treadmill))
             for side in SIDES}, contacts),
        planted_cm=_planted(geometry, contacts),
        height_cm=100.0 * geometry.height,
        measured_at="skinned mesh" if geometry.from_mesh else "joints",
        notes=tuple(geometry.notes) + tuple(feet.unlocked_legs(info.target_map, info.foot_locked)),
    )
    report = measure_report(
        skeleton_label=source.skeleton.label,
        joint_count=source.joint_count,
        source_map=info.source_map,
        target_map=info.target_map,
        source_positions=source_positions,
        target_positions=written,  # type: ignore[arg-type]
        duration_s=source.duration,
        chains_mapped=info.chains_mapped,
        left_at_rest=info.left_at_rest,
        reach_source=info.reach_source,
        reach_target=info.reach_target,
        arm_correction_max_deg=info.corrections.arm_max_deg,
        facing=facing_rotation(yaw),
        facing_label=label,
        facing_warning=facing_warning,
        feet=figures,
        character=info.target,
        carriers=carriers,
    )
    return with_kimodo_feet(report, _kimodo_feet_of_character(geometry, treadmill, contacts, source.fps),
                            _kimodo_feet_of_clip(source, info, source_positions, contacts))


def _kimodo_feet_of_character(geometry: "_Feet", treadmill, contacts, fps: float) -> KimodoFeet:
    """Kimodo's figures of the written file's feet: the foot joint as the ankle, the toe point (the toe
    joint, else the foot's front) as the toe, over the rest floor, thresholds scaled with the character."""
    return kimodo_feet({side: _on_treadmill(geometry.heel[side], treadmill) for side in SIDES},
                       {side: _on_treadmill(geometry.toe[side], treadmill) for side in SIDES},
                       contacts, fps, geometry.rest_floor, geometry.height)


def _kimodo_feet_of_clip(source: Motion, info: RetargetInfo, positions, contacts) -> KimodoFeet:
    """Kimodo's figures of the clip itself, as its benchmark takes them: its ankle and toe joints over y = 0."""
    tmap = info.source_map
    ankles = {side: feet.standing_joint(tmap, side) for side in SIDES}
    toes = {side: tmap.bones.get("toe_" + side, ankles[side]) for side in SIDES}
    return kimodo_feet({side: [frame[ankles[side]] for frame in positions] for side in SIDES},
                       {side: [frame[toes[side]] for frame in positions] for side in SIDES}, contacts, source.fps)


SOLE_TOUCH_CM = 1.0  # per 1.7 m: a sole vertex this close to the rest floor is on it


def _one_bone_skate(geometry: "_Feet", treadmill, contacts) -> Optional[float]:
    """Planted feet's slide, cm a frame, where a leg is one bone (it rocks on its sole, so the end Kimodo's
    heel or toe channel names may lift): the mean horizontal step of the followed sole vertices on the
    floor (within SOLE_TOUCH_CM) at both ends of a step the foot is planted at; the other legs as
    `foot_skate` has them. None without such a step."""
    touch = SOLE_TOUCH_CM / 100.0 * geometry.height / (REFERENCE_HEIGHT_CM / 100.0)
    steps = []
    for side in SIDES:
        flags = contacts[side]
        if side not in geometry.soles:
            steps.extend(skate_steps({side: (_on_treadmill(geometry.heel[side], treadmill),
                                             _on_treadmill(geometry.toe[side], treadmill))}, contacts))
            continue
        frames = geometry.soles[side]
        shift = treadmill or [(0.0, 0.0)] * len(frames)
        for t in range(min(len(frames), len(flags)) - 1):
            if not (any(flags[t]) and any(flags[t + 1])):
                continue
            moved = [math.hypot(b[0] + shift[t + 1][0] - a[0] - shift[t][0], b[2] + shift[t + 1][1] - a[2] - shift[t][1])
                     for a, b in zip(frames[t], frames[t + 1])
                     if a[1] - geometry.rest_floor <= touch and b[1] - geometry.rest_floor <= touch]
            if moved:
                steps.append(sum(moved) / len(moved))
    return 100.0 * sum(steps) / len(steps) if steps else None


def _facing(geometry: "_Feet") -> Tuple[float, str, str]:
    return _facing_at_bind(geometry.bind, geometry.bind_toe, geometry.bone_toe, geometry.from_mesh)


def _facing_at_bind(bind: Dict[str, Vec3], bind_toe: Dict[str, Vec3], bone_toe: Dict[str, Vec3],
                    from_mesh: bool) -> Tuple[float, str, str]:
    """The facing at bind (yaw, label) from the hip line and the feet heel to toe (`bind_toe`: the toe
    joint, or where the feet's mesh points), and a warning when the feet's mesh and the foot bones (foot
    joint to its first child, `bone_toe`) point opposite ways: a mesh hanging off its bones (Blender's
    importer moves RobotExpressive's foot meshes 22 cm behind its ankles). Then the bones win, as the
    skeleton is what moves, and the warning says so."""
    hips = bind["thigh_l"], bind["thigh_r"]
    yaw, label = measure_facing(*hips, [subtract(bind_toe[side], bind.get("heel_" + side, bind["foot_" + side]))
                                        for side in SIDES])
    lines = [subtract(bone_toe[side], bind["foot_" + side]) for side in SIDES if bone_toe.get(side)]
    if not from_mesh or len(lines) != len(SIDES):
        return yaw, label, ""
    bone_yaw, bone_label = measure_facing(*hips, lines)
    if math.cos(bone_yaw - yaw) >= 0.0:
        return yaw, label, ""
    return bone_yaw, bone_label, ("the feet's mesh points {} but the foot bones {} (a mesh off its bones?): "
                                  "facing taken from the bones".format(label, bone_label))


def _on_treadmill(track: Sequence[Vec3], treadmill: Optional[Sequence[Tuple[float, float]]]) -> Sequence[Vec3]:
    if treadmill is None:
        return track
    return [(p[0] + t[0], p[1], p[2] + t[1]) for p, t in zip(track, treadmill)]


@dataclass
class _Feet:
    """Per side and frame, from a written file: the heel (foot joint), the toe point and the foot's
    lowest point; the rest floor, the height and bind positions of the parts the facing is measured from."""

    heel: Dict[str, List[Vec3]]
    toe: Dict[str, List[Vec3]]
    lowest: Dict[str, List[float]]
    rest_floor: float
    height: float
    bind: Dict[str, Vec3]
    bind_toe: Dict[str, Vec3]
    from_mesh: bool = False
    notes: List[str] = field(default_factory=list)
    bone_toe: Dict[str, Vec3] = field(default_factory=dict)  # the foot joint's first child at bind, per side
    soles: Dict[str, List[List[Vec3]]] = field(default_factory=dict)  # a one-bone leg's followed vertices, per frame


def _planted(geometry: _Feet, contacts) -> Optional[float]:
    heights = [geometry.lowest[side][t] - geometry.rest_floor for side in SIDES
               for t, flags in enumerate(contacts[side][:len(geometry.lowest[side])]) if flags[0] or flags[1]]
    return 100.0 * sum(heights) / len(heights) if heights else None


def _joint_feet(written: List[List[Sequence[float]]], skeleton: Skeleton, info: RetargetInfo) -> _Feet:
    """Feet as joints (a .bvh, a host's samples, or a character without a mesh): the foot's joints are its points."""
    tmap = info.target_map
    bind_positions = rest_pose(skeleton)[1]
    heel, toe, lowest, bind, bind_toe, bone_toe = {}, {}, {}, {}, {}, {}
    floor = float("inf")
    for side in SIDES:
        foot = feet.standing_joint(tmap, side)
        chain = soles.own_joints(skeleton, foot)
        tip = tmap.bones.get("toe_" + side, chain[-1])
        heel[side] = [tuple(frame[foot]) for frame in written]
        toe[side] = [tuple(frame[tip]) for frame in written]
        lowest[side] = [min(frame[j][1] for j in chain) for frame in written]
        floor = min(floor, min(bind_positions[j][1] for j in chain))
        bind_toe[side] = bind_positions[tip]
        if skeleton.children(foot):
            bone_toe[side] = bind_positions[skeleton.children(foot)[0]]
    for side in SIDES:
        bind["thigh_" + side] = bind_positions[tmap.bones["thigh_" + side]]
        bind["foot_" + side] = bind_positions[feet.standing_joint(tmap, side)]
    height = max(p[1] for p in bind_positions) - min(p[1] for p in bind_positions)
    return _Feet(heel, toe, lowest, floor, height, bind, bind_toe, False, _footless(tmap), bone_toe)  # type: ignore[arg-type]


def _footless(tmap) -> List[str]:
    """A note per side whose leg has no foot bone: its feet are measured at the joint it ends at."""
    return ["{}: no foot bone: its foot measured at {}".format(
        tmap.joint_name("thigh_" + side), tmap.skeleton.joint_names[feet.standing_joint(tmap, side)])
        for side in SIDES if not tmap.has("foot_" + side)]


# Vertices extreme in this many directions stand for a foot (its hull, nearly): the lowest point of a
# 26 cm foot however it turns is then missed by at most 1.2 mm (4.1 mm at 96: Ybot's toe 3.7 mm under
# the floor in g1_02 was reported on it, against the report's 3 mm per 1.7 m tolerance).
SUPPORT_DIRECTIONS = 384


def _glb_feet(document: gd.Document, info: RetargetInfo, with_mesh: bool, source: str,
              node_of: Optional[Dict[str, int]] = None) -> _Feet:
    """Feet measured in a written .glb by the glTF rules alone: node matrices from the file's nodes and
    animation, skinned vertices as sum(w * world(joint) * inverseBind * v) (meshes hanging under a joint
    node move with it); the bind pose is where every joint matrix world(joint) * inverseBind equals the
    skin's top joint's, as saved. `node_of`: which node is which joint (written_nodes), else by name."""
    gltf = document.gltf
    nodes = gltf.get("nodes", [])
    by_name = node_of if node_of is not None else character_glb.nodes_by_name(gltf)
    joint_of = {node: name for name, node in by_name.items()}
    tmap = info.target_map
    parents = gd.node_parents(gltf)
    static = gd.world_matrices(gltf, {})
    children = gd.children_of(parents)

    def below(node: int) -> List[int]:
        return gd.subtree(children, node)

    skins = gltf.get("skins", [])
    hips_node = by_name[tmap.joint_name("hips")]
    skin_index = next((i for i, skin in enumerate(skins) if hips_node in skin.get("joints", [])), 0)
    inverse = {}
    bind_space: Dict[int, Matrix4] = {}
    for i, skin in enumerate(skins):
        joints = skin.get("joints", [])
        ibm = document.accessor(skin["inverseBindMatrices"]) if "inverseBindMatrices" in skin else None
        if ibm is not None and (len(ibm) != len(joints) or not all(len(m) == 16 and gd.is_finite(m) for m in ibm)):
            ibm = None  # a skin the file gets wrong: its vertices are not measured
            joints = []
        inverse[i] = ibm
        if not joints:
            continue
        in_skin = set(joints)
        top = next((slot for slot, n in enumerate(joints) if parents[n] not in in_skin), 0)
        bind_space[i] = gd.multiply4(static[joints[top]], ibm[top]) if ibm else static[joints[top]]
    main_joints = skins[skin_index]["joints"] if skins else []
    main_ibm = inverse.get(skin_index)

    def bind_matrix(node: int) -> Matrix4:
        if main_ibm and node in main_joints:
            try:
                return gd.multiply4(bind_space[skin_index], gd.invert4(main_ibm[main_joints.index(node)]))
            except ValueError:  # a singular inverse bind matrix: the node as saved
                return static[node]
        if parents[node] >= 0 and main_ibm and parents[node] in main_joints:
            # A node outside the skin under a joint (a tip the retarget added) rides on its parent's bind.
            return gd.multiply4(bind_matrix(parents[node]), gd.node_local_matrix(nodes[node]))
        return static[node]

    def bind_of(node: int) -> Vec3:
        m = bind_matrix(node)
        return (m[12], m[13], m[14])

    foot_names = {side: tmap.skeleton.joint_names[feet.standing_joint(tmap, side)] for side in SIDES}
    bind = {part + "_" + side: bind_of(by_name[tmap.joint_name("thigh_" + side) if part == "thigh" else foot_names[side]])
            for part in ("thigh", "foot") for side in SIDES}
    foot_nodes = {side: below(by_name[foot_names[side]]) for side in SIDES}
    # The foot bone's far end: its first child joint (a node of the skeleton, not a mesh hanging there).
    skeleton = tmap.skeleton
    first_child = {side: skeleton.children(feet.standing_joint(tmap, side)) for side in SIDES}
    bone_toe = {side: bind_of(by_name[skeleton.joint_names[first_child[side][0]]]) for side in SIDES
                if first_child[side] and skeleton.joint_names[first_child[side][0]] in by_name}
    toe_nodes = {side: by_name[tmap.joint_name("toe_" + side)] if tmap.has("toe_" + side) else None for side in SIDES}
    # Vertices: (bind world, [(node, slot matrix index or None, weight)], rigid node or None)
    points: Dict[str, List[Tuple[Vec3, Sequence[float], List[Tuple[int, Optional[Sequence[float]], float]]]]] = {s: [] for s in SIDES}
    all_bind: List[Vec3] = []
    every: List[Tuple[Vec3, Sequence[float], List[Tuple[int, Optional[Sequence[float]], float]]]] = []
    rigid: Set[str] = set()  # sides whose sole the bone above a foot tip carries
    undecoded = False  # a Draco mesh was left out: no decoder
    if with_mesh:
        for index, node in enumerate(nodes):
            if "mesh" not in node:
                continue
            for primitive in gltf["meshes"][node["mesh"]].get("primitives", []):
                attributes = primitive.get("attributes", {})
                if draco.undecodable(primitive):
                    undecoded = True
                    continue
                if "POSITION" not in attributes:
                    continue
                vertices = document.accessor(attributes["POSITION"])
                if "skin" in node and "JOINTS_0" in attributes and "WEIGHTS_0" in attributes:
                    k = node["skin"]
                    if k not in bind_space or inverse.get(k) is None and "inverseBindMatrices" in skins[k]:
                        continue
                    joints = skins[k]["joints"]
                    ibm = inverse[k]
                    space = bind_space[k]
                    for v, js, ws in zip(vertices, document.accessor(attributes["JOINTS_0"]), document.accessor(attributes["WEIGHTS_0"])):
                        world = gd.apply4(space, v)
                        if not gd.is_finite(world):  # a vertex nowhere is no sole
                            continue
                        all_bind.append(world)
                        total = sum(ws)
                        if not 0.0 <= total < math.inf:
                            continue
                        terms = [(joints[int(j)], ibm[int(j)] if ibm else None, w / total) for j, w in zip(js, ws)
                                 if w > 0.0 and 0 <= int(j) < len(joints)] if total > 0 else []
                        every.append((world, v, terms))
                elif "skin" not in node:
                    for v in vertices:
                        world = gd.apply4(static[index], v)
                        if not gd.is_finite(world):
                            continue
                        all_bind.append(world)
                        every.append((world, v, [(index, None, 1.0)]))
        for side in SIDES:
            carriers = set(foot_nodes[side])
            points[side] = [p for p in every if sum(w for n, _, w in p[2] if n in carriers) >= 0.5]
            foot_node = foot_nodes[side][0]
            if not points[side] and parents[foot_node] >= 0:
                # A one-bone leg, or a shin with no foot bone, ends at a tip no vertex follows: the bone's
                # own vertices carry its sole (it rocks on it as one piece: its slide is measured there).
                carriers = set(below(parents[foot_node]))
                points[side] = [p for p in every if sum(w for n, _, w in p[2] if n in carriers) >= 0.5]
                rigid.add(side)
    notes = _footless(tmap)
    if with_mesh and not all(points[side] for side in SIDES):
        with_mesh = False
        if undecoded:
            notes.append("the mesh is Draco-compressed and the Draco decoder is not installed ({}): the floor measured at "
                         "the foot joints, not the soles".format(draco.INSTALL_HINT))
        else:
            notes.append("no skinned vertices on {}: the floor measured at the foot joints".format(
                " and ".join(foot_names[side] for side in SIDES if not points[side])))
    times, channels = gd.animation_keyframes(document)
    frames = len(times)
    heel: Dict[str, List[Vec3]] = {side: [] for side in SIDES}
    toe: Dict[str, List[Vec3]] = {side: [] for side in SIDES}
    lowest: Dict[str, List[float]] = {side: [] for side in SIDES}
    bind_toe: Dict[str, Vec3] = {}
    front: Dict[str, Optional[Tuple]] = {}
    soles: Dict[str, List[List[Vec3]]] = {}
    if with_mesh:
        rest_floor = min(p[0][1] for side in SIDES for p in points[side])
        height = max(p[1] for p in all_bind) - min(p[1] for p in all_bind)
        _add_heels(bind, tmap)
        choices = {side: _foot_choice([p[0] for p in points[side]], [max(p[2], key=lambda term: term[2])[0] for p in points[side]],
                                      bind["heel_" + side], height) for side in SIDES}
        for side in SIDES:  # the toe joint, or where the feet's mesh points (its long end), for the facing
            bind_toe[side] = bind_of(toe_nodes[side]) if toe_nodes[side] is not None else points[side][choices[side][2]][0]
        yaw = _facing_at_bind(bind, bind_toe, bone_toe, True)[0]
        for side, (chosen, sole, _) in choices.items():
            front[side] = points[side][_front_of([p[0] for p in points[side]], sole, bind["foot_" + side], yaw)]
            points[side] = [points[side][i] for i in chosen]
    else:
        # The character's own joints below each foot (not the tips the retarget added to its file).
        foot_nodes = {side: [n for n in nodes_below if n == nodes_below[0] or _name_of(nodes, n, joint_of) != _name_of(nodes, parents[n], joint_of) + "_tip"]
                      for side, nodes_below in foot_nodes.items()}
        # The skin's joints and every foot node (a leg's tip joint is in no skin) at bind.
        joint_bind = [bind_of(n) for n in main_joints] + [bind_of(n) for side in SIDES for n in foot_nodes[side]]
        rest_floor = min(bind_of(n)[1] for side in SIDES for n in foot_nodes[side])
        height = max(p[1] for p in joint_bind) - min(p[1] for p in joint_bind)
        for side in SIDES:
            tip_node = toe_nodes[side] if toe_nodes[side] is not None else foot_nodes[side][-1]
            bind_toe[side] = bind_of(tip_node)
    one_bone = _one_bone_legs(tmap) | rigid
    # Only the nodes the feet are measured on (and, inside world_matrices, their ancestors) are evaluated
    # each frame: every node of a 700-bone rig, per frame, was most of its retarget's time.
    measured = {n for side in SIDES for n in foot_nodes[side]} | {n for n in toe_nodes.values() if n is not None}
    if with_mesh:
        measured |= {node for side in SIDES for _, _, terms in list(points[side]) + [front[side]] for node, _, _ in terms}  # type: ignore[operator]
    measured_nodes = sorted(measured)
    for matrices in gd.keyframe_world_matrices(gltf, channels, frames, measured_nodes, parents):
        world: List[Optional[Sequence[float]]] = [None] * len(nodes)
        for node, matrix in zip(measured_nodes, matrices):
            world[node] = matrix
        joint_matrices: Dict = {}
        for side in SIDES:
            foot_node = foot_nodes[side][0]
            heel[side].append((world[foot_node][12], world[foot_node][13], world[foot_node][14]))
            if with_mesh:
                posed = [_skin(world, v, terms, joint_matrices) for _, v, terms in points[side]]
                lowest[side].append(min(p[1] for p in posed))
                if side in one_bone:
                    soles.setdefault(side, []).append(posed)
                toe[side].append(_skin(world, front[side][1], front[side][2], joint_matrices) if toe_nodes[side] is None else  # type: ignore[index]
                                 tuple(world[toe_nodes[side]][12:15]))  # type: ignore[index]
            else:
                lowest[side].append(min(world[n][13] for n in foot_nodes[side]))
                tip_node = toe_nodes[side] if toe_nodes[side] is not None else foot_nodes[side][-1]
                toe[side].append(tuple(world[tip_node][12:15]))  # type: ignore[arg-type]
    return _Feet(heel, toe, lowest, rest_floor, height, bind, bind_toe, with_mesh, notes, bone_toe, soles)


def _foot_choice(bind_points: Sequence[Vec3], carriers: Sequence[object], ankle: Vec3,
                 height: float) -> Tuple[List[int], List[int], int]:
    """Which of a foot's vertices (at bind) the report follows: per bone that carries them most (a toe
    turns against its foot), those farthest out in SUPPORT_DIRECTIONS directions (the lowest point of the
    foot however it turns is one of them, nearly); and the sole (vertices within 2% of the height of the
    lowest) with its long end, the sole vertex farthest from the ankle seen from above: where the feet's
    mesh points for the facing (`_facing_at_bind`), which is not always the toe (a mesh behind its ankle)."""
    groups: Dict[object, List[int]] = {}
    for i, carrier in enumerate(carriers):
        groups.setdefault(carrier, []).append(i)
    chosen = set()
    directions = sphere_directions(SUPPORT_DIRECTIONS)
    for members in groups.values():
        points = [bind_points[i] for i in members]
        for dx, dy, dz in directions:
            reach = [x * dx + y * dy + z * dz for x, y, z in points]
            chosen.add(members[reach.index(max(reach))])
    lowest = min(p[1] for p in bind_points)
    sole = [i for i, p in enumerate(bind_points) if p[1] <= lowest + 0.02 * height]
    long_end = max(sole, key=lambda i: math.hypot(bind_points[i][0] - ankle[0], bind_points[i][2] - ankle[2]))
    return sorted(chosen), sole, long_end


def _front_of(bind_points: Sequence[Vec3], sole: Sequence[int], ankle: Vec3, yaw: float) -> int:
    """The sole's front, where a toe contact is measured without a toe bone (a rigid foot rolls on it):
    `soles.sole_front` along the report's own facing at bind (`yaw`, from +Z)."""
    return sole[soles.sole_front([bind_points[i] for i in sole], ankle, (math.sin(yaw), 0.0, math.cos(yaw)))]


def _name_of(nodes, index: int, joint_of: Dict[int, str]) -> str:
    """The joint's name of node `index` (joint_of), else the node's own; "" above the top."""
    return (joint_of.get(index) or str(nodes[index].get("name"))) if index >= 0 else ""


def _skin(world: Sequence[Sequence[float]], v: Sequence[float],
          terms: Sequence[Tuple[int, Optional[Sequence[float]], float]], joint_matrices: Dict) -> Vec3:
    """sum(w * world(node) * inverseBind * v); `joint_matrices` caches the products of one frame
    (gd.apply4 written out: it runs per foot vertex per frame)."""
    x = y = z = 0.0
    vx, vy, vz = v[0], v[1], v[2]
    for node, inverse_bind, weight in terms:
        key = (node, id(inverse_bind))
        m = joint_matrices.get(key)
        if m is None:
            m = world[node] if inverse_bind is None else gd.multiply4(world[node], inverse_bind)
            joint_matrices[key] = m
        x += weight * (m[0] * vx + m[4] * vy + m[8] * vz + m[12])
        y += weight * (m[1] * vx + m[5] * vy + m[9] * vz + m[13])
        z += weight * (m[2] * vx + m[6] * vy + m[10] * vz + m[14])
    return (x, y, z)
