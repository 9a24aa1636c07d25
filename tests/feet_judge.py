"""An independent judge of feet and floor in a retargeted .glb: pygltflib reads the files, numpy skins the
OUTPUT's meshes (linear blend skinning with the file's own inverse bind matrices and animated joint
nodes). The rest floor is the lowest foot vertex of the INPUT character skinned in the pose its file
stores (the test rigs are saved at bind). Nothing here imports kimodo_rig."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from gltf_judge import Glb


def _node_world_static(glb: Glb) -> np.ndarray:
    from gltf_judge import trs_matrices

    nodes = glb.gltf.nodes
    t = np.array([n.translation or [0.0, 0.0, 0.0] for n in nodes], dtype=np.float64)[None]
    r = np.array([n.rotation or [0.0, 0.0, 0.0, 1.0] for n in nodes], dtype=np.float64)[None]
    s = np.array([n.scale or [1.0, 1.0, 1.0] for n in nodes], dtype=np.float64)[None]
    local = trs_matrices(t, r, s)[0]
    parents = glb.parents()
    world = np.empty_like(local)
    done = [False] * len(nodes)

    def solve(i: int) -> None:
        if done[i]:
            return
        if parents[i] >= 0:
            solve(parents[i])
            world[i] = world[parents[i]] @ local[i]
        else:
            world[i] = local[i]
        done[i] = True

    for i in range(len(nodes)):
        solve(i)
    return world


def _descendants(glb: Glb, name: str) -> List[int]:
    by_name = {n.name: i for i, n in enumerate(glb.gltf.nodes)}
    start = by_name[name]
    out, stack = [], [start]
    while stack:
        i = stack.pop()
        out.append(i)
        stack.extend(glb.gltf.nodes[i].children or [])
    return out


class Skinned:
    """The skinned vertices of every mesh node of a .glb, per frame (or in the stored pose)."""

    def __init__(self, path: Path) -> None:
        self.glb = Glb(path)
        self.parts = []  # (skin joints (nodes), inverse binds, positions, joints, weights)
        gltf = self.glb.gltf
        for index, node in enumerate(gltf.nodes):
            if node.mesh is None:
                continue
            if node.skin is None:  # a rigid mesh under a bone: one "joint", its own node, identity bind
                for primitive in gltf.meshes[node.mesh].primitives:
                    positions = self.glb.accessor(primitive.attributes.POSITION)
                    count = len(positions)
                    self.parts.append(([index], np.eye(4)[None], positions, np.zeros((count, 1), int), np.ones((count, 1))))
                continue
            skin = gltf.skins[node.skin]
            ibm = self.glb.accessor(skin.inverseBindMatrices)
            for primitive in gltf.meshes[node.mesh].primitives:
                a = primitive.attributes
                if a.POSITION is None or a.JOINTS_0 is None or a.WEIGHTS_0 is None:
                    continue
                weights = self.glb.accessor(a.WEIGHTS_0)
                if gltf.accessors[a.WEIGHTS_0].normalized:
                    weights = weights / float(np.iinfo(np.uint8 if gltf.accessors[a.WEIGHTS_0].componentType == 5121 else np.uint16).max)
                self.parts.append((list(skin.joints), ibm, self.glb.accessor(a.POSITION),
                                   self.glb.accessor(a.JOINTS_0).astype(int), weights))

    def vertices_on(self, node_set: Sequence[int]):
        """Per part: the vertices carried (weight >= 0.5) by these nodes."""
        wanted = set(node_set)
        masks = []
        for joints, _, _, influence, weights in self.parts:
            on = np.array([[joints[k] in wanted for k in row] for row in influence])
            masks.append((weights * on).sum(1) >= 0.5 * weights.sum(1))
        return masks

    def skin(self, world: np.ndarray, masks) -> np.ndarray:
        """(frames, n, 3) skinned positions of the masked vertices, given node world matrices (frames, nodes, 4, 4)."""
        out = []
        for (joints, ibm, positions, influence, weights), mask in zip(self.parts, masks):
            if not mask.any():
                continue
            joint_matrices = world[:, joints] @ ibm[None]  # (frames, joints, 4, 4)
            v = np.concatenate([positions[mask], np.ones((mask.sum(), 1))], 1)
            w = weights[mask] / weights[mask].sum(1, keepdims=True)
            m = np.einsum("vk,fvkij->fvij", w, joint_matrices[:, influence[mask]])
            out.append(np.einsum("fvij,vj->fvi", m, v)[..., :3])
        return np.concatenate(out, 1) if out else np.zeros((world.shape[0], 0, 3))


def sole_front(vertices: np.ndarray, ankle: np.ndarray, forward: Sequence[float], height: float) -> int:
    """Index of a toe-less foot's front among its vertices at rest: of the sole (within 2% of the height
    of the foot's lowest), the vertex a foot pitched toe-down stands on, found along the facing the rig
    was BUILT with (not the retarget's): reach ahead of the ankle, less the height over the sole (a 45 deg
    pitch) and a tenth of the distance aside from the ankle's line (the toe's middle, not a corner). Not
    the vertex farthest from the ankle: on a foot whose mesh hangs behind the ankle, that is the heel."""
    forward = np.array([forward[0], 0.0, forward[2]], dtype=np.float64)
    forward /= np.linalg.norm(forward)
    aside = np.array([forward[2], 0.0, -forward[0]])
    offset = (np.asarray(vertices, dtype=np.float64) - ankle) * [1.0, 0.0, 1.0]
    low = vertices[:, 1].min()
    score = offset @ forward - (vertices[:, 1] - low) - 0.1 * np.abs(offset @ aside)
    return int(np.argmax(np.where(vertices[:, 1] <= low + 0.02 * height, score, -np.inf)))


def feet_figures(output: Path, rig: Path, foot_names: Dict[str, str], toe_names: Dict[str, Optional[str]],
                 contacts: np.ndarray, forward: Sequence[float] = (0.0, 0.0, 1.0)) -> Dict[str, float]:
    """Rest floor, per-frame lowest sole of each foot (relative to the rest floor), and planted-foot
    speed (Kimodo's measure: the heel joint while the heel channel is on, the toe joint (or, without
    one, the foot's front sole vertex at rest, `sole_front` along the rig's `forward`, followed) while
    the toe channel is on; frames in contact at both ends).
    contacts: (frames, 4) left heel, left toe, right heel, right toe."""
    source = Skinned(rig)
    out = Skinned(output)
    static = _node_world_static(source.glb)[None]
    world = out.glb.animated_world_matrices()
    frames = world.shape[0]
    by_name = {n.name: i for i, n in enumerate(out.glb.gltf.nodes)}
    result: Dict[str, object] = {}
    rest_lows = []
    lows = {}
    speeds = []
    for s, side in enumerate(("l", "r")):
        nodes_in = _descendants(source.glb, foot_names[side])
        rest = source.skin(static, source.vertices_on(nodes_in))[0]
        rest_lows.append(rest[:, 1].min())
        masks = out.vertices_on(_descendants(out.glb, foot_names[side]))
        posed = out.skin(world, masks)
        lows[side] = posed[..., 1].min(1)
        heel = world[:, by_name[foot_names[side]], :3, 3]
        if toe_names.get(side):
            toe = world[:, by_name[toe_names[side]], :3, 3]
        else:  # no toe bone: the sole's front, chosen at rest (the same vertices of the same mesh in the output)
            ankle = static[0, nodes_in[0], :3, 3]
            if len(rest) != posed.shape[1]:
                raise AssertionError("{}: the output's foot has other vertices than the rig's".format(output))
            toe = posed[:, sole_front(rest, ankle, forward, _height(source))]
        for channel, point in ((0, heel), (1, toe)):
            on = contacts[:frames, 2 * s + channel].astype(bool)
            both = on[:-1] & on[1:]
            step = np.linalg.norm(point[1:] - point[:-1], axis=-1)
            speeds.extend(step[both].tolist())
    floor = min(rest_lows)
    result["rest_floor"] = floor
    result["lowest"] = {side: lows[side] - floor for side in lows}
    result["skate"] = float(np.mean(speeds)) if speeds else 0.0
    result["height"] = _height(source)
    return result  # type: ignore[return-value]


def _height(skinned: Skinned) -> float:
    static = _node_world_static(skinned.glb)[None]
    everything = skinned.skin(static, [np.ones(len(p[2]), bool) for p in skinned.parts])[0]
    return float(everything[:, 1].max() - everything[:, 1].min())


# --- the numpy judge of tests/test_feet_judges.py's cases ---------------------------------------------------

def _carried_by(skinned: Skinned, nodes: Sequence[int]):
    """Per part: the vertices carried at least half by these nodes (vectorised Skinned.vertices_on)."""
    wanted = np.array(sorted(set(nodes)))
    masks = []
    for joints, _, _, influence, weights in skinned.parts:
        on = np.isin(np.asarray(joints)[influence], wanted)
        total = weights.sum(1)
        masks.append((total > 0) & ((weights * on).sum(1) >= 0.5 * total))
    return masks


def judge_case(item: dict) -> dict:
    """What tests/blender/feet_judge.py and tests/node/feet_judge.mjs report for one case of their SPEC
    ({"rest": ..., "output": ...}), by numpy skinning of the files as pygltflib reads them: the INPUT
    character in the pose its file stores (the test rigs are saved at bind), the OUTPUT at every key.
    Rigid meshes under a bone count as that bone's vertices (RobotExpressive's feet are such meshes)."""
    source = Skinned(Path(item["rig"]))
    static = _node_world_static(source.glb)
    by_name = {n.name: i for i, n in enumerate(source.glb.gltf.nodes)}
    everything = source.skin(static[None], [np.ones(len(p[2]), bool) for p in source.parts])[0]
    height = float(np.ptp(everything[:, 1]))
    feet = {}
    for side, foot in item["feet"].items():
        vertices = source.skin(static[None], _carried_by(source, _descendants(source.glb, foot)))[0]
        toe = item["toes"].get(side)
        feet[side] = {"vertices": vertices.tolist(), "heel": static[by_name[foot], :3, 3].tolist(),
                      "toe": static[by_name[toe], :3, 3].tolist() if toe else None}
    carried = {name: (np.linalg.inv(static[by_name[c["bone"]]]) @ np.append(c["at"], 1.0)).tolist()
               for name, c in item.get("carried", {}).items()}
    points = {name: static[by_name[name], :3, 3].tolist() for name in item["points"]}
    points.update({name: list(c["at"]) for name, c in item.get("carried", {}).items()})  # carried points at rest too
    rest = {"height": height, "feet": feet, "meshes": len(source.parts), "carried": carried, "points": points}

    out = Skinned(Path(item["output"]))
    world = out.glb.animated_world_matrices()[:item["frames"]]
    names = {n.name: i for i, n in enumerate(out.glb.gltf.nodes)}
    points = {name: world[:, names[name], :3, 3].tolist() for name in item["points"]}
    for name, local in carried.items():
        points[name] = (world[:, names[item["carried"][name]["bone"]]] @ np.asarray(local))[:, :3].tolist()
    lowest, front = {}, {}
    for side, foot in item["feet"].items():
        posed = out.skin(world, _carried_by(out, _descendants(out.glb, foot)))
        lowest[side] = posed[..., 1].min(1).tolist()
        # The sole's front (where a toe contact is measured without a toe bone): `sole_front` AT REST along
        # the facing the rig was built with, followed (the same vertex of the same mesh in the output), as
        # Blender's and three's judges choose it on the input at rest in their own scenes.
        at_rest = np.asarray(feet[side]["vertices"])
        if len(at_rest) != posed.shape[1]:
            raise AssertionError("{}: the output's foot has other vertices than the rig's".format(item["output"]))
        chosen = sole_front(at_rest, np.asarray(feet[side]["heel"]), item.get("forward", (0.0, 0.0, 1.0)), height)
        front[side] = posed[:, chosen].tolist()
    hand_lowest = {side: out.skin(world, _carried_by(out, _descendants(out.glb, hand)))[..., 1].min(1).tolist()
                   for side, hand in item.get("hands", {}).items()}
    return {"rest": rest, "output": {"lowest": lowest, "front": front, "points": points, "hand_lowest": hand_lowest,
                                     "meshes": len(out.parts), "duration": float(out.glb.key_times()[-1]),
                                     "has_action": True}}
