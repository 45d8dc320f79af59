// The tree keeps the rules of docs/architecture.md: a public header
// core/include/expnet/<area>/X.h is implemented by core/src/<area>/X.cpp, every
// core/src/<area>/Y.cpp has its Y.h (public or beside it), no two source files
// share a name within core/ or within ui/, no file in core/src or ui/ is
// over 600 lines, the table "The tree" names every file of core/src (by stem),
// no public header names the private kernels/ (comments included), no file
// of ui/ but ui/common/theme.{h,cpp} writes a colour, and no function in ui/ is
// over 80 lines.
#include <QtTest>

#include <algorithm>
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

constexpr int kMaxFunctionLines = 80;

// A `'` after a number's digits separates them (1'000); elsewhere it opens a character literal.
bool digit_separator(const std::string& text, std::size_t quote) {
  auto start = quote;
  while (start > 0 && (is_identifier_char(text[start - 1]) || text[start - 1] == '\'' || text[start - 1] == '.')) --start;
  return start < quote && std::isdigit(static_cast<unsigned char>(text[start]));
}

// The end of the comment, literal or directive that starts at `i`; `i` itself where none does.
std::size_t skipped_to(const std::string& text, std::size_t i, bool line_start) {
  const auto past = [&](std::size_t found, std::size_t length) {
    return found == std::string::npos ? text.size() : found + length;
  };
  const char c = text[i];
  if (line_start && c == '#') {  // a directive, with its continued lines
    while (i < text.size() && text[i] != '\n') i += text[i] == '\\' ? 2 : 1;
    return std::min(i, text.size());
  }
  if (text.compare(i, 2, "//") == 0) return past(text.find('\n', i), 0);
  if (text.compare(i, 2, "/*") == 0) return past(text.find("*/", i + 2), 2);
  const bool raw = c == '"' && i > 0 && text[i - 1] == 'R' &&
                   (i < 2 || !is_identifier_char(text[i - 2]) || std::string("8uUL").find(text[i - 2]) != std::string::npos);
  if (raw) {  // R"delim( ... )delim"
    const auto open = text.find('(', i);
    if (open == std::string::npos) return text.size();
    const std::string close = ")" + text.substr(i + 1, open - i - 1) + "\"";
    return past(text.find(close, open), close.size());
  }
  if (c != '"' && (c != '\'' || digit_separator(text, i))) return i;
  auto end = i + 1;
  while (end < text.size() && text[end] != c && text[end] != '\n') end += text[end] == '\\' ? 2 : 1;
  return std::min(end + 1, text.size());
}

// The text with comments, string and character literals and directives blanked (line breaks
// kept): a brace in "}" or in a comment opens and closes nothing.
std::string code_only(const std::string& text) {
  std::string code = text;
  bool line_start = true;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '\n' || (line_start && (text[i] == ' ' || text[i] == '\t'))) {
      line_start = line_start || text[i] == '\n';
      ++i;
      continue;
    }
    const auto end = skipped_to(text, i, line_start);
    line_start = false;
    for (auto k = i; k < end; ++k)
      if (code[k] != '\n') code[k] = ' ';
    i = std::max(end, i + 1);
  }
  return code;
}

// `head` past a leading `template <...>`, whose defaults' `=` initialise nothing.
std::string without_template(const std::string& head) {
  const auto start = head.find_first_not_of(" \t\r\n");
  if (start == std::string::npos || head.compare(start, 8, "template") != 0 ||
      (start + 8 < head.size() && is_identifier_char(head[start + 8])))
    return head;
  int depth = 0;
  for (auto k = head.find('<', start); k < head.size(); ++k) {
    if (head[k] == '<') ++depth;
    if (head[k] == '>' && --depth == 0) return without_template(head.substr(k + 1));
  }
  return head;
}

// `head` with the insides of its brackets blanked: "f(a = 1) : x_(2)" -> "f(     ) : x_( )".
std::string outside_brackets(const std::string& head) {
  std::string out;
  int depth = 0;
  for (const char c : head) {
    depth += (c == '(' || c == '[') - (c == ')' || c == ']');
    out += depth == 0 || (depth == 1 && (c == '(' || c == '[')) ? c : ' ';
  }
  return out;
}

// Where a variable's `=` stands in `top`: not one of ==, <=, += ..., nor operator=.
std::size_t initializer_at(const std::string& top) {
  for (auto at = top.find('='); at != std::string::npos; at = top.find('=', at + 1)) {
    const bool compound = at > 0 && std::string("=!<>+-*/%&|^").find(top[at - 1]) != std::string::npos;
    const auto before = top.find_last_not_of(" \t\r\n", at == 0 ? 0 : at - 1);
    const bool op = before != std::string::npos && before >= 7 && top.compare(before - 7, 8, "operator") == 0;
    if (!compound && !op && (at + 1 == top.size() || top[at + 1] != '=')) return at;
  }
  return std::string::npos;
}

enum class Block { Scope, Function, Other };  // a namespace or class; a function's body; anything else

// What a `{` after `head` (a declaration at namespace or class scope) opens.
Block block_kind(const std::string& head) {
  const std::string top = outside_brackets(without_template(head));
  const auto paren = top.find('(');
  std::set<std::string> words;  // the names before any bracket
  std::string word;
  for (const char c : top.substr(0, paren) + " ") {
    if (is_identifier_char(c)) {
      word += c;
    } else if (!word.empty()) {
      words.insert(word);
      word.clear();
    }
  }
  if (words.count("enum")) return Block::Other;
  if (const auto eq = initializer_at(top); eq != std::string::npos) {  // a lambda, or a variable's braces
    const auto value = top.find_first_not_of(" \t\r\n", eq + 1);
    return value != std::string::npos && top[value] == '[' ? Block::Function : Block::Other;
  }
  if (paren != std::string::npos) return Block::Function;
  for (const char* scope : {"namespace", "class", "struct", "union", "extern"})
    if (words.count(scope)) return Block::Scope;
  return Block::Other;
}

