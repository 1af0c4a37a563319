"""One registry class for every pluggable piece: kinds, executors, streams, schemes, ops.

Adding a piece is one registration; registering a name twice is a ``RegistryError`` (a
silent overwrite would make the last import win), and looking up an unknown name is a
``RegistryError`` that lists the known names.  Like ``errors``, this module imports
nothing of actorflow but ``errors``, so every package may use it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from actorflow.errors import RegistryError

T = TypeVar("T")


class Registry(Generic[T]):
    """Named entries of one kind; ``what`` names the kind in errors ("task type", ...)."""

    def __init__(self, what: str, loader: Callable[[], None] | None = None,
                 error: type[RegistryError] = RegistryError) -> None:
        """``error``: the RegistryError subclass raised, when a package's callers already
        catch a more specific error too (unknown op types are also ``OpError``s)."""
        self.what = what
        self._entries: dict[str, T] = {}
        self._loader = loader  # imports the built-in entries on first lookup
        self._loaded = loader is None
        self._lock = threading.RLock()  # first lookups from several threads wait for the load
        self._error = error

    def register(self, name: str, entry: T) -> T:
        if name in self._entries:
            raise self._error(f"{self.what} '{name}' is registered twice")
        self._entries[name] = entry
        return entry

    def get(self, name: str) -> T:
        self._load()
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "(none)"
            raise self._error(f"unknown {self.what} '{name}'; known: {known}") from None

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries

    def names(self) -> list[str]:
        self._load()
        return sorted(self._entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def _load(self) -> None:
        if self._loaded:
            return
        with self._lock:
            if self._loader is None:  # loaded meanwhile, or this thread is loading (re-entry)
                return
            loader, self._loader = self._loader, None
            try:
                loader()
            finally:
                self._loaded = True
