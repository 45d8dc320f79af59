#include "expnet/remote/hosts.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <stdexcept>

#include "expnet/system/atomic_file.h"
#include "expnet/system/input_file.h"
#include "expnet/system/paths.h"

namespace expnet {

using nlohmann::json;

std::string hosts_file_path() { return (std::filesystem::path(config_dir()) / "hosts.json").string(); }

namespace {

bool has_control_or_space(const std::string& text) {
  for (const unsigned char c : text)
    if (c < 0x21 || c == 0x7f) return true;
  return false;
}

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

std::string text_field(const json& entry, const char* key, const std::string& where, const std::string& fallback) {
  const auto it = entry.find(key);
  if (it == entry.end()) return fallback;
  if (!it->is_string()) throw std::runtime_error(where + ": \"" + key + "\" must be a string");
  return it->get<std::string>();
}

}  // namespace

void check_host(const Host& host) {
  const std::string who = "host '" + host.name + "'";
  require(!host.name.empty() && host.name.size() <= 64 && host.name.front() != '-' && !has_control_or_space(host.name),
          "a host name must be 1 to 64 characters without spaces, not starting with '-', not '" + host.name + "'");
  require(!host.destination.empty() && host.destination.front() != '-' && !has_control_or_space(host.destination),
          who + ": the ssh destination must be user@host or an ssh alias, without spaces, not starting with '-', not '" +
              host.destination + "'");
  // The one word a remote shell sees: letters, digits and / . _ + - only.
  require(!host.program.empty() && host.program.front() != '-' &&
              host.program.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._+-") ==
                  std::string::npos,
          who + ": the program must be a name on the host's PATH or an absolute path of letters, digits and / . _ + -, "
                "not '" + host.program + "'");
  require(!host.work_dir.empty(), who + ": the work folder must not be empty");
  for (const unsigned char c : host.work_dir)
    require(c >= 0x20 && c != 0x7f, who + ": the work folder holds a control character");
  for (const auto& option : host.ssh_options)
    for (const unsigned char c : option) require(c >= 0x20 || c == '\t', who + ": an ssh option holds a control character");
}

std::vector<Host> load_hosts(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return {};
  const std::string text = read_input_file(path, "hosts file", 1 << 20);
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    throw std::runtime_error(path + ": not JSON (" + e.what() + "); fix it or remove it (`expnet hosts add` writes a new one)");
  }
  if (!doc.is_object() || doc.value("format", "") != "expnet-hosts" || !doc.contains("hosts") || !doc["hosts"].is_array())
    throw std::runtime_error(path + ": not an expnet hosts list ({\"format\": \"expnet-hosts\", \"hosts\": [...]})");
  std::vector<Host> hosts;
  for (size_t i = 0; i < doc["hosts"].size(); ++i) {
    const json& entry = doc["hosts"][i];
    const std::string where = path + ": hosts[" + std::to_string(i) + "]";
    if (!entry.is_object()) throw std::runtime_error(where + " must be an object");
    Host host;
    host.name = text_field(entry, "name", where, "");
    host.destination = text_field(entry, "destination", where, "");
    host.program = text_field(entry, "program", where, host.program);
    host.work_dir = text_field(entry, "work_dir", where, host.work_dir);
    if (entry.contains("ssh_options")) {
      if (!entry["ssh_options"].is_array()) throw std::runtime_error(where + ": \"ssh_options\" must be an array of strings");
      for (const auto& option : entry["ssh_options"]) {
        if (!option.is_string()) throw std::runtime_error(where + ": \"ssh_options\" must be an array of strings");
        host.ssh_options.push_back(option.get<std::string>());
      }
    }
    try {
      check_host(host);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(where + ": " + e.what());
    }
    hosts.push_back(std::move(host));
  }
  return hosts;
}

void save_hosts(const std::vector<Host>& hosts, const std::string& path) {
  json list = json::array();
  for (const auto& host : hosts) {
    check_host(host);
    list.push_back({{"name", host.name}, {"destination", host.destination}, {"program", host.program},
                    {"work_dir", host.work_dir}, {"ssh_options", host.ssh_options}});
  }
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  write_file_atomic(path, json({{"format", "expnet-hosts"}, {"version", 1}, {"hosts", std::move(list)}}).dump(1) + "\n");
}

Host resolve_host(const std::string& name, const std::string& path) {
  for (auto& host : load_hosts(path))
    if (host.name == name) return host;
  Host plain;
  plain.name = name;
  plain.destination = name;
  check_host(plain);
  return plain;
}

bool add_host(const Host& host, const std::string& path) {
  check_host(host);
  auto hosts = load_hosts(path);
  const auto same = std::find_if(hosts.begin(), hosts.end(), [&](const Host& h) { return h.name == host.name; });
  const bool replaced = same != hosts.end();
  if (replaced)
    *same = host;
  else
    hosts.push_back(host);
  save_hosts(hosts, path);
  return replaced;
}

void remove_host(const std::string& name, const std::string& path) {
  auto hosts = load_hosts(path);
  const auto kept = std::remove_if(hosts.begin(), hosts.end(), [&](const Host& h) { return h.name == name; });
  if (kept == hosts.end())
    throw std::runtime_error("no host named '" + name + "' in " + path + " (see `expnet hosts list`)");
  hosts.erase(kept, hosts.end());
  save_hosts(hosts, path);
}

}  // namespace expnet
