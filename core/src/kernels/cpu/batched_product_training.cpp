// See batched_product_training.h. Per matrix t: C_t = A_t B_t; backward
// dA_t = dC_t B_t^T and dB_t = A_t^T dC_t, each a product of strided views.
#include "kernels/cpu/batched_product_training.h"

#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/small_product.h"
#include "kernels/cpu/vector_math.h"

namespace expnet {
namespace {

// One matrix of a batch, read through its strides.
struct View {
  const float* data = nullptr;
  int64_t rows = 0, cols = 0, row_stride = 0, col_stride = 0;
  View transposed() const { return {data, cols, rows, col_stride, row_stride}; }
};

// The batch of a tensor's last two dimensions: matrix t starts at data + offsets[t].
struct Batch {
  const float* data;
  int64_t rows, cols, row_stride, col_stride;
  std::vector<int64_t> offsets;
  explicit Batch(const at::Tensor& t)
      : data(t.data_ptr<float>()),
        rows(t.size(-2)),
        cols(t.size(-1)),
        row_stride(t.stride(-2)),
        col_stride(t.stride(-1)) {
    const int64_t batch_dims = t.dim() - 2;
    int64_t count = 1;
    for (int64_t d = 0; d < batch_dims; ++d) count *= t.size(d);
    offsets.resize(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      int64_t rest = i, offset = 0;
      for (int64_t d = batch_dims - 1; d >= 0; --d) {
        offset += (rest % t.size(d)) * t.stride(d);
        rest /= t.size(d);
      }
      offsets[static_cast<size_t>(i)] = offset;
    }
  }
  View matrix(size_t t) const { return {data + offsets[t], rows, cols, row_stride, col_stride}; }
};

// Operands packed where the product kernel cannot read them as they are: A needs
// contiguous rows; B contiguous rows of a whole number of 8-column blocks (zeros
// after its last column), the result then landing in `wide` first.
struct Scratch {
  std::vector<float> a, b, wide;
};

void pack(const View& v, int64_t ld, float* out) {
  for (int64_t r = 0; r < v.rows; ++r)
    for (int64_t c = 0; c < v.cols; ++c) out[r * ld + c] = v.data[r * v.row_stride + c * v.col_stride];
}

// out (A.rows x B.cols, contiguous) = A B.
EXPNET_VECTOR_CLONES void product_task(const View& A, const View& B, float* out, Scratch& scratch) {
  const int64_t M = A.rows, K = A.cols, N = B.cols;
  const float* a = A.data;
  int64_t lda = A.row_stride;
  if (A.col_stride != 1) {
    scratch.a.resize(static_cast<size_t>(M * K));
    pack(A, K, scratch.a.data());
    a = scratch.a.data();
    lda = K;
  }
  if (B.col_stride == 1 && N % 8 == 0) {
    small_product::product(M, K, N, a, lda, B.data, B.row_stride, out, N);
    return;
  }
  const int64_t padded = (N + 7) / 8 * 8;
  scratch.b.assign(static_cast<size_t>(K * padded), 0.f);
  pack(B, padded, scratch.b.data());
  scratch.wide.resize(static_cast<size_t>(M * padded));
  small_product::product(M, K, padded, a, lda, scratch.b.data(), padded, scratch.wide.data(), padded);
  for (int64_t r = 0; r < M; ++r) std::copy_n(scratch.wide.data() + r * padded, N, out + r * N);
}

// Tasks of about 64k multiply-adds at least: one small matrix is microseconds of work.
int64_t grain_of(int64_t M, int64_t K, int64_t N) {
  return std::max<int64_t>(1, 65536 / std::max<int64_t>(1, M * K * N));
}

// out_t = left(t) right(t) for every matrix t, out contiguous (rows x cols per matrix).
template <typename Left, typename Right>
void products(int64_t count, int64_t rows, int64_t inner, int64_t cols, float* out, Left left, Right right) {
  at::parallel_for(0, count, grain_of(rows, inner, cols), [&](int64_t first, int64_t last) {
    Scratch scratch;
    for (int64_t t = first; t < last; ++t)
      product_task(left(static_cast<size_t>(t)), right(static_cast<size_t>(t)), out + t * rows * cols, scratch);
  });
}

at::IntArrayRef batch_sizes(const at::Tensor& t) { return t.sizes().slice(0, static_cast<size_t>(t.dim() - 2)); }

struct BatchedProduct : torch::autograd::Function<BatchedProduct> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& a, const at::Tensor& b) {
    std::vector<int64_t> shape(batch_sizes(a).begin(), batch_sizes(a).end());
    shape.push_back(a.size(-2));
    shape.push_back(b.size(-1));
    auto out = at::empty(shape, a.options());
    const Batch left(a), right(b);
    products(
        static_cast<int64_t>(left.offsets.size()), left.rows, left.cols, right.cols, out.data_ptr<float>(),
        [&](size_t t) { return left.matrix(t); }, [&](size_t t) { return right.matrix(t); });
    ctx->save_for_backward({a, b});
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto grad_out = grads[0].contiguous();  // alive while `grad` reads it
    const auto operands = ctx->get_saved_variables();
    const at::Tensor &a = operands[0], &b = operands[1];
    const Batch left(a), right(b), grad(grad_out);
    const auto count = static_cast<int64_t>(left.offsets.size());
    at::Tensor grad_a, grad_b;
    if (ctx->needs_input_grad(0)) {  // dA = dC B^T
      grad_a = at::empty(a.sizes(), a.options().memory_format(at::MemoryFormat::Contiguous));
      products(
          count, left.rows, right.cols, left.cols, grad_a.data_ptr<float>(), [&](size_t t) { return grad.matrix(t); },
          [&](size_t t) { return right.matrix(t).transposed(); });
    }
    if (ctx->needs_input_grad(1)) {  // dB = A^T dC
      grad_b = at::empty(b.sizes(), b.options().memory_format(at::MemoryFormat::Contiguous));
      products(
          count, right.rows, left.rows, right.cols, grad_b.data_ptr<float>(),
          [&](size_t t) { return left.matrix(t).transposed(); }, [&](size_t t) { return grad.matrix(t); });
    }
    return {grad_a, grad_b};
  }
};

bool float_cpu(const at::Tensor& t) { return t.defined() && t.device().is_cpu() && t.scalar_type() == at::kFloat; }

}  // namespace

bool batched_product_training_applies(const at::Tensor& a, const at::Tensor& b) {
  if (!float_cpu(a) || !float_cpu(b) || a.dim() < 3 || a.dim() != b.dim()) return false;
  if (batch_sizes(a) != batch_sizes(b) || a.size(-1) != b.size(-2)) return false;
  return a.numel() > 0 && b.numel() > 0;
}

at::Tensor batched_product_training(const at::Tensor& a, const at::Tensor& b) { return BatchedProduct::apply(a, b); }

}  // namespace expnet
