"""Argument types shared by the verbs."""
from __future__ import annotations

import argparse


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a number, got {!r}".format(text))
    if not value > 0:
        raise argparse.ArgumentTypeError("must be greater than 0")
    return value
