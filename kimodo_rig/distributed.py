"""The cluster path: Kimodo clip folders -> self-checked .glb files on a Dask cluster, one clip a task.

    pip install ".[dask]"        # in the kimodo-rig checkout: the package is not on a registry
    python -m kimodo_rig.distributed clips/* --outdir glb --scheduler tcp://scheduler:8786
    python -m kimodo_rig.distributed clips/* --outdir glb --workers 8      # a LocalCluster on this machine

or from Python, on a `dask.distributed.Client` you already have:

    from kimodo_rig.distributed import convert_library
    report = convert_library(client, clip_folders, "glb")

Each task converts one clip exactly as `kimodo_to_glb.py` does (the same reader, writer and self-check,
so the same bytes) and is idempotent: the output is written atomically (whole or not at all) and a clip
whose output already exists and is newer than every file of the clip is skipped, so a job that stopped
half-way is simply run again. Outputs are named after the clip folders (a library's folder names are its
ids; a name given twice gets `_2`, `_3` in input order), not after the prompts, so a clip's output name
never depends on reading it. Failures are collected, never raised mid-run, and reported at the end.

Dask is imported here alone, inside the functions that use it: the rest of kimodo_rig is standard library.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, List, NamedTuple, Optional, Sequence, Tuple

from . import naming
from .errors import KimodoError
from .formats import glb, raw
from .formats.options import WriteOptions

CONVERTED, SKIPPED, FAILED = "converted", "skipped", "failed"


class LibraryReport(NamedTuple):
    converted: List[str]  # output paths written by this run
    skipped: List[str]  # output paths already up to date
    failed: List[Tuple[str, str]]  # (clip, the one line saying why)

    def summary(self, seconds: float) -> str:
        return "{} converted, {} skipped, {} failed, {:.1f} s".format(
            len(self.converted), len(self.skipped), len(self.failed), seconds)


def output_paths(clips: Sequence[str], outdir) -> List[Path]:
    """Each clip's output: its folder's name as a safe stem, `_2`, `_3` where a name repeats."""
    taken = set()  # type: set
    return [Path(outdir) / (naming.unique(naming.sanitise_asset_name(Path(clip).resolve().name), taken) + ".glb")
            for clip in clips]


def up_to_date(clip: Path, target: Path) -> bool:
    """Whether `target` exists and is newer than every file of the clip folder (and the folder itself)."""
    try:
        written = target.stat().st_mtime
        inputs = [clip.stat().st_mtime] + [path.stat().st_mtime for path in clip.iterdir() if path.is_file()]
    except OSError:
        return False
    return written > max(inputs)


def convert_one(clip: str, target: str, fps: float = 30.0, names: str = "mannequin") -> Tuple[str, str, str]:
    """One task: (status, clip, detail), detail the output path or the error line. Bad input is a
    `failed` result, not an exception, so the run goes on."""
    if up_to_date(Path(clip), Path(target)):
        return SKIPPED, clip, target
    try:
        glb.write(raw.read(clip, fps=fps), target, WriteOptions(names=names))
    except KimodoError as error:
        return FAILED, clip, str(error)
    return CONVERTED, clip, target


def convert_library(client: Any, clips: Sequence[str], outdir, *, fps: float = 30.0,
                    names: str = "mannequin") -> LibraryReport:
    """Convert `clips` into `outdir` (created if missing) on the cluster `client` talks to, one clip a
    task; waits for all and returns what was converted, skipped and failed. A task that raised (a bug,
    a worker lost for good) counts as failed with its exception."""
    from dask.distributed import as_completed

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    clips = [str(clip) for clip in clips]
    targets = [str(path) for path in output_paths(clips, outdir)]
    futures = [client.submit(convert_one, clip, target, fps, names, pure=False) for clip, target in zip(clips, targets)]
    clip_of = {future.key: clip for future, clip in zip(futures, clips)}
    results = {}
    for future in as_completed(futures):
        if future.status == "error":
            error = future.exception()
            results[clip_of[future.key]] = (FAILED, clip_of[future.key], "{}: {}: {}".format(
                clip_of[future.key], type(error).__name__, error))
        else:
            status, clip, detail = future.result()
            results[clip] = (status, clip, detail)
    report = LibraryReport([], [], [])
    for clip in clips:  # input order, whatever order the tasks finished in
        status, _, detail = results[clip]
        if status == CONVERTED:
            report.converted.append(detail)
        elif status == SKIPPED:
            report.skipped.append(detail)
        else:
            report.failed.append((clip, detail))
    return report


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kimodo_rig.distributed",
                                     description="Kimodo clip folders -> self-checked .glb files on a Dask cluster")
    parser.add_argument("clips", nargs="+", metavar="CLIP")
    parser.add_argument("--outdir", required=True, metavar="DIR", help="output folder (created if missing)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", help="a running Dask scheduler, e.g. tcp://host:8786")
    where.add_argument("--workers", type=int, default=2, metavar="N",
                       help="without --scheduler: a LocalCluster of N worker processes (default 2)")
    parser.add_argument("--fps", type=float, default=30.0)
    parser.add_argument("--names", choices=glb.NAME_STYLES, default="mannequin")
    args = parser.parse_args(argv)
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        print("the cluster path needs Dask: pip install \".[dask]\" in the kimodo-rig checkout", file=sys.stderr)
        return 1
    started = time.perf_counter()
    if args.scheduler:
        with Client(args.scheduler) as client:
            report = convert_library(client, args.clips, args.outdir, fps=args.fps, names=args.names)
    else:
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            report = convert_library(client, args.clips, args.outdir, fps=args.fps, names=args.names)
    for _, line in report.failed:
        print(line, file=sys.stderr)
    print(report.summary(time.perf_counter() - started))
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
