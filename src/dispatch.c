/*
 * dispatch.c - the table of kernels, one per direction: (device arch, params) -> kernel.
 *
 * Rows, tried in order; the first that is built, runs on the device's compute capability,
 * supports the params and (where it has a preference heuristic) prefers them wins:
 *   forward:  sm90  Hopper (wgmma, TMA)   cc 9.0 only; preferred from SM90_FWD_MIN_WORK on
 *             sm80  portable (mma.sync)   cc >= 8.0
 *   backward: sm90  Hopper (wgmma, TMA)   cc 9.0 only; the default there (SM90_BWD_DEFAULT),
 *                                         deterministic calls included (its preferred())
 *             sm80  portable (mma.sync)   cc >= 8.0 (where the device has its shared memory)
 * Each row lists the head dims its family is compiled for, its dtypes and the optional features
 * it implements (dispatch.h); the head-dim queries of cudadent.h answer from those lists.
 * A row is in the table where CMake built its family (CUDADENT_HAVE_<ARCH>_<DIR>, from the one
 * list of families in CMakeLists.txt).
 *
 * Forcing a path (tests check both paths on one Hopper GPU with it): CUDADENT_KERNEL_FWD and
 * CUDADENT_KERNEL_BWD name the row of one direction, CUDADENT_KERNEL of both where the
 * direction's own variable is unset or empty (so CUDADENT_KERNEL=sm90 CUDADENT_KERNEL_BWD=sm80
 * pairs the Hopper forward with the portable backward). The environment is read once per
 * process. A forced row skips only the preference heuristic (so tests reach the Hopper forward on
 * small shapes too); if it is not built, cannot run on the device or does not support the params,
 * the call fails with UNSUPPORTED_ARCH and a message saying so, never running another row.
 */
#include "dispatch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"

/* 1: the Hopper backward is dispatch's default on cc 9.0 (H200: 1.1-1.9x the sm80 backward from
 * the small shapes to 16k, docs/kernels/sm90_bwd.md) */
#define SM90_BWD_DEFAULT 1

#if !SM90_BWD_DEFAULT
static int never_bwd(const cudadent_attn_bwd_params_t *p) { (void)p; return 0; }
#endif

/* The head dims each family is compiled for (its tile tables: src/kernels/<arch>/). */
/* the portable kernels: every multiple of 8 up to 256 (compiled widths 64 / 128 / 192 / 256,
 * zero-padded to the next; their supports() check head_dim_v, which may be any of them too, and
 * the device's shared memory); the Hopper forward likewise (rows 64, 128, 192 / 128 (V) and 256,
 * zero-filled by its TMA loads: src/kernels/sm90/fwd_launch.cuh) */
static const int dims_8_to_256[] = {8,   16,  24,  32,  40,  48,  56,  64,  72,  80,  88,
                                    96,  104, 112, 120, 128, 136, 144, 152, 160, 168, 176,
                                    184, 192, 200, 208, 216, 224, 232, 240, 248, 256, 0};
/* the Hopper backward: every multiple of 8 up to 128 (rows 64 / 64 and 128 / 128), and with
 * dispatch.h's CUDADENT_SM90_BWD_WIDE up to 256 (rows 192 / 128 and 256 / 256), zero-filled by its
 * TMA loads; its supports() checks head_dim_v, up to the same bound: src/kernels/sm90/bwd.cu */
#if CUDADENT_SM90_BWD_WIDE
#define dims_sm90_bwd dims_8_to_256
#else
static const int dims_8_to_128[] = {8,  16, 24, 32,  40,  48,  56,  64,
                                    72, 80, 88, 96, 104, 112, 120, 128, 0};
#define dims_sm90_bwd dims_8_to_128
#endif

