"""Built-in ops; importing this package registers them all."""

from actorflow.kernels.ops import elementwise, generators, linalg, shape, testing  # noqa: F401
