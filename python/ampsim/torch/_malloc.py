"""Freed memory kept in the process while models are emulated (glibc).

An emulated step allocates and frees more large buffers than the plain one:
each step's weight copies, the roundings' outputs, their gradients. glibc
serves a large request with mmap, or grows the heap for it and returns the
top of the heap to the system when a free leaves more than a threshold
there; the next step then touches fresh pages again, and the kernel zeroes
each one. On a CNN with a few million weights that was thousands of page
faults and about a tenth of the emulated step in the kernel.

keep() sets glibc's thresholds once per process (mallopt): requests up to
MMAP_MAX bytes come from the heap, and up to TRIM bytes of free memory stay
at its top, so a step reuses the pages of the last. The process's resident
memory then stays near its peak. Nothing is set where the C library is not
glibc, where the environment already sets glibc's malloc tunables
(GLIBC_TUNABLES, MALLOC_TRIM_THRESHOLD_, MALLOC_MMAP_THRESHOLD_), or where
AMPSIM_MALLOC=system asks to leave them as they are."""
import ctypes
import os
import platform
import threading

#: mallopt's parameters (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
TRIM = 256 << 20
MMAP_MAX = 32 << 20

_lock = threading.Lock()
_done = False


def _wanted():
    env = os.environ
    if env.get("AMPSIM_MALLOC", "") == "system":
        return False
    if "glibc.malloc" in env.get("GLIBC_TUNABLES", "") or "MALLOC_TRIM_THRESHOLD_" in env \
            or "MALLOC_MMAP_THRESHOLD_" in env:
        return False
    return platform.libc_ver()[0] == "glibc"


def keep():
    """Set the thresholds (see the docstring); True when they were set by
    this call or an earlier one."""
    global _done
    with _lock:
        if _done or not _wanted():
            return _done
        try:
            mallopt = ctypes.CDLL(None).mallopt
        except (OSError, AttributeError):
            return False
        mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
        # (the mmap threshold first: setting either fixes both, no longer adjusted by glibc)
        _done = bool(mallopt(M_MMAP_THRESHOLD, MMAP_MAX)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM))
        return _done
