#!/usr/bin/env python3
"""Turn Kimodo clip folders into self-checked .glb files: `python kimodo_to_glb.py path/to/clip`.

Works from a plain download: the kimodo_rig package sits beside this file. Output goes beside this
file unless --outdir or -o says otherwise (that is where unreal_retarget.py looks by default).
"""
import os
import sys

HERE = os.path.dirname(os.path.realpath(__file__))  # os.path, not pathlib: a one-clip job never loads it
sys.path.insert(0, HERE)

from kimodo_rig.cli import glb_script_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(glb_script_main(default_outdir=HERE))