/* The layout-v2 features a row does not list are refused (api.c says which is missing): the
 * portable kernels implement head_dim_v != head_dim and softcap, and varlen (seqused_k and the
 * device check included; each direction behind its gate in dispatch.h); the Hopper forward and
 * backward head_dim_v != head_dim, the Hopper forward and backward varlen behind their gates
 * (CUDADENT_SM90_FWD_VARLEN, CUDADENT_SM90_BWD_VARLEN; the backward's supports() leaves
 * deterministic varlen calls, and those with a head dim over 128 where CUDADENT_SM90_BWD_VARLEN_WIDE
 * is 0, to the next row); the Hopper forward softcap behind its gate (CUDADENT_SM90_FWD_SOFTCAP;
 * its supports() leaves softcap calls with both head dims up to 64 to the next row), the Hopper backward
 * softcap behind its gates (CUDADENT_SM90_BWD_SOFTCAP: the 128 / 128 row, dense and varlen, and
 * with CUDADENT_SM90_BWD_D64_SOFTCAP the 64 / 64 row's dense calls; CUDADENT_SM90_BWD_WIDE_SOFTCAP:
 * the wide rows, dense; either lists the feature, and its supports() leaves deterministic softcap
 * calls and those of a row whose gate is 0 to the next row). */
static const cudadent_fwd_kernel_t fwd_table[] = {
#if CUDADENT_HAVE_SM90_FWD
    {"sm90", 90, 90, dims_8_to_256, CUDADENT_DTYPES_16BIT,
     CUDADENT_FEATURE_HEAD_DIM_V |
         (CUDADENT_SM90_FWD_VARLEN ? CUDADENT_FEATURE_VARLEN | CUDADENT_FEATURE_SEQUSED_K |
                                         CUDADENT_FEATURE_SEQLENS_CHECK
                                   : 0u) |
         (CUDADENT_SM90_FWD_SOFTCAP ? CUDADENT_FEATURE_SOFTCAP : 0u),
     cudadent_sm90_fwd_supports, cudadent_sm90_fwd_preferred, cudadent_sm90_fwd_workspace_size,
     cudadent_sm90_fwd},
#endif
#if CUDADENT_HAVE_SM80_FWD
    {"sm80", 80, 0, dims_8_to_256, CUDADENT_DTYPES_16BIT,
     CUDADENT_FEATURE_HEAD_DIM_V | CUDADENT_FEATURE_SOFTCAP |
         (CUDADENT_SM80_FWD_VARLEN ? CUDADENT_FEATURE_VARLEN | CUDADENT_FEATURE_SEQUSED_K |
                                         CUDADENT_FEATURE_SEQLENS_CHECK
                                   : 0u),
     cudadent_sm80_fwd_supports, NULL, cudadent_sm80_fwd_workspace_size, cudadent_sm80_fwd},
#endif
    {NULL, 0, 0, NULL, 0, 0, NULL, NULL, NULL, NULL}};

static const cudadent_bwd_kernel_t bwd_table[] = {
#if CUDADENT_HAVE_SM90_BWD
    {"sm90", 90, 90, dims_sm90_bwd, CUDADENT_DTYPES_16BIT,
     CUDADENT_FEATURE_HEAD_DIM_V |
         (CUDADENT_SM90_BWD_VARLEN ? CUDADENT_FEATURE_VARLEN | CUDADENT_FEATURE_SEQUSED_K |
                                         CUDADENT_FEATURE_SEQLENS_CHECK
                                   : 0u) |
         (CUDADENT_SM90_BWD_SOFTCAP || (CUDADENT_SM90_BWD_WIDE && CUDADENT_SM90_BWD_WIDE_SOFTCAP)
              ? CUDADENT_FEATURE_SOFTCAP
              : 0u),
     cudadent_sm90_bwd_supports,
#if SM90_BWD_DEFAULT
     cudadent_sm90_bwd_preferred,
#else
     never_bwd,
#endif
     cudadent_sm90_bwd_workspace_size, cudadent_sm90_bwd},
#endif
#if CUDADENT_HAVE_SM80_BWD
    {"sm80", 80, 0, dims_8_to_256, CUDADENT_DTYPES_16BIT,
     CUDADENT_FEATURE_HEAD_DIM_V | CUDADENT_FEATURE_SOFTCAP |
         (CUDADENT_SM80_BWD_VARLEN ? CUDADENT_FEATURE_VARLEN | CUDADENT_FEATURE_SEQUSED_K |
                                         CUDADENT_FEATURE_SEQLENS_CHECK
                                   : 0u),
     cudadent_sm80_bwd_supports, NULL, cudadent_sm80_bwd_workspace_size, cudadent_sm80_bwd},
#endif
    {NULL, 0, 0, NULL, 0, 0, NULL, NULL, NULL, NULL}};

