"""End bones that carry no vertex (Blender's FBX exporter adds a `<bone>_end` leaf bone at each chain's tip
by default) never break the humanoid map: a character with them maps as its twin without them, retargets
as it does, and keeps them in its output (names kept), riding on their bones.

Characters: the repo's rigs exported by Blender's FBX exporter with its default options (leaf bones added:
under an armature scaled by 100 they come 100 times too long, `head_end` 0.82 m from `head`; Rigify's
deform-only `DEF-shoulder.L_end` 1.3 m out), each against the same export without leaf bones; and a .glb
given long unweighted end bones in numpy (`rig_variants.long_end_bones`), against the .glb without them.
Judged from the written files by numpy FK (gltf_judge), not our reader.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import rig_variants as rv
from conftest import CLIPS, run_blender, run_cli

SOMA_CLIP = "soma_01_single_text_prompt"
TOLERANCE_M = 1e-3  # the brief's bar: each mapped joint against the twin's retarget, every frame

BLENDER_CASES = {
    "mannequin": (rv.MANNEQUIN,),
    "mixamo": (rv.MIXAMO,),
    "mannequin_armature_100_z_up": (rv.MANNEQUIN, lambda g: rv.wrap_armature(g, scale=100.0, z_up=True)),
    "rigify_deform_only": (rv.MANNEQUIN, rv.rigify_deform_only),
}


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    """name -> (the character with leaf bones, its twin without), exported once a session."""
    folder = tmp_path_factory.mktemp("end_bones")
    made = {}
    for name, (rig, *builders) in BLENDER_CASES.items():
        glb = rv.variant(rig, folder, name + ".glb", *builders)
        with_ends, without = folder / (name + "_leaf_bones.fbx"), folder / (name + ".fbx")
        run_blender("export_fbx_defaults.py", glb, with_ends)  # Blender's defaults: leaf bones added
        run_blender("export_fbx.py", glb, without)  # no leaf bones
        made[name] = (with_ends, without)
    return made


def _map(path: Path) -> dict:
    result = run_cli("map", path, "--json")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    parts = json.loads(result.stdout)
    assert parts.pop("check") == "ok"
    return parts


def _retarget(path: Path, output: Path):
    from gltf_judge import Glb

    result = run_cli("retarget", CLIPS / SOMA_CLIP, "--target", path, "-o", output)
    assert result.returncode == 0, result.stderr[-2000:]
    glb = Glb(output)
    world = glb.animated_world_matrices()
    return glb, world, {node.name: i for i, node in enumerate(glb.gltf.nodes)}


@pytest.mark.parametrize("name", list(BLENDER_CASES))
def test_blenders_leaf_bones_map_and_retarget_as_the_export_without_them(exported, name, tmp_path):
    """Before: the x100 armature refused ("hand_l is not at the limb's end: 90 cm of bones hang beyond
    it"), Rigify deform-only refused ("upperarm_l does not hang below clavicle_l"); the plain mannequin and
    Mixamo rig (leaf bones of their own length) passed already and are kept as guards."""
    _same_as_twin(*exported[name], "_end", tmp_path)


def test_long_unweighted_end_bones_of_a_glb_map_and_retarget_as_the_glb_without_them(tmp_path):
    """End bones 0.8 m on along each childless bone of the mannequin's .glb, named as no end marker.
    Before: refused ("hand_l is not at the limb's end: 95 cm of bones hang beyond it")."""
    with_ends = rv.variant(rv.MANNEQUIN, tmp_path, "long_end_bones.glb", rv.long_end_bones)
    _same_as_twin(with_ends, rv.MANNEQUIN, ".leaf", tmp_path)


def _same_as_twin(with_ends: Path, twin: Path, suffix: str, tmp_path: Path) -> None:
    """`map` accepts the character with the twin's map; the retarget puts every mapped joint within 1e-3 m
    of the twin's at every frame; every joint the twin has no child joint under carries one end bone in
    the output, under its name (`<bone><suffix>`), at a fixed place in its bone's frame."""
    parts = _map(with_ends)
    assert parts == _map(twin)
    glb, world, index = _retarget(with_ends, tmp_path / "with_ends.glb")
    twin_glb, twin_world, twin_index = _retarget(twin, tmp_path / "twin.glb")
    worst = max(float(np.linalg.norm(world[:, index[b], :3, 3] - twin_world[:, twin_index[b], :3, 3], axis=-1).max())
                for b in parts.values())
    assert worst < TOLERANCE_M, "{:.3g} m".format(worst)

    joints = set(twin_glb.gltf.skins[0].joints)
    leaves = [twin_glb.gltf.nodes[j].name for j in joints if not joints.intersection(twin_glb.gltf.nodes[j].children or [])]
    added = sorted(n for n in index if n not in twin_index)
    assert added == sorted(leaf + suffix for leaf in leaves), added
    parent = {c: i for i, node in enumerate(glb.gltf.nodes) for c in node.children or []}
    for end in added:
        assert glb.gltf.nodes[parent[index[end]]].name + suffix == end
        local = np.linalg.inv(world[:, parent[index[end]]]) @ world[:, index[end]]
        assert np.abs(local - local[0]).max() < 1e-6, end
