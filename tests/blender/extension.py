"""One Blender process for the extension's tests: install the built zip the way Blender does (into a
temporary user folder), then run File > Import > Kimodo motion as a user would and record what Blender
evaluates. Judging happens in tests/test_blender_extension.py.

Usage: python extension.py SPEC.json ; SPEC = {"zip": ..., "work": ..., "cases": [...]}; each case
{"name", "rig": "glb" | "rigify" | "box", "path" (glb rigs: a .glb, or an .fbx read by Blender's FBX
importer), "skin" (rigify: a body of boxes), "clip" (a clip folder, or any file the add-on reads: an .fbx
motion too), "options" {...}, "import" {...} (the glTF importer's options), "reference" (box: step 1's .glb),
"select": "armature" | "mesh" | "none", "soles",
"forward" (the facing the rig was built with, glTF axes; +Z when absent: where the sole's front is found),
"edits" [(part, bone)]: set through the panel's button and imported again, "draw_panel", "undo"}, and
"bad": [paths]. Writes the record to WORK/blender_result.json and prints {"result": its path} last.
SPEC = {"exports": [...]} instead: only the characters the command line reads as this Blender has them
(`export_characters`).
"""
import json
import os
import sys
import tempfile
from pathlib import Path

USER = tempfile.mkdtemp(prefix="kimodo_blender_user_")
for variable in ("BLENDER_USER_RESOURCES", "BLENDER_USER_CONFIG", "BLENDER_USER_SCRIPTS", "BLENDER_USER_EXTENSIONS"):
    os.environ[variable] = os.path.join(USER, variable.lower())

import bpy  # noqa: E402
import addon_utils  # noqa: E402  (importable once bpy is)
import numpy as np  # noqa: E402

from soles import sole_front  # noqa: E402

MODULE = "bl_ext.user_default.kimodo_motion"


def to_gltf(vector):
    return [vector.x, vector.z, -vector.y]


def clear_scene():
    bpy.ops.wm.read_homefile(use_empty=True)
    for collection in (bpy.data.objects, bpy.data.armatures, bpy.data.meshes, bpy.data.actions, bpy.data.materials):
        for block in list(collection):
            collection.remove(block)


def datablock_counts():
    scene = bpy.context.scene
    return {"objects": len(bpy.data.objects), "armatures": len(bpy.data.armatures), "meshes": len(bpy.data.meshes),
            "actions": len(bpy.data.actions), "fps": scene.render.fps, "frame_end": scene.frame_end,
            "actions_on_armatures": sorted(o.animation_data.action.name for o in bpy.data.objects
                                           if o.animation_data and o.animation_data.action),
            "bone_maps": sorted(a.name for a in bpy.data.armatures if "kimodo_bone_map" in a)}


