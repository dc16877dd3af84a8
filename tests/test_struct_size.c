/*
 * test_struct_size.c - the struct_size rule of include/cudadent.h in both directions:
 *   - through the public API: a caller built against layout v1 (0.1.0) is read with the v2
 *     fields at their defaults, never reading past its struct; a caller built against a newer header (a larger struct_size) is
 *     accepted when every byte past this library's sizeof is zero, and refused with the offset of
 *     the first non-zero one otherwise; sizes that were never a layout are refused;
 *   - the mechanism itself (src/struct_size.h) on layouts that do not exist yet: a library of
 *     layout v2 reading a v1 caller (the missing fields take their defaults, 0), a v2 caller, and
 *     a v3 caller with its extra field zero or set.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "api_params.h"
#include "cudadent.h"
#include "harness.h"
#include "struct_size.h"

/* A params struct inside a larger, zeroed buffer, as a caller built against a newer header with
 * more fields would pass it. */
typedef union big_fwd {
  cudadent_attn_fwd_params_t p;
  unsigned char bytes[sizeof(cudadent_attn_fwd_params_t) + 64];
} big_fwd_t;
typedef union big_bwd {
  cudadent_attn_bwd_params_t p;
  unsigned char bytes[sizeof(cudadent_attn_bwd_params_t) + 64];
} big_bwd_t;

static int test_newer_caller(void) {
  big_fwd_t f;
  memset(&f, 0, sizeof f);
  f.p = t_valid_fwd();
  f.p.struct_size = sizeof f.bytes;
  size_t bytes = 1;
  T_CHECK(cudadent_attn_fwd_workspace_size(&f.p, &bytes) == CUDADENT_STATUS_SUCCESS,
          "fwd, %zu zero bytes more: %s", sizeof f.bytes - sizeof f.p,
          cudadent_get_last_error_message());
  printf("    forward, struct_size %zu (this library: %zu), zero tail: accepted\n", sizeof f.bytes,
         sizeof f.p);
  const size_t at = sizeof f.p + 17;
  f.bytes[at] = 1;
  int r = t_expect_fwd(&f.p, CUDADENT_STATUS_BAD_STRUCT_SIZE, "offset 297", "a byte set at 297");
  if (r != T_PASS) return r;
  T_CHECK(at == 297, "cudadent_attn_fwd_params_t is not the 280 bytes of LP64: adapt the needle");

  big_bwd_t b;
  memset(&b, 0, sizeof b);
  b.p = t_valid_bwd();
  b.p.struct_size = sizeof b.p + 8;
  T_CHECK(cudadent_attn_bwd_workspace_size(&b.p, &bytes) == CUDADENT_STATUS_SUCCESS,
          "bwd, 8 zero bytes more: %s", cudadent_get_last_error_message());
  b.bytes[sizeof b.p + 8] = 0xff; /* past struct_size: not looked at */
  T_CHECK(cudadent_attn_bwd_workspace_size(&b.p, &bytes) == CUDADENT_STATUS_SUCCESS,
          "bwd, a set byte past struct_size: %s", cudadent_get_last_error_message());
  b.bytes[sizeof b.p + 7] = 0x80;
  return t_expect_bwd(&b.p, CUDADENT_STATUS_BAD_STRUCT_SIZE, "offset 447", "a byte set at 447");
}

/* A caller built against layout v1 (cudadent 0.1.0: struct_size 232 / 392, up to
 * `deterministic`): the bytes past its struct are not its own (garbage here) and must not be
 * read: the v2 fields (varlen pointers, totals, head_dim_v, softcap) take their defaults, 0, and
 * the call is the dense one it always was. Read, they would be refused (a misaligned
 * cu_seqlens_q, a NaN softcap). */
