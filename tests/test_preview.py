"""`kimodo-rig preview`: the SVG contact sheet read back as XML and its drawings inverted to metres against
numpy FK; the HTML player loaded in headless Chromium (Debian's, driven by playwright-core), where it must
make no request and log no error, play to its last frame, open at #frame=N showing the character, and pose
its bones where numpy FK of the embedded GLB puts them."""
from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import numpy as np
import pytest

from conftest import CLIPS, NPZ, ROOT, node_modules, run_cli
from gltf_judge import Glb, forward_kinematics, read_raw_clip, skeleton_record

SVG = "{http://www.w3.org/2000/svg}"


def clip_positions(clip: str) -> dict:
    record = skeleton_record("g1skel34" if clip.startswith("g1") else "somaskel30")
    quats, roots = read_raw_clip(CLIPS / clip, len(record["parents"]))
    positions = forward_kinematics(record["parents"], record["rest_local_offsets_m"], quats, roots)
    return {"names": record["joint_names"], "positions": positions, "roots": roots}


def pose_panels(svg_path: Path):
    """Every pose panel: (view, frame, skeleton, {joint: (x, y, z or None)}) inverted from the drawing."""
    tree = ET.parse(str(svg_path))
    panels = []
    for group in tree.iter(SVG + "g"):
        if group.get("class") != "pose":
            continue
        ox, oy, s = float(group.get("data-ox")), float(group.get("data-oy")), float(group.get("data-scale"))
        root_x, root_z = float(group.get("data-root-x")), float(group.get("data-root-z"))
        joints = {}
        for circle in group.iter(SVG + "circle"):
            horizontal = (float(circle.get("cx")) - ox) / s
            height = (oy - float(circle.get("cy"))) / s
            joints[circle.get("data-joint")] = (horizontal + (root_x if group.get("data-view") == "front" else root_z), height)
        panels.append((group.get("data-view"), int(group.get("data-frame")), group.get("data-skeleton"), joints))
    return panels


@pytest.mark.parametrize("clip", ["soma_01_single_text_prompt", "g1_03_full_body_keyframes"])
def test_svg_draws_every_joint_where_numpy_fk_puts_it(clip, tmp_path):
    output = tmp_path / "sheet.svg"
    result = run_cli("preview", CLIPS / clip, "-o", output)
    assert result.returncode == 0, result.stderr
    assert output.stat().st_size < 400_000
    reference = clip_positions(clip)
    panels = pose_panels(output)
    assert {view for view, *_ in panels} == {"front", "side"} and len(panels) == 16
    for view, frame, _, joints in panels:
        assert len(joints) == len(reference["names"])
        for name, (horizontal, height) in joints.items():
            p = reference["positions"][frame, reference["names"].index(name)]
            # front: X across (the character's left on the viewer's right); side: Z across (forward right).
            expected = (p[0] if view == "front" else p[2], p[1])
            assert abs(horizontal - expected[0]) < 1e-5 and abs(height - expected[1]) < 1e-5, (view, frame, name)
    text = output.read_text(encoding="utf-8")
    assert (CLIPS / clip / "prompt.txt").read_text(encoding="utf-8").splitlines()[0].strip() in text
    assert "{} frames at 30 fps".format(len(reference["roots"])) in text


def test_svg_front_view_puts_the_characters_left_on_the_viewers_right(tmp_path):
    """Not only self-consistent: at rest-like frame 0 SOMA's LeftHand is drawn right of its RightHand."""
    output = tmp_path / "sheet.svg"
    assert run_cli("preview", CLIPS / "soma_01_single_text_prompt", "-o", output).returncode == 0
    tree = ET.parse(str(output))
    front = next(g for g in tree.iter(SVG + "g") if g.get("class") == "pose" and g.get("data-view") == "front")
    cx = {c.get("data-joint"): float(c.get("cx")) for c in front.iter(SVG + "circle")}
    assert cx["LeftHand"] > cx["RightHand"] + 20


