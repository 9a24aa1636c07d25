"""The README's two opening commands are the ones that work: the example clip converts, and CI runs the
test command the README names."""
from __future__ import annotations

import shlex
import shutil
import subprocess
import sys

from conftest import ROOT


def _opening_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("```", 2)[1]
    commands = [line.split("#", 1)[0].strip() for line in block.strip().splitlines()]
    return [c for c in commands if c]


def test_readme_opens_with_the_example_conversion_then_the_test_command():
    commands = _opening_commands()
    assert len(commands) == 2
    assert commands[0].split()[1:] == ["kimodo_to_glb.py", "examples/clips/soma_01_single_text_prompt"]
    assert commands[1] == "bash scripts/test.sh"
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_example_command_converts_the_shipped_clip_beside_the_script(tmp_path):
    # A plain download: the script, the package and the example, nothing installed.
    shutil.copy(ROOT / "kimodo_to_glb.py", tmp_path)
    shutil.copytree(ROOT / "kimodo_rig", tmp_path / "kimodo_rig", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    arguments = shlex.split(_opening_commands()[0])[1:]
    result = subprocess.run([sys.executable] + arguments, cwd=str(tmp_path), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("runs_forward_leaps_150.glb: SOMA, 30 joints, 150 frames, worst joint disagreement ")
    assert (tmp_path / "runs_forward_leaps_150.glb").stat().st_size > 10000
    assert result.stderr == ""
