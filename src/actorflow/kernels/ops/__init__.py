"""Built-in ops; importing this package registers them all."""

from actorflow.kernels.ops import (  # noqa: F401
    elementwise,
    generators,
    linalg,
    parallel,
    shape,
    testing,
)
