"""The desktop command line: `kimodo-rig COMMAND`. The only place that prints.

One module per verb; each has `add_parser(commands)` that registers its sub-command and sets `run`.
A new verb is a new module and one entry in VERBS. Only the verb that runs is imported (with what it
needs): the others are listed for `--help` by name and one-line help alone.
"""
from __future__ import annotations

import os
import sys
TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    import argparse
    from typing import Optional, Sequence

from .. import __version__
from ..errors import KimodoError

VERBS = {  # module name (= the verb) -> its help line
    "glb": "Kimodo clip folders -> self-checked .glb files",
    "convert": "any Kimodo format -> any other",
    "inspect": "what a motion file holds, and its health",
    "retarget": "motion onto another humanoid rig",
    "map": "which bone of a rig plays which part (the automatic map)",
    "join": "clips one after another, cross-faded (past Kimodo's 10 s)",
    "trim": "a range of frames, end exclusive",
    "loop": "a seamless loop cut where two poses match",
    "preview": "an SVG contact sheet or a one-file HTML player of a motion",
    "constraints": "check (and measure a motion against), extract and convert Kimodo constraints",
}


# The longest typed value an error line quotes whole (characters): a 5,000-digit number given as an option
# is shown by its start and length, so the refusal stays one short line.
LONGEST_QUOTED_VALUE = 40


def _shortened(message: str) -> str:
    """`message` with every quoted value longer than LONGEST_QUOTED_VALUE cut to its start and length."""
    import re

    def cut(match) -> str:
        quote, value = match.group(1), match.group(2)
        return "{0}{1}...{0} ({2} characters)".format(quote, value[:LONGEST_QUOTED_VALUE], len(value))

    return re.sub(r"""(['"])((?:(?!\1).){%d,})\1""" % (LONGEST_QUOTED_VALUE + 1), cut, message)


def build_parser(prog: str = "kimodo-rig", verb: Optional[str] = None) -> argparse.ArgumentParser:
    """The parser with every verb registered in full, or with only `verb` in full and the others listed."""
    import argparse  # here, not at the top: `kimodo_to_glb.py` reads its plain arguments without it
    import importlib

    class Parser(argparse.ArgumentParser):  # the verbs' parsers are of this class too (add_subparsers)
        def error(self, message: str):
            super().error(_shortened(message))

    parser = Parser(prog=prog, description="Kimodo motion onto your characters.")
    parser.add_argument("--version", action="version", version="%(prog)s " + __version__)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    for name, help_line in VERBS.items():
        if verb is None or verb == name:
            importlib.import_module("." + name, __name__).add_parser(commands)
        else:
            commands.add_parser(name, help=help_line)
    return parser


def _show_warnings_on_stderr() -> None:
    """The core's warnings (logging, "kimodo_rig") as `warning: ...` lines on stderr. Imported here, not
    at the top: `kimodo_to_glb.py` runs nothing that warns and so never loads logging."""
    import logging

    class StderrWarnings(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            print("warning: " + record.getMessage(), file=sys.stderr)

    logger = logging.getLogger("kimodo_rig")
    if not logger.handlers:
        logger.addHandler(StderrWarnings())
        logger.setLevel(logging.WARNING)


def main(argv: Optional[Sequence[str]] = None, *, prog: str = "kimodo-rig", default_outdir: Optional[str] = None) -> int:
    _show_warnings_on_stderr()
    arguments = list(sys.argv[1:] if argv is None else argv)
    verb = arguments[0] if arguments and arguments[0] in VERBS else None
    args = build_parser(prog, verb or "").parse_args(arguments)  # no verb typed: list them, import none
    try:
        if args.command == "glb":
            status = args.run(args, default_outdir)
        else:
            status = args.run(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler, not at exit
        return status
    except KimodoError as error:
        print(str(error), file=sys.stderr)
        return 1
    except BrokenPipeError:  # `kimodo-rig map RIG | head`: the reader has all it wanted
        _silence_stdout()
        return 1


def _silence_stdout() -> None:
    """Point stdout at the null device so Python's flush at exit does not fail on the closed pipe again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def glb_script_main(argv: Optional[Sequence[str]] = None, default_outdir: Optional[str] = None) -> int:
    """`python kimodo_to_glb.py CLIP...`: the glb command, writing beside the script by default. The
    plain forms of its arguments are read without argparse (glb.quick_glb_arguments: argparse, its
    gettext and locale are a twentieth of a one-clip job); anything else goes to argparse as before."""
    import gc

    from . import glb

    # This process ends with its job, and what it has loaded so far (the modules) is never garbage:
    # frozen, the collector does not walk it again on each full pass (2% of a one-clip job).
    gc.freeze()
    prog = "kimodo_to_glb.py"
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = glb.quick_glb_arguments(arguments, prog)
    if args is None:
        import argparse

        from .help_formatter import SizedHelpFormatter

        parser = argparse.ArgumentParser(prog=prog, description="Kimodo clip folders -> self-checked .glb files",
                                         formatter_class=SizedHelpFormatter)
        glb.add_glb_arguments(parser)
        args = parser.parse_args(arguments)
    return glb.run_glb(args, default_outdir)
