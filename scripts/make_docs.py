"""The sample outputs in README.md and docs/*.md, made by running their commands.

A fenced block that follows a line `<!-- make_docs: run -->` holds `$ COMMAND` lines, each followed by what
the command prints (stdout and stderr interleaved, as a terminal shows them). The commands of one page run
in order, in a scratch folder laid out as a fresh checkout (`kimodo_to_glb.py` copied, so its output lands
beside it; `kimodo_rig`, `examples`, `scripts`, `blender_extension` and `tests` linked), so a later command
may read what an earlier one wrote (`$ cat FILE` shows such a file). `kimodo-rig` runs as
`python -m kimodo_rig`, as it does uninstalled.

    python3 scripts/make_docs.py            rewrite the blocks with what the commands print today
    python3 scripts/make_docs.py --check    print each line that differs; exit 1 if any does
    python3 scripts/make_docs.py --pictures also redraw docs/preview_sheet.svg and docs/preview_player.png
                                            (the player in headless Chromium, as the test suite installs it)

Only the figures that measure time (a batch's closing `... failed, 1.4 s`) may differ between runs; they
are compared as a pattern. Numbers printed at full precision (15+ significant digits, `--json`) compare
to a relative 1e-9, as the last digits of a float's repr may move with the Python version. Everything else a
command prints is deterministic and compared exactly.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
MARKER = "<!-- make_docs: run -->"
LINKED = ("kimodo_rig", "examples", "scripts", "blender_extension", "tests")
COPIED = ("kimodo_to_glb.py",)
# A batch's closing line ends in its wall time, which no two runs share.
TIMED = re.compile(r"^(\d+ converted, (?:\d+ skipped, )?\d+ failed, )\d+(?:\.\d+)? s$")
NUMBER = re.compile(r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)")
FULL_PRECISION_DIGITS = 15  # repr of a double shows 15-17 significant digits; rounded figures show fewer
FULL_PRECISION_TOLERANCE = 1e-9  # relative: far above a few ulps of summation order, far below any rounding shown
SHELL_SYNTAX = {"|", ">", ">>", "<", "&&", "||", ";", "&"}
TIMEOUT_S = 300  # one command; the slowest sample (a retarget) takes a few seconds


class Block:
    """One marked block of a page: its commands and the output lines shown under each."""

    def __init__(self, first_line: int, last_line: int, commands: List[str], shown: List[List[str]]):
        self.first_line = first_line  # index of the first line inside the fence
        self.last_line = last_line    # index of the closing fence
        self.commands = commands
        self.shown = shown


def find_blocks(lines: List[str], page: Path) -> List[Block]:
    blocks = []
    for index, line in enumerate(lines):
        if line.strip() != MARKER:
            continue
        if index + 1 >= len(lines) or not lines[index + 1].startswith("```"):
            raise SystemExit("{}:{}: {} must be followed by a fenced block".format(page, index + 1, MARKER))
        end = index + 2
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        if end == len(lines):
            raise SystemExit("{}:{}: the block after {} is not closed".format(page, index + 2, MARKER))
        commands: List[str] = []
        shown: List[List[str]] = []
        for body_line in lines[index + 2:end]:
            if body_line.startswith("$ "):
                commands.append(body_line[2:])
                shown.append([])
            elif not commands:
                raise SystemExit("{}:{}: a marked block starts with a `$ ` command".format(page, index + 3))
            else:
                shown[-1].append(body_line)
        blocks.append(Block(index + 2, end, commands, shown))
    return blocks


def argv_of(command: str, folder: Path) -> List[str]:
    words = shlex.split(command)
    # A word with `*` is a glob, expanded in sorted order as a shell does (`clips/*`).
    words = [expanded for word in words
             for expanded in (sorted(path.relative_to(folder).as_posix() for path in folder.glob(word))
                              if "*" in word else [word])]
    if SHELL_SYNTAX.intersection(words):
        raise SystemExit("make_docs: {!r}: a sample command runs without a shell (no pipes or redirections)".format(command))
    if words[0] == "kimodo-rig":
        return [sys.executable, "-m", "kimodo_rig"] + words[1:]
    if words[0] in ("python", "python3"):
        return [sys.executable] + words[1:]
    raise SystemExit("make_docs: {!r}: a sample command starts with kimodo-rig, python3 or cat".format(command))


def make_scratch(folder: Path) -> None:
    for name in LINKED:
        (folder / name).symlink_to(ROOT / name, target_is_directory=True)
    for name in COPIED:
        shutil.copy(ROOT / name, folder / name)


def run(command: str, folder: Path) -> List[str]:
    words = shlex.split(command)
    if words[0] == "cat" and len(words) == 2:  # show a file an earlier command of the page wrote
        return (folder / words[1]).read_text(encoding="utf-8").rstrip("\n").split("\n")
    environment = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONIOENCODING="utf-8")
    environment.pop("PYTHONPATH", None)
    result = subprocess.run(argv_of(command, folder), cwd=str(folder), env=environment, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S)
    return result.stdout.rstrip("\n").split("\n") if result.stdout.strip() else []


def same_line(shown: str, printed: str) -> bool:
    if shown == printed:
        return True
    shown_match, printed_match = TIMED.match(shown), TIMED.match(printed)
    if shown_match and printed_match:
        return shown_match.group(1) == printed_match.group(1)
    # A number printed in full (`--json`: repr of a float) may change in its last digits with the Python
    # version (sum() of floats is compensated from 3.12): those compare to FULL_PRECISION_TOLERANCE.
    shown_parts, printed_parts = NUMBER.split(shown), NUMBER.split(printed)
    if len(shown_parts) != len(printed_parts) or shown_parts[0::2] != printed_parts[0::2]:
        return False
    for a, b in zip(shown_parts[1::2], printed_parts[1::2]):
        if a != b and not (_full_precision(a) and _full_precision(b)
                           and abs(float(a) - float(b)) <= FULL_PRECISION_TOLERANCE * abs(float(a))):
            return False
    return True


def _full_precision(number: str) -> bool:
    mantissa = number.split("e")[0].split("E")[0].lstrip("-").replace(".", "").lstrip("0")
    return len(mantissa) >= FULL_PRECISION_DIGITS


def page_outputs(page: Path) -> Tuple[List[str], List[Block], List[List[List[str]]]]:
    """The page's lines, its marked blocks, and what each block's commands print today."""
    lines = page.read_text(encoding="utf-8").split("\n")
    blocks = find_blocks(lines, page)
    printed: List[List[List[str]]] = []
    if blocks:
        with tempfile.TemporaryDirectory(prefix="make_docs_") as scratch:
            make_scratch(Path(scratch))
            for block in blocks:
                printed.append([run(command, Path(scratch)) for command in block.commands])
    return lines, blocks, printed


def differences(page: Path) -> List[str]:
    """One line per sample line that is not what its command prints today."""
    _, blocks, printed = page_outputs(page)
    problems = []
    name = page.relative_to(ROOT).as_posix() if ROOT in page.parents else str(page)
    for block, outputs in zip(blocks, printed):
        for command, shown, today in zip(block.commands, block.shown, outputs):
            if len(shown) != len(today) or not all(same_line(a, b) for a, b in zip(shown, today)):
                problems.append("{}: `{}` prints\n{}\n  but the page shows\n{}".format(
                    name, command, "\n".join("    " + l for l in today), "\n".join("    " + l for l in shown)))
    return problems


def rewrite(page: Path) -> bool:
    lines, blocks, printed = page_outputs(page)
    for block, outputs in reversed(list(zip(blocks, printed))):
        body: List[str] = []
        for command, shown, today in zip(block.commands, block.shown, outputs):
            body.append("$ " + command)
            # A timed line keeps its shown figure when only the time moved: reruns change nothing.
            if len(shown) == len(today) and all(same_line(a, b) for a, b in zip(shown, today)):
                body.extend(shown)
            else:
                body.extend(today)
        lines[block.first_line:block.last_line] = body
    text = "\n".join(lines)
    if text != page.read_text(encoding="utf-8"):
        page.write_text(text, encoding="utf-8")
        return True
    return False


def draw_pictures() -> None:
    """docs/preview_sheet.svg (standard library only) and docs/preview_player.png (headless Chromium through
    the test suite's judge, tests/node/preview_page.mjs: needs the Node modules `bash scripts/test.sh`
    installs), each made as the caption under it in docs/preview.md says. docs/retarget_robot.png and
    docs/blender_extension_female.png need Blender (scripts/render_retarget.py)."""
    clip = "tests/data/npz/soma_03_full_body_keyframes/"
    subprocess.run([sys.executable, "-m", "kimodo_rig", "preview", clip + "motion.npz", "--constraints",
                    clip + "constraints.json", "-o", "docs/preview_sheet.svg"], cwd=str(ROOT), check=True)
    modules = Path(os.environ.get("KIMODO_NODE_MODULES", ROOT / "tests" / "node" / "node_modules"))
    if not (modules / "playwright-core").is_dir():
        print("docs/preview_player.png not redrawn: no playwright-core in {} (run bash scripts/test.sh)".format(modules),
              file=sys.stderr)
        return
    with tempfile.TemporaryDirectory(dir=str(ROOT / "docs")) as scratch:
        page = Path(scratch) / "leap.html"
        subprocess.run([sys.executable, "-m", "kimodo_rig", "preview", "tests/data/clips/soma_01_single_text_prompt",
                        "--target", "mannequin", "-o", str(page)], cwd=str(ROOT), check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["node", str(ROOT / "tests" / "node" / "preview_page.mjs"), str(page), "45", "100", scratch],
                       cwd=str(modules.parent), check=True, stdout=subprocess.DEVNULL,
                       env=dict(os.environ, NODE_PATH=str(modules)))
        shutil.copyfile(str(Path(scratch) / "frame_45.png"), str(ROOT / "docs" / "preview_player.png"))


def main(argv: Optional[List[str]] = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    unknown = set(arguments) - {"--check", "--pictures"}
    if unknown:
        print(__doc__, file=sys.stderr)
        return 2
    if "--check" in arguments:
        problems = [problem for page in PAGES for problem in differences(page)]
        for problem in problems:
            print(problem)
        return 1 if problems else 0
    for page in PAGES:
        if rewrite(page):
            print("rewrote", page.relative_to(ROOT).as_posix())
    if "--pictures" in arguments:
        draw_pictures()
    return 0


if __name__ == "__main__":
    sys.exit(main())
