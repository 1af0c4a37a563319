"""actorflow.trace (see DESIGN.md)."""
