/*
 * check_layout.cu - CPU check of the sm80 backward's index arithmetic at every width (no GPU):
 * the functions of bwd_parts.cuh / bwd_prepost.cuh marked CD_SM80_BWD_HD, called on the host.
 *
 *   nvcc -std=c++17 -Iinclude -Isrc dev/sm80_bwd/check_layout.cu -o /tmp/check_layout && /tmp/check_layout
 *
 * For W = 64, 96, 128, 192, 256 (96: dispatch.h's CUDADENT_SM80_W96 row, 12-chunk rows with
 * swizzle.cuh's 4-chunk key), W 256's large tile (64 x 64, dispatch.h CUDADENT_SM80_BWD_W256_M64)
 * and each of the five products of the main kernel:
 *   1. the warps' accumulator fragments cover the product's output exactly once (S, dP [BM][BN];
 *      dK, dV [BN][W], with the pair-interleaved columns at W 192; dQ [BM][W]);
 *   2. every ldmatrix row address a lane computes (base + row + imm + (x ^ imm): the XOR trick,
 *      with chunk moves 2 np B_IL for interleaved B operands) equals the swizzled address of the
 *      element the mma fragment layout needs there (PTX ISA "Matrix Fragments for
 *      mma.m16n8k16", ldmatrix and ldmatrix .trans), and the 8 rows of each 8x8 matrix lie in 8
 *      different 16-byte bank groups (no bank conflicts);
 *   3. the dQ accumulator's fragment order: cd_sm80_bwd_dq_frag(f) is where the main kernel's
 *      reduction f puts its c0, and the float4s cover [BM][W] once;
 *   4. the shared memory fits sm_80 (163 KiB; a large tile sm_90's 227 KiB), the copies split
 *      evenly over the threads and the pre kernel's threads cover a row;
 *   5. the swizzle keeps every row's chunks a permutation of its own chunks (W and BN rows).
 * Prints one line per width; exit status 1 on the first failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "kernels/sm80/bwd_parts.cuh"
#include "kernels/sm80/bwd_prepost.cuh"

static int failures = 0;
#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond)) {                                         \
      if (failures++ < 20) {                               \
        fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__);                      \
        fprintf(stderr, "\n");                             \
      }                                                    \
    }                                                      \
  } while (0)

/* one output fragment set: element (row, col) of a [rows][cols] output counted */
struct cover {
  int rows, cols;
  std::vector<int> n;
  cover(int r, int c) : rows(r), cols(c), n((size_t)r * c, 0) {}
  void add(int r, int c, const char *what) {
    CHECK(r >= 0 && r < rows && c >= 0 && c < cols, "%s: (%d, %d) outside [%d][%d]", what, r, c, rows, cols);
    if (r >= 0 && r < rows && c >= 0 && c < cols) ++n[(size_t)r * cols + c];
  }
  void once(const char *what) {
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) CHECK(n[(size_t)r * cols + c] == 1, "%s: (%d, %d) covered %d times", what, r, c, n[(size_t)r * cols + c]);
  }
};

/* Accumulator tile of one product: warps split WM x (8 / WM); fragment (mt, nt) of a warp at
 * rows row0 + 16 mt + g (+8), columns col0 + ncol(nt) + 2t (+1). */
template <int TD, int IL>
static void check_cover(int rows, int cols, int warps_m, int tm, int MT, int NT, const char *what) {
  cover cv(rows, cols);
  for (int warp = 0; warp < 8; ++warp) {
    const int row0 = (warp % warps_m) * tm;
    const int col0 = cd_sm80_bwd_wcol<TD, IL>(warp / warps_m);
    for (int mt = 0; mt < MT; ++mt)
      for (int nt = 0; nt < NT; ++nt)
        for (int lane = 0; lane < 32; ++lane)
          for (int e = 0; e < 4; ++e) {
            const int g = lane >> 2, t = lane & 3;
            const int c = col0 + cd_sm80_bwd_ncol<IL>(nt);
            cv.add(row0 + mt * 16 + g + 8 * (e >> 1), c + 2 * t + (e & 1), what);
          }
  }
  cv.once(what);
}

