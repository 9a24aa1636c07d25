#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs every judge the tests need, then runs them.
#   bash scripts/test.sh            (extra arguments go to pytest, e.g. -k glb; -n 0 for one process, as --pdb needs)
#   bash scripts/test.sh --quick    the developer's loop: only the test venv is installed, and only the tests
#                                   that need no Blender, Node or Chromium and are not slow run (tests/conftest.py)
# Installs (each only when its requirements file changed since the last run):
#   .venvs/test-*     pytest(-xdist), numpy, pygltflib, mujoco, vermin, unreal-stub (tests/requirements.txt)
#   .venvs/unreal-stub-*  the UE 5.4 and 5.5 API stubs, one folder each     (tests/requirements-unreal-stubs.txt)
#   .venvs/blender-*  bpy + numpy<2 on Python 3.11                             (tests/requirements-blender.txt)
#   .venvs/blender42-*  bpy 4.2 LTS, the oldest Blender the extension supports  (tests/requirements-blender42.txt)
#   tests/node      gltf-validator, pyright, three, playwright-core from npm (tests/node/package-lock.json)
#   chromium        Debian's, for the HTML player's test (apt, when /usr/bin/chromium is missing)
#   assimp          Debian's assimp-utils, a judge of the .fbx files we write (apt, when `assimp` is missing)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
QUICK=
if [ "${1:-}" = "--quick" ]; then QUICK=--quick; shift; fi

python_for_blender() {
  # bpy wheels exist for exactly one Python minor version (3.11 for the bpy on PyPI now).
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      echo "$candidate"; return 0
    fi
  done
  if command -v apt-get >/dev/null; then
    apt-get update -qq >/dev/null && apt-get install -y -qq python3.11 python3.11-venv >/dev/null && echo python3.11 && return 0
  fi
  echo "no Python 3.11 for bpy: install python3.11" >&2; return 1
}

ensure_venv() {  # ensure_venv NAME PYTHON REQUIREMENTS; sets VENV to its folder, one per requirements version
  local name=$1 python=$2 requirements=$3 stamp dir
  stamp=$(sha256sum "$requirements" | cut -c1-12)
  dir="$VENVS/$name-$stamp"
  VENV=$dir
  if [ -x "$dir/bin/python" ] && [ -f "$dir/.complete" ]; then return 0; fi
  echo "installing $requirements into $dir ..."
  rm -rf "$dir"
  "$python" -m venv "$dir"
  "$dir/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null 2>&1 || true
  "$dir/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements" 2> >(grep -v "^WARNING: Location" >&2)
  touch "$dir/.complete"
}

ensure_unreal_stubs() {  # older engines' API stubs: pip holds one version per venv, so one folder each
  local version dir
  while read -r version; do
    case "$version" in ''|'#'*) continue ;; esac
    dir="$VENVS/unreal-stub-$version"
    if [ -f "$dir/.complete" ]; then continue; fi
    echo "installing unreal-stub $version into $dir ..."
    rm -rf "$dir.partial"
    "$TEST_VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --target "$dir.partial" \
      "unreal-stub==$version" 2> >(grep -v "^WARNING: Location" >&2)
    touch "$dir.partial/.complete"
    rm -rf "$dir" && mv "$dir.partial" "$dir"
  done < tests/requirements-unreal-stubs.txt
}

ensure_node() {
  local stamp
  command -v npm >/dev/null || { apt-get update -qq >/dev/null && apt-get install -y -qq nodejs npm >/dev/null; }
  stamp=$(sha256sum tests/node/package-lock.json | cut -c1-16)
  if [ -d tests/node/node_modules ] && [ "$(cat tests/node/node_modules/.stamp 2>/dev/null)" = "$stamp" ]; then return 0; fi
  echo "installing tests/node (npm ci) ..."
  (cd tests/node && npm ci --no-audit --no-fund --silent)
  echo "$stamp" > tests/node/node_modules/.stamp
}

ensure_chromium() {  # Debian's Chromium: the browser that judges `preview`'s HTML player (tests/test_preview.py)
  if [ -x "${CHROMIUM:-/usr/bin/chromium}" ]; then return 0; fi
  echo "installing chromium (apt) ..."
  apt-get update -qq >/dev/null && apt-get install -y -qq chromium >/dev/null
}

ensure_assimp() {  # Debian's assimp command: one of the three readers that judge our FBX (tests/test_fbx.py)
  if command -v assimp >/dev/null; then return 0; fi
  echo "installing assimp-utils (apt) ..."
  apt-get update -qq >/dev/null && apt-get install -y -qq assimp-utils >/dev/null
}

# KIMODO_VENVS lets several checkouts on one machine share the (large) venvs; default: .venvs here.
VENVS=${KIMODO_VENVS:-$ROOT/.venvs}
ensure_venv test python3 tests/requirements.txt
TEST_VENV=$VENV
ensure_unreal_stubs
export KIMODO_UNREAL_STUBS="$VENVS"
if [ -z "$QUICK" ]; then
  ensure_venv blender "$(python_for_blender)" tests/requirements-blender.txt
  BLENDER_VENV=$VENV
  ensure_venv blender42 "$(python_for_blender)" tests/requirements-blender42.txt
  BLENDER42_VENV=$VENV
  ensure_node
  ensure_chromium
  ensure_assimp
  export KIMODO_BLENDER_PYTHON="$BLENDER_VENV/bin/python"
  export KIMODO_BLENDER42_PYTHON="$BLENDER42_VENV/bin/python"
  export KIMODO_NODE_MODULES="$ROOT/tests/node/node_modules"
fi

echo "vermin: the runtime must run on Python 3.8+"
"$TEST_VENV/bin/vermin" -q --no-tips --violations --eval-annotations -t=3.8- kimodo_rig kimodo_to_glb.py $(ls unreal_retarget.py 2>/dev/null)

# The suite starts hundreds of `kimodo-rig` subprocesses: each starts faster from bytecode cached in
# __pycache__ (git ignores it), even where the environment says PYTHONDONTWRITEBYTECODE.
unset PYTHONDONTWRITEBYTECODE

# On every core (pytest-xdist), each test file whole on one worker, so a module's fixtures are built once.
exec "$TEST_VENV/bin/python" -m pytest -q -p no:cacheprovider --numprocesses=auto --dist=loadfile $QUICK tests "$@"
