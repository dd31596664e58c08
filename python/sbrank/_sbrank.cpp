// sbrank._sbrank: the rank analysis as a compiled module (pybind11), wrapped by sbrank/__init__.py.
//
//   import sbrank, numpy as np
//   r = sbrank.analyse(np.load("lp.npy", mmap_mode="r"), head="softmax", d=768, bias=1)
//   r["rank"], r["verdict"], r["certified"], r["singular_values"]
//
// analyse() takes a path (HDF5 or .npy, as rank_analysis does) or a 2-D numpy array of float32 or
// float64 at any strides (C or Fortran order, a slice, a numpy.memmap), read where it lies: no
// copy (analysis/array_source.h). It releases the GIL while it computes and returns the fields of
// `rank_analysis --json` as a dict, with "singular_values" a float64 numpy array where they were
// computed (None for --rank-only's inertia count). Bad input raises, with the line the command
// line prints after "rank_analysis: ", the sbrank class of its sb::error_report kind (common/
// errors.h; the classes are sbrank/__init__.py's): sbrank.InputError / FormatError (ValueError;
// .file, .field, .expected), sbrank.OptionError (ValueError; .option), sbrank.WriteError (OSError;
// .filename), MemoryError; anything else ValueError.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cblas.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "analysis/analyse.h"
#include "analysis/array_source.h"
#include "analysis/estimate_d.h"
#include "analysis/stream_source.h"
#include "common/blas_core.h"
#include "common/errors.h"
#include "contract/rank_result.h"

namespace py = pybind11;
using namespace sb::analysis;

namespace {

// The array as an ArrayView, checked: 2-D, float32 or float64 in native byte order.
ArrayView view_of(const py::array& a, const std::string& input) {
  if (a.ndim() != 2)
    throw sb::InputError("<array>", "shape", "2-D (T, M)", std::to_string(a.ndim()) + "-D");
  const auto dtype = a.dtype();
  const bool native_float = dtype.kind() == 'f' && dtype.attr("isnative").cast<bool>();
  const bool f32 = native_float && dtype.itemsize() == 4,
             f64 = native_float && dtype.itemsize() == 8;
  if (!f32 && !f64)
    throw sb::InputError("<array>", "dtype", "float32 or float64 in native byte order",
                         "'" + dtype.attr("str").cast<std::string>() + "'");
  ArrayView v;
  v.data = a.data();
  v.rows = a.shape(0);
  v.cols = a.shape(1);
  v.row_stride = a.strides(0);
  v.col_stride = a.strides(1);
  v.float64 = f64;
  v.input = input == "auto" ? "" : input;
  return v;
}

// Text for Python: UTF-8, a file name's other bytes kept as surrogates (as os.fsdecode does).
py::str python_text(const std::string& text) {
  PyObject* s =
      PyUnicode_DecodeUTF8(text.data(), static_cast<py::ssize_t>(text.size()), "surrogateescape");
  if (!s) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(s);
}

// Raises an exception of analyse() in Python, by its kind in the one mapping (common/errors.h's
// error_report, which also gives the line): input and format -> sbrank.InputError / FormatError
// (.file, .field, .expected), option -> sbrank.OptionError (.option), write -> sbrank.WriteError
// (.filename), memory -> MemoryError, anything else -> ValueError. The classes are defined once,
// in sbrank/__init__.py, the package this module belongs to.
[[noreturn]] void raise_python(const std::exception_ptr& error) {
  try {  // a Python exception raised inside the analysis (Ctrl-C's KeyboardInterrupt): as it is
    std::rethrow_exception(error);
  } catch (py::error_already_set&) {
    throw;
  } catch (...) {
  }
  using Kind = sb::ErrorReport::Kind;
  const sb::ErrorReport report = sb::error_report(error);
  if (report.kind == Kind::memory) {
    PyErr_SetString(PyExc_MemoryError, "out of memory while analysing the matrix");
    throw py::error_already_set();
  }
  const py::str line = python_text(report.line);
  py::object raised = py::reinterpret_borrow<py::object>(PyExc_ValueError)(line);
  if (report.kind != Kind::other) {
    const py::module_ sbrank = py::module_::import("sbrank");
    try {
      std::rethrow_exception(error);  // to reach the fields the kind's class carries
    } catch (const sb::InputError& e) {
      raised = sbrank.attr(report.kind == Kind::format ? "FormatError" : "InputError")(
          line, python_text(e.file()), python_text(e.field()), python_text(e.expected()));
    } catch (const sb::OptionError& e) {
      raised = sbrank.attr("OptionError")(line, python_text(e.option()), python_text(e.expected()));
    } catch (const sb::WriteError& e) {
      raised = sbrank.attr("WriteError")(line, python_text(e.file()));
    } catch (...) {  // every other kind was mapped above
    }
  }
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(raised.ptr())), raised.ptr());
  throw py::error_already_set();
}