/* The 8 row addresses of each 8x8 matrix of one ldmatrix.x4: distinct 16-byte bank groups. */
static void check_banks(const uint32_t addr[32], const char *what) {
  for (int j = 0; j < 4; ++j) {
    int seen = 0;
    for (int r = 0; r < 8; ++r) seen |= 1 << ((addr[8 * j + r] >> 4) & 7);
    CHECK(seen == 0xff, "%s: matrix %d rows share a bank group (mask %x)", what, j, seen);
  }
}

/* A operand, MT fragments, KSTEPS: A(i, k) with i = i0 + 16 mt + ..., stored [i][k] (!A_T) or
 * [k][i] (A_T), rows of A_ROW elements. Matrix j of fragment (mt, ks): i block j & 1, k block j >> 1. */
template <int A_ROW, bool A_T>
static void check_a(int i0, int MT, int KSTEPS, const char *what) {
  for (int mt = 0; mt < MT; ++mt)
    for (int ks = 0; ks < KSTEPS; ++ks) {
      uint32_t addr[32];
      for (int lane = 0; lane < 32; ++lane) {
        const cd_sm80_bwd_ldm_t la = cd_sm80_bwd_ldm_a<A_ROW, A_T>(i0, lane);
        const int j = lane >> 3, r = lane & 7;
        uint32_t got, want;
        if (!A_T) {
          got = cd_sm80_bwd_ldm_addr<A_ROW>(0, la, mt * 16, ks * 2);
          want = cd_sm80_bwd_swz<A_ROW>(i0 + mt * 16 + 8 * (j & 1) + r, ks * 16 + 8 * (j >> 1));
        } else {
          got = cd_sm80_bwd_ldm_addr<A_ROW>(0, la, ks * 16, mt * 2);
          want = cd_sm80_bwd_swz<A_ROW>(ks * 16 + 8 * (j >> 1) + r, i0 + mt * 16 + 8 * (j & 1));
        }
        CHECK(got == want, "%s: A lane %d mt %d ks %d: address %u, want %u", what, lane, mt, ks, got, want);
        addr[lane] = got;
      }
      check_banks(addr, what);
    }
}

/* B operand, NT n8 tiles (pairs np), KSTEPS: B(k, n), n of tile nt at col0 + ncol<IL>(nt) (or
 * n0 + 8 nt where not interleaved), stored [n][k] (!B_T) or [k][n] (B_T). Matrix j of pair np:
 * B_T: k block j & 1, n tile 2 np + (j >> 1); !B_T: n tile 2 np + (j >> 1), k block j & 1. */
template <int B_ROW, bool B_T, int IL>
static void check_b(int n0, int NT, int KSTEPS, const char *what) {
  for (int np = 0; np < NT / 2; ++np)
    for (int ks = 0; ks < KSTEPS; ++ks) {
      uint32_t addr[32];
      for (int lane = 0; lane < 32; ++lane) {
        const cd_sm80_bwd_ldm_t lb = cd_sm80_bwd_ldm_b<B_ROW, B_T>(n0, lane);
        const int j = lane >> 3, r = lane & 7;
        const int ncol = n0 + cd_sm80_bwd_ncol<IL>(2 * np + (j >> 1)); /* first column of the n8 tile */
        uint32_t got, want;
        if (!B_T) {
          got = cd_sm80_bwd_ldm_addr<B_ROW>(0, lb, np * 16, ks * 2);
          want = cd_sm80_bwd_swz<B_ROW>(ncol + r, ks * 16 + 8 * (j & 1));
        } else {
          got = cd_sm80_bwd_ldm_addr<B_ROW>(0, lb, ks * 16, np * 2 * IL);
          want = cd_sm80_bwd_swz<B_ROW>(ks * 16 + 8 * (j & 1) + r, ncol);
        }
        CHECK(got == want, "%s: B lane %d np %d ks %d: address %u, want %u", what, lane, np, ks, got, want);
        addr[lane] = got;
      }
      check_banks(addr, what);
    }
}

