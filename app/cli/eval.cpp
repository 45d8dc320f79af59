// expnet eval: per-sample evaluation of a model on a dataset split
// (expnet/metrics/sample_evaluation.h): every image's caption, CIDEr-D and
// BLEU-4 kept in an evaluation store, resumed where an interrupted run stopped.
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "command.h"
#include "decode_options_cli.h"
#include "expnet/metrics/sample_evaluation.h"

namespace expnet::cli {
namespace {

struct EvalArgs {
  ModelArgs model;
  DecodeArgs decode;
  std::string dataset, split, db;
  size_t limit = 0;
  bool json = false;
};

// Ctrl+C stops between two images (what was captioned is committed); a second
// one ends the process at once (the handler restores the default).
volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_interrupt(int) {
  g_interrupted = 1;
  std::signal(SIGINT, SIG_DFL);
}

nlohmann::json evaluation_json(const SampleEvaluation& e) {
  nlohmann::json per_image = nlohmann::json::array();
  for (const auto& s : e.per_image) {
    nlohmann::json entry = {{"image", s.image}, {"cocoid", s.cocoid}, {"caption", s.caption}};
    if (s.scored) entry["scores"] = {{"CIDEr", s.cider_d}, {"Bleu_4", s.bleu4}};
    if (!s.error.empty()) entry["error"] = s.error;
    per_image.push_back(std::move(entry));
  }
  return {{"corpus", e.corpus},
          {"per_image", per_image},
          {"evaluation",
           {{"id", e.id},
            {"db", e.db},
            {"checkpoint_sha256", e.checkpoint_sha256},
            {"resumed", e.resumed},
            {"captioned", e.captioned},
            {"model", e.model},
            {"options", nlohmann::json::parse(e.options)},
            {"dataset", e.dataset},
            {"split", e.split},
            {"created", e.created}}}};
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

void run(const RuntimeOptions& runtime, const EvalArgs& args) {
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
  request.progress = [progress](size_t done, size_t total) {
    if (progress) std::cerr << "\r[" << done << "/" << total << "] captioned" << std::flush;
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
    std::cout << evaluation_json(evaluation).dump() << std::endl;
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
}});

}  // namespace
}  // namespace expnet::cli
