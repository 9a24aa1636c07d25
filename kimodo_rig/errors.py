"""The one user-facing error type.

Every problem a user can cause (a bad file, a bad option) raises KimodoError with one complete line
that names the file and what is wrong. Front ends alone catch it and show it.
"""
from __future__ import annotations


class KimodoError(Exception):
    """A problem with the user's input or environment, described in one line."""
