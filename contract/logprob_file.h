#pragma once
// The HDF5 log-output file: the one contract between the trainers (writers) and the analysis
// (reader). Nothing else opens these datasets by name. Its datasets and attributes are tabled
// once, in docs/design.md ("The HDF5 contract"): /log_probs float32 (T, M), /targets int64 (T,),
// optional /vocab, and the attributes of LogProbHeader below.
//
// A "plain" file is any HDF5 file with a 2-D float32/float64 /log_probs and no format_version
// attribute (e.g. written by h5py from a PyTorch or JAX run): read with Contract::allow_plain,
// only /log_probs is used and the header carries just its shape and dtype; head, d and bias come
// from the command line (model_facts.h).

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "common/head_spec.h"

#include "contract/hdf5_handles.h"

namespace sb::contract {

/// 2: the shape attributes are M and T (version 1, still read, named them vocab_size and
/// num_tokens).
inline constexpr int64_t kLogProbFormatVersion = 2;

struct LogProbHeader {
  std::string head;  ///< registry name (head_spec.h)
  /// Optional attribute 'head_spec': the head's whole spelling when it has options
  /// ("adaptive:cutoffs=2000,6000", "sparse:k=3"); empty: the name alone says it all. The
  /// adaptive heads' rank bound needs it (their number of tail clusters).
  std::string head_spec;
  int64_t d = 0;        ///< size of the vector the decoder multiplies
  bool bias = false;    ///< decoder bias present
  int64_t M = 0;        ///< columns: the vocabulary (classes)
  int64_t T = 0;        ///< rows: the predicted tokens
  std::string dataset;  ///< e.g. "ptb"
  std::string split;    ///< e.g. "test"
  int64_t seed = 0;
  double ppl = 0;  ///< set by LogProbWriter::finish, read back by the reader
  std::string compute_dtype = "float32";
  std::string config;  ///< optional: the producer's effective config (TOML/JSON)
  /// Optional attribute 'input': what the rows hold, "logprobs" (normalised: each row's
  /// logsumexp is 0) or "logits"; empty: not stated (the analysis then detects it). Read from
  /// plain files too.
  std::string input;
  /// Optional attribute 'final_norm': the model's normalisation of the decoder's input, "none",
  /// "layernorm" or "rmsnorm" (common/head_spec.h, FinalNorm: a final LayerNorm lowers the bound
  /// by one with a biased decoder); empty: not stated, read as none.
  std::string final_norm;
  /// Optional: the word of each column, M of them (written as /vocab; empty = none). The reader
  /// leaves it empty; LogProbReader::read_vocab() reads it.
  std::vector<std::string> vocab;
};

/// Where the rows of a dump come from: the part of the header that is not the model's.
struct DumpSource {
  std::string dataset;             ///< e.g. "ptb"
  std::string split;               ///< e.g. "test"
  int64_t seed = 0;                ///< the producer's seed
  std::string config;              ///< the producer's effective configuration (TOML)
  std::vector<std::string> vocab;  ///< the word (class) of each column, or empty
};

/// The one way a producer fills a header: the model's facts (head spelling: `head` gets its
/// registry name, `head_spec` the spelling when it has options; d, decoder bias), the
/// matrix's shape (M columns, T rows), where the rows come from and the computation's dtype.
LogProbHeader make_header(const HeadSpec& head, int64_t d, bool bias, int64_t M, int64_t T,
                          DumpSource source, const std::string& compute_dtype = "float32");

/// A scalar root attribute by name: what a file says of its model and, in a rank result, of the
/// analysis (contract/rank_result.cpp writes the same fields into its JSON line).
struct NamedValue {
  std::string name;
  std::variant<bool, int64_t, double, std::string> value;
};

/// The model's facts, the same in a dump and in a rank result: head (the registry name), d, bias
/// (0/1), M, T, dataset, split, compute_dtype. (ppl is not among them: a dump knows it only when
/// it closes, and writes it then.)
std::vector<NamedValue> model_fields(const LogProbHeader& h);

/// Writes one field as a root attribute; a bool as int64 0/1.
void write_attribute(hid_t root, const NamedValue& field);

/// model_fields(h) as root attributes.
void write_model_attributes(hid_t root, const LogProbHeader& h);

/// Streams rows into a new file. Written to "<path>.tmp.<pid>" and renamed into place by
/// finish(); destroyed unfinished, it removes the temporary file (no partial output).
class LogProbWriter {
 public:
  LogProbWriter(std::string path, LogProbHeader header);
  ~LogProbWriter();
  LogProbWriter(const LogProbWriter&) = delete;
  LogProbWriter& operator=(const LogProbWriter&) = delete;

