"""Argument types shared by the verbs. argparse is loaded only when one of them refuses a value (and by
the parsers themselves): `kimodo_to_glb.py` reads its plain arguments with these types and no argparse."""
from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    import argparse
    from typing import Sequence

from .. import formats
from ..formats import glb, limits
from ..files import refuse_output_over_input
from ..formats.options import WriteOptions


def refused(message: str) -> Exception:
    """argparse.ArgumentTypeError(message): what an argument type raises for argparse to show."""
    import argparse

    return argparse.ArgumentTypeError(message)


def parsed_number(text: str, kind=float):
    """`text` as a float (or `kind` int), or argparse's one-line error naming what was typed."""
    try:
        return kind(text)
    except ValueError:
        raise refused("expected {}, got {!r}".format("a whole number" if kind is int else "a number", text))


def positive_float(text: str) -> float:
    value = parsed_number(text)
    if not value > 0:
        raise refused("must be greater than 0")
    return value


def frames_per_second(text: str) -> float:
    value = parsed_number(text)
    if not limits.MIN_FPS <= value <= limits.MAX_FPS:  # what every reader accepts from a file
        raise refused("must be {:g} to {:g} frames per second".format(limits.MIN_FPS, limits.MAX_FPS))
    return value


def non_negative_int(text: str) -> int:
    value = parsed_number(text, int)
    if value < 0:
        raise refused("must be 0 or more")
    return value


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """What a verb that reads motions and writes one takes, as `convert` names them."""
    parser.add_argument("--format", choices=sorted(formats.FORMATS), help="output format (default: by extension)")
    parser.add_argument("--fps", type=frames_per_second, help="frame rate where an input does not carry one")
    parser.add_argument("--rest", choices=("seed", "tpose"), default="seed", help="rest of SOMA BVH output")
    parser.add_argument("--names", choices=glb.NAME_STYLES, default="mannequin", help="joint names in .glb output")


def write_output(motion, args: argparse.Namespace, inputs: Sequence[str]) -> None:
    """Write `motion` to args.output as add_output_arguments' options say; never over one of `inputs`."""
    refuse_output_over_input(args.output, inputs)
    formats.write_file(motion, args.output, format=args.format, options=WriteOptions(names=args.names, rest=args.rest))
