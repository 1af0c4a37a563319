"""Actors: the pure protocol state machines, their kinds, and the runtime that hosts them."""