/* ---- features ---- */

const char *cudadent_feature_name(int i) {
  static const char *const names[CUDADENT_FEATURE_COUNT] = {
      "head_dim_v != head_dim", "softcap", "varlen (cu_seqlens_q / cu_seqlens_k)", "seqused_k",
      "seqlens_report (the device-side varlen check)"};
  return i >= 0 && i < CUDADENT_FEATURE_COUNT ? names[i] : "?";
}

#define FEATURES_OF(p)                                                                         \
  (((p)->head_dim_v != 0 && (p)->head_dim_v != (p)->head_dim ? CUDADENT_FEATURE_HEAD_DIM_V : 0u) | \
   ((p)->softcap != 0.0f ? CUDADENT_FEATURE_SOFTCAP : 0u) |                                    \
   ((p)->cu_seqlens_q != NULL || (p)->cu_seqlens_k != NULL ? CUDADENT_FEATURE_VARLEN : 0u) |  \
   ((p)->seqused_k != NULL ? CUDADENT_FEATURE_SEQUSED_K : 0u) |                               \
   ((p)->seqlens_report != NULL ? CUDADENT_FEATURE_SEQLENS_CHECK : 0u))

unsigned cudadent_fwd_features(const cudadent_attn_fwd_params_t *p) { return FEATURES_OF(p); }
unsigned cudadent_bwd_features(const cudadent_attn_bwd_params_t *p) { return FEATURES_OF(p); }

static int lists(const int *dims, int d) {
  for (; *dims != 0; ++dims)
    if (*dims == d) return 1;
  return 0;
}

static int takes_dtype(unsigned dtypes, int dtype) {
  return dtype >= 0 && dtype < 32 && ((dtypes >> dtype) & 1u);
}

/* Row k takes p: head_dim and dtype listed, every feature in `used` implemented, supports(). */
#define ROW_TAKES(k, p, used)                                                            \
  (lists((k)->head_dims, (p)->head_dim) && takes_dtype((k)->dtypes, (int)(p)->dtype) &&   \
   ((used) & ~(k)->features) == 0 && (k)->supports(p))

/* every path name any build may have, for messages about the environment */
static const char *const known_paths = "sm80, sm90";

/* ---- the environment, read once ---- */

typedef struct forced {
  char name[16]; /* "" where not forced */
  const char *var; /* the variable that forced it */
  int too_long;
} forced_t;

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static forced_t forced_fwd, forced_bwd;

static void read_forced(forced_t *f, const char *own_var) {
  const char *v = getenv(own_var);
  f->var = own_var;
  if (v == NULL || v[0] == '\0') {
    v = getenv("CUDADENT_KERNEL");
    f->var = "CUDADENT_KERNEL";
  }
  if (v == NULL) v = "";
  f->too_long = strlen(v) >= sizeof f->name;
  strncpy(f->name, v, sizeof f->name - 1);
  f->name[sizeof f->name - 1] = '\0';
}

static void read_env(void) {
  read_forced(&forced_fwd, "CUDADENT_KERNEL_FWD");
  read_forced(&forced_bwd, "CUDADENT_KERNEL_BWD");
}

static const forced_t *forced_of(int bwd) {
  (void)pthread_once(&env_once, read_env);
  return bwd ? &forced_bwd : &forced_fwd;
}

static int cc_fits(int cc, int min_cc, int max_cc) {
  return cc >= min_cc && (max_cc <= 0 || cc <= max_cc);
}

