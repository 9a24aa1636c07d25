"""What a preview shows, gathered once for the SVG and the HTML: the motion's joints at every frame, the
retargeted character's (when a target is given), headings, foot contacts, constraint markers, and the
health lines `inspect` or `retarget` print."""
from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence, Set, Tuple

from .. import naming, skeletons
from ..errors import KimodoError
from ..formats.amass import rotation_vector_to_quat
from ..model import Motion
from ..ops.derived_channels import detect_foot_contacts, root_headings
from ..ops.fk import pose_globals, world_positions
from ..ops.summary import summarize
from ..rotations import Vec3

# A constraint marker on the floor plan: x, y, z, kind, frame.
Marker = Tuple[float, float, float, str, int]


@dataclass
class PreviewScene:
    motion: Motion
    title: str
    positions: List[List[Vec3]]
    headings: List[Optional[Tuple[float, float]]]  # forward on the floor, (X, Z), per frame
    contacts: Optional[Sequence[float]]  # 4 a frame: left heel, left toe, right heel, right toe
    contacts_from_file: bool
    report_lines: List[str]
    character: Optional[Motion] = None
    character_label: str = ""
    character_positions: List[List[Vec3]] = field(default_factory=list)
    character_glb: bytes = b""
    markers: List[Marker] = field(default_factory=list)
    constrained_frame_kinds: Set[Tuple[int, str]] = field(default_factory=set)

    @property
    def constrained_frames(self) -> Set[int]:
        return {frame for frame, _ in self.constrained_frame_kinds}


def _headings(motion: Motion, positions: List[List[Vec3]]) -> List[Optional[Tuple[float, float]]]:
    if motion.skeleton.name not in skeletons.BUILTIN:
        return [None] * motion.frame_count
    # Kimodo's heading is (cos a, sin a) of the angle whose forward on the floor is (sin a, cos a) in (X, Z).
    return [(sine, cosine) for cosine, sine in root_headings(motion.skeleton, positions)]


def _contacts(motion: Motion, positions: List[List[Vec3]]) -> Tuple[Optional[Sequence[float]], bool]:
    if motion.foot_contacts is not None:
        return motion.foot_contacts, True
    if motion.skeleton.name in skeletons.BUILTIN:
        return detect_foot_contacts(motion.skeleton, positions, motion.fps), False
    return None, False


def _constraint_markers(path: str, motion: Motion) -> Tuple[List[Marker], Set[Tuple[int, str]]]:
    """Markers from a Kimodo constraints.json: root waypoints, and the constrained joints of keyframe,
    hand, foot and end-effector entries placed by forward kinematics of the constraint's own pose."""
    try:
        entries = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise KimodoError("{}: not a readable constraints file ({})".format(path, error)) from error
    if isinstance(entries, dict) and isinstance(entries.get("constraints"), list):
        entries = entries["constraints"]
    if not isinstance(entries, list):
        raise KimodoError("{}: a constraints file holds a list of entries".format(path))
    markers: List[Marker] = []
    frames: Set[Tuple[int, str]] = set()
    skeleton = motion.skeleton
    effectors = {"left-hand": ["LeftHand"], "right-hand": ["RightHand"], "left-foot": ["LeftFoot"],
                 "right-foot": ["RightFoot"]}
    for index, entry in enumerate(entries):
        try:
            kind = str(entry["type"])
            indices = [int(f) for f in entry["frame_indices"]]
            for k, frame in enumerate(indices):
                frames.add((frame, kind))
                if kind == "root2d":
                    x, z = (float(v) for v in entry["smooth_root_2d"][k])
                    markers.append((x, 0.0, z, kind, frame))
                    continue
                rotations = entry.get("local_joints_rot")
                roots = entry.get("root_positions")
                if rotations is None or roots is None or len(rotations[k]) != skeleton.joint_count:
                    continue
                local = [rotation_vector_to_quat([float(c) for c in v]) for v in rotations[k]]
                positions = pose_globals(skeleton, local, [float(c) for c in roots[k]])[1]
                names = entry.get("joint_names") or effectors.get(kind) or ["Hips"]
                for name in names:
                    if name in skeleton.joint_names:
                        p = positions[skeleton.index(name)]
                        markers.append((p[0], p[1], p[2], kind, frame))
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise KimodoError("{}: entry {}: not a Kimodo constraint ({})".format(path, index, error)) from error
    return markers, frames


def _retarget(scene: PreviewScene, target_spec: str, in_place: bool) -> None:
    from ..retarget import character, output
    from ..retarget.report import format_report
    from ..retarget.solve import retarget

    motion = scene.motion
    target = character.load_target(target_spec)
    retargeted, info = retarget(motion, target.skeleton, in_place=in_place, target_name=target_spec,
                                source_name=motion.name)
    with tempfile.TemporaryDirectory(prefix="kimodo-preview-") as folder:
        # The report is measured from a written file, as `retarget` measures it.
        written = Path(folder) / "character.glb"
        output.write(retargeted, info, target, written)
        report = output.report_from_output(written, motion, retargeted, info)
        scene.character_glb = written.read_bytes()
    scene.character = retargeted
    scene.character_label = Path(target_spec).stem or target_spec
    scene.character_positions = world_positions(retargeted)
    scene.report_lines = format_report(scene.title, report).splitlines()


def build_scene(motion: Motion, source: str, *, target: Optional[str] = None, constraints: Optional[str] = None,
                in_place: bool = False) -> PreviewScene:
    positions = world_positions(motion)
    contacts, from_file = _contacts(motion, positions)
    title = naming.clip_stem(motion.prompt, motion.name or Path(source).stem, motion.frame_count)
    scene = PreviewScene(motion, title, positions, _headings(motion, positions), contacts, from_file,
                         summarize(motion).text(Path(source).name).splitlines())
    if constraints:
        scene.markers, scene.constrained_frame_kinds = _constraint_markers(constraints, motion)
    if target:
        _retarget(scene, target, in_place)
    return scene
