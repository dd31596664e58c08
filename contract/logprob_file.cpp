#include "contract/logprob_file.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <type_traits>
#include <utility>

#include "common/errors.h"
#include "common/head_spec.h"

namespace sb::contract {
namespace {

std::string shape_string(const std::vector<hsize_t>& d) {
  std::string s = "(";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + (d.size() == 1 ? ",)" : ")");
}

void require(bool ok, const std::string& path, const std::string& field,
             const std::string& expected, const std::string& got) {
  if (!ok) throw InputError(path, field, expected, got);
}

}  // namespace

LogProbHeader make_header(const HeadSpec& spec, int64_t d, bool bias, int64_t M, int64_t T,
                          DumpSource source, const std::string& compute_dtype) {
  LogProbHeader h;
  h.head = spec.name();
  if (spec.to_string() != h.head) h.head_spec = spec.to_string();
  h.d = d;
  h.bias = bias;
  h.M = M;
  h.T = T;
  h.dataset = std::move(source.dataset);
  h.split = std::move(source.split);
  h.seed = source.seed;
  h.config = std::move(source.config);
  h.vocab = std::move(source.vocab);
  h.compute_dtype = compute_dtype;
  return h;
}

int64_t chunk_rows_for(int64_t M, int64_t T) {
  const int64_t rows = std::max<int64_t>(1, (int64_t{1} << 20) / (4 * std::max<int64_t>(1, M)));
  return std::min(rows, std::max<int64_t>(1, T));
}

// ---------------------------------------------------------------- writer

std::vector<NamedValue> model_fields(const LogProbHeader& h) {
  return {{"head", h.head},
          {"d", h.d},
          {"bias", int64_t{h.bias ? 1 : 0}},
          {"M", h.M},
          {"T", h.T},
          {"dataset", h.dataset},
          {"split", h.split},
          {"compute_dtype", h.compute_dtype}};
}

void write_attribute(hid_t root, const NamedValue& field) {
  std::visit(
      [&](const auto& v) {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, bool>)
          h5::write_attribute(root, field.name, int64_t{v ? 1 : 0});
        else
          h5::write_attribute(root, field.name, v);
      },
      field.value);
}

void write_model_attributes(hid_t root, const LogProbHeader& h) {
  for (const auto& f : model_fields(h)) write_attribute(root, f);
}

LogProbWriter::LogProbWriter(std::string path, LogProbHeader header)
    : path_(std::move(path)), tmp_(h5::temporary_path(path_)), header_(std::move(header)) {
  const auto& h = header_;
  if (h.M < 1 || h.T < 1)
    throw OptionError::described(
        "header.M, header.T",
        path_ + ": M and T must be >= 1, got " + std::to_string(h.M) + ", " + std::to_string(h.T));
  head_kind_from_name(h.head);  // throws, listing the valid names
  // A spelling of the head: "<head>:<options>" (make_header writes spec.to_string() of the spec
  // the run parsed once; the reader parses it back). Checked by its name, not parsed again.
  if (!h.head_spec.empty() && h.head_spec.rfind(h.head + ":", 0) != 0)
    throw OptionError::described("header.head_spec", path_ + ": head_spec '" + h.head_spec +
                                                         "' is not a '" + h.head + "' head");
  if (!h.final_norm.empty()) final_norm_from_name(h.final_norm);  // throws, naming the values
  if (h.compute_dtype != "float32" && h.compute_dtype != "float64")
    throw OptionError::described(
        "header.compute_dtype",
        path_ + ": compute_dtype must be float32 or float64, got '" + h.compute_dtype + "'");
  if (!h.vocab.empty() && static_cast<int64_t>(h.vocab.size()) != h.M)
    throw OptionError::described("header.vocab",
                                 path_ + ": vocab has " + std::to_string(h.vocab.size()) +
                                     " words, expected M = " + std::to_string(h.M),
                                 "M = " + std::to_string(h.M) + " words");
  // log_probs (T x M float32) and targets (T int64): HDF5's own structures add a few KB.
  h5::require_free_space(
      path_,
      4.0 * static_cast<double>(h.T) * static_cast<double>(h.M) + 8.0 * static_cast<double>(h.T),
      "T = " + std::to_string(h.T) + " x M = " + std::to_string(h.M) +
          " float32 log-outputs and T targets");
  chunk_rows_ = chunk_rows_for(h.M, h.T);
  buffer_.reserve(static_cast<size_t>(chunk_rows_ * h.M));
  target_buffer_.reserve(static_cast<size_t>(chunk_rows_));

  file_ = h5::create_file(tmp_, path_);
  const auto T = static_cast<hsize_t>(h.T), M = static_cast<hsize_t>(h.M);
  log_probs_ = h5::create_dataset(file_.get(), "log_probs", H5T_IEEE_F32LE, {T, M},
                                  {static_cast<hsize_t>(chunk_rows_), M}, tmp_);
  targets_ = h5::create_dataset(file_.get(), "targets", H5T_STD_I64LE, {T}, {}, tmp_);

  const hid_t root = file_.get();
  h5::write_attribute(root, "format_version", kLogProbFormatVersion);
  write_model_attributes(root, h);
  if (!h.head_spec.empty()) h5::write_attribute(root, "head_spec", h.head_spec);
  h5::write_attribute(root, "seed", h.seed);
  if (!h.config.empty()) h5::write_attribute(root, "config", h.config);
  if (!h.input.empty()) h5::write_attribute(root, "input", h.input);
  if (!h.final_norm.empty()) h5::write_attribute(root, "final_norm", h.final_norm);
  if (!h.vocab.empty()) h5::write_strings(root, "vocab", h.vocab);
}

