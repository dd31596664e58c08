# Thin driver over CMake/CTest. On a fresh Debian 12 machine `make test` and `make reproduce`
# install what is missing, build and run; nothing else needs typing.

BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_ARGS ?=

# Every Debian package the project needs, and nothing else.
DEBIAN_PACKAGES := cmake ninja-build g++ pkg-config lld \
  libtorch-dev libopenblas-dev libopenblas0-openmp liblapacke-dev \
  libhdf5-dev hdf5-tools \
  catch2 libbenchmark-dev libcli11-dev nlohmann-json3-dev libtomlplusplus-dev \
  python3-numpy python3-scipy python3-h5py python3-matplotlib curl unzip \
  python3-torch zlib1g-dev dataset-fashion-mnist \
  pybind11-dev python3-dev libopenmpi-dev openmpi-bin
# The benchmarks need nothing beyond DEBIAN_PACKAGES today (python3-torch, the PyTorch reference of
# bench-train, is there for the parity test); `make deps-bench` stays as their entry point.
BENCH_PACKAGES :=
# Only `make test-slurm` needs these: a one-node Slurm cluster for the Slurm backend's test.
SLURM_PACKAGES := slurmctld slurmd slurm-client munge
# Only `make fuzz` needs these: clang with libFuzzer and the sanitizer runtimes, and what the
# harnesses' readers build on (no LibTorch: fuzz/CMakeLists.txt).
FUZZ_PACKAGES := clang libclang-rt-14-dev cmake ninja-build libhdf5-dev zlib1g-dev libcli11-dev \
  libtomlplusplus-dev

# Another LibTorch than Debian's (e.g. a CUDA build; docs/clusters-and-gpus.md, "CUDA builds"), in a fresh BUILD_DIR:
#   TORCH_PREFIX=/path/to/libtorch        an unpacked LibTorch zip from pytorch.org
#   TORCH_PYTHON=/path/to/venv/bin/python the LibTorch inside that Python's pip torch wheel
#                                         (torch.utils.cmake_prefix_path; cmake/torch_prefix.sh)
# Either one drops Debian's libtorch-dev from the packages `make deps` installs.
TORCH_PREFIX ?=
TORCH_PYTHON ?=
ifneq ($(TORCH_PREFIX)$(TORCH_PYTHON),)
  DEBIAN_PACKAGES := $(filter-out libtorch-dev,$(DEBIAN_PACKAGES))
endif

# ccache, when present; the precompiled header needs these sloppiness settings to be cached.
CCACHE := $(shell command -v ccache 2>/dev/null)
ifneq ($(CCACHE),)
  CMAKE_ARGS += -DCMAKE_CXX_COMPILER_LAUNCHER=$(CCACHE) -DCMAKE_C_COMPILER_LAUNCHER=$(CCACHE)
  export CCACHE_SLOPPINESS := pch_defines,time_macros,include_file_mtime,include_file_ctime
endif

.PHONY: all deps deps-bench deps-slurm deps-fuzz data configure build test test-long test-ready test-slurm fuzz bench bench-rank bench-rank-sketch bench-rank-tail bench-rank-count bench-rank-large bench-rank-wt2 bench-rank-llama bench-rank-trained bench-mpi bench-wordlm-binary bench-train bench-train-transformer bench-train-adaptive bench-step bench-profile-load plots reproduce readme claims fit format clean help

all: build

