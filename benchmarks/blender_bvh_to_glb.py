"""Blender's side of bench_glb.py, run in Blender's Python (bpy): import each Kimodo BVH and export it as
a GLB, `repeats` times, timing each round trip in this one process (Blender's start-up is timed apart).

Usage: python blender_bvh_to_glb.py OUTDIR REPEATS FPS FILE.bvh...
Prints one JSON object as the last line: {"startup_s": ..., "clips": {bvh name: [seconds, ...]}}.
"""
import json
import sys
import time
from pathlib import Path

STARTED = time.perf_counter()
import bpy  # noqa: E402

STARTUP = time.perf_counter() - STARTED


def bvh_to_glb(bvh: Path, glb: Path, fps: float) -> float:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps = int(round(fps))
    started = time.perf_counter()
    # Kimodo's BVH is centimetres, Y up, +Z forward: scale to metres, keep its axes as Blender's glTF
    # exporter expects Blender's own (Z up), as a user importing it would.
    bpy.ops.import_anim.bvh(filepath=str(bvh), global_scale=0.01, frame_start=0, use_fps_scale=False,
                            update_scene_fps=False, update_scene_duration=True, axis_forward="-Z", axis_up="Y")
    bpy.ops.export_scene.gltf(filepath=str(glb), export_format="GLB", export_animations=True)
    return time.perf_counter() - started


def main():
    outdir, repeats, fps = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    clips = {}
    for bvh in map(Path, sys.argv[4:]):
        clips[bvh.name] = [bvh_to_glb(bvh, outdir / (bvh.stem + "_blender.glb"), fps) for _ in range(repeats)]
    print(json.dumps({"startup_s": STARTUP, "clips": clips}))


main()
