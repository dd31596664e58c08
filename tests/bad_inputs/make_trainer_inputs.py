#!/usr/bin/python3
"""Bad inputs for the trainer binaries, one per case of tests/bad_inputs/trainer_cases.txt.

    /usr/bin/python3 tests/bad_inputs/make_trainer_inputs.py BUILD DIR   writes the inputs to DIR
    /usr/bin/python3 tests/bad_inputs/make_trainer_inputs.py --cases     prints trainer_cases.txt

DIR gets a tiny word corpus (corpus/good: 60 words, a few thousand tokens) and broken copies of
it, tiny runs of every trainer interrupted after two batches (their checkpoint.pt is real, from
BUILD's binaries), copies of those run directories with the checkpoint damaged (truncated,
random bytes, one payload byte flipped, empty, a zip that is no checkpoint, another trainer's),
and weights of a word LM of another size for dyneval --weights. trainer_cases.txt lines are
`<case>\\t<command>\\t<exit status>\\t<stderr substring>[\\t<path that must not exist>]` with
{build} for the build directory, {dir} for DIR and {root} for the repository root;
tests/bad_inputs/test_bad_inputs.py runs them.
"""

import os
import random
import shutil
import subprocess
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Tiny settings per trainer: seconds of training on the tiny corpus (or a Fashion-MNIST slice).
TINY = {
    "nplm": "--emsize 8 --hidden 16 --layers 1 --batch_size 20 --epochs 1 --threads 1",
    "wordlm": "--emsize 8 --nhid 16 --nlayers 2 --batch_size 4 --eval_batch_size 4 --bptt 10 "
              "--epochs 1 --finetune_epochs 0 --threads 1 --dump_test false",
    "charlm": "--emsize 8 --nhid 16 --nlayers 1 --batch_size 4 --eval_batch_size 4 --bptt 20 "
              "--epochs 1 --threads 1",
    "classifier": "--conv1 2 --conv2 4 --fc 8 --train_size 200 --valid_size 100 --test_size 100 "
                  "--batch_size 20 --epochs 1 --threads 1",
}
DATA = {"nplm": "--data {dir}/corpus/good", "wordlm": "--data {dir}/corpus/good",
        "charlm": "--data {dir}/corpus/good", "classifier": ""}
BINARY = {"nplm": "train_nplm", "wordlm": "train_wordlm", "charlm": "train_charlm",
          "classifier": "train_classifier"}


def trainer(kind: str, out: str, extra: str = "", data: str = "") -> str:
    return (f"{{build}}/trainers/{BINARY[kind]} {data or DATA[kind]} {TINY[kind]} "
            f"--out {out} {extra}").replace("  ", " ").strip()




def resumed(kind: str, run: str, message: str):
    """--resume of the run directory {dir}/runs/<run>: exit 2, `message`."""
    return trainer(kind, f"{{dir}}/runs/{run}", "--resume"), 2, message, ""


def refused(kind: str, name: str, message: str, extra: str = "", data: str = ""):
    """A run into {dir}/out/<name> refused before it writes anything there."""
    out = f"{{dir}}/out/{name}"
    return trainer(kind, out, extra, data), 2, message, out


NOT_CHECKPOINT = ("checkpoint.pt: not a checkpoint of this version (a zip archive without the "
                  "SBCKPT02 header")

# case -> (command, exit status, stderr substring, path that must not exist afterwards or "")
CASES = {}
for kind in ("nplm", "wordlm", "charlm", "classifier"):
    for damage, expected in (("truncated", "checkpoint.pt: truncated"),
                             ("random", "checkpoint.pt: not a checkpoint of this project"),
                             ("flipped", "checkpoint.pt: checksum mismatch"),
                             ("empty", "checkpoint.pt: not a checkpoint of this project")):
        CASES[f"{kind}_resume_{damage}_checkpoint"] = resumed(kind, f"{kind}_{damage}", expected)
CASES.update({
    "wordlm_resume_zip_not_checkpoint": resumed("wordlm", "wordlm_zip", NOT_CHECKPOINT),
    "wordlm_resume_bare_torch_archive": resumed(
        "wordlm", "wordlm_weights_as_checkpoint", NOT_CHECKPOINT),
    "wordlm_resume_nplm_checkpoint": resumed(
        "wordlm", "wordlm_foreign", "written by train_nplm, not train_wordlm"),
    "wordlm_resume_no_checkpoint": resumed("wordlm", "none", "no checkpoint to resume from"),
    "wordlm_resume_changed_config": (
        trainer("wordlm", "{dir}/runs/wordlm_ok", "--resume --lr 3"), 2,
        "written with a different config (lr = 30.0 -> lr = 3.0)", ""),
    "dyneval_weights_of_another_size": (
        "{build}/trainers/dyneval --run {dir}/runs/wordlm_done --weights "
        "{dir}/runs/wordlm_big/best.pt --threads 1", 2,
        "best.pt: parameter 'embedding' has shape [61, 12] in the file, [61, 8] in this model",
        ""),
    "dyneval_weights_truncated": (
        "{build}/trainers/dyneval --run {dir}/runs/wordlm_done --weights {dir}/truncated_best.pt "
        "--threads 1", 2, "truncated_best.pt: not a weights file of this project", ""),
    "dyneval_weights_missing": (
        "{build}/trainers/dyneval --run {dir}/runs/wordlm_done --weights {dir}/no_such.pt "
        "--threads 1", 2, "no_such.pt", ""),
    "nplm_non_finite_loss_points_to_no_checkpoint": (
        trainer("nplm", "{dir}/out/nplm_nan", "--lr 1e30"), 4,
        "No checkpoint was written before it in this run", ""),
})

