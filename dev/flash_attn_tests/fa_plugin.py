"""pytest plugin (-p fa_plugin) for running flash-attn's own test files against cudadent.

- Refusals (fa_refusals.categorize: the shim's ShimRefusal, cudadent's UNSUPPORTED_* errors,
  NotImplementedError for dropout/ALiBi) raised while a test runs become skips whose reason is
  "cudadent refused [category]: message"; every test's outcome goes, one JSON line each, to
  --fa-results (the summarizer's input), with the collection counts first.
- --fa-sample N: a deterministic subset of N of the collected (and -k selected) cases,
  stratified by test function: each function gets an equal share (what a small function cannot
  use goes to the others), picked by a seeded RNG (--fa-seed) over its sorted node ids.
- --fa-shard K/N: the K-th of N disjoint parts (every N-th of the sorted ids, after sampling):
  N GPU calls with K = 0..N-1 cover the selection once; the summarizer merges their results.
- --fa-budget S: tests not started after S seconds are skipped ("not run: time budget") so a
  run ends inside the GPU call's time and still writes its summary.
- hopper/test_flash_attn.py's output tests loop over attention_chunk in [random, 0] inside one
  case and call the chunked one first; cudadent has no chunked attention, so every such case
  would be refused before its plain sub-runs. Unless --fa-keep-attention-chunk, the module's
  DISABLE_LOCAL is set to True after collection (parametrization, done at import, keeps local=True
  cases): the loop then runs attention_chunk = 0 only; those cases are tagged chunk_dropped.
- Without a CUDA device (collection on a CPU box), torch.cuda.get_device_capability answers
  --fa-fake-capability (default 9.0, an H100/H200: the GPU box's parametrization).
"""
import json
import os
import random
import time

import pytest

import fa_refusals

# tests that exercise flash-attn's build itself, not an attention API: any exception -> refusal
NOT_APPLICABLE = {
    "test_flash3_bw_compatibility": "FA3 torch.ops schema not provided",
}
# hopper output tests whose sub-run loop includes attention_chunk (see the module doc)
CHUNK_LOOP_TESTS = ("test_flash_attn_output", "test_flash_attn_varlen_output",
                    "test_flash_attn_kvcache")


def pytest_addoption(parser):
    g = parser.getgroup("fa_plugin", "flash-attn tests against cudadent")
    g.addoption("--fa-results", default=None, help="JSON lines of outcomes (appended)")
    g.addoption("--fa-label", default=None, help="name of this file in the summary")
    g.addoption("--fa-sample", type=int, default=0, help="run N cases, stratified by function")
    g.addoption("--fa-seed", type=int, default=0)
    g.addoption("--fa-shard", default=None, help="K/N: the K-th (0-based) of N disjoint parts")
    g.addoption("--fa-budget", type=float, default=0.0, help="seconds; 0: no limit")
    g.addoption("--fa-keep-attention-chunk", action="store_true")
    g.addoption("--fa-fake-capability", default="9.0")


def _shim_stats():
    try:
        import _fa_shim
        return _fa_shim
    except ImportError:
        return None


class _State:
    def __init__(self, config):
        self.config = config
        self.results = config.getoption("--fa-results")
        self.label = config.getoption("--fa-label")
        self.budget = config.getoption("--fa-budget")
        self.start = None
        self.partial = {}
        self.chunk_dropped_modules = set()

    def write(self, rec):
        if not self.results:
            return
        with open(self.results, "a") as f:
            f.write(json.dumps(rec, sort_keys=True) + "\n")


_CONFIG = None


def pytest_configure(config):
    global _CONFIG
    _CONFIG = config
    config._fa = _State(config)


def pytest_collectstart(collector):
    """Before flash-attn's test module is imported (its module-level code asks for the device's
    compute capability): on a box without CUDA, answer --fa-fake-capability."""
    if getattr(collector.config, "_fa_capability_done", False) or \
            os.path.basename(str(getattr(collector, "path", ""))) != "test_flash_attn.py":
        return
    collector.config._fa_capability_done = True
    try:
        import torch
    except ImportError:
        return
    if not torch.cuda.is_available():
        major, minor = (int(x) for x in
                        collector.config.getoption("--fa-fake-capability").split("."))
        torch.cuda.get_device_capability = lambda device=None: (major, minor)


