"""Issue 40's figures of the legs, judged on a written .glb and its source clip with pygltflib + numpy alone
(nothing here imports kimodo_rig, nor shares its map, floor or contact plan):

- Kimodo's foot skate, as kimodo/metrics/foot_skate.py `foot_skate_from_pred_contacts` defines it: the ankle
  joint's speed on the clip's heel-contact frames and the toe joint's on its toe-contact frames, each from
  that frame to the next (the last frame has none), whole 3D steps, averaged over those joint-frames; in cm a
  frame and m/s, per 1.7 m of character; beside it the same figure of the clip's own posed_joints. The
  character's joints are the bones the test BUILT (`Character.parts`), never what our mapper chose; a foot
  without a toe bone is followed at its sole's front vertex (feet_judge.sole_front, along the facing the rig
  was built with), a leg without a foot bone at a point of its own choosing (`Character.points`).
- planted soles: each foot's lowest vertex (numpy linear blend skinning) on the frames either of its
  contacts is on, within 1 cm of the rest floor (the INPUT character's lowest foot vertex at rest); no foot
  or hand vertex below -2 cm (per 1.7 m).
- limb segment turn: per frame step, the angle each thigh / shin / upper arm / forearm segment turns, less
  the angle the clip's own segment turns at that step; the worst at most 10 deg.
- frame rate: `resample_npz` writes the clip at another rate (local rotations slerped, the root lerped,
  contacts by nearest time); `frame_rate_distances` compares two outputs' joints at the instants both have a
  key at: mean <= 1 cm, worst <= 3 cm per 1.7 m.
Kimodo's 6-channel contacts (heel, toe, toe end per foot) count the toe as down when its toe or toe end is.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple, Union

import numpy as np

from feet_judge import Skinned, _carried_by, _descendants, _height, _node_world_static, sole_front
from gltf_judge import SKELETONS, Glb, matrices_to_quats, quats_to_matrices

REFERENCE_HEIGHT_M = 1.7
# The bars (lengths per 1.7 m of character).
PLANTED_CM = 1.0  # a planted sole's lowest vertex from the rest floor
SINK_CM = 2.0  # no foot or hand vertex further under the rest floor
TURN_DEG = 10.0  # a limb segment's turn in a frame step beyond the source's own
FRAME_RATE_MEAN_CM, FRAME_RATE_WORST_CM = 1.0, 3.0  # joints at common instants, another rate against 30 fps
SAME_INSTANT_S = 1e-4  # key times are float32 in the file

# The clip's own joints of each limb part, per skeleton (by joint count), sides named as Kimodo names them.
SOURCE_PARTS = {
    "somaskel30": {"thigh": "{Side}Leg", "calf": "{Side}Shin", "foot": "{Side}Foot", "upperarm": "{Side}Arm",
                   "lowerarm": "{Side}ForeArm", "hand": "{Side}Hand"},
    "g1skel34": {"thigh": "{side}_hip_roll_skel", "calf": "{side}_knee_skel", "foot": "{side}_ankle_pitch_skel",
                 "upperarm": "{side}_shoulder_roll_skel", "lowerarm": "{side}_elbow_skel", "hand": "{side}_wrist_roll_skel"},
}
SOURCE_PARTS["somaskel77"] = SOURCE_PARTS["somaskel30"]
SKELETON_BY_JOINTS = {30: "somaskel30", 34: "g1skel34", 77: "somaskel77"}
LEG, ARM = ("thigh", "calf", "foot"), ("upperarm", "lowerarm", "hand")
SIDES = ("l", "r")

Point = Union[str, Tuple[str, Tuple[float, float, float]]]  # a node, or a node and a point in its frame


@dataclass(frozen=True)
class Character:
    """A character as the test built it: `target` for --target, `rig` the input the judge reads at bind,
    `parts` {thigh_l, calf_l, foot_l, toe_l, upperarm_l, lowerarm_l, hand_l, ... _r: output node}; a part
    missing is a bone the rig lacks (no toe: its sole's front; no calf: a one-bone leg); `points` a part
    carried by a bone at a point of its frame (a block leg's ankle); `feet` / `hands` {side: node whose
    subtree's vertices are the foot / hand}; `facing_deg` the facing it was built with (0: +Z)."""
    target: str
    rig: Path
    parts: Dict[str, str]
    feet: Dict[str, str]
    hands: Dict[str, str]
    facing_deg: float = 0.0
    points: Dict[str, Tuple[str, Tuple[float, float, float]]] = field(default_factory=dict)


@dataclass
class Clip:
    skeleton: str
    joint_names: list
    posed: np.ndarray  # (frames, joints, 3)
    contacts: np.ndarray  # (frames, 4) bool: left heel, left toe, right heel, right toe
    fps: float

    def joint(self, name: str) -> np.ndarray:
        return self.posed[:, self.joint_names.index(name)]


def _side(pattern: str, s: str) -> str:
    side = "Left" if s == "l" else "Right"
    return pattern.format(Side=side, side=side.lower())


def four_contacts(contacts: np.ndarray) -> np.ndarray:
    contacts = np.asarray(contacts).astype(bool)
    if contacts.shape[1] == 6:  # heel, toe, toe end per foot
        return np.stack([contacts[:, 0], contacts[:, 1] | contacts[:, 2], contacts[:, 3], contacts[:, 4] | contacts[:, 5]], 1)
    return contacts


def read_clip(path: Path, fps: float = 30.0) -> Clip:
    """Kimodo's NPZ (either layout): its posed joints (or numpy FK of its local rotations) and contacts."""
    with np.load(str(path), allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    joints = (arrays.get("posed_joints") if "posed_joints" in arrays else arrays["local_rot_mats"]).shape[1]
    skeleton = SKELETON_BY_JOINTS[joints]
    record = json.loads((SKELETONS / (skeleton + ".json")).read_text(encoding="utf-8"))
    if "posed_joints" in arrays:
        posed = arrays["posed_joints"].astype(np.float64)
    else:
        from gltf_judge import forward_kinematics
        posed = forward_kinematics(record["parents"], record["rest_local_offsets_m"],
                                   matrices_to_quats(arrays["local_rot_mats"]), arrays["root_positions"])
    return Clip(skeleton, record["joint_names"], posed, four_contacts(arrays["foot_contacts"]), fps)


def kimodo_skate(ankles: np.ndarray, toes: np.ndarray, contacts: np.ndarray, fps: float) -> float:
    """foot_skate_from_pred_contacts in m/s: ankles, toes (frames, 2, 3) left, right; contacts (frames, 4)."""
    joints = np.stack([ankles[:, 0], toes[:, 0], ankles[:, 1], toes[:, 1]], 1)
    speed = np.linalg.norm(joints[1:] - joints[:-1], axis=-1) * fps
    on = np.asarray(contacts[:len(joints) - 1]).astype(bool)
    return float(speed[on].mean()) if on.any() else 0.0


def source_skate(clip: Clip) -> float:
    record = json.loads((SKELETONS / (clip.skeleton + ".json")).read_text(encoding="utf-8"))
    groups = record["semantic_groups"]
    chains = [groups["left_foot_chain"], groups["right_foot_chain"]]
    ankles = np.stack([clip.joint(c[0]) for c in chains], 1)
    toes = np.stack([clip.joint(c[1]) for c in chains], 1)
    return kimodo_skate(ankles, toes, clip.contacts, clip.fps)


def segment_turns(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """(frames - 1,) degrees the segment start -> end turns from each frame to the next."""
    d = ends - starts
    d = d / np.linalg.norm(d, axis=-1, keepdims=True)
    return np.degrees(np.arccos(np.clip(np.sum(d[1:] * d[:-1], -1), -1.0, 1.0)))


class Output:
    """A written .glb read with pygltflib: world matrices per key and its skinned vertices."""

    def __init__(self, path: Path) -> None:
        self.skinned = Skinned(path)
        self.glb = self.skinned.glb
        self.world = self.glb.animated_world_matrices()
        self.by_name = {n.name: i for i, n in enumerate(self.glb.gltf.nodes)}

    def point(self, point: Point) -> np.ndarray:
        if isinstance(point, str):
            return self.world[:, self.by_name[point], :3, 3]
        node, local = point
        return (self.world[:, self.by_name[node]] @ np.append(local, 1.0))[:, :3]

    def vertices(self, node: str) -> np.ndarray:
        return self.skinned.skin(self.world, _carried_by(self.skinned, _descendants(self.glb, node)))


def _part(character: Character, name: str) -> Optional[Point]:
    return character.parts.get(name) or character.points.get(name)


def figures(output_path: Path, character: Character, clip: Clip) -> dict:
    """Every figure of the module's docstring for one output, lengths in cm per 1.7 m of character."""
    rig = Skinned(character.rig)
    static = _node_world_static(rig.glb)
    height = _height(rig)
    per = 100.0 * REFERENCE_HEIGHT_M / height  # metres of this character -> cm per 1.7 m
    rest_feet = {s: rig.skin(static[None], _carried_by(rig, _descendants(rig.glb, character.feet[s])))[0] for s in SIDES}
    floor = min(v[:, 1].min() for v in rest_feet.values())
    out = Output(output_path)
    frames = len(clip.contacts)
    if out.world.shape[0] != frames:
        raise AssertionError("{}: {} keys for the clip's {} frames".format(output_path, out.world.shape[0], frames))
    contacts = clip.contacts[:frames]
    feet = {s: out.vertices(character.feet[s])[:frames] for s in SIDES}
    hands = {s: out.vertices(character.hands[s])[:frames] for s in SIDES if character.hands.get(s)}

    ankles, toes = [], []
    facing = np.radians(character.facing_deg)
    forward = (np.sin(facing), 0.0, np.cos(facing))
    for s in SIDES:
        ankles.append(out.point(_part(character, "foot_" + s))[:frames])
        toe = _part(character, "toe_" + s)
        if toe is not None:
            toes.append(out.point(toe)[:frames])
        else:  # the sole's front vertex at rest, followed (the same vertices in the output)
            ankle_rest = static[_index(rig.glb, character.feet[s]), :3, 3]
            if len(rest_feet[s]) != feet[s].shape[1]:
                raise AssertionError("{}: the output's foot has other vertices than the rig's".format(output_path))
            toes.append(feet[s][:, sole_front(rest_feet[s], ankle_rest, forward, height)])
    ankles, toes = np.stack(ankles, 1), np.stack(toes, 1)
    skate = kimodo_skate(ankles, toes, contacts, clip.fps) * REFERENCE_HEIGHT_M / height
    own = source_skate(clip)

    planted, lowest = 0.0, np.inf
    for k, s in enumerate(SIDES):
        low = feet[s][..., 1].min(1) - floor
        on = contacts[:, 2 * k] | contacts[:, 2 * k + 1]
        if on.any():
            planted = max(planted, float(np.abs(low[on]).max()))
        lowest = min(lowest, float(low.min()))
    for vertices in hands.values():
        if vertices.shape[1]:
            lowest = min(lowest, float(vertices[..., 1].min() - floor))

    turn, where = 0.0, ""
    source_names = SOURCE_PARTS[clip.skeleton]
    for chain in (LEG, ARM):
        for s in SIDES:
            present = [p for p in chain if _part(character, p + "_" + s) is not None]
            for a, b in zip(present[:-1], present[1:]):
                ours = segment_turns(out.point(_part(character, a + "_" + s))[:frames],
                                     out.point(_part(character, b + "_" + s))[:frames])
                theirs = segment_turns(clip.joint(_side(source_names[a], s))[:frames],
                                       clip.joint(_side(source_names[b], s))[:frames])
                extra = ours - theirs
                worst = int(np.argmax(extra))
                if extra[worst] > turn:
                    turn, where = float(extra[worst]), "{}-{}_{} at frame {}".format(a, b, s, worst)
    return {"skate_cm": 100.0 * skate / clip.fps, "skate_m_s": skate, "source_skate_cm": 100.0 * own / clip.fps,
            "source_skate_m_s": own, "planted_cm": planted * per, "lowest_cm": lowest * per,
            "turn_deg": turn, "turn_where": where, "height_m": height}


def character_height(character: Character) -> float:
    """The INPUT character's height (its mesh at rest), metres."""
    return _height(Skinned(character.rig))


def _index(glb: Glb, name: str) -> int:
    return [n.name for n in glb.gltf.nodes].index(name)


def passes(got: dict) -> Dict[str, bool]:
    return {"skate": got["skate_cm"] <= got["source_skate_cm"], "planted": got["planted_cm"] <= PLANTED_CM,
            "lowest": got["lowest_cm"] >= -SINK_CM, "turn": got["turn_deg"] <= TURN_DEG}


# --- frame rate ------------------------------------------------------------------------------------------

def slerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Per row, the unit quaternion t of the way from a to b (the shorter way), xyzw; t broadcasts."""
    dot = np.sum(a * b, -1, keepdims=True)
    b = np.where(dot < 0.0, -b, b)
    theta = np.arccos(np.clip(np.abs(dot), -1.0, 1.0))
    small = theta < 1e-6
    sin = np.where(small, 1.0, np.sin(theta))
    wa = np.where(small, 1.0 - t, np.sin((1.0 - t) * theta) / sin)
    wb = np.where(small, t, np.sin(t * theta) / sin)
    out = wa * a + wb * b
    return out / np.linalg.norm(out, axis=-1, keepdims=True)


def resample_npz(source: Path, fps: float, target: Path, source_fps: float = 30.0) -> Path:
    """The clip at another rate, in Kimodo's current NPZ layout (local_rot_mats, root_positions,
    foot_contacts): local rotations (G[parent]^T G[j]) slerped, the root lerped between the two nearest
    frames, contacts of the nearest frame in time."""
    with np.load(str(source), allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    if "local_rot_mats" in arrays:
        local, roots = arrays["local_rot_mats"].astype(np.float64), arrays["root_positions"].astype(np.float64)
    else:
        world = arrays["global_rot_mats"].astype(np.float64)
        record = json.loads((SKELETONS / (SKELETON_BY_JOINTS[world.shape[1]] + ".json")).read_text(encoding="utf-8"))
        local = world.copy()
        for joint, parent in enumerate(record["parents"]):
            if parent >= 0:
                local[:, joint] = np.swapaxes(world[:, parent], -1, -2) @ world[:, joint]
        roots = arrays["posed_joints"][:, 0].astype(np.float64)
    frames = local.shape[0]
    count = int(np.floor((frames - 1) / source_fps * fps + 1e-9)) + 1
    at = np.arange(count) * source_fps / fps  # in source frames
    low = np.minimum(np.floor(at + 1e-9).astype(int), frames - 1)
    high = np.minimum(low + 1, frames - 1)
    t = np.clip(at - low, 0.0, 1.0)
    quats = matrices_to_quats(local)
    q = slerp(quats[low], quats[high], t[:, None, None])
    r = roots[low] * (1.0 - t[:, None]) + roots[high] * t[:, None]
    nearest = np.minimum(np.floor(at + 0.5).astype(int), frames - 1)
    contacts = np.asarray(arrays["foot_contacts"])[nearest]
    target.parent.mkdir(parents=True, exist_ok=True)
    np.savez(str(target), local_rot_mats=quats_to_matrices(q).astype(np.float32), root_positions=r.astype(np.float32),
             foot_contacts=contacts)
    return target


def frame_rate_distances(base: Tuple[np.ndarray, np.ndarray], other: Tuple[np.ndarray, np.ndarray],
                         height_m: float) -> dict:
    """base, other: (key times (frames,), joint positions (frames, joints, 3)), the same joints in the same
    order. Compared at the instants both have a key at: mean and worst distance, cm per 1.7 m."""
    base_times, base_positions = base
    other_times, other_positions = other
    index = np.clip(np.searchsorted(other_times, base_times), 0, len(other_times) - 1)
    before = np.clip(index - 1, 0, len(other_times) - 1)
    index = np.where(np.abs(other_times[before] - base_times) < np.abs(other_times[index] - base_times), before, index)
    common = np.abs(other_times[index] - base_times) < SAME_INSTANT_S
    if not common.any():
        raise AssertionError("no common instants")
    distance = np.linalg.norm(base_positions[common] - other_positions[index[common]], axis=-1)
    distance = distance * 100.0 * REFERENCE_HEIGHT_M / height_m
    worst = np.unravel_index(np.argmax(distance), distance.shape)
    return {"mean_cm": float(distance.mean()), "worst_cm": float(distance.max()), "instants": int(common.sum()),
            "worst_joint": int(worst[1]), "worst_time_s": float(base_times[common][worst[0]])}


def joint_track(path: Path) -> Tuple[np.ndarray, np.ndarray, list]:
    """(key times, each skin joint's world position per key, joint names) of a written .glb."""
    glb = Glb(path)
    return glb.key_times(), glb.joint_world_positions(), glb.joint_names


# --- the characters the tests build (tests/test_feet_judges.py, tests/test_feet_variants.py, rig_variants) --

MANNEQUIN_PARTS = {"thigh": "thigh_{s}", "calf": "calf_{s}", "foot": "foot_{s}", "toe": "ball_{s}",
                   "upperarm": "upperarm_{s}", "lowerarm": "lowerarm_{s}", "hand": "hand_{s}"}
MIXAMO_PARTS = {"thigh": "mixamorig:{Side}UpLeg", "calf": "mixamorig:{Side}Leg", "foot": "mixamorig:{Side}Foot",
                "toe": "mixamorig:{Side}ToeBase", "upperarm": "mixamorig:{Side}Arm", "lowerarm": "mixamorig:{Side}ForeArm",
                "hand": "mixamorig:{Side}Hand"}
DRESS_PARTS = {"thigh": "UpperLeg.{S}", "calf": "LowerLeg.{S}", "foot": "Foot.{S}", "upperarm": "UpperArm.{S}",
               "lowerarm": "LowerArm.{S}", "hand": "Palm.{S}"}
ROBOT_PARTS = {"thigh": "UpperLeg{S}", "calf": "LowerLeg{S}", "foot": "Foot{S}", "upperarm": "UpperArm{S}",
               "lowerarm": "LowerArm{S}", "hand": "Palm2{S}"}


def named_parts(table: Dict[str, str], rename=lambda n: n, swap: bool = False, without: Sequence[str] = ()) -> Dict[str, str]:
    """{part_side: node}, sides the character's own (swap: the file names them the viewer's way round)."""
    out = {}
    for part, pattern in table.items():
        if part in without:
            continue
        for s in SIDES:
            named = ("r" if s == "l" else "l") if swap else s
            side = "Left" if named == "l" else "Right"
            out[part + "_" + s] = rename(pattern.format(s=named, S=named.upper(), Side=side))
    return out


def carried_point(rig: Path, bone: str, at: str) -> Tuple[str, Tuple[float, float, float]]:
    """(bone, where the node `at` sits in the bone's frame at rest in `rig`): a joint a variant dropped."""
    glb = Glb(rig)
    static = _node_world_static(glb)
    local = np.linalg.inv(static[_index(glb, bone)]) @ static[_index(glb, at)][:, 3]
    return bone, tuple(float(x) for x in local[:3])


def _simple(target: str, rig: Path, table: Dict[str, str], foot: str, hand: str, **options) -> Character:
    parts = named_parts(table, **{k: v for k, v in options.items() if k in ("rename", "swap", "without")})
    return Character(target, rig, parts, {s: parts[foot + "_" + s] for s in SIDES}, {s: parts[hand + "_" + s] for s in SIDES},
                     options.get("facing_deg", 0.0))


def build_characters(folder: Path, names: Optional[Sequence[str]] = None) -> Dict[str, Character]:
    """The characters by name, built into `folder` by the tests' own builders."""
    import rig_variants as rv
    import test_feet_judges as tfj
    import test_feet_variants as tfv

    builtin = Path(rv.__file__).resolve().parent.parent / "kimodo_rig" / "rigs"
    folder = Path(folder)

    def vrm_back():
        target, rig = tfj._vrm_back(folder)
        return _simple(target, rig, MANNEQUIN_PARTS, "foot", "hand", rename=tfj.ANONYMOUS.get, facing_deg=180.0)

    def from_builder(builder, table, hand="hand", **options):
        def make():
            target, rig = builder(folder)
            return _simple(target, rig, table, "foot", hand, **options)
        return make

    def mannequin_variant(name, build, **options):
        def builder(f):
            rig = rv.variant(rv.MANNEQUIN, f, name + ".glb", build)
            return str(rig), rig
        return from_builder(builder, MANNEQUIN_PARTS, **options)

    def footless_shins():
        rig = rv.variant(rv.MANNEQUIN, folder, "footless_shins.glb", rv.footless_shins)
        parts = named_parts(MANNEQUIN_PARTS, without=("foot", "toe"))
        points = {}
        for s in SIDES:
            points["foot_" + s] = carried_point(rv.MANNEQUIN, "calf_" + s, "foot_" + s)
            points["toe_" + s] = carried_point(rv.MANNEQUIN, "calf_" + s, "ball_" + s)
        return Character(str(rig), rig, parts, {s: "calf_" + s for s in SIDES}, {s: "hand_" + s for s in SIDES}, points=points)

    def one_bone_limbs():  # Kenney's blocky rigging: one bone hip to foot and shoulder to hand
        rig = rv.variant(rv.MANNEQUIN, folder, "one_bone_limbs.glb", rv.kenney_like)
        parts, points = {}, {}
        for s, side in (("l", "left"), ("r", "right")):
            leg, arm = "leg-" + side, "arm-" + side
            parts.update({"thigh_" + s: leg, "upperarm_" + s: arm})
            points.update({"foot_" + s: carried_point(rv.MANNEQUIN, "thigh_" + s, "foot_" + s),
                           "toe_" + s: carried_point(rv.MANNEQUIN, "thigh_" + s, "ball_" + s),
                           "hand_" + s: carried_point(rv.MANNEQUIN, "upperarm_" + s, "hand_" + s)})
        points = {k: ({"thigh": "leg-", "upperarm": "arm-"}[v[0].split("_")[0]] + ("left" if v[0].endswith("_l") else "right"), v[1])
                  for k, v in points.items()}
        return Character(str(rig), rig, parts, {s: "leg-" + side for s, side in (("l", "left"), ("r", "right"))},
                         {}, points=points)

    def robot(name=None, build=None, swap=False, facing_deg=0.0):
        def make():
            rig = rv.ROBOT if build is None else rv.variant(rv.ROBOT, folder, name + ".glb", build)
            judged = tfv._at_bind(rig, folder, (name or "robot") + "_judged")
            return _simple(str(rig), judged, ROBOT_PARTS, "foot", "lowerarm", swap=swap, facing_deg=facing_deg)
        return make

    makers = {
        "mannequin": lambda: _simple("mannequin", builtin / "mpfb2_game_engine.glb", MANNEQUIN_PARTS, "foot", "hand"),
        "mixamo": lambda: _simple("mixamo", builtin / "mpfb2_mixamo.glb", MIXAMO_PARTS, "foot", "hand"),
        "robot": robot(),
        "dress": lambda: _simple(str(rv.FEMALE_DRESS), rv.FEMALE_DRESS, DRESS_PARTS, "foot", "hand"),
        "toeless_mesh_behind": from_builder(tfj._feet_mesh_behind, MANNEQUIN_PARTS, without=("toe",)),
        "footless_shins": footless_shins,
        "one_bone_limbs": one_bone_limbs,
        "vrm_back": vrm_back,
        "facing_x": mannequin_variant("facing_x", lambda g: rv.turn_scene(g, 90.0), facing_deg=90.0),
        "mannequin_scaled": mannequin_variant("mannequin_scaled", lambda g: rv.wrap_armature(g, scale=0.3)),
        "mixamo_cm_z_up": from_builder(tfj._mixamo_centimetres_z_up, MIXAMO_PARTS),
        "giant": from_builder(tfv._giant, MIXAMO_PARTS),
        "ik_bones": from_builder(tfv._ik_bones, MANNEQUIN_PARTS),
        "dress_viewer_sides": from_builder(
            tfj._dress_viewer_sides_ik_feet, DRESS_PARTS, swap=True,
            rename=lambda n: {"Foot.L": "FootIK.L", "Foot.R": "FootIK.R"}.get(n, n)),
        "robot_small": robot("robot_small", lambda g: rv.scale_scene(g, 0.3)),
        "robot_back_viewer_sides": robot("robot_back_swapped", lambda g: (rv.turn_scene(g, 180.0), rv.swap_side_names(g)),
                                         swap=True, facing_deg=180.0),
    }
    folder.mkdir(parents=True, exist_ok=True)
    return {name: makers[name]() for name in (names or makers)}


CHARACTER_NAMES = ("mannequin", "mixamo", "robot", "dress", "toeless_mesh_behind", "footless_shins", "one_bone_limbs",
                   "vrm_back", "facing_x", "mannequin_scaled", "mixamo_cm_z_up", "giant", "ik_bones", "dress_viewer_sides",
                   "robot_small", "robot_back_viewer_sides")
