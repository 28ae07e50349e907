"""ampsim: exact low-precision rounding, cast statistics, framework loss
scalers and run logs, from Python, over libampsim (ctypes; no compiled
extension).

Build the library with ``make`` in the source tree; the package finds
``build/libampsim.so`` next to itself, then an installed ``libampsim.so``, then
``$AMPSIM_LIB``.
"""
from ._lib import AmpsimError, library_path
from ._round import (Format, Stats, classes, decode, encode, formats, get_threads, round,
                     roundings, set_threads)
from ._analyze import analyze
from ._runlog import RunLog, read_run, roles
from ._scaler import FP8Scaler, LossScaler, ScalerStopped, scaler_help, scaler_kinds

__all__ = ["AmpsimError", "Format", "Stats", "classes", "decode", "encode", "formats",
           "get_threads", "library_path", "round", "roundings", "set_threads",
           "FP8Scaler", "LossScaler", "ScalerStopped", "scaler_help", "scaler_kinds",
           "RunLog", "read_run", "roles", "analyze"]
__version__ = "0.1.0"