# A run refused before it writes anything: (trainer, case, corpus under {dir}/corpus, substring).
for kind, case, corpus, message in (
        ("wordlm", "empty_valid_split", "empty_valid",
         "empty_valid/ptb.valid.txt: no tokens; expected a non-empty valid split"),
        ("nplm", "empty_test_split", "empty_test",
         "empty_test/ptb.test.txt: no tokens; expected a non-empty test split"),
        ("wordlm", "train_split_only_eos", "eos_only",
         "eos_only/ptb.train.txt: 5 tokens of 1 distinct words"),
        ("charlm", "empty_train_split", "empty_train", "empty_train/ptb.train.txt: 0 tokens"),
        ("wordlm", "missing_test_split", "no_test",
         "corpus/no_test: no test split (looked for ptb.test.txt"),
        ("nplm", "valid_word_not_in_training", "oov_valid",
         "oov_valid/ptb.valid.txt:1: word 'zzz' is not in the training vocabulary"),
        ("wordlm", "missing_train_split_names_the_proxy", "no_train",
         "no train split (looked for ptb.train.txt, train.txt, wiki.train.tokens); `make data` "
         'fetches it, or train_split = "valid" trains on the proxy')):
    CASES[f"{kind}_{case}"] = refused(kind, f"{kind}_{case}", message,
                                      data=f"--data {{dir}}/corpus/{corpus}")
# ... and (trainer, case, the options that are wrong, substring).
for kind, case, options, message in (
        ("nplm", "mixture_head_refused", "--head mos:K=2",
         'head = "mos:K=2": train_nplm takes a single head'),
        ("wordlm", "sparse_k_exceeds_vocabulary", "--head sparse:k=500",
         "k = 500 exceeds the M = 61 words of the vocabulary"),
        ("wordlm", "valid_too_short_for_eval_batch", "--valid_tokens 5",
         "valid split: 5 tokens give 1 row at eval_batch_size = 4; at least 2 rows are needed"),
        ("charlm", "train_too_short_for_batch", "--train_chars 8",
         "train split: 8 symbols give 2 rows at batch_size = 4; at least 3 rows are needed"),
        ("nplm", "config_file_missing", "--config {dir}/no_such.toml", "no_such.toml"),
        ("nplm", "config_unknown_key", "--config {dir}/unknown_key.toml", "unknown_key.toml"),
        ("charlm", "config_wrong_type", "--config {dir}/wrong_type.toml", "wrong_type.toml"),
        ("wordlm", "option_not_a_number", "--lr abc", "--lr: expected a number, got 'abc'"),
        ("wordlm", "dropout_out_of_range", "--dropout 1", "dropout"),
        ("wordlm", "train_split_unknown", "--train_split test",
         'train_split must be train or valid, got "test"'),
        ("wordlm", "vocab_size_below_corpus", "--vocab_size 10",
         "vocab_size = 10 is below the corpus' 61 words; expected 0 (the corpus' own) or >= 61"),
        ("classifier", "sparse_k_exceeds_classes", "--head sparse:k=11", "k must be <= 10"),
        ("classifier", "data_dir_missing", "--dataset mnist --data {dir}/no_mnist", "no_mnist")):
    CASES[f"{kind}_{case}"] = refused(kind, f"{kind}_{case}", message, extra=options)


def write_corpus(path: str, train: list, valid: list, test: list) -> None:
    os.makedirs(path, exist_ok=True)
    for split, lines in (("train", train), ("valid", valid), ("test", test)):
        if lines is not None:
            with open(os.path.join(path, f"ptb.{split}.txt"), "w") as f:
                f.write("".join(" " + " ".join(words) + " \n" for words in lines))


def sentences(rng: random.Random, tokens: int) -> list:
    out, n = [], 0
    while n < tokens:
        words = [f"w{rng.randrange(60)}" for _ in range(rng.randrange(5, 15))]
        out.append(words)
        n += len(words) + 1
    return out