LogProbWriter::~LogProbWriter() {
  if (!finished_) {
    log_probs_.reset();
    targets_.reset();
    file_.reset();
    std::remove(tmp_.c_str());
  }
}

void LogProbWriter::write_rows(const float* rows, const int64_t* targets, int64_t count) {
  const int64_t m = header_.M;
  if (written_ + count > header_.T)
    throw OptionError::described("count",
                                 path_ + ": more rows than T = " + std::to_string(header_.T));
  for (int64_t r = 0; r < count; ++r) {
    const int64_t t = targets[r];
    if (t < 0 || t >= m)
      throw OptionError::described("targets", path_ + ": target " + std::to_string(t) + " of row " +
                                                  std::to_string(written_ + r) + " outside [0, " +
                                                  std::to_string(m) + ")");
    const float* row = rows + r * m;
    sum_log_prob_ += static_cast<double>(row[t]);
    buffer_.insert(buffer_.end(), row, row + m);
    target_buffer_.push_back(t);
    if (static_cast<int64_t>(target_buffer_.size()) == chunk_rows_) flush_chunk();
  }
  written_ += count;
}

void LogProbWriter::flush_chunk() {
  const hsize_t n = target_buffer_.size();
  if (n == 0) return;
  const auto begin = static_cast<hsize_t>(flushed_);
  const auto rows = h5::select_rows(log_probs_.get(), begin, n, tmp_);
  const auto targets = h5::select_rows(targets_.get(), begin, n, tmp_);
  if (!h5::write_slab(log_probs_.get(), H5T_NATIVE_FLOAT, rows, buffer_.data()) ||
      !h5::write_slab(targets_.get(), H5T_NATIVE_INT64, targets, target_buffer_.data()))
    throw WriteError(path_, path_ + ": not written: the write failed at row " +
                                std::to_string(flushed_) + "; is the disk full?");
  flushed_ += static_cast<int64_t>(n);
  buffer_.clear();
  target_buffer_.clear();
}

double LogProbWriter::finish() {
  // internal: every producer writes the T rows it announced in the header, counted from the
  // same data (an interrupted run never calls finish()); no input makes the counts differ.
  if (written_ != header_.T)
    throw std::logic_error(path_ + ": finish() after " + std::to_string(written_) +
                           " rows, expected T = " + std::to_string(header_.T));
  flush_chunk();
  header_.ppl = std::exp(-sum_log_prob_ / static_cast<double>(written_));
  h5::write_attribute(file_.get(), "ppl", header_.ppl);
  log_probs_.reset();
  targets_.reset();
  h5::finish_file(file_, tmp_, path_);  // the destructor removes tmp_ if this throws
  finished_ = true;
  return header_.ppl;
}

// ---------------------------------------------------------------- reader