help:
	@echo "make deps       install the missing Debian packages ($(words $(DEBIAN_PACKAGES)) in all)"
	@echo "make deps-bench also the benchmarks' packages ($(BENCH_PACKAGES))"
	@echo "make data       find (datasets/, ../shared/datasets) or download PTB and WikiText-2, md5-verified"
	@echo "make data CORPUS=billion  download One Billion Word (1.8 GB, SHA-256-verified) and prepare it"
	@echo "make build      configure ($(BUILD_TYPE), ninja) and build into $(BUILD_DIR)/"
	@echo "make test       deps + data (skipped tests without it) + build + ctest (all but the long ones)"
	@echo "make test-long  the tests that take minutes each (the smoke profile end to end, ...)"
	@echo "make test-slurm install Slurm + munge, then the Slurm backend's test on a one-node cluster (root)"
	@echo "make fuzz       libFuzzer harnesses of the file readers, FUZZ_SECONDS=$(FUZZ_SECONDS) s each (clang; $(FUZZ_DIR)/)"
	@echo "make bench      run the head and BLAS benchmarks and print their ratio tables"
	@echo "make bench-rank rank-analysis benchmarks: a PTB-size matrix (~17 min), then the sketch at GPT-2's shape (~15 min)"
	@echo "make bench-rank-tail  the sketch's power steps on a count with a long tail below tol (~15 min)"
	@echo "make bench-rank-count a count of rank 1000 at WikiText-2's test size, stopped at 30 min (~1 h, 33 GB disk)"
	@echo "make bench-rank-large the sketch at WikiText-2's test size and Llama 3's vocabulary (~1 h, 90 GB disk)"
	@echo "make bench-rank-trained TRAINED=DUMP.h5:RANK.json  the sketch on a kept wt2-proxy dump beside its Gram run (<= 30 min)"
	@echo "make bench-train LM training/eval speed vs a PyTorch reference, ratios: results/bench/train_speed.md (~10 min)"
	@echo "make bench-step     where a training step goes, per operator: results/bench/step_profile.md (~5 min)"
	@echo "make bench-profile-load  a profile's load with the trainers' --describe answers asked vs kept: results/bench/profile_load.md (~3 min)"
	@echo "make bench-train-transformer  train_transformer vs the same model in PyTorch: results/bench/transformer_speed.md (~4 min)"
	@echo "make bench-train-adaptive  the adaptive heads vs the full ones at M = 33278: results/bench/adaptive_speed.md (~5 min; bench-train runs it too)"
	@echo "make plots      synthetic_logprobs + rank_analysis for every head: results/synthetic/"
	@echo "make reproduce  deps + build + data + the pipeline of PROFILE=$(PROFILE) (cpu ~2h20m, smoke, paper = plan only,"
	@echo "                classify = every head on Fashion-MNIST, ~45 min: no PTB needed)"
	@echo "                LANES=n: n runs at a time, each with the profile's threads (default: the profile's"
	@echo "                jobs; 0 = cores // threads); JOBS=n is the build's parallelism only"
	@echo "                SCHEDULER=slurm [PARTITION=p ACCOUNT=a WAIT=1]: submit it to Slurm; add -n for the job graph"
	@echo "make readme     copy results/$(PROFILE)/summary.md into docs/reproducing.md, results/claims.md into README.md"
	@echo "make fit        the heads fitted to the PTB bigram matrix to convergence: KL and rank against d (~1h20m)"
	@echo "make claims     the claims table (verdicts computed from the results) into results/claims.md and README.md"
	@echo "make format     clang-format every C++ source"
	@echo "make clean      remove $(BUILD_DIR)/"

# $(call install_missing,PACKAGES): apt-get install the ones not installed yet.
define install_missing
	@missing=""; \
	for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then echo "deps: all $(words $(1)) Debian packages present"; exit 0; fi; \
	echo "deps: installing:$$missing"; \
	if [ "$$(id -u)" -ne 0 ]; then \
	  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else \
	    echo "deps: missing packages:$$missing; run 'make deps' as root (or install them with apt-get)" >&2; exit 1; fi; \
	fi; \
	if [ -z "$$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' -print -quit 2>/dev/null)" ] || \
	   ! apt-cache show $$missing >/dev/null 2>&1; then \
	  $$SUDO apt-get update -qq || exit 1; \
	fi; \
	DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing
endef

deps:
	$(call install_missing,$(DEBIAN_PACKAGES))

deps-bench: deps
	$(call install_missing,$(BENCH_PACKAGES))

deps-slurm:
	$(call install_missing,$(SLURM_PACKAGES))

deps-fuzz:
	$(call install_missing,$(FUZZ_PACKAGES))

data:
ifeq ($(CORPUS),)
	datasets/fetch.sh ptb
	datasets/fetch.sh wikitext-2
else
	datasets/fetch.sh $(CORPUS)
endif

$(BUILD_DIR)/build.ninja:
ifneq ($(TORCH_PYTHON),)
	prefix=$$(cmake/torch_prefix.sh $(TORCH_PYTHON)) && \
	  cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	    -DCMAKE_PREFIX_PATH="$$prefix" $(CMAKE_ARGS)
else
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  $(if $(TORCH_PREFIX),-DCMAKE_PREFIX_PATH=$(TORCH_PREFIX)) $(CMAKE_ARGS)
endif