// A Python object shared with C++ threads: copies of the holder never touch the reference count
// (which needs the GIL); the object is released where the last holder dies, with the GIL held
// (the end of analyse_py).
using Shared = std::shared_ptr<py::object>;

// One pass of a stream: the iterator of what the caller's callable returned, each item a numpy
// array (sbrank/__init__.py turns tensors into arrays block by block before they get here).
class PyPass final : public BlockPass {
 public:
  PyPass(py::object iterator, int pass) : it_(std::move(iterator)), pass_(pass) {}
  ~PyPass() override {
    py::gil_scoped_acquire gil;
    current_ = py::array();
    it_ = py::object();
  }
  bool next(ArrayView& block) override {
    py::gil_scoped_acquire gil;
    const std::string where =
        "<stream>: pass " + std::to_string(pass_) + ", block " + std::to_string(index_);
    PyObject* item = PyIter_Next(it_.ptr());
    if (!item) {
      if (!PyErr_Occurred()) return false;
      py::error_already_set e;
      throw sb::FormatError::described(where, "",
                                       where + ": the blocks raised " + sb::first_line(e.what()));
    }
    py::object obj = py::reinterpret_steal<py::object>(item);
    if (!py::isinstance<py::array>(obj))
      throw sb::InputError::described(
          where, "",
          where + ": expected a numpy array or a torch tensor, got " +
              py::str(py::type::of(obj).attr("__name__")).cast<std::string>(),
          "a numpy array or a torch tensor");
    current_ = py::reinterpret_borrow<py::array>(obj);
    if (current_.ndim() != 2)
      throw sb::InputError(where, "shape", "2-D (rows, M)", std::to_string(current_.ndim()) + "-D");
    block = view_of(current_, "");
    block.name = where;
    ++index_;
    return true;
  }

 private:
  py::object it_;
  py::array current_;  // alive until the next block is asked for
  int pass_;
  int64_t index_ = 0;
};

// The matrix argument as a source: a stream of row blocks (a callable; M needed, T optional), a
// path to an HDF5 or .npy file, or an array (kept alive in `array` while it is read).
std::unique_ptr<MatrixSource> open_source(const py::object& matrix, const std::string& input,
                                          const std::string& method, std::optional<int64_t> M,
                                          std::optional<int64_t> T, py::array& array) {
  std::unique_ptr<MatrixSource> source;
  const bool stream = !py::isinstance<py::str>(matrix) && !py::isinstance<py::array>(matrix) &&
                      !py::hasattr(matrix, "__fspath__") && PyCallable_Check(matrix.ptr());
  if ((M || T) && !stream)
    throw sb::OptionError::described(M ? "M" : "T",
                                     "M, T: only for a stream of row blocks (a callable)");
  if (stream) {
    if (!M) throw sb::OptionError("M", "the vocabulary size of the stream's blocks");
    if (method == "exact")
      throw sb::OptionError::described("method",
                                       "method=exact: a stream is never stored whole; use gram or "
                                       "sketch (or auto)");
    auto start = std::make_shared<py::object>(matrix);
    auto passes = std::make_shared<int>(0);
    PassFactory factory = [start, passes]() -> std::unique_ptr<BlockPass> {
      py::gil_scoped_acquire gil;
      ++*passes;
      try {
        return std::make_unique<PyPass>(py::iter((*start)()), *passes);
      } catch (py::error_already_set& e) {
        throw sb::FormatError::described("<stream>", "",
                                         "<stream>: pass " + std::to_string(*passes) +
                                             ": calling the blocks' callable raised " +
                                             sb::first_line(e.what()));
      }
    };
    {
      py::gil_scoped_release release;
      source =
          std::make_unique<StreamSource>(factory, *M, T.value_or(-1), input == "auto" ? "" : input);
    }
  } else if (py::isinstance<py::str>(matrix) || py::hasattr(matrix, "__fspath__")) {
    const auto path = py::module_::import("os").attr("fspath")(matrix).cast<std::string>();
    py::gil_scoped_release release;
    source = open_matrix(path);
  } else if (py::isinstance<py::array>(matrix)) {
    array = py::reinterpret_borrow<py::array>(matrix);
    source = std::make_unique<ArraySource>(view_of(array, input));
  } else {
    throw sb::OptionError("matrix",
                          "a 2-D numpy array or CPU torch tensor (float32 or float64) or a path "
                          "to an HDF5 or .npy file",
                          py::str(py::type::of(matrix).attr("__name__")).cast<std::string>());
  }
  return source;
}

