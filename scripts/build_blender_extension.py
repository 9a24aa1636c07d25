"""Build the Blender extension: python3 scripts/build_blender_extension.py OUT.zip

The zip holds blender_extension/ (blender_manifest.toml, the add-on's modules) at its top and a copy of
kimodo_rig/ inside it, taken from this checkout at build time (the repository keeps one kimodo_rig).
Install it in Blender 4.2 or later with Edit > Preferences > Get Extensions > Install from Disk.
The zip's entries are sorted and dated 1980-01-01, so the same checkout builds the same bytes.
"""
import io
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kimodo_rig.errors import KimodoError  # noqa: E402
from kimodo_rig.files import write_bytes_atomic  # noqa: E402

SKIPPED_PARTS = {"__pycache__"}
SKIPPED_SUFFIXES = {".pyc", ".pyo"}


def _files(folder: Path):
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not SKIPPED_PARTS & set(path.parts) and path.suffix not in SKIPPED_SUFFIXES:
            yield path


def build() -> bytes:
    entries = [(path.relative_to(ROOT / "blender_extension").as_posix(), path) for path in _files(ROOT / "blender_extension")]
    entries += [(path.relative_to(ROOT).as_posix(), path) for path in _files(ROOT / "kimodo_rig")]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, path in sorted(entries):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, path.read_bytes())
    return buffer.getvalue()


def main(argv) -> int:
    if len(argv) != 1 or not argv[0].endswith(".zip"):
        print("usage: python3 scripts/build_blender_extension.py OUT.zip", file=sys.stderr)
        return 2
    try:
        write_bytes_atomic(argv[0], build())
    except (KimodoError, OSError) as error:
        print("{}: {}".format(argv[0], error), file=sys.stderr)
        return 1
    print("wrote {}".format(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
