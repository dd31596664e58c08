#!/usr/bin/python3
"""Stand-ins for sbatch, squeue and scontrol (tests/test_slurm_backend.py): `fake_slurm.py TOOL
ARGS...`, state in $FAKE_SLURM_DIR. sbatch records its arguments in calls.jsonl, queues the job
(queue: "id|script" lines) and prints its id, counting from 101; a job whose script path contains
the text of the file fail_key ends FAILED with exit 2. squeue prints the queue and empties it: a
job has finished once it has been seen. scontrol show job -o ID prints its state and exit code.
"""

import json
import os
import sys

tool, args = sys.argv[1], sys.argv[2:]
state = os.environ["FAKE_SLURM_DIR"]


def path(name: str) -> str:
    return os.path.join(state, name)


def read(name: str, default: str = "") -> str:
    return open(path(name)).read() if os.path.exists(path(name)) else default


if tool == "sbatch":
    job_id = int(read("next_id", "101"))
    with open(path("next_id"), "w") as f:
        f.write(str(job_id + 1))
    with open(path("calls.jsonl"), "a") as f:
        f.write(json.dumps({"tool": tool, "argv": args, "id": str(job_id)}) + "\n")
    with open(path("queue"), "a") as f:
        f.write(f"{job_id}|{args[-1]}\n")
    fail = read("fail_key").strip()
    if fail and fail in args[-1]:
        states = json.loads(read("states.json", "{}"))
        states[str(job_id)] = "FAILED"
        with open(path("states.json"), "w") as f:
            json.dump(states, f)
    print(job_id)
elif tool == "squeue":
    sys.stdout.write(read("queue"))
    open(path("queue"), "w").close()
elif tool == "scontrol":
    job_id = args[-1]
    s = json.loads(read("states.json", "{}")).get(job_id, "COMPLETED")
    print(f"JobId={job_id} JobState={s} ExitCode={'2:0' if s == 'FAILED' else '0:0'}")
else:
    sys.exit(f"fake_slurm.py: unknown tool {tool}")
