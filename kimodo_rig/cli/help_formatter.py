"""argparse's help at the terminal's width, found without shutil."""
from __future__ import annotations

import argparse
import os
import sys


class SizedHelpFormatter(argparse.HelpFormatter):
    """argparse's help formatter, given the terminal's width as shutil.get_terminal_size would find it
    ($COLUMNS, else the terminal's, else 80). argparse builds a formatter for every argument it is given
    and each asks shutil, whose import (bz2, lzma, fnmatch) `kimodo_to_glb.py` would otherwise pay for."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width=None) -> None:
        if width is None:
            width = terminal_columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)


def terminal_columns() -> int:
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80
