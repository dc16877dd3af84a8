/*
 * check_layout.cu - CPU check of the portable forward's shared-memory addressing at every width
 * (no GPU): fwd_smem.cuh's cd_sm80_fwd_swz and cd_sm80_fwd_ldsm_addr (host functions too) and
 * the kernel's three per-lane ldmatrix bases (Q, K, V), written as in cd_sm80_fwd_body.
 *
 *   nvcc -std=c++17 -Iinclude -Isrc dev/sm80_fwd/check_layout.cu -o /tmp/check_fwd_layout && /tmp/check_fwd_layout
 *
 * For W = 64, 96, 128, 192, 256 and 8 rows of each row class (row % 8 = 0..7 from bases that are
 * multiples of 8; mt / np / kk offsets as the kernel's loops):
 *   1. every row's swizzled chunks are a permutation of its own chunks;
 *   2. every ldmatrix row address a lane computes (Q A fragments, K B fragments, V B fragments
 *      .trans) equals cd_sm80_fwd_swz of the element the mma fragment needs there, and the 8 rows
 *      of each 8x8 matrix lie in 8 different 16-byte bank groups;
 *   3. the tile loader's chunk groups (cd_sm80_fwd_ld_chunks) start on swizzle groups, so the
 *      thread's first chunk offset plus the group's immediate equals the swizzled chunk;
 *   4. (session 28) for every tile of fwd_tiles.cuh's table as this build compiles it (W 96 with
 *      -DCUDADENT_SM80_W96=1, W 192 / 256's 8-warp tiles with -DCUDADENT_SM80_FWD_WIDE8=1): the
 *      loader's threads (cd_sm80_fwd_load_tile's ld_r / ld_c, passes and groups, with WARPS * 32
 *      threads) write every chunk of the Q tile and of a K / V tile exactly once, at the
 *      swizzled offset, and the epilogue's 16-byte stores (lane + 32 it of a warp's ROWS_W rows)
 *      cover every chunk of the tile exactly once.
 *   5. (session 33) the single-buffered pipeline of fwd_single.cuh (dispatch.h
 *      CUDADENT_SM80_FWD_SINGLE_BUF): its shared-memory regions (Q, K, V as cd_sm80_fwd_body
 *      places them with SINGLE) are disjoint and fill cd_sm80_fwd_smem_bytes<.., true>; and a
 *      model of its cp.async / barrier order (written from the body's loop, 1-6 key tiles; the
 *      double-buffered pipeline as a control) reads every K / V / Q tile after its load is waited
 *      for and made visible by a barrier, never while a load into the same buffer is in flight,
 *      and never in the barrier interval where another warp issues a load into it (three mutants
 *      of the order must fail).
 * Exit status 1 on a failure.
 */
#include <stdio.h>
#include <string.h>

#include "kernels/sm80/fwd_tiles.cuh"

static int failures = 0;
#define CHECK(cond, ...)                                          \
  do {                                                            \
    if (!(cond) && failures++ < 20) {                             \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);        \
      fprintf(stderr, __VA_ARGS__);                               \
      fprintf(stderr, "\n");                                      \
    }                                                             \
  } while (0)

/* the 8 row addresses of each matrix of one ldmatrix.x4 in distinct 16-byte bank groups */
static void check_banks(const uint32_t addr[32], const char *what) {
  for (int j = 0; j < 4; ++j) {
    int seen = 0;
    for (int r = 0; r < 8; ++r) seen |= 1 << ((addr[8 * j + r] >> 4) & 7);
    CHECK(seen == 0xff, "%s: matrix %d rows share a bank group (mask %x)", what, j, seen);
  }
}

