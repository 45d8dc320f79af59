// A register-blocked float32 product of small matrices, inline so that it takes the
// width of each EXPNET_VECTOR_CLONES clone that calls it (vector_math.h), and the
// transposes that feed it. Shared by training's fused CPU kernels.
#pragma once

#include <cstdint>
#include <cstring>

namespace expnet::small_product {

// C (M x cols, ldc) = alpha * A (M x K, lda) . B (K x cols, ldb): blocks of R rows
// by 16 columns (then one of 8) summed in GCC vectors of 8 floats (one AVX2 register each; two
// SSE registers in the default clone), each step one broadcast of A and two
// multiply-adds per row. Written with vector types: GCC's own vectorisation of
// this loop nest used 4-wide registers and kept the sums on the stack.
using Lanes8 = float __attribute__((vector_size(32)));

template <int64_t R>
[[gnu::always_inline]] inline void product_rows(int64_t K, int64_t cols, const float* A, int64_t lda, const float* B,
                                                int64_t ldb, float* C, int64_t ldc, float alpha) {
  int64_t c0 = 0;
  for (; c0 + 16 <= cols; c0 += 16) {
    Lanes8 acc[R][2] = {};
    for (int64_t k = 0; k < K; ++k) {
      Lanes8 b0, b1;
      std::memcpy(&b0, B + k * ldb + c0, sizeof b0);
      std::memcpy(&b1, B + k * ldb + c0 + 8, sizeof b1);
      for (int64_t r = 0; r < R; ++r) {
        const float a = A[r * lda + k];
        acc[r][0] += a * b0;
        acc[r][1] += a * b1;
      }
    }
    for (int64_t r = 0; r < R; ++r)
      for (int64_t half = 0; half < 2; ++half) {
        const Lanes8 scaled = alpha * acc[r][half];
        std::memcpy(C + r * ldc + c0 + 8 * half, &scaled, sizeof scaled);
      }
  }
  if (c0 + 8 <= cols) {  // one block of 8 columns
    Lanes8 acc[R] = {};
    for (int64_t k = 0; k < K; ++k) {
      Lanes8 b0;
      std::memcpy(&b0, B + k * ldb + c0, sizeof b0);
      for (int64_t r = 0; r < R; ++r) acc[r] += A[r * lda + k] * b0;
    }
    for (int64_t r = 0; r < R; ++r) {
      const Lanes8 scaled = alpha * acc[r];
      std::memcpy(C + r * ldc + c0, &scaled, sizeof scaled);
    }
    c0 += 8;
  }
  if (c0 == cols) return;
  const int64_t width = cols - c0;  // fewer than 8 columns: plain loops
  float acc[R][16] = {};
  for (int64_t k = 0; k < K; ++k)
    for (int64_t r = 0; r < R; ++r)
      for (int64_t j = 0; j < width; ++j) acc[r][j] += A[r * lda + k] * B[k * ldb + c0 + j];
  for (int64_t r = 0; r < R; ++r)
    for (int64_t j = 0; j < width; ++j) C[r * ldc + c0 + j] = alpha * acc[r][j];
}

[[gnu::always_inline]] inline void product(int64_t M, int64_t K, int64_t cols, const float* A, int64_t lda,
                                           const float* B, int64_t ldb, float* C, int64_t ldc, float alpha = 1.f) {
  int64_t i = 0;
  for (; i + 4 <= M; i += 4) product_rows<4>(K, cols, A + i * lda, lda, B, ldb, C + i * ldc, ldc, alpha);
  for (; i < M; ++i) product_rows<1>(K, cols, A + i * lda, lda, B, ldb, C + i * ldc, ldc, alpha);
}

// rows x cols (row length ld) -> cols x rows (row length out_ld).
inline void transpose(int64_t rows, int64_t cols, const float* in, int64_t ld, float* out, int64_t out_ld) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[c * out_ld + r] = in[r * ld + c];
}

}  // namespace expnet::small_product
