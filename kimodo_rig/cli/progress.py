"""Progress of a long run on a terminal: after PROGRESS_AFTER_S, one stderr line rewritten in place (what
is being done, and for how long), cleared when the run ends; nothing at all when stderr is not a terminal
(a pipe, a log file), so output that is read by programs never carries it."""
from __future__ import annotations

import sys
import time
TYPE_CHECKING = False  # typing.TYPE_CHECKING; neither typing nor threading is loaded unless a terminal shows the line
if TYPE_CHECKING:
    from typing import IO, Optional

PROGRESS_AFTER_S = 2.0  # s: a run shorter than this shows nothing
PROGRESS_EVERY_S = 0.5  # s between redraws of the line
_CLEAR = "\r\x1b[K"  # back to the line's start, and erase it


class Progress:
    """`with Progress("walk.npz") as progress: progress.step("writing")`: the line reads
    `walk.npz: writing, 3 s` once the run has taken PROGRESS_AFTER_S."""

    def __init__(self, label: str, stream: "Optional[IO[str]]" = None, after_s: float = PROGRESS_AFTER_S) -> None:
        self.label = label
        self.stage = ""
        self.stream = stream if stream is not None else sys.stderr
        self.after_s = after_s
        self.shown = False
        self._lock = None  # type: Optional[threading.Lock]
        self._done = None  # type: Optional[threading.Event]
        self._thread = None  # type: Optional[threading.Thread]
        self._started = time.monotonic()

    def __enter__(self) -> "Progress":
        isatty = getattr(self.stream, "isatty", None)
        if isatty is not None and isatty():
            import threading

            self._lock, self._done = threading.Lock(), threading.Event()
            self._thread = threading.Thread(target=self._show, name="kimodo-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is not None:
            self._done.set()  # type: ignore[union-attr]
            self._thread.join()
            self.clear()

    def step(self, stage: str) -> None:
        self.stage = stage

    def clear(self) -> None:
        """Erase the line (before printing anything else to the terminal); the next redraw brings it back."""
        if self._lock is None:
            return
        with self._lock:
            if self.shown:
                self.stream.write(_CLEAR)
                self.stream.flush()
                self.shown = False

    def _show(self) -> None:
        done, lock = self._done, self._lock
        if done.wait(self.after_s):  # type: ignore[union-attr]
            return
        while not done.is_set():  # type: ignore[union-attr]
            with lock:  # type: ignore[union-attr]
                text = "{}: {}{:.0f} s".format(self.label, self.stage + ", " if self.stage else "", time.monotonic() - self._started)
                self.stream.write(_CLEAR + text)
                self.stream.flush()
                self.shown = True
            done.wait(PROGRESS_EVERY_S)  # type: ignore[union-attr]