configure: $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The corpora first (found or downloaded, md5-checked); without them (no ../shared, no internet)
# the tests that need them are reported as skipped, each with one line saying `make data`.
#
# The tests' processes keep the BLAS kernels they start with (SB_BLAS_RESTARTED=1: no restart where
# OpenBLAS picks its generic kernels, common/blas_core.h), so a program and the test comparing it
# with an in-process computation (sbrank, the Catch2 cases) round alike, bit for bit, and stderr
# holds only the program's own lines. test_blas_core unsets it to test the restart itself.
TEST_ENV := SB_BLAS_RESTARTED=1
test: test-ready
	cd $(BUILD_DIR) && $(TEST_ENV) ctest --output-on-failure -j $(JOBS) -LE "slurm|long"

# The tests that take minutes each and have no smaller version testing the same (ctest label
# "long": the smoke profile end to end, the PyTorch parity, ...; tests/CMakeLists.txt). .ci/run
# runs them after `make test`.
test-long: test-ready
	cd $(BUILD_DIR) && $(TEST_ENV) ctest --output-on-failure -j $(JOBS) -L long

# What both need first: the packages, the corpora (or one line saying the tests that need them
# will be skipped) and the build.
test-ready: deps
	@$(MAKE) --no-print-directory data || echo "make $(MAKECMDGOALS): PTB / WikiText-2 not found and not downloadable: the tests that need them will be skipped (get the corpora with 'make data')"
	@$(MAKE) --no-print-directory build

# The Slurm backend on a real one-node cluster (ctest label "slurm"; not in `make test`, which
# installs no daemons). Needs root: the test starts munged, slurmctld and slurmd on 127.0.0.1.
# It compares with the local smoke run's outputs (make test's), making them first when missing
# (~10 min more). Without the packages (not root, no apt) the test is skipped with one line.
test-slurm: deps
	@$(MAKE) --no-print-directory deps-slurm || echo "make test-slurm: could not install $(SLURM_PACKAGES): the Slurm test will be skipped"
	@$(MAKE) --no-print-directory data || echo "make test-slurm: PTB not found: the Slurm test will be skipped"
	@$(MAKE) --no-print-directory build
	cd $(BUILD_DIR) && ctest --output-on-failure -L slurm

# Coverage-guided fuzzing of the readers of outside files (fuzz/README.md): the .npy header, IDX,
# the HDF5 contract and the TOML configuration. Not part of `make test`. A build directory of its
# own, configured with clang and -DSB_FUZZ=ON (the harnesses alone, no LibTorch); each harness runs
# FUZZ_SECONDS, one after the other, and one line each says executions, exec/s, coverage and
# whether it found a crash (the input: $(FUZZ_DIR)/findings/<harness>/; exit status 1).
FUZZ_DIR ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZERS := fuzz_npy_header fuzz_idx fuzz_logprob_file fuzz_config_toml
fuzz: deps-fuzz
	cmake -S . -B $(FUZZ_DIR) -G Ninja -DSB_FUZZ=ON -DCMAKE_C_COMPILER=clang \
	  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS)
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target fuzzers
	fuzz/run_fuzzers.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZERS)

# Benchmarks are not in the default build: `benchmarks` builds them all.
bench: build
	cmake --build $(BUILD_DIR) -j $(JOBS) --target benchmarks
	$(BUILD_DIR)/bench/bench_heads
	bench/blas_threads.sh $(BUILD_DIR)

# The first line of every results/bench/*.md: the date, the commit and whether the tree differed,
# and the BLAS the binaries run (library, kernel core, threads: rank_analysis --blas).
# The tree counts as changed by pipeline/provenance.py's rule (results/ and the README blocks the
# pipeline writes do not count), the rule the pipeline's tables use.
MEASURED_AT = $$(date -u +%F) at commit $$(/usr/bin/python3 pipeline/provenance.py label 2>/dev/null || echo unknown); BLAS: $$($(BUILD_DIR)/analysis/rank_analysis --blas 2>/dev/null || echo unknown)