def capture(call):
    """Run call() with the process's stdout and stderr captured (Blender prints reports from C)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            result = call()
        except RuntimeError as error:  # bpy.ops raises on an ERROR report
            result = "RuntimeError: " + str(error)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        sink.seek(0)
        text = sink.read().decode("utf-8", "replace")
    return result, text


def make_rigify(skin=False):
    """Rigify's human metarig; with `skin`, a body of one box per bone (8 corners around it, head to tail,
    wholly on that bone) deforming with it, as a character skinned to it would."""
    bpy.ops.preferences.addon_enable(module="rigify")
    bpy.ops.object.armature_human_metarig_add()
    metarig = bpy.context.active_object
    if skin:
        corners, faces, groups = [], [], []
        for bone in metarig.data.bones:
            frame = np.array(bone.matrix_local)  # armature space: X, Y (head to tail), Z, head
            x, y, z, head = frame[:3, 0], frame[:3, 1], frame[:3, 2], frame[:3, 3]
            width = min(max(0.12 * bone.length, 0.008), 0.04)
            base = len(corners)
            corners += [head + y * along + x * sx * width + z * sz * width
                        for along in (0.0, bone.length) for sx in (-1, 1) for sz in (-1, 1)]
            faces += [tuple(base + k for k in face) for face in
                      ((0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3))]
            groups.append(bone.name)
        mesh = bpy.data.meshes.new("metarig_body")
        mesh.from_pydata([tuple(c) for c in corners], [], faces)
        body = bpy.data.objects.new("metarig_body", mesh)
        bpy.context.collection.objects.link(body)
        body.parent = metarig
        for k, name in enumerate(groups):
            body.vertex_groups.new(name=name).add(list(range(8 * k, 8 * k + 8)), 1.0, "REPLACE")
        body.modifiers.new("Armature", "ARMATURE").object = metarig
        body.select_set(True)
        bpy.context.view_layer.update()
    return metarig


def export_characters(exports):
    """Each {"rig": "rigify" | "glb", "path" (glb), "out"}: Rigify's metarig made here, or the .glb as
    Blender's importer has it, exported to "out" for the command line to read."""
    for entry in exports:
        clear_scene()
        if entry["rig"] == "rigify":
            make_rigify(entry.get("skin", False))
            bpy.ops.export_scene.gltf(filepath=entry["out"], export_format="GLB", use_selection=True)
        else:
            bpy.ops.import_scene.gltf(filepath=entry["path"], **entry.get("import", {}))
            bpy.ops.export_scene.gltf(filepath=entry["out"], export_format="GLB")


def armatures():
    return [o for o in bpy.context.scene.objects if o.type == "ARMATURE"]


def select_only(obj):
    for other in bpy.context.scene.objects:
        other.select_set(False)
    if obj is not None:
        obj.select_set(True)
    bpy.context.view_layer.objects.active = obj


def sample(armature, frames):
    heads = []
    scene = bpy.context.scene
    for frame in frames:
        scene.frame_set(frame)
        heads.append({bone.name: to_gltf(armature.matrix_world @ bone.head) for bone in armature.pose.bones})
    return heads


def deformed_vertices(armature, frame):
    scene = bpy.context.scene
    scene.frame_set(frame)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    points = []
    for obj in scene.objects:
        if obj.type == "MESH" and any(m.type == "ARMATURE" and m.object == armature for m in obj.modifiers):
            evaluated = obj.evaluated_get(depsgraph)
            mesh = evaluated.to_mesh()
            points += [to_gltf(obj.matrix_world @ v.co) for v in mesh.vertices]
            evaluated.to_mesh_clear()
    return np.array(points)


def hanging_bone(obj, armature):
    """The bone of `armature` a mesh hangs from rigidly (parented to it, or to an object parented to it),
    "" when none."""
    child, parent = obj, obj.parent
    while parent is not None:
        if parent == armature:
            return child.parent_bone if child.parent_type == "BONE" else ""
        child, parent = parent, parent.parent
    return ""