def test_svg_root_path_headings_and_contacts_come_from_the_motion(tmp_path):
    """An NPZ input: the path inverts to its root, heading ticks point along Kimodo's own heading, contact
    bars are exactly Kimodo's foot_contacts spans."""
    source = NPZ / "soma_02_multi_text_prompt" / "motion.npz"
    output = tmp_path / "sheet.svg"
    assert run_cli("preview", source, "-o", output).returncode == 0
    arrays = np.load(str(source))
    tree = ET.parse(str(output))
    top = next(g for g in tree.iter(SVG + "g") if g.get("class") == "top")
    ox, oy, s, cx, cz = (float(top.get(k)) for k in ("data-ox", "data-oy", "data-scale", "data-cx", "data-cz"))
    line = next(e for e in top.iter(SVG + "polyline"))
    points = np.array([[float(v) for v in p.split(",")] for p in line.get("points").split()])
    path = np.stack([cx - (points[:, 0] - ox) / s, cz + (oy - points[:, 1]) / s], axis=1)
    root = arrays["root_positions"] if "root_positions" in arrays else arrays["posed_joints"][:, 0]
    assert np.abs(path - root[:, [0, 2]]).max() < 1e-5
    # Facing from the hips, by the test's own rule: forward on the floor is the left-minus-right hip vector
    # turned 90 degrees (a character facing +Z has its left hip at +X).
    posed = arrays["posed_joints"]
    record = skeleton_record("somaskel77" if posed.shape[1] == 77 else "somaskel30")
    right, left = (record["joint_names"].index(n) for n in record["semantic_groups"]["hip_joints_right_left"])
    across = posed[:, left] - posed[:, right]
    ticks = [e for e in top.iter(SVG + "line") if e.get("class") == "heading"]
    assert len(ticks) >= 10
    for tick in ticks:
        frame = int(tick.get("data-frame"))
        drawn = np.array([-(float(tick.get("x2")) - float(tick.get("x1"))), -(float(tick.get("y2")) - float(tick.get("y1")))])
        forward = np.array([-across[frame, 2], across[frame, 0]])
        forward /= np.linalg.norm(forward)
        assert drawn @ forward / np.linalg.norm(drawn) > 0.99, frame
    contacts = arrays["foot_contacts"].astype(bool)
    channels = [0, 1, 2, 3] if contacts.shape[1] == 4 else [0, 1, 3, 4]
    spans = {}
    for rect in tree.iter(SVG + "rect"):
        if rect.get("class") == "contact":
            spans.setdefault(int(rect.get("data-channel")), []).append((int(rect.get("data-start")), int(rect.get("data-end"))))
    for row, channel in enumerate(channels):
        drawn = np.zeros(len(contacts), dtype=bool)
        for start, end in spans.get(row, []):
            drawn[start:end] = True
        assert (drawn == contacts[:, channel]).all(), row


def _rotvec_matrices(v: np.ndarray) -> np.ndarray:
    angle = np.linalg.norm(v, axis=-1, keepdims=True)
    axis = np.divide(v, angle, out=np.zeros_like(v), where=angle > 0)
    x, y, z = axis[..., 0], axis[..., 1], axis[..., 2]
    k = np.zeros(v.shape[:-1] + (3, 3))
    k[..., 0, 1], k[..., 0, 2], k[..., 1, 0], k[..., 1, 2], k[..., 2, 0], k[..., 2, 1] = -z, y, z, -x, -y, x
    a = angle[..., None]
    return np.eye(3) + np.sin(a) * k + (1 - np.cos(a)) * (k @ k)


def test_svg_marks_constraints_where_the_constraint_puts_them(tmp_path):
    folder = NPZ / "soma_03_full_body_keyframes"
    output = tmp_path / "sheet.svg"
    result = run_cli("preview", folder / "motion.npz", "--constraints", folder / "constraints.json", "-o", output)
    assert result.returncode == 0, result.stderr
    entries = json.loads((folder / "constraints.json").read_text())
    tree = ET.parse(str(output))
    lines = {(int(e.get("data-frame")), e.get("data-kind")) for e in tree.iter(SVG + "line") if e.get("class") == "constraint-frame"}
    assert lines == {(int(f), e["type"]) for e in entries for f in e["frame_indices"]}
    top = next(g for g in tree.iter(SVG + "g") if g.get("class") == "top")
    ox, oy, s, cx, cz = (float(top.get(k)) for k in ("data-ox", "data-oy", "data-scale", "data-cx", "data-cz"))
    markers = [e for e in top.iter(SVG + "rect") if e.get("class") == "constraint-marker"]
    record = skeleton_record("somaskel30")
    hips = record["joint_names"].index("Hips")
    expected = []
    for entry in entries:
        rotations = np.array(entry["local_joints_rot"], dtype=np.float64)
        if rotations.shape[1] != len(record["parents"]):
            continue
        roots = np.array(entry["root_positions"], dtype=np.float64)
        # numpy FK with rotation matrices made straight from the axis-angle vectors.
        local = _rotvec_matrices(rotations)
        world = [None] * len(record["parents"])
        positions = np.zeros((len(roots), len(record["parents"]), 3))
        for j, parent in enumerate(record["parents"]):
            if parent < 0:
                world[j], positions[:, j] = local[:, j], roots
            else:
                world[j] = world[parent] @ local[:, j]
                positions[:, j] = positions[:, parent] + world[parent] @ np.array(record["rest_local_offsets_m"][j])
        expected.extend(positions[:, hips, [0, 2]])
    drawn = [(cx - (float(m.get("x")) + 3.5 - ox) / s, cz + (oy - float(m.get("y")) - 3.5) / s) for m in markers]
    assert len(drawn) == len(expected) > 0
    for (x, z), e in zip(drawn, expected):
        assert abs(x - e[0]) < 0.01 and abs(z - e[1]) < 0.01  # the marker's drawn corner is rounded to 0.01 px


