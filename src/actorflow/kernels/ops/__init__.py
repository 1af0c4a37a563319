"""Built-in ops; importing this package registers them all."""

from actorflow.kernels.ops import (  # noqa: F401
    activation,
    assign,
    batched,
    compare,
    elementwise,
    generators,
    index,
    linalg,
    lr_schedule,
    microbatch,
    model_io,
    nn_ops,
    parallel,
    reduce,
    shape,
    testing,
)