template <int D> static void check_width() {
  constexpr int CHUNKS = D / 8, ROW_BYTES = D * 2, ROWS = 128, WARP_ROWS = 16;
  const int before = failures;
  /* 1. permutation */
  for (int r = 0; r < 8; ++r) {
    unsigned long long seen = 0;
    for (int c = 0; c < CHUNKS; ++c) {
      const uint32_t o = cd_sm80_fwd_swz<CHUNKS>(r, c) - (uint32_t)(r * ROW_BYTES);
      CHECK(o / 16 < (uint32_t)CHUNKS, "W%d: row %d chunk %d at chunk %u", D, r, c, o / 16);
      seen |= 1ull << (o / 16 % 64);
    }
    CHECK(seen == (1ull << CHUNKS) - 1, "W%d: row %d not a permutation", D, r);
  }
  /* 2. ldmatrix addresses, tiles at 0, warp row base w (a multiple of 16), as the kernel */
  for (int w = 0; w < ROWS; w += WARP_ROWS) {
    for (int kk = 0; kk < D / 16; ++kk)
      for (int off = 0; off < 2; ++off) { /* mt (Q), np (K) or V's kk: 16-row steps */
        uint32_t aq[32], ak[32], av[32];
        for (int lane = 0; lane < 32; ++lane) {
          const int x = lane & 7, xk = cd_sm80_swz_key<CHUNKS>(x), j = lane >> 3;
          /* the kernel's bases (cd_sm80_fwd_body) */
          const uint32_t q_base = (w + x + ((lane >> 3) & 1) * 8) * ROW_BYTES + (((lane >> 4) ^ xk) * 16);
          const uint32_t k_base = (x + (lane >> 4) * 8) * ROW_BYTES + ((((lane >> 3) & 1) ^ xk) * 16);
          const uint32_t v_base = (x + ((lane >> 3) & 1) * 8) * ROW_BYTES + (((lane >> 4) ^ xk) * 16);
          aq[lane] = cd_sm80_fwd_ldsm_addr<CHUNKS>(q_base, off * 16 * ROW_BYTES, kk);
          ak[lane] = cd_sm80_fwd_ldsm_addr<CHUNKS>(k_base, off * 16 * ROW_BYTES, kk);
          av[lane] = cd_sm80_fwd_ldsm_addr<CHUNKS>(v_base, off * 16 * ROW_BYTES, kk);
          /* A (Q [m][k]): matrix j = rows 8 (j & 1), k chunk j >> 1 */
          const uint32_t want_q = cd_sm80_fwd_swz<CHUNKS>(w + off * 16 + 8 * (j & 1) + x, 2 * kk + (j >> 1));
          /* B (K [n][k]): matrix j = keys 8 (j >> 1), k chunk j & 1 */
          const uint32_t want_k = cd_sm80_fwd_swz<CHUNKS>(off * 16 + 8 * (j >> 1) + x, 2 * kk + (j & 1));
          /* B (V [k][n], .trans): matrix j = keys 8 (j & 1) (+ 16 off), column chunk 2 kk + (j >> 1) */
          const uint32_t want_v = cd_sm80_fwd_swz<CHUNKS>(off * 16 + 8 * (j & 1) + x, 2 * kk + (j >> 1));
          CHECK(aq[lane] == want_q, "W%d Q lane %d kk %d: %u, want %u", D, lane, kk, aq[lane], want_q);
          CHECK(ak[lane] == want_k, "W%d K lane %d kk %d: %u, want %u", D, lane, kk, ak[lane], want_k);
          CHECK(av[lane] == want_v, "W%d V lane %d dp %d: %u, want %u", D, lane, kk, av[lane], want_v);
        }
        check_banks(aq, "Q");
        check_banks(ak, "K");
        check_banks(av, "V");
      }
  }
  /* 3. the loader: group gi of the thread's chunk ld_c at + gi LC chunks from its first */
  constexpr int LC = cd_sm80_fwd_ld_chunks<D>::VALUE;
  for (int r = 0; r < 8; ++r)
    for (int ld_c = 0; ld_c < LC; ++ld_c)
      for (int gi = 0; gi < CHUNKS / LC; ++gi)
        CHECK(cd_sm80_fwd_swz<CHUNKS>(r, ld_c) + gi * LC * 16 == cd_sm80_fwd_swz<CHUNKS>(r, gi * LC + ld_c),
              "W%d loader: row %d chunk %d group %d", D, r, ld_c, gi);
  printf("W %3d: %2d chunks a row, swizzle group %d, loader groups of %2d: %s\n", D, CHUNKS,
         cd_sm80_swz_group<CHUNKS>::VALUE, LC, failures == before ? "ok" : "FAILED");
}

/* 4. one ROWS x D tile loaded by THREADS threads: every chunk once, at its swizzled offset */
template <int D, int ROWS, int THREADS> static void check_loader(const char *what) {
  constexpr int CHUNKS = D / 8, LC = cd_sm80_fwd_ld_chunks<D>::VALUE, GROUPS = CHUNKS / LC;
  constexpr int ROWS_PER_PASS = THREADS / LC;
  static_assert(THREADS % LC == 0 && ROWS_PER_PASS % 8 == 0 && ROWS % ROWS_PER_PASS == 0,
                "as cd_sm80_fwd_load_tile's static_assert");
  static unsigned char hits[256 * 32];
  memset(hits, 0, sizeof hits);
  for (int tid = 0; tid < THREADS; ++tid) {
    const int ld_r = tid / LC, ld_c = tid % LC;
    const uint32_t dst = cd_sm80_fwd_swz<CHUNKS>(ld_r, ld_c); /* the kernel's ld_off */
    for (int it = 0; it < ROWS / ROWS_PER_PASS; ++it)
      for (int gi = 0; gi < GROUPS; ++gi) {
        const uint32_t d = dst + it * ROWS_PER_PASS * CHUNKS * 16 + gi * LC * 16;
        const int r = ld_r + it * ROWS_PER_PASS, c = gi * LC + ld_c; /* the source chunk */
        CHECK(d == cd_sm80_fwd_swz<CHUNKS>(r, c), "%s W%d: tid %d row %d chunk %d at %u", what, D,
              tid, r, c, d);
        CHECK(d / 16 < (uint32_t)(ROWS * CHUNKS), "%s W%d: tid %d past the tile", what, D, tid);
        if (d / 16 < (uint32_t)(ROWS * CHUNKS)) hits[d / 16]++;
      }
  }
  for (int i = 0; i < ROWS * CHUNKS; ++i)
    CHECK(hits[i] == 1, "%s W%d %d threads: chunk slot %d written %d times", what, D, THREADS, i,
          hits[i]);
}