# Writes results/bench/rank_ptb_synthetic.md (~17 minutes on 2 cores).
bench-rank: build bench-rank-sketch
	@mkdir -p results/bench
	@{ echo "# Rank-analysis benchmark: PTB-size synthetic softmax matrix"; echo; \
	  echo "Measured $(MEASURED_AT) on $$(nproc) cores, all in one run of"; \
	  echo; echo '```'; echo "bench/bench_rank.sh $(BUILD_DIR)        # or: make bench-rank"; echo '```'; echo; \
	  bench/bench_rank.sh $(BUILD_DIR); } > results/bench/rank_ptb_synthetic.md.tmp
	@mv results/bench/rank_ptb_synthetic.md.tmp results/bench/rank_ptb_synthetic.md
	@cat results/bench/rank_ptb_synthetic.md

# The sketch at current vocabulary sizes: GPT-2's shape (~15 minutes on 2 cores) into
# results/bench/rank_gpt2_shape.md; bench-rank-large: WikiText-2's test size (33 GB) into
# rank_wt2_sketch.md and Llama 3's vocabulary (a 51 GB .npy) into rank_llama_vocab.md, each file
# deleted after its runs, ~1 hour and 52 GB of disk.
bench-rank-sketch: build
	@$(call bench_sketch,gpt2,rank_gpt2_shape,GPT-2's shape)
# A count with a long tail just below tol (a 0.7 GB .npy, ~15 minutes): power steps against none,
# the Gram path and auto, into results/bench/rank_tail.md.
bench-rank-tail: build
	@$(call bench_sketch,tail,rank_tail,a count with a long tail just below tol)
# A count of rank 1000 at WikiText-2's test size (a 33 GB .npy written in ~20 minutes, deleted
# after), the sketch stopped at the 30-minute target, into results/bench/rank_wt2_count.md.
bench-rank-count: build
	@$(call bench_sketch,wt2count,rank_wt2_count,a count of rank 1000 at WikiText-2's test size)
bench-rank-large: bench-rank-wt2 bench-rank-llama
bench-rank-wt2: build
	@$(call bench_sketch,wt2,rank_wt2_sketch,WikiText-2's test size)
bench-rank-llama: build
	@$(call bench_sketch,llama,rank_llama_vocab,Llama 3's vocabulary)
# A trained head's WikiText-2-size dump, kept by a hard link before the pipeline removed it
# (TRAINED=DUMP.h5:RANK.json, the run's rank.json), into results/bench/rank_wt2_trained.md: the
# sketch, stopped at the 30-minute target, beside that run's Gram path.
bench-rank-trained: build
	@test -n "$(TRAINED)" || { echo "make bench-rank-trained: set TRAINED=DUMP.h5:RANK.json" >&2; exit 2; }
	@$(call bench_sketch,trained:$(TRAINED),rank_wt2_trained,a trained head at WikiText-2's test size)

# rank_analysis --mpi: 1 vs 2 processes on a PTB-size matrix and a model for N nodes (~10 min).
bench-mpi: build
	@mkdir -p results/bench
	@{ echo "# rank_analysis --mpi: 1 and 2 processes, and a model for N nodes"; echo; \
	  echo "Measured $(MEASURED_AT) on $$(nproc) cores, all in one run of"; \
	  echo; echo '```'; echo "bench/mpi_scaling.py $(BUILD_DIR) $${TMPDIR:-/tmp}/sb_bench_mpi   # or: make bench-mpi"; echo '```'; echo; \
	  /usr/bin/python3 bench/mpi_scaling.py $(BUILD_DIR) $${TMPDIR:-/tmp}/sb_bench_mpi; } \
	  > results/bench/mpi_scaling.md.tmp && mv results/bench/mpi_scaling.md.tmp results/bench/mpi_scaling.md
	@cat results/bench/mpi_scaling.md

define bench_sketch
mkdir -p results/bench && \
{ echo "# Rank analysis with the sketch: $(3)"; echo; \
  echo "Measured $(MEASURED_AT) on $$(nproc) cores, all in one run of"; \
  echo; echo '```'; echo "bench/bench_rank_sketch.py $(BUILD_DIR) $${TMPDIR:-/tmp}/sb_bench_sketch $(1)"; echo '```'; echo; \
  /usr/bin/python3 bench/bench_rank_sketch.py $(BUILD_DIR) $${TMPDIR:-/tmp}/sb_bench_sketch $(1); } \
  > results/bench/$(2).md.tmp && mv results/bench/$(2).md.tmp results/bench/$(2).md && \
  cat results/bench/$(2).md
endef

# Only bench_wordlm (and what it links), for the two training-speed benchmarks below.
bench-wordlm-binary:
	@$(MAKE) --no-print-directory configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target bench_wordlm
	@mkdir -p results/bench

# Times bench_wordlm against bench/wordlm_reference.py.
bench-train: deps-bench bench-wordlm-binary
	@{ echo "# Training speed: C++ (bench_wordlm) vs a PyTorch reference (wordlm_reference.py)"; \
	  echo; \
	  echo "Measured $(MEASURED_AT) with:"; \
	  echo; echo '```'; echo "bench/bench_train_speed.sh $(BUILD_DIR)"; echo '```'; echo; \
	  echo "Every number compared is a ratio of tokens/s measured within this one run, in alternating"; \
	  echo "order, on a shared 2-core machine (other jobs running): compare ratios, not absolute"; \
	  echo "tokens/s across runs."; echo; \
	  bench/bench_train_speed.sh $(BUILD_DIR); \
	  echo; echo "## Mixtures on the cpu profile's model (issue 12)"; echo; \
	  echo '```'; echo "bench/bench_mixture_speed.sh $(BUILD_DIR)"; echo '```'; echo; \
	  bench/bench_mixture_speed.sh $(BUILD_DIR); \
	  if [ -f results/cpu/softmax_s141/metrics.jsonl ]; then echo; \
	    echo "In the committed cpu profile run (\`/usr/bin/python3 bench/profile_train_speed.py results/cpu\`):"; \
	    echo; /usr/bin/python3 bench/profile_train_speed.py results/cpu; fi; } > results/bench/train_speed.md.tmp
	@mv results/bench/train_speed.md.tmp results/bench/train_speed.md
	@cat results/bench/train_speed.md
	@$(MAKE) --no-print-directory bench-train-adaptive

# Where one training step goes, per operator, on the cpu profile's model shapes, and fused_lstm
# against at::lstm (~5 min):
# results/bench/step_profile.md.
# The driver's profile load with the trainers' --describe answers asked and kept (~3 minutes).
bench-profile-load: build
	@mkdir -p results/bench
	@{ echo "# Loading a profile: the trainers' --describe answers asked (cold) and kept (warm)"; \
	  echo; \
	  echo "Measured $(MEASURED_AT) on $$(nproc) cores with:"; \
	  echo; echo '```'; echo "/usr/bin/python3 bench/profile_load.py $(BUILD_DIR) --profiles smoke,cpu,claims,dsweep,paper"; echo '```'; echo; \
	  /usr/bin/python3 bench/profile_load.py $(BUILD_DIR) --profiles smoke,cpu,claims,dsweep,paper; } > results/bench/profile_load.md.tmp
	@mv results/bench/profile_load.md.tmp results/bench/profile_load.md
	@cat results/bench/profile_load.md

bench-step: bench-wordlm-binary
	@{ echo "# Where a training step goes (bench_wordlm --profile)"; \
	  echo; \
	  echo "Measured $(MEASURED_AT) on $$(nproc) cores with:"; \
	  echo; echo '```'; echo "/usr/bin/python3 bench/step_profile.py $(BUILD_DIR)"; echo '```'; echo; \
	  /usr/bin/python3 bench/step_profile.py $(BUILD_DIR); \
	  echo "## With fused_lstm = true (trainers/lm/fused_lstm.h)"; echo; \
	  echo '```'; echo "/usr/bin/python3 bench/step_profile.py $(BUILD_DIR) --heads softmax,mos --fused-lstm"; echo '```'; echo; \
	  /usr/bin/python3 bench/step_profile.py $(BUILD_DIR) --heads softmax,mos --fused-lstm; \
	  echo '```'; echo "/usr/bin/python3 bench/step_profile.py $(BUILD_DIR) --compare-fused"; echo '```'; echo; \
	  /usr/bin/python3 bench/step_profile.py $(BUILD_DIR) --compare-fused; } > results/bench/step_profile.md.tmp
	@mv results/bench/step_profile.md.tmp results/bench/step_profile.md
	@cat results/bench/step_profile.md

# The adaptive heads' training speed against the full softmax / sigsoftmax at WikiText-2's
# vocabulary (M = 33278, a synthetic Zipf corpus; ~5 min): results/bench/adaptive_speed.md.
# $(call bench_report,TITLE,SCRIPT ARGS,NAME): runs the Python bench script and writes its Markdown
# under a header (the date, commit, BLAS and the command) to results/bench/NAME.md, atomically.
define bench_report
	@{ echo "# $(1)"; echo; echo "Measured $(MEASURED_AT) on $$(nproc) cores with:"; \
	  echo; echo '```'; echo "$(2)"; echo '```'; echo; \
	  /usr/bin/python3 $(2); } > results/bench/$(3).md.tmp
	@mv results/bench/$(3).md.tmp results/bench/$(3).md
	@cat results/bench/$(3).md
endef

# Writes results/bench/transformer_speed.md (~4 min on 2 cores).
bench-train-transformer: build
	$(call bench_report,Training speed: train_transformer vs the same model in PyTorch (equal threads),bench/bench_transformer_speed.py $(BUILD_DIR),transformer_speed)

bench-train-adaptive: bench-wordlm-binary
	$(call bench_report,Training speed: the adaptive heads vs the full heads at M = 33278 (bench_wordlm),bench/bench_adaptive_speed.py $(BUILD_DIR),adaptive_speed)

plots: build
	pipeline/synthetic_demo.sh $(BUILD_DIR) results/synthetic

# The end-to-end pipeline (pipeline/reproduce.py): PROFILE=cpu (default, ~2h20m on 2 cores), smoke (a few
# minutes; also run by make test) or paper (GPU settings: prints the plan). Re-running resumes.
# SCHEDULER=slurm submits the stages to a Slurm cluster instead (PARTITION, ACCOUNT: override the
# profile's; WAIT=1: follow the jobs and report the failed ones). `make -n reproduce ...` (or
# --dry-run, or DRY_RUN=1) builds nothing and prints the plan, or with SCHEDULER=slurm the sbatch
# scripts and the job graph, without submitting. LANES=n: n runs at a time (the profile's `jobs`
# otherwise; 0 = cores // threads). JOBS is the build's parallelism (cmake -j, ctest -j), never
# the driver's: a profile of two-thread runs keeps its one lane on two cores.
PROFILE ?= cpu
SCHEDULER ?= local
PARTITION ?=
ACCOUNT ?=
WAIT ?=
LANES ?=
DRY_RUN ?=
MAKE_DRY_RUN := $(if $(findstring n,$(firstword -$(MAKEFLAGS))),1)
REPRODUCE_ARGS = --profile $(PROFILE) --build $(BUILD_DIR) --scheduler $(SCHEDULER) \
  $(if $(PARTITION),--partition $(PARTITION)) $(if $(ACCOUNT),--account $(ACCOUNT)) \
  $(if $(WAIT),--wait) $(if $(ALLOW_DIRTY),--allow-dirty) $(if $(LANES),--jobs $(LANES))
ifneq ($(MAKE_DRY_RUN)$(DRY_RUN),)
reproduce:
	+@/usr/bin/python3 pipeline/reproduce.py $(REPRODUCE_ARGS) --dry-run
else
reproduce: deps
	@$(MAKE) --no-print-directory build
	@if [ "$(PROFILE)" != classify ]; then $(MAKE) --no-print-directory data; fi
	/usr/bin/python3 pipeline/reproduce.py $(REPRODUCE_ARGS)
	@if [ "$(PROFILE)" = cpu ] && [ "$(SCHEDULER)" = local ]; then $(MAKE) --no-print-directory readme; fi
endif

# docs/reproducing.md's results block = results/$(PROFILE)/summary.md (pipeline/readme_results.py).
readme:
	/usr/bin/python3 pipeline/readme_results.py --profile $(PROFILE)
	/usr/bin/python3 pipeline/readme_results.py --claims

# The heads' expressiveness without a language model: the smoothed PTB bigram matrix (200 most
# frequent contexts, the 1000 most frequent words and the rest as one) fitted to convergence by
# every head at d = 10, 20, 40, 80, each fit twice (fit_logprob_matrix; ~1h20m on 2 cores), then
# the table, plot and findings (pipeline/fit_report.py).
fit: build data
	@mkdir -p results/fit
	/usr/bin/python3 pipeline/provenance.py record results/fit/made_at.json -- \
	  $(BUILD_DIR)/trainers/fit_logprob_matrix --corpus ptb --out results/fit/fit.json --resume
	/usr/bin/python3 pipeline/fit_report.py results/fit/fit.json

# The claims table (pipeline/claims.py) from the committed results, then into the README.
claims:
	/usr/bin/python3 pipeline/claims.py --out results/claims.md
	/usr/bin/python3 pipeline/readme_results.py --claims

format:
	git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR)