// A `{` after `head` is part of it: inside brackets (`f(T{1})`), or in a constructor's initializer
// list (a lone `:` after the parameters) after a member's name (`member_{1}`).
bool brace_in_head(const std::string& head) {
  const std::string top = outside_brackets(without_template(head));
  if (std::count(top.begin(), top.end(), '(') + std::count(top.begin(), top.end(), '[') >
      std::count(top.begin(), top.end(), ')') + std::count(top.begin(), top.end(), ']'))
    return true;
  if (block_kind(head) != Block::Function) return false;
  const auto params = top.find(')');
  if (params == std::string::npos) return false;
  bool colon = false;
  for (auto k = params + 1; k < top.size(); ++k)
    colon = colon || (top[k] == ':' && top[k - 1] != ':' && (k + 1 == top.size() || top[k + 1] != ':'));
  const auto last = top.find_last_not_of(" \t\r\n");
  return colon && (is_identifier_char(top[last]) || top[last] == '>');
}

// `head` ends in `public`, `private slots` ... : the `:` after it ends a label, not a declaration.
bool ends_in_access_label(const std::string& head) {
  const auto end = head.find_last_not_of(" \t\r\n");
  if (end == std::string::npos || !is_identifier_char(head[end])) return false;
  auto start = end;
  while (start > 0 && is_identifier_char(head[start - 1])) --start;
  static const std::set<std::string> labels = {"public", "protected", "private", "slots",
                                               "signals", "Q_SLOTS", "Q_SIGNALS"};
  return labels.count(head.substr(start, end - start + 1)) > 0;
}

// Each function's first line (its signature, or the `template` before it) and last (its
// closing brace); a lambda is part of the function that holds it.
std::vector<std::pair<int, int>> function_spans(const std::string& text) {
  const std::string code = code_only(text);
  std::vector<std::pair<int, int>> spans;
  std::vector<Block> open;  // the blocks the scan is in, outermost first
  std::string head;         // the declaration read so far at namespace or class scope
  int line = 1, head_line = 0, body_line = 0;
  for (std::size_t i = 0; i < code.size(); ++i) {
    const char c = code[i];
    line += c == '\n';
    if (!std::all_of(open.begin(), open.end(), [](Block b) { return b == Block::Scope; })) {
      if (c == '{') open.push_back(Block::Other);
      if (c == '}' && open.back() == Block::Function) spans.emplace_back(body_line, line);
      if (c == '}') open.pop_back();
      continue;
    }
    if (c == '{' && brace_in_head(head)) {
      for (int depth = 0; i < code.size(); ++i) {  // to the matching `}`, still in the head
        head += code[i];
        line += code[i] == '\n';
        depth += (code[i] == '{') - (code[i] == '}');
        if (depth == 0) break;
      }
      continue;
    }
    if (c == '{') open.push_back(head_line ? block_kind(head) : Block::Other);
    if (c == '{' && open.back() == Block::Function) body_line = head_line;
    if (c == '}' && !open.empty()) open.pop_back();
    const bool label = c == ':' && !open.empty() && ends_in_access_label(head);
    if (c == ';' || c == '{' || c == '}' || label) {
      head.clear();
      head_line = 0;
      continue;
    }
    if (!head_line && !std::isspace(static_cast<unsigned char>(c))) head_line = line;
    head += c;
  }
  return spans;
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

  // The studio's tests mirror its sources: each folder of ui/ has its tests in
  // tests/ui/<the same name>/, and tests/ui holds no folder that ui/ lacks.
  void studioTestsMirrorTheirPages() {
    std::set<std::string> pages, tested;
    for (const auto& entry : fs::directory_iterator(kRoot / "ui"))
      if (entry.is_directory()) pages.insert(entry.path().filename().string());
    for (const auto& entry : fs::directory_iterator(kRoot / "tests/ui"))
      if (entry.is_directory()) tested.insert(entry.path().filename().string());
    QCOMPARE(QString::fromStdString([&] {
               std::string names;
               for (const auto& name : tested) names += name + " ";
               return names;
             }()),
             QString::fromStdString([&] {
               std::string names;
               for (const auto& name : pages) names += name + " ";
               return names;
             }()));
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

  // A function read in one go: past 80 lines (from its signature, a constructor's initializer
  // list included, to its closing brace; lambdas count toward the function holding them) it
  // does several things, and is split by concern (buildX(), wireY() ...).
  void noFunctionOverEightyLines() {
    // The scanner itself: braces in an initializer list, in a lambda, in literals and comments.
    const auto spans = function_spans("Foo::Foo()\n    : a_{1}, b_([] { return 2; }) {\n"
                                      "  auto f = [] { return \"}\"; };  // }\n}\nint g() { return '{'; }\n");
    QCOMPARE(spans, (std::vector<std::pair<int, int>>{{1, 4}, {5, 5}}));
    QStringList long_functions;
    for (const auto& p : files_under(kRoot / "ui")) {
      if (p.extension() != ".cpp") continue;
      for (const auto& [first, last] : function_spans(read_text(p)))
        if (last - first + 1 > kMaxFunctionLines)
          long_functions << QString::fromStdString(relative_text(p, kRoot)) +
                                QStringLiteral(":%1 (%2 lines)").arg(first).arg(last - first + 1);
    }
    long_functions.sort();
    QVERIFY2(long_functions.isEmpty(), qPrintable("functions over 80 lines: " + long_functions.join(", ")));
  }
};

QTEST_GUILESS_MAIN(TestLayout)
#include "test_layout.moc"
