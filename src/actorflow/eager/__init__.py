"""Eager execution through a virtual machine of instructions and streams (seed 000).

    functional op -> op expression -> interpreter (``interpreter.py``) -> instructions
    (``builder.py``) -> VM (``vm.py``): scheduler (``scheduler.py``, dependencies in
    ``deps.py``) -> one worker per stream (``worker.py``) -> the op kernel

``env.py`` holds the process-wide environment (created on first use, torn down at exit);
``instruction.py`` the registries of stream types and instruction types (built-ins in
``instruction_types.py``); ``tensor.py`` the data side of eager tensors; ``tracing.py``
records instructions in the actors' trace format.
"""

from actorflow.eager.device import Device, as_device
from actorflow.eager.env import get_env, get_vm, shutdown
from actorflow.eager.instruction import (
    INSTRUCTION_TYPES,
    STREAM_TYPES,
    InstructionType,
    StreamType,
    register_instruction_type,
    register_stream_type,
)
from actorflow.eager.scheduler import SCHEDULERS

__all__ = ["INSTRUCTION_TYPES", "SCHEDULERS", "STREAM_TYPES", "Device", "InstructionType",
           "StreamType", "as_device", "get_env", "get_vm", "register_instruction_type",
           "register_stream_type", "shutdown"]
