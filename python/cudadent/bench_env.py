"""The environment of a python -m cudadent.bench run (bench.py), saved with its report: date, GPU,
driver and clocks, torch / CUDA / cuDNN / Python versions, the checkout's commit, the command and
the cudadent library loaded; and the checkout's root (_repo_root)."""
import datetime
import os
import platform
import subprocess
import sys


def _run(cmd, cwd=None):
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=20)
        return r.stdout.strip() if r.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def _repo_root():
    for start in (os.getcwd(), os.path.dirname(os.path.abspath(__file__))):
        d = start
        while True:
            if os.path.isfile(os.path.join(d, "include", "cudadent.h")):
                return d
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
    return None


def _git_commit():
    env = os.environ.get("CUDADENT_GIT_COMMIT")
    if env:
        return env
    root = _repo_root()
    if root is None:
        return "unknown"
    head = _run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root)
    if head is None:
        return "unknown (no git)"
    dirty = _run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root)
    return head + ("+dirty" if dirty else "")


def environment():
    import torch
    env = {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "gpu": torch.cuda.get_device_name(),
        "sms": torch.cuda.get_device_properties(0).multi_processor_count,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "python": platform.python_version(),
        "commit": _git_commit(),
        "command": "python -m cudadent.bench " + " ".join(sys.argv[1:]),
    }
    smi = _run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,power.limit",
                "--format=csv,noheader"])
    if smi:
        parts = [p.strip() for p in smi.splitlines()[0].split(",")]
        env["driver"] = parts[0]
        env["smi"] = ", ".join(parts[1:])
    else:
        try:
            import pynvml
            pynvml.nvmlInit()
            v = pynvml.nvmlSystemGetDriverVersion()
            env["driver"] = v.decode() if isinstance(v, bytes) else v
        except Exception:
            env["driver"] = "unknown"
    try:
        import cudadent
        env["cudadent"] = f"{cudadent.library_version()} ({cudadent.library_path()})"
    except Exception as e:
        env["cudadent"] = f"not loaded: {e}"
    return env