LogProbReader::LogProbReader(std::string path, Contract contract) : path_(std::move(path)) {
  file_ = h5::open_file(path_, /*write=*/false);
  const hid_t root = file_.get();
  plain_ = contract == Contract::allow_plain && !h5::has_attribute(root, "format_version");
  log_probs_ = h5::open_dataset(root, "log_probs", path_);

  // /log_probs: float32 or float64, rank 2.
  const auto type = h5::element_type(log_probs_.get());
  const bool is_float = type.type_class == H5T_FLOAT;
  const size_t size = type.size;
  require(is_float && (size == 4 || size == 8), path_, "dataset '/log_probs' dtype",
          "float32 or float64", is_float ? "float" + std::to_string(8 * size) : "a non-float type");
  float64_ = size == 8;
  const auto d = h5::dims(log_probs_.get());
  require(d.size() == 2, path_, "dataset '/log_probs' rank", "2 (T, M)", shape_string(d));
  h5::require_stored(log_probs_.get(), "log_probs", path_);
  if (plain_) {
    require(d[0] >= 1 && d[1] >= 1, path_, "dataset '/log_probs' shape", "T >= 1 and M >= 1",
            shape_string(d));
    header_.T = static_cast<int64_t>(d[0]);
    header_.M = static_cast<int64_t>(d[1]);
    header_.compute_dtype = float64_ ? "float64" : "float32";
    read_input_attribute();
    return;
  }
  auto targets = h5::open_dataset(root, "targets", path_);
  read_contract_attributes();
  const std::vector<hsize_t> want = {static_cast<hsize_t>(header_.T),
                                     static_cast<hsize_t>(header_.M)};
  require(d == want, path_, "dataset '/log_probs' shape",
          shape_string(want) + " from attributes T, M", shape_string(d));
  // /targets: integer, shape (T,).
  require(h5::element_type(targets.get()).type_class == H5T_INTEGER, path_,
          "dataset '/targets' dtype", "int64", "a non-integer type");
  const auto td = h5::dims(targets.get());
  const std::vector<hsize_t> twant = {static_cast<hsize_t>(header_.T)};
  require(td == twant, path_, "dataset '/targets' shape", shape_string(twant), shape_string(td));
  h5::require_stored(targets.get(), "targets", path_);
  // Every target a column of /log_probs: ppl and every per-row use index by it.
  const auto t = read_targets();
  const auto bad =
      std::find_if(t.begin(), t.end(), [&](int64_t v) { return v < 0 || v >= header_.M; });
  if (bad != t.end())
    require(false, path_, "dataset '/targets' row " + std::to_string(bad - t.begin()),
            "a value in [0, " + std::to_string(header_.M) + ")", std::to_string(*bad));
  has_vocab_ = h5::has_dataset(root, "vocab");
  if (has_vocab_) {
    h5::Handle vocab = h5::open_dataset(root, "vocab", path_);
    const auto vd = h5::dims(vocab.get());
    const std::vector<hsize_t> vwant = {static_cast<hsize_t>(header_.M)};
    require(vd == vwant, path_, "dataset '/vocab' shape", shape_string(vwant) + " from M",
            shape_string(vd));
    h5::require_stored(vocab.get(), "vocab", path_);
  }
}

void LogProbReader::read_contract_attributes() {
  const hid_t root = file_.get();
  auto& h = header_;
  const int64_t version = h5::read_int_attribute(root, "format_version", path_);
  if (version != 1 && version != kLogProbFormatVersion)
    throw FormatError(path_, "attribute 'format_version'",
                      "1 or " + std::to_string(kLogProbFormatVersion), std::to_string(version));
  h.head = h5::read_string_attribute(root, "head", path_);
  try {
    head_kind_from_name(h.head);
  } catch (const OptionError& e) {
    throw InputError::described(path_, "attribute 'head'",
                                path_ + ": attribute 'head': " + e.what());
  }
  if (h5::has_attribute(root, "head_spec")) {
    h.head_spec = h5::read_string_attribute(root, "head_spec", path_);
    std::string name;
    try {
      name = HeadSpec::parse(h.head_spec).name();
    } catch (const OptionError& e) {
      throw InputError::described(path_, "attribute 'head_spec'",
                                  path_ + ": attribute 'head_spec': " + e.what());
    }
    require(name == h.head, path_, "attribute 'head_spec'", "a spelling of head '" + h.head + "'",
            "\"" + h.head_spec + "\"");
  }
  h.d = h5::read_int_attribute(root, "d", path_);
  require(h.d >= 1, path_, "attribute 'd'", ">= 1", std::to_string(h.d));
  const int64_t bias = h5::read_int_attribute(root, "bias", path_);
  require(bias == 0 || bias == 1, path_, "attribute 'bias'", "0 or 1", std::to_string(bias));
  h.bias = bias == 1;
  // Version 1 named the shape vocab_size and num_tokens; version 2 names it M and T, as rank.h5.
  const char* m_name = version == 1 ? "vocab_size" : "M";
  const char* t_name = version == 1 ? "num_tokens" : "T";
  h.M = h5::read_int_attribute(root, m_name, path_);
  require(h.M >= 1, path_, std::string("attribute '") + m_name + "'", "at least 1 column",
          std::to_string(h.M));
  h.T = h5::read_int_attribute(root, t_name, path_);
  require(h.T >= 1, path_, std::string("attribute '") + t_name + "'", "at least 1 row",
          std::to_string(h.T));
  h.dataset = h5::read_string_attribute(root, "dataset", path_);
  h.split = h5::read_string_attribute(root, "split", path_);
  h.seed = h5::read_int_attribute(root, "seed", path_);
  h.ppl = h5::read_double_attribute(root, "ppl", path_);
  h.compute_dtype = h5::read_string_attribute(root, "compute_dtype", path_);
  require(h.compute_dtype == "float32" || h.compute_dtype == "float64", path_,
          "attribute 'compute_dtype'", "\"float32\" or \"float64\"", "\"" + h.compute_dtype + "\"");
  if (h5::has_attribute(root, "config"))
    h.config = h5::read_string_attribute(root, "config", path_);
  read_input_attribute();
}

