"""actorflow: a Python re-creation of OneFlow's actor runtime.

A Plan (what to run) is plain data; a Session runs it on actors in this process;
``flowlaunch`` runs it over processes and machines.
"""

from actorflow import errors
from actorflow.plan import Plan, PlanBuilder, load_plan, save_plan
from actorflow.session import Session

__version__ = "0.1.0"

__all__ = ["Plan", "PlanBuilder", "Session", "__version__", "errors", "load_plan", "save_plan"]
