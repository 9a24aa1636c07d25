"""Many inputs, one verb: run a per-item function on a pool of processes, report in input order.

A verb gives `run_batch` its items, a `work(item)` function (module level, so a worker process can be
handed it; its arguments and result must pickle) and a `finish(item, result)` that runs here, in input
order, and returns the item's line (it may write files, name them, or raise KimodoError). Each item
prints one line, on stdout when it worked and its KimodoError line on stderr when it did not, in input
order whatever order the workers finish in; warnings a worker logs are held back and shown with its
item. With several items a closing line says how many were converted, how many failed, and the seconds.
`--jobs 1` (or a single item) runs everything in this process and starts no pool.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from itertools import repeat
from typing import Any, Callable, List, Optional, Sequence, Tuple

from ..errors import KimodoError

LOGGER = "kimodo_rig"


def default_jobs() -> int:
    """Every core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))  # type: ignore[attr-defined]
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def jobs_argument(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a whole number, got {!r}".format(text))
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def add_jobs_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--jobs", type=jobs_argument, default=None, metavar="N",
                        help="processes to use for several inputs (default: every core, {})".format(default_jobs()))


class _HeldWarnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def attempt(work: Callable[[Any], Any], item: Any) -> Tuple[Any, Optional[str], List[str]]:
    """work(item) with its warnings held back: (result, None, warnings) or (None, error line, warnings)."""
    logger = logging.getLogger(LOGGER)
    held = _HeldWarnings()
    shown, logger.handlers = logger.handlers, [held]
    try:
        return work(item), None, held.messages
    except KimodoError as error:
        return None, str(error), held.messages
    finally:
        logger.handlers = shown


def run_batch(items: Sequence[Any], work: Callable[[Any], Any], finish: Callable[[Any, Any], str],
              jobs: Optional[int] = None) -> int:
    """Run `work` over `items` on `jobs` processes (default: every core), print each item's line in input
    order, then the summary when there are several items. Returns the number that failed."""
    started = time.perf_counter()
    jobs = min(jobs or default_jobs(), len(items))
    logger = logging.getLogger(LOGGER)
    converted = failed = 0
    pool = None
    try:
        if jobs > 1:
            from concurrent.futures import ProcessPoolExecutor  # only a batch pays for multiprocessing

            pool = ProcessPoolExecutor(jobs)
            outcomes = pool.map(attempt, repeat(work), items, chunksize=1)  # yields in input order
        else:
            outcomes = (attempt(work, item) for item in items)
        for item, (result, error, warnings) in zip(items, outcomes):
            for message in warnings:
                logger.warning("%s", message)
            if error is None:
                try:
                    line = finish(item, result)
                except KimodoError as problem:
                    error = str(problem)
            if error is None:
                print(line, flush=True)
                converted += 1
            else:
                print(error, file=sys.stderr, flush=True)
                failed += 1
    finally:
        if pool is not None:
            pool.shutdown()
    if len(items) > 1:
        print("{} converted, {} failed, {:.1f} s".format(converted, failed, time.perf_counter() - started))
    return failed
