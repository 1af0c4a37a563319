"""The model-IO jobs' kernels: every device saves / loads its own part of a variable.

``variable_save(ref, path)`` writes the part it reads (``ref``) to ``<path>/<attrs file>``
(a broadcast variable's duplicate parts are marked ``skip``: one device writes a region);
``variable_load(ref, path)`` reads its region ``begin..end`` from whichever saved parts
overlap it (re-sharding) into the part's shared state, like ``assign``.  ``path`` is the
checkpoint directory as ``uint8[PATH_BYTES]`` (``kernels.checkpoint.encode_path``), fed by
the session to the model-IO job; the session writes the manifest once every part is on disk.
"""

from __future__ import annotations

from actorflow.errors import OpError, UsageError
from actorflow.kernels.blob import BlobDesc
from actorflow.kernels.checkpoint import decode_path, read_region, write_part
from actorflow.kernels.ops.parallel import _variable_part_kernel
from actorflow.kernels.registry import Arrays, Attrs, Blobs, KernelContext, OpDef, register_op


def _save_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    return {"out": BlobDesc((1,), "int64")}


def _save_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    ref = ins["ref"]
    if not attrs.get("skip"):
        directory = decode_path(ins["path"])
        try:
            write_part(directory, attrs["file"], ref.get() if hasattr(ref, "get") else ref)
        except OSError as e:
            raise OpError(f"cannot write {directory}/{attrs['file']}: {e}") from e
    outs["out"][0] = 0 if attrs.get("skip") else ref.nbytes


def _load_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    ref = ins["ref"]
    return {"out": BlobDesc(tuple(ref.shape), ref.dtype)}


def _load_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    part = attrs["variable"]
    value = ctx.state.get("value")
    if value is None:
        _variable_part_kernel(ctx, {}, {"out": outs["out"]}, part)
        value = ctx.state["value"]
    try:
        region = read_region(decode_path(ins["path"]), attrs["name"], part["begin"],
                             part["end"], tuple(part["logical_shape"]), str(value.dtype))
    except UsageError as e:
        raise OpError(str(e)) from e
    value[...] = ctx.xp.asarray(region)
    outs["out"][...] = value


register_op(OpDef("variable_save", ("ref", "path"), _save_infer, _save_kernel,
                  doc="write this device's part of a variable under the checkpoint path"))
register_op(OpDef("variable_load", ("ref", "path"), _load_infer, _load_kernel,
                  doc="read this device's region of a variable from a checkpoint"))
