// Zip entries through minizip (the central directory, local headers) and
// zlib (proving deflated sizes), checked before LibTorch's reader sees the file.
#include "expnet/checkpoint/zip_entries.h"

#include <minizip/unzip.h>
#include <zlib.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <set>

namespace expnet {
namespace {

constexpr const char* kFix =
    "the archive is corrupt or hostile; torch.save writes records uncompressed, so re-save the checkpoint with "
    "torch.save (or re-zip it with `zip -0`)";

[[noreturn]] void fail(const std::string& source, const std::string& why) {
  throw ZipError(source + ": " + why + "; " + kFix);
}

// minizip reads the archive through these, from a buffer or a file (pread).
// A short read is an error: minizip's own file functions take EOF inside a
// header for zeros, which would accept a truncated archive.
struct Input {
  std::string_view data;  // the archive, or empty with fd
  int fd = -1;
  uint64_t size = 0, pos = 0;
  bool short_read = false;
};

voidpf ZCALLBACK input_open(voidpf opaque, const void*, int) { return opaque; }
uLong ZCALLBACK input_read(voidpf, voidpf stream, void* out, uLong size) {
  auto* in = static_cast<Input*>(stream);
  const uint64_t n = in->pos >= in->size ? 0 : std::min<uint64_t>(size, in->size - in->pos);
  uint64_t got = n;
  if (in->fd < 0) {
    if (n) std::memcpy(out, in->data.data() + in->pos, n);
  } else {
    const ssize_t r = n ? ::pread(in->fd, out, n, static_cast<off_t>(in->pos)) : 0;
    got = r < 0 ? 0 : static_cast<uint64_t>(r);
  }
  in->pos += got;
  if (got < size) in->short_read = true;
  return static_cast<uLong>(got);
}
uLong ZCALLBACK input_write(voidpf, voidpf, const void*, uLong) { return 0; }
ZPOS64_T ZCALLBACK input_tell(voidpf, voidpf stream) { return static_cast<Input*>(stream)->pos; }
long ZCALLBACK input_seek(voidpf, voidpf stream, ZPOS64_T offset, int origin) {
  auto* in = static_cast<Input*>(stream);
  uint64_t base = 0;
  if (origin == ZLIB_FILEFUNC_SEEK_CUR) base = in->pos;
  else if (origin == ZLIB_FILEFUNC_SEEK_END) base = in->size;
  else if (origin != ZLIB_FILEFUNC_SEEK_SET) return -1;
  // minizip seeks back with a negative offset in two's complement, as fseeko takes it.
  const uint64_t target = base + offset;  // wraps like the signed sum
  if (static_cast<int64_t>(offset) < 0 ? target > base : target < base) return -1;
  if (target > in->size) return -1;
  in->pos = target;
  return 0;
}
int ZCALLBACK input_close(voidpf, voidpf) { return 0; }
int ZCALLBACK input_error(voidpf, voidpf stream) { return static_cast<Input*>(stream)->short_read ? 1 : 0; }

// Debian's minizip 1.1 leaves the 32-bit marker 0xFFFFFFFF where a zip64
// central directory keeps the real size in its extended-information extra
// field (id 0x0001: inflated size, then archived size, each present only when
// its 32-bit field is the marker; APPNOTE 4.5.3). Python's zipfile writes
// such entries from 2 GiB on. Returns false when the field is missing.
bool zip64_sizes(std::string_view extra, unz_file_info64& info) {
  constexpr uint64_t kMarker = 0xFFFFFFFFu;
  const auto le = [](std::string_view b, size_t at, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(b[at + i])) << (8 * i);
    return v;
  };
  for (size_t at = 0; at + 4 <= extra.size();) {
    const uint64_t id = le(extra, at, 2), length = le(extra, at + 2, 2);
    if (length > extra.size() - at - 4) return false;
    if (id == 1) {
      size_t field = at + 4;
      const size_t end = field + length;
      for (ZPOS64_T* value : {&info.uncompressed_size, &info.compressed_size}) {
        if (*value != kMarker) continue;
        if (end - field < 8) return false;
        *value = le(extra, field, 8);
        field += 8;
      }
      return true;
    }
    at += 4 + length;
  }
  return false;
}

struct Closer {
  void operator()(void* zip) const { unzClose(zip); }
};
using Archive = std::unique_ptr<void, Closer>;

// Inflates one deflated entry in constant memory: its data must end exactly
// at the declared size, with the declared CRC.
void prove_deflated(unzFile zip, const unz_file_info64& info, const std::string& where, const std::string& source) {
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) fail(source, where + ": zlib could not start");
  std::unique_ptr<z_stream, int (*)(z_streamp)> guard(&z, inflateEnd);
  static thread_local unsigned char in[1 << 16], out[1 << 16];
  uint64_t inflated = 0;
  uLong crc = crc32(0, nullptr, 0);
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    const int n = unzReadCurrentFile(zip, in, sizeof in);
    if (n < 0) fail(source, where + ": its data cannot be read (truncated archive?)");
    if (n == 0) fail(source, where + ": its deflate stream ends early (truncated or corrupt)");
    z.next_in = in;
    z.avail_in = static_cast<uInt>(n);
    do {  // until zlib leaves output room: then it needs more input, or the stream ended
      z.next_out = out;
      z.avail_out = sizeof out;
      status = inflate(&z, Z_NO_FLUSH);
      if (status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR)
        fail(source, where + ": its deflate stream is corrupt (" + (z.msg ? z.msg : "zlib error") + ")");
      const uint64_t produced = sizeof out - z.avail_out;
      inflated += produced;
      if (inflated > info.uncompressed_size)
        fail(source, where + ": it inflates past its declared size of " + std::to_string(info.uncompressed_size) +
                         " bytes");
      crc = crc32(crc, out, static_cast<uInt>(produced));
    } while (status != Z_STREAM_END && z.avail_out == 0);
  }
  if (inflated != info.uncompressed_size)
    fail(source, where + ": it inflates to " + std::to_string(inflated) + " bytes, not the declared " +
                     std::to_string(info.uncompressed_size));
  if (crc != info.crc) fail(source, where + ": CRC mismatch (corrupt data)");
}

