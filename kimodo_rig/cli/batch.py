"""Many inputs, one verb: run a per-item function on a pool of processes, report in input order.

A verb gives `run_batch` its items, a `work(item)` function (module level, so a worker process can be
handed it; its arguments and result must pickle) and a `finish(item, result)` that runs here, in input
order, and returns the item's line (it may write files, name them, or raise KimodoError). Each item
prints one line, on stdout when it worked and its KimodoError line on stderr when it did not, in input
order whatever order the workers finish in; warnings a worker logs are held back and shown with its
item. With several items a closing line says how many were converted, how many failed, and the seconds.
`--jobs 1` (or a single item) runs everything in this process and starts no pool (nor imports one).
"""
from __future__ import annotations

import os
import sys
import time
from itertools import repeat
TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    import argparse
    from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..errors import KimodoError
from .arguments import parsed_number, refused
from .progress import Progress

LOGGER = "kimodo_rig"


def default_jobs() -> int:
    """Every core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))  # type: ignore[attr-defined]
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def jobs_argument(text: str) -> int:
    value = parsed_number(text, int)
    if value < 1:
        raise refused("must be at least 1")
    return value


def jobs_option() -> Dict[str, Any]:
    """--jobs as argparse's add_argument takes it (a glb job also reads it without argparse)."""
    return dict(type=jobs_argument, default=None, metavar="N",
                help="processes to use for several inputs (default: every core, {})".format(default_jobs()))


def add_jobs_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--jobs", **jobs_option())


def attempt(work: Callable[..., Any], item: Any) -> Tuple[Any, Optional[str], List[str]]:
    """work(item) (or work(shared, item), see run_batch) with its warnings held back: (result, None,
    warnings) or (None, error line, warnings). Warnings go through logging, which a process loads only
    when something in it can warn (a glb job never does): without it nothing is held, or imported."""
    logging = sys.modules.get("logging")
    held: List[str] = []
    if logging is not None:
        logger = logging.getLogger(LOGGER)
        handler = logging.Handler()
        handler.emit = lambda record: held.append(record.getMessage())  # type: ignore[assignment]
        shown, logger.handlers = logger.handlers, [handler]
    try:
        return (work(item) if _SHARED is _NOTHING else work(_SHARED, item)), None, held
    except KimodoError as error:
        return None, str(error), held
    finally:
        if logging is not None:
            logger.handlers = shown


_NOTHING = object()
_SHARED: Any = _NOTHING  # what every item of the running batch shares (see run_batch)


def _share(shared: Any) -> None:
    global _SHARED
    _SHARED = shared


def run_batch(items: Sequence[Any], work: Callable[..., Any], finish: Callable[[Any, Any], str],
              jobs: Optional[int] = None, *, shared: Any = _NOTHING) -> int:
    """Run `work` over `items` on `jobs` processes (default: every core), print each item's line in input
    order, then the summary when there are several items. Returns the number that failed.

    `shared`, when given, is what every item needs alike (a retarget's character and bone map): `work`
    is then called as work(shared, item), and `shared` reaches each worker once, not with every item.
    Workers are forked where the system can (they start with every module this process has imported,
    so none imports anything again) and take the items in chunks, a few per worker, to keep the pool's
    own traffic small next to the work."""
    started = time.perf_counter()
    jobs = min(jobs or default_jobs(), len(items))
    converted = failed = 0
    pool = None
    progress = Progress("batch").__enter__()
    try:
        if jobs > 1:
            import multiprocessing  # only a batch pays for multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            methods = multiprocessing.get_all_start_methods()
            context = multiprocessing.get_context("fork" if "fork" in methods else None)
            pool = ProcessPoolExecutor(jobs, mp_context=context, initializer=_share, initargs=(shared,))
            chunk = max(1, min(8, len(items) // (4 * jobs)))
            outcomes = pool.map(attempt, repeat(work), items, chunksize=chunk)  # yields in input order
        else:
            _share(shared)
            outcomes = (attempt(work, item) for item in items)
        progress.step("0 of {} done".format(len(items)))
        for item, (result, error, warnings) in zip(items, outcomes):
            progress.clear()
            if warnings:
                import logging

                for message in warnings:
                    logging.getLogger(LOGGER).warning("%s", message)
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
            progress.step("{} of {} done".format(converted + failed, len(items)))
    finally:
        progress.__exit__(None, None, None)
        if pool is not None:
            pool.shutdown()
        _share(_NOTHING)
    if len(items) > 1:
        print("{} converted, {} failed, {:.1f} s".format(converted, failed, time.perf_counter() - started))
    return failed