/* The failure of a forced row: found is its index, or -1 where no row has that name. */
static cudadent_status_t forced_failure(const forced_t *f, const char *dir, int found, int cc_ok,
                                        int cc) {
  if (f->too_long || found < 0)
    return cudadent_fail(CUDADENT_STATUS_UNSUPPORTED_ARCH,
                         "%s=%s%s forces a %s path this library does not have (paths: %s; "
                         "built: see the library's build, CUDADENT_GPU_ARCHS)",
                         f->var, f->name, f->too_long ? "..." : "", dir, known_paths);
  if (!cc_ok)
    return cudadent_fail(CUDADENT_STATUS_UNSUPPORTED_ARCH,
                         "%s=%s forces the %s %s kernel, which cannot run on compute capability "
                         "%d.%d (unset %s to let the library choose)",
                         f->var, f->name, f->name, dir, cc / 10, cc % 10, f->var);
  return cudadent_fail(CUDADENT_STATUS_UNSUPPORTED_ARCH,
                       "%s=%s forces the %s %s kernel, which does not support these params "
                       "(head_dim, dtype or this device's shared memory; unset %s to let the "
                       "library choose)",
                       f->var, f->name, f->name, dir, f->var);
}

static cudadent_status_t no_row(const char *dir, int cc) {
  return cudadent_fail(CUDADENT_STATUS_UNSUPPORTED_ARCH,
                       "no %s kernel for compute capability %d.%d%s", dir, cc / 10, cc % 10,
                       cc < 80 ? " (cudadent needs 8.0 or newer)" : " with these params");
}

#define ROWS(table) ((int)(sizeof table / sizeof table[0]) - 1) /* without the sentinel */

cudadent_status_t cudadent_pick_fwd(const cudadent_attn_fwd_params_t *p, int cc,
                                    const cudadent_fwd_kernel_t **kernel) {
  const forced_t *f = forced_of(0);
  if (f->name[0] != '\0') {
    int i = -1;
    for (int j = 0; !f->too_long && j < ROWS(fwd_table) && i < 0; ++j)
      if (strcmp(fwd_table[j].name, f->name) == 0) i = j;
    if (i < 0) return forced_failure(f, "forward", -1, 0, cc);
    const cudadent_fwd_kernel_t *k = &fwd_table[i];
    const int cc_ok = cc_fits(cc, k->min_cc, k->max_cc);
    if (!cc_ok || !ROW_TAKES(k, p, cudadent_fwd_features(p)))
      return forced_failure(f, "forward", i, cc_ok, cc);
    *kernel = k;
    return CUDADENT_STATUS_SUCCESS;
  }
  for (int i = 0; i < ROWS(fwd_table); ++i) {
    const cudadent_fwd_kernel_t *k = &fwd_table[i];
    if (cc_fits(cc, k->min_cc, k->max_cc) && ROW_TAKES(k, p, cudadent_fwd_features(p)) &&
        (k->preferred == NULL || k->preferred(p))) {
      *kernel = k;
      return CUDADENT_STATUS_SUCCESS;
    }
  }
  return no_row("forward", cc);
}

cudadent_status_t cudadent_pick_bwd(const cudadent_attn_bwd_params_t *p, int cc,
                                    const cudadent_bwd_kernel_t **kernel) {
  const forced_t *f = forced_of(1);
  if (f->name[0] != '\0') {
    int i = -1;
    for (int j = 0; !f->too_long && j < ROWS(bwd_table) && i < 0; ++j)
      if (strcmp(bwd_table[j].name, f->name) == 0) i = j;
    if (i < 0) return forced_failure(f, "backward", -1, 0, cc);
    const cudadent_bwd_kernel_t *k = &bwd_table[i];
    const int cc_ok = cc_fits(cc, k->min_cc, k->max_cc);
    if (!cc_ok || !ROW_TAKES(k, p, cudadent_bwd_features(p)))
      return forced_failure(f, "backward", i, cc_ok, cc);
    *kernel = k;
    return CUDADENT_STATUS_SUCCESS;
  }
  for (int i = 0; i < ROWS(bwd_table); ++i) {
    const cudadent_bwd_kernel_t *k = &bwd_table[i];
    if (cc_fits(cc, k->min_cc, k->max_cc) && ROW_TAKES(k, p, cudadent_bwd_features(p)) &&
        (k->preferred == NULL || k->preferred(p))) {
      *kernel = k;
      return CUDADENT_STATUS_SUCCESS;
    }
  }
  return no_row("backward", cc);
}