def test_svg_marks_an_animotive_request_on_the_same_frames(tmp_path):
    """`constraints convert` turns Kimodo's file into an Animotive request; the sheet marks the same frames."""
    folder = NPZ / "soma_06_root_waypoints"
    request, sheet = tmp_path / "request.json", tmp_path / "sheet.svg"
    result = run_cli("constraints", "convert", folder / "constraints.json", request, "--to", "animotive",
                     "--prompt", "walk", "--duration", "10")
    assert result.returncode == 0, result.stderr
    assert run_cli("preview", folder / "motion.npz", "--constraints", request, "-o", sheet).returncode == 0
    entries = json.loads((folder / "constraints.json").read_text())
    tree = ET.parse(str(sheet))
    frames = {int(e.get("data-frame")) for e in tree.iter(SVG + "line") if e.get("class") == "constraint-frame"}
    assert frames == {int(f) for e in entries for f in e["frame_indices"]}
    markers = [e for e in tree.iter(SVG + "rect") if e.get("class") == "constraint-marker"]
    assert len(markers) == sum(len(e["frame_indices"]) for e in entries if e["type"] == "root2d") > 0


def test_svg_beside_a_retarget_draws_the_character_where_its_own_output_file_puts_it(tmp_path):
    clip = "soma_04_ee_constraint"
    sheet, glb = tmp_path / "sheet.svg", tmp_path / "character.glb"
    assert run_cli("preview", CLIPS / clip, "--target", "mixamo", "-o", sheet).returncode == 0
    assert run_cli("retarget", CLIPS / clip, "--target", "mixamo", "-o", glb).returncode == 0
    judge = Glb(glb)
    positions = judge.animated_world_matrices()[..., :3, 3]  # every node: tip nodes of childless bones too
    names = [node.name for node in judge.gltf.nodes]
    character = [p for p in pose_panels(sheet) if p[2] != "somaskel30"]
    assert len(character) == 16
    for view, frame, _, joints in character:
        for name, (horizontal, height) in joints.items():
            p = positions[frame, names.index(name)]
            assert abs(horizontal - (p[0] if view == "front" else p[2])) < 1e-4 and abs(height - p[1]) < 1e-4, name


def _character_panels_match(sheet: Path, glb: Path) -> int:
    """Every character panel of the sheet against the retarget's own output file (pygltflib + numpy FK)."""
    judge = Glb(glb)
    positions = judge.animated_world_matrices()[..., :3, 3]
    names = [node.name for node in judge.gltf.nodes]
    character = [p for p in pose_panels(sheet) if p[2] != "somaskel30"]
    for view, frame, _, joints in character:
        assert joints
        for name, (horizontal, height) in joints.items():
            p = positions[frame, names.index(name)]
            assert abs(horizontal - (p[0] if view == "front" else p[2])) < 1e-4 and abs(height - p[1]) < 1e-4, name
    return len(character)


