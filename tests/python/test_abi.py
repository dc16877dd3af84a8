"""The ctypes mirrors (python/cudadent/_abi.py) against include/cudadent.h, and the library's
device-free entry points through them (statuses, and the struct_size rule of cudadent.h in both
directions). Needs neither torch nor a GPU: a C compiler for the layout test, the built library
for the probes (each skips with its reason when missing)."""
import ctypes
import os
import shutil
import subprocess

import pytest

from conftest import REPO, portable_has_issue27, unlisted_head_dim

from cudadent import _abi, _library, errors

STRUCTS = {
    "cudadent_tensor_t": _abi.Tensor,
    "cudadent_seqlens_report_t": _abi.SeqlensReport,
    "cudadent_attn_fwd_params_t": _abi.AttnFwdParams,
    "cudadent_attn_bwd_params_t": _abi.AttnBwdParams,
}


def _compiler():
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cc and shutil.which(cc):
            return cc
    return None


def test_ctypes_layout_matches_header(tmp_path):
    cc = _compiler()
    if cc is None:
        pytest.skip("no C compiler (cc, gcc, clang) to read the header's layout")
    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "cudadent.h"',
             "int main(void) {"]
    for cname, struct in STRUCTS.items():
        lines.append(f'  printf("{cname} sizeof %zu\\n", sizeof({cname}));')
        for field, _ in struct._fields_:
            lines.append(f'  printf("{cname} {field} %zu\\n", offsetof({cname}, {field}));')
    lines += ["  return 0;", "}"]
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "layout"
    subprocess.run([cc, "-std=c11", "-I", os.path.join(REPO, "include"), str(src), "-o", str(exe)],
                   check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        cname, field, value = line.split()
        struct = STRUCTS[cname]
        got = ctypes.sizeof(struct) if field == "sizeof" else getattr(struct, field).offset
        assert got == int(value), f"{struct.__name__}.{field}: ctypes {got}, C {value}"
    # every C field has a ctypes mirror and vice versa (the compile above fails on extra ones)
    n_fields = sum(len(s._fields_) + 1 for s in STRUCTS.values())
    assert len(out.splitlines()) == n_fields


def test_status_enum_matches_header():
    text = open(os.path.join(REPO, "include", "cudadent.h")).read()
    for status in _abi.Status:
        assert f"CUDADENT_STATUS_{status.name} = {status.value}" in text
    for dtype in _abi.DType:
        assert f"CUDADENT_DTYPE_{dtype.name} = {dtype.value}" in text


@pytest.fixture(scope="module")
def lib():
    try:
        return _library.load()
    except errors.LibraryNotFoundError as e:
        pytest.skip(f"libcudadent not built: {e}")


def _tensor(t, i, heads, head_dim=64):
    """Fake, aligned device pointers (the query never touches memory), dense strides."""
    t.data = 0x7f0000000000 + i * 0x1000000
    t.stride_batch, t.stride_seq, t.stride_head, t.stride_dim = \
        128 * heads * head_dim, heads * head_dim, head_dim, 1


def _fwd_params(**overrides):
    p = _abi.AttnFwdParams()
    p.struct_size = ctypes.sizeof(p)
    p.dtype = _abi.DType.BF16
    p.batch, p.seqlen_q, p.seqlen_k, p.heads_q, p.heads_kv, p.head_dim = 2, 128, 128, 4, 4, 64
    for i, name in enumerate(("q", "k", "v", "o")):
        _tensor(getattr(p, name), i, 4)
    p.lse = 0x7f0010000000
    p.softmax_scale = 0.125
    p.window_left = p.window_right = -1
    for k, v in overrides.items():
        setattr(p, k, v)
    return p


def _bwd_params():
    p = _abi.AttnBwdParams()
    p.struct_size = ctypes.sizeof(p)
    p.dtype = _abi.DType.BF16
    p.batch, p.seqlen_q, p.seqlen_k, p.heads_q, p.heads_kv, p.head_dim = 2, 128, 128, 4, 4, 64
    for i, name in enumerate(("q", "k", "v", "o", "dout", "dq", "dk", "dv")):
        _tensor(getattr(p, name), i, 4)
    p.lse = 0x7f0010000000
    p.softmax_scale = 0.125
    p.window_left = p.window_right = -1
    return p


def _query(lib, p):
    n = ctypes.c_size_t(12345)
    status = lib.cudadent_attn_fwd_workspace_size(ctypes.byref(p), ctypes.byref(n))
    return status, n.value, lib.cudadent_get_last_error_message().decode()


def _query_as(lib, params, struct_size, set_byte=None):
    """The workspace query on params copied into a zeroed buffer of max(struct_size, sizeof)
    bytes, with struct_size as given and, optionally, one byte at set_byte made non-zero."""
    struct = type(params)
    size = max(struct_size, ctypes.sizeof(struct)) + 8
    buf = (ctypes.c_ubyte * size)()
    ctypes.memmove(buf, ctypes.byref(params), ctypes.sizeof(struct))
    view = ctypes.cast(buf, ctypes.POINTER(struct))
    view.contents.struct_size = struct_size
    if set_byte is not None:
        buf[set_byte] = 0x01
    query = (lib.cudadent_attn_fwd_workspace_size if struct is _abi.AttnFwdParams
             else lib.cudadent_attn_bwd_workspace_size)
    n = ctypes.c_size_t(12345)
    status = query(view, ctypes.byref(n))
    return status, n.value, lib.cudadent_get_last_error_message().decode()


BUILDERS = [pytest.param(_fwd_params, id="fwd"), pytest.param(_bwd_params, id="bwd")]


def test_library_accepts_our_struct_size(lib):
    status, _, msg = _query(lib, _fwd_params())
    assert status in (_abi.Status.SUCCESS, _abi.Status.UNSUPPORTED_HEAD_DIM), msg
    status, _, msg = _query(lib, _fwd_params(struct_size=ctypes.sizeof(_abi.AttnFwdParams) - 8))
    assert status == _abi.Status.BAD_STRUCT_SIZE and "struct_size" in msg


@pytest.mark.parametrize("build", BUILDERS)
def test_struct_size_older_layouts_are_read(lib, build):
    """An older caller: every layout the struct has had (LAYOUT_SIZES) is read."""
    params = build()
    for size in _abi.LAYOUT_SIZES[type(params)]:
        status, _, msg = _query_as(lib, params, size)
        assert status != _abi.Status.BAD_STRUCT_SIZE, f"struct_size {size}: {msg}"


@pytest.mark.parametrize("build", BUILDERS)
def test_struct_size_v1_caller_gets_defaults(lib, build):
    """A caller of layout v1 (cudadent 0.1.0: 232 / 392 bytes): the library reads only its
    bytes, the v2 fields take their defaults (0), whatever lies past the caller's struct."""
    params = build()
    struct = type(params)
    v1 = _abi.LAYOUT_SIZES[struct][0]
    assert v1 == getattr(struct, "cu_seqlens_q").offset
    buf = (ctypes.c_ubyte * (ctypes.sizeof(struct) + 8))(*([0x5A] * (ctypes.sizeof(struct) + 8)))
    ctypes.memmove(buf, ctypes.byref(params), v1)
    view = ctypes.cast(buf, ctypes.POINTER(struct))
    view.contents.struct_size = v1
    query = (lib.cudadent_attn_fwd_workspace_size if struct is _abi.AttnFwdParams
             else lib.cudadent_attn_bwd_workspace_size)
    n = ctypes.c_size_t(0)
    status = query(view, ctypes.byref(n))
    assert status == _abi.Status.SUCCESS, lib.cudadent_get_last_error_message().decode()
    view.contents.struct_size = ctypes.sizeof(struct)  # read as v2, the garbage is refused
    assert query(view, ctypes.byref(n)) != _abi.Status.SUCCESS


@pytest.mark.parametrize("overrides,status,word", [
    (dict(softcap=-1.0), _abi.Status.BAD_SCALE, "softcap"),
    (dict(head_dim_v=-1), _abi.Status.BAD_SIZE, "head_dim_v"),
    (dict(total_q=4), _abi.Status.BAD_SIZE, "total_q = 4 is set in a dense call"),
    (dict(seqused_k=0x7f0020000000), _abi.Status.NULL_POINTER, "seqused_k"),
    (dict(cu_seqlens_q=0x7f0020000000), _abi.Status.NULL_POINTER, "cu_seqlens_k is NULL"),
])
def test_v2_fields_through_ctypes(lib, overrides, status, word):
    got, _, msg = _query(lib, _fwd_params(**overrides))
    assert got == status and word in msg, msg


def test_softcap_through_ctypes(lib):
    """softcap > 0: accepted where the portable kernels are issue 27's (the query at cc 8.0 lists
    every multiple of 8 up to 256), else refused as not implemented yet."""
    issue27 = portable_has_issue27("fwd")  # (a query: before the call whose message is read)
    got, _, msg = _query(lib, _fwd_params(softcap=30.0))
    if issue27:
        assert got == _abi.Status.SUCCESS, msg
    else:
        assert got == _abi.Status.UNSUPPORTED_FEATURE, msg
        assert "softcap = 30 is not implemented yet" in msg
        with pytest.raises(errors.UnsupportedFeatureError, match="softcap") as info:
            _library.check(got, "cudadent_attn_fwd_workspace_size")
        assert isinstance(info.value, NotImplementedError)


def _fwd_params_dv(head_dim, head_dim_v, **overrides):
    """Forward params with q, k at head_dim and v, o at head_dim_v (dense)."""
    p = _fwd_params(head_dim=head_dim, head_dim_v=head_dim_v, **overrides)
    for i, name in enumerate(("q", "k", "v", "o")):
        _tensor(getattr(p, name), i, 4, head_dim_v if name in ("v", "o") else head_dim)
    return p


def test_head_dim_v_through_ctypes(lib):
    """head_dim_v != head_dim: accepted with issue 27's portable kernels, else refused with
    UNSUPPORTED_HEAD_DIM (a HeadDimVNotImplementedError in Python); past 256 refused in any
    build, naming head_dim_v."""
    issue27 = portable_has_issue27("fwd")  # (a query: before the call whose message is read)
    got, _, msg = _query(lib, _fwd_params_dv(128, 64))
    if issue27:
        assert got == _abi.Status.SUCCESS, msg
    else:
        assert got == _abi.Status.UNSUPPORTED_HEAD_DIM and "head_dim_v = 64" in msg, msg
        with pytest.raises(errors.HeadDimVNotImplementedError, match="head_dim_v") as info:
            _library.check(got, "cudadent_attn_fwd_workspace_size")
        assert isinstance(info.value, NotImplementedError)
        assert isinstance(info.value, errors.UnsupportedHeadDimError)
    got, _, msg = _query(lib, _fwd_params_dv(64, 264))
    assert got == _abi.Status.UNSUPPORTED_HEAD_DIM and "head_dim_v = 264" in msg, msg


def test_supported_head_dims(lib):
    for direction in ("fwd", "bwd"):
        for cc in (80, 90):
            dims = _library.supported_head_dims(direction, "bf16", cc)
            assert list(dims) == sorted(set(dims)) and all(d > 0 for d in dims)
            for d in (8, 64, 96, 128, 256):
                p = _fwd_params(head_dim=d) if direction == "fwd" else None
                if p is not None and d in dims:  # listed: the call's head-dim check passes
                    for name in ("q", "k", "v", "o"):
                        _tensor(getattr(p, name), "qkvo".index(name), 4, d)
                    status, _, msg = _query(lib, p)
                    assert status == _abi.Status.SUCCESS, msg
        assert _library.supported_head_dims(direction, "bf16", 75) == ()
        # the portable rows: 64 and 128 before issue 27, every multiple of 8 to 256 after
        assert _library.supported_head_dims(direction, "bf16", 80) in (
            (64, 128), tuple(range(8, 257, 8)))
    # a head dim no kernel lists (the query's answer: 8 before issue 27's kernels, 264 after)
    unlisted = unlisted_head_dim("fwd")
    status, _, msg = _query(lib, _fwd_params(head_dim=unlisted))
    assert status == _abi.Status.UNSUPPORTED_HEAD_DIM and "supported: " in msg
    assert f"head_dim = {unlisted}" in msg, msg
    listed = ", ".join(str(d) for d in sorted(set(_library.supported_head_dims("fwd", "bf16", 80))
                                              | set(_library.supported_head_dims("fwd", "bf16", 90))))
    assert f"supported: {listed}" in msg, msg
    with pytest.raises(errors.CudadentError):
        _library.supported_head_dims("fwd", _abi.DType.BF16, -1)


@pytest.mark.parametrize("build", BUILDERS)
def test_struct_size_newer_caller(lib, build):
    """A newer caller (larger struct_size): read when the bytes past our sizeof are zero, refused
    with the offset of the first non-zero one otherwise."""
    params = build()
    ours = ctypes.sizeof(type(params))
    status, _, msg = _query_as(lib, params, ours + 64)
    assert status != _abi.Status.BAD_STRUCT_SIZE, msg
    status, nbytes, msg = _query_as(lib, params, ours + 64, set_byte=ours + 21)
    assert status == _abi.Status.BAD_STRUCT_SIZE and f"offset {ours + 21}" in msg, msg
    assert nbytes == 12345  # a refused query writes nothing
    # a byte past struct_size is not the library's to read
    status, _, msg = _query_as(lib, params, ours + 8, set_byte=ours + 8)
    assert status != _abi.Status.BAD_STRUCT_SIZE, msg


@pytest.mark.parametrize("build", BUILDERS)
def test_struct_size_unknown_sizes_refused(lib, build):
    params = build()
    ours = ctypes.sizeof(type(params))
    for size in (0, 8, ours - 8, 4097):
        status, _, msg = _query_as(lib, params, size)
        assert status == _abi.Status.BAD_STRUCT_SIZE and "struct_size" in msg, (size, msg)


@pytest.mark.parametrize("overrides,status,exc,word", [
    (dict(softmax_scale=-1.0), _abi.Status.BAD_SCALE, errors.BadScaleError, "softmax_scale"),
    (dict(heads_kv=3), _abi.Status.BAD_HEADS, errors.BadHeadsError, "heads_kv"),
    (dict(window_left=-2), _abi.Status.BAD_WINDOW, errors.BadWindowError, "window_left"),
    (dict(dtype=_abi.DType.FP8_E4M3), _abi.Status.UNSUPPORTED_DTYPE, errors.UnsupportedDtypeError,
     "FP8"),
    (dict(batch=-1), _abi.Status.BAD_SIZE, errors.BadSizeError, "batch"),
])
def test_library_status_becomes_exception(lib, overrides, status, exc, word):
    got, _, msg = _query(lib, _fwd_params(**overrides))
    assert got == status
    with pytest.raises(exc, match=word) as info:
        _library.check(got, "cudadent_attn_fwd_workspace_size")
    assert info.value.status == status and word in info.value.message
