"""A .gltf's buffers and images read from the files beside it, as people save them (Blender's "glTF
Separate", pygltflib, three.js): relative URIs, percent-decoded as the glTF spec has them, that resolve
inside the .gltf's folder, each read as every input is (files.read_input: a regular file within the size
budget). Any other URI (an absolute path, file://, http(s)://, one whose `..` or symlink leaves the folder)
is refused in one line naming the file and the URI; data: URIs are decoded in place.

The buffers become one binary chunk (buffer 0) and each image a buffer view in it, so the document reads,
and is written, as a .glb: nothing the output carries points back at the user's folder.
"""
from __future__ import annotations

import os
TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

from ..errors import KimodoError
from ..files import MAX_INPUT_BYTES, read_input

MESHOPT = ("EXT_meshopt_compression", "KHR_meshopt_compression")
ALIGNMENT = 8  # bytes: each buffer and image starts here, as accessors of any component type need
IMAGE_TYPES = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"\xabKTX 20\xbb", "image/ktx2"))


def embed_resources(gltf: Dict[str, Any], folder: Optional[str], source: str) -> bytes:
    """The binary chunk of the .gltf `gltf` (whose structure check_structure has passed), read from `folder`
    (None: only data: URIs are read): its buffers laid end to end as buffer 0 and its images with a URI
    appended as buffer views. `gltf` is changed to match: views moved into buffer 0, images given a
    bufferView and mimeType instead of the URI; a buffer without a URI (a meshopt fallback) stays."""
    buffers = gltf.get("buffers") or []
    if not isinstance(buffers, list):
        raise KimodoError("{}: buffers is not a list of objects".format(source))
    reader = _Reader(folder, source)
    binary = bytearray()
    starts: Dict[int, int] = {}
    kept: List[Dict[str, Any]] = [{}]
    moved: Dict[int, int] = {}
    for i, buffer in enumerate(buffers):
        where = "buffers[{}]".format(i)
        if not isinstance(buffer, dict):
            raise KimodoError("{}: {} has no uri text".format(source, where))
        if "uri" not in buffer:
            moved[i] = len(kept)
            kept.append(buffer)
            continue
        data = reader.read(buffer["uri"], where)
        length = buffer.get("byteLength")
        if not isinstance(length, int) or isinstance(length, bool) or length < 0:
            raise KimodoError("{}: {}.byteLength is not a count ({!r})".format(source, where, length))
        if len(data) < length:
            raise KimodoError("{}: {} URI {!r} holds {} bytes, {} fewer than its byteLength".format(
                source, where, buffer["uri"], len(data), length - len(data)))
        starts[i] = _append(binary, data[:length])
    for view in gltf.get("bufferViews", []):
        buffer = view.get("buffer", 0)
        if buffer in starts:
            view["buffer"], view["byteOffset"] = 0, starts[buffer] + view.get("byteOffset", 0)
        else:
            view["buffer"] = moved.get(buffer, buffer)
        extensions = view.get("extensions")
        for name in MESHOPT if isinstance(extensions, dict) else ():
            stream = extensions.get(name)
            if isinstance(stream, dict) and stream.get("buffer", 0) in starts:
                offset = stream.get("byteOffset", 0)
                stream["byteOffset"] = starts[stream.get("buffer", 0)] + (offset if isinstance(offset, int) else 0)
                stream["buffer"] = 0
    views = gltf.setdefault("bufferViews", [])
    for i, image in enumerate(gltf.get("images", [])):
        uri = image.get("uri")
        if uri is None or (isinstance(uri, str) and uri.startswith("data:")):
            continue  # in the binary already, or embedded in the JSON
        data = reader.read(uri, "images[{}]".format(i))
        views.append({"buffer": 0, "byteOffset": _append(binary, data), "byteLength": len(data)})
        image.pop("uri")
        image["bufferView"] = len(views) - 1
        image.setdefault("mimeType", _image_type(data, uri))
    if not views:
        gltf.pop("bufferViews")
    kept[0] = {"byteLength": len(binary)}
    gltf["buffers"] = kept
    return bytes(binary)


def _append(binary: bytearray, data: bytes) -> int:
    while len(binary) % ALIGNMENT:
        binary.append(0)
    start = len(binary)
    binary += data
    return start


def _image_type(data: bytes, uri: str) -> str:
    """A buffer-view image must state its type: from its first bytes, else its name's extension."""
    for magic, kind in IMAGE_TYPES:
        if data.startswith(magic):
            return kind
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    extension = uri.rsplit(".", 1)[-1].lower()
    return {"jpg": "image/jpeg", "jpeg": "image/jpeg", "webp": "image/webp", "ktx2": "image/ktx2"}.get(extension, "image/png")


class _Reader:
    """Reads URIs of one .gltf, within MAX_INPUT_BYTES for all of them together."""

    def __init__(self, folder: Optional[str], source: str) -> None:
        self.folder = folder
        self.source = source
        self.left = MAX_INPUT_BYTES

    def read(self, uri: Any, where: str) -> bytes:
        if not isinstance(uri, str):
            raise KimodoError("{}: {} has no uri text".format(self.source, where))
        if uri.startswith("data:"):
            data = _data_uri(uri, self.source)
        else:
            data = read_input(self._path(uri, where), "{}: {} URI {!r}".format(self.source, where, uri))
        self.left -= len(data)
        if self.left < 0:
            raise KimodoError("{}: its buffers and images together pass {} bytes ({} URI {!r})".format(
                self.source, MAX_INPUT_BYTES, where, uri))
        return data

    def _path(self, uri: str, where: str) -> str:
        """The file a relative URI names inside the .gltf's folder; KimodoError for any other URI."""
        import re
        from urllib.parse import unquote

        refused = "{}: {} URI {!r} ".format(self.source, where, uri)
        scheme = re.match(r"([A-Za-z][A-Za-z0-9+.\-]*):", uri)
        if scheme:
            raise KimodoError(refused + "is a {}: address; only files in the .gltf's folder are read".format(scheme.group(1)))
        path = unquote(uri)
        if path.startswith(("/", "\\")) or os.path.isabs(path):
            raise KimodoError(refused + "is an absolute path; only files in the .gltf's folder are read")
        if "\x00" in path or not path:
            raise KimodoError(refused + "is not a file name")
        if self.folder is None:
            raise KimodoError(refused + "names a file beside the .gltf, which is read only from its own file")
        base = os.path.realpath(self.folder)
        full = os.path.realpath(os.path.join(base, path))
        if os.path.commonpath([base, full]) != base:
            raise KimodoError(refused + "leaves the .gltf's folder; only files inside it are read")
        return full


def _data_uri(uri: str, source: str) -> bytes:
    import base64

    if "," not in uri:
        raise KimodoError("{}: a data: URI with no data".format(source))
    try:
        return base64.b64decode(uri.split(",", 1)[1])
    except ValueError as error:  # binascii.Error
        raise KimodoError("{}: the embedded buffer is not valid base64 ({})".format(source, error)) from error