def corpora(d: str) -> None:
    rng = random.Random(1)
    train, valid, test = sentences(rng, 4000), sentences(rng, 800), sentences(rng, 400)
    train.append([f"w{i}" for i in range(60)])  # every word in the training vocabulary
    write_corpus(f"{d}/corpus/good", train, valid, test)
    write_corpus(f"{d}/corpus/empty_valid", train, [], test)
    write_corpus(f"{d}/corpus/empty_test", train, valid, [])
    write_corpus(f"{d}/corpus/empty_train", [], valid, test)
    write_corpus(f"{d}/corpus/eos_only", [[]] * 5, valid, test)
    write_corpus(f"{d}/corpus/no_test", train, valid, None)
    write_corpus(f"{d}/corpus/no_train", None, valid, test)
    write_corpus(f"{d}/corpus/oov_valid", train, [["zzz"]] + valid, test)


# A malformed command line (common/command_line.h `parse_or_exit`): one line, "error: ... (see
# --help)", and exit 2 from every LibTorch binary, the trainers' frame and the tools alike.
for binary, args, out in (
        ("synthetic_logprobs", "--head softmax --T 10 --M 5 --d 2", "{dir}/cli_synth.h5"),
        ("fit_logprob_matrix", "--low-rank 2 --C 10 --M 8 --d 2 --heads softmax",
         "{dir}/cli_fit.json"),
        ("train_nplm", f"{DATA['nplm']} {TINY['nplm']}", "{dir}/runs/cli_nplm")):
    CASES[f"{binary}_unknown_option"] = (
        f"{{build}}/trainers/{binary} {args} --out {out} --bogus", 2, "--bogus (see --help)", out)
CASES["synthetic_logprobs_missing_out"] = (
    "{build}/trainers/synthetic_logprobs --head softmax --T 10 --M 5 --d 2", 2,
    "error: --out is required (see --help)", "")

def run(build: str, d: str, command: str, expect: int) -> None:
    cmd = command.replace("{build}", build).replace("{dir}", d).replace("{root}", ROOT)
    done = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    if done.returncode != expect:
        sys.exit(f"make_trainer_inputs: '{cmd}' exited {done.returncode}, expected {expect}:\n"
                 f"{done.stderr[-2000:]}")


def damaged_runs(build: str, d: str) -> None:
    for kind in ("nplm", "wordlm", "charlm", "classifier"):
        good = f"{d}/runs/{kind}_ok"
        run(build, d, trainer(kind, good, "--stop-after-batches 2"), 130)
        payload = open(f"{good}/checkpoint.pt", "rb").read()
        flipped = bytearray(payload)
        flipped[len(payload) // 2] ^= 0x10
        rng = random.Random(2)
        for damage, data in (("truncated", payload[: len(payload) - 100]),
                             ("random", bytes(rng.randrange(256) for _ in range(4096))),
                             ("flipped", bytes(flipped)), ("empty", b"")):
            target = f"{d}/runs/{kind}_{damage}"
            shutil.copytree(good, target)
            open(f"{target}/checkpoint.pt", "wb").write(data)
    # A zip that is no checkpoint, a bare LibTorch archive, another trainer's checkpoint.
    shutil.copytree(f"{d}/runs/wordlm_ok", f"{d}/runs/wordlm_zip")
    with zipfile.ZipFile(f"{d}/runs/wordlm_zip/checkpoint.pt", "w") as z:
        z.writestr("data.txt", "not a checkpoint")
    # A finished word LM (its best.pt) and one of another size, for dyneval --weights.
    run(build, d, trainer("wordlm", f"{d}/runs/wordlm_done"), 0)
    run(build, d, trainer("wordlm", f"{d}/runs/wordlm_big", "--emsize 12"), 0)
    shutil.copytree(f"{d}/runs/wordlm_ok", f"{d}/runs/wordlm_weights_as_checkpoint")
    shutil.copy(f"{d}/runs/wordlm_done/best.pt",
                f"{d}/runs/wordlm_weights_as_checkpoint/checkpoint.pt")
    shutil.copytree(f"{d}/runs/wordlm_ok", f"{d}/runs/wordlm_foreign")
    shutil.copy(f"{d}/runs/nplm_ok/checkpoint.pt", f"{d}/runs/wordlm_foreign/checkpoint.pt")
    best = open(f"{d}/runs/wordlm_done/best.pt", "rb").read()
    open(f"{d}/truncated_best.pt", "wb").write(best[: len(best) // 2])


def configs(d: str) -> None:
    open(f"{d}/unknown_key.toml", "w").write("emsize = 8\nhiden = 16\n")
    open(f"{d}/wrong_type.toml", "w").write('emsize = "eight"\n')


def cases_text() -> str:
    return "".join(f"{case}\t{cmd}\t{status}\t{substring}" + (f"\t{absent}" if absent else "") +
                   "\n" for case, (cmd, status, substring, absent) in CASES.items())


def main() -> int:
    if sys.argv[1:] == ["--cases"]:
        sys.stdout.write(cases_text())
        return 0
    if len(sys.argv) != 3:
        sys.exit("usage: make_trainer_inputs.py BUILD DIR | --cases")
    build, d = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    os.makedirs(d, exist_ok=True)
    corpora(d)
    configs(d)
    damaged_runs(build, d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
