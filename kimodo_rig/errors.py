"""The one user-facing error type.

Every problem a user can cause (a bad file, a bad option) raises KimodoError with one complete line
that names the file and what is wrong. Front ends alone catch it and show it.
"""
from __future__ import annotations

MAX_MESSAGE = 400  # characters; a message quoting hostile input (a 6 MB header) is cut in the middle


class KimodoError(Exception):
    """A problem with the user's input or environment, described in one line. The line is enforced here:
    text taken from a file (a zip member name with a newline, a megabyte-long token) is escaped and cut,
    keeping the start (the path) and the end."""

    def __init__(self, message: str = "") -> None:
        super().__init__(one_line(message))


def one_line(text: str) -> str:
    """`text` with control characters escaped (a newline becomes \\n) and at most MAX_MESSAGE long."""
    text = str(text)
    for _ in range(2):  # escaping can lengthen what cutting shortened: cut, escape, cut again
        if len(text) > MAX_MESSAGE:
            text = text[:260] + " ... " + text[-(MAX_MESSAGE - 265):]
        if not text.isprintable():
            text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text
