"""Slow first imports made in the background, while runs wait on the model, instead of on a
session's critical path (before its first run or after its last).

One thread per process imports them, one after the other: two threads importing overlapping
packages at once could each hold a module lock the other waits for."""

from __future__ import annotations

import contextlib
import importlib
import os
import queue
import sys
import threading

IDLE_NICE = 19
_started: set[str] = set()
_lock = threading.Lock()
_queue: queue.SimpleQueue[str] = queue.SimpleQueue()
_thread: threading.Thread | None = None
_idle = False  # the thread's priority: see at_idle_priority


def import_soon(*modules: str) -> None:
    """Import `modules` in order in the background, each once per process; a later plain
    `import` of one waits for this one (the import lock) instead of starting over. A failure is
    left to that later import to raise where it is needed."""
    global _thread
    with _lock:
        for module in modules:
            if module not in _started and module not in sys.modules:
                _started.add(module)
                _queue.put(module)
        if _thread is None:
            _thread = threading.Thread(target=_work, name="scylla-imports", daemon=True)
            _thread.start()


def at_idle_priority() -> None:
    """From now on the imports run at idle priority (Linux), taking only the cores that other
    processes leave: for an xdist controller, whose workers run the agents. Not for a process
    that runs them itself: a thread starved while it holds the GIL would stall the run's own
    threads (bench/overhead.py seemed to show ~15 ms per run, within this machine's noise)."""
    global _idle
    with _lock:
        _idle = True
        if _thread is not None and _thread.native_id is not None:
            _lower(_thread.native_id)


def _lower(thread_id: int) -> None:
    if sys.platform == "linux":  # a thread id names just this thread there (elsewhere a pid)
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, thread_id, IDLE_NICE)


def _work() -> None:
    with _lock:
        if _idle:
            _lower(threading.get_native_id())
    while True:
        module = _queue.get()
        with contextlib.suppress(Exception):  # raised again by the import that needs it
            importlib.import_module(module)
