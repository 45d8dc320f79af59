// The tree keeps the rules of docs/architecture.md: a public header
// core/include/expnet/<area>/X.h is implemented by core/src/<area>/X.cpp, every
// core/src/<area>/Y.cpp has its Y.h (public or beside it), no two source files
// share a name within core/ or within ui/, and no file in core/src or ui/ is
// over 600 lines.
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = EXPNET_SOURCE_DIR;

// Public headers that declare types only (nothing out of line to implement).
const std::set<std::string> kHeaderOnly = {"model/model_trace.h"};
constexpr int kMaxLines = 600;

bool is_source(const fs::path& p) { return p.extension() == ".cpp" || p.extension() == ".h"; }

std::vector<fs::path> files_under(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file() && is_source(entry.path())) out.push_back(entry.path());
  return out;
}

std::string relative_text(const fs::path& p, const fs::path& base) { return fs::relative(p, base).generic_string(); }

int line_count(const fs::path& p) {
  std::ifstream in(p);
  int lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  return lines;
}

// Names shared by files that are not a header and its implementation.
QStringList shared_names(const fs::path& dir) {
  std::map<std::string, std::set<std::string>> by_name;  // file name -> folders
  for (const auto& p : files_under(dir)) by_name[p.filename().string()].insert(relative_text(p.parent_path(), kRoot));
  QStringList clashes;
  for (const auto& [name, folders] : by_name)
    if (folders.size() > 1) {
      QStringList where;
      for (const auto& f : folders) where << QString::fromStdString(f);
      clashes << QString::fromStdString(name) + " in " + where.join(", ");
    }
  return clashes;
}

}  // namespace

class TestLayout : public QObject {
  Q_OBJECT
 private slots:
  void publicHeadersHaveTheirImplementation() {
    const fs::path include = kRoot / "core/include/expnet", src = kRoot / "core/src";
    QStringList missing;
    for (const auto& header : files_under(include)) {
      const auto rel = relative_text(header, include);
      if (header.extension() != ".h" || kHeaderOnly.count(rel)) continue;
      auto cpp = src / rel;
      cpp.replace_extension(".cpp");
      if (!fs::exists(cpp)) missing << QString::fromStdString(rel);
    }
    QVERIFY2(missing.isEmpty(), qPrintable("public headers without core/src/<area>/X.cpp: " + missing.join(", ")));
  }

  void sourcesHaveTheirHeader() {
    const fs::path include = kRoot / "core/include/expnet", src = kRoot / "core/src";
    QStringList missing;
    for (const auto& cpp : files_under(src)) {
      if (cpp.extension() != ".cpp") continue;
      auto rel = fs::path(relative_text(cpp, src));
      rel.replace_extension(".h");
      if (!fs::exists(include / rel) && !fs::exists(src / rel)) missing << QString::fromStdString(rel.generic_string());
    }
    QVERIFY2(missing.isEmpty(), qPrintable("sources without a public or private header: " + missing.join(", ")));
  }

  void namesAreUnique() {
    const auto core = shared_names(kRoot / "core");
    QVERIFY2(core.isEmpty(), qPrintable("same file name twice in core/: " + core.join("; ")));
    const auto ui = shared_names(kRoot / "ui");
    QVERIFY2(ui.isEmpty(), qPrintable("same file name twice in ui/: " + ui.join("; ")));
  }

  void noFileOverTheLimit() {
    QStringList long_files;
    for (const auto* dir : {"core/src", "core/include", "ui"})
      for (const auto& p : files_under(kRoot / dir)) {
        const int lines = line_count(p);
        if (lines > kMaxLines) long_files << QString::fromStdString(relative_text(p, kRoot)) + QStringLiteral(" (%1)").arg(lines);
      }
    QVERIFY2(long_files.isEmpty(), qPrintable("files over 600 lines: " + long_files.join(", ")));
  }
};

QTEST_GUILESS_MAIN(TestLayout)
#include "test_layout.moc"
