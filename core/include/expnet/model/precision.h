// Arithmetic precision of the model's matrix products at inference:
// fp32 (the reference's), or bf16 (bfloat16 operands through oneDNN on CPUs
// with AVX512_BF16/AMX, tensor cores on CUDA; float32 accumulation, and
// LayerNorm, softmax and the rest stay float32). Figures: docs/performance.md
// ("bfloat16"). No LibTorch types here.
#pragma once

#include <string>

namespace expnet {

enum class Precision { FP32, BF16 };

// "fp32", "bf16" or "auto"; throws std::invalid_argument naming the allowed values.
// "auto" is bf16 where bf16_is_fast(device), else fp32.
Precision parse_precision(const std::string& name, const std::string& device);
std::string precision_name(Precision precision);

// Whether bfloat16 matrix products run in hardware on `device`: CUDA, or a CPU
// reporting avx512_bf16 or amx_bf16 (EXPNET_CPU_BF16=0/1 overrides the CPU's
// answer, for tests). `why` receives a sentence for expnet doctor.
bool bf16_is_fast(const std::string& device, std::string* why = nullptr);

// The precision to use for `requested` on `device`: bf16 where it is fast,
// otherwise fp32, with `note` saying why it fell back (empty when it did not).
Precision effective_precision(Precision requested, const std::string& device, std::string* note);

}  // namespace expnet
