"""Argument types shared by the verbs."""
from __future__ import annotations

import argparse

from .. import formats
from ..formats import glb
from ..formats.options import WriteOptions


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a number, got {!r}".format(text))
    if not value > 0:
        raise argparse.ArgumentTypeError("must be greater than 0")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a whole number, got {!r}".format(text))
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """What a verb that reads motions and writes one takes, as `convert` names them."""
    parser.add_argument("--format", choices=sorted(formats.FORMATS), help="output format (default: by extension)")
    parser.add_argument("--fps", type=positive_float, help="frame rate where an input does not carry one")
    parser.add_argument("--rest", choices=("seed", "tpose"), default="seed", help="rest of SOMA BVH output")
    parser.add_argument("--names", choices=glb.NAME_STYLES, default="mannequin", help="joint names in .glb output")


def write_output(motion, args: argparse.Namespace) -> None:
    """Write `motion` to args.output as add_output_arguments' options say."""
    formats.write_file(motion, args.output, format=args.format, options=WriteOptions(names=args.names, rest=args.rest))