static int test_older_caller(void) {
  big_fwd_t f;
  memset(&f, 0x5a, sizeof f);
  const size_t v1 = offsetof(cudadent_attn_fwd_params_t, cu_seqlens_q);
  T_CHECK(v1 == 232, "the fwd v1 layout is not 232 bytes on LP64 (%zu)", v1);
  cudadent_attn_fwd_params_t valid = t_valid_fwd();
  memcpy(f.bytes, &valid, v1);
  f.p.struct_size = v1;
  size_t bytes = 1;
  T_CHECK(cudadent_attn_fwd_workspace_size(&f.p, &bytes) == CUDADENT_STATUS_SUCCESS,
          "fwd v1 caller with garbage past 232: %s", cudadent_get_last_error_message());
  big_bwd_t b;
  memset(&b, 0xff, sizeof b);
  const size_t bv1 = offsetof(cudadent_attn_bwd_params_t, cu_seqlens_q);
  T_CHECK(bv1 == 392, "the bwd v1 layout is not 392 bytes on LP64 (%zu)", bv1);
  cudadent_attn_bwd_params_t bvalid = t_valid_bwd();
  memcpy(b.bytes, &bvalid, bv1);
  b.p.struct_size = bv1;
  T_CHECK(cudadent_attn_bwd_workspace_size(&b.p, &bytes) == CUDADENT_STATUS_SUCCESS,
          "bwd v1 caller with garbage past 392: %s", cudadent_get_last_error_message());
  /* the same bytes read as v2 are refused: the test would see a library that reads past v1 */
  f.p.struct_size = sizeof f.p;
  T_CHECK(cudadent_attn_fwd_workspace_size(&f.p, &bytes) != CUDADENT_STATUS_SUCCESS,
          "the garbage v2 fields were accepted");
  printf("    v1 callers (232 / 392 bytes, garbage after): read with the v2 fields at 0; as v2: "
         "refused (%s)\n", cudadent_get_last_error_message());
  return T_PASS;
}

static int test_unknown_sizes(void) {
  EXPECT_FWD(p.struct_size = 0, CUDADENT_STATUS_BAD_STRUCT_SIZE, "struct_size = 0");
  EXPECT_FWD(p.struct_size = sizeof p - 8, CUDADENT_STATUS_BAD_STRUCT_SIZE, "reads 232, 280");
  EXPECT_FWD(p.struct_size = 240, CUDADENT_STATUS_BAD_STRUCT_SIZE, "reads 232, 280");
  EXPECT_FWD(p.struct_size = (size_t)-1, CUDADENT_STATUS_BAD_STRUCT_SIZE, "larger than any");
  EXPECT_FWD(p.struct_size = 4097, CUDADENT_STATUS_BAD_STRUCT_SIZE, "larger than any");
  EXPECT_BWD(p.struct_size = sizeof(cudadent_attn_fwd_params_t), CUDADENT_STATUS_BAD_STRUCT_SIZE,
             "reads 392, 440");
  /* this library's own size, with its tail padding (after `softcap`, if any) not zero: padding
   * is no field, so it is ignored */
  cudadent_attn_fwd_params_t p = t_valid_fwd();
  const size_t end = offsetof(cudadent_attn_fwd_params_t, softcap) + sizeof p.softcap;
  if (end < sizeof p) memset((char *)&p + end, 0x5a, sizeof p - end);
  size_t bytes = 0;
  T_CHECK(cudadent_attn_fwd_workspace_size(&p, &bytes) == CUDADENT_STATUS_SUCCESS, "%s",
          cudadent_get_last_error_message());
  return T_PASS;
}

/* ---- the mechanism on invented layouts: the library is built with v2 ---- */

typedef struct v1 { size_t struct_size; int a; int b; } v1_t;                  /* 16 bytes */
typedef struct v2 { size_t struct_size; int a; int b; int64_t c; int d; } v2_t; /* 32 bytes */
typedef struct v3 { size_t struct_size; int a; int b; int64_t c; int d; int64_t e; } v3_t;
/* the rule for a new field: at or past the previous layout's size */
_Static_assert(offsetof(v2_t, c) >= sizeof(v1_t), "v2's first new field sits in v1's bytes");
_Static_assert(offsetof(v3_t, e) >= sizeof(v2_t), "v3's first new field sits in v2's bytes");
_Static_assert(CUDADENT_LAYOUT_SIZE(v2_t, b) == sizeof(v1_t), "layout size of v1");
_Static_assert(CUDADENT_LAYOUT_SIZE(v2_t, d) == sizeof(v2_t), "layout size of v2");