def sole_heights(armature, frames, feet, forward=(0.0, 0.0, 1.0)):
    """As tests/feet_judge.py measures a file: per frame and side, the lowest world height (glTF y) of the
    deformed vertices carried (weight share >= 0.5) by that side's foot bone and the bones below it, or
    of meshes hanging from one of them; the same at the armature's rest; the rest height of every mesh
    the armature moves; and per frame and side where the sole's front vertex is (glTF axes): chosen at
    rest along `forward` (the facing the rig was built with, glTF axes), as the judges choose it
    (`sole_front`). feet: {"l": foot bone name, "r": ...}."""
    scene = bpy.context.scene
    below = {side: {b.name for b in armature.data.bones[name].children_recursive} | {name} for side, name in feet.items()}
    parts = []  # (object, {side: vertex mask})
    for obj in scene.objects:
        if obj.type != "MESH":
            continue
        if any(m.type == "ARMATURE" and m.object == armature for m in obj.modifiers):
            names = {g.index: g.name for g in obj.vertex_groups}
            masks = {}
            for side, bones in below.items():
                mask = []
                for vertex in obj.data.vertices:
                    total = sum(e.weight for e in vertex.groups if e.group in names)
                    on = sum(e.weight for e in vertex.groups if names.get(e.group) in bones)
                    mask.append(total > 0.0 and on >= 0.5 * total)
                masks[side] = np.array(mask, bool)
            parts.append((obj, masks))
            continue
        bone = hanging_bone(obj, armature)
        if bone:
            count = len(obj.data.vertices)
            parts.append((obj, {side: np.full(count, bone in bones) for side, bones in below.items()}))

    def points_of(depsgraph, obj):
        evaluated = obj.evaluated_get(depsgraph)
        mesh = evaluated.to_mesh()
        co = np.empty(len(mesh.vertices) * 3)
        mesh.vertices.foreach_get("co", co)
        evaluated.to_mesh_clear()
        world = np.array(evaluated.matrix_world)
        return co.reshape(-1, 3) @ world[:3, :3].T + world[:3, 3]

    def foot_points():
        """Per side, every foot vertex in glTF axes (Blender (x, y, z) -> glTF (x, z, -y))."""
        depsgraph = bpy.context.evaluated_depsgraph_get()
        result = {side: [] for side in feet}
        for obj, masks in parts:
            points = points_of(depsgraph, obj)
            for side, mask in masks.items():
                if len(mask) == len(points) and mask.any():
                    result[side].append(points[mask][:, [0, 2, 1]] * [1.0, 1.0, -1.0])
        return {side: np.concatenate(found) if found else np.zeros((0, 3)) for side, found in result.items()}

    armature.data.pose_position = "REST"
    bpy.context.view_layer.update()
    rest_points = foot_points()
    rest = {side: float(points[:, 1].min()) if len(points) else float("inf") for side, points in rest_points.items()}
    depsgraph = bpy.context.evaluated_depsgraph_get()
    every = np.concatenate([points_of(depsgraph, obj)[:, 2] for obj, _ in parts])
    height = float(every.max() - every.min())
    ankles = {side: np.array(to_gltf(armature.matrix_world @ armature.data.bones[name].head_local)) for side, name in feet.items()}
    chosen = {side: sole_front(points, ankles[side], forward, height) for side, points in rest_points.items() if len(points)}
    armature.data.pose_position = "POSE"
    bpy.context.view_layer.update()
    heights = {side: [] for side in feet}
    fronts = {side: [] for side in chosen}
    for frame in frames:
        scene.frame_set(frame)
        for side, points in foot_points().items():
            heights[side].append(float(points[:, 1].min()) if len(points) else float("inf"))
            if side in chosen:
                fronts[side].append(points[chosen[side]].tolist())
    return heights, rest, height, fronts


def nearest_distance(a, b):
    """Largest distance from a point of either set to the other set."""
    if not len(a) or not len(b):
        return float("inf")
    d = np.linalg.norm(a[:, None, :] - b[None, :, :], axis=2)
    return float(max(d.min(axis=1).max(), d.min(axis=0).max()))


class LayoutRecorder:
    """Stands in for a panel's UILayout (none exists without a window) and records what draw() puts in it:
    ("label", text), ("operator", idname, text, {properties set on the button}), ("row", alert)."""

    def __init__(self, log):
        self.log = log
        self.alert = False

    def label(self, text="", **_):
        self.log.append(("label", text))

    def operator(self, idname, text="", **_):
        properties = {}
        self.log.append(("operator", idname, text, properties))
        return type("Button", (), {"__setattr__": lambda _, key, value: properties.__setitem__(key, value)})()

    def box(self):
        return self

    def column(self, **_):
        return self

    def row(self, **_):
        log = self.log

        class Row(LayoutRecorder):
            def __setattr__(self, key, value):
                if key == "alert" and value:
                    log.append(("alert",))
                object.__setattr__(self, key, value)
        return Row(log)


