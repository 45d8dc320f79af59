// Finding a state_dict in a checkpoint and loading it into a module by name.
#include <torch/torch.h>

#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "expnet/checkpoint/pickler.h"
#include "expnet/checkpoint/pth_file.h"
#include "expnet/checkpoint/state_dict.h"

namespace expnet {
namespace {

using pickle::Kind;
using pickle::Value;

bool all_tensors(const Value& dict) {
  if (!dict.is(Kind::Dict) || dict.entries.empty()) return false;
  for (const auto& [key, value] : dict.entries)
    if (!key->is(Kind::Str) || !value->is(Kind::Tensor)) return false;
  return true;
}

std::string list_names(const std::vector<std::string>& names, size_t max = 20) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < max; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > max) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

std::string shape_text(at::IntArrayRef sizes) {
  std::string out = "[";
  for (size_t i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + std::to_string(sizes[i]);
  return out + "]";
}

}  // namespace

StateDictRef find_state_dict(const Value& root, const std::string& source) {
  StateDictRef out;
  const Value* dict = nullptr;
  if (root.is(Kind::Dict)) {
    for (const char* wrapper : {"model_state_dict", "state_dict", "model"}) {
      const Value* inner = root.find(wrapper);
      if (inner && inner->is(Kind::Dict)) {
        dict = inner;
        out.wrapper = wrapper;
        break;
      }
    }
    if (!dict && all_tensors(root)) dict = &root;
  }
  if (!dict)
    throw std::runtime_error(source + ": no state_dict found (expected a dict of tensors, or one under "
                                      "'model_state_dict', 'state_dict' or 'model'); the file holds " +
                             pickle::describe(root, 1));
  for (const auto& [key, value] : dict->entries) {
    if (!key->is(Kind::Str))
      throw std::runtime_error(source + ": state_dict key " + pickle::describe(*key) + " is not a str");
    if (!value->is(Kind::Tensor))
      throw std::runtime_error(source + ": state_dict entry '" + key->text + "' is a " +
                               pickle::kind_name(value->kind) + ", not a tensor");
    out.entries.emplace_back(key->text, &value->tensor);
  }
  return out;
}

LoadReport load_state_dict(torch::nn::Module& module, const std::string& path, const LoadOptions& options) {
  PthFile file(path);
  const StateDictRef state = find_state_dict(file.root(), path);
  LoadReport report;
  report.wrapper = state.wrapper;

  std::unordered_map<std::string, at::Tensor> targets;
  std::vector<std::string> target_order;
  std::set<std::string> required;
  for (const auto& item : module.named_parameters(true)) {
    targets.emplace(item.key(), item.value());
    target_order.push_back(item.key());
    if (!options.require_parameters_under.empty() && starts_with(item.key(), options.require_parameters_under))
      required.insert(item.key());
  }
  for (const auto& item : module.named_buffers(true)) {
    targets.emplace(item.key(), item.value());
    target_order.push_back(item.key());
  }

  // Match names; collect problems before touching any tensor.
  std::vector<std::pair<const pickle::TensorInfo*, at::Tensor>> plan;
  std::set<std::string> seen;
  std::vector<std::string> mismatched;
  for (const auto& [raw_name, info] : state.entries) {
    const std::string name = options.add_prefix + raw_name;
    bool ignored = false;
    for (const auto& prefix : options.ignore_prefixes) ignored = ignored || starts_with(name, prefix);
    if (ignored) {
      report.ignored.push_back(raw_name);
      continue;
    }
    const auto it = targets.find(name);
    if (it == targets.end()) {
      report.unexpected.push_back(name);
      continue;
    }
    seen.insert(name);
    const at::Tensor& target = it->second;
    const bool same_shape = target.sizes() == at::IntArrayRef(info->sizes);
    const auto type = to_scalar_type(info->storage->dtype);
    const bool compatible_type = type == target.scalar_type() ||
                                 (at::isFloatingType(type) && at::isFloatingType(target.scalar_type()));
    if (!same_shape || !compatible_type) {
      mismatched.push_back(name + " (checkpoint " + pickle::dtype_name(info->storage->dtype) +
                           shape_text(info->sizes) + ", model " + dtype_name(target.scalar_type()) +
                           shape_text(target.sizes()) + ")");
      continue;
    }
    plan.emplace_back(info, target);
  }
  for (const auto& name : target_order)
    if (!seen.count(name)) report.missing.push_back(name);

  std::vector<std::string> missing_required;
  for (const auto& name : report.missing)
    if (required.count(name)) missing_required.push_back(name);

  std::string errors;
  if (!mismatched.empty()) errors += "\n  mis-shaped: " + list_names(mismatched);
  if (!missing_required.empty() && options.allow_missing)
    errors += "\n  missing parameters (required): " + list_names(missing_required);
  if (!report.missing.empty() && !options.allow_missing) errors += "\n  missing from the checkpoint: " + list_names(report.missing);
  if (!report.unexpected.empty() && !options.allow_unexpected)
    errors += "\n  not in the model: " + list_names(report.unexpected);
  if (!errors.empty())
    throw std::runtime_error(path + ": the checkpoint does not match the model (wrong --model config, or a "
                                    "checkpoint of another model?):" + errors);

  // Storage by storage: read one record, copy its views into the module, free it.
  std::map<std::string, std::vector<size_t>> by_storage;
  std::vector<std::string> storage_order;
  for (size_t i = 0; i < plan.size(); ++i) {
    auto& views = by_storage[plan[i].first->storage->key];
    if (views.empty()) storage_order.push_back(plan[i].first->storage->key);
    views.push_back(i);
  }
  torch::NoGradGuard no_grad;
  std::set<const pickle::TensorInfo*> non_finite;
  for (const auto& key : storage_order) {
    const auto& views = by_storage[key];
    const at::Tensor storage = file.read_storage(*plan[views.front()].first->storage);
    for (const size_t i : views) {
      const pickle::TensorInfo& info = *plan[i].first;
      const at::Tensor view = storage.as_strided(info.sizes, info.strides, info.storage_offset);
      // A NaN or an infinity decodes to confident nonsense ("right right right"): refused, never used.
      if (at::isFloatingType(view.scalar_type()) && !at::isfinite(view).all().item<bool>()) non_finite.insert(&info);
      plan[i].second.copy_(view);
    }
  }
  if (!non_finite.empty()) {
    std::vector<std::string> names;
    for (const auto& [name, info] : state.entries)
      if (non_finite.count(info)) names.push_back(name);
    throw std::runtime_error(path + ": " + std::to_string(names.size()) +
                             " tensors hold NaN or infinite values (" + list_names(names) +
                             "): the checkpoint is damaged or from a run that diverged; use an earlier checkpoint");
  }
  for (const auto& [name, info] : state.entries)
    if (seen.count(options.add_prefix + name)) report.loaded.push_back(options.add_prefix + name);
  return report;
}

LoadReport load_swin_backbone(torch::nn::Module& model, const std::string& path, const std::string& backbone_prefix) {
  LoadOptions options;
  options.add_prefix = backbone_prefix;
  options.ignore_prefixes = {backbone_prefix + "head."};
  options.allow_missing = true;
  // Backbone buffers (relative position index, attention masks) are computed by
  // the module; backbone parameters must all come from the file.
  options.require_parameters_under = backbone_prefix;
  return load_state_dict(model, path, options);
}

NamedTensors read_state_dict(const std::string& path, std::string* wrapper) {
  PthFile file(path);
  const StateDictRef state = find_state_dict(file.root(), path);
  if (wrapper) *wrapper = state.wrapper;
  NamedTensors out;
  out.reserve(state.entries.size());
  for (const auto& [name, info] : state.entries) out.emplace_back(name, file.tensor(*info));
  return out;
}

NamedTensors module_state(const torch::nn::Module& module) {
  NamedTensors out;
  for (const auto& item : module.named_modules("", true)) {
    const std::string prefix = item.key().empty() ? "" : item.key() + ".";
    for (const auto& p : item.value()->named_parameters(false)) out.emplace_back(prefix + p.key(), p.value().detach());
    for (const auto& b : item.value()->named_buffers(false)) out.emplace_back(prefix + b.key(), b.value().detach());
  }
  return out;
}

}  // namespace expnet