def sample_ids(ids_by_function, n, seed):
    """{function: [node ids]} -> the set of ids picked: n in all (or every id if fewer), each
    function an equal share, what a function cannot use going to the others; each function's
    pick is a seeded random sample of its sorted ids (deterministic for a given collection)."""
    funcs = sorted(ids_by_function)
    sizes = {f: len(ids_by_function[f]) for f in funcs}
    quota = dict.fromkeys(funcs, 0)
    left = min(n, sum(sizes.values()))
    while left > 0:
        open_ = [f for f in funcs if quota[f] < sizes[f]]
        share = max(1, left // len(open_))
        for f in open_:
            take = min(share, sizes[f] - quota[f], left)
            quota[f] += take
            left -= take
            if left == 0:
                break
    picked = set()
    for f in funcs:
        rng = random.Random(f"{seed}:{f}")
        picked.update(rng.sample(sorted(ids_by_function[f]), quota[f]))
    return picked


def _func(item):
    return getattr(item, "originalname", None) or item.name.split("[")[0]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    st = config._fa
    by_func = {}
    for it in items:
        by_func.setdefault(_func(it), []).append(it.nodeid)
    n = config.getoption("--fa-sample")
    deselected = []
    if n and n < len(items):
        keep = sample_ids(by_func, n, config.getoption("--fa-seed"))
        deselected = [it for it in items if it.nodeid not in keep]
        items[:] = [it for it in items if it.nodeid in keep]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
    shard = config.getoption("--fa-shard")
    if shard:
        k, n_parts = (int(x) for x in shard.split("/"))
        ids = sorted(it.nodeid for it in items)
        mine = set(ids[k::n_parts])
        out = [it for it in items if it.nodeid not in mine]
        items[:] = [it for it in items if it.nodeid in mine]
        if out:
            config.hook.pytest_deselected(items=out)
    selected = {}
    for it in items:
        selected[_func(it)] = selected.get(_func(it), 0) + 1
    if not config.getoption("--fa-keep-attention-chunk"):
        for it in items:
            mod = getattr(it, "module", None)
            if mod is not None and getattr(mod, "DISABLE_LOCAL", True) is False \
                    and hasattr(mod, "COMPILED_HDIMS"):
                mod.DISABLE_LOCAL = True
                st.chunk_dropped_modules.add(mod.__name__)
    st.write({"type": "collection", "label": st.label,
              "collected": {f: len(v) for f, v in by_func.items()},
              "selected": selected, "sample": n, "seed": config.getoption("--fa-seed"), "shard": shard,
              "chunk_dropped": bool(st.chunk_dropped_modules)})


def pytest_runtest_setup(item):
    st = item.config._fa
    if st.start is None:
        st.start = time.monotonic()
    shim = _shim_stats()
    if shim is not None:
        shim.reset()
    if st.budget and time.monotonic() - st.start > st.budget:
        item._fa_budget = True
        pytest.skip("not run: time budget")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if call.when != "call" or call.excinfo is None:
        return
    exc = call.excinfo.value
    if isinstance(exc, (pytest.skip.Exception, pytest.fail.Exception)):
        return
    cat = fa_refusals.categorize(exc)
    if cat is None and _func(item) in NOT_APPLICABLE:
        cat = NOT_APPLICABLE[_func(item)]
    if cat is None:
        return
    msg = " ".join(str(exc).split())[:300]
    rep.outcome = "skipped"
    rep.longrepr = (str(item.path), (item.location[1] or 0) + 1,
                    f"cudadent refused [{cat}]: {msg}")
    item._fa_refusal = (cat, msg)


def _skip_reason(rep):
    lr = rep.longrepr
    if isinstance(lr, tuple) and len(lr) == 3:
        reason = lr[2]
    else:
        reason = str(lr)
    return reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason


def pytest_runtest_logreport(report):
    st = getattr(_CONFIG, "_fa", None) if _CONFIG is not None else None
    if st is not None:
        st.partial.setdefault(report.nodeid, []).append(report)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    yield
    st = item.config._fa
    st.write(_record(item, st.partial.pop(item.nodeid, [])))


def _classify(rec, item, rep):
    if rep.passed:
        rec["outcome"] = "passed"
    elif rep.skipped:
        refusal = getattr(item, "_fa_refusal", None)
        if getattr(item, "_fa_budget", False):
            rec["outcome"], rec["category"] = "not run", "time budget"
        elif refusal is not None and rep.when == "call":
            rec["outcome"], rec["category"], rec["msg"] = "refused", refusal[0], refusal[1]
        else:
            rec["outcome"] = "skipped"
            rec["category"] = _skip_reason(rep)[:200] or "(no reason)"
    else:
        rec["outcome"] = "failed" if rep.when == "call" else "error"
        crash = getattr(rep.longrepr, "reprcrash", None)
        text = crash.message if crash is not None else str(rep.longrepr)
        rec["msg"] = " ".join(text.split())[:400]


def _record(item, reports):
    """One JSON-able record of a test's outcome: passed, failed, error (setup/teardown),
    refused (category), skipped (flash-attn's own skip: reason), not run (time budget)."""
    st = item.config._fa
    rec = {"type": "case", "label": st.label, "id": item.nodeid.split("::", 1)[-1],
           "func": _func(item), "outcome": "error", "category": None, "msg": None,
           "dur": round(sum(r.duration for r in reports), 4)}
    shim = _shim_stats()
    rec["ok_calls"] = shim.stats["ok_calls"] if shim is not None else None
    mod = getattr(item, "module", None)
    rec["chunk_dropped"] = bool(mod is not None and mod.__name__ in st.chunk_dropped_modules
                                and _func(item) in CHUNK_LOOP_TESTS)
    by = {r.when: r for r in reports}
    setup, call, teardown = by.get("setup"), by.get("call"), by.get("teardown")
    if setup is not None and not setup.passed:
        _classify(rec, item, setup)
    elif call is not None:
        _classify(rec, item, call)
    if teardown is not None and teardown.failed and rec["outcome"] != "failed":
        _classify(rec, item, teardown)
    return rec