def draw_panel():
    """The Kimodo panel and, where it polls true, its Fingers sub-panel."""
    log = []
    for panel_type in (bpy.types.VIEW3D_PT_kimodo, bpy.types.VIEW3D_PT_kimodo_fingers):
        if hasattr(panel_type, "poll") and not panel_type.poll(bpy.context):
            continue
        log.append(("panel", panel_type.bl_label))
        panel = type("PanelCall", (), {"layout": LayoutRecorder(log)})()
        panel_type.draw(panel, bpy.context)
    return log


def stored_map(armature):
    text = armature.data.get("kimodo_bone_map")
    return None if text is None else str(text)


def edit_and_import(target, case, edits):
    """Each (part, bone) set through the panel's operator, then the clip imported again: what the map
    and Blender's bones then are."""
    select_only(target)
    emptied = [json.loads(stored_map(target))[part] for part, bone in edits if not bone]
    results = [capture(lambda: bpy.ops.kimodo.set_bone(part=part, bone=bone))[0] for part, bone in edits]
    record = {"set_results": [sorted(r) if isinstance(r, set) else r for r in results], "map": stored_map(target)}
    result, output = capture(lambda: bpy.ops.kimodo.import_motion(filepath=case["clip"], **case.get("options", {})))
    record["result"] = sorted(result) if isinstance(result, set) else result
    record["output"] = output
    record["report"] = target.data.get("kimodo_report", "")
    scene = bpy.context.scene
    record["heads"] = sample(target, range(scene.frame_start, scene.frame_end + 1))
    record["emptied_basis"] = {}  # per emptied part's bone, its pose basis' largest entry off the identity
    for name in emptied:
        worst = 0.0
        for frame in range(scene.frame_start, scene.frame_end + 1, 10):
            scene.frame_set(frame)
            basis = np.array(target.pose.bones[name].matrix_basis)
            worst = max(worst, float(np.abs(basis - np.eye(4)).max()))
        record["emptied_basis"][name] = worst
    return record


