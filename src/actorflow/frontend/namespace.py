"""OneFlow's names for actorflow's functional ops, made from the functional op registry.

``import actorflow as flow`` must read like ``import oneflow as flow``: every functional
op is ``flow.<op>`` and, where OneFlow's ``Tensor`` has a method of that name,
``tensor.<op>(...)`` too.  Both come from one place, the op's declaration
(``functional.define``): the top-level name is the op's name (plus OneFlow's aliases
below), and the method is made when the name is one of OneFlow 0.9.0's tensor methods
(``ONEFLOW_TENSOR_METHODS``, read from ``dir(oneflow.Tensor)``) or the declaration says
``method=True``.  An op added later by any module that ``frontend/functional.py``
imports appears in both places with no other edit (``docs/oneflow.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# dir(oneflow.Tensor) of OneFlow 0.9.0, public names
ONEFLOW_TENSOR_METHODS = frozenset("""
    T abs acos acosh add add_ addcdiv addcdiv_ addcmul addcmul_ addmm all allclose amax amin any
    arccos arccosh arcsin arcsinh arctan arctanh argmax argmin argsort argwhere as_strided asin
    asinh atan atan2 atanh backward bernoulli bernoulli_ bfloat16 bincount bmm bool broadcast_to
    byte cast ceil check_meta_consistency chunk clamp clamp_ clamp_max clamp_max_ clamp_min
    clamp_min_ clip clip_ clone contiguous contiguous_ copy_ cos cosh cpu cross cuda cumprod
    cumsum data detach device diag diagonal dim div div_ dot double dtype element_size eq equal
    erf erfc erfinv erfinv_ exp expand expand_as expm1 exponential_ fill_ flatten flip float floor
    floor_ floor_divide fmod gather ge gelu get_device global_id global_to_global grad grad_fn gt
    half in_top_k index_add index_add_ index_select int inverse is_consistent is_contiguous
    is_cuda is_eager is_floating_point is_global is_lazy is_leaf is_local is_pinned isclose isinf
    isnan item kaiming_normal_ kaiming_uniform_ le local_to_global log log10 log1p log2
    log_softmax logaddexp logical_and logical_not logical_or logical_xor logsumexp long lt
    masked_fill masked_fill_ masked_select matmul max maximum mean median min minimum mish mm mul
    mul_ mv nansum narrow ndim ndimension ne neg negative nelement new_empty new_full new_ones
    new_tensor new_zeros nms nonzero norm normal_ numel numpy orthogonal_ permute pin_memory
    placement pow prod reciprocal register_hook relu relu_ repeat repeat_interleave requires_grad
    requires_grad_ reshape reshape_as retain_grad roll round rsqrt sbp scatter scatter_
    scatter_add scatter_add_ selu shape sigmoid sign silu sin sin_ sinh size softmax softplus
    softsign sort split sqrt square squeeze std storage_offset stride sub sub_ sum swapaxes
    swapdims t tan tanh tile to to_consistent to_global to_local to_numpy tolist topk transpose
    tril triu triu_ trunc trunc_normal_ type type_as unbind unfold uniform_ unique unsqueeze var
    view view_as where xavier_normal_ xavier_uniform_ zero_
""".split())

# dir(oneflow.nn.functional) of OneFlow 0.9.0: the functional ops that ``af.nn.functional``
# shows (those actorflow has)
ONEFLOW_NN_FUNCTIONAL = frozenset("""
    adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d
    adaptive_max_pool2d adaptive_max_pool3d affine_grid avg_pool1d avg_pool2d avg_pool3d
    batch_norm binary_cross_entropy binary_cross_entropy_with_logits celu conv1d conv2d conv3d
    conv_transpose1d conv_transpose2d conv_transpose3d cosine_similarity cross_entropy
    ctc_greedy_decoder deform_conv2d dropout dropout1d dropout2d dropout3d elu embedding fold
    gelu glu grid_sample gumbel_softmax hardshrink hardsigmoid hardswish hardtanh interpolate
    kl_div l1_loss layer_norm leaky_relu linear log_softmax logsigmoid max_pool1d max_pool2d
    max_pool3d mish mse_loss normalize one_hot pad pairwise_distance prelu quick_gelu relu relu6
    selu sigmoid silu smooth_l1_loss softmax softplus softshrink softsign
    sparse_softmax_cross_entropy tanh threshold triplet_margin_loss unfold upsample
""".split())

# OneFlow's other names for actorflow's ops: alias -> functional op name
ALIASES: dict[str, str] = {
    "cat": "concat",
    "negative": "neg",
}

# attributes of the tensor classes' data side (eager/tensor.py, eager/global_tensor.py) and
# of TensorMethods that an op of the same name must not replace
RESERVED = frozenset({"numpy", "to", "cpu", "cuda", "item", "shape", "dtype", "device",
                      "ndim", "placement", "sbp", "to_local", "to_global", "tolist"})

_METHOD_OWNER: list[type] = []  # the class tensor methods are attached to (TensorMethods)
_PENDING: list[tuple[str, Callable[..., Any], bool | None]] = []  # declared before it existed


def set_method_owner(cls: type) -> None:
    """``tensor.py`` names TensorMethods once it exists (functional ops are declared before
    it: the tensor module imports functional); ops declared so far get their methods now."""
    _METHOD_OWNER[:] = [cls]
    pending, _PENDING[:] = list(_PENDING), []
    for name, op, method in pending:
        attach_method(name, op, method)


def wants_method(name: str, method: bool | None) -> bool:
    """Whether the op ``name`` becomes a tensor method (``method`` overrides the list)."""
    if method is not None:
        return method
    return name in ONEFLOW_TENSOR_METHODS


def attach_method(name: str, op: Callable[..., Any], method: bool | None = None) -> None:
    """Make ``tensor.<name>(*args)`` call ``op(tensor, *args)`` unless the tensor class
    defines ``name`` itself (operators and hand-written methods win)."""
    if not wants_method(name, method) or name in RESERVED:
        return
    if not _METHOD_OWNER:
        _PENDING.append((name, op, method))
        return
    owner = _METHOD_OWNER[0]
    have = getattr(owner, name, None)
    if have is not None and not getattr(have, "_from_op", False):
        return  # written by hand on the tensor classes (varargs like permute(*dims))

    def bound(self: Any, *args: Any, **kwargs: Any) -> Any:
        return op(self, *args, **kwargs)

    bound.__name__ = bound.__qualname__ = name
    bound.__doc__ = op.__doc__
    bound._from_op = True  # type: ignore[attr-defined]
    setattr(owner, name, bound)
    for alias, target in ALIASES.items():
        if target == name and wants_method(alias, method) and not hasattr(owner, alias):
            setattr(owner, alias, bound)


__all__ = ["ALIASES", "ONEFLOW_NN_FUNCTIONAL", "ONEFLOW_TENSOR_METHODS", "RESERVED",
           "attach_method", "set_method_owner", "wants_method"]
