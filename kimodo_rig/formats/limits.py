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
# A string (to its closing quote, or to the end when it has none: never scanned twice).
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_ALL_BUT_BRACKETS = {code: None for code in range(128) if chr(code) not in _DEPTH_STEP}  # translate() deletes these


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


def parse_json(text: Union[str, bytes], source: str, what: str = "JSON") -> Any:
    """json.loads, refusing nesting deeper than MAX_JSON_DEPTH before parsing (json.loads raises
    RecursionError near 1,000 levels, and a parsed structure that deep breaks whoever walks it).
    Raises KimodoError for the depth; ValueError and UnicodeDecodeError for malformed JSON pass on to
    the caller, which knows what the file was meant to be."""
    if isinstance(text, bytes):
        # A leading byte-order mark is skipped: glTF 2.0 (as RFC 8259) says writers must not add one and
        # readers may ignore it; Windows editors add one to .gltf, meta.json and hand-made files alike.
        text = text.decode("utf-8-sig")
    if max(accumulate(map(_DEPTH_STEP.__getitem__, json_brackets(text))), default=0) > MAX_JSON_DEPTH:
        raise KimodoError("{}: {} nests more than {} levels deep".format(source, what, MAX_JSON_DEPTH))
    try:
        return json.loads(text)
    except RecursionError:  # not reached after the scan; kept so no RecursionError can escape
        raise KimodoError("{}: {} nests too deeply to read".format(source, what)) from None


def json_brackets(text: str) -> str:
    """The brackets of JSON `text` outside its strings, in order (an unclosed string runs to the end),
    found in C. Without a backslash (so without escaped quotes) the strings are every other part between
    quotes, and in ASCII text all that is not a bracket goes in one translate: the files this package
    writes, read back by its self-check three times faster than by the two regular expressions (which
    spent three times what json.loads does on a .glb's JSON). Any other text takes the expressions."""
    if "\\" not in text and text.isascii():
        return "".join(text.split('"')[::2]).translate(_ALL_BUT_BRACKETS)
    return _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
