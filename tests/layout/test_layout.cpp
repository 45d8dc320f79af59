// The tree keeps the rules of docs/architecture.md: a public header
// core/include/expnet/<area>/X.h is implemented by core/src/<area>/X.cpp, every
// core/src/<area>/Y.cpp has its Y.h (public or beside it), no two source files
// share a name within core/ or within ui/, no file in core/src or ui/ is
// over 600 lines, the table "The tree" names every file of core/src (by stem),
// no public header names the private kernels/ (comments included), and no file
// of ui/ but ui/common/theme.{h,cpp} writes a colour.
#include <QtTest>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>
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

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// `word` stands alone in `text`: a stem inside a backquoted path (`core/src/x/word.cpp`)
// counts, one inside a longer name (`word_cache`) does not.
bool names_word(const std::string& text, const std::string& word) {
  for (auto at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const auto end = at + word.size();
    if ((at == 0 || !is_identifier_char(text[at - 1])) && (end == text.size() || !is_identifier_char(text[end])))
      return true;
  }
  return false;
}

// A line's code (up to a // comment) and, apart, the contents of its string literals:
// "#fff" is a colour in a literal, `#include` or `// #123` is none.
std::pair<std::string, std::string> code_and_strings(const std::string& line) {
  std::string code, strings;
  char quote = 0;  // the literal we are in: '"', '\'' or none
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    std::string& out = quote == '"' ? strings : code;
    if (!quote && c == '/' && i + 1 < line.size() && line[i + 1] == '/') break;
    if (quote && c == '\\') {  // an escape: \" ends no literal
      ++i;
      out += ' ';
    } else if (quote && c == quote) {
      quote = 0;
      strings += ' ';  // "#abc" "def" is two literals, not one colour
    } else {
      if (!quote && (c == '"' || c == '\'')) quote = c;
      out += c;
    }
  }
  return {code, strings};
}

// "#" and 3, 6 or 8 hex digits standing alone: a colour, unlike "&#9632;" or "#navigation".
bool has_hex_colour(const std::string& text) {
  for (auto at = text.find('#'); at != std::string::npos; at = text.find('#', at + 1)) {
    if (at > 0 && (is_identifier_char(text[at - 1]) || text[at - 1] == '&')) continue;
    auto end = at + 1;
    while (end < text.size() && std::isxdigit(static_cast<unsigned char>(text[end]))) ++end;
    const auto digits = end - at - 1;
    if ((digits == 3 || digits == 6 || digits == 8) && (end == text.size() || !is_identifier_char(text[end])))
      return true;
  }
  return false;
}

// QColor(r, g, b), QColor{0x2b, ...} or QColor c(40, ...): a colour chosen by number.
bool has_numeric_colour(const std::string& code) {
  const auto after = [&](std::size_t i, bool (*keep)(char)) {
    while (i < code.size() && keep(code[i])) ++i;
    return i;
  };
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  for (auto at = code.find("QColor"); at != std::string::npos; at = code.find("QColor", at + 1)) {
    if (at > 0 && is_identifier_char(code[at - 1])) continue;
    const auto open = after(after(after(at + 6, space), is_identifier_char), space);  // past a variable's name
    if (open == code.size() || (code[open] != '(' && code[open] != '{')) continue;
    const auto first = after(open + 1, space);
    if (first < code.size() && std::isdigit(static_cast<unsigned char>(code[first]))) return true;
  }
  return false;
}

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

  // A reader finds any engine file from the architecture's table; a file added without
  // a word there is a file nobody is told about. A header and its .cpp share one stem.
  void architectureNamesEverySource() {
    const auto doc = read_text(kRoot / "docs/architecture.md");
    QVERIFY2(!doc.empty(), "docs/architecture.md is missing or empty");
    std::set<std::string> stems;
    for (const auto& p : files_under(kRoot / "core/src")) stems.insert(p.stem().string());
    QStringList missing;
    for (const auto& stem : stems)
      if (!names_word(doc, stem)) missing << QString::fromStdString(stem);
    QVERIFY2(missing.isEmpty(), qPrintable("core/src files the architecture does not name: " + missing.join(", ") +
                                           "; name them in docs/architecture.md (The tree)"));
  }

  // The CPU kernels are private to core/src: a public header naming kernels/, even in
  // a comment, sends readers (or an #include) to files outside the API.
  void publicHeadersNameNoKernels() {
    QStringList offenders;
    for (const auto& entry : fs::recursive_directory_iterator(kRoot / "core/include")) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path());
      int number = 0;
      for (std::string line; std::getline(in, line);) {
        ++number;
        if (line.find("kernels/") == std::string::npos) continue;
        const auto where = relative_text(entry.path(), kRoot) + ":" + std::to_string(number) + ": ";
        offenders << QString::fromStdString(where) + QString::fromStdString(line).trimmed();
      }
    }
    QVERIFY2(offenders.isEmpty(), qPrintable("public headers naming the private kernels/: " + offenders.join("; ")));
  }

  // A colour written in a page is one a dark desktop theme does not follow, and one
  // the next page writes again slightly differently: pages ask ui/common/theme.
  void coloursOnlyInTheTheme() {
    QStringList offenders;
    for (const auto& p : files_under(kRoot / "ui")) {
      const auto rel = relative_text(p, kRoot);
      if (rel == "ui/common/theme.cpp" || rel == "ui/common/theme.h") continue;
      std::ifstream in(p);
      int number = 0;
      for (std::string line; std::getline(in, line);) {
        ++number;
        const auto [code, strings] = code_and_strings(line);
        if (!has_hex_colour(strings) && !has_numeric_colour(code)) continue;
        const auto where = rel + ":" + std::to_string(number) + ": ";
        offenders << QString::fromStdString(where) + QString::fromStdString(line).trimmed();
      }
    }
    QVERIFY2(offenders.isEmpty(),
             qPrintable("colours outside ui/common/theme (give them a role there): " + offenders.join("; ")));
  }
};

QTEST_GUILESS_MAIN(TestLayout)
#include "test_layout.moc"
