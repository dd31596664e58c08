#!/usr/bin/python3
"""datasets/prepare_billion.py on a miniature of the One Billion Word archive (the same paths,
three training shards, two heldout shards): the splits land where the loader finds them, words
seen fewer than 3 times in train become <unk> in every split, the first heldout shard is the test
set and the second the valid set, and an archive without training shards is refused with exit
status 1 and no split written. fetch.sh --check billion says where to get it when it is absent."""
import io
import os
import subprocess
import sys
import tarfile
import tempfile

from checks import check, finish  # tests/fixtures/checks.py (PYTHONPATH)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "datasets", "prepare_billion.py")
TOP = "1-billion-word-language-modeling-benchmark-r13output"


def archive(path, files):
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{TOP}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


with tempfile.TemporaryDirectory() as tmp:
    train = "training-monolingual.tokenized.shuffled/news.en-{:05d}-of-00100"
    heldout = "heldout-monolingual.tokenized.shuffled/news.en.heldout-{:05d}-of-00050"
    files = {
        train.format(1): "the cat sat .\nthe dog sat .\n",
        train.format(2): "the cat ran .\nrare word once\n",
        train.format(3): "a cat sat .\n\n",
        heldout.format(0): "the cat sat on a mat .\n",
        heldout.format(1): "the dog ran .\n",
        heldout.format(2): "never read\n",
        "README": "not a shard\n",
    }
    path = os.path.join(tmp, "mini.tar.gz")
    archive(path, files)
    dest = os.path.join(tmp, "billion")
    os.makedirs(dest)
    r = subprocess.run(["/usr/bin/python3", SCRIPT, path, dest], capture_output=True, text=True)
    check(r.returncode == 0, f"prepare_billion exits 0 ({r.returncode}: {r.stderr[-300:]})")
    read = lambda n: open(os.path.join(dest, n)).read()  # noqa: E731
    # Counts in train: the 4, cat 3, sat 3, . 4; dog, ran, a, rare, word, once < 3.
    check(read("train.txt") == "the cat sat .\nthe <unk> sat .\nthe cat <unk> .\n"
          "<unk> <unk> <unk>\n<unk> cat sat .\n",
          "train.txt: words seen < 3 times are <unk>, empty lines dropped, shards in order")
    check(read("test.txt") == "the cat sat <unk> <unk> <unk> .\n",
          "test.txt is heldout shard 00000, mapped with the training vocabulary")
    check(read("valid.txt") == "the <unk> <unk> .\n", "valid.txt is heldout shard 00001")
    check(sorted(os.listdir(dest)) == ["test.txt", "train.txt", "valid.txt"],
          "nothing else is left in DEST (the temporary directory is gone)")
    check("vocabulary: 5 words seen >= 3 times, with <unk>" in r.stderr,
          "the vocabulary size is reported")

    bad = os.path.join(tmp, "bad.tar.gz")
    archive(bad, {heldout.format(0): "x\n"})
    dest2 = os.path.join(tmp, "bad")
    os.makedirs(dest2)
    r = subprocess.run(["/usr/bin/python3", SCRIPT, bad, dest2], capture_output=True, text=True)
    check(r.returncode == 1 and "no training shards" in r.stderr and not os.listdir(dest2),
          f"an archive without training shards is refused, nothing written ({r.stderr.strip()})")

r = subprocess.run(["bash", os.path.join(ROOT, "datasets", "fetch.sh"), "--check", "billion"],
                   capture_output=True, text=True, cwd=ROOT)
present = os.path.exists(os.path.join(ROOT, "datasets", "billion", "PREPARED_FROM"))
check(present or (r.returncode == 1 and "make data CORPUS=billion" in r.stderr),
      f"fetch.sh --check billion without the corpus names make data CORPUS=billion "
      f"({r.returncode}: {r.stderr.strip()})")
sys.exit(finish())
