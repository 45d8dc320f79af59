#include "expnet/train/tfevents_writer.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <map>
#include <ostream>
#include <stdexcept>
#include <vector>

#include "expnet/system/atomic_file.h"

namespace expnet {
namespace {

// The engine links no libprotobuf and Debian 12 packages no C++ CRC-32C, so the
// few protobuf wire-format pieces and the CRC-32C table TFRecord needs are here.

// CRC-32C (Castagnoli), reflected polynomial 0x82F63B78, one table byte at a time.
constexpr std::array<uint32_t, 256> make_crc32c_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    table[i] = crc;
  }
  return table;
}
constexpr auto kCrc32cTable = make_crc32c_table();

uint32_t crc32c(const std::string& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const char c : bytes) crc = kCrc32cTable[(crc ^ static_cast<unsigned char>(c)) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

// TFRecord stores CRCs masked so that a CRC of data holding CRCs stays well distributed.
uint32_t masked_crc32c(const std::string& bytes) {
  const uint32_t crc = crc32c(bytes);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

void append_little_endian(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

// Protobuf wire format: a field is a varint key (number << 3 | wire type), then its value.
enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void append_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7F) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
}

void append_key(std::string& out, uint32_t field, WireType type) { append_varint(out, (uint64_t{field} << 3) | type); }

void append_bytes_field(std::string& out, uint32_t field, const std::string& bytes) {
  append_key(out, field, kLengthDelimited);
  append_varint(out, bytes.size());
  out += bytes;
}

void append_double_field(std::string& out, uint32_t field, double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  append_key(out, field, kFixed64);
  append_little_endian(out, bits, 8);
}

void append_float_field(std::string& out, uint32_t field, float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  append_key(out, field, kFixed32);
  append_little_endian(out, bits, 4);
}

// tensorboard/compat/proto: Event{double wall_time = 1; int64 step = 2; oneof what
// {string file_version = 3; Summary summary = 5}}, Summary{repeated Value value = 1},
// Value{string tag = 1; oneof value {float simple_value = 2}}. Fields in number
// order and proto3 zero scalars left out, as protobuf itself serialises them.
std::string event_header(double wall_time, int64_t step) {
  std::string event;
  if (wall_time != 0) append_double_field(event, 1, wall_time);
  if (step != 0) {
    append_key(event, 2, kVarint);
    append_varint(event, static_cast<uint64_t>(step));  // int64: two's complement, as protobuf does
  }
  return event;
}

std::string file_version_event(double wall_time) {
  std::string event = event_header(wall_time, 0);
  append_bytes_field(event, 3, "brain.Event:2");
  return event;
}

struct Scalar {
  std::string tag;
  float value;
};

std::string summary_event(double wall_time, int64_t step, const std::vector<Scalar>& scalars) {
  std::string summary;
  for (const auto& scalar : scalars) {
    std::string value;
    append_bytes_field(value, 1, scalar.tag);
    append_float_field(value, 2, scalar.value);
    append_bytes_field(summary, 1, value);
  }
  std::string event = event_header(wall_time, step);
  append_bytes_field(event, 5, summary);
  return event;
}

// TFRecord: uint64 length, masked CRC of the length bytes, data, masked CRC of the data.
void write_record(std::ostream& out, const std::string& data) {
  std::string length;
  append_little_endian(length, data.size(), 8);
  std::string framed = length;
  append_little_endian(framed, masked_crc32c(length), 4);
  framed += data;
  append_little_endian(framed, masked_crc32c(data), 4);
  out.write(framed.data(), static_cast<std::streamsize>(framed.size()));
}

// RunInfo::created_at is SQLite's strftime('%Y-%m-%dT%H:%M:%SZ'), UTC.
int64_t utc_epoch_seconds(const RunInfo& run) {
  std::tm tm{};
  char zone = 0;
  if (std::sscanf(run.created_at.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &zone) != 7 ||
      zone != 'Z')
    throw std::runtime_error("run '" + run.name + "': created_at '" + run.created_at +
                             "' is not YYYY-mm-ddTHH:MM:SSZ; the run store is damaged (see expnet runs show)");
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&tm));
}

// File-name safe: letters, digits, '.', '-' and '_' kept, anything else '_'.
std::string sanitised(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '-' || c == '_';
    if (!keep) c = '_';
  }
  return out;
}

std::string hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

void create_folder(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error || !std::filesystem::is_directory(dir))
    throw std::runtime_error("cannot create the TensorBoard folder '" + dir + "': " +
                             (error ? error.message() : std::string("a file of that name is in the way")) +
                             "; pass --tensorboard a folder you can write to");
}

}  // namespace

TensorboardExport write_tensorboard_events(const RunStore& store, const RunInfo& run, const std::string& dir) {
  const auto steps = store.steps(run.id);
  auto validations = store.validations(run.id);
  std::stable_sort(validations.begin(), validations.end(), [](const auto& a, const auto& b) { return a.step < b.step; });

  const int64_t created = utc_epoch_seconds(run);
  auto wall_time = [created](double wall_s) { return static_cast<double>(created) + (wall_s > 0 ? wall_s : 0.0); };
  // A validation follows the step it is logged at: it takes that step's time.
  std::map<int64_t, double> wall_s_at_step;
  for (const auto& s : steps) wall_s_at_step[s.step] = s.wall_s;
  auto validation_wall_time = [&](int64_t step) {
    auto after = wall_s_at_step.upper_bound(step);
    return after == wall_s_at_step.begin() ? wall_time(0) : wall_time(std::prev(after)->second);
  };

  std::vector<std::string> events{file_version_event(wall_time(0))};
  int64_t scalars = 0;
  auto add = [&](std::vector<Scalar>& out, const char* tag, double value) {
    // Left out rather than written: a NaN or inf point would wreck the chart's axis.
    if (!std::isfinite(value)) return;
    out.push_back({tag, static_cast<float>(value)});
    ++scalars;
  };
  // Steps and validations merged by step, so each tag's steps only go up in the file.
  size_t next_validation = 0;
  auto add_validations_up_to = [&](int64_t step) {
    for (; next_validation < validations.size() && validations[next_validation].step <= step; ++next_validation) {
      const auto& v = validations[next_validation];
      std::vector<Scalar> values;
      add(values, "val/CIDEr", v.cider_d);
      add(values, "val/Bleu_4", v.bleu4);
      if (!values.empty()) events.push_back(summary_event(validation_wall_time(v.step), v.step, values));
    }
  };
  for (const auto& s : steps) {
    add_validations_up_to(s.step - 1);
    std::vector<Scalar> values;
    add(values, "train/loss", s.loss);
    add(values, "train/lr", s.lr);
    add(values, "train/images_per_s", s.images_per_s);
    if (!values.empty()) events.push_back(summary_event(wall_time(s.wall_s), s.step, values));
  }
  add_validations_up_to(INT64_MAX);

  create_folder(dir);
  // Named by the run's start rather than the export's time, so exporting again
  // replaces this file instead of showing every point twice.
  const std::string path = (std::filesystem::path(dir) / ("events.out.tfevents." + std::to_string(created) + "." +
                                                          sanitised(hostname()) + "." + sanitised(run.name)))
                               .string();
  try {
    write_file_atomic(path, [&](std::ostream& out) {
      for (const auto& event : events) write_record(out, event);
    });
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string(e.what()) + "; pass --tensorboard a folder you can write to");
  }
  return {path, scalars, static_cast<int64_t>(events.size())};
}

std::string tensorboard_run_folder(const RunInfo& run) { return sanitised(run.name); }

}  // namespace expnet
