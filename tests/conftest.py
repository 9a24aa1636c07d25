"""Shared test paths and the independent judges. A missing judge is a failure, never a skip.

`pytest --quick` (what `bash scripts/test.sh --quick` runs) deselects the tests that need a judge outside
the test venv (Blender, Node, Chromium: found by what each test and its fixtures call) and the slow ones
listed in SLOW, so a developer's loop takes a minute or two. CI runs everything."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
CLIPS = DATA / "clips"
NPZ = DATA / "npz"
REFERENCE = DATA / "reference"
RIGS = DATA / "rigs"
BLENDER_SCRIPTS = Path(__file__).resolve().parent / "blender"

sys.path.insert(0, str(ROOT))

CLIP_NAMES = sorted(p.name for p in CLIPS.iterdir() if p.is_dir())


def node_modules() -> Path:
    folder = Path(os.environ.get("KIMODO_NODE_MODULES", ROOT / "tests" / "node" / "node_modules"))
    if not (folder / "gltf-validator").is_dir():
        pytest.fail("judge missing: gltf-validator not installed in {} (run bash scripts/test.sh)".format(folder))
    return folder


def blender_python(lts: bool = False) -> str:
    """The bpy venv's Python; lts: the one with bpy 4.2 LTS (the oldest Blender the extension supports)."""
    variable, name = ("KIMODO_BLENDER42_PYTHON", "blender42") if lts else ("KIMODO_BLENDER_PYTHON", "blender")
    python = os.environ.get(variable, "")
    if not python:  # pytest run by hand after scripts/test.sh built the venvs here
        built = sorted((ROOT / ".venvs").glob(name + "-*/bin/python"))
        python = str(built[-1]) if built else str(ROOT / ".venvs" / (name + "-*") / "bin" / "python")
    if not Path(python).exists():
        pytest.fail("judge missing: Blender's Python (bpy venv) not at {} (run bash scripts/test.sh)".format(python))
    return python


def validate_gltf(*paths: Path) -> dict:
    """Run the Khronos glTF Validator; returns {file name: issues dict}."""
    modules = node_modules()
    script = ROOT / "tests" / "node" / "validate.js"
    result = subprocess.run(
        ["node", str(script)] + [str(p) for p in paths],
        capture_output=True, text=True, env=dict(os.environ, NODE_PATH=str(modules)), cwd=str(modules.parent),
    )
    if result.returncode != 0:
        pytest.fail("gltf-validator failed to run: " + result.stderr[-2000:])
    reports = {}
    for line in result.stdout.splitlines():
        record = json.loads(line)
        reports[Path(record["file"]).name] = record["issues"]
    return reports


def run_blender(script: str, *args: str, timeout: int = 600, lts: bool = False) -> dict:
    """Run tests/blender/<script> in Blender's Python (lts: bpy 4.2); the script prints one JSON object
    as its last line."""
    result = subprocess.run(
        [blender_python(lts), str(BLENDER_SCRIPTS / script)] + [str(a) for a in args],
        capture_output=True, text=True, timeout=timeout,
    )
    if result.returncode != 0:
        pytest.fail("Blender script {} failed:\n{}\n{}".format(script, result.stdout[-3000:], result.stderr[-3000:]))
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if not lines:
        pytest.fail("Blender script {} printed no result:\n{}".format(script, result.stdout[-3000:]))
    return json.loads(lines[-1])


def run_cli(*args: str, cwd=None, script: str = "-m") -> subprocess.CompletedProcess:
    """Run the command line in a subprocess, as a user would."""
    command = [sys.executable, "-m", "kimodo_rig"] if script == "-m" else [sys.executable, str(ROOT / script)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(command + [str(a) for a in args], capture_output=True, text=True, cwd=cwd, env=env)


# --- the quick tier ----------------------------------------------------------------------------------

# Functions that start a judge outside the test venv; a test that reaches one (itself, through a helper
# of its module or through a fixture) needs Blender, Node or Chromium.
JUDGE_CALLS = frozenset({"node_modules", "blender_python", "run_blender", "validate_gltf"})
# Tests that need no outside judge but take long: node id prefixes. The retarget sweeps run the whole
# retarget once a case (seconds each on 2 cores); the rest each took over 10 s (pytest --durations).
SLOW = (
    "tests/test_retarget_families.py", "tests/test_retarget_feet.py", "tests/test_retarget_rigs.py",
    "tests/test_retarget_shapes.py", "tests/test_retarget_scale.py", "tests/test_feet_variants.py",
    "tests/test_limb_pops.py", "tests/test_no_pops.py", "tests/test_fuzz.py", "tests/test_fbx_blender.py",
    "tests/test_constraints.py::test_seeded_corruptions_of_every_example_give_one_line_naming_the_file",
    "tests/test_corrupt_inputs.py::test_cli_convert_and_retarget_refuse_corrupt_files_in_one_line_and_write_nothing",
    "tests/test_batch.py::test_retarget_takes_many_inputs_on_every_core_into_a_new_outdir_and_jobs_change_no_byte",
    "tests/test_distributed.py", "tests/test_end_bones.py::test_blenders_leaf_bones",
    "tests/test_leg_figures.py::test_planted_soles_lowest_and_limb_turns_meet_issue_40s_bars",
    "tests/test_leg_figures.py::test_without_the_foot_lock_the_motion_is_the_same_at_any_frame_rate",
)


def pytest_addoption(parser):
    parser.addoption("--quick", action="store_true",
                     help="only the tests that need no Blender, Node or Chromium and are not listed slow")


def _reaches_a_judge(code: types.CodeType, namespace: dict, seen: set) -> bool:
    if code in seen:
        return False
    seen.add(code)
    if JUDGE_CALLS.intersection(code.co_names):
        return True
    for constant in code.co_consts:  # lambdas, comprehensions and nested functions
        if isinstance(constant, types.CodeType) and _reaches_a_judge(constant, namespace, seen):
            return True
    # Helpers of the test's module, and of the test folder's own modules it names (`sweep.run_case`).
    modules = [namespace] + [vars(value) for value in map(namespace.get, code.co_names)
                             if isinstance(value, types.ModuleType) and _ours(value)]
    for name in code.co_names:
        for scope in modules:
            value = scope.get(name)
            if isinstance(value, types.FunctionType) and _reaches_a_judge(value.__code__, value.__globals__, seen):
                return True
    return False


def _ours(module: types.ModuleType) -> bool:
    path = getattr(module, "__file__", None) or ""
    return path.startswith(str(ROOT / "tests")) or path.startswith(str(ROOT / "benchmarks"))


def needs_an_outside_judge(item) -> bool:
    functions = [item.function] if hasattr(item, "function") else []
    fixture_info = getattr(item, "_fixtureinfo", None)
    if fixture_info is not None:
        for definitions in fixture_info.name2fixturedefs.values():
            functions.extend(d.func for d in definitions if isinstance(getattr(d, "func", None), types.FunctionType))
    seen: set = set()
    return any(_reaches_a_judge(f.__code__, f.__globals__, seen) for f in functions)


def pytest_collection_modifyitems(config, items):
    if not config.getoption("--quick"):
        return
    keep, drop = [], []
    for item in items:
        slow = any(item.nodeid.startswith(prefix) for prefix in SLOW)
        (drop if slow or needs_an_outside_judge(item) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
