#!/usr/bin/python3
"""Every shipped profile (pipeline/profiles/*.toml) loads and plans: `reproduce.py --plan` exits 0
and prints one trainer command per (head, seed), each with the profile's overrides and, where the
profile asks for rank during training, --epoch_dump_rows. Needs no corpus; of the build, only
rank_analysis (the head facts: `--list-heads --json`; argument 1: the build directory).

Then the profiles' promises that a typo would break silently:
- cpu (the default): >= 2 seeds for every head (the paired t-tests need them), the same seeds for
  every head (equal budget per seed), epoch ranks on;
- cpu-long: the paper's depth (3 layers in its trainer settings), K between 5 and 15, epoch
  ranks on, an estimate of at most 9 hours;
- nplm / char (the seed papers' trainers): per-run stages train and analyse only, an estimate
  of at most 30 minutes (char: 90, its 16 epochs x 3 seeds that the tie needs), the heads whose
  figures results/paper/ holds; char: >= 3 seeds and >= 16 epochs (4x the config's 4);
- classify: train_classifier for every head of issue 13 (softmax, softmax_abs, spherical, taylor,
  mse, sparse with k = 2, 3, 5, sigsoftmax, g:sigmoid), the same >= 5 seeds for each, one run
  directory per (head, seed), rank analysis planned only where the dump has a rank (not mse, not
  sparse), an estimate of at most 45 minutes;
- a bad epoch_ranks field, and an unknown trainer, are refused with the file and field named.
"""

import os
import re
import subprocess
import sys
import tempfile

from checks import ROOT, build_dir, check, finish, use_build  # noqa: E402

use_build()
import head_facts  # noqa: E402
from repro_profile import ProfileError, check_runs, load_profile  # noqa: E402
from stages import STAGES  # noqa: E402


def plan(name):
    return subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "pipeline", "reproduce.py"),
                           "--profile", name, "--plan", "--build", build_dir()],
                          cwd=ROOT, capture_output=True, text=True)


def estimate_seconds(p):
    runs = p.runs()
    total = 0.0
    for run in runs:
        for s in STAGES:
            if s.per_run and s.enabled(p) and s.applies(p, run):
                total += p.estimate(run, s.name, s.head_cost)
    return total


def check_char_tie():
    """char-tie: the tie asked with the margin the claims table judges it by, and as many seeds as
    the TOST power calculation asks for the planning gap at 1.3x results/char's spread of paired
    test-bpc gaps (claims_controls' CHAR_TIE_PLANNING_*)."""
    import statistics
    import claims_controls
    import power
    from claims import metric_by_seed, pairs
    p = load_profile(os.path.join(ROOT, "pipeline", "profiles", "char-tie.toml"))
    _, xa, xb = pairs(*(metric_by_seed(os.path.join(ROOT, "results", "char"), h, "charlm",
                                       "test_bpc") for h in ("softmax", "sigsoftmax")))
    if not check(len(xa) >= 2, f"char-tie: results/char has paired seeds ({len(xa)})"):
        return
    sd = statistics.stdev(a - b for a, b in zip(xa, xb))
    sd *= claims_controls.CHAR_TIE_PLANNING_SD_FACTOR
    n = power.tost_seeds_needed(claims_controls.CHAR_TIE_PLANNING_GAP, sd,
                                claims_controls.CHAR_TIE_MARGIN, 0.05, 0.8)
    check(n is not None and len(p.seeds) >= n and p.out != "results/char",
          f"char-tie: {len(p.seeds)} seeds >= the {n} TOST's power asks at sd {sd:.4f}, "
          f"its own results ({p.out})")
    margin = f"{claims_controls.CHAR_TIE_MARGIN:g}"
    check(p.overrides.get("epochs") == 64 and margin in p.prediction,
          f"char-tie: 64 epochs, and the prediction states the margin {margin}")


def check_sparse_plot():
    """The sparse profile: its sparse heads have no rank (their dumps hold -inf), so the
    singular-value plot draws softmax's first seed only (stages.plotted_runs); a profile with no
    ranked head has nothing to plot and its plot stage is done."""
    import types
    import stages
    p = load_profile(os.path.join(ROOT, "pipeline", "profiles", "sparse.toml"))
    d = types.SimpleNamespace(p=p, runs=p.runs())
    ranked = [r.head for r in stages.plotted_runs(d)]
    check(ranked == ["softmax"] and len(stages.plot_inputs(d)) == 1,
          f"sparse: the plot reads softmax's rank only ({ranked})")
    p.heads = [h for h in p.heads if h.startswith("sparse")]
    d = types.SimpleNamespace(p=p, runs=p.runs())
    check(stages.plot_inputs(d) == [] and bool(stages._plot_done(d, None)),
          "no ranked head: nothing to plot, the plot stage is done")


