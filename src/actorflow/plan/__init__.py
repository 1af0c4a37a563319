"""The Plan: data model, files, validation, and a hand builder."""

from actorflow.plan.builder import PlanBuilder, Port
from actorflow.plan.io import load_plan, plan_from_bytes, plan_to_bytes, plan_to_json, save_plan
from actorflow.plan.model import (
    SCHEMA_VERSION,
    BlobDesc,
    BlobRef,
    ExecNode,
    JobInfo,
    KernelConf,
    MachineInfo,
    ParallelContext,
    Plan,
    RegstDesc,
    Task,
)

__all__ = [
    "SCHEMA_VERSION", "BlobDesc", "BlobRef", "ExecNode", "JobInfo", "KernelConf", "MachineInfo",
    "ParallelContext", "Plan", "PlanBuilder", "Port", "RegstDesc", "Task", "load_plan",
    "plan_from_bytes", "plan_to_bytes", "plan_to_json", "save_plan",
]
