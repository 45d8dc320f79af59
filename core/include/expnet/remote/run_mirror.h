// A local, read-only copy of a host's run store, fed by the lines of `expnet
// runs follow` (expnet/train/run_follow.h; docs/remote.md, "Mirrors"). It is a
// run store file of the same schema, with the host's run ids, so every reader of
// run stores (the Runs page, `expnet runs ...`) shows it like a local one; a
// table of its own names the host and the remote store and keeps the cursor,
// written in the same transaction as the rows, so a follow that resumes from it
// never loses or doubles a row. No Qt, no LibTorch.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace expnet {

// <data_dir>/remote/<host>/<first 16 hex digits of the remote store's SHA-256>.sqlite
std::string mirror_store_path(const std::string& host, const std::string& remote_store);

struct MirrorOrigin {
  std::string host, remote_store, cursor;  // cursor: "" before the first row
};
// The origin of a mirror store, or nullopt for any other file (a local run store).
std::optional<MirrorOrigin> mirror_origin(const std::string& store_path);

class RunMirror {
 public:
  // Opens (or creates) the mirror at `path`; refuses a file that is a mirror of
  // another host or store, or a local run store.
  RunMirror(const std::string& path, const std::string& host, const std::string& remote_store);
  ~RunMirror();
  RunMirror(const RunMirror&) = delete;
  RunMirror& operator=(const RunMirror&) = delete;

  const std::string& path() const;
  std::string cursor() const;  // the last applied line's
  // Applies follow lines in one transaction (rows, run and stage upserts, the
  // cursor). A "hello" of another follow version is refused naming both.
  void apply(const std::vector<std::string>& lines);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace expnet
