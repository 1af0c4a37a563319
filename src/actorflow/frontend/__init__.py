"""actorflow.frontend (see DESIGN.md)."""
