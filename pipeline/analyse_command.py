"""The analyse stage's command line (pipeline/stages.py, `analyse`): rank_analysis on a run's
dump, under MPI when the profile asks for several processes."""
from __future__ import annotations

import os


def mpi_launcher(tasks: int, nodes: int) -> list[str]:
    """How the analyse stage starts `tasks` processes of rank_analysis --mpi: srun inside a Slurm
    job (its allocation has the tasks: slurm.py asks sbatch for them; --mpi=pmix, the interface
    OpenMPI's processes join through, whatever the cluster's MpiDefault), else mpirun on this
    machine (-q: no banner of its own; as root it needs --allow-run-as-root)."""
    if os.environ.get("SLURM_JOB_ID"):
        return ["srun", "--mpi=pmix", "-n", str(tasks), "-N", str(nodes)]
    cmd = ["mpirun", "-q", "-n", str(tasks), "--oversubscribe"]
    return cmd + (["--allow-run-as-root"] if os.geteuid() == 0 else [])


def analyse_command(d, run) -> list[str]:
    """The analyse stage's command line: rank_analysis on the run's dump by the profile's
    analysis.method (or the head's in analysis.method_by_head), under MPI when the
    profile's analysis.tasks > 1 (each process with threads / tasks BLAS threads)."""
    a = d.p.analysis
    tasks, nodes = int(a.get("tasks", 1)), int(a.get("nodes", 1))
    threads = max(1, d.threads // tasks) if tasks > 1 else d.threads
    method, by_head = a.get("method", "auto"), a.get("method_by_head", {})
    if by_head:  # a head's own method (repro_profile's analysis.method_by_head)
        method = by_head.get(run.head, method)
    cmd = [d.bins["rank_analysis"], os.path.join(run.dir, "logprobs.h5"), "--method",
           str(method), "--json", "--threads", str(threads),
           "--out", os.path.join(run.dir, "logprobs.rank.h5")]
    if a.get("verdict_only", False):  # the sketch stops once within / exceeds is certain
        cmd.append("--verdict-only")
    if a.get("budget_gb", 0) > 0:  # the memory auto may plan for (analyse.h, memory_limit)
        cmd += ["--budget-gb", str(a["budget_gb"])]
    if tasks > 1:
        cmd = mpi_launcher(tasks, nodes) + cmd + ["--mpi"]
    return cmd
