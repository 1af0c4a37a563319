"""``import actorflow.functional as F``: the functional ops of ``actorflow.frontend``."""

from actorflow.frontend.functional_nn import *  # noqa: F403
from actorflow.frontend.functional_nn import __all__  # noqa: F401