  /// rows: (count, M) row-major float32; targets: (count,). Rows arrive in token order.
  void write_rows(const float* rows, const int64_t* targets, int64_t count);
  /// Checks that all T rows came, writes ppl = exp(-mean log_probs[t, target_t]) (accumulated in
  /// float64 from the float32 values as stored), renames into place; returns the ppl.
  double finish();
  int64_t rows_written() const { return written_; }

 private:
  void flush_chunk();

  std::string path_, tmp_;
  LogProbHeader header_;
  h5::Handle file_, log_probs_, targets_;
  int64_t chunk_rows_ = 0, written_ = 0, flushed_ = 0;
  std::vector<float> buffer_;  // one chunk of rows, written whole
  std::vector<int64_t> target_buffer_;
  double sum_log_prob_ = 0;
  bool finished_ = false;
};

/// full: the whole contract. allow_plain: a file without format_version is read as plain.
enum class Contract { full, allow_plain };

/// Opens and validates a file against the contract. Every violation throws sb::InputError
/// (sb::FormatError: missing, not HDF5, another format_version, a failed read)
/// "<path>: <field>: expected ..., got ..." (missing datasets/attributes, an attribute that is not
/// one value, dtype, rank, T or M below 1, shape vs attributes, unknown head, bad compute_dtype,
/// targets outside [0, M), a /vocab that is not M strings).
class LogProbReader {
 public:
  explicit LogProbReader(std::string path, Contract contract = Contract::full);
  /// Plain file: only T, M and compute_dtype (= the data's dtype) are set.
  const LogProbHeader& header() const { return header_; }
  const std::string& path() const { return path_; }
  bool plain() const { return plain_; }
  int64_t rows() const { return header_.T; }
  int64_t cols() const { return header_.M; }
  /// The element type of /log_probs as stored.
  bool float64() const { return float64_; }
  /// Rows [begin, begin + count) into out (count x M, row-major), converted by HDF5 from the
  /// stored dtype. Reads in row order have the next 256 MiB asked of the kernel's read-ahead.
  void read_rows(int64_t begin, int64_t count, float* out) const;
  void read_rows(int64_t begin, int64_t count, double* out) const;
  /// Contract files only (a plain file has no /targets).
  std::vector<int64_t> read_targets() const;
  bool has_vocab() const { return has_vocab_; }
  /// The M words of /vocab, or empty when the file has none.
  std::vector<std::string> read_vocab() const;

 private:
  void read_contract_attributes();
  void
  read_input_attribute();  ///< the optional 'input' and 'final_norm' (contract and plain files)
  void read_rows(int64_t begin, int64_t count, hid_t memory_type, void* out) const;
  void read_ahead(int64_t begin, int64_t end) const;

  std::string path_;
  LogProbHeader header_;
  bool plain_ = false, float64_ = false;
  h5::Handle file_, log_probs_;
  bool has_vocab_ = false;
  // read_ahead: rows before advised_ were handed to the kernel's read-ahead; the last read ended
  // at read_end_ (mutable: a const read moves them; reads of one reader come from one thread).
  mutable int64_t advised_ = 0, read_end_ = -1;
};

/// Rows per chunk for a vocabulary of M: about 1 MiB of float32 per chunk.
int64_t chunk_rows_for(int64_t M, int64_t T);

}  // namespace sb::contract
