"""actorflow.launcher (see DESIGN.md)."""
