"""The runtime imports nothing outside the standard library and never the front ends."""
from __future__ import annotations

import ast
import sys

from conftest import ROOT

FORBIDDEN_ALWAYS = {"numpy", "bpy", "mathutils", "unreal", "torch", "scipy"}
# The optional cluster path (`pip install kimodo-rig[dask]`) is the one module that may import Dask.
OPTIONAL_EXTRAS = {"kimodo_rig/distributed.py": {"dask"}, "kimodo_rig/formats/draco.py": {"DracoPy"}}


def _imports(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.split(".")[0], 0
        elif isinstance(node, ast.ImportFrom):
            yield node.lineno, (node.module or "").split(".")[0], node.level


def test_core_imports_only_the_standard_library():
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    offenders = []
    files = sorted((ROOT / "kimodo_rig").rglob("*.py"))
    assert len(files) > 5
    for path in files:
        extras = OPTIONAL_EXTRAS.get(path.relative_to(ROOT).as_posix(), set())
        for line, module, level in _imports(path):
            if level:  # relative import inside the package
                continue
            if module in FORBIDDEN_ALWAYS or (module not in stdlib | extras and module != "kimodo_rig"):
                offenders.append("{}:{}: {}".format(path.relative_to(ROOT), line, module))
    assert offenders == []


def test_front_ends_are_the_only_importers_of_host_apis():
    for path in [ROOT / "kimodo_to_glb.py"] + sorted((ROOT / "kimodo_rig").rglob("*.py")):
        modules = {module for _, module, _ in _imports(path)}
        assert not modules & {"bpy", "unreal"}, path


def test_unreal_retarget_is_the_only_importer_of_unreal():
    """The editor API reaches the repo through one file; everything else must run in any Python."""
    skipped = {".venvs", "node_modules", "data", ".git", "build"}
    importers = []
    for path in sorted(ROOT.rglob("*.py")):
        if skipped & set(path.relative_to(ROOT).parts):
            continue
        if "unreal" in {module for _, module, _ in _imports(path)}:
            importers.append(str(path.relative_to(ROOT)))
    assert importers == ["unreal_retarget.py"]
    assert "bpy" not in {module for _, module, _ in _imports(ROOT / "unreal_retarget.py")}


def test_dask_is_imported_only_inside_the_cluster_path_functions():
    """Importing kimodo_rig.distributed needs no Dask: it is imported where the cluster is used."""
    tree = ast.parse((ROOT / "kimodo_rig" / "distributed.py").read_text(encoding="utf-8"))
    top_level = {alias.name.split(".")[0] for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
                 for alias in node.names} | {(node.module or "").split(".")[0] for node in tree.body
                                              if isinstance(node, ast.ImportFrom)}
    assert "dask" not in top_level and "distributed" not in top_level
    found = {module for _, module, _ in _imports(ROOT / "kimodo_rig" / "distributed.py")}
    assert "dask" in found  # the test above would pass on a module that lost its Dask path


def test_dracopy_is_imported_only_inside_the_draco_functions():
    """Importing the runtime needs no DracoPy (`pip install ".[draco]"` is optional): it is imported where
    a Draco stream is decoded."""
    tree = ast.parse((ROOT / "kimodo_rig" / "formats" / "draco.py").read_text(encoding="utf-8"))
    top_level = {alias.name.split(".")[0] for node in tree.body if isinstance(node, ast.Import) for alias in node.names}
    assert "DracoPy" not in top_level
    assert "DracoPy" in {module for _, module, _ in _imports(ROOT / "kimodo_rig" / "formats" / "draco.py")}
