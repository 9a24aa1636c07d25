"""Draco-compressed meshes (KHR_draco_mesh_compression), decoded by DracoPy, a binding of Google's decoder,
when the optional extra is installed (`pip install "kimodo-rig[draco]"`). The runtime stays the standard
library: DracoPy is imported only inside these functions, and without it `available()` is False and the
callers stand the feet on their joints and say so."""
from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    from typing import Any, List, Optional, Tuple

EXTENSION = "KHR_draco_mesh_compression"
INSTALL_HINT = 'pip install "kimodo-rig[draco]"'


class DracoError(Exception):
    """A Draco stream the decoder refuses, or whose contents do not match the accessors."""


def available() -> bool:
    """DracoPy can be imported."""
    try:
        import DracoPy  # noqa: F401
    except ImportError:
        return False
    return True


def decode(stream: bytes) -> Any:
    """The decoded mesh of one Draco stream (a DracoPy mesh)."""
    import DracoPy

    try:
        return DracoPy.decode(bytes(stream))
    except Exception as error:  # DracoPy raises its own types (and ValueError) for a broken stream
        raise DracoError("the decoder refused it ({})".format(error)) from error


def attribute(mesh: Any, unique_id: Optional[int], count: int) -> List[Tuple[float, ...]]:
    """The items of the attribute `unique_id` of a decoded mesh (None: the triangle indices, one per item),
    `count` of them as the accessor declares."""
    if unique_id is None:
        items = [(int(i),) for i in mesh.faces.reshape(-1).tolist()]
    else:
        found = mesh.get_attribute_by_unique_id(unique_id)
        if found is None:
            raise DracoError("it has no attribute {}".format(unique_id))
        data = found["data"]
        items = [tuple(row) for row in (data.reshape(len(data), -1).tolist())]
    if len(items) != count:
        raise DracoError("it holds {} items where the accessor declares {}".format(len(items), count))
    return items


def undecodable(primitive: Any) -> bool:
    """A mesh primitive whose vertices are in a Draco stream and DracoPy is not installed: its accessors
    hold no data of their own (they read as zeros), so it carries no sole."""
    extensions = primitive.get("extensions") if isinstance(primitive, dict) else None
    return isinstance(extensions, dict) and EXTENSION in extensions and not available()