/* The table queries, once per direction (table T, params type P, prefix DIR). */
#define TABLE_QUERIES(DIR, T, P)                                                                \
  int cudadent_any_##DIR##_supports(const P *p) {                                               \
    for (int i = 0; T[i].name != NULL; ++i)                                                     \
      if (ROW_TAKES(&T[i], p, cudadent_##DIR##_features(p))) return 1;                          \
    return 0;                                                                                   \
  }                                                                                             \
  int cudadent_any_##DIR##_takes_head_dim(const P *p) {                                         \
    for (int i = 0; T[i].name != NULL; ++i)                                                     \
      if (ROW_TAKES(&T[i], p, 0u)) return 1;                                                    \
    return 0;                                                                                   \
  }                                                                                             \
  unsigned cudadent_##DIR##_features_built(const P *p) {                                        \
    unsigned built = 0;                                                                         \
    for (int i = 0; T[i].name != NULL; ++i)                                                     \
      if (ROW_TAKES(&T[i], p, 0u)) built |= T[i].features;                                      \
    return built;                                                                               \
  }                                                                                             \
  size_t cudadent_##DIR##_workspace_bound(const P *p) {                                         \
    size_t bytes = 0;                                                                           \
    for (int i = 0; T[i].name != NULL; ++i)                                                     \
      if (ROW_TAKES(&T[i], p, cudadent_##DIR##_features(p))) {                                  \
        const size_t b = T[i].workspace(p);                                                     \
        if (b > bytes) bytes = b;                                                               \
      }                                                                                         \
    return bytes;                                                                               \
  }                                                                                             \
  int cudadent_##DIR##_head_dims(int cc, cudadent_dtype_t dtype, const P *probe, int *dims,     \
                                 int capacity) {                                                \
    unsigned char seen[HEAD_DIM_LIMIT + 1];                                                     \
    memset(seen, 0, sizeof seen);                                                               \
    for (int i = 0; T[i].name != NULL; ++i) {                                                   \
      if ((cc > 0 && !cc_fits(cc, T[i].min_cc, T[i].max_cc)) ||                                 \
          !takes_dtype(T[i].dtypes, (int)dtype))                                                \
        continue;                                                                               \
      for (const int *d = T[i].head_dims; *d != 0; ++d) {                                       \
        if (*d > HEAD_DIM_LIMIT) continue;                                                      \
        if (probe != NULL) {                                                                    \
          P q = *probe;                                                                         \
          q.dtype = dtype;                                                                      \
          q.head_dim = *d;                                                                      \
          if (!T[i].supports(&q)) continue;                                                     \
        }                                                                                       \
        seen[*d] = 1;                                                                           \
      }                                                                                         \
    }                                                                                           \
    int count = 0;                                                                              \
    for (int d = 1; d <= HEAD_DIM_LIMIT; ++d)                                                   \
      if (seen[d]) {                                                                            \
        if (count < capacity) dims[count] = d;                                                  \
        ++count;                                                                                \
      }                                                                                         \
    return count;                                                                               \
  }

/* no row lists a head dim above this (cudadent.h: at most 256 are planned) */
#define HEAD_DIM_LIMIT 512

TABLE_QUERIES(fwd, fwd_table, cudadent_attn_fwd_params_t)
TABLE_QUERIES(bwd, bwd_table, cudadent_attn_bwd_params_t)
