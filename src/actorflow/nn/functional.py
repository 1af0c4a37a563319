"""``nn.functional``: the functional ops (``actorflow.functional``) plus the losses."""

from actorflow.frontend.functional_nn import *  # noqa: F403
from actorflow.frontend.functional_nn import __all__ as _ALL
from actorflow.nn.loss import mse_loss

__all__ = [*_ALL, "mse_loss"]
