// expnet eval: per-sample evaluation of a model on a dataset split
// (expnet/metrics/sample_evaluation.h): every image's caption, CIDEr-D and
// BLEU-4 kept in an evaluation store, resumed where an interrupted run stopped.
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <set>

#include "command.h"
#include "decode_options_cli.h"
#include "expnet/metrics/sample_evaluation.h"
#include "expnet/remote/ssh_remote.h"

namespace expnet::cli {
namespace {

struct EvalArgs {
  ModelArgs model;
  DecodeArgs decode;
  std::string dataset, split, db;
  size_t limit = 0;
  bool json = false;
  std::string host, home_dataset, db_here;  // --host: run there; the result kept in home_dataset's store here
  bool progress_lines = false;     // {"done": N, "total": M} lines on stdout (what --host reads there)
  CLI::App* command = nullptr;     // its options given, forwarded to the host
};

// Ctrl+C stops between two images (what was captioned is committed); a second
// one ends the process at once (the handler restores the default).
volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_interrupt(int) {
  g_interrupted = 1;
  std::signal(SIGINT, SIG_DFL);
}

void print_table(const SampleEvaluation& e) {
  std::printf("evaluation %lld in %s\n", static_cast<long long>(e.id), e.db.c_str());
  std::printf("model %s (SHA-256 %s), options %s\n", e.model.c_str(), e.checkpoint_sha256.c_str(), e.options.c_str());
  std::printf("%s, split %s: %zu images (%zu found in the store, %zu captioned now)\n", e.dataset.c_str(),
              e.split.c_str(), e.per_image.size(), e.resumed, e.captioned);
  if (e.corpus.empty()) {
    std::printf("no scores: none of these images has reference captions\n");
    return;
  }
  for (const char* key : {"Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "ROUGE_L", "CIDEr"})
    std::printf("%-8s %.6f\n", key, e.corpus.at(key));
  std::vector<const SampleScore*> worst;
  for (const auto& s : e.per_image)
    if (s.scored) worst.push_back(&s);
  const size_t shown = std::min<size_t>(5, worst.size());
  std::partial_sort(worst.begin(), worst.begin() + static_cast<std::ptrdiff_t>(shown), worst.end(),
                    [](const SampleScore* a, const SampleScore* b) { return a->cider_d < b->cider_d; });
  std::printf("lowest CIDEr-D:\n%10s %8s %8s  %s\n", "cocoid", "CIDEr-D", "BLEU-4", "caption");
  for (size_t i = 0; i < shown; ++i)
    std::printf("%10lld %8.3f %8.3f  %s\n", static_cast<long long>(worst[i]->cocoid), worst[i]->cider_d,
                worst[i]->bleu4, worst[i]->error.empty() ? worst[i]->caption.c_str() : ("error: " + worst[i]->error).c_str());
}

void run_on_host(const EvalArgs& args);

void run(const RuntimeOptions& runtime, const EvalArgs& args) {
  if (!args.host.empty()) return run_on_host(args);
  if (!args.home_dataset.empty()) throw std::runtime_error("--home-dataset is for --host: it keeps a host's evaluation here");
  SampleEvaluationRequest request;
  request.model = args.model.model;
  request.checkpoint = args.model.checkpoint;
  request.vocab = args.model.vocab;
  request.device = runtime.device;
  request.precision = parse_precision(args.model.precision, runtime.device);
  // As `expnet caption`: the checkpoint's decoding options, but for the flags given.
  request.options = args.decode.options();
  request.use_carried_decoding = true;
  request.given = args.decode.given();
  request.dataset = args.dataset;
  request.split = args.split;
  request.limit = args.limit;
  request.db = args.db;
  const bool progress = isatty(STDERR_FILENO) != 0;
  request.progress = [progress, &args](size_t done, size_t total) {
    if (progress) std::cerr << "\r[" << done << "/" << total << "] captioned" << std::flush;
    if (args.progress_lines) std::cout << nlohmann::json({{"done", done}, {"total", total}}).dump() << std::endl;
  };
  request.cancelled = [] { return g_interrupted != 0; };
  g_interrupted = 0;
  const auto previous = std::signal(SIGINT, on_interrupt);
  SampleEvaluation evaluation;
  try {
    evaluation = evaluate_samples(request);
  } catch (const SampleEvaluationCancelled&) {
    std::signal(SIGINT, previous);
    if (progress) std::cerr << "\n";
    std::cerr << "interrupted: the images captioned so far are kept in the evaluation store; run the same command "
                 "again to resume\n";
    set_exit_code(130);
    return;
  } catch (...) {
    std::signal(SIGINT, previous);
    throw;
  }
  std::signal(SIGINT, previous);
  if (progress) std::cerr << "\n";
  size_t failed = 0;
  for (const auto& s : evaluation.per_image)
    if (!s.error.empty()) {
      ++failed;
      std::cerr << "error: " << s.image << ": " << s.error << "\n";
    }
  if (failed > 0) {
    std::cerr << failed << " of " << evaluation.per_image.size()
              << " images could not be captioned (scored as empty captions; see the errors above)\n";
    set_exit_code(1);
  }
  if (args.json)
    std::cout << sample_evaluation_json(evaluation) << std::endl;
  else
    print_table(evaluation);
}

// The options given on this command line but those about this computer, as
// the host's `expnet eval` takes them (paths are the host's).
std::vector<std::string> forwarded_options(const CLI::App& command) {
  std::vector<std::string> argv{"eval"};
  for (const CLI::Option* option : command.get_options()) {
    const std::string name = option->get_name();
    static const std::set<std::string> here{"--host", "--home-dataset", "--home-db", "--json", "--progress-lines", "--help"};
    if (option->count() == 0 || here.count(name)) continue;
    if (option->get_expected_max() == 0) {
      argv.push_back(name);  // a flag
      continue;
    }
    for (const auto& value : option->results()) argv.insert(argv.end(), {name, value});
  }
  return argv;
}

// --host H: `expnet eval` run there over ssh (docs/remote.md), its progress
// shown here; with --home-dataset, its per-image results join that dataset's
// evaluation store here, so the Datasets page shows them.
void run_on_host(const EvalArgs& args) {
  const Host host = resolve_host(args.host);
  RemoteRequest request;
  request.cwd = host.work_dir;
  request.argv = forwarded_options(*args.command);
  request.argv.insert(request.argv.end(), {"--json", "--progress-lines"});
  std::string result_line;
  const int timeout_s = 7 * 24 * 3600;  // a dead link is noticed by ssh's keepalives
  const RemoteResult result = run_remote(host, request, timeout_s, [&](const std::string& line) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("done") && j.size() == 2) {
      const size_t done = j["done"].get<size_t>(), total = j["total"].get<size_t>();
      std::cerr << host.name << ": " << done << " of " << total << " images ("
                << (total == 0 ? 100 : done * 100 / total) << "%)\n";
      return;
    }
    result_line = line;
  });
  if (result.status != 0 || result_line.empty()) {
    std::string said = result.err;
    while (!said.empty() && said.back() == '\n') said.pop_back();
    if (result.status == 255 || result.status < 0 || said.empty())
      throw std::runtime_error(explain_remote_failure(host, result, 10));
    throw std::runtime_error("host '" + host.name + "': expnet eval failed there (status " + std::to_string(result.status) +
                             "): " + said.substr(said.rfind('\n') == std::string::npos ? 0 : said.rfind('\n') + 1) +
                             " (the images captioned so far are kept there: run it again to resume)");
  }
  SampleEvaluation evaluation = sample_evaluation_from_json(result_line, "host '" + host.name + "''s answer");
  if (!args.home_dataset.empty()) {
    const auto there = evaluation.corpus;
    evaluation = import_sample_evaluation(evaluation, args.home_dataset, args.db_here, host.name);
    const auto cider = [](const std::map<std::string, double>& corpus) {
      const auto found = corpus.find("CIDEr");
      return found == corpus.end() ? 0.0 : found->second;
    };
    if (std::abs(cider(there) - cider(evaluation.corpus)) > 1e-9)
      std::cerr << "warning: CIDEr-D is " << cider(there) << " with the host's references and " << cider(evaluation.corpus)
                << " with those of " << args.home_dataset << ": the two copies of the dataset differ\n";
  }
  if (args.json)
    std::cout << sample_evaluation_json(evaluation) << std::endl;
  else
    print_table(evaluation);
}

const bool registered = register_command({"eval", 23, [](CLI::App& root) {
  auto [command, args] = add_command<EvalArgs>(
      &root, "eval", "Caption and score every image of a dataset split, kept per image in an evaluation store", run);
  add_model_options(command, args->model);
  add_decode_options(command, args->decode);
  command->add_option("--dataset", args->dataset, "Dataset file or folder (its references score the captions)")
      ->required();
  command->add_option("--split", args->split, "train, restval, val, test, or all")->required();
  command->add_option("--limit", args->limit, "The first N images of the split (0 = all)");
  command->add_option("--db", args->db, "Evaluation store (SQLite); default: beside the dataset's cached index");
  command->add_flag("--json", args->json, "One JSON object on stdout: corpus, per_image, evaluation");
  command->add_option("--host", args->host,
                      "Evaluate on this host over ssh (`expnet hosts`, or any ssh destination); --dataset, --db and "
                      "the model's files are then the host's paths (relative: to its work folder)");
  command->add_option("--home-dataset", args->home_dataset,
                      "With --host: this computer's copy of the dataset; the host's per-image results are added to "
                      "its evaluation store here (--home-db), shown by the studio's Datasets page");
  command->add_option("--home-db", args->db_here, "With --home-dataset: the evaluation store here (default: beside its index)");
  command->add_flag("--progress-lines", args->progress_lines, "")->group("");
  args->command = command;
}});

}  // namespace
}  // namespace expnet::cli
