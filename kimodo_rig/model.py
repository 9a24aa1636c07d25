"""The data model every format and operation shares: Skeleton and Motion.

Conventions, stated once:
- Frame: +Y up, +Z forward, +X the character's LEFT, right-handed, metres (glTF's frame, Kimodo's frame).
- Quaternions are (x, y, z, w), Hamilton, canonical w >= 0 not required.
- A joint's local rotation is its full rotation relative to its parent (what a glTF node's `rotation`
  holds). Kimodo skeletons rest at identity, so there it is also the delta from rest; other rigs carry
  their rest in `Skeleton.rest_rotations`.
- FK: G[root] = L[root], p[root] = root_position; G[j] = G[parent] L[j],
  p[j] = p[parent] + G[parent] * rest_offsets[j]. Bone lengths are fixed; only the root translates.
- Joints are stored parent before child (parents[j] < j), so one pass in index order is FK.
- Buffers are flat `array('d')`: [frame][joint][xyzw] and [frame][xyz]. Double precision because NPZ and
  BVH inputs may carry float64; writers narrow to float32 where the format does. A reader whose format is
  float32 (kimodo.cpp's raw clips) may keep `array('f')`: the same values in half the memory.
"""
from __future__ import annotations

from array import array
TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    from typing import Any, Callable, Optional, Sequence, Tuple

from .rotations import IDENTITY, Quat, Vec3


class FrozenRecord:
    """What @dataclass(frozen=True) gives a record, written out: fields set once by __init__, compared,
    hashed and shown by their values, never assigned after. Not a dataclass because importing
    `dataclasses` loads inspect, ast, dis and tokenize: a tenth of a one-clip job's start-up. A subclass
    names its fields in FIELDS, assigns them with `_set` in its own __init__, and gets `replace`."""

    FIELDS: Tuple[str, ...] = ()

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def _values(self) -> Tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.FIELDS)

    def replace(self, **changes: Any) -> Any:
        """A copy with some fields changed (dataclasses.replace)."""
        values = {name: getattr(self, name) for name in self.FIELDS}
        values.update(changes)
        return type(self)(**values)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("cannot assign to field {!r} of a {}".format(name, type(self).__name__))

    def __delattr__(self, name: str) -> None:
        raise AttributeError("cannot delete field {!r} of a {}".format(name, type(self).__name__))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()  # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return "{}({})".format(type(self).__name__, ", ".join(
            "{}={!r}".format(name, getattr(self, name)) for name in self.FIELDS))


class Skeleton(FrozenRecord):
    """Joint names, parents and rest pose of a rig. `name` is the built-in id (e.g. "somaskel30") or a
    free name for other rigs; `label` is what reports show ("SOMA", "G1", "SMPL-X")."""

    FIELDS = ("name", "joint_names", "parents", "rest_offsets", "rest_rotations", "label")
    name: str
    joint_names: Tuple[str, ...]
    parents: Tuple[int, ...]
    rest_offsets: Tuple[Vec3, ...]
    rest_rotations: Tuple[Quat, ...]
    label: str

    def __init__(self, name: str, joint_names: Tuple[str, ...], parents: Tuple[int, ...],
                 rest_offsets: Tuple[Vec3, ...], rest_rotations: Tuple[Quat, ...] = (), label: str = "") -> None:
        for field, value in zip(self.FIELDS, (name, joint_names, parents, rest_offsets, rest_rotations, label)):
            self._set(field, value)
        count = len(self.joint_names)
        if len(self.parents) != count or len(self.rest_offsets) != count:
            raise ValueError("joint_names, parents and rest_offsets must have one entry per joint")
        if not self.rest_rotations:
            self._set("rest_rotations", tuple(IDENTITY for _ in range(count)))
        elif len(self.rest_rotations) != count:
            raise ValueError("rest_rotations must have one entry per joint")
        if not self.label:
            self._set("label", self.name)
        for index, parent in enumerate(self.parents):
            if parent >= index or (parent < 0 and index != 0):
                raise ValueError("joints must be ordered parent before child with a single root at 0")
        children: Tuple[list, ...] = tuple([] for _ in range(count))
        for index, parent in enumerate(self.parents):
            if parent >= 0:
                children[parent].append(index)
        self._set("_children", tuple(tuple(c) for c in children))  # not a field: no eq/repr

    @property
    def joint_count(self) -> int:
        return len(self.joint_names)

    def index(self, joint_name: str) -> int:
        return self.joint_names.index(joint_name)

    def children(self, joint: int) -> Tuple[int, ...]:
        """Joints whose parent is `joint`, in index order (a lookup: writers ask this of every joint)."""
        return self._children[joint]  # type: ignore[attr-defined]

    def derived(self, key: str, compute: Callable[["Skeleton"], Any]) -> Any:
        """`compute(self)`, worked out once per skeleton and `key` (its fields never change): a value many
        stages ask of one rig, such as its rest pose. Callers must not change what comes back."""
        values = self.__dict__.setdefault("_derived", {})
        if key not in values:
            values[key] = compute(self)
        return values[key]

    def renamed(self, names: Sequence[str]) -> "Skeleton":
        return Skeleton(self.name, tuple(names), self.parents, self.rest_offsets, self.rest_rotations, self.label)


