"""What any reader accepts from a file, stated once: frame rates, JSON nesting. Hostile input (a frame
time of 1e-320 s, JSON nested 2,000 deep) is refused here in one line rather than deep in a writer."""
from __future__ import annotations

import json
import math
import re
from itertools import accumulate
TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    from typing import Any, Union

from ..errors import KimodoError

MIN_FPS = 1.0
MAX_FPS = 1000.0
MAX_JSON_DEPTH = 64  # glTF nests about 6 deep; its extras rarely more than a few levels
# Digits of the longest JSON integer (or option's whole number) read as an int: twice those of 2**64, and
# its float squared still finite. A longer one is read as a float (inf beyond 1e308), which every check
# for a count or an index refuses in its own words: Python's int() refuses 4,300 digits and more
# (ValueError), and float() of a 400-digit int raises OverflowError.
MAX_JSON_INTEGER_DIGITS = 40
# Characters the nesting scan takes at once: its memory is a few times this, whatever the file's size
# (a regular expression over a whole string kept a backtracking entry per character: 8 MB of text, 1 GB).
JSON_SCAN_CHARACTERS = 1 << 16
_BACKSLASHES = re.compile(r"\\*")
_ESCAPE = re.compile(r"\\.", re.DOTALL)  # a backslash and the character it escapes
_NOT_BRACKET_BYTES = bytes(code for code in range(128) if chr(code) not in "[]{}")
_DEPTH_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def frame_rate(value: float, source: str, what: str = "frame rate") -> float:
    """`value` as frames per second, or a KimodoError unless it is finite and within MIN_FPS..MAX_FPS."""
    try:
        rate = float(value)
    except (TypeError, ValueError, OverflowError):
        rate = math.nan
    if not MIN_FPS <= rate <= MAX_FPS:  # also refuses NaN
        raise KimodoError("{}: {} {!r} fps is outside {:g} to {:g} fps".format(source, what, rate, MIN_FPS, MAX_FPS))
    return rate


def frame_rate_of_period(seconds: float, source: str, what: str = "frame time") -> float:
    """The frame rate of a frame period, refused (before any division) unless it gives MIN_FPS..MAX_FPS."""
    if not (math.isfinite(seconds) and 1.0 / MAX_FPS <= seconds <= 1.0 / MIN_FPS):
        raise KimodoError("{}: {} {!r} s is not a frame period ({:g} to {:g} fps)".format(
            source, what, seconds, MIN_FPS, MAX_FPS))
    return frame_rate(1.0 / seconds, source, what)


def increasing_times(times, source: str, what: str) -> None:
    """Refuse key times (any unit) unless they are finite and each later than the one before: a repeated
    or earlier time is no frame, and a NaN compares false with everything, so it passes any other test."""
    if not all(math.isfinite(t) for t in times) or any(later <= earlier for earlier, later in zip(times, times[1:])):
        raise KimodoError("{}: {} are not increasing finite numbers".format(source, what))


def parse_json(text: Union[str, bytes], source: str, what: str = "JSON") -> Any:
    """json.loads, refusing nesting deeper than MAX_JSON_DEPTH before parsing (json.loads raises
    RecursionError near 1,000 levels, and a parsed structure that deep breaks whoever walks it), and
    reading an integer of more than MAX_JSON_INTEGER_DIGITS digits as a float.
    Raises KimodoError for the depth; ValueError and UnicodeDecodeError for malformed JSON pass on to
    the caller, which knows what the file was meant to be."""
    if isinstance(text, bytes):
        # A leading byte-order mark is skipped: glTF 2.0 (as RFC 8259) says writers must not add one and
        # readers may ignore it; Windows editors add one to .gltf, meta.json and hand-made files alike.
        text = text.decode("utf-8-sig")
    if max(accumulate(map(_DEPTH_STEP.__getitem__, json_brackets(text))), default=0) > MAX_JSON_DEPTH:
        raise KimodoError("{}: {} nests more than {} levels deep".format(source, what, MAX_JSON_DEPTH))
    try:
        return json.loads(text, parse_int=_json_integer)
    except RecursionError:  # not reached after the scan; kept so no RecursionError can escape
        raise KimodoError("{}: {} nests too deeply to read".format(source, what)) from None


def whole_number(text: str, where: str, what: str = "a whole number") -> int:
    """`text` as a non-negative int, or a KimodoError naming `where`: ASCII digits only (str.isdigit()
    takes '\u00b2', which int() refuses), at most MAX_JSON_INTEGER_DIGITS of them (int() refuses 4,300
    digits and more; float() of 400 overflows), as a JSON integer is read."""
    digits = text.strip()
    if not (digits.isascii() and digits.isdigit()):
        raise KimodoError("{}: {!r} is not {}".format(where, text, what))
    if len(digits) > MAX_JSON_INTEGER_DIGITS:
        raise KimodoError("{}: {} of {} digits is out of range (at most {})".format(where, what, len(digits), MAX_JSON_INTEGER_DIGITS))
    return int(digits)


def _json_integer(text: str) -> Union[int, float]:
    return int(text) if len(text.lstrip("-")) <= MAX_JSON_INTEGER_DIGITS else float(text)


def json_brackets(text: str) -> bytes:
    """The brackets of JSON `text` outside its strings, in order (an unclosed string runs to the end), as
    ASCII bytes, found in C a slice at a time. In each slice escapes go first (a slice never ends inside
    one), so the quotes left are the strings' ends and the text outside strings is every other part
    between them. A backslash outside a string (not JSON) pairs with the next character here, where
    json.loads stops at it: the brackets before it, all json.loads can nest, are found the same."""
    found = []
    inside = False  # whether the slice starts inside a string
    at = 0
    while at < len(text):
        end = at + JSON_SCAN_CHARACTERS
        if end < len(text) and text[end - 1] == "\\":  # the cut is in a run of backslashes: move it past
            end = _BACKSLASHES.match(text, end).end() + 1  # the run and the character the last one escapes
        part = text[at:end]
        if "\\" in part:
            part = _ESCAPE.sub("", part)
        pieces = part.split('"')
        outside = "".join(pieces[1::2] if inside else pieces[::2])
        inside = inside != (len(pieces) % 2 == 0)
        found.append(outside.encode("ascii", "ignore").translate(None, _NOT_BRACKET_BYTES))
        at = end
    return b"".join(found)
