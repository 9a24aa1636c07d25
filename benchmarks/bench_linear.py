"""Issue 9's speed fixes are linear: time at N and at 10N, and their ratio (10 is linear, 100 quadratic).

    python3 benchmarks/bench_linear.py [--repeats 3]

- cycle check: gltf_document.check_structure on a chain of N nodes (it walked every node to the root);
- shared accessors: gltf_document.animation_keyframes with N channels sharing one key-time accessor and
  one output accessor of 2,000 items (each was decoded again for every channel);
- .glb writer: glb.encode of a skeleton of N sibling joints (Skeleton.children scanned every joint).
Medians of the repeats, all in this process."""
from __future__ import annotations

import argparse
import statistics
import struct
import sys
import time
from array import array
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kimodo_rig.formats import glb  # noqa: E402
from kimodo_rig.formats import gltf_document as gd  # noqa: E402
from kimodo_rig.model import Motion, Skeleton  # noqa: E402


def chain(n: int):
    gltf = {"asset": {"version": "2.0"}, "nodes": [{"children": [i + 1]} for i in range(n - 1)] + [{}]}
    return lambda: gd.check_structure(gltf, "chain")


def shared(n: int, keys: int = 2000):
    binary = struct.pack("<{}f".format(keys), *range(keys)) + struct.pack("<{}f".format(keys * 4), *([0.0, 0.0, 0.0, 1.0] * keys))
    gltf = {"asset": {"version": "2.0"}, "nodes": [{} for _ in range(n)],
            "bufferViews": [{"buffer": 0, "byteLength": keys * 4}, {"buffer": 0, "byteOffset": keys * 4, "byteLength": keys * 16}],
            "accessors": [{"bufferView": 0, "componentType": 5126, "count": keys, "type": "SCALAR"},
                          {"bufferView": 1, "componentType": 5126, "count": keys, "type": "VEC4"}],
            "animations": [{"samplers": [{"input": 0, "output": 1}],
                            "channels": [{"sampler": 0, "target": {"node": i, "path": "rotation"}} for i in range(n)]}]}
    return lambda: gd.animation_keyframes(gd.Document(gltf, binary, "shared"))


def siblings(n: int):
    skeleton = Skeleton("wide", tuple("j{}".format(i) for i in range(n)), (-1,) + (0,) * (n - 1),
                        ((0.0, 1.0, 0.0),) + ((0.1, 0.2, 0.3),) * (n - 1))
    motion = Motion(skeleton, array("d", [0.0, 0.0, 0.0, 1.0] * n * 2), array("d", [0.0, 1.0, 0.0] * 2), 30.0)
    return lambda: glb.encode(motion, names="native")


def median_seconds(run, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print("{:<18} {:>8} {:>10} {:>8} {:>10} {:>7}".format("what", "N", "s at N", "10N", "s at 10N", "ratio"))
    for name, make, n in (("cycle check", chain, 3000), ("shared accessors", shared, 300), (".glb writer", siblings, 2000)):
        small = median_seconds(make(n), args.repeats)
        large = median_seconds(make(10 * n), args.repeats)
        print("{:<18} {:>8} {:>10.3f} {:>8} {:>10.3f} {:>7.1f}".format(name, n, small, 10 * n, large, large / small))


if __name__ == "__main__":
    main()
