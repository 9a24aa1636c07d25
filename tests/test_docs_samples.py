"""The docs pages' sample outputs are what their commands print today (scripts/make_docs.py writes them;
tests/test_readme.py checks the README's). Its own file, so the test runners spread it from the README's."""
from __future__ import annotations

import importlib.util

from conftest import ROOT


def test_the_docs_pages_sample_outputs_are_what_the_commands_print_today():
    spec = importlib.util.spec_from_file_location("make_docs", ROOT / "scripts" / "make_docs.py")
    make_docs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_docs)
    pages = sorted((ROOT / "docs").glob("*.md"))
    sampled = {page.name for page in pages if make_docs.find_blocks(page.read_text(encoding="utf-8").split("\n"), page)}
    assert {"constraints.md", "formats.md", "retarget.md", "timeline.md"} <= sampled
    problems = [problem for page in pages for problem in make_docs.differences(page)]
    assert problems == [], "run: python3 scripts/make_docs.py\n" + "\n".join(problems)
