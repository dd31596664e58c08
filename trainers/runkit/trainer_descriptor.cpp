#include "trainers/runkit/trainer_descriptor.h"

#include <algorithm>

#include "common/head_spec.h"

namespace sb::runkit {

std::vector<std::string> described_heads(const TrainerFacts& facts,
                                         const std::vector<std::string>& extra) {
  std::vector<std::string> heads;
  auto add = [&](const std::string& h) {
    if (!h.empty() && std::find(heads.begin(), heads.end(), h) == heads.end()) heads.push_back(h);
  };
  for (const auto& h : head_names()) add(h);
  for (const auto& h : facts.own_heads) add(h);
  for (const auto& h : extra) add(h);
  return heads;
}

nlohmann::ordered_json describe_json(const TrainerFacts& facts, const KeyTable& table,
                                     const ConfigVerdicts& verdicts) {
  nlohmann::ordered_json hands_on = nlohmann::ordered_json::object();
  for (const auto& [stage, files] : facts.hands_on) hands_on[stage] = files;
  nlohmann::ordered_json keys = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < table.size(); ++i) {
    const KeyInfo& k = table.info(i);
    keys.push_back({{"name", k.name},
                    {"group", k.group},
                    {"type", k.type},
                    {"default", k.default_text},
                    {"description", k.description},
                    {"range", k.range.text}});
  }
  nlohmann::ordered_json heads = nlohmann::ordered_json::object();
  for (const auto& [head, why] : verdicts.heads)
    heads[head] = {{"accepted", why.empty()}, {"why", why}};
  return {{"kind", facts.kind},
          {"binary", "train_" + facts.kind},
          {"run_prefix", facts.run_prefix},
          {"summary", facts.summary},
          {"stages", facts.stages},
          {"until", facts.until},
          {"epoch_dumps", facts.epoch_dumps},
          {"dyneval", facts.dyneval},
          {"dumps_logprobs", facts.dumps_logprobs},
          {"hands_on", hands_on},
          {"best_weights", facts.best_weights},
          {"own_heads", facts.own_heads},
          {"outputs", facts.outputs},
          {"keys", keys},
          {"config", {{"valid", verdicts.config.empty()}, {"why", verdicts.config}}},
          {"heads", heads}};
}

std::string describe_text(const TrainerFacts& facts, const ConfigVerdicts& verdicts) {
  auto join = [](const std::vector<std::string>& xs) {
    std::string s;
    for (const auto& x : xs) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? std::string("-") : s;
  };
  std::string out = "train_" + facts.kind + ": " + facts.summary + "\n";
  out += "  stages:         " + join(facts.stages) +
         (facts.until ? " (one resumable command each: --until STAGE)" : "") + "\n";
  out += "  outputs:        " + join(facts.outputs) + "\n";
  out += "  epoch dumps:    " + std::string(facts.epoch_dumps ? "yes" : "no") +
         "; dynamic evaluation: " + (facts.dyneval ? "yes" : "no") + "\n";
  out += "  this config:    " + (verdicts.config.empty() ? "valid" : verdicts.config) + "\n";
  out += "  heads:\n";
  for (const auto& [head, why] : verdicts.heads)
    out += "    " + head + std::string(head.size() < 22 ? 22 - head.size() : 1, ' ') +
           (why.empty() ? "takes" : "refuses: " + why) + "\n";
  return out;
}

std::string heads_text(const ConfigVerdicts& verdicts) {
  std::string taken, refused;
  for (const auto& [head, why] : verdicts.heads) {
    if (why.empty())
      taken += (taken.empty() ? "" : ", ") + head;
    else
      refused += "\n  refuses: " + why;
  }
  return "Output heads (this trainer's checks on the default config; --describe judges yours):\n"
         "  takes: " +
         (taken.empty() ? std::string("-") : taken) + refused;
}

}  // namespace sb::runkit