// The progress callback (called with the GIL) and the Ctrl-C poll. Python's handler only sets a
// flag while the analysis runs without the GIL; the poll asks for it between blocks
// (AnalyseOptions::poll) and raises KeyboardInterrupt there.
void set_callbacks(AnalyseOptions& o, const py::object& progress) {
  if (!progress.is_none()) {
    auto cb = std::make_shared<py::object>(progress);
    o.on_progress = [cb](const std::string& line) {
      py::gil_scoped_acquire gil;
      (*cb)(line);
    };
  }
  o.poll = [] {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  };
}

py::dict analyse_py(const py::object& matrix, std::optional<std::string> head,
                    std::optional<int64_t> d, std::optional<int> bias, const std::string& method,
                    const std::string& input, std::optional<std::string> eps,
                    std::optional<double> budget_gb, const std::string& gram, bool spectrum,
                    bool verdict_only, uint64_t seed, std::optional<int> threads,
                    std::optional<int64_t> M, std::optional<int64_t> T, const py::object& progress,
                    bool estimate, std::optional<std::string> final_norm) {
  AnalyseOptions o;
  o.method = method;
  o.gram = gram;
  o.input = input;
  o.eps = eps.value_or("");
  o.spectrum = spectrum;
  o.verdict_only = verdict_only;
  o.seed = seed;
  if (head) o.facts.head = *head;
  o.facts.d = d;
  o.facts.bias = bias;
  if (final_norm) o.facts.final_norm = *final_norm;
  std::unique_ptr<MatrixSource> source;
  std::string estimate_text;  // estimate_d=True: estimate_json's object
  py::array array;            // keeps a given array alive while it is read
  sb::contract::RankResult result;
  try {
    // The command line's checks and messages, spelled as this function's arguments.
    check_front_end_options(o, budget_gb, threads, OptionSpelling{/*command_line=*/false});
    if (budget_gb) o.budget_bytes = *budget_gb * double(1ull << 30);
    if (threads) openblas_set_num_threads(*threads);
    if (estimate && !spectrum)
      throw sb::OptionError::described(
          "estimate_d",
          "estimate_d=True with spectrum=False: the estimate reads the gap "
          "between singular values, which the inertia count does not give");
    set_callbacks(o, progress);
    source = open_source(matrix, input, o.method, M, T, array);
    py::gil_scoped_release release;
    const auto plan = plan_analysis(*source, o, memory_limit(o));
    result = analyse(*source, plan, o);
    if (estimate) {
      // As rank_analysis: a bias given here, else a contract file's attribute, else none.
      const std::string bias_from = bias ? "--bias" : source->header() ? "attribute 'bias'" : "";
      estimate_text = estimate_json(estimate_d(result, bias_from));
    }
  } catch (...) {
    raise_python(std::current_exception());
  }
  py::dict out = py::module_::import("json").attr("loads")(sb::contract::rank_result_json(result));
  if (auto* s = dynamic_cast<StreamSource*>(source.get())) out["passes"] = s->passes();
  if (!estimate_text.empty())
    out["estimate_d"] = py::module_::import("json").attr("loads")(estimate_text);
  if (result.singular_values.empty())
    out["singular_values"] = py::none();
  else
    out["singular_values"] = py::array_t<double>(
        static_cast<py::ssize_t>(result.singular_values.size()), result.singular_values.data());
  return out;
}

}  // namespace

