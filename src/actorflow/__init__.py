"""actorflow: a Python re-creation of OneFlow's actor runtime.

A Plan (what to run) is plain data; a Session runs it on actors in this process;
``flowlaunch`` runs it over processes and machines.
"""

from actorflow import errors
from actorflow.frontend import functional, sbp
from actorflow.frontend.job import (
    Job,
    compile,
    input,
    job,
    output,
    random_input,
    variable,
)
from actorflow.frontend.placement import placement
from actorflow.frontend.variables import read_variable
from actorflow.plan import Plan, PlanBuilder, load_plan, save_plan
from actorflow.session import ClusterSession, Session
from actorflow.spmd import env

__version__ = "0.1.0"

__all__ = ["ClusterSession", "Job", "Plan", "PlanBuilder", "Session", "__version__",
           "compile", "env", "errors", "functional", "input", "job", "load_plan", "output",
           "placement", "random_input", "read_variable", "save_plan", "sbp", "variable"]