def test_preview_maps_a_character_as_retarget_does_its_vrm_table_or_the_users_map(tmp_path):
    """Bones nobody could guess (b0, b1, ...): a .vrm carrying its humanoid table is mapped by the table,
    the same rig without one by --map; in both the sheet draws the character where `retarget` (same
    map) puts it, and without either the preview refuses in one line as `retarget` does."""
    import rig_variants as rv

    original = [n.name for n in rv.load(rv.MANNEQUIN).nodes]
    anonymous = {name: "b{}".format(k) for k, name in enumerate(original)}
    table = {bone: anonymous[name] for bone, name in rv.MANNEQUIN_VRM.items()}
    avatar = rv.variant(rv.MANNEQUIN, tmp_path, "avatar.vrm", lambda g: rv.rename(g, anonymous),
                        lambda g: rv.add_vrm_table(g, table, 0))
    bare = rv.variant(rv.MANNEQUIN, tmp_path, "bare.glb", lambda g: rv.rename(g, anonymous))
    # The user's fix for the bare rig: the mannequin's automatic map, its bones renamed as in the file.
    printed_map = run_cli("map", rv.MANNEQUIN, "--json")
    assert printed_map.returncode == 0, printed_map.stderr
    bones = tmp_path / "bones.json"
    bones.write_text(json.dumps({part: anonymous[bone] for part, bone in json.loads(printed_map.stdout).items()
                                  if part != "check"}))
    clip = CLIPS / "soma_04_ee_constraint"
    for rig, extra in ((avatar, []), (bare, ["--map", bones])):
        sheet, glb = tmp_path / (rig.stem + ".svg"), tmp_path / (rig.stem + "_out.glb")
        result = run_cli("preview", clip, "--target", rig, *extra, "-o", sheet)
        assert result.returncode == 0, result.stderr
        assert run_cli("retarget", clip, "--target", rig, *extra, "-o", glb).returncode == 0
        assert _character_panels_match(sheet, glb) == 16
    horse = rv.quadruped(tmp_path / "horse.glb")  # names that say nothing map by shape (issue 39); no humanoid does not
    refused = run_cli("preview", clip, "--target", horse, "-o", tmp_path / "refused.svg")
    printed = run_cli("retarget", clip, "--target", horse, "-o", tmp_path / "refused.glb")
    assert refused.returncode == printed.returncode == 1, refused.stderr
    assert refused.stderr.strip() == printed.stderr.strip() and len(refused.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "refused.svg").exists() and not (tmp_path / "refused.glb").exists()


def test_bad_preview_requests_get_one_line_and_write_nothing(tmp_path):
    cases = [
        (["preview", CLIPS / "soma_01_single_text_prompt", "-o", tmp_path / "x.png"], "preview writes .svg or .html"),
        (["preview", tmp_path / "missing", "-o", tmp_path / "x.svg"], "missing"),
        (["preview", CLIPS / "soma_01_single_text_prompt", "--map", tmp_path / "bones.json", "-o", tmp_path / "x.svg"],
         "bones.json: --map names the bones of a --target rig"),
        (["preview", CLIPS / "soma_01_single_text_prompt", "--constraints", CLIPS / "soma_01_single_text_prompt" / "prompt.txt",
          "-o", tmp_path / "x.svg"], "prompt.txt: not JSON"),
    ]
    for args, words in cases:
        result = run_cli(*args)
        assert result.returncode == 1 and len(result.stderr.strip().splitlines()) == 1 and words in result.stderr, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_preview_of_a_retarget_needs_no_system_temporary_folder_and_leaves_nothing_beside_its_page(
        capsys, tmp_path, monkeypatch):
    """The preview wrote the retargeted character into the system's temporary folder, and failed when that
    folder was gone (seen once in a full test run); it now measures the bytes it embeds."""
    import tempfile

    from kimodo_rig import cli

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "cleaned_away"))
    out = tmp_path / "out"
    out.mkdir()
    page = out / "page.html"
    status = cli.main(["preview", str(CLIPS / "soma_01_single_text_prompt"), "--target", "mannequin", "-o", str(page)])
    captured = capsys.readouterr()
    assert (status, captured.err) == (0, ""), captured.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"] and sorted(p.name for p in out.iterdir()) == ["page.html"]


def test_a_failed_self_check_in_a_preview_names_the_users_page_not_an_internal_file(capsys, tmp_path, monkeypatch):
    from kimodo_rig import cli
    from kimodo_rig.retarget import character_glb

    monkeypatch.setattr(character_glb, "SELF_CHECK_TOLERANCE_M", -1.0)  # every written joint now fails the check
    page = tmp_path / "page.html"
    status = cli.main(["preview", str(CLIPS / "soma_01_single_text_prompt"), "--target", "mannequin", "-o", str(page)])
    captured = capsys.readouterr()
    assert (status, captured.out) == (1, "")
    assert re.fullmatch(r"page\.html: self-check failed: the written file puts a joint \S+ m from where the retarget "
                        r"has it\n", captured.err), captured.err
    assert list(tmp_path.iterdir()) == []