/* 4. a tile row of the table: its Q and K / V loads, and the epilogue's stores */
template <int D, bool SMALL, bool SOFTCAP> static void check_tile() {
  typedef cd_sm80_fwd_tile<D, SMALL, SOFTCAP> TL;
  constexpr int THREADS = TL::WARPS * 32, ROWS_W = TL::BLOCK_M / TL::WARPS, CHUNKS = D / 8;
  const int before = failures;
  check_loader<D, TL::BLOCK_M, THREADS>("Q");
  check_loader<D, TL::BLOCK_N, THREADS>("K/V");
  static unsigned char hits[256 * 32];
  memset(hits, 0, sizeof hits);
  for (int warp = 0; warp < TL::WARPS; ++warp)
    for (int lane = 0; lane < 32; ++lane)
      for (int it = 0; it < ROWS_W * CHUNKS / 32; ++it) { /* as the epilogue's store loop */
        const int idx = lane + it * 32;
        const int r = warp * ROWS_W + idx / CHUNKS, c = idx % CHUNKS;
        hits[cd_sm80_fwd_swz<CHUNKS>(r, c) / 16]++;
      }
  CHECK(ROWS_W * CHUNKS % 32 == 0, "W%d: a warp's rows are not whole store passes", D);
  for (int i = 0; i < TL::BLOCK_M * CHUNKS; ++i)
    CHECK(hits[i] == 1, "W%d epilogue: chunk slot %d stored %d times", D, i, hits[i]);
  printf("W %3d %s%s: %3d x %3d, %d warps (%2d rows): loads and stores %s\n", D,
         SMALL ? "small" : "large", SOFTCAP ? " softcap" : "", TL::BLOCK_M, TL::BLOCK_N, TL::WARPS,
         ROWS_W, failures == before ? "ok" : "FAILED");
}

/* 5. the pipelines as event programs (every warp runs the same one; barriers align them) */
enum { EV_ISSUE, EV_WAIT, EV_BAR, EV_READ };
enum { BUF_Q, BUF_K0, BUF_K1, BUF_V0, BUF_V1, BUF_COUNT };
typedef struct { int type, buf, tile; } event_t;
enum { PIPE_DOUBLE, PIPE_SINGLE, MUT_K_EARLY, MUT_V_BEFORE_BAR, MUT_NO_MID_WAIT };
/* the body's loop for key tiles n_last = tiles - 1 down to 0 (n_first), as events */
static int pipeline_program(int pipe, int tiles, event_t *ev) {
  int k = 0;
#define EV(t, b, n) (ev[k].type = (t), ev[k].buf = (b), ev[k].tile = (n), ++k)
  const int last = tiles - 1;
  EV(EV_ISSUE, BUF_Q, 0);
  EV(EV_ISSUE, BUF_K0, last);
  if (pipe == PIPE_DOUBLE) EV(EV_ISSUE, BUF_V0, last);
  for (int n = last, buf = 0; n >= 0; --n, buf ^= pipe == PIPE_DOUBLE) {
    const int kb = pipe == PIPE_DOUBLE ? BUF_K0 + buf : BUF_K0;
    const int vb = pipe == PIPE_DOUBLE ? BUF_V0 + buf : BUF_V0;
    EV(EV_WAIT, 0, 0);
    if (pipe == MUT_V_BEFORE_BAR) EV(EV_ISSUE, vb, n); /* while others may read V[n+1] */
    EV(EV_BAR, 0, 0);
    if (pipe == PIPE_DOUBLE) {
      if (n > 0) EV(EV_ISSUE, BUF_K0 + (buf ^ 1), n - 1), EV(EV_ISSUE, BUF_V0 + (buf ^ 1), n - 1);
    } else if (pipe != MUT_V_BEFORE_BAR) {
      EV(EV_ISSUE, vb, n);
    }
    if (pipe == MUT_K_EARLY && n > 0) EV(EV_ISSUE, BUF_K0, n - 1); /* before S reads K[n] */
    EV(EV_READ, BUF_Q, 0); /* S = Q K^T */
    EV(EV_READ, kb, n);
    if (pipe != PIPE_DOUBLE) {
      if (pipe != MUT_NO_MID_WAIT) EV(EV_WAIT, 0, 0);
      EV(EV_BAR, 0, 0);
      if (n > 0 && pipe != MUT_K_EARLY) EV(EV_ISSUE, BUF_K0, n - 1);
    }
    EV(EV_READ, vb, n); /* O += P V */
  }
  EV(EV_WAIT, 0, 0);
#undef EV
  return k;
}
/* 0 if every read sees its tile, visible and with no load into its buffer in flight, and no
 * barrier interval both reads a buffer and issues a load into it */