def run_case(case):
    clear_scene()
    scene = bpy.context.scene
    record = {"name": case["name"]}
    target = None
    if case["rig"] == "glb":
        if case["path"].lower().endswith(".fbx"):
            bpy.ops.import_scene.fbx(filepath=case["path"], **case.get("import", {}))
        else:
            bpy.ops.import_scene.gltf(filepath=case["path"], **case.get("import", {}))
        target = armatures()[0]
    elif case["rig"] == "rigify":
        target = make_rigify(case.get("skin", False))
    if case.get("select") == "mesh":
        mesh = next(o for o in scene.objects if o.type == "MESH" and any(m.type == "ARMATURE" for m in o.modifiers))
        select_only(mesh)
    else:
        select_only(target)
    before = {o.name for o in bpy.data.objects}
    options = case.get("options", {})
    result, output = capture(lambda: bpy.ops.kimodo.import_motion(filepath=case["clip"], **options))
    record["result"] = sorted(result) if isinstance(result, set) else result
    record["output"] = output
    if record["result"] != ["FINISHED"]:
        return record
    if target is None:
        made = [o for o in bpy.data.objects if o.name not in before]
        record["made"] = sorted((o.name, o.type) for o in made)
        target = next(o for o in made if o.type == "ARMATURE")
    action = target.animation_data.action
    record["action"] = action.name
    record["fps"], record["frame_start"], record["frame_end"] = scene.render.fps, scene.frame_start, scene.frame_end
    record["armature"] = target.name
    record["report"] = target.data.get("kimodo_report", "")
    record["bone_map"] = stored_map(target)
    record["heads"] = sample(target, range(scene.frame_start, scene.frame_end + 1))
    record["rest_heads"] = {bone.name: to_gltf(target.matrix_world @ bone.head_local) for bone in target.data.bones}
    record["quaternion_modes"] = sorted({b.rotation_mode for b in target.pose.bones})
    if case.get("soles"):
        bone_map = json.loads(record["bone_map"])
        feet = {side: bone_map["foot_" + side] for side in ("l", "r")}
        record["soles"], record["rest_soles"], record["rest_height"], record["fronts"] = sole_heights(
            target, range(scene.frame_start, scene.frame_end + 1), feet, case.get("forward", (0.0, 0.0, 1.0)))
    if case["rig"] == "box":
        frames = case["compare_frames"]
        ours = [deformed_vertices(target, scene.frame_start + f) for f in frames]
        record["box_vertices"] = int(len(ours[0]))
        clear_scene()
        scene = bpy.context.scene
        scene.render.fps = record["fps"]
        bpy.ops.import_scene.gltf(filepath=case["reference"])
        reference = armatures()[0]
        start = int(round(reference.animation_data.action.frame_range[0]))
        record["reference_heads"] = sample(reference, range(start, start + len(record["heads"])))
        theirs = [deformed_vertices(reference, start + f) for f in frames]
        record["mesh_distance"] = max(nearest_distance(a, b) for a, b in zip(ours, theirs))
        record["reference_vertices"] = int(len(theirs[0]))
    if case.get("draw_panel"):
        select_only(target)
        record["panel"] = draw_panel()
        select_only(None)
        record["panel_without_armature"] = draw_panel()
    if case.get("edits"):
        # Bones set in the stored map through the panel's button, the clip imported again; then a bone
        # that is not there (refused, the map unchanged), and re-detect.
        record["edited"] = edit_and_import(target, case, case["edits"])
        before = stored_map(target)
        result, output = capture(lambda: bpy.ops.kimodo.set_bone(part="head", bone="no such bone"))
        record["bad_edit"] = {"result": result, "errors": [line for line in output.splitlines() if "rror" in line],
                              "unchanged": stored_map(target) == before}
        capture(lambda: bpy.ops.kimodo.detect_bone_map())
        record["bone_map_redetected"] = stored_map(target)
    if case.get("undo"):
        bpy.ops.ed.undo_push(message="before import")
        select_only(target)
        count = len(bpy.data.actions)
        # As the menu runs it: an operator called from Python pushes an undo step only when asked to.
        capture(lambda: bpy.ops.kimodo.import_motion("EXEC_DEFAULT", True, filepath=case["clip"], **options))
        record["actions_after_import"] = len(bpy.data.actions) - count
        window = bpy.context.window_manager.windows[0]
        with bpy.context.temp_override(window=window, screen=window.screen):
            result, text = capture(lambda: bpy.ops.ed.undo())
        record["undo_result"] = sorted(result) if isinstance(result, set) else result
        record["actions_after_undo"] = len(bpy.data.actions) - count
    return record


def make_stick_armature():
    """Two bones and no humanoid in them: a good clip must be refused for it."""
    data = bpy.data.armatures.new("stick")
    obj = bpy.data.objects.new("stick", data)
    bpy.context.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    first = data.edit_bones.new("a")
    first.head, first.tail = (0, 0, 0), (0, 0, 1)
    second = data.edit_bones.new("b")
    second.head, second.tail = (0, 0, 1), (0, 0, 2)
    second.parent = first
    bpy.ops.object.mode_set(mode="OBJECT")
    return obj


def run_bad(paths, rig, good_clip, rootless_rig):
    """Each bad file with a character selected and with nothing selected; a good clip onto an armature
    that is no humanoid, and with root motion on a root bone onto a rig without one: the scene must not
    change."""
    results = []
    for selection in ("armature", "none", "stick", "rootless", "constrained"):
        clear_scene()
        bpy.ops.import_scene.gltf(filepath=rootless_rig if selection == "rootless" else rig)
        target = armatures()[0]
        if selection == "stick":
            target = make_stick_armature()
        if selection == "constrained":
            # A constraint Blender evaluates after the keys: the self-check must refuse the import and
            # put the character back as it was (its own action, its bones' rotation modes).
            limit = target.pose.bones["upperarm_l"].constraints.new("LIMIT_ROTATION")
            limit.use_limit_x = limit.use_limit_y = limit.use_limit_z = True
            target.animation_data_create().action = bpy.data.actions.new("own_clip")
            for bone in target.pose.bones:
                bone.rotation_mode = "XYZ"
        select_only(target if selection != "none" else None)
        options = {"root_motion": "ROOT"} if selection == "rootless" else {}
        for path in (paths if selection in ("armature", "none") else [good_clip]):
            before = datablock_counts()
            before["rotation_modes"] = sorted({b.rotation_mode for b in target.pose.bones}) if target else []
            result, output = capture(lambda: bpy.ops.kimodo.import_motion(filepath=path, **options))
            errors = [line for line in output.splitlines() if "rror" in line]
            after = datablock_counts()
            after["rotation_modes"] = sorted({b.rotation_mode for b in target.pose.bones}) if target else []
            results.append({"path": path, "selection": selection, "result": sorted(result) if isinstance(result, set) else result,
                            "errors": errors, "unchanged": after == before})
    return results


