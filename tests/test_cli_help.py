"""Every option and argument of every verb says what it is in `--help`: the parsers walked as argparse built
them (`inspect --fps`, `retarget --root-motion` and `retarget --fps` had no help text)."""
from __future__ import annotations

import argparse
import re

from conftest import ROOT
from kimodo_rig import cli


def undocumented(parser: argparse.ArgumentParser, path: tuple) -> list:
    missing = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            missing += [path + (choice.dest,) for choice in action._choices_actions if not (choice.help or "").strip()]
            for name, sub in action.choices.items():
                missing += undocumented(sub, path + (name,))
        elif not (action.help or "").strip():
            missing.append(path + (action.option_strings[-1] if action.option_strings else action.dest,))
    return missing


def test_every_option_of_every_verb_has_help_text():
    parser = cli.build_parser()
    verbs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert sorted(verbs) == sorted(cli.VERBS)
    assert undocumented(parser, ()) == []


def _constraints_verbs() -> set:
    parser = cli.build_parser()
    verbs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    sub = next(a for a in verbs["constraints"]._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def _named_verbs(text: str) -> list:
    """`check, extract and convert` -> ["check", "extract", "convert"] (words in parentheses left out)."""
    text = re.sub(r"\([^)]*\)", "", text)
    return [word.strip() for word in re.split(r",|\band\b", text) if word.strip()]


def test_headings_and_help_lines_that_name_verbs_name_real_ones():
    """The README's heading and `constraints`' help line promised a `constraints measure` verb that does not
    exist (`check --motion` measures). Every verb a heading lists after `constraints:`, every `kimodo-rig
    VERB` in a heading, and the verbs `constraints`' help line lists are ones the parser has."""
    real = _constraints_verbs()
    listed = _named_verbs(cli.VERBS["constraints"].split("Kimodo constraints")[0])
    assert listed and set(listed) <= real, listed
    headings = [line for page in [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
                for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("#")]
    for heading in headings:
        for verb in re.findall(r"kimodo-rig ([a-z][a-z0-9-]*)", heading):
            assert verb in cli.VERBS, heading
        found = re.search(r"constraints: (.*)$", heading)
        if found:
            assert set(_named_verbs(found.group(1))) <= real, heading