void LogProbReader::read_input_attribute() {
  const hid_t root = file_.get();
  if (h5::has_attribute(root, "final_norm")) {
    header_.final_norm = h5::read_string_attribute(root, "final_norm", path_);
    require(header_.final_norm == "none" || header_.final_norm == "layernorm" ||
                header_.final_norm == "rmsnorm",
            path_, "attribute 'final_norm'", "\"none\", \"layernorm\" or \"rmsnorm\"",
            "\"" + header_.final_norm + "\"");
  }
  if (!h5::has_attribute(root, "input")) return;
  header_.input = h5::read_string_attribute(root, "input", path_);
  require(header_.input == "logprobs" || header_.input == "logits", path_, "attribute 'input'",
          "\"logprobs\" or \"logits\"", "\"" + header_.input + "\"");
}

std::vector<std::string> LogProbReader::read_vocab() const {
  if (!has_vocab_) return {};
  return h5::read_strings(file_.get(), "vocab", path_);
}

void LogProbReader::read_rows(int64_t begin, int64_t count, float* out) const {
  read_rows(begin, count, H5T_NATIVE_FLOAT, out);
}

void LogProbReader::read_rows(int64_t begin, int64_t count, double* out) const {
  read_rows(begin, count, H5T_NATIVE_DOUBLE, out);
}

void LogProbReader::read_rows(int64_t begin, int64_t count, hid_t memory_type, void* out) const {
  if (begin < 0 || count < 0 || begin + count > rows())
    throw OptionError::described("begin, count", path_ + ": rows [" + std::to_string(begin) + ", " +
                                                     std::to_string(begin + count) +
                                                     ") outside [0, " + std::to_string(rows()) +
                                                     ")");
  const auto slab = h5::select_rows(log_probs_.get(), static_cast<hsize_t>(begin),
                                    static_cast<hsize_t>(count), path_);
  if (!h5::read_slab(log_probs_.get(), memory_type, slab, out))
    throw FormatError::described(path_, "dataset '/log_probs'",
                                 path_ + ": reading /log_probs rows " + std::to_string(begin) +
                                     ".." + std::to_string(begin + count) +
                                     " failed (truncated file?)");
  read_ahead(begin, begin + count);
}

/// Rows read in order (a pass over the file) have the next kReadAheadBytes of /log_probs asked of
/// the kernel's read-ahead (POSIX_FADV_WILLNEED: the reads start now, in the background), so that
/// the disk works while the caller computes on the rows it has; the reads of a pass were
/// otherwise synchronous past the kernel's own read-ahead window, the computation waiting for
/// each and the disk for the computation (measured on the range start's pass over WikiText-2's
/// 32.7 GB: 0.8 GB/s from the disk without, 1.1 GB/s with; `cat` 2 to 2.9 GB/s). A hint only:
/// the rows read are the same, and a file whose driver gives no descriptor is read as before.
void LogProbReader::read_ahead(int64_t begin, int64_t end) const {
  constexpr int64_t kReadAheadBytes = int64_t{256} << 20;
  if (begin != read_end_) advised_ = end;  // not where the last read ended: a new pass
  read_end_ = end;
  const int64_t row_bytes = cols() * (float64_ ? 8 : 4);
  const int64_t until = std::min(rows(), end + std::max<int64_t>(1, kReadAheadBytes / row_bytes));
  const int64_t from = std::max(end, advised_);
  if (from >= until) return;
  advised_ = until;
  h5::advise_will_need(file_.get(), log_probs_.get(), static_cast<hsize_t>(from),
                       static_cast<hsize_t>(until), static_cast<hsize_t>(row_bytes));
}

std::vector<int64_t> LogProbReader::read_targets() const {
  // internal: callers read /targets of contract files only (they check plain() first); a plain
  // file's lack of /targets is reported by the reader's own open under Contract::full.
  if (plain_) throw std::logic_error(path_ + ": a plain file (no format_version) has no /targets");
  auto ds = h5::open_dataset(file_.get(), "targets", path_);
  std::vector<int64_t> out(static_cast<size_t>(rows()));
  if (!h5::read_all(ds.get(), H5T_NATIVE_INT64, out.data()))
    throw FormatError::described(path_, "dataset '/targets'",
                                 path_ + ": reading /targets failed (truncated file?)");
  return out;
}

}  // namespace sb::contract
