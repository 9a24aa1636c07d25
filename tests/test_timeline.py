"""`kimodo-rig join`, `trim` and `loop` on the shared clips, judged from the files written with numpy
(raw arrays and NPZ arrays read with numpy, BVH with the numpy parser, forward kinematics from the skeleton
JSON): never our reader or our FK."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from bvh_judge import CMU_UNIT_M, BvhFile, motion_positions, skeleton_record
from conftest import CLIPS, NPZ, RIGS, run_cli

FPS = 30.0
POSITION_TOLERANCE_M = 1e-5
CMU = RIGS / "cmu" / "resources_131_01.bvh"
BVH_UNIT_M = 0.01  # what our BVH writer stores (README: centimetres)


# --- judges ---------------------------------------------------------------------------------------------

def skeleton_name(clip: str) -> str:
    return "somaskel30" if clip.startswith("soma") else "g1skel34"


def fk(skeleton: str, rotations_xyzw: np.ndarray, roots: np.ndarray) -> np.ndarray:
    record = skeleton_record(skeleton)
    return motion_positions(record["parents"], record["rest_local_offsets_m"], rotations_xyzw, roots)


def raw_positions(folder, skeleton: str) -> np.ndarray:
    joints = len(skeleton_record(skeleton)["joint_names"])
    rotations = np.fromfile(folder / "local_rotations_xyzw.f32", dtype="<f4").reshape(-1, joints, 4).astype(np.float64)
    roots = np.fromfile(folder / "root_positions.f32", dtype="<f4").reshape(-1, 3).astype(np.float64)
    return fk(skeleton, rotations, roots)


def matrices_to_xyzw(m: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) -> unit quaternions xyzw, by the largest-diagonal method."""
    flat = m.reshape(-1, 3, 3)
    out = np.zeros((len(flat), 4))
    for i, r in enumerate(flat):
        trace = np.trace(r)
        if trace > 0:
            s = math.sqrt(trace + 1.0) * 2
            out[i] = [(r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s, 0.25 * s]
        else:
            k = int(np.argmax(np.diag(r)))
            a, b = (k + 1) % 3, (k + 2) % 3
            s = math.sqrt(1.0 + r[k, k] - r[a, a] - r[b, b]) * 2
            q = np.zeros(4)
            q[k] = 0.25 * s
            q[a] = (r[a, k] + r[k, a]) / s
            q[b] = (r[b, k] + r[k, b]) / s
            q[3] = (r[b, a] - r[a, b]) / s
            out[i] = q
    return out.reshape(m.shape[:-2] + (4,))


def npz_output(path):
    """Positions (numpy FK of local_rot_mats and root_positions on somaskel77) and foot contacts."""
    with np.load(path, allow_pickle=False) as npz:
        rotations = matrices_to_xyzw(npz["local_rot_mats"].astype(np.float64))
        roots = npz["root_positions"].astype(np.float64)
        contacts = npz["foot_contacts"].astype(bool)
    return fk("somaskel77", rotations, roots), contacts


def npz_source(clip: str):
    """Kimodo's own posed_joints and foot_contacts of a demo NPZ (30-joint SOMA or G1)."""
    with np.load(NPZ / clip / "motion.npz", allow_pickle=False) as npz:
        return npz["posed_joints"].astype(np.float64), npz["foot_contacts"].astype(bool)


def soma30_in_77():
    """(30-joint indices, their 77-joint indices) of the joints SOMA 77 places as SOMA 30 does: all but the
    hand ends, which move with the relaxed fingers Kimodo's expansion adds."""
    record = skeleton_record("somaskel30")
    kept = [j for j, name in enumerate(record["joint_names"]) if not (name.endswith("End") and "Hand" in name)]
    return kept, [record["somaskel77_index_of_each_joint"][j] for j in kept]


def prompt_of(clip: str) -> str:
    return (CLIPS / clip / "prompt.txt").read_text(encoding="utf-8").strip().splitlines()[0].strip()


def speeds(positions: np.ndarray, fps: float) -> np.ndarray:
    """(frames - 1, joints) m/s between consecutive frames."""
    return np.linalg.norm(np.diff(positions, axis=0), axis=-1) * fps


def fastest_p99(positions: np.ndarray, fps: float) -> float:
    """The 99th percentile over frames of the fastest joint's speed."""
    return float(np.percentile(speeds(positions, fps).max(axis=1), 99))


def root_p99(positions: np.ndarray, fps: float) -> float:
    return float(np.percentile(speeds(positions[:, :1], fps)[:, 0], 99))


def fit_turn_and_move(source: np.ndarray, placed: np.ndarray):
    """The turn about +Y and move on the floor that best lay `source` on `placed` (2-D Kabsch on x, z),
    and the largest joint distance left (heights compared as they are)."""
    a = source[..., [0, 2]].reshape(-1, 2)
    b = placed[..., [0, 2]].reshape(-1, 2)
    ca, cb = a.mean(axis=0), b.mean(axis=0)
    u, _, vt = np.linalg.svd((a - ca).T @ (b - cb))
    d = np.sign(np.linalg.det(vt.T @ u.T))
    m = vt.T @ np.diag([1.0, d]) @ u.T
    move = cb - m @ ca
    moved = apply_turn_and_move(m, move, source)
    return m, move, float(np.linalg.norm(moved - placed, axis=-1).max())


def apply_turn_and_move(m: np.ndarray, move: np.ndarray, positions: np.ndarray) -> np.ndarray:
    out = positions.copy()
    xz = positions[..., [0, 2]] @ m.T + move
    out[..., 0], out[..., 2] = xz[..., 0], xz[..., 1]
    return out


def yaw_matrix(angle: float) -> np.ndarray:
    """The (x, z) part of a turn by `angle` about +Y."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, s], [-s, c]])


def hip_headings(positions: np.ndarray, skeleton: str) -> np.ndarray:
    """Kimodo's heading, computed here: atan2(d.z, -d.x) of the left-to-right hip vector."""
    record = skeleton_record(skeleton)
    right, left = (record["joint_names"].index(n) for n in record["semantic_groups"]["hip_joints_right_left"])
    d = positions[:, right] - positions[:, left]
    return np.arctan2(d[:, 2], -d[:, 0])


def circular_mean(angles: np.ndarray) -> float:
    return math.atan2(np.sin(angles).sum(), np.cos(angles).sum())


def check_seam(output: np.ndarray, first: int, last: int, sources, fps: float) -> None:
    """Frames first..last of `output` (a seam and its edges): the fastest joint no faster than 2x the
    faster source's 99th-percentile fastest joint, and the root no faster than 2x its 99th percentile."""
    window = output[max(0, first):last + 1]
    joint_bound = 2.0 * max(fastest_p99(s, fps) for s in sources)
    root_bound = 2.0 * max(root_p99(s, fps) for s in sources)
    seam_speeds = speeds(window, fps)
    assert seam_speeds.max() <= joint_bound, (seam_speeds.max(), joint_bound)
    assert seam_speeds[:, 0].max() <= root_bound, (seam_speeds[:, 0].max(), root_bound)


def ok(result) -> str:
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout


# --- join -----------------------------------------------------------------------------------------------

JOIN_PAIRS = [
    ("soma_02_multi_text_prompt", "soma_03_full_body_keyframes"),
    ("soma_01_single_text_prompt", "soma_04_ee_constraint"),
    ("g1_01_single_text_prompt", "g1_03_full_body_keyframes"),
    ("g1_02_multi_text_ee_constraint", "g1_04_ee_constraint"),
]


@pytest.mark.parametrize("first,second", JOIN_PAIRS)
def test_join_places_the_next_clip_rigidly_and_crossfades_the_seam(tmp_path, first, second):
    skeleton, blend = skeleton_name(first), 10
    out = tmp_path / "joined"
    stdout = ok(run_cli("join", CLIPS / first, CLIPS / second, "-o", out, "--blend", blend))
    a, b, joined = (raw_positions(p, skeleton) for p in (CLIPS / first, CLIPS / second, out))
    la, lb = len(a), len(b)
    frames = la + lb - blend
    assert len(joined) == frames
    assert "{} frames ({:.2f} s at 30 fps)".format(frames, (frames - 1) / FPS) in stdout.splitlines()[0]
    assert (out / "prompt.txt").read_text(encoding="utf-8").strip() == prompt_of(first) + " / " + prompt_of(second)

    # Outside the blend window: A as it was, B moved by one turn about +Y and one move on the floor.
    assert np.abs(joined[:la - blend] - a[:la - blend]).max() < POSITION_TOLERANCE_M
    turn, move, residual = fit_turn_and_move(b[blend:], joined[la:])
    assert residual < POSITION_TOLERANCE_M
    assert abs(np.linalg.det(turn) - 1.0) < 1e-9  # a turn, not a mirror

    # The turn and move are the stated ones: B's first blend frames take the heading of A's last ones
    # (mean difference) and their root path lies on A's (mean on the floor).
    placed = apply_turn_and_move(turn, move, b)
    difference = hip_headings(a[la - blend:], skeleton) - hip_headings(placed[:blend], skeleton)
    assert abs(circular_mean(difference)) < 1e-4
    floor_a = a[la - blend:, 0][:, [0, 2]].mean(axis=0)
    floor_b = placed[:blend, 0][:, [0, 2]].mean(axis=0)
    assert np.abs(floor_a - floor_b).max() < POSITION_TOLERANCE_M

    check_seam(joined, la - blend - 2, la + 2, (a, b), FPS)


def test_the_default_blend_is_a_third_of_a_second_at_any_frame_rate(tmp_path):
    """Without --blend, the cross-fade lasts 1/3 s: 10 frames at 30 fps, 20 at 60 (never 10 frames whatever the rate)."""
    first, second = JOIN_PAIRS[0]
    skeleton = skeleton_name(first)
    la, lb = (len(raw_positions(CLIPS / c, skeleton)) for c in (first, second))
    for fps, blend in ((30, 10), (60, 20), (120, 40)):
        out = tmp_path / "joined_{}".format(fps)
        stdout = ok(run_cli("join", CLIPS / first, CLIPS / second, "-o", out, "--fps", fps))
        assert len(raw_positions(out, skeleton)) == la + lb - blend, fps
        assert stdout.splitlines()[0].endswith(", {}-frame blends".format(blend)), stdout


def test_join_three_npz_clips_carries_foot_contacts_and_writes_npz(tmp_path):
    clips = ["soma_01_single_text_prompt", "soma_02_multi_text_prompt", "soma_03_full_body_keyframes"]
    blend = 8
    out = tmp_path / "joined.npz"
    ok(run_cli("join", *[NPZ / c / "motion.npz" for c in clips], "-o", out, "--blend", blend))
    sources = [npz_source(c) for c in clips]
    positions77, contacts = npz_output(out)
    kept, kept77 = soma30_in_77()
    positions = positions77[:, kept77]
    (pa, ca), (pb, cb), (pc, cc) = [(p[:, kept], c) for p, c in sources]
    la, lb, lc = len(pa), len(pb), len(pc)
    assert len(positions) == la + lb + lc - 2 * blend
    expected = np.concatenate([ca[:la - blend], ca[la - blend:] & cb[:blend], cb[blend:lb - blend],
                               cb[lb - blend:] & cc[:blend], cc[blend:]])
    assert contacts.shape == expected.shape and (contacts == expected).all()
    assert (contacts != np.concatenate([ca, cb[blend:], cc[blend:]])).any()  # the blends did take both into account
    second_start, third_start = la, la + lb - blend
    assert np.abs(positions[:la - blend] - pa[:la - blend]).max() < POSITION_TOLERANCE_M
    assert fit_turn_and_move(pb[blend:lb - blend], positions[second_start:third_start - blend])[2] < POSITION_TOLERANCE_M
    assert fit_turn_and_move(pc[blend:], positions[third_start:])[2] < POSITION_TOLERANCE_M
    for seam, pair in ((la - blend, (pa, pb)), (third_start - blend, (pb, pc))):
        check_seam(positions, seam - 2, seam + blend + 2, pair, FPS)


def test_join_without_blend_continues_the_root_path_by_the_last_step(tmp_path):
    first, second = "soma_02_multi_text_prompt", "soma_03_full_body_keyframes"
    out = tmp_path / "joined"
    ok(run_cli("join", CLIPS / first, CLIPS / second, "-o", out, "--blend", 0))
    a, b, joined = (raw_positions(p, "somaskel30") for p in (CLIPS / first, CLIPS / second, out))
    la = len(a)
    assert len(joined) == la + len(b)
    assert fit_turn_and_move(b, joined[la:])[2] < POSITION_TOLERANCE_M
    last_step = joined[la - 1, 0, [0, 2]] - joined[la - 2, 0, [0, 2]]
    seam_step = joined[la, 0, [0, 2]] - joined[la - 1, 0, [0, 2]]
    assert np.abs(seam_step - last_step).max() < POSITION_TOLERANCE_M
    heading_a = hip_headings(a[-1:], "somaskel30")[0]
    heading_b = hip_headings(joined[la:la + 1], "somaskel30")[0]
    assert abs(math.remainder(heading_a - heading_b, 2 * math.pi)) < 1e-4


# --- trim and a rig that is not Kimodo's ----------------------------------------------------------------

def test_trim_and_join_on_a_bvh_rig_that_is_not_kimodos(tmp_path):
    source = BvhFile(CMU).positions(CMU_UNIT_M)
    fps = 120.0
    parts = [(0, 400), (520, 900)]
    for index, (start, end) in enumerate(parts):
        out = tmp_path / "part{}.bvh".format(index)
        stdout = ok(run_cli("trim", CMU, out, "--start", start, "--end", end))
        assert stdout.startswith("{}: frames {}..{} of ".format(out, start, end))
        assert "({} frames, {:.2f} s)".format(end - start, (end - start - 1) / fps) in stdout
        trimmed = BvhFile(out)
        assert trimmed.frame_count == end - start and abs(trimmed.frame_time - 1 / fps) < 1e-12
        assert np.abs(trimmed.positions(BVH_UNIT_M) - source[start:end]).max() < POSITION_TOLERANCE_M
    joined_path = tmp_path / "joined.bvh"
    blend = 24
    ok(run_cli("join", tmp_path / "part0.bvh", tmp_path / "part1.bvh", "-o", joined_path, "--blend", blend))
    joined = BvhFile(joined_path).positions(BVH_UNIT_M)
    a, b = source[0:400], source[520:900]
    assert len(joined) == len(a) + len(b) - blend
    assert np.abs(joined[:len(a) - blend] - a[:len(a) - blend]).max() < POSITION_TOLERANCE_M
    assert fit_turn_and_move(b[blend:], joined[len(a):])[2] < POSITION_TOLERANCE_M
    check_seam(joined, len(a) - blend - 2, len(a) + 2, (a, b), fps)


def test_trim_keeps_foot_contacts(tmp_path):
    out = tmp_path / "trimmed.npz"
    ok(run_cli("trim", NPZ / "soma_02_multi_text_prompt" / "motion.npz", out, "--start", 40, "--end", 130))
    positions, contacts = npz_source("soma_02_multi_text_prompt")
    trimmed, trimmed_contacts = npz_output(out)
    assert (trimmed_contacts == contacts[40:130]).all()
    kept, kept77 = soma30_in_77()
    assert np.abs(trimmed[:, kept77] - positions[40:130, kept]).max() < POSITION_TOLERANCE_M


# --- loop -----------------------------------------------------------------------------------------------

LOOP_LINE = re.compile(r"^(?P<out>\S+): frames (?P<start>\d+)\.\.(?P<end>\d+) of \S+ \((?P<frames>\d+) frames, "
                       r"(?P<seconds>[\d.]+) s\), seam pose error (?P<pose>[\d.]+) m, velocity error (?P<velocity>[\d.]+) m/s$")


def pose_error(positions: np.ndarray, skeleton: str, i: int, j: int) -> float:
    """RMS over joints of root-relative positions turned to face +Z, frames i and j: computed here."""
    heading = hip_headings(positions, skeleton)

    def facing(frame: int) -> np.ndarray:
        relative = positions[frame] - positions[frame, 0]
        xz = relative[:, [0, 2]] @ yaw_matrix(-heading[frame]).T
        return np.stack([xz[:, 0], relative[:, 1], xz[:, 1]], axis=1)

    return float(np.sqrt((np.linalg.norm(facing(i) - facing(j), axis=1) ** 2).mean()))


@pytest.mark.parametrize("clip", ["soma_02_multi_text_prompt", "g1_02_multi_text_ee_constraint"])
def test_loop_runs_from_its_last_frame_into_its_first_and_plays_twice_without_a_jump(tmp_path, clip):
    skeleton, blend = skeleton_name(clip), 10
    source = raw_positions(CLIPS / clip, skeleton)
    out = tmp_path / "loop"
    stdout = ok(run_cli("loop", CLIPS / clip, out, "--min-length", 1))
    report = LOOP_LINE.match(stdout.splitlines()[0])
    assert report, stdout
    start, end = int(report["start"]), int(report["end"])
    loop = raw_positions(out, skeleton)
    length = end - start
    assert length >= FPS and start >= blend and end < len(source)
    assert len(loop) == length == int(report["frames"])
    assert float(report["seconds"]) == pytest.approx(length / FPS, abs=0.005)
    assert float(report["pose"]) == pytest.approx(pose_error(source, skeleton, start, end), abs=0.0005 + 1e-9)

    # Outside the seam the loop is the source, where it was.
    assert np.abs(loop[:length - blend] - source[start:end - blend]).max() < POSITION_TOLERANCE_M

    # Root motion: a cycle turns and moves the root as the source does from frame start to frame end.
    heading = hip_headings(source, skeleton)
    turn = yaw_matrix(heading[end] - heading[start])
    move = source[end, 0, [0, 2]] - turn @ source[start, 0, [0, 2]]
    twice = np.concatenate([loop, apply_turn_and_move(turn, move, loop)])
    check_seam(twice, length - blend - 2, length + 2, (source,), FPS)
    assert fastest_p99(twice, FPS) <= 2.0 * fastest_p99(source, FPS)
    # Closer: the step from the last frame into the next cycle's first is, at every joint, the source's own
    # step into frame start (turned and moved with the cycle) within 2 cm.
    into_start = apply_turn_and_move(turn, move, source[start - 1:start + 1])
    wrap_step = twice[length] - twice[length - 1]
    assert np.linalg.norm(wrap_step - (into_start[1] - into_start[0]), axis=-1).max() < 0.02

    # In place: the same cut, played twice as it is.
    still = tmp_path / "still"
    stdout = ok(run_cli("loop", CLIPS / clip, still, "--min-length", 1, "--in-place"))
    assert LOOP_LINE.match(stdout.splitlines()[0])["start"] == str(start)
    in_place = raw_positions(still, skeleton)
    assert np.abs(in_place[0] - source[start]).max() < POSITION_TOLERANCE_M
    twice = np.concatenate([in_place, in_place])
    check_seam(twice, length - blend - 2, length + 2, (source,), FPS)
    travelled = np.linalg.norm(source[end, 0, [0, 2]] - source[start, 0, [0, 2]])
    assert travelled > 0.5  # a walk: the in-place loop has something to take out
    assert np.linalg.norm(in_place[-1, 0, [0, 2]] - in_place[0, 0, [0, 2]]) < 0.1 * travelled


def test_loop_carries_foot_contacts(tmp_path):
    clip, blend = "soma_02_multi_text_prompt", 10
    out = tmp_path / "loop.npz"
    stdout = ok(run_cli("loop", NPZ / clip / "motion.npz", out, "--min-length", 1.5))
    report = LOOP_LINE.match(stdout.splitlines()[0])
    start, end = int(report["start"]), int(report["end"])
    assert end - start >= 45
    _, contacts = npz_source(clip)
    _, loop_contacts = npz_output(out)
    expected = np.concatenate([contacts[start:end - blend], contacts[end - blend:end] & contacts[start - blend:start]])
    assert (loop_contacts == expected).all()


# --- refusals -------------------------------------------------------------------------------------------

def refused(tmp_path, *args) -> str:
    before = sorted(p.name for p in tmp_path.iterdir())
    result = run_cli(*args)
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written, not even a temporary file
    return lines[0]


def test_join_refuses_clips_of_different_skeletons(tmp_path):
    soma, g1 = CLIPS / "soma_02_multi_text_prompt", CLIPS / "g1_01_single_text_prompt"
    line = refused(tmp_path, "join", soma, g1, "-o", tmp_path / "out.glb")
    assert line == "{} is G1 (34 joints) but {} is SOMA (30 joints): clips of different skeletons cannot be joined".format(g1, soma)


def test_join_refuses_clips_of_different_frame_rates(tmp_path):
    fast, slow = tmp_path / "fast.bvh", tmp_path / "slow.bvh"
    ok(run_cli("convert", CLIPS / "soma_01_single_text_prompt", fast, "--fps", 60))
    ok(run_cli("convert", CLIPS / "soma_02_multi_text_prompt", slow))
    line = refused(tmp_path, "join", slow, fast, "-o", tmp_path / "out.bvh")
    assert line == "{} is 60 fps but {} is 30 fps: clips of different frame rates cannot be joined".format(fast, slow)


def test_join_refuses_a_clip_shorter_than_its_blends(tmp_path):
    short = tmp_path / "short"
    ok(run_cli("trim", CLIPS / "soma_02_multi_text_prompt", short, "--start", 0, "--end", 15))
    line = refused(tmp_path, "join", CLIPS / "soma_01_single_text_prompt", short, CLIPS / "soma_03_full_body_keyframes",
                   "-o", tmp_path / "out")
    assert line == "{}: 15 frames cannot hold a 10-frame blend at both ends (needs 20 frames)".format(short)


@pytest.mark.parametrize("start,end,problem", [
    (30, 30, "frames 30..30 is an empty range"),
    (80, 20, "frames 80..20 is an empty range"),
    (227, None, "start frame 227 is past the end (227 frames)"),
    (500, 600, "start frame 500 is past the end (227 frames)"),
    (10, 228, "end frame 228 is past the end (227 frames)"),
])
def test_trim_refuses_empty_ranges_and_frames_past_the_end(tmp_path, start, end, problem):
    clip = CLIPS / "soma_02_multi_text_prompt"
    args = ["trim", clip, tmp_path / "out.glb", "--start", start] + (["--end", end] if end is not None else [])
    assert refused(tmp_path, *args) == "{}: {}".format(clip, problem)


def test_loop_refuses_a_clip_too_short_for_the_length_asked(tmp_path):
    clip = CLIPS / "soma_02_multi_text_prompt"
    line = refused(tmp_path, "loop", clip, tmp_path / "out", "--min-length", 8)
    assert line == ("{}: 227 frames (7.53 s) hold no loop of at least 8 s with 10 frames before it for the seam "
                    "(needs 251 frames)".format(clip))


def test_the_operations_leave_their_inputs_as_they_were():
    from kimodo_rig import formats
    from kimodo_rig.ops import timeline

    motions = [formats.read_file(NPZ / c / "motion.npz") for c in ("soma_02_multi_text_prompt", "soma_03_full_body_keyframes")]
    before = [(m.local_rotations.tobytes(), m.root_positions.tobytes(), m.foot_contacts.tobytes()) for m in motions]
    joined = timeline.join(motions, blend=10).motion
    trimmed = timeline.trim(motions[0], 5, 50)
    looped = timeline.find_loop(motions[1], in_place=True).motion
    after = [(m.local_rotations.tobytes(), m.root_positions.tobytes(), m.foot_contacts.tobytes()) for m in motions]
    assert after == before
    for result in (joined, trimmed, looped):
        assert all(result.local_rotations is not m.local_rotations for m in motions)


def cmu_hip_headings(bvh: BvhFile, positions: np.ndarray) -> np.ndarray:
    """The CMU rig's heading, from its own hip joints: atan2(d.z, -d.x) of the left-to-right hip vector."""
    d = positions[:, bvh.names.index("RightHip")] - positions[:, bvh.names.index("LeftHip")]
    return np.arctan2(d[:, 2], -d[:, 0])


def test_loop_on_a_turning_bvh_rig_takes_the_turn_out_in_place(tmp_path):
    source_bvh = BvhFile(CMU)
    source = source_bvh.positions(CMU_UNIT_M)
    fps = 120.0
    turning, still = tmp_path / "turning.bvh", tmp_path / "still.bvh"
    # 10 frames of blend (1/12 s at 120 fps, not the default 1/3 s): a cut that turns.
    report = LOOP_LINE.match(ok(run_cli("loop", CMU, turning, "--blend", 10)).splitlines()[0])
    start, end = int(report["start"]), int(report["end"])
    assert LOOP_LINE.match(ok(run_cli("loop", CMU, still, "--in-place", "--blend", 10)).splitlines()[0])["start"] == str(start)
    heading = cmu_hip_headings(source_bvh, source)
    cycle_turn = math.remainder(heading[end] - heading[start], 2 * math.pi)
    assert abs(math.degrees(cycle_turn)) > 5  # this cut turns: there is a turn to take out
    for path, expected_turn in ((turning, cycle_turn), (still, 0.0)):
        bvh = BvhFile(path)
        loop = bvh.positions(BVH_UNIT_M)
        assert len(loop) == end - start
        loop_heading = cmu_hip_headings(bvh, loop)
        # the heading one frame after the last (the next cycle's first) against the first frame's
        step = math.remainder(loop_heading[-1] - loop_heading[-2], 2 * math.pi)
        turned = math.remainder(loop_heading[-1] + step - loop_heading[0], 2 * math.pi)
        assert abs(turned - expected_turn) < math.radians(1.5), (math.degrees(turned), math.degrees(expected_turn))
    in_place = BvhFile(still).positions(BVH_UNIT_M)
    check_seam(np.concatenate([in_place, in_place]), len(in_place) - 12, len(in_place) + 2, (source,), fps)