def test_a_source_no_humanoid_is_found_in_is_named_by_its_path_as_retarget_names_it(tmp_path):
    """The preview named the clip (`tiny`), not the file the user gave, where `retarget` names the file."""
    clip = tmp_path / "takes" / "tiny.bvh"
    clip.parent.mkdir()
    clip.write_text("HIERARCHY\nROOT Hips\n{\n OFFSET 0 0 0\n CHANNELS 6 Xposition Yposition Zposition Zrotation "
                    "Xrotation Yrotation\n JOINT Spine\n {\n  OFFSET 0 10 0\n  CHANNELS 3 Zrotation Xrotation Yrotation\n"
                    "  End Site\n  {\n   OFFSET 0 10 0\n  }\n }\n}\nMOTION\nFrames: 2\nFrame Time: 0.033333\n"
                    + "0 90 0 0 0 0 0 0 0\n" * 2)
    lines = []
    for verb, output in (("retarget", tmp_path / "tiny.glb"), ("preview", tmp_path / "tiny.svg")):
        result = run_cli(verb, clip, "--target", "mannequin", "-o", output)
        assert (result.returncode, result.stdout, result.stderr.count("\n")) == (1, "", 1), result.stderr
        lines.append(result.stderr)
    assert lines[0] == lines[1]
    assert lines[1].startswith("{}: no humanoid legs and arms found (missing thigh_l, ".format(clip))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["takes"]


# --- the HTML player in Chromium ------------------------------------------------------------------------

