"""The README's two opening commands are the ones that work: the example clip converts, and CI runs the
test command the README names. The README is a newcomer's page (at most 300 lines, install and a retarget
onto a character first, every command, links that resolve), and its sample outputs and the docs pages' are
what the commands print today (scripts/make_docs.py writes them)."""
from __future__ import annotations

import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
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


# --- the README a newcomer reads, and the sample outputs ----------------------------------------------

def _make_docs():
    spec = importlib.util.spec_from_file_location("make_docs", ROOT / "scripts" / "make_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _anchor(heading: str) -> str:
    # GitHub's rule: lower case, punctuation but hyphens dropped, spaces to hyphens.
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set:
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return {_anchor(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}


def _broken_local_links() -> list:
    pages = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
    broken = []
    for page in pages:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists() or (anchor and linked.suffix == ".md" and anchor not in _anchors(linked)):
                broken.append("{}: {}".format(page.relative_to(ROOT), target))
    return broken


def test_readme_is_at_most_300_lines_with_install_and_a_retarget_onto_a_target_first_and_its_links_resolve():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = text.split("\n")
    assert len(lines) <= 300
    first = "\n".join(lines[:60])
    assert "pip install ." in first
    assert re.search(r"^\$? ?kimodo-rig retarget \S+ --target \S+", first, flags=re.M)
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    for needed in ("Install", "Blender", "Unreal"):
        assert needed in headings
    # Test evidence lives in docs/: the README names no test file but the one that checks it.
    assert set(re.findall(r"tests/test_\w+\.py", text)) <= {"tests/test_readme.py"}
    assert 'pip install "kimodo-rig[' not in text and "pip install kimodo-rig[" not in text
    # Every local link of the README and of the docs pages it sends the reader to resolves (anchors too).
    assert _broken_local_links() == []


def test_the_readme_gives_every_command_of_the_help_its_line():
    result = subprocess.run([sys.executable, "-m", "kimodo_rig", "--help"], cwd=str(ROOT), capture_output=True, text=True)
    verbs = re.findall(r"^    (\w+)", result.stdout, flags=re.M)
    assert "retarget" in verbs and "constraints" in verbs
    rows = re.findall(r"^\| `(\w+)", (ROOT / "README.md").read_text(encoding="utf-8"), flags=re.M)
    assert [verb for verb in verbs if verb not in rows] == []


def test_the_readme_quick_start_prints_what_the_commands_print_today():
    make_docs = _make_docs()
    page = ROOT / "README.md"
    blocks = make_docs.find_blocks(page.read_text(encoding="utf-8").split("\n"), page)
    commands = [command for block in blocks for command in block.commands]
    assert any(c.startswith("python3 kimodo_to_glb.py examples/") for c in commands)
    assert any(re.match(r"kimodo-rig retarget \S+ --target mannequin", c) for c in commands)
    assert any(re.match(r"kimodo-rig retarget \S+ --target \S+\.glb", c) for c in commands)
    assert any(c.startswith("kimodo-rig preview ") for c in commands)
    assert any("build_blender_extension.py" in c for c in commands)
    assert make_docs.differences(page) == [], "run: python3 scripts/make_docs.py"


def test_make_docs_finds_a_sample_line_that_is_not_printed_and_one_that_is_missing(tmp_path):
    make_docs = _make_docs()
    command = "python3 kimodo_to_glb.py examples/clips/soma_01_single_text_prompt"
    printed = "runs_forward_leaps_150.glb: SOMA, 30 joints, 150 frames, worst joint disagreement 1.0e-07 m"
    pages = {"right": [printed], "changed": [printed.replace("150 frames", "151 frames")], "missing": [],
             "extra": [printed, "done"]}
    for name, shown in pages.items():
        page = tmp_path / (name + ".md")
        page.write_text("\n".join(["# a page", make_docs.MARKER, "```", "$ " + command] + shown + ["```", ""]),
                        encoding="utf-8")
        problems = make_docs.differences(page)
        assert len(problems) == (0 if name == "right" else 1), name
    assert make_docs.same_line("3 converted, 1 failed, 1.4 s", "3 converted, 1 failed, 12.07 s")
    assert not make_docs.same_line("3 converted, 1 failed, 1.4 s", "3 converted, 0 failed, 1.4 s")
    # A glob expands as a shell's does, sorted; anything a shell would do beyond that is refused.
    (tmp_path / "clips" / "b").mkdir(parents=True)
    (tmp_path / "clips" / "a").mkdir()
    assert make_docs.argv_of("kimodo-rig glb clips/* --outdir glb", tmp_path)[3:] == ["glb", "clips/a", "clips/b", "--outdir", "glb"]
    with pytest.raises(SystemExit):
        make_docs.argv_of("kimodo-rig map hero.glb --json > bones.json", tmp_path)
    # Rounded figures compare exactly; a float's full repr to 1e-9 of itself.
    assert not make_docs.same_line("slide 0.18 cm a frame", "slide 0.19 cm a frame")
    assert not make_docs.same_line("disagreement 1.0e-07 m", "disagreement 1.1e-07 m")
    assert make_docs.same_line('"m": -0.000913731687947672}', '"m": -0.0009137316879475588}')
    assert not make_docs.same_line('"m": -0.000913731687947672}', '"m": -0.0009137416879475588}')
