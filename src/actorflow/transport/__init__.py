"""actorflow.transport (see DESIGN.md)."""
