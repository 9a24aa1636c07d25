"""Every option and argument of every verb says what it is in `--help`: the parsers walked as argparse built
them (`inspect --fps`, `retarget --root-motion` and `retarget --fps` had no help text)."""
from __future__ import annotations

import argparse

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
