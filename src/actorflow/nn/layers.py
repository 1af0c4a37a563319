"""The layers: Linear, Embedding, LayerNorm, Dropout, activations, containers.

Names, arguments and parameter layouts are PyTorch's and OneFlow's (``Linear.weight`` is
``(out_features, in_features)``; default initializations drawn the same way), so a model
definition ports unchanged.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

from actorflow.frontend import functional_nn as F
from actorflow.nn import init
from actorflow.nn.module import Module


class Identity(Module):
    def forward(self, x: Any) -> Any:
        return x


class Linear(Module):
    """``y = x @ weight^T + bias``; weight ``(out, in)``, both drawn from U(-1/sqrt(in), ...)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 dtype: str = "float32") -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        b = init.kaiming_uniform_bound(in_features)
        self.weight = init.uniform((out_features, in_features), -b, b, dtype)
        self.bias = init.uniform((out_features,), -b, b, dtype) if bias else None

    def forward(self, x: Any) -> Any:
        y = F.matmul(x, self.weight, transpose_b=True)
        bias = self.bias
        return y if bias is None else F.bias_add(y, bias, -1)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self._parameters.get('bias') is not None}")


class Embedding(Module):
    """Rows of ``weight`` (``(num_embeddings, embedding_dim)``, N(0, 1)) by integer ids."""

    def __init__(self, num_embeddings: int, embedding_dim: int, dtype: str = "float32") -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.weight = init.normal((num_embeddings, embedding_dim), 0.0, 1.0, dtype)

    def forward(self, ids: Any) -> Any:
        return F.embedding(ids, self.weight)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"


class LayerNorm(Module):
    def __init__(self, normalized_shape: int | tuple[int, ...], eps: float = 1e-5,
                 elementwise_affine: bool = True, dtype: str = "float32") -> None:
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(
            normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        if elementwise_affine:
            self.weight = init.constant(shape, 1.0, dtype)
            self.bias = init.constant(shape, 0.0, dtype)
        else:
            self.weight = self.bias = None

    def forward(self, x: Any) -> Any:
        return F.layer_norm(x, list(self.normalized_shape), self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"


class Dropout(Module):
    """Zeroes elements with probability ``p`` in training mode (a new mask every call; every
    piece in a job); the identity in eval mode."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: Any) -> Any:
        return F.dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


def _activation(name: str, fn: Any, doc: str) -> type[Module]:
    def forward(self: Module, x: Any) -> Any:
        return fn(x)
    return type(name, (Module,), {"forward": forward, "__doc__": doc})


ReLU = _activation("ReLU", F.relu, "max(x, 0)")
SiLU = _activation("SiLU", F.silu, "x * sigmoid(x)")
Sigmoid = _activation("Sigmoid", F.sigmoid, "1 / (1 + e^-x)")
Tanh = _activation("Tanh", F.tanh, "tanh(x)")


class GELU(Module):
    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, x: Any) -> Any:
        return F.gelu(x, approximate=self.approximate)


class Softmax(Module):
    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: Any) -> Any:
        return F.softmax(x, self.dim)


# -- containers -------------------------------------------------------------------------------
class Sequential(Module):
    """Modules called in order; ``Sequential(OrderedDict(name=module))`` names them."""

    def __init__(self, *modules: Any) -> None:
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)

    def forward(self, x: Any) -> Any:
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, i: int) -> Module:
        return list(self._modules.values())[i]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())


class ModuleList(Module):
    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        for m in modules or ():
            self.append(m)

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def __getitem__(self, i: int) -> Module:
        return list(self._modules.values())[i]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())


class ModuleDict(Module):
    def __init__(self, modules: dict[str, Module] | None = None) -> None:
        super().__init__()
        for k, m in (modules or {}).items():
            self.add_module(k, m)

    def __getitem__(self, k: str) -> Module:
        return self._modules[k]

    def __setitem__(self, k: str, m: Module) -> None:
        self.add_module(k, m)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def keys(self) -> Any:
        return self._modules.keys()

    def items(self) -> Any:
        return self._modules.items()

    def values(self) -> Any:
        return self._modules.values()


__all__ = ["GELU", "Dropout", "Embedding", "Identity", "LayerNorm", "Linear", "ModuleDict",
           "ModuleList", "ReLU", "Sequential", "SiLU", "Sigmoid", "Softmax", "Tanh"]
