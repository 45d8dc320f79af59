#include "expnet/model/precision.h"

#include <ATen/Context.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace expnet {
namespace {

// The CPU's flags line of /proc/cpuinfo (x86 Linux); empty elsewhere. Read once:
// bf16_is_fast is asked at every product of a bf16 training step.
const std::string& cpu_flags() {
  static const std::string flags = [] {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("flags", 0) == 0) return " " + line.substr(line.find(':') + 1) + " ";
    return std::string();
  }();
  return flags;
}

bool has_flag(const std::string& flags, const std::string& flag) { return flags.find(" " + flag + " ") != std::string::npos; }

// The quantised engine for int8 Linears: oneDNN where LibTorch has it (the
// fastest here), else FBGEMM/x86; QNNPACK alone is slower than fp32.
std::optional<at::QEngine> int8_engine() {
  const auto engines = at::globalContext().supportedQEngines();
  for (const auto wanted : {at::QEngine::ONEDNN, at::QEngine::X86, at::QEngine::FBGEMM})
    if (std::find(engines.begin(), engines.end(), wanted) != engines.end()) return wanted;
  return std::nullopt;
}

}  // namespace

bool bf16_is_fast(const std::string& device, std::string* why) {
  if (device.rfind("cuda", 0) == 0) {
    if (why) *why = "bfloat16: CUDA device (tensor cores)";
    return true;
  }
  if (const char* forced = std::getenv("EXPNET_CPU_BF16"); forced && *forced) {
    const bool yes = std::string(forced) != "0";
    if (why) *why = std::string("bfloat16: ") + (yes ? "forced on" : "forced off") + " by EXPNET_CPU_BF16";
    return yes;
  }
  const std::string& flags = cpu_flags();
  const bool amx = has_flag(flags, "amx_bf16"), avx512 = has_flag(flags, "avx512_bf16");
  if (why)
    *why = amx      ? "bfloat16: the CPU has AMX (amx_bf16)"
           : avx512 ? "bfloat16: the CPU has avx512_bf16"
                    : "bfloat16: the CPU has neither avx512_bf16 nor amx_bf16, so bf16 would be emulated (slower than fp32)";
  return amx || avx512;
}

Precision parse_precision(const std::string& name, const std::string& device) {
  if (name == "fp32") return Precision::FP32;
  if (name == "bf16") return Precision::BF16;
  if (name == "int8") return Precision::INT8;
  if (name == "auto") return bf16_is_fast(device) ? Precision::BF16 : Precision::FP32;
  throw std::invalid_argument("unknown precision '" + name + "': use fp32, bf16, int8 or auto");
}

std::string precision_name(Precision precision) {
  switch (precision) {
    case Precision::BF16: return "bf16";
    case Precision::INT8: return "int8";
    default: return "fp32";
  }
}

std::vector<std::string> precision_names() { return {"fp32", "bf16", "int8", "auto"}; }

bool int8_is_available(const std::string& device, std::string* why) {
  if (device.rfind("cuda", 0) == 0) {
    if (why) *why = "int8: LibTorch's quantised Linear runs on the CPU only";
    return false;
  }
  if (const auto engine = int8_engine()) {
    if (why) *why = "int8: LibTorch's quantised engine " + std::string(*engine == at::QEngine::ONEDNN ? "oneDNN" : "FBGEMM/x86");
    return true;
  }
  if (why) *why = "int8: this LibTorch has no oneDNN or FBGEMM quantised engine (QNNPACK alone is slower than fp32 here)";
  return false;
}

bool int8_reduce_range() {
  static const bool reduce = [] {
    const std::string& flags = cpu_flags();
    return !has_flag(flags, "avx512_vnni") && !has_flag(flags, "avx_vnni") && !has_flag(flags, "amx_int8");
  }();
  return reduce;
}

void use_int8_engine() {
  const auto engine = int8_engine();
  if (!engine)
    throw std::runtime_error("int8: this LibTorch has no oneDNN or FBGEMM quantised engine; use --precision fp32 or bf16");
  if (at::globalContext().qEngine() != *engine) at::globalContext().setQEngine(*engine);
}

Precision effective_precision(Precision requested, const std::string& device, std::string* note) {
  if (note) note->clear();
  if (requested == Precision::FP32) return requested;
  std::string why;
  if (requested == Precision::INT8 ? int8_is_available(device, &why) : bf16_is_fast(device, &why)) return requested;
  if (note) *note = why + "; running in fp32 instead";
  return Precision::FP32;
}

}  // namespace expnet
