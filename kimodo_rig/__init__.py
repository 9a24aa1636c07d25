"""kimodo-rig: Kimodo motion onto any character. Standard library only, Python 3.8+."""
from __future__ import annotations

__version__ = "0.1.0"

from .errors import KimodoError  # noqa: E402
from .model import Motion, Skeleton  # noqa: E402

__all__ = ["KimodoError", "Motion", "Skeleton", "__version__"]
