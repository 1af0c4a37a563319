"""actorflow.collective: process groups and collectives over the transport (seed 003).

- ``group``: ``ProcessGroup`` with all_reduce, all_gather, reduce_scatter, all_to_all,
  broadcast, barrier; subgroups on the same mesh.
- ``ring`` / ``direct``: the algorithms (chunked pipelined ring for large tensors, one-step
  direct exchange for small ones).
- ``channel``: tagged, bounded receives that name a dead or departed rank.
- ``world``: the world group, set up on first use through an injected rendezvous.
- ``consistency``: the check that every rank means the same global tensor.
"""

from actorflow.collective.consistency import check_consistent
from actorflow.collective.group import ProcessGroup
from actorflow.collective.world import (
    WorldInfo,
    destroy,
    init_process_group,
    is_initialized,
    set_rendezvous_factory,
    world,
)

__all__ = ["ProcessGroup", "WorldInfo", "check_consistent", "destroy", "init_process_group",
           "is_initialized", "set_rendezvous_factory", "world"]
