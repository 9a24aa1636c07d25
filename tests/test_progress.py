"""Progress of long runs (issue 40): one stderr line on a terminal, rewritten in place and cleared at the
end; nothing in a pipe. The command line is run on a pseudo-terminal (the pty module) as a user's shell has it."""
from __future__ import annotations

import io
import os
import pty
import re
import select
import subprocess
import sys
import time

from conftest import NPZ, ROOT, run_cli
from kimodo_rig.cli.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_line_shows_the_stage_after_the_delay_and_is_cleared():
    stream = Terminal()
    with Progress("walk.npz", stream=stream, after_s=0.05) as progress:
        progress.step("writing")
        time.sleep(0.3)
    text = stream.getvalue()
    assert "\r\x1b[Kwalk.npz: writing, 0 s" in text
    assert text.endswith("\r\x1b[K")


def test_a_short_run_or_a_pipe_shows_nothing():
    quick, pipe = Terminal(), io.StringIO()
    with Progress("walk.npz", stream=quick, after_s=5.0):
        time.sleep(0.05)
    with Progress("walk.npz", stream=pipe, after_s=0.0):
        time.sleep(0.2)
    assert quick.getvalue() == "" and pipe.getvalue() == ""


def _long_clip(tmp_path):
    clip = tmp_path / "long.npz"
    # Ten copies (73 s of motion): longer than PROGRESS_AFTER_S at the 20x real time and more.
    parts = [NPZ / "soma_02_multi_text_prompt" / "motion.npz"] * 10
    assert run_cli("join", *parts, "-o", clip).returncode == 0
    return clip


def test_a_long_retarget_shows_progress_on_a_terminal_and_none_in_a_pipe(tmp_path):
    clip = _long_clip(tmp_path)  # seconds of work on any machine today
    command = [sys.executable, "-m", "kimodo_rig", "retarget", str(clip), "--target", "mannequin", "-o", str(tmp_path / "a.glb")]
    master, slave = pty.openpty()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=slave, env=env, cwd=str(tmp_path))
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        elif process.poll() is not None:
            break
    out = process.stdout.read().decode()
    process.wait()
    os.close(master)
    assert process.returncode == 0
    text = seen.decode()
    assert re.search(r"\r\x1b\[Klong\.npz: (retargeting \d+ frames|writing|measuring the written file), \d+ s", text), text
    assert text.endswith("\r\x1b[K"), repr(text[-80:])
    assert "\r" not in out and out.startswith("a: SOMA"), out

    piped = run_cli("retarget", clip, "--target", "mannequin", "-o", tmp_path / "b.glb")
    assert piped.returncode == 0 and "\r" not in piped.stderr and "retargeting" not in piped.stderr
