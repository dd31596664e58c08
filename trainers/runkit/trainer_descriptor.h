#pragma once
// A trainer's descriptor: every fact about a trainer binary that someone outside it needs (the
// pipeline, the docs, a test), written once in the trainer's folder (its config.cpp) and taken by
// trainer_main and ConfiguredTrainer. `train_<kind> --describe --json` prints it; the pipeline
// (pipeline/trainer_kinds.py) reads that instead of typing the facts again. Which heads a trainer
// takes is not a list typed here: --describe runs the trainer's own `validate` on the config with
// each head (as rank_analysis --list-heads prints the head facts).
//
// Adding a trainer (docs/design.md, "Adding a trainer"): a folder with config.{h,cpp} (the Config
// struct with `head`, `dataset` and `out` keys, key_table(), validate and descriptor()),
// model.{h,cpp}, trainer.{h,cpp} (a ConfiguredTrainer) and main.cpp (trainer_main over the
// descriptor), and one row sb_trainer(<kind> ...) in trainers/CMakeLists.txt.

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "common/head_spec.h"
#include "trainers/runkit/config_table.h"

namespace sb::runkit {

/// What the pipeline needs to know to run a trainer and read its runs.
struct TrainerFacts {
  std::string kind;  ///< the binary is train_<kind>; final.json's "trainer"; a profile's trainer
  /// A run's directory when `out` is not set: results/<run_prefix><dataset>_<head's file name>
  /// ("" for the word LM and the classifier: results/ptb_softmax, results/fashion-mnist_mos_K_2).
  std::string run_prefix;
  std::string summary;  ///< one line: the model and the paper it reproduces
  /// --help's description: what the binary does, where its settings come from, its outputs and
  /// exit statuses (CLI11 prints it above the options).
  std::string help;
  /// Its stages in order, named as the pipeline's stage table names them (train, finetune, dump,
  /// classify); the last one writes final.json and, for a trainer that dumps, logprobs.h5.
  std::vector<std::string> stages{"train"};
  bool until = false;          ///< each stage is `--until STAGE` of one resumable command
  bool epoch_dumps = false;    ///< takes --epoch_dump_rows (the rank after every epoch)
  bool dyneval = false;        ///< its runs can be scored and dynamically evaluated by dyneval
  bool dumps_logprobs = true;  ///< its last stage writes <out>/logprobs.h5
  /// The files each stage before the last hands to the next one: (stage, files).
  std::vector<std::pair<std::string, std::vector<std::string>>> hands_on;
  std::string best_weights = "best.pt";  ///< the model final.json describes, where it names none
  std::vector<std::string> own_heads;    ///< outputs of its own besides the registry heads (mse)
  std::vector<std::string> outputs;      ///< the files a finished run holds
};

/// A trainer's descriptor over its Config (which has std::string `head`, `dataset` and `out`
/// keys). The functions are the trainer's own: its key table and its cross-key checks.
template <class Config>
struct TrainerDescriptor {
  TrainerFacts facts;
  const ConfigTable<Config>& (*key_table)();
  void (*validate)(const Config&);  ///< throws sb::InputError / OptionError naming the key

  /// The run directory: `out` when set, else results/<run_prefix><dataset>_<head's file name>
  /// (head_file_name: "mos:K=2" -> "mos_K_2").
  std::string run_dir(const Config& c) const {
    if (!c.out.empty()) return c.out;
    return "results/" + facts.run_prefix + c.dataset + "_" + head_file_name(c.head.text());
  }

  /// validate(c)'s message, "" when c passes.
  std::string refusal(const Config& c) const {
    try {
      validate(c);
      return "";
    } catch (const std::exception& e) {
      return e.what();
    }
  }
};

/// What --describe found for one config: its own refusal ("" = valid) and, per head spelling,
/// the refusal of the config with that head.
struct ConfigVerdicts {
  std::string config;
  std::vector<std::pair<std::string, std::string>> heads;
};

/// --describe's JSON: {"kind", "binary", "run_prefix", "summary", "stages", "until",
/// "epoch_dumps", "dyneval", "dumps_logprobs", "hands_on": {stage: [files]}, "best_weights",
/// "own_heads", "outputs", "keys": [{"name", "group", "type", "default", "description", "range"}],
/// "config": {"valid": bool, "why": str}, "heads": {spec: {"accepted": bool, "why": str}}}.
nlohmann::ordered_json describe_json(const TrainerFacts& facts, const KeyTable& table,
                                     const ConfigVerdicts& verdicts);

/// The same for a person: the facts, then a line per head (takes / refuses: why).
std::string describe_text(const TrainerFacts& facts, const ConfigVerdicts& verdicts);

/// The head spellings --describe judges: every registry head (common/head_spec.h), the trainer's
/// own heads, then `extra` (e.g. sparse:k=20), each once.
std::vector<std::string> described_heads(const TrainerFacts& facts,
                                         const std::vector<std::string>& extra);

/// The verdicts of `config` and of config with each described head.
template <class Config>
ConfigVerdicts judge(const TrainerDescriptor<Config>& d, const Config& config,
                     const std::vector<std::string>& extra_heads) {
  ConfigVerdicts v;
  v.config = d.refusal(config);
  for (const auto& head : described_heads(d.facts, extra_heads)) {
    Config c = config;
    c.head = head;
    v.heads.emplace_back(head, d.refusal(c));
  }
  return v;
}

/// --help's list of heads below the options, from the verdicts of the default config with each
/// head (judge): "Output heads ...:\n  takes: softmax, ...\n  refuses: <why>" (one line per
/// refused head, its validate's message). Computed from the trainer's own checks, so the head row
/// of its key table (runkit::head_key) lists none by hand.
std::string heads_text(const ConfigVerdicts& verdicts);

}  // namespace sb::runkit
