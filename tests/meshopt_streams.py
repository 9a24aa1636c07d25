"""Meshopt attribute streams of any length, for the decoder's judge (tests/test_meshopt.py) and its
benchmark: random deltas written as the format lays them out (EXT_meshopt_compression's Appendix A),
every group size, sentinel and explicit byte, version 1's control and channel modes included. Not an
encoder of given data: the bytes are random, so the decoded elements are whatever they decode to."""
from __future__ import annotations

import random

BIT_LENGTHS = {None: (0, 2, 4, 8), 0: (0, 1, 2, 4), 1: (1, 2, 4, 8)}  # header bits -> bits per delta
TAIL_MIN = {0: 32, 1: 24}
CHANNEL_MODES = (0, 1, 2, 0x12, 0x72, 0xF2)  # byte, 2-byte and 4-byte XOR deltas (rotated by the high bits)


def _random_bytes(rng: random.Random, n: int) -> bytes:
    return rng.getrandbits(8 * n).to_bytes(n, "little") if n else b""


def _packed_values(packed: bytes, bits: int):
    shifts = range(0, 8) if bits == 1 else range(8 - bits, -1, -bits)
    return [(b >> s) & ((1 << bits) - 1) for b in packed for s in shifts]


def _two_bit_fields(rng: random.Random, n: int, weights) -> bytes:
    """n bytes of four 2-bit fields each, the field values drawn with `weights`."""
    fields = rng.choices(range(4), weights, k=4 * n)
    return bytes(fields[i] | fields[i + 1] << 2 | fields[i + 2] << 4 | fields[i + 3] << 6 for i in range(0, 4 * n, 4))


def random_stream(count: int, stride: int, version: int, seed: int = 1, small_deltas: bool = False) -> bytes:
    """An attribute stream of `count` elements of `stride` bytes (version 0: EXT_, 1: KHR_). Every group
    size and control mode equally often, or (`small_deltas`) mostly the small ones, as smooth vertex data
    is compressed."""
    rng = random.Random(seed)
    weights = (40, 40, 15, 5) if small_deltas else (1, 1, 1, 1)
    channels = stride // 4 if version == 1 else 0
    out = bytearray([0xA0 + version])
    block_max = min((8192 // stride) & ~15, 256)
    done = 0
    while done < count:
        elements = min(block_max, count - done)
        padded = (elements + 15) // 16 * 16
        controls = _two_bit_fields(rng, stride // 4, weights) if version == 1 else b""
        out += controls
        for byte in range(stride):
            control = (controls[byte // 4] >> ((byte % 4) * 2)) & 3 if version == 1 else None
            if control == 2:  # all deltas zero
                continue
            if control == 3:  # literal deltas
                out += _random_bytes(rng, elements)
                continue
            groups = padded // 16
            header = _two_bit_fields(rng, (groups + 3) // 4, weights)
            out += header
            for g in range(groups):
                bits = BIT_LENGTHS[control][(header[g // 4] >> ((g % 4) * 2)) & 3]
                if bits in (0, 8):
                    out += _random_bytes(rng, 16 if bits else 0)
                    continue
                packed = _random_bytes(rng, 2 * bits)
                sentinels = sum(v == (1 << bits) - 1 for v in _packed_values(packed, bits))
                out += packed + _random_bytes(rng, sentinels)  # each sentinel's explicit byte
        done += elements
    modes = bytes(rng.choice(CHANNEL_MODES) for _ in range(channels))
    tail = max(stride + channels, TAIL_MIN[version])
    out += bytes(tail - stride - channels) + _random_bytes(rng, stride) + modes
    return bytes(out)
