"""The frontend: tensors, functional ops with signature dispatch, placement, SBP, jobs."""

from actorflow.frontend import functional, sbp
from actorflow.frontend.job import (
    Job,
    compile,
    current_job,
    input,
    job,
    output,
    random_input,
    variable,
)
from actorflow.frontend.placement import Placement, placement
from actorflow.frontend.tensor import Tensor
from actorflow.frontend.variables import read_variable

__all__ = ["Job", "Placement", "Tensor", "compile", "current_job", "functional", "input", "job",
           "output", "placement", "random_input", "read_variable", "sbp", "variable"]
