// Arithmetic precision of the model's matrix products at inference:
// fp32 (the reference's), bf16 (bfloat16 operands through oneDNN on CPUs
// with AVX512_BF16/AMX, tensor cores on CUDA; float32 accumulation, and
// LayerNorm, softmax and the rest stay float32), or int8 (CPU: LibTorch's
// dynamically quantised Linear through oneDNN, weights int8 per output channel,
// activations quantised per product). Figures: docs/performance.md
// ("bfloat16", "int8"). No LibTorch types here.
#pragma once

#include <string>
#include <vector>

namespace expnet {

enum class Precision { FP32, BF16, INT8 };

// "fp32", "bf16", "int8" or "auto"; throws std::invalid_argument naming the
// allowed values. "auto" is bf16 where bf16_is_fast(device), else fp32.
Precision parse_precision(const std::string& name, const std::string& device);
std::string precision_name(Precision precision);
std::vector<std::string> precision_names();  // what parse_precision takes, "auto" last

// Whether LibTorch here has a quantised engine for int8 Linears on the CPU
// (oneDNN, or FBGEMM/x86); `why` receives a sentence.
bool int8_is_available(const std::string& device, std::string* why = nullptr);
// Makes that engine LibTorch's current one (int8 Linears are packed for it);
// throws std::runtime_error when there is none.
void use_int8_engine();
// Whether int8 activations use 7 bits: on CPUs without VNNI the u8 x s8 products
// go through 16-bit sums that saturate with full 8-bit activations (as PyTorch's
// reduce_range on x86); with VNNI (avx512_vnni, avx_vnni, amx_int8) all 8 bits.
bool int8_reduce_range();

// Whether bfloat16 matrix products run in hardware on `device`: CUDA, or a CPU
// reporting avx512_bf16 or amx_bf16 (EXPNET_CPU_BF16=0/1 overrides the CPU's
// answer, for tests). `why` receives a sentence for expnet doctor.
bool bf16_is_fast(const std::string& device, std::string* why = nullptr);

// The precision to use for `requested` on `device`: bf16 where it is fast,
// int8 where it is available, otherwise fp32, with `note` saying why it fell
// back (empty when it did not).
Precision effective_precision(Precision requested, const std::string& device, std::string* note);

}  // namespace expnet
