/* errors.c - status strings and the thread-local detailed message of the last failure. */
#include "errors.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_message[512];

cudadent_status_t cudadent_fail(cudadent_status_t status, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(last_message, sizeof last_message, fmt, args);
  va_end(args);
  return status;
}

void cudadent_clear_error(void) { last_message[0] = '\0'; }

const char *cudadent_get_last_error_message(void) { return last_message; }

const char *cudadent_get_error_string(cudadent_status_t status) {
  switch (status) {
    case CUDADENT_STATUS_SUCCESS: return "CUDADENT_STATUS_SUCCESS: no error";
    case CUDADENT_STATUS_NULL_POINTER: return "CUDADENT_STATUS_NULL_POINTER: a required pointer is NULL";
    case CUDADENT_STATUS_BAD_STRUCT_SIZE:
      return "CUDADENT_STATUS_BAD_STRUCT_SIZE: params.struct_size is no layout this library can read";
    case CUDADENT_STATUS_BAD_SIZE:
      return "CUDADENT_STATUS_BAD_SIZE: a size or stride out of range, or an output overlapping itself";
    case CUDADENT_STATUS_SIZE_OVERFLOW:
      return "CUDADENT_STATUS_SIZE_OVERFLOW: a size past the limits of cudadent.h, or a stride too large";
    case CUDADENT_STATUS_BAD_HEADS:
      return "CUDADENT_STATUS_BAD_HEADS: heads_q is not a multiple of heads_kv";
    case CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM:
      return "CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM: no kernel for this head_dim";
    case CUDADENT_STATUS_UNSUPPORTED_DTYPE:
      return "CUDADENT_STATUS_UNSUPPORTED_DTYPE: no kernel for this dtype";
    case CUDADENT_STATUS_MISALIGNED:
      return "CUDADENT_STATUS_MISALIGNED: a pointer or stride is not 16-byte aligned";
    case CUDADENT_STATUS_NOT_CONTIGUOUS:
      return "CUDADENT_STATUS_NOT_CONTIGUOUS: head_dim must be contiguous (stride_dim == 1)";
    case CUDADENT_STATUS_BAD_WINDOW: return "CUDADENT_STATUS_BAD_WINDOW: a window bound is below -1";
    case CUDADENT_STATUS_BAD_SCALE:
      return "CUDADENT_STATUS_BAD_SCALE: softmax_scale must be finite and positive";
    case CUDADENT_STATUS_WORKSPACE_TOO_SMALL:
      return "CUDADENT_STATUS_WORKSPACE_TOO_SMALL: workspace missing or smaller than queried";
    case CUDADENT_STATUS_NO_DEVICE: return "CUDADENT_STATUS_NO_DEVICE: no CUDA device is available";
    case CUDADENT_STATUS_UNSUPPORTED_ARCH:
      return "CUDADENT_STATUS_UNSUPPORTED_ARCH: no kernel for this GPU architecture";
    case CUDADENT_STATUS_UNSUPPORTED_FEATURE:
      return "CUDADENT_STATUS_UNSUPPORTED_FEATURE: no kernel implements this combination yet";
    case CUDADENT_STATUS_CUDA_ERROR: return "CUDADENT_STATUS_CUDA_ERROR: a CUDA call failed";
    case CUDADENT_STATUS_INTERNAL_ERROR: return "CUDADENT_STATUS_INTERNAL_ERROR: a bug in cudadent";
  }
  return "unknown cudadent_status_t value";
}