def read_png(path: Path) -> np.ndarray:
    """RGB(A) 8-bit PNG -> (h, w, channels) array; the screenshot format Chromium writes."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, idat, header = 8, b"", None
    while position < len(data):
        length = int.from_bytes(data[position:position + 4], "big")
        kind = data[position + 4:position + 8]
        body = data[position + 8:position + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        position += 12 + length
    width, height = int.from_bytes(header[0:4], "big"), int.from_bytes(header[4:8], "big")
    assert header[8] == 8 and header[9] in (2, 6)
    channels = 3 if header[9] == 2 else 4
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, width * channels + 1)
    out = np.zeros((height, width * channels), dtype=np.int32)
    for row in range(height):
        kind, line = raw[row, 0], raw[row, 1:].astype(np.int32)
        previous = out[row - 1] if row else np.zeros_like(line)
        if kind == 0:
            out[row] = line
        elif kind == 2:
            out[row] = (line + previous) % 256
        else:  # Sub, Average and Paeth depend on the pixel to the left: one pixel at a time.
            current = np.zeros_like(line)
            for i in range(len(line)):
                left = current[i - channels] if i >= channels else 0
                up, corner = previous[i], previous[i - channels] if i >= channels else 0
                if kind == 1:
                    predictor = left
                elif kind == 3:
                    predictor = (left + up) // 2
                else:
                    p = left + up - corner
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                    predictor = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                current[i] = (line[i] + predictor) % 256
            out[row] = current
    return out.reshape(height, width, channels)


def run_page(page: Path, frame: int, other: int, outdir: Path) -> dict:
    modules = node_modules()
    if not (modules / "playwright-core").is_dir():
        pytest.fail("judge missing: playwright-core not installed in {} (run bash scripts/test.sh)".format(modules))
    if not Path(os.environ.get("CHROMIUM", "/usr/bin/chromium")).exists():
        pytest.fail("judge missing: Debian's chromium (run bash scripts/test.sh, which installs it)")
    result = subprocess.run(["node", str(ROOT / "tests" / "node" / "preview_page.mjs"), str(page), str(frame), str(other), str(outdir)],
                            capture_output=True, text=True, cwd=str(modules.parent), timeout=600,
                            env=dict(os.environ, NODE_PATH=str(modules)))
    if result.returncode != 0:
        pytest.fail("the Chromium judge failed:\n" + result.stderr[-3000:])
    return json.loads(result.stdout.strip().splitlines()[-1])


def embedded_glb(page: Path, out: Path) -> Path:
    text = page.read_text(encoding="utf-8")
    data = json.loads(re.search(r'<script id="preview-data" type="application/json">(.*?)</script>', text, re.S).group(1))
    out.write_bytes(base64.b64decode(data["glb"]))
    return out


@pytest.mark.parametrize("clip,target", [("soma_01_single_text_prompt", "mannequin"), ("g1_02_multi_text_ee_constraint", None)])
def test_html_player_plays_offline_and_poses_bones_where_numpy_fk_of_its_glb_does(clip, target, tmp_path):
    page = tmp_path / "player.html"
    args = ["preview", CLIPS / clip, "-o", page] + (["--target", target] if target else [])
    result = run_cli(*args)
    assert result.returncode == 0, result.stderr
    assert "<script src" not in page.read_text(encoding="utf-8")  # nothing loaded from elsewhere
    report = run_page(page, 40, 100, tmp_path)
    assert report["error"] is None
    assert report["console_errors"] == [] and report["page_errors"] == [], report
    assert report["requests"] == [], report["requests"]
    assert report["reached_last_frame"]
    assert report["frames"] == len(np.fromfile(str(CLIPS / clip / "root_positions.f32"), dtype="<f4")) // 3
    judge = Glb(embedded_glb(page, tmp_path / "embedded.glb"))
    worlds = judge.animated_world_matrices()
    names = [n.name for n in judge.gltf.nodes]
    shots = {}
    for n, shot in report["shots"].items():
        assert shot["frame"] == int(n)
        assert len(shot["bones"]) == len(judge.joint_nodes)
        for bone, position in shot["bones"].items():
            # three.js strips characters it does not allow in track names; match by its sanitised name.
            index = next(i for i, name in enumerate(names) if name.replace(":", "") == bone or name == bone)
            assert np.abs(np.array(position) - worlds[int(n), index, :3, 3]).max() < 1e-4, (n, bone)
        shots[n] = read_png(Path(shot["file"]))[..., :3]
    first, second = shots["40"], shots["100"]
    background = np.median(first.reshape(-1, 3), axis=0)
    drawn = np.abs(first - background).sum(axis=2) > 30
    assert drawn.mean() > 0.01, "the canvas at frame 40 is blank"
    assert (np.abs(first - second).sum(axis=2) > 30).mean() > 0.005, "frames 40 and 100 look the same"


# --- the player follows the character it draws -------------------------------------------------------------

QUATERNIUS = ROOT / "tests" / "data" / "rigs" / "quaternius"


def run_framing(page: Path, step: int) -> dict:
    """tests/node/preview_framing.mjs: per STEP-th frame, the drawn character's mesh box (three.js's precise
    skinned bounds), its corners projected with the page's camera, and the screenshot pixels inside and
    outside that box that change when the character is hidden."""
    modules = node_modules()
    if not (modules / "playwright-core").is_dir():
        pytest.fail("judge missing: playwright-core not installed in {} (run bash scripts/test.sh)".format(modules))
    result = subprocess.run(["node", str(ROOT / "tests" / "node" / "preview_framing.mjs"), str(page), str(step)],
                            capture_output=True, text=True, cwd=str(modules.parent), timeout=900,
                            env=dict(os.environ, NODE_PATH=str(modules)))
    if result.returncode != 0:
        pytest.fail("the Chromium judge failed:\n" + result.stderr[-3000:])
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["error"] is None and report["page_errors"] == [], report
    return report


@pytest.mark.parametrize("rig", ["RobotExpressive.glb", "quaternius_female_dress.glb"])
def test_html_player_keeps_the_whole_character_in_view_and_drawn_on_every_tenth_frame(rig, tmp_path):
    """The camera followed Kimodo's 1.7 m skeleton: the 4.5 m robot's head was cut off at frame 0 and it
    walked out of view by frame 140 (it travels 15 m to Kimodo's 9.5 m); the 4.6 m character's materials have
    alpha 0 with MASK, so nothing of her was drawn. Now the box of the mesh stays in the view, fills a fair
    part of it, and its pixels are the character's (they change when she is hidden)."""
    page = tmp_path / "player.html"
    result = run_cli("preview", CLIPS / "soma_02_multi_text_prompt", "--target", QUATERNIUS / rig, "-o", page)
    assert result.returncode == 0, result.stderr
    report = run_framing(page, 10)
    assert [f["frame"] for f in report["frames"]] == list(range(0, 227, 10))
    for measured in report["frames"]:
        corners = np.array(measured["corners"])
        assert (np.abs(corners[:, :2]) <= 1.0).all() and (np.abs(corners[:, 2]) < 1.0).all(), measured
        # Framed, not lost in the distance: the box spans at least a third of the view's height.
        assert corners[:, 1].max() - corners[:, 1].min() > 2 / 3, measured
        pixels = measured["pixels"]
        left, top, right, bottom = pixels["rect"]
        assert pixels["character_inside"] > 0.15 * (right - left) * (bottom - top), measured
        assert pixels["character_outside"] <= 0.01 * pixels["character_inside"], measured


def test_html_player_draws_no_pillar_for_a_root_bone_above_the_hips(tmp_path):
    """The mannequin's `Root` bone carries a box of its own and stays at the origin while the hips walk
    8 m away: it stood there as a grey pillar (and the character's box reached back to it)."""
    page = tmp_path / "player.html"
    assert run_cli("preview", CLIPS / "soma_02_multi_text_prompt", "--target", "mannequin", "-o", page).returncode == 0
    report = run_framing(page, 100)
    assert [f["frame"] for f in report["frames"]] == [0, 100, 200]
    for measured in report["frames"]:
        low, high = np.array(measured["box"])
        height = high[1] - low[1]
        assert 1.4 < height < 1.8 and max(high[0] - low[0], high[2] - low[2]) < height, measured
    assert np.linalg.norm(np.array(report["frames"][-1]["box"]).mean(axis=0)[[0, 2]]) > 5


def test_a_character_invisible_by_its_materials_is_named_in_one_warning_and_drawn_opaque(tmp_path):
    import rig_variants as rv

    def hide(gltf):
        for material in gltf.materials:
            material.alphaMode, material.pbrMetallicRoughness.baseColorFactor = "BLEND", [1.0, 1.0, 1.0, 0.0]

    rig = QUATERNIUS / "RobotExpressive.glb"
    hidden = rv.variant(rig, tmp_path, "hidden.glb", hide)
    page = tmp_path / "player.html"
    result = run_cli("preview", CLIPS / "soma_01_single_text_prompt", "--target", hidden, "-o", page)
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "alpha 0" in line]
    assert len(warnings) == 1 and warnings[0].startswith("warning: {}: material".format(hidden)), result.stderr
    assert re.search(r"alpha 0 with MASK or BLEND \(nothing of (it|them) is drawn\); the preview draws (it|them) opaque$",
                     warnings[0]), warnings[0]
    shown = run_cli("preview", CLIPS / "soma_01_single_text_prompt", "--target", rig, "-o", tmp_path / "shown.html")
    assert "alpha 0" not in shown.stderr
    report = run_framing(page, 100)
    assert warnings[0] in report["report"]
    for measured in report["frames"]:
        left, top, right, bottom = measured["pixels"]["rect"]
        assert measured["pixels"]["character_inside"] > 0.15 * (right - left) * (bottom - top), measured