def run_rigid(rig, clip):
    """A character of rigid parts (no armature; `rig`) with its torso selected, then a lone mesh (a cube)
    selected: each import makes a new box rig; what its report says."""
    out = []
    for selection in ("part", "cube"):
        clear_scene()
        if selection == "part":
            bpy.ops.import_scene.gltf(filepath=rig)
            target = bpy.data.objects["torso"]
        else:
            bpy.ops.mesh.primitive_cube_add()
            target = bpy.context.view_layer.objects.active
        select_only(target)
        before = set(bpy.data.objects.keys())
        result, _ = capture(lambda: bpy.ops.kimodo.import_motion(filepath=clip))
        made = [bpy.data.objects[name] for name in sorted(set(bpy.data.objects.keys()) - before)]
        rigs = [o for o in made if o.type == "ARMATURE"]
        out.append({"selection": selection, "result": sorted(result) if isinstance(result, set) else result,
                    "meshes": sum(1 for o in bpy.data.objects if o.type == "MESH" and o not in made),
                    "new_armatures": len(rigs), "report": rigs[0].data.get("kimodo_report", "") if rigs else ""})
    return out


def main():
    spec = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    out = {"blender": bpy.app.version_string}
    if "exports" in spec:
        export_characters(spec["exports"])
        print(json.dumps(out))
        return
    bpy.ops.extensions.package_install_files(filepath=spec["zip"], repo="user_default", enable_on_install=True)
    out["installed"] = MODULE in {m.__name__ for m in addon_utils.modules()} and addon_utils.check(MODULE)[1]
    out["operator"] = hasattr(bpy.ops.kimodo, "import_motion") and "KIMODO_OT_import_motion" in dir(bpy.types)
    out["panel"] = "VIEW3D_PT_kimodo" in dir(bpy.types)
    out["menu"] = any(getattr(f, "__name__", "") == "menu_import" for f in bpy.types.TOPBAR_MT_file_import._dyn_ui_initialize())
    out["permissions_manifest"] = True
    out["filter_glob"] = bpy.ops.kimodo.import_motion.get_rna_type().properties["filter_glob"].default
    out["install_folder"] = str(Path(USER))
    out["cases"] = [run_case(case) for case in spec["cases"]]
    out["bad"] = run_bad(spec["bad"], spec["bad_rig"], spec["good_clip"], spec["rootless_rig"])
    out["rigid"] = run_rigid(spec["rigid_rig"], spec["good_clip"])
    addon_utils.disable(MODULE)
    out["unregistered"] = {"operator": "KIMODO_OT_import_motion" in dir(bpy.types),
                           "panel": "VIEW3D_PT_kimodo" in dir(bpy.types),
                           "set_bone": "KIMODO_OT_set_bone" in dir(bpy.types)}
    addon_utils.enable(MODULE)
    out["re_registered"] = "KIMODO_OT_import_motion" in dir(bpy.types)
    path = Path(spec["work"]) / "blender_result.json"
    path.write_text(json.dumps(out), encoding="utf-8")
    print(json.dumps({"result": str(path)}))


main()
# bpy 4.2 as a module segfaults while Python tears it down (after everything above has run and been
# written); leave without that teardown.
sys.stdout.flush()
os._exit(0)
