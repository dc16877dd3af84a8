"""Finding and loading libcudadent, and calling it with errors turned into exceptions.

Where the library is looked for, in order:
  1. $CUDADENT_LIBRARY: a path to the shared library (or a folder holding libcudadent.so);
  2. beside this package (where `pip install .` puts it: cudadent/libcudadent.so);
  3. when the package is imported from a source checkout (repo/python/cudadent), the CMake build
     folders of that checkout: build-py/, build/, then any other build*/ (newest first);
  4. the system's search path (ctypes.util.find_library("cudadent")).
The library is loaded on first use, not at import, so that `import cudadent` works (and its
Python-side checks and fake-tensor rules run) on a machine with neither the library nor a GPU.
"""
import ctypes
import ctypes.util
import glob
import os
import threading

from . import _abi
from .errors import AbiMismatchError, LibraryNotFoundError, error_for_status

_lock = threading.Lock()
_lib = None
_lib_path = None

_NAMES = ("libcudadent.so", "libcudadent.so.0", "libcudadent.dylib", "cudadent.dll")


def _in_folder(folder):
    for name in _NAMES:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path
    found = sorted(glob.glob(os.path.join(folder, "libcudadent.so.*")))
    return found[0] if found else None


def candidate_paths():
    """The paths tried, in order (see the module docstring)."""
    paths = []
    env = os.environ.get("CUDADENT_LIBRARY")
    if env:
        paths.append(_in_folder(env) if os.path.isdir(env) else env)
        return [p for p in paths if p]  # an explicit choice is not second-guessed
    here = os.path.dirname(os.path.abspath(__file__))
    p = _in_folder(here)
    if p:
        paths.append(p)
    root = os.path.dirname(os.path.dirname(here))
    if os.path.basename(os.path.dirname(here)) == "python" and \
            os.path.isfile(os.path.join(root, "include", "cudadent.h")):
        folders = [os.path.join(root, "build-py"), os.path.join(root, "build")]
        others = [d for d in glob.glob(os.path.join(root, "build*")) if d not in folders]
        others.sort(key=lambda d: -os.path.getmtime(d))
        for folder in folders + others:
            for sub in [folder] + sorted(glob.glob(os.path.join(folder, "*"))):
                if os.path.isdir(sub):
                    p = _in_folder(sub)
                    if p and p not in paths:
                        paths.append(p)
    p = ctypes.util.find_library("cudadent")
    if p:
        paths.append(p)
    return paths


def _probe_struct_sizes(lib):
    """Ask the library whether it reads our params structs (cudadent.h, "struct_size"): it reads
    its own and older layouts, and larger ones whose extra bytes are zero, so it refuses ours
    only when ours is smaller than its own and no layout it ever had."""
    for query, struct in ((lib.cudadent_attn_fwd_workspace_size, _abi.AttnFwdParams),
                          (lib.cudadent_attn_bwd_workspace_size, _abi.AttnBwdParams)):
        params = struct()
        params.struct_size = ctypes.sizeof(struct)
        nbytes = ctypes.c_size_t(0)
        status = query(ctypes.byref(params), ctypes.byref(nbytes))
        if status == _abi.Status.BAD_STRUCT_SIZE:
            raise AbiMismatchError(
                f"the library at {_lib_path} does not read {struct.__name__} of "
                f"{ctypes.sizeof(struct)} bytes: {lib.cudadent_get_last_error_message().decode()}",
                _abi.Status.BAD_STRUCT_SIZE)


def load():
    """The loaded CDLL (loaded and checked once)."""
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        lib = None
        for path in candidate_paths():
            try:
                lib = ctypes.CDLL(path)
                _lib_path = path
                break
            except OSError as e:
                tried.append(f"{path}: {e}")
        if lib is None:
            where = "; ".join(tried) if tried else "no candidate found"
            raise LibraryNotFoundError(
                "libcudadent not found (" + where + "). Install the package with `pip install .` "
                "at the repository root, or build it with CMake and set CUDADENT_LIBRARY to the "
                "path of libcudadent.so")
        _abi.declare_prototypes(lib)
        version = lib.cudadent_get_version()
        if version // 10000 != _abi.HEADER_VERSION // 10000 or \
                (version // 10000 == 0 and version // 100 != _abi.HEADER_VERSION // 100):
            raise AbiMismatchError(
                f"the library at {path} is version {version // 10000}.{version // 100 % 100}."
                f"{version % 100}; this package was written for "
                f"{_abi.HEADER_VERSION // 10000}.{_abi.HEADER_VERSION // 100 % 100}.x")
        _probe_struct_sizes(lib)
        _lib = lib
        return _lib


def library_path():
    """Path of the loaded library (loading it if needed)."""
    load()
    return _lib_path


def library_version():
    """The loaded library's version as a string, e.g. '0.1.0'."""
    v = load().cudadent_get_version()
    return f"{v // 10000}.{v // 100 % 100}.{v % 100}"


def check(status, function):
    """Raise the exception of a non-success status, with the library's detailed message."""
    if status != 0:
        lib = load()
        message = lib.cudadent_get_last_error_message()
        message = message.decode(errors="replace") if message else ""
        if not message:
            s = lib.cudadent_get_error_string(status)
            message = s.decode(errors="replace") if s else ""
        raise error_for_status(status, message, function)


def supported_head_dims(direction="fwd", dtype=_abi.DType.BF16, compute_capability=0):
    """The head dims libcudadent runs for direction ("fwd" or "bwd") and dtype (a DType, or
    "fp16" / "bf16"), ascending, with head_dim_v equal to head_dim and no optional feature:
    cudadent_attn_{fwd,bwd}_supported_head_dims of cudadent.h. compute_capability: e.g. 90 (no
    device needed), 0 the current device."""
    if direction not in ("fwd", "bwd"):
        raise ValueError(f"direction = {direction!r}; expected 'fwd' or 'bwd'")
    if isinstance(dtype, str):
        dtype = {"fp16": _abi.DType.FP16, "float16": _abi.DType.FP16, "bf16": _abi.DType.BF16,
                 "bfloat16": _abi.DType.BF16}[dtype]
    lib = load()
    name = f"cudadent_attn_{direction}_supported_head_dims"
    fn = getattr(lib, name, None)
    if fn is None:
        raise NotImplementedError(f"the library at {_lib_path} predates {name} (params layout v2)")
    count = ctypes.c_int(0)
    check(fn(int(dtype), int(compute_capability), None, 0, ctypes.byref(count)), name)
    dims = (ctypes.c_int * max(count.value, 1))()
    check(fn(int(dtype), int(compute_capability), dims, count.value, ctypes.byref(count)), name)
    return tuple(dims[:count.value])