template <int D, bool LARGE = false>
static void check_width() {
  typedef cd_sm80_bwd_tile<D, LARGE> Tl;
  typedef cd_sm80_bwd_shape<D, LARGE> Sh;
  constexpr int BM = Sh::BM, BN = Sh::BN;
  constexpr int S_MT = Sh::S_TM / 16, S_NT = Sh::S_TN / 8;
  constexpr int KV_MT = Sh::KV_TN / 16, KV_NT = Sh::KV_TD / 8;
  constexpr int Q_MT = Sh::Q_TM / 16, Q_NT = Sh::Q_TD / 8;
  const int before = failures;
  char what[96];

  /* 1. coverage: S/dP (never interleaved), dK/dV, dQ */
  snprintf(what, sizeof what, "W%d S", D);
  check_cover<Sh::S_TN, 1>(BM, BN, Tl::SDP_WARPS_M, Sh::S_TM, S_MT, S_NT, what);
  snprintf(what, sizeof what, "W%d dKV", D);
  check_cover<Sh::KV_TD, Sh::KV_IL>(BN, D, Tl::DKV_WARPS_N, Sh::KV_TN, KV_MT, KV_NT, what);
  snprintf(what, sizeof what, "W%d dQ", D);
  check_cover<Sh::Q_TD, Sh::Q_IL>(BM, D, Tl::DQ_WARPS_M, Sh::Q_TM, Q_MT, Q_NT, what);
  /* the interleaved mapping with IL = 1 is the contiguous one */
  CHECK((cd_sm80_bwd_wcol<Sh::KV_TD, 1>(1) == Sh::KV_TD && cd_sm80_bwd_ncol<1>(3) == 24), "IL 1 is contiguous");

  /* 2. ldmatrix addresses, per warp (the bwd.cu calls) */
  for (int warp = 0; warp < 8; ++warp) {
    const int s_row0 = (warp % Tl::SDP_WARPS_M) * Sh::S_TM, s_col0 = (warp / Tl::SDP_WARPS_M) * Sh::S_TN;
    const int kv_row0 = (warp % Tl::DKV_WARPS_N) * Sh::KV_TN;
    const int kv_col0 = cd_sm80_bwd_wcol<Sh::KV_TD, Sh::KV_IL>(warp / Tl::DKV_WARPS_N);
    const int q_row0 = (warp % Tl::DQ_WARPS_M) * Sh::Q_TM;
    const int q_col0 = cd_sm80_bwd_wcol<Sh::Q_TD, Sh::Q_IL>(warp / Tl::DQ_WARPS_M);
    snprintf(what, sizeof what, "W%d warp %d S = Q K^T", D, warp);
    check_a<D, false>(s_row0, S_MT, D / 16, what);
    check_b<D, false, 1>(s_col0, S_NT, D / 16, what);
    snprintf(what, sizeof what, "W%d warp %d dV = P^T dO", D, warp);
    check_a<BN, true>(kv_row0, KV_MT, BM / 16, what);
    check_b<D, true, Sh::KV_IL>(kv_col0, KV_NT, BM / 16, what);
    snprintf(what, sizeof what, "W%d warp %d dQ = dS K", D, warp);
    check_a<BN, false>(q_row0, Q_MT, BN / 16, what);
    check_b<D, true, Sh::Q_IL>(q_col0, Q_NT, BN / 16, what);
  }

  /* 3. dQ accumulator fragment order */
  {
    cover cv(BM, D);
    snprintf(what, sizeof what, "W%d dq_frag", D);
    for (int warp = 0; warp < 8; ++warp)
      for (int mt = 0; mt < Q_MT; ++mt)
        for (int nt = 0; nt < Q_NT; ++nt)
          for (int lane = 0; lane < 32; ++lane) {
            const int f = ((warp * Q_MT + mt) * Q_NT + nt) * 32 + lane; /* bwd.cu's reduction order */
            const int row0 = (warp % Tl::DQ_WARPS_M) * Sh::Q_TM, col0 = cd_sm80_bwd_wcol<Sh::Q_TD, Sh::Q_IL>(warp / Tl::DQ_WARPS_M);
            const int want_r = row0 + mt * 16 + (lane >> 2), want_c = col0 + cd_sm80_bwd_ncol<Sh::Q_IL>(nt) + 2 * (lane & 3);
            int r, c;
            cd_sm80_bwd_dq_frag<D, LARGE>(f, r, c);
            CHECK(r == want_r && c == want_c, "%s: f %d at (%d, %d), want (%d, %d)", what, f, r, c, want_r, want_c);
            CHECK(f < BM * D / 4, "%s: f %d past the block", what, f);
            cv.add(r, c, what); cv.add(r, c + 1, what); cv.add(r + 8, c, what); cv.add(r + 8, c + 1, what);
          }
    cv.once(what);
  }

  /* 5. swizzle: a permutation of each row's chunks (rows of D and of BN elements) */
  for (int row = 0; row < 8; ++row) {
    unsigned long long seen_d = 0, seen_n = 0;
    for (int c = 0; c < D / 8; ++c) {
      const uint32_t o = cd_sm80_bwd_swz<D>(row, 8 * c) - (uint32_t)(row * D * 2);
      CHECK(o % 16 == 0 && o / 16 < (uint32_t)(D / 8), "W%d swizzle: row %d chunk %d at byte %u", D, row, c, o);
      if (o / 16 < 64) seen_d |= 1ull << (o / 16);
    }
    for (int c = 0; c < BN / 8; ++c) seen_n |= 1ull << ((cd_sm80_bwd_swz<BN>(row, 8 * c) - row * BN * 2) / 16);
    CHECK(seen_d == (1ull << (D / 8)) - 1 && seen_n == (1ull << (BN / 8)) - 1, "W%d swizzle: row %d not a permutation", D, row);
  }

  /* 4. sizes */
  CHECK(Sh::SMEM <= (LARGE ? 227 : 163) * 1024, "W%d: %d bytes of shared memory", D, Sh::SMEM);
  /* the main kernel's loaders and stores: THREADS split the Q/dO and K/V tiles' chunks evenly;
   * the dQ convert's float4s likewise; the LSE / delta copies: one thread a row */
  CHECK((BM * D / 8) % Sh::THREADS == 0 && (BN * D / 8) % Sh::THREADS == 0 && (BM * D / 4) % Sh::THREADS == 0 &&
            BM <= Sh::THREADS, "W%d: copy split", D);
  CHECK(Sh::PRE_TPR * 8 >= D && 32 % Sh::PRE_TPR == 0, "W%d pre: %d threads a row", D, Sh::PRE_TPR);

  printf("W %3d%s: tile %3d x %3d, %d warps, smem %6d B (%.1f KiB), warp tiles S %dx%d dKV %dx%d (IL %d) dQ %dx%d "
         "(IL %d), dK+dV %d + dQ %d + S,dP %d fp32/thread: %s\n",
         D, LARGE ? " large" : "", BM, BN, Tl::WARPS, Sh::SMEM, Sh::SMEM / 1024.0, Sh::S_TM, Sh::S_TN, Sh::KV_TN, Sh::KV_TD, Sh::KV_IL,
         Sh::Q_TM, Sh::Q_TD, Sh::Q_IL, 2 * KV_MT * KV_NT * 4, Q_MT * Q_NT * 4, 2 * S_MT * S_NT * 4,
         failures == before ? "ok" : "FAILED");
}

int main() {
  check_width<64>();
  check_width<96>();
  check_width<128>();
  check_width<192>();
  check_width<256>();
  check_width<256, true>(); /* dispatch.h CUDADENT_SM80_BWD_W256_M64's 64 x 64 */
  if (failures) fprintf(stderr, "%d failures\n", failures);
  return failures ? 1 : 0;
}