def test_svg_wraps_the_report_inside_the_sheet(tmp_path):
    """The report line of a retarget (`arms match ..., travelled 866 cm over 7.5 s`, 122 characters) ran off
    the sheet's right edge. Each drawn line now ends inside the sheet at 0.6 em a character (the advance of
    the common monospace fonts), below the last one, and together they say what `retarget` prints."""
    clip = CLIPS / "soma_02_multi_text_prompt"
    sheet = tmp_path / "sheet.svg"
    assert run_cli("preview", clip, "--target", "mannequin", "-o", sheet).returncode == 0
    printed = run_cli("retarget", clip, "--target", "mannequin", "-o", tmp_path / "out.glb")
    assert printed.returncode == 0, printed.stderr
    root = ET.parse(str(sheet)).getroot()
    width, height = float(root.get("width")), float(root.get("height"))
    rows = [t for t in root.iter(SVG + "text") if t.get("class") == "report"]
    assert max(len(line) for line in printed.stdout.splitlines()) * 0.6 * 11 > width - float(rows[0].get("x"))
    for row in rows:
        size = float(row.get("font-size"))
        assert float(row.get("x")) + len(row.text) * 0.6 * size <= width and float(row.get("y")) + size / 3 <= height, row.text
    assert [float(r.get("y")) for r in rows] == sorted({float(r.get("y")) for r in rows})
    # After the first line (the title names the clip, `retarget` the output file): the same words.
    assert " ".join(r.text for r in rows[1:]).split() == " ".join(printed.stdout.splitlines()[1:]).split()
