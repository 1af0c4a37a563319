"""``af.nn``: modules with PyTorch's and OneFlow's names and parameter layouts.

Parameters are eager tensors outside a job and the job's variables inside one (same names
in every job, so a train and an eval job share them); ``Module.to_global(placement, sbp)``
annotates them, which makes one model data-, model- or pipeline-parallel.
"""

from actorflow.nn import functional, init, utils
from actorflow.nn.layers import (
    GELU,
    Dropout,
    Embedding,
    Identity,
    LayerNorm,
    Linear,
    ModuleDict,
    ModuleList,
    ReLU,
    Sequential,
    Sigmoid,
    SiLU,
    Softmax,
    Tanh,
)
from actorflow.nn.loss import CrossEntropyLoss, MSELoss
from actorflow.nn.module import Module
from actorflow.nn.parameter import Parameter

__all__ = ["GELU", "CrossEntropyLoss", "Dropout", "Embedding", "Identity", "LayerNorm",
           "Linear", "MSELoss", "Module", "ModuleDict", "ModuleList", "Parameter", "ReLU",
           "Sequential", "SiLU", "Sigmoid", "Softmax", "Tanh", "functional", "init",
           "utils"]
