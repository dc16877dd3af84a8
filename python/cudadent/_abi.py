"""ctypes mirrors of the C ABI in include/cudadent.h: enums, structs, entry-point prototypes.

This is the only module that knows the C layout. Every struct below copies its C counterpart
field for field, in order, with the same C types; ``check_layout()`` compares ctypes' sizes and
offsets with the figures the header implies for the LP64 ABI (x86-64 / aarch64 Linux), and
tests/python/test_abi.py compiles a C program against the header and compares every offset with
the ones here.

struct_size follows the rule of include/cudadent.h ("struct_size: how the params structs grow"):
the package sets struct_size = ctypes.sizeof(struct) and leaves every field it does not use at 0
(a ctypes Structure starts zeroed). The library reads any struct_size that is one of its layouts
(``LAYOUT_SIZES``: an older package against a newer library gets the defaults, 0, for the fields
it lacks), or is larger than its own sizeof with every byte past that zero (a newer package
against an older library works as long as it leaves the fields that library does not know at
0; a call that sets one is refused with BAD_STRUCT_SIZE naming the offset). A field added to a
struct here is appended to ``_fields_``, and its layout's size to ``LAYOUT_SIZES``.
"""
import ctypes
import enum

__all__ = [
    "Status", "DType", "Tensor", "SeqlensReport", "AttnFwdParams", "AttnBwdParams", "check_layout",
    "declare_prototypes", "HEADER_VERSION", "LAYOUT_SIZES",
]

# CUDADENT_VERSION of the header these mirrors were written against (MAJOR*10000 + MINOR*100 + PATCH).
HEADER_VERSION = 100  # 0.1.0


class Status(enum.IntEnum):
    """cudadent_status_t."""
    SUCCESS = 0
    NULL_POINTER = 1
    BAD_STRUCT_SIZE = 2
    BAD_SIZE = 3
    SIZE_OVERFLOW = 4
    BAD_HEADS = 5
    UNSUPPORTED_HEAD_DIM = 6
    UNSUPPORTED_DTYPE = 7
    MISALIGNED = 8
    NOT_CONTIGUOUS = 9
    BAD_WINDOW = 10
    BAD_SCALE = 11
    WORKSPACE_TOO_SMALL = 12
    NO_DEVICE = 13
    UNSUPPORTED_ARCH = 14
    UNSUPPORTED_FEATURE = 15
    CUDA_ERROR = 16
    INTERNAL_ERROR = 17


class DType(enum.IntEnum):
    """cudadent_dtype_t."""
    FP16 = 0
    BF16 = 1
    FP8_E4M3 = 2


# C enums are ints on every ABI cudadent targets.
c_status = ctypes.c_int
c_dtype = ctypes.c_int


class Tensor(ctypes.Structure):
    """cudadent_tensor_t: a 4-d (batch, seqlen, heads, head_dim) device tensor, strides in elements."""
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("stride_batch", ctypes.c_int64),
        ("stride_seq", ctypes.c_int64),
        ("stride_head", ctypes.c_int64),
        ("stride_dim", ctypes.c_int64),
    ]


class SeqlensReport(ctypes.Structure):
    """cudadent_seqlens_report_t: what the opt-in device-side varlen check writes."""
    _fields_ = [
        ("status", ctypes.c_int32),
        ("array", ctypes.c_int32),
        ("index", ctypes.c_int32),
        ("value", ctypes.c_int32),
    ]


# Layout v2 of both params structs (include/cudadent.h, "features of layout v2"), appended after
# `deterministic`; 0 / NULL everywhere is v1's behaviour.
_V2_FIELDS = [
    ("cu_seqlens_q", ctypes.c_void_p),     # const int32_t *, device [batch + 1]; NULL: dense
    ("cu_seqlens_k", ctypes.c_void_p),     # const int32_t *, device [batch + 1]
    ("seqused_k", ctypes.c_void_p),        # const int32_t *, device [batch]; NULL: all keys
    ("seqlens_report", ctypes.c_void_p),   # cudadent_seqlens_report_t *, device; NULL: no check
    ("total_q", ctypes.c_int),             # varlen: tokens of q / o; dense: 0
    ("total_k", ctypes.c_int),             # varlen: tokens of k / v; dense: 0
    ("head_dim_v", ctypes.c_int),          # 0: = head_dim
    ("softcap", ctypes.c_float),           # 0: none
]


class AttnFwdParams(ctypes.Structure):
    """cudadent_attn_fwd_params_t."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("dtype", c_dtype),
        ("batch", ctypes.c_int),
        ("seqlen_q", ctypes.c_int),
        ("seqlen_k", ctypes.c_int),
        ("heads_q", ctypes.c_int),
        ("heads_kv", ctypes.c_int),
        ("head_dim", ctypes.c_int),
        ("q", Tensor),
        ("k", Tensor),
        ("v", Tensor),
        ("o", Tensor),
        ("lse", ctypes.c_void_p),          # float *
        ("softmax_scale", ctypes.c_float),
        ("causal", ctypes.c_int),
        ("window_left", ctypes.c_int),
        ("window_right", ctypes.c_int),
        ("deterministic", ctypes.c_int),
    ] + _V2_FIELDS


class AttnBwdParams(ctypes.Structure):
    """cudadent_attn_bwd_params_t."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("dtype", c_dtype),
        ("batch", ctypes.c_int),
        ("seqlen_q", ctypes.c_int),
        ("seqlen_k", ctypes.c_int),
        ("heads_q", ctypes.c_int),
        ("heads_kv", ctypes.c_int),
        ("head_dim", ctypes.c_int),
        ("q", Tensor),
        ("k", Tensor),
        ("v", Tensor),
        ("o", Tensor),
        ("dout", Tensor),
        ("dq", Tensor),
        ("dk", Tensor),
        ("dv", Tensor),
        ("lse", ctypes.c_void_p),          # const float *
        ("softmax_scale", ctypes.c_float),
        ("causal", ctypes.c_int),
        ("window_left", ctypes.c_int),
        ("window_right", ctypes.c_int),
        ("deterministic", ctypes.c_int),
    ] + _V2_FIELDS


