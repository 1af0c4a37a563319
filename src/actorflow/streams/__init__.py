"""Streams: where kernels run and when their work counts as done.

Shared by ``actors`` (units launch acts on a stream) and ``eager`` (the VM's stream
workers).  ``stream.py`` holds the interface and the registry by device type; ``cuda.py``
the CuPy stream (imported lazily, only for ``cuda:i`` memory cases).
"""
