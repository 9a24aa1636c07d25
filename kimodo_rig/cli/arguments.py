"""Argument types shared by the verbs."""
from __future__ import annotations

import argparse

from .. import formats
from ..formats import glb, limits
from ..formats.options import WriteOptions


def parsed_number(text: str, kind=float):
    """`text` as a float (or `kind` int), or argparse's one-line error naming what was typed."""
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected {}, got {!r}".format(
            "a whole number" if kind is int else "a number", text))


def positive_float(text: str) -> float:
    value = parsed_number(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be greater than 0")
    return value


def frames_per_second(text: str) -> float:
    value = parsed_number(text)
    if not limits.MIN_FPS <= value <= limits.MAX_FPS:  # what every reader accepts from a file
        raise argparse.ArgumentTypeError("must be {:g} to {:g} frames per second".format(limits.MIN_FPS, limits.MAX_FPS))
    return value


def non_negative_int(text: str) -> int:
    value = parsed_number(text, int)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """What a verb that reads motions and writes one takes, as `convert` names them."""
    parser.add_argument("--format", choices=sorted(formats.FORMATS), help="output format (default: by extension)")
    parser.add_argument("--fps", type=frames_per_second, help="frame rate where an input does not carry one")
    parser.add_argument("--rest", choices=("seed", "tpose"), default="seed", help="rest of SOMA BVH output")
    parser.add_argument("--names", choices=glb.NAME_STYLES, default="mannequin", help="joint names in .glb output")


def write_output(motion, args: argparse.Namespace) -> None:
    """Write `motion` to args.output as add_output_arguments' options say."""
    formats.write_file(motion, args.output, format=args.format, options=WriteOptions(names=args.names, rest=args.rest))
