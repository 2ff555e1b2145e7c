"""Running a check in a child process forked from the test (``os.fork``): what the child's
copy of the parent's state (thread pools, helper threads) does, with a deadline so a hung child
fails the test instead of hanging the suite."""

from __future__ import annotations

import os
import select
import signal
import time
from collections.abc import Callable

import pytest


def check_in_forked_child(check: Callable[[], bool], what: str, deadline_s: float = 60.0) -> None:
    """Fork, run ``check()`` in the child, and fail the test if it returned False, raised, or
    had not finished after ``deadline_s`` (then the child is killed). ``what`` names the
    child's work in the failure message."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            status = 0 if check() else 2
        finally:
            os.write(write, bytes([status]))
            os._exit(0)
    os.close(write)
    deadline = time.monotonic() + deadline_s
    while not select.select([read], [], [], 1.0)[0]:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read)
            pytest.fail(f"the forked child's {what} did not finish within {deadline_s:g} s")
    status = os.read(read, 1)
    os.close(read)
    os.waitpid(pid, 0)
    outcome = {b"\x00": "passed", b"\x01": "raised", b"\x02": "returned a wrong result"}
    assert status == b"\x00", f"the forked child's {what} {outcome.get(status, 'died')}"