class Motion(FrozenRecord):
    """Per-frame local rotations and root positions on a skeleton. Treat the buffers as read-only:
    operations return new Motion objects."""

    FIELDS = ("skeleton", "local_rotations", "root_positions", "fps", "foot_contacts", "name", "prompt")
    skeleton: Skeleton
    local_rotations: array  # 'd' (or 'f'), frames * joints * 4, xyzw
    root_positions: array  # 'd' (or 'f'), frames * 3, metres
    fps: float
    foot_contacts: Optional[array]  # 'd', frames * 4: left heel, left toe, right heel, right toe
    name: str  # clip name for reports and output names
    prompt: str  # first line of the text prompt, where the clip has one

    def __init__(self, skeleton: Skeleton, local_rotations: array, root_positions: array, fps: float = 30.0,
                 foot_contacts: Optional[array] = None, name: str = "", prompt: str = "") -> None:
        for field, value in zip(self.FIELDS, (skeleton, local_rotations, root_positions, fps, foot_contacts, name, prompt)):
            self._set(field, value)
        frames, remainder = divmod(len(self.root_positions), 3)
        if remainder or len(self.local_rotations) != frames * self.skeleton.joint_count * 4:
            raise ValueError("local_rotations and root_positions disagree on the frame count")
        if self.foot_contacts is not None and len(self.foot_contacts) != frames * 4:
            raise ValueError("foot_contacts must hold 4 values a frame")

    @property
    def frame_count(self) -> int:
        return len(self.root_positions) // 3

    def derived(self, key: str, compute: Callable[["Motion"], Any]) -> Any:
        """`compute(self)`, worked out once per motion and `key` (its buffers are read-only): a value
        several stages ask of one clip, such as its world poses. Callers must not change what comes back."""
        values = self.__dict__.setdefault("_derived", {})
        if key not in values:
            values[key] = compute(self)
        return values[key]

    @property
    def joint_count(self) -> int:
        return self.skeleton.joint_count

    @property
    def duration(self) -> float:
        """Seconds from the first to the last frame."""
        return (self.frame_count - 1) / self.fps if self.frame_count > 1 else 0.0

    def rotation(self, frame: int, joint: int) -> Quat:
        i = (frame * self.skeleton.joint_count + joint) * 4
        r = self.local_rotations
        return (r[i], r[i + 1], r[i + 2], r[i + 3])

    def frame_rotations(self, frame: int) -> Tuple[Quat, ...]:
        count = self.skeleton.joint_count
        r = self.local_rotations
        base = frame * count * 4
        return tuple((r[i], r[i + 1], r[i + 2], r[i + 3]) for i in range(base, base + count * 4, 4))

    def root_position(self, frame: int) -> Vec3:
        p = self.root_positions
        return (p[frame * 3], p[frame * 3 + 1], p[frame * 3 + 2])


def make_motion(
    skeleton: Skeleton,
    rotations: Sequence[Sequence[Sequence[float]]],
    root_positions: Sequence[Sequence[float]],
    fps: float = 30.0,
    **metadata,
) -> Motion:
    """Build a Motion from nested sequences: rotations[frame][joint] = xyzw, root_positions[frame] = xyz."""
    flat_rotations = array("d", (c for frame in rotations for q in frame for c in q))
    flat_roots = array("d", (c for p in root_positions for c in p))
    return Motion(skeleton, flat_rotations, flat_roots, fps, **metadata)


def rest_motion(skeleton: Skeleton, frames: int = 1, fps: float = 30.0) -> Motion:
    """The skeleton standing in its rest pose with the root at its rest offset."""
    rotations = array("d", [c for _ in range(frames) for q in skeleton.rest_rotations for c in q])
    root = skeleton.rest_offsets[0]
    return Motion(skeleton, rotations, array("d", list(root) * frames), fps)
