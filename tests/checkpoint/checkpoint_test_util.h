// Helpers shared by the checkpoint tests.
#pragma once

#include <QFile>
#include <QString>

#include <memory>
#include <string>

#include <torch/torch.h>

#include "sanitize/sanitize_test_util.h"

namespace checkpoint_test {

inline std::string read_bytes(const QString& path) { return sanitize_test::read_file(path); }

inline void write_bytes(const QString& path, const std::string& bytes) {
  QFile f(path);
  if (f.open(QIODevice::WriteOnly)) f.write(bytes.data(), static_cast<qint64>(bytes.size()));
}

// A module tree whose state_dict names are `names` ("a.b.0.weight"): floating
// entries become parameters, the others buffers, all zero-filled.
inline std::shared_ptr<torch::nn::Module> module_with(
    const std::vector<std::tuple<std::string, std::vector<int64_t>, at::ScalarType>>& entries) {
  auto root = std::make_shared<torch::nn::Module>();
  for (const auto& [name, sizes, type] : entries) {
    torch::nn::Module* node = root.get();
    size_t start = 0;
    for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', start)) {
      const std::string part = name.substr(start, dot - start);
      std::shared_ptr<torch::nn::Module> child;
      for (const auto& c : node->named_children())
        if (c.key() == part) child = c.value();
      if (!child) child = node->register_module(part, std::make_shared<torch::nn::Module>());
      node = child.get();
      start = dot + 1;
    }
    const auto leaf = name.substr(start);
    const auto value = torch::zeros(sizes, torch::TensorOptions().dtype(type));
    if (at::isFloatingType(type))
      node->register_parameter(leaf, value);
    else
      node->register_buffer(leaf, value);
  }
  return root;
}

// Bytes of a tensor in row-major order.
inline std::string tensor_bytes(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  if (c.numel() == 0) return {};
  return std::string(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
}

}  // namespace checkpoint_test