std::vector<ZipEntry> list_entries(unzFile zip, uint64_t archive_bytes, const std::string& source,
                                   const ZipBudget& budget) {
  if (!zip) fail(source, "not a readable zip archive (no central directory found)");
  unz_global_info64 global{};
  if (unzGetGlobalInfo64(zip, &global) != UNZ_OK) fail(source, "unreadable zip central directory");
  if (global.number_entry > budget.max_entries)
    fail(source, "the zip archive declares " + std::to_string(global.number_entry) + " entries (at most " +
                     std::to_string(budget.max_entries) + ")");
  std::vector<ZipEntry> entries;
  std::set<std::string> names;
  uint64_t deflated_in = 0, deflated_out = 0;
  const uint64_t max_ratio = std::max<uint64_t>(budget.max_ratio, 1);
  std::string name(65536, '\0'), extra(65536, '\0');
  for (int rc = unzGoToFirstFile(zip); rc != UNZ_END_OF_LIST_OF_FILE; rc = unzGoToNextFile(zip)) {
    if (rc != UNZ_OK) fail(source, "corrupt zip central directory after " + std::to_string(entries.size()) + " entries");
    if (entries.size() >= budget.max_entries)
      fail(source, "the zip archive has more than " + std::to_string(budget.max_entries) + " entries");
    unz_file_info64 info{};
    if (unzGetCurrentFileInfo64(zip, &info, name.data(), name.size(), extra.data(), extra.size(), nullptr, 0) != UNZ_OK)
      fail(source, "corrupt zip entry " + std::to_string(entries.size()));
    const bool zip64 = info.uncompressed_size == 0xFFFFFFFFu || info.compressed_size == 0xFFFFFFFFu;
    if (zip64 && !zip64_sizes(std::string_view(extra).substr(0, std::min<size_t>(info.size_file_extra, extra.size())), info))
      fail(source, "zip entry " + std::to_string(entries.size()) + " has no readable zip64 sizes");
    ZipEntry e;
    e.name.assign(name.data(), std::min<size_t>(info.size_filename, name.size() - 1));
    e.size = info.uncompressed_size;
    e.compressed = info.compressed_size;
    e.deflated = info.compression_method == Z_DEFLATED;
    e.crc = static_cast<uint32_t>(info.crc);
    const std::string where = "zip entry '" + e.name.substr(0, 200) + "'";
    if (!names.insert(e.name).second) fail(source, where + " appears twice");
    if (info.flag & 1) fail(source, where + " is encrypted");
    if (info.compression_method != 0 && !e.deflated)
      fail(source, where + " uses compression method " + std::to_string(info.compression_method) +
                       " (only stored and deflated entries can be read)");
    if (!e.deflated && e.size != e.compressed)
      fail(source, where + " is stored but declares " + std::to_string(e.size) + " bytes inflated and " +
                       std::to_string(e.compressed) + " in the archive");
    if (e.compressed > archive_bytes)
      fail(source, where + " declares " + std::to_string(e.compressed) + " archived bytes, more than the file holds");
    if (e.deflated) {
      if (e.size > budget.ratio_free_bytes && e.size / std::max<uint64_t>(e.compressed, 1) >= max_ratio)
        fail(source, where + " would inflate " + std::to_string(e.compressed) + " bytes to " + std::to_string(e.size) +
                         " (more than " + std::to_string(budget.max_ratio) + " times)");
      deflated_in += e.compressed;
      deflated_out += e.size;
      const uint64_t allowed = deflated_in > (UINT64_MAX - budget.ratio_free_bytes) / max_ratio
                                   ? UINT64_MAX
                                   : deflated_in * max_ratio + budget.ratio_free_bytes;
      if (deflated_out < e.size || deflated_out > allowed)
        fail(source, "the zip archive's deflated entries would inflate " + std::to_string(deflated_in) + " bytes to " +
                         std::to_string(deflated_out) + " (more than " + std::to_string(budget.max_ratio) +
                         " times, plus " + std::to_string(budget.ratio_free_bytes >> 20) + " MiB)");
    }
    int method = 0, level = 0;
    if (unzOpenCurrentFile2(zip, &method, &level, /*raw=*/1) != UNZ_OK) {
      // minizip 1.1 may not follow a zip64 offset either (archives past 4 GiB):
      // a stored record there is bounded above and LibTorch's reader checks it.
      if (!e.deflated && (zip64 || archive_bytes > 0xFFFFFFFFu)) {
        entries.push_back(std::move(e));
        continue;
      }
      fail(source, where + ": its local header is missing or disagrees with the central directory");
    }
    const uint64_t start = unzGetCurrentFileZStreamPos64(zip);
    if (start > archive_bytes || e.compressed > archive_bytes - start)
      fail(source, where + ": its data reaches past the end of the archive (truncated?)");
    if (e.deflated) prove_deflated(zip, info, where, source);
    unzCloseCurrentFile(zip);
    entries.push_back(std::move(e));
  }
  return entries;
}

}  // namespace

