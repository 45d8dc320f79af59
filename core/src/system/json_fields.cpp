#include "system/json_fields.h"

#include <cmath>

namespace expnet::json_fields {

void refuse(const std::string& where, const std::string& expected, const Json& value) {
  std::string shown = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
  throw std::invalid_argument(where + " must be " + expected + ", not " + shown);
}

int64_t whole_number(const Json& value, const std::string& where, int64_t low, int64_t high) {
  const std::string range =
      low == std::numeric_limits<int64_t>::min() && high == std::numeric_limits<int64_t>::max()
          ? "a whole number"
          : "a whole number from " + std::to_string(low) + " to " + std::to_string(high);
  if (!value.is_number_integer()) refuse(where, "a whole number", value);
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(high)) refuse(where, range, value);
  const int64_t n = value.get<int64_t>();
  if (n < low || n > high) refuse(where, range, value);
  return n;
}

uint64_t unsigned_number(const Json& value, const std::string& where) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) return static_cast<uint64_t>(value.get<int64_t>());
  refuse(where, "a whole number >= 0", value);
}

double number(const Json& value, const std::string& where) {
  if (!value.is_number() || !std::isfinite(value.get<double>())) refuse(where, "a number", value);
  return value.get<double>();
}

bool boolean(const Json& value, const std::string& where) {
  if (!value.is_boolean()) refuse(where, "true or false", value);
  return value.get<bool>();
}

std::string text(const Json& value, const std::string& where) {
  if (!value.is_string()) refuse(where, "text (a JSON string)", value);
  return value.get<std::string>();
}

std::string alternatives(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

size_t choice(const Json& value, const std::vector<std::string>& names, const std::string& where) {
  for (size_t i = 0; value.is_string() && i < names.size(); ++i)
    if (value.get<std::string>() == names[i]) return i;
  refuse(where, alternatives(names), value);
}

}  // namespace expnet::json_fields