# What the header implies on LP64 (pointers, size_t and int64_t of 8 bytes, int and float of 4):
# name -> (sizeof, {field: offset}) for the fields whose offsets are easiest to get wrong.
_LP64_LAYOUT = {
    Tensor: (40, {"data": 0, "stride_batch": 8, "stride_dim": 32}),
    SeqlensReport: (16, {"status": 0, "value": 12}),
    AttnFwdParams: (280, {"dtype": 8, "head_dim": 32, "q": 40, "o": 160, "lse": 200,
                          "softmax_scale": 208, "deterministic": 224, "cu_seqlens_q": 232,
                          "total_q": 264, "head_dim_v": 272, "softcap": 276}),
    AttnBwdParams: (440, {"dtype": 8, "head_dim": 32, "q": 40, "dv": 320, "lse": 360,
                          "softmax_scale": 368, "deterministic": 384, "cu_seqlens_q": 392,
                          "total_q": 424, "head_dim_v": 432, "softcap": 436}),
}


# Every layout each params struct has had, by its struct_size on LP64, oldest first (the C
# library's fwd_layouts / bwd_layouts in src/api.c); the last is the struct above.
LAYOUT_SIZES = {
    AttnFwdParams: (232, 280),   # v1 (cudadent 0.1.0), v2 (varlen, head_dim_v, softcap)
    AttnBwdParams: (392, 440),
}


def check_layout():
    """Raise ImportError if a ctypes mirror does not have the LP64 layout of its C struct."""
    if ctypes.sizeof(ctypes.c_void_p) != 8 or ctypes.sizeof(ctypes.c_size_t) != 8:
        return  # not LP64: nothing to compare with here; the library's struct_size probe still runs
    for struct, (size, offsets) in _LP64_LAYOUT.items():
        if ctypes.sizeof(struct) != size:
            raise ImportError(f"cudadent: ctypes.sizeof({struct.__name__}) = {ctypes.sizeof(struct)},"
                              f" but the C struct is {size} bytes: _abi.py is out of date")
        sizes = LAYOUT_SIZES.get(struct)
        if sizes is not None and (sizes[-1] != size or list(sizes) != sorted(set(sizes))):
            raise ImportError(f"cudadent: LAYOUT_SIZES[{struct.__name__}] = {sizes} must rise and "
                              f"end at the struct's own {size} bytes: _abi.py is out of date")
        for field, offset in offsets.items():
            got = getattr(struct, field).offset
            if got != offset:
                raise ImportError(f"cudadent: {struct.__name__}.{field} is at offset {got}, but at "
                                  f"{offset} in the C struct: _abi.py is out of date")


def declare_prototypes(lib):
    """Set argtypes/restype of every entry point of a loaded CDLL."""
    lib.cudadent_get_version.argtypes = []
    lib.cudadent_get_version.restype = ctypes.c_int
    lib.cudadent_get_error_string.argtypes = [c_status]
    lib.cudadent_get_error_string.restype = ctypes.c_char_p
    lib.cudadent_get_last_error_message.argtypes = []
    lib.cudadent_get_last_error_message.restype = ctypes.c_char_p
    size_p = ctypes.POINTER(ctypes.c_size_t)
    lib.cudadent_attn_fwd_workspace_size.argtypes = [ctypes.POINTER(AttnFwdParams), size_p]
    lib.cudadent_attn_fwd_workspace_size.restype = c_status
    lib.cudadent_attn_bwd_workspace_size.argtypes = [ctypes.POINTER(AttnBwdParams), size_p]
    lib.cudadent_attn_bwd_workspace_size.restype = c_status
    # (params, workspace, workspace_bytes, stream); a cudaStream_t travels as a void pointer.
    lib.cudadent_attn_fwd.argtypes = [ctypes.POINTER(AttnFwdParams), ctypes.c_void_p,
                                      ctypes.c_size_t, ctypes.c_void_p]
    lib.cudadent_attn_fwd.restype = c_status
    lib.cudadent_attn_bwd.argtypes = [ctypes.POINTER(AttnBwdParams), ctypes.c_void_p,
                                      ctypes.c_size_t, ctypes.c_void_p]
    lib.cudadent_attn_bwd.restype = c_status
    # (dtype, compute_capability (0: the current device), head_dims, capacity, count)
    int_p = ctypes.POINTER(ctypes.c_int)
    # (a library from before layout v2 lacks them: _library.supported_head_dims says so)
    for name in ("cudadent_attn_fwd_supported_head_dims", "cudadent_attn_bwd_supported_head_dims"):
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.argtypes = [c_dtype, ctypes.c_int, int_p, ctypes.c_int, int_p]
            fn.restype = c_status


check_layout()
