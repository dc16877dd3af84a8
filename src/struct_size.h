/*
 * struct_size.h - reading a caller's params struct, whichever version of cudadent.h the caller
 * was built with (the rule is in include/cudadent.h, "struct_size: how the params structs grow").
 *
 * A params struct only ever grows at its end, and every layout it has had is known to the library
 * by its size (the `layouts` list, oldest first, the last one the library's own sizeof). A
 * caller's struct of struct_size bytes is copied into a full-size local that starts all zero
 * (zero is every field's "as before it existed" value), so that validation and kernels only ever
 * see the library's own layout:
 *   - struct_size == one of the layouts: its bytes are copied, the fields it lacks stay zero;
 *   - struct_size > the library's sizeof (a newer caller): every byte past the library's sizeof
 *     must be zero (the caller left every field the library does not know at its default); the
 *     library's sizeof bytes are copied;
 *   - anything else is refused: not a layout the struct ever had.
 * Header-only and free of the library's error state, so tests/test_api.c exercises it on layouts
 * that do not exist yet (an older and a newer one).
 */
#ifndef CUDADENT_STRUCT_SIZE_H
#define CUDADENT_STRUCT_SIZE_H

#include <stddef.h>
#include <string.h>

/* A struct_size above this is not read at all (an uninitialized struct_size must not make the
 * library scan far past the caller's struct). */
#define CUDADENT_STRUCT_SIZE_MAX ((size_t)4096)

/* The size of a layout whose last field is `last`: its end rounded up to the struct's alignment
 * (which is what sizeof was when `last` was the last field). */
#define CUDADENT_LAYOUT_SIZE(type, last)                                          \
  ((offsetof(type, last) + sizeof(((type *)0)->last) + _Alignof(type) - 1) /      \
   _Alignof(type) * _Alignof(type))

typedef enum struct_read_result {
  STRUCT_READ_OK = 0,
  STRUCT_READ_UNKNOWN_SIZE = 1, /* not a layout the struct ever had (and not larger than ours) */
  STRUCT_READ_NONZERO_TAIL = 2, /* larger than ours, with a non-zero byte at *bad_offset */
  STRUCT_READ_TOO_LARGE = 3     /* larger than CUDADENT_STRUCT_SIZE_MAX: not read */
} struct_read_result_t;

/* Reads src (a caller's struct of src_size bytes) into dst (dst_size bytes: the library's
 * sizeof), whose fields the caller's layout lacks are left zero. layouts[0..n) are the sizes of
 * every layout, oldest first; layouts[n - 1] == dst_size. On STRUCT_READ_NONZERO_TAIL,
 * *bad_offset is the offset of the first non-zero byte past dst_size. dst is written only on
 * success. */
static inline struct_read_result_t cudadent_struct_read(void *dst, size_t dst_size,
                                                        const void *src, size_t src_size,
                                                        const size_t *layouts, size_t n,
                                                        size_t *bad_offset) {
  const unsigned char *s = (const unsigned char *)src;
  size_t copy = 0;
  if (src_size > CUDADENT_STRUCT_SIZE_MAX) return STRUCT_READ_TOO_LARGE;
  if (src_size > dst_size) {
    for (size_t i = dst_size; i < src_size; ++i)
      if (s[i] != 0) {
        *bad_offset = i;
        return STRUCT_READ_NONZERO_TAIL;
      }
    copy = dst_size;
  } else {
    for (size_t i = 0; i < n; ++i)
      if (layouts[i] == src_size) copy = src_size;
    if (copy == 0) return STRUCT_READ_UNKNOWN_SIZE;
  }
  memset(dst, 0, dst_size);
  memcpy(dst, src, copy);
  return STRUCT_READ_OK;
}

#endif /* CUDADENT_STRUCT_SIZE_H */