std::vector<ZipEntry> read_zip_entries(std::string_view archive, const std::string& source, const ZipBudget& budget) {
  Input input{archive, -1, archive.size()};
  zlib_filefunc64_def io{input_open, input_read, input_write, input_tell, input_seek, input_close, input_error, &input};
  const Archive zip(unzOpen2_64("archive", &io));
  return list_entries(zip.get(), archive.size(), source, budget);
}

std::vector<ZipEntry> read_zip_entries_file(const std::string& path, const ZipBudget& budget) {
  // O_NONBLOCK: a FIFO opens at once and is refused below instead of waiting for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw ZipError(path + ": cannot open the file (" + std::strerror(errno) + ")");
  const std::unique_ptr<int, void (*)(int*)> closer(new int(fd), [](int* f) {
    ::close(*f);
    delete f;
  });
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw ZipError(path + ": not a regular file (a folder, FIFO or device): give the checkpoint file itself");
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  Input input{{}, fd, static_cast<uint64_t>(st.st_size)};
  zlib_filefunc64_def io{input_open, input_read, input_write, input_tell, input_seek, input_close, input_error, &input};
  const Archive zip(unzOpen2_64(path.c_str(), &io));
  return list_entries(zip.get(), input.size, path, budget);
}

}  // namespace expnet
