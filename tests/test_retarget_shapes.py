"""Issue 39: a humanoid known by its shape. Every KIND of character below (tests/rig_variants.py, each built
from a shared MPFB2 rig with its bind shape kept) maps and retargets with no --map:

- `kimodo-rig map RIG --json` names, part for part, the bone the rig it was made from is known by (that
  rig's map, each bone under the name the kind's builder gave it; node indices do not change);
- the retarget of one SOMA and one G1 clip is judged from the written file by numpy skinning and FK
  (benchmarks/sweep_variants.run_pair, tests/feet_judge.py): limb cosine >= 0.99 SOMA / 0.97 G1 on every
  segment in the character's frame, planted soles within 1 cm of the rest floor, nothing 2 cm under it,
  skate <= 0.15 cm a frame (per 1.7 m), every report number within the judge's tolerance, no warning;
- and its figures are the original rig's (the rig the kind was made from, judged the same way) within
  SAME_FIGURES: the decorations of an exporter change nothing of the motion.

A quadruped (four legs, a horizontal spine) is refused in one line, exit 1, whatever its bones are called.
The Unreal step's plan of each kind is tested in tests/test_unreal.py."""
from __future__ import annotations

import dataclasses
import functools
import json
import sys
from pathlib import Path
from typing import Callable, Dict, Tuple

import pytest

import rig_variants as rv
from conftest import ROOT, run_cli
from test_retarget_families import FAMILIES, expected_map as family_map

sys.path.insert(0, str(ROOT / "benchmarks"))
import sweep_variants as sweep  # noqa: E402

SOMA_CLIP = "soma_03_full_body_keyframes"
G1_CLIP = "g1_02_multi_text_ee_constraint"

# How close a kind's figures must be to its original's (the same motion on the same skeleton shape): cosines
# to 0.002 (the worst frame's to 0.01, the judge's own COSINE_TOLERANCE), floor figures to 0.1 cm and the
# skate to 0.005 cm a frame (per 1.7 m of character). Renames and wrappers alone measure 0 (rigify vs the
# mannequin, mixamo_no_prefix vs mixamo: equal to the 4th decimal).
SAME_FIGURES = {"limb_cosine": 0.002, "limb_cosine_min_segment": 0.002, "legs_match": 0.002, "limb_cosine_min": 0.01,
                "planted_max_cm": 0.1, "lowest_cm": 0.1, "skate_cm": 0.005}


@dataclasses.dataclass(frozen=True)
class Kind:
    base: Path  # the shared rig
    known: Tuple[Callable, ...]  # builders of the rig the kind is made from (a family of test_retarget_families)
    build: Callable  # the kind's builder, applied to the base (it applies `known` itself where it needs it)
    original: str  # the sweep variant of the rig it is made from: its map and figures are the kind's
    overrides: Dict[str, str] = dataclasses.field(default_factory=dict)  # part -> bone where the kind's is another
    nameless: bool = False  # nodes without names: judged by node index against the named original


KINDS = {
    # Sketchfab re-exports: `_<index>` on every name, Sketchfab_model > RootNode > armature > GLTF_created_0 >
    # GLTF_created_0_rootJoint, a 0.01 / 100 scale pair (or the rig in cm under a 0.01 wrapper).
    "sketchfab_mixamo": Kind(rv.MIXAMO, (rv.mixamo_prefix(""),), rv.sketchfab_mixamo, "mixamo_no_prefix"),
    "sketchfab_biped": Kind(rv.MANNEQUIN, (rv.biped_like,), rv.sketchfab_biped, "biped"),
    "sketchfab_biped_underscores": Kind(rv.MANNEQUIN, (rv.biped_like,), rv.sketchfab_biped_underscores, "biped"),
    # Rigify: DEF- chains off the armature node (17 joint trees), and ~700 bones of ORG/MCH/DEF and controls.
    "rigify_deform_only": Kind(rv.MANNEQUIN, (rv.rigify_like,), rv.rigify_deform_only, "rigify"),
    "rigify_all_bones": Kind(rv.MANNEQUIN, (rv.rigify_like,), rv.rigify_all_bones, "rigify"),
    # MMD: the legs' mesh on the D chains beside the FK legs.
    "mmd": Kind(rv.MANNEQUIN, (), rv.mmd_like, "mannequin", overrides=dict(
        {"thigh_" + s: side + "足D" for s, side in (("l", "左"), ("r", "右"))},
        **{"calf_" + s: side + "ひざD" for s, side in (("l", "左"), ("r", "右"))},
        **{"foot_" + s: side + "足首D" for s, side in (("l", "左"), ("r", "右"))},
        **{"toe_" + s: side + "足先EX" for s, side in (("l", "左"), ("r", "右"))})),
    "vroid_names": Kind(rv.MANNEQUIN, (), rv.vroid_names, "mannequin"),
    "blender_default_names": Kind(rv.MANNEQUIN, (), rv.blender_default_names, "mannequin"),
    "empty_names": Kind(rv.MANNEQUIN, (), rv.empty_names, "mannequin", nameless=True),
    "numbered_names": Kind(rv.MIXAMO, (), rv.numbered_names, "mixamo"),
}


def _built(kind: Kind, builders):
    gltf = rv.load(kind.base)
    for builder in builders:
        builder(gltf)
    return gltf