def main():
    check_sparse_plot()
    names = sorted(f[:-5] for f in os.listdir(os.path.join(ROOT, "pipeline", "profiles"))
                   if f.endswith(".toml"))
    check({"smoke", "cpu", "cpu-long", "paper", "classify"} <= set(names), f"shipped profiles: {names}")
    for name in names:
        p = load_profile(os.path.join(ROOT, "pipeline", "profiles", name + ".toml"))
        r = plan(name)
        commands = [line for line in r.stdout.splitlines()
                    if f"/trainers/train_{p.trainer} " in line]
        check(r.returncode == 0 and len(commands) == len(p.runs()),
              f"{name}: --plan exits 0 and prints {len(p.runs())} trainer commands "
              f"(got {r.returncode}, {len(commands)}; {r.stderr.strip()})")
        rows = int(p.epoch_ranks.get("rows", 0))
        missing = []
        for run, cmd in zip(p.runs(), commands):
            want = [f"--head {run.head}", f"--seed {run.seed}"]
            want += [f"--{k} {str(v).lower() if isinstance(v, bool) else v}"
                     for k, v in p.overrides_of(run.head).items()]
            if rows:
                want.append(f"--epoch_dump_rows {rows}")
            missing += [f"{run.label}: {w}" for w in want if w + " " not in cmd + " "]
        check(not missing, f"{name}: every command has its head, seed, overrides"
              + (" and --epoch_dump_rows" if rows else "") + (f" (missing {missing})" if missing else ""))
        config = p.config.format(name="softmax")
        check(os.path.exists(os.path.join(ROOT, config)), f"{name}: trainer config {config} exists")

    cpu = load_profile(os.path.join(ROOT, "pipeline", "profiles", "cpu.toml"))
    seeds = {tuple(cpu.seeds_of(h)) for h in cpu.heads}
    check(len(seeds) == 1 and len(next(iter(seeds))) >= 2,
          f"cpu: every head has the same >= 2 seeds ({seeds})")
    check(int(cpu.epoch_ranks.get("rows", 0)) > 0, "cpu: rank during training is on")
    # The wall time on 2 cores: the run time over the runs side by side (reproduce.lanes), from
    # the stage medians of the three-seed run at 0a5f9c1 (1h19m28s measured end to end;
    # docs/reproducing.md, "Seeds and time"). This guards the 90 minutes asked for against the
    # profile growing, not fewer seeds.
    from reproduce import lanes
    threads, jobs = lanes(cpu.threads, cpu.jobs, 2, len(cpu.runs()))
    est = estimate_seconds(cpu) / jobs
    check(threads == 1 and jobs == 2 and est <= 90 * 60,
          f"cpu: on 2 cores {jobs} runs at a time of {threads} thread(s), estimate "
          f"{est / 60:.0f} min <= 90 min")

    long = load_profile(os.path.join(ROOT, "pipeline", "profiles", "cpu-long.toml"))
    layers = long.overrides.get("nlayers")
    if layers is None:
        text = open(os.path.join(ROOT, long.config)).read()
        layers = int(re.search(r"^nlayers\s*=\s*(\d+)", text, re.M).group(1))
    check(layers == 3, f"cpu-long: 3 LSTM layers as the paper (got {layers})")
    ks = [int(h.split("K=")[1]) for h in long.heads if h.startswith(("mos:", "moss:"))]
    check(len(ks) == 2 and all(5 <= k <= 15 for k in ks), f"cpu-long: mixtures with K in 5..15 {ks}")
    check(int(long.epoch_ranks.get("rows", 0)) > 0, "cpu-long: rank during training is on")
    est = estimate_seconds(long)
    check(6 * 3600 <= est <= 9 * 3600, f"cpu-long: estimate {est / 3600:.1f} h, overnight (6-9 h)")

    # The seed papers' profiles (trainer = nplm / charlm): one stage trains, evaluates and dumps,
    # then the rank analysis; within ~30 minutes (char ~90: the tie needs at least 4x the
    # config's training, results/bench/char_tie_probe.md); the heads whose paper figures the
    # tables show.
    import csv
    with open(os.path.join(ROOT, "results", "paper", "other_seed_results.csv")) as f:
        figures = list(csv.DictReader(line for line in f if not line.startswith("#")))
    for name, trainer, dataset, want, minutes in (
            ("nplm", "nplm", "ptb_nplm", {"softmax", "softmax_abs", "spherical", "taylor"}, 30),
            ("char", "charlm", "text8", {"softmax", "sigsoftmax"}, 90)):
        p = load_profile(os.path.join(ROOT, "pipeline", "profiles", name + ".toml"))
        check(p.trainer == trainer and p.kind.stages == ("train",),
              f"{name}: trainer {p.trainer}, one trainer stage")
        stages = [s.name for s in STAGES if s.per_run and s.enabled(p)]
        check(stages == ["train", "analyse"], f"{name}: per-run stages train, analyse ({stages})")
        est = estimate_seconds(p)
        check(est <= minutes * 60, f"{name}: estimate {est / 60:.0f} min <= {minutes} min")
        if name == "char":
            check(len(p.seeds) >= 3 and p.overrides.get("epochs", 0) >= 16,
                  f"char: >= 3 seeds and >= 16 epochs ({p.seeds}, {p.overrides})")
        names = {h.split(":")[0] for h in p.heads}
        check(want <= names, f"{name}: heads {sorted(names)} include {sorted(want)}")
        paper = {r["head"] for r in figures if r["dataset"] == dataset}
        check(want <= paper, f"{name}: results/paper has the paper's figures for {sorted(want)}")
        r = plan(name)
        check("--until" not in r.stdout and "--epoch_dump_rows" not in r.stdout,
              f"{name}: no train_wordlm-only options in the plan")

    check_char_tie()

    cls = load_profile(os.path.join(ROOT, "pipeline", "profiles", "classify.toml"))
    check(cls.trainer == "classifier", "classify: trainer = classifier")
    want_heads = {"softmax", "softmax_abs", "spherical", "taylor", "mse", "sparse:k=2",
                  "sparse:k=3", "sparse:k=5", "sigsoftmax", "sigmoid"}
    check(want_heads <= set(cls.heads), f"classify: every head of the issue ({sorted(cls.heads)})")
    seeds = {tuple(cls.seeds_of(h)) for h in cls.heads}
    check(len(seeds) == 1 and len(next(iter(seeds))) >= 5,
          f"classify: every head has the same >= 5 seeds ({seeds})")
    dirs = [run.dir for run in cls.runs()]
    check(len(set(dirs)) == len(dirs), "classify: one run directory per (head, seed)")
    r = plan("classify")
    lines = r.stdout.splitlines()
    analysed = {line.split(":")[1].strip().rsplit(" seed", 1)[0] for line in lines
                if line.strip().startswith("run ") and "-> analyse" in line}
    check(analysed == want_heads - {"mse", "sparse:k=2", "sparse:k=3", "sparse:k=5"},
          f"classify: analyse planned for the heads with a rank only ({sorted(analysed)})")
    check(all("train_wordlm" not in line for line in lines), "classify: no train_wordlm command")
    est = estimate_seconds(cls)
    check(est <= 45 * 60, f"classify: estimate {est / 60:.0f} min <= 45 min")

    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, "bad_trainer.toml")
        with open(bad, "w") as f:
            f.write('name = "bad"\nscaled_down = "x"\nout = "x"\nconfig = "x"\n'
                    'heads = ["softmax"]\nseeds = [1]\ntrainer = "mlp"\n')
        # The kinds are the build's trainer binaries: the profile loads, and the check against
        # the build (before anything is written) refuses it, naming the kinds there are.
        try:
            check_runs(load_profile(bad), head_facts.registry())
            check(False, "trainer = \"mlp\" refused")
        except ProfileError as e:
            check(f"{bad}: field 'trainer'" in str(e) and "wordlm" in str(e) and
                  "train_mlp" in str(e), f"trainer = \"mlp\" refused naming the file and field "
                  f"and the build's trainers ({e})")
        with open(bad, "w") as f:
            f.write('name = "bad"\nscaled_down = "x"\nout = "x"\nconfig = "x"\n'
                    'heads = ["softmax"]\nseeds = [1]\ntrainer = "../x"\n')
        try:
            load_profile(bad)
            check(False, "trainer = \"../x\" refused")
        except ProfileError as e:
            check(f"{bad}: field 'trainer'" in str(e), f"trainer = \"../x\" refused when loaded "
                  f"({e})")
        for field, value, expected in (("rows", "-1", "epoch_ranks.rows"),
                                       ("method", '"svd"', "epoch_ranks.method"),
                                       ("every", "2", "epoch_ranks.every")):
            bad = os.path.join(tmp, "bad.toml")
            with open(bad, "w") as f:
                f.write('name = "bad"\nscaled_down = "x"\nout = "x"\nconfig = "x"\n'
                        f'heads = ["softmax"]\nseeds = [1]\n[epoch_ranks]\n{field} = {value}\n')
            try:
                load_profile(bad)
                check(False, f"epoch_ranks.{field} = {value} refused")
            except ProfileError as e:
                check(f"{bad}: field '{expected}'" in str(e), f"epoch_ranks.{field} = {value} "
                      f"refused naming the file and field ({e})")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
