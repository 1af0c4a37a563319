"""``af.optim``: SGD, Adam, AdamW and learning-rate schedulers, PyTorch's and OneFlow's
names and update rules; the same ``step()`` updates eager parameters or emits a job's
assigns (``optimizer.py``)."""

from actorflow.optim import lr_scheduler
from actorflow.optim.adam import Adam, AdamW
from actorflow.optim.optimizer import Optimizer
from actorflow.optim.sgd import SGD

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "lr_scheduler"]