@functools.lru_cache(maxsize=None)
def renamed(name: str) -> Callable[[str], str]:
    """The original rig's bone name -> the kind's (by node index: the builders keep every node's index;
    a nameless joint as the reader names it, `joint<k>` by its place in the skin's joints, as --map takes it)."""
    kind = KINDS[name]
    known, built = _built(kind, kind.known), _built(kind, (kind.build,))
    count = len(rv.load(kind.base).nodes)
    joints = list(built.skins[0].joints)
    table = {}
    for k in range(count):
        bone = built.nodes[k].name or ("joint{}".format(joints.index(k)) if k in joints else "")
        table[known.nodes[k].name] = bone
    return lambda bone: table.get(bone, bone)


def known_map(original: str) -> dict:
    """The map of the rig a kind is made from: a family's expected map, or the shared rig's own."""
    if original in FAMILIES:
        return family_map(original)
    return json.loads(run_cli("map", sweep.VARIANTS[original].base, "--json").stdout)


def expected_map(name: str) -> dict:
    rename = renamed(name)
    expected = {part: rename(bone) for part, bone in known_map(KINDS[name].original).items()}
    expected.update(KINDS[name].overrides)
    return expected


def build(name: str, folder: Path) -> Path:
    """The kind's rig as the retarget reads it."""
    kind = KINDS[name]
    return rv.variant(kind.base, folder, name + ".glb", kind.build)


def _register(name: str) -> None:
    """The kind as a sweep variant: judged on its own bones (the original's judged parts renamed, with the
    overrides); a nameless kind is judged on the named original at bind, its output named by node index."""
    kind = KINDS[name]
    original = sweep.VARIANTS[kind.original]
    rename = renamed(name)
    parts = {part: kind.overrides.get(part, rename(bone)) for part, bone in original.parts.items()}
    if kind.nameless:
        sweep.VARIANTS[name] = dataclasses.replace(original, base=kind.base, builders=(), posed=(kind.build,))
    else:
        sweep.VARIANTS[name] = sweep.Variant(kind.base, (kind.build,), parts)


for _name in KINDS:
    _register(_name)


@pytest.mark.parametrize("name", list(KINDS))
def test_map_names_the_bone_the_original_is_known_by(tmp_path, name):
    rig = build(name, tmp_path)
    result = run_cli("map", rig, "--json")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert json.loads(result.stdout) == expected_map(name)


@pytest.fixture(scope="module")
def sweep_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("shapes")


def _named_by_index(judge: Callable) -> Callable:
    """judge_case reading the output with its nodes named as the rig's at bind (node order is kept)."""
    def judged(spec: dict) -> dict:
        output = Path(spec["output"])
        named = output.with_name(output.stem + "_named.glb")
        source, written = rv.load(spec["rig"]), rv.load(output)
        for node, original in zip(written.nodes, source.nodes):
            node.name = node.name or original.name
        rv.save(written, named)
        return judge(dict(spec, output=str(named)))
    return judged


_ORIGINALS: Dict[Tuple[str, str], dict] = {}


def original_record(clip: str, name: str, folder: Path) -> dict:
    """The original rig's run, once per module."""
    if (clip, name) not in _ORIGINALS:
        _ORIGINALS[clip, name] = sweep.run_pair(clip, name, folder)
    return _ORIGINALS[clip, name]


@pytest.mark.parametrize("clip", [SOMA_CLIP, G1_CLIP])
@pytest.mark.parametrize("name", list(KINDS))
def test_retarget_meets_the_bars_with_the_original_s_figures(sweep_folder, monkeypatch, name, clip):
    if KINDS[name].nameless:
        monkeypatch.setattr(sweep, "judge_case", _named_by_index(sweep.judge_case))
    record = sweep.run_pair(clip, name, sweep_folder)
    assert record["problems"] == [], "{}\n{}".format(record["problems"], "\n".join(record["stderr"]))
    original = original_record(clip, KINDS[name].original, sweep_folder)
    assert original["problems"] == [], original["problems"]
    per_1_7_m = 1.0 / record["figures"]["scale"]
    assert record["figures"]["scale"] == pytest.approx(original["figures"]["scale"], abs=0.001)
    differ = {key: (record["figures"][key], original["figures"][key]) for key, tolerance in SAME_FIGURES.items()
              if abs(record["figures"][key] - original["figures"][key]) * (per_1_7_m if key.endswith("_cm") else 1.0)
              > tolerance}
    assert not differ, differ


def test_a_quadruped_is_refused_in_one_line(tmp_path):
    """Four legs down from a horizontal spine, a neck and a tail, bones named as 3ds Max Biped names them (as
    quadrupeds are often rigged): not a humanoid, whatever its names say. `map` and `retarget` refuse it in
    one line naming the file, exit 1, nothing written."""
    rig = rv.quadruped(tmp_path / "horse.glb")
    mapped = run_cli("map", rig)
    assert mapped.returncode == 1 and mapped.stdout == "", mapped.stdout
    assert len(mapped.stderr.splitlines()) == 1 and str(rig) in mapped.stderr, mapped.stderr
    out = tmp_path / "horse_out.glb"
    result = run_cli("retarget", sweep.NPZ / SOMA_CLIP / "motion.npz", "--target", rig, "-o", out)
    assert result.returncode == 1 and len(result.stderr.splitlines()) == 1 and str(rig) in result.stderr, result.stderr
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["horse.glb"]