namespace {

// OpenBLAS picks its kernels when it is loaded, which in a Python process happened before this
// module (numpy loads it): a binary restarts itself on the better core (common/blas_core.h), a
// module cannot restart its interpreter. It says in one warning what to set instead.
void warn_if_generic_core() {
  const auto upgrade = sb::blas::pending_upgrade();
  if (!upgrade) return;
  const std::string text = "sbrank: OpenBLAS runs its generic '" + upgrade->core +
                           "' kernels on a CPU that runs '" + upgrade->better +
                           "' ones; start Python with OPENBLAS_CORETYPE=" + upgrade->better +
                           " for the fast ones (OpenBLAS chooses when it is loaded)";
  PyErr_WarnEx(PyExc_RuntimeWarning, text.c_str(), 1);
}

py::dict blas_py() {
  const auto info = sb::blas::blas_info();
  py::dict d;
  d["library"] = info.library;
  d["core"] = info.core;
  d["threads"] = info.threads;
  return d;
}

}  // namespace

PYBIND11_MODULE(_sbrank, m) {
  warn_if_generic_core();
  m.def("blas", &blas_py,
        "The BLAS this process runs: {'library': openblas_get_config(), 'core': the kernel "
        "family, 'threads': its thread count}. Every analyse() result also holds blas_core, "
        "blas_library and blas_threads.");
  m.doc() =
      "The numerical rank of a log-output matrix (softmax-bottleneck's rank analysis): "
      "sbrank.analyse(matrix_or_path, head=..., d=..., bias=...) returns the fields of "
      "`rank_analysis --json` as a dict.";
  m.def("analyse", &analyse_py, py::arg("matrix"), py::kw_only(), py::arg("head") = py::none(),
        py::arg("d") = py::none(), py::arg("bias") = py::none(), py::arg("method") = "auto",
        py::arg("input") = "auto", py::arg("eps") = py::none(), py::arg("budget_gb") = py::none(),
        py::arg("gram") = "auto", py::arg("spectrum") = true, py::arg("verdict_only") = false,
        py::arg("seed") = 0, py::arg("threads") = py::none(), py::arg("M") = py::none(),
        py::arg("T") = py::none(), py::arg("progress") = py::none(), py::arg("estimate_d") = false,
        py::arg("final_norm") = py::none(),
        R"(Singular values and numerical rank of a T x M log-output matrix (rows = tokens).

matrix: a 2-D numpy array, float32 or float64, any strides (C or Fortran order, a slice, a
  numpy.memmap), read without a copy; or a path to an HDF5 file (a trainer's dump or a plain
  /log_probs) or a .npy file.
head, d, bias: the model's facts, needed for an array or a plain file (the bound d + 1 + bias
  for log-probabilities, d + bias for logits); a contract file has them.
final_norm: none | layernorm | rmsnorm, the model's normalisation of the decoder's input (a
  Transformer's final LayerNorm: bound d + 1 for log-probabilities whatever the bias, d for
  logits); default: the file's attribute, else none.
method: auto | exact | gram | sketch. input: auto | logprobs | logits. eps: float32 | float64 |
  a number (default: the data's dtype). budget_gb: the memory the analysis may use.
gram: auto | rows | columns. spectrum: False counts the rank by inertia (gram) without singular
  values. verdict_only: the sketch stops once within / exceeds is certain. seed: the sketch's
  Gaussian draws. threads: BLAS threads.
A stream, never stored: matrix = a callable returning an iterable of row blocks (numpy arrays,
  rows x M, any block sizes), called again for each pass the method needs; M (required) and T
  (optional: without it a first pass counts the rows). Memory: O(M^2) for the gram path,
  O(M k) for the sketch, never O(T M). result["passes"] counts the calls.
progress: a callable receiving each progress line (None: silent).
estimate_d: also read the model's hidden size d off the spectrum's largest gap
  (`rank_analysis --estimate-d`): result["estimate_d"] = {"d": ..., "gap": ..., ...}.

Returns a dict with the fields of `rank_analysis --json` (rank, tol, bound, verdict, certified,
rank_sweep, largest_gap, ...) and singular_values (numpy float64, descending) or None.
Raises, with one line naming the input, the field and the expected value: sbrank.InputError
(.file, .field, .expected; sbrank.FormatError for a file that is not HDF5 or .npy at all) or
sbrank.OptionError (.option) for an argument outside what it takes, both ValueError; MemoryError
when the memory runs out.

Example (PyTorch):
  r = sbrank.analyse(torch.log_softmax(logits, -1).numpy(), head="softmax", d=768, bias=1))");
}
