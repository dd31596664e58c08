#include "trainers/transformer/config.h"

#include "common/errors.h"
#include "common/head_spec.h"
#include "trainers/runkit/epoch_keys.h"
#include "trainers/runkit/trainer_rules.h"

namespace sb::transformer {

using runkit::at_least;  // the key table's rows (trainers/runkit/config_table.h)
using runkit::key;

const runkit::ConfigTable<TransformerConfig>& key_table() {
  using C = TransformerConfig;
  static const runkit::ConfigTable<C> table(
      "Decoder-only Transformer LM configuration (trainers/transformer/config.h)",
      {
          {"data", runkit::corpus_keys<C>("corpus name: ptb | wikitext-2")},
          {"model",
           {
               runkit::head_key<C>(),
               key("d_model", &C::d_model, "d: the residual width = the decoder's input size",
                   at_least(1)),
               key("layers", &C::layers, "Transformer blocks", at_least(1)),
               key("heads", &C::heads, "attention heads; d_model must divide by it", at_least(1)),
               key("d_ff", &C::d_ff, "MLP width (0 = 4 d_model)", at_least(0)),
               key("context", &C::context, "tokens of context: the attention window", at_least(2)),
               key("dropout", &C::dropout,
                   "dropout on embeddings, attention weights and residual branches",
                   runkit::interval(0, false, 1, true)),
               key("final_norm", &C::final_norm,
                   "normalisation before the decoder: layernorm (GPT-2: the bound is d + 1), "
                   "rmsnorm or none (d + 1 + bias); written to the dump's attribute final_norm"),
               key("decoder_bias", &C::decoder_bias, "a bias on the tied decoder"),
           }},
          {"training",
           runkit::join<C>(
               {
                   key("batch_size", &C::batch_size, "windows per batch", at_least(1)),
                   key("lr", &C::lr, "AdamW peak learning rate", runkit::above(0)),
                   key("weight_decay", &C::weight_decay,
                       "AdamW's decoupled weight decay, on matrices and embeddings (not on "
                       "biases and norm gains)",
                       at_least(0)),
                   key("warmup", &C::warmup, "linear warmup steps", at_least(0)),
                   key("final_lr_ratio", &C::final_lr_ratio,
                       "the cosine decay ends at final_lr_ratio x lr on the last step",
                       runkit::interval(0, false, 1, false)),
               },
               runkit::epoch_loop_keys<C>())},
          {"outputs",
           {
               runkit::out_key<C>("results/transformer_<dataset>_<head>"),
               key("dump_rows", &C::dump_rows,
                   "test rows written to <out>/logprobs.h5, the first of the test stream (0 = "
                   "every test token; the test perplexity is over every token either way)",
                   at_least(0))
                   .not_trajectory(),
           }},
      },
      runkit::TableOptions{"trainers/configs/transformer_ptb_cpu.toml"});
  return table;
}

void validate(const TransformerConfig& c) {
  key_table().check_ranges(c);
  const HeadSpec& spec = c.head.spec();
  if (is_adaptive(spec) || may_output_neg_inf(spec.kind))
    throw InputError::described("", "head",
                                "head = \"" + c.head.text() +
                                    "\": train_transformer takes a head with finite log-outputs "
                                    "over the whole vocabulary (no adaptive, no sparse)");
  if (c.d_model % c.heads != 0)
    throw InputError("", "heads", "a divisor of d_model = " + std::to_string(c.d_model),
                     std::to_string(c.heads));
  try {
    final_norm_from_name(c.final_norm);
  } catch (const OptionError&) {
    throw InputError("", "final_norm", "layernorm, rmsnorm or none", "\"" + c.final_norm + "\"");
  }
  runkit::require_dataset(c.dataset);
}

const runkit::TrainerDescriptor<TransformerConfig>& descriptor() {
  static const runkit::TrainerDescriptor<TransformerConfig> d{
      runkit::one_command_facts(
          "transformer", "transformer_",
          "decoder-only Transformer LM (GPT-2's shape) with any head: the bottleneck where "
          "today's models live",
          "Train a decoder-only Transformer language model (pre-LayerNorm blocks, causal "
          "self-attention, GELU MLP, learned positions, a final LayerNorm, the decoder tied to "
          "the embedding; AdamW with warmup and cosine decay) with any output head, and write the "
          "test set's log-output matrix to <out>/logprobs.h5 (every test token, in windows of "
          "`context` tokens) with its final_norm attribute.\nSettings: defaults, then --config "
          "FILE (TOML), then --<key> VALUE. Outputs: <out>/config.toml, metrics.jsonl, "
          "checkpoint.pt, best.pt, logprobs.h5, final.json."),
      &key_table, &validate};
  return d;
}

}  // namespace sb::transformer