static int pipeline_hazards(const event_t *ev, int count) {
  int visible[BUF_COUNT], inflight[BUF_COUNT], waited[BUF_COUNT], read_seg[BUF_COUNT],
      issue_seg[BUF_COUNT], bad = 0;
  for (int b = 0; b < BUF_COUNT; ++b)
    visible[b] = inflight[b] = -1, waited[b] = 0, read_seg[b] = issue_seg[b] = 0;
  for (int i = 0; i < count; ++i) {
    const event_t e = ev[i];
    if (e.type == EV_ISSUE) {
      bad += inflight[e.buf] >= 0 || read_seg[e.buf];
      inflight[e.buf] = e.tile, waited[e.buf] = 0, issue_seg[e.buf] = 1;
    } else if (e.type == EV_WAIT) {
      for (int b = 0; b < BUF_COUNT; ++b) waited[b] = 1;
    } else if (e.type == EV_BAR) {
      for (int b = 0; b < BUF_COUNT; ++b) {
        if (inflight[b] >= 0 && waited[b]) visible[b] = inflight[b], inflight[b] = -1;
        read_seg[b] = issue_seg[b] = 0;
      }
    } else {
      bad += visible[e.buf] != e.tile || inflight[e.buf] >= 0 || issue_seg[e.buf];
      read_seg[e.buf] = 1;
    }
  }
  return bad;
}
template <int D> static void check_single_layout() {
  constexpr int BM = 64, BN = 64, ROW = D * 2;
  constexpr int SMEM = cd_sm80_fwd_smem_bytes<D, BM, BN, true>();
  const int q0 = 0, k0 = q0 + BM * ROW, v0 = k0 + 1 * BN * ROW; /* as cd_sm80_fwd_body, SINGLE */
  CHECK(v0 + BN * ROW == SMEM, "W%d single: Q + K + V end at %d, smem %d", D, v0 + BN * ROW, SMEM);
  CHECK(k0 >= q0 + BM * ROW && v0 >= k0 + BN * ROW, "W%d single: regions overlap", D);
}
static void check_pipelines() {
  const int before = failures;
  static event_t ev[256];
  check_single_layout<192>();
  check_single_layout<256>();
  constexpr int S256 = cd_sm80_fwd_smem_bytes<256, 64, 64, true>();
  constexpr int S192 = cd_sm80_fwd_smem_bytes<192, 64, 64, true>();
  CHECK(S256 == 96 * 1024 && S192 == 72 * 1024, "single-buffered tile sizes %d, %d", S256, S192);
  CHECK(2 * S256 <= 227 * 1024 && 2 * S256 > 163 * 1024 && 2 * S192 <= 163 * 1024,
        "two CTAs: W 256 on sm_90 only, W 192 on sm_80 and sm_90");
  for (int tiles = 1; tiles <= 6; ++tiles) {
    for (int pipe = PIPE_DOUBLE; pipe <= MUT_NO_MID_WAIT; ++pipe) {
      const int bad = pipeline_hazards(ev, pipeline_program(pipe, tiles, ev));
      const int mutant = pipe >= MUT_K_EARLY;
      /* with one tile there is no K[n-1] to misplace, and no V[n+1] to overwrite */
      if ((pipe == MUT_K_EARLY || pipe == MUT_V_BEFORE_BAR) && tiles == 1) continue;
      CHECK(mutant ? bad > 0 : bad == 0, "pipeline %d, %d tiles: %d hazards", pipe, tiles, bad);
    }
  }
  printf("single-buffered pipeline: layout and order %s\n", failures == before ? "ok" : "FAILED");
}

template <int D> static void check_tiles() {
  check_tile<D, false, false>();
  check_tile<D, false, true>();
  check_tile<D, true, false>();
  check_tile<D, true, true>();
}

int main() {
  check_width<64>();
  check_width<96>();
  check_width<128>();
  check_width<192>();
  check_width<256>();
  check_tiles<64>();
#if CUDADENT_SM80_W96
  check_tiles<96>();
#endif
  check_tiles<128>();
  check_tiles<192>();
  check_tiles<256>();
  check_pipelines();
  if (failures) fprintf(stderr, "%d failures\n", failures);
  return failures ? 1 : 0;
}
