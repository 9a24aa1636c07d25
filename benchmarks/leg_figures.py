#!/usr/bin/env python3
"""Issue 40's leg figures of every shared clip on every character variant the tests build, judged by
tests/leg_figures.py (pygltflib + numpy, none of our code):

    nice /work/venvs/test-*/bin/python benchmarks/leg_figures.py [--clips soma_01,g1] [--characters mannequin,robot]
        [--jobs 2] [--no-foot-lock] [--repo DIR] [--rate-pairs soma_02:mannequin,g1_01:robot] [--rates 24,60,120]

Each pair is retargeted as a user would (`python3 -m kimodo_rig retarget CLIP --target ... -o ...`, cwd the
repository: this checkout, or --repo DIR, so another branch's retarget is judged by this checkout's judge).
Printed: per clip x character, Kimodo's foot skate (cm a frame per 1.7 m) of the output and the clip's own,
the planted soles' worst distance from the rest floor, the lowest foot or hand vertex, the worst limb
segment turn beyond the source's, and which of the issue's bars each meets (skate <= the clip's own,
planted <= 1 cm, lowest >= -2 cm, turn <= 10 deg). Then, for the --rate-pairs, the clip resampled to each of
--rates retargeted (`--fps`) and compared joint by joint with the 30 fps output at common instants (bars:
mean <= 1 cm, worst <= 3 cm per 1.7 m). Needs the test venv's Python. Not part of the test run.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "tests"))

import leg_figures as lf  # noqa: E402

CLIPS = HERE.parent / "shared" / "kimodo" / "npz"
if not CLIPS.is_dir():
    CLIPS = HERE / "tests" / "data" / "npz"
SHARED_CLIPS = ("soma_01_single_text_prompt", "soma_02_multi_text_prompt", "soma_03_full_body_keyframes",
                "soma_04_ee_constraint", "g1_01_single_text_prompt", "g1_02_multi_text_ee_constraint",
                "g1_03_full_body_keyframes", "g1_04_ee_constraint")


def retarget(repo: Path, clip: Path, target: str, out: Path, lock: bool, fps: float = 0.0) -> None:
    command = ["python3", "-m", "kimodo_rig", "retarget", str(clip), "--target", target, "-o", str(out)]
    command += (["--fps", "{:g}".format(fps)] if fps else []) + ([] if lock else ["--no-foot-lock"])
    # Nothing written into the checkout judged (it may be another helper's): no bytecode cache.
    environment = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    result = subprocess.run(command, cwd=str(repo), capture_output=True, text=True, env=environment)
    if result.returncode != 0:
        raise RuntimeError("{}: {}".format(" ".join(command), result.stderr.strip()[-400:]))


def _pick(names, wanted: str):
    """The names equal to or starting with one of the comma-separated keys (all without keys)."""
    keys = [k for k in wanted.split(",") if k]
    return [n for n in names if not keys or any(n.startswith(k) for k in keys)]


def figures_table(repo: Path, clips, characters, names, lock: bool, jobs: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="kimodo_leg_figures_"))

    def judge(job):
        clip, name = job
        out = folder / "{}_{}.glb".format(clip, name)
        try:
            retarget(repo, CLIPS / clip / "motion.npz", characters[name].target, out, lock)
            return job, lf.figures(out, characters[name], lf.read_clip(CLIPS / clip / "motion.npz"))
        except Exception as error:  # one failed pair is a row of the table, not the end of the run
            return job, {"error": str(error).splitlines()[0][:200]}

    pairs = [(clip, name) for clip in clips for name in names]
    print("{:<30} {:<24} {:>13} {:>8} {:>8} {:>6}  {:<5} {:<7} {:<6} {:<4}  {}".format(
        "clip", "character", "skate cm/fr", "planted", "lowest", "turn", "skate", "planted", "lowest", "turn", "worst turn"))
    print("{:<30} {:<24} {:>13} {:>8} {:>8} {:>6}".format("", "", "ours / own", "cm", "cm", "deg"))
    failed = {"skate": 0, "planted": 0, "lowest": 0, "turn": 0, "error": 0}
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        for (clip, name), got in pool.map(judge, pairs):
            if "error" in got:
                failed["error"] += 1
                print("{:<30} {:<24} ERROR {}".format(clip, name, got["error"]))
                continue
            ok = lf.passes(got)
            for key, value in ok.items():
                failed[key] += not value
            print("{:<30} {:<24} {:>6.3f}/{:<6.3f} {:>8.2f} {:>8.2f} {:>6.1f}  {:<5} {:<7} {:<6} {:<4}  {}".format(
                clip, name, got["skate_cm"], got["source_skate_cm"], got["planted_cm"], got["lowest_cm"], got["turn_deg"],
                *("pass" if ok[k] else "FAIL" for k in ("skate", "planted", "lowest", "turn")), got["turn_where"]), flush=True)
    print("pairs failing: " + ", ".join("{} {}/{}".format(k, v, len(pairs)) for k, v in failed.items()))


def frame_rate_table(repo: Path, pairs, characters, rates, lock: bool, folder: Path) -> None:
    print("\nframe rate: joints against the 30 fps output at common instants, cm per 1.7 m (bars: mean <= {}, worst <= {})"
          .format(lf.FRAME_RATE_MEAN_CM, lf.FRAME_RATE_WORST_CM))
    print("{:<30} {:<24} {:>5} {:>8} {:>8}  {}".format("clip", "character", "fps", "mean", "worst", "where"))
    for clip_key, name in pairs:
        clip = _pick(SHARED_CLIPS, clip_key)[0]
        character = characters[name]
        base_path = folder / "{}_{}_30.glb".format(clip, name)
        retarget(repo, CLIPS / clip / "motion.npz", character.target, base_path, lock)
        base = lf.joint_track(base_path)
        for fps in rates:
            source = lf.resample_npz(CLIPS / clip / "motion.npz", fps, folder / "{}_{:g}".format(clip, fps) / "motion.npz")
            out = folder / "{}_{}_{:g}.glb".format(clip, name, fps)
            retarget(repo, source, character.target, out, lock, fps)
            got = lf.frame_rate_distances(base[:2], lf.joint_track(out)[:2], lf.character_height(character))
            verdict = got["mean_cm"] <= lf.FRAME_RATE_MEAN_CM and got["worst_cm"] <= lf.FRAME_RATE_WORST_CM
            print("{:<30} {:<24} {:>5g} {:>8.2f} {:>8.2f}  {} at {:.2f} s  {}".format(
                clip, name, fps, got["mean_cm"], got["worst_cm"], base[2][got["worst_joint"]], got["worst_time_s"],
                "pass" if verdict else "FAIL"), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clips", default="", help="comma-separated clip names or prefixes (soma_01, g1)")
    parser.add_argument("--characters", default="", help="comma-separated of " + ", ".join(lf.CHARACTER_NAMES))
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--no-foot-lock", action="store_true")
    parser.add_argument("--repo", type=Path, default=HERE, help="the checkout whose retarget is judged")
    parser.add_argument("--rate-pairs", default="soma_02:mannequin,g1_01:robot",
                        help="clip:character pairs of the frame-rate table ('' for none)")
    parser.add_argument("--rates", default="24,60,120")
    parser.add_argument("--rates-only", action="store_true", help="only the frame-rate table")
    args = parser.parse_args()
    lock = not args.no_foot_lock
    folder = Path(tempfile.mkdtemp(prefix="kimodo_leg_figures_"))
    clips = _pick([c for c in SHARED_CLIPS if (CLIPS / c / "motion.npz").is_file()], args.clips)
    names = [n for n in lf.CHARACTER_NAMES if not args.characters or n in args.characters.split(",")]
    pairs = [p.split(":") for p in args.rate_pairs.split(",") if p]
    wanted = sorted(({c for _, c in pairs} if args.rates_only else set(names)) | {c for _, c in pairs})
    characters = lf.build_characters(folder / "characters", wanted)

    print("repo {} ({}), foot lock {}".format(args.repo, _head(args.repo), "on" if lock else "off"))
    if not args.rates_only:
        figures_table(args.repo, clips, characters, names, lock, args.jobs)
    if pairs:
        frame_rate_table(args.repo, pairs, characters, [float(r) for r in args.rates.split(",")], lock, folder)
    return 0


def _head(repo: Path) -> str:
    result = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=str(repo), capture_output=True, text=True)
    return result.stdout.strip() or "?"


if __name__ == "__main__":
    sys.exit(main())
