"""Built-in ops; importing this package registers them all."""

from actorflow.kernels.ops import (  # noqa: F401
    assign,
    elementwise,
    generators,
    linalg,
    model_io,
    parallel,
    shape,
    testing,
)
