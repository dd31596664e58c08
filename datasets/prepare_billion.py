#!/usr/bin/python3
"""One Billion Word (Chelba et al. 2013) in the format the word-level trainers read: train.txt,
valid.txt and test.txt of whitespace-separated tokens, one sentence per line (the loader appends
<eos>), every valid/test word in the training vocabulary.

  datasets/prepare_billion.py ARCHIVE DEST

ARCHIVE: 1-billion-word-language-modeling-benchmark-r13output.tar.gz (datasets/fetch.sh billion
verifies its size and SHA-256 first). Splits, as the benchmark's own README and Grave et al. 2017:
train = training-monolingual.tokenized.shuffled/news.en-000{01..99}-of-00100, test =
heldout-monolingual.tokenized.shuffled/news.en.heldout-00000-of-00050, valid = the next heldout
shard (-00001-). The vocabulary: the words seen at least 3 times in train (793471 words with
<unk> in the benchmark's vocabulary); every other word becomes <unk> in every split. Reads the
archive twice (counting, then writing), streaming: memory is the vocabulary, not the corpus.
Writes into DEST/.tmp-prepare and renames the three files into place at the end, so an interrupted
run leaves no partial corpus. Progress on stderr.
"""
import collections
import os
import re
import shutil
import sys
import tarfile
import time

MIN_COUNT = 3
UNK = "<unk>"
TRAIN = re.compile(r"training-monolingual\.tokenized\.shuffled/news\.en-\d{5}-of-00100$")
HELDOUT = re.compile(r"heldout-monolingual\.tokenized\.shuffled/news\.en\.heldout-(\d{5})-of-00050$")


def log(text):
    print("prepare_billion: " + text, file=sys.stderr, flush=True)


def members(archive, wanted):
    """(name, text lines) of the archive's files whose path matches `wanted`, in archive order."""
    with tarfile.open(archive, "r:*") as tar:
        for m in tar:
            if m.isfile() and wanted(m.name):
                with tar.extractfile(m) as f:
                    yield m.name, (line.decode("utf-8", "replace") for line in f)


def is_train(name):
    return TRAIN.search(name) is not None


def heldout_shard(name):
    m = HELDOUT.search(name)
    return int(m.group(1)) if m else None


def count_words(archive):
    counts = collections.Counter()
    start, shards = time.time(), 0
    for name, lines in members(archive, is_train):
        for line in lines:
            counts.update(line.split())
        shards += 1
        log(f"counted {name.rsplit('/', 1)[-1]} ({shards} shards, {len(counts)} types, "
            f"{time.time() - start:.0f} s)")
    if not shards:
        raise SystemExit(f"prepare_billion: {archive}: no training shards "
                         "(training-monolingual.tokenized.shuffled/news.en-*-of-00100)")
    return counts


def write_split(lines, vocab, out):
    tokens = unk = 0
    for line in lines:
        words = line.split()
        if not words:
            continue
        mapped = [w if w in vocab else UNK for w in words]
        unk += sum(1 for w in mapped if w == UNK)
        tokens += len(mapped)
        out.write(" ".join(mapped) + "\n")
    return tokens, unk


def main(argv):
    if len(argv) != 3:
        raise SystemExit(__doc__)
    archive, dest = argv[1], argv[2]
    if not os.path.isfile(archive):
        raise SystemExit(f"prepare_billion: {archive}: no such file")
    counts = count_words(archive)
    vocab = {w for w, c in counts.items() if c >= MIN_COUNT}
    vocab.add(UNK)
    log(f"vocabulary: {len(vocab)} words seen >= {MIN_COUNT} times, with {UNK}")
    tmp = os.path.join(dest, ".tmp-prepare")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    stats = {}
    with open(os.path.join(tmp, "train.txt"), "w") as out:
        total = [0, 0]
        for name, lines in members(archive, is_train):
            t, u = write_split(lines, vocab, out)
            total[0] += t
            total[1] += u
        stats["train"] = total
    for split, shard in (("test", 0), ("valid", 1)):
        with open(os.path.join(tmp, f"{split}.txt"), "w") as out:
            found = False
            for name, lines in members(archive, lambda n, s=shard: heldout_shard(n) == s):
                stats[split] = list(write_split(lines, vocab, out))
                found = True
            if not found:
                raise SystemExit(f"prepare_billion: {archive}: no heldout shard {shard:05d}")
    for split in ("train", "valid", "test"):
        os.replace(os.path.join(tmp, f"{split}.txt"), os.path.join(dest, f"{split}.txt"))
        tokens, unk = stats[split]
        log(f"{split}.txt: {tokens} tokens, {unk} {UNK}")
    os.rmdir(tmp)


if __name__ == "__main__":
    main(sys.argv)
