// Typed values read from the JSON of the engine's config-like files (model and
// training configs, the decoding options a checkpoint carries, a feature
// cache's header), with one wording for every refusal:
//   "<where> must be <what is accepted>, not <the value as JSON>"
// `where` names the file and the key ("cfg stage 0: 'batch'"). Private to core.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace expnet::json_fields {

using Json = nlohmann::json;

// Throws std::invalid_argument in the one wording above.
[[noreturn]] void refuse(const std::string& where, const std::string& expected, const Json& value);

// A whole number within [low, high] ("a whole number from low to high" when out of it).
int64_t whole_number(const Json& value, const std::string& where, int64_t low = std::numeric_limits<int64_t>::min(),
                     int64_t high = std::numeric_limits<int64_t>::max());
uint64_t unsigned_number(const Json& value, const std::string& where);  // a whole number >= 0, within 64 bits
double number(const Json& value, const std::string& where);             // any finite JSON number
bool boolean(const Json& value, const std::string& where);              // true or false
std::string text(const Json& value, const std::string& where);          // a JSON string

// "a or b", "a, b or c": accepted texts as a refusal lists them.
std::string alternatives(const std::vector<std::string>& names);
// The index of the text among `names` ("<where> must be a, b or c, not <value>").
size_t choice(const Json& value, const std::vector<std::string>& names, const std::string& where);

template <typename T>
struct is_vector : std::false_type {};
template <typename U>
struct is_vector<std::vector<U>> : std::true_type {};

// The value as T: bool, a whole number type (checked against T's range), a
// floating type, std::string, or a std::vector of those ("<where>[i]" per item).
template <typename T>
T value(const Json& v, const std::string& where) {
  if constexpr (std::is_same_v<T, bool>) {
    return boolean(v, where);
  } else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) {
    const uint64_t n = unsigned_number(v, where);
    if (n > std::numeric_limits<T>::max()) refuse(where, "a whole number from 0 to " + std::to_string(std::numeric_limits<T>::max()), v);
    return static_cast<T>(n);
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(whole_number(v, where, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(number(v, where));
  } else if constexpr (std::is_same_v<T, std::string>) {
    return text(v, where);
  } else {
    static_assert(is_vector<T>::value, "json_fields::value: bool, numbers, std::string or std::vector of them");
    if (!v.is_array()) refuse(where, "a list", v);
    T out;
    for (size_t i = 0; i < v.size(); ++i)
      out.push_back(value<typename T::value_type>(v[i], where + "[" + std::to_string(i) + "]"));
    return out;
  }
}

// object[key] as T; "<where> '<key>' is missing" when the object has no such key.
template <typename T>
T member(const Json& object, const std::string& key, const std::string& where) {
  const auto it = object.is_object() ? object.find(key) : object.end();
  if (it == object.end()) throw std::invalid_argument(where + "'" + key + "' is missing");
  return value<T>(*it, where + "'" + key + "'");
}

}  // namespace expnet::json_fields
