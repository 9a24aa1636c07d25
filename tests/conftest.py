"""Shared test paths and the independent judges. A missing judge is a failure, never a skip."""
from __future__ import annotations

import json
import os
import subprocess
import sys
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
