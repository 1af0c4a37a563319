"""``af.nn``: OneFlow's ``oneflow.nn`` namespace; ``af.nn.functional`` holds the functional
ops OneFlow keeps there (``F.relu``, ``F.softmax``, ...), straight from the registry."""

from actorflow.nn import functional

__all__ = ["functional"]