static const size_t v_layouts[] = {sizeof(v1_t), sizeof(v2_t)};

static struct_read_result_t read_v2(const void *src, size_t size, v2_t *out, size_t *offset) {
  memset(out, 0xab, sizeof *out); /* must stay so on failure */
  return cudadent_struct_read(out, sizeof *out, src, size, v_layouts, 2, offset);
}

static int test_mechanism(void) {
  v2_t out, untouched;
  memset(&untouched, 0xab, sizeof untouched);
  size_t offset = 0;
  /* an older caller: c and d take their defaults */
  v1_t old = {sizeof(v1_t), 1, 2};
  T_CHECK(read_v2(&old, sizeof old, &out, &offset) == STRUCT_READ_OK, "v1 refused");
  T_CHECK(out.a == 1 && out.b == 2 && out.c == 0 && out.d == 0, "v1 read as a=%d b=%d c=%lld d=%d",
          out.a, out.b, (long long)out.c, out.d);
  /* the library's own layout */
  v2_t same = {sizeof(v2_t), 1, 2, 3, 4};
  T_CHECK(read_v2(&same, sizeof same, &out, &offset) == STRUCT_READ_OK, "v2 refused");
  T_CHECK(out.a == 1 && out.b == 2 && out.c == 3 && out.d == 4, "v2 read wrong");
  /* a newer caller: accepted while e is 0, refused with e's offset otherwise */
  v3_t newer;
  memset(&newer, 0, sizeof newer);
  newer.struct_size = sizeof newer;
  newer.a = 1; newer.b = 2; newer.c = 3; newer.d = 4;
  T_CHECK(read_v2(&newer, sizeof newer, &out, &offset) == STRUCT_READ_OK, "v3, e = 0: refused");
  T_CHECK(out.c == 3 && out.d == 4, "v3 read wrong");
  newer.e = (int64_t)1 << 40;
  T_CHECK(read_v2(&newer, sizeof newer, &out, &offset) == STRUCT_READ_NONZERO_TAIL,
          "v3, e set: accepted");
  T_CHECK(offset == offsetof(v3_t, e) + 5, "offset %zu, want %zu (e's set byte)", offset,
          offsetof(v3_t, e) + 5);
  T_CHECK(memcmp(&out, &untouched, sizeof out) == 0, "refused read wrote the destination");
  /* sizes that were never a layout */
  T_CHECK(read_v2(&same, 24, &out, &offset) == STRUCT_READ_UNKNOWN_SIZE, "24 accepted");
  T_CHECK(read_v2(&same, 8, &out, &offset) == STRUCT_READ_UNKNOWN_SIZE, "8 accepted");
  T_CHECK(read_v2(&same, 0, &out, &offset) == STRUCT_READ_UNKNOWN_SIZE, "0 accepted");
  T_CHECK(read_v2(&same, CUDADENT_STRUCT_SIZE_MAX + 1, &out, &offset) == STRUCT_READ_TOO_LARGE,
          "4097 read");
  T_CHECK(memcmp(&out, &untouched, sizeof out) == 0, "refused read wrote the destination");
  printf("    v1 -> v2 defaults, v2, v3 (zero / set tail at %zu), unknown sizes: as the rule says\n",
         offset);
  return T_PASS;
}

void register_struct_size_tests(void) {
  t_register("struct_size_newer_caller", test_newer_caller);
  t_register("struct_size_older_caller", test_older_caller);
  t_register("struct_size_unknown_sizes", test_unknown_sizes);
  t_register("struct_size_mechanism", test_mechanism);
}
