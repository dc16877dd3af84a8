/*
 * swizzle.cuh - the XOR key of the portable kernels' shared-memory tiles (fwd_kernel.cuh,
 * bwd_parts.cuh): every tile is row-major with its rows split in 16-byte chunks, and logical
 * chunk c of row r sits at chunk c ^ key(r) of that row, so that the 8 row addresses of an
 * ldmatrix 8x8 matrix (8 consecutive rows, one logical chunk, the first row a multiple of 8) hit
 * the 8 different 16-byte bank groups of a 128-byte line.
 *   Rows of a multiple of 8 chunks (W 64, 128, 192, 256; the backward's P / dS tiles): each row
 *     starts on a 128-byte boundary, key = r % 8 (GROUP 8: the key moves a chunk inside its
 *     group of 8).
 *   Rows of 8 k + 4 chunks (W 96: 12 chunks, 192 bytes): row r starts at bank group 4 (r % 2),
 *     so the key only has to spread each parity's 4 rows over 4 bank groups: key = (r / 2) % 4
 *     (GROUP 4: the chunk moves inside its group of 4; FlashAttention-2's Swizzle<2, 3, 3> for
 *     its 32-column d96 atoms). Chunk c ^ key stays below 8 k + 4.
 * The key is a XOR on the chunk index, so the address of chunk c ^ m (m with bits disjoint from
 * a lane's own chunk bits) is the lane's swizzled chunk ^ m: the kernels' one-XOR address moves
 * hold for both kinds of rows.
 */
#ifndef CUDADENT_SM80_SWIZZLE_CUH
#define CUDADENT_SM80_SWIZZLE_CUH

/* Chunks of the swizzle group of a row of CHUNKS chunks: 8, or 4 for 8 k + 4 chunks. */
template <int CHUNKS> struct cd_sm80_swz_group {
  static_assert(CHUNKS % 8 == 0 || CHUNKS % 8 == 4, "rows of 4 k chunks, k even or odd");
  static constexpr int VALUE = CHUNKS % 8 == 0 ? 8 : 4;
};

/* The key of row r (see the header). */
template <int CHUNKS> __host__ __device__ __forceinline__ int cd_sm80_swz_key(int r) {
  return cd_sm80_swz_group<CHUNKS>::VALUE == 8 ? (r & 7) : ((r >> 1) & 3);
}

#endif /* CUDADENT_SM80_SWIZZLE_CUH */
