"""The rows of the two related papers for pipeline/claims.py:

- de Brebisson & Vincent 2016, "An Exploration of Softmax Alternatives Belonging to the Spherical
  Loss Family": Table 1 (MNIST conv net, random splits), Table 5 (PTB feed-forward LM), the
  discussion's claim that the spherical losses fall behind softmax as the number of classes grows,
  and Tables 3, 4, 6 (CIFAR-10/100, One Billion Word: not attempted here).
- Sun et al. 2021, "Sparse-softmax: A Simpler and Faster Alternative Softmax Transformation":
  Table 1 (k = 20 beats softmax above ~100 classes), k near the class count breaks training
  (RCV1-v2, k = 100 of 103), robustness to k (Figure 2).

Table 1's runs are read from results/classify-paper (pipeline/profiles/classify-paper.toml: early
stopping with no cap that binds) where it has >= 2 paired seeds, else from results/classify, whose
5-epoch cap stops every run while it still improves: a run whose best epoch is the last one it was
allowed is undertrained, and a row whose runs all are says so instead of a verdict.
"""
from __future__ import annotations

import os

import claim_tests as ct
from claims import Row, by_seed, final_key, judged, mean, not_attempted, pairs, shown

# softmax_abs "close to softmax" (Table 1: 0.0433 vs 0.0437 NLL): equivalence within 5% of
# softmax's mean test NLL (relative, so it reads the same on MNIST and Fashion-MNIST), stated in
# this file (issue 1/5) before results/classify-paper's runs.
ABS_TIE_MARGIN = 0.05
TABLE1 = {"softmax": (0.0433, 0.812), "softmax_abs": (0.0437, 0.813),
          "spherical": (0.0311, 0.828), "taylor": (0.0292, 0.785)}  # (NLL, error %), MNIST


def _classify_dir(results: str, worse: str, better: str) -> str:
    paper = os.path.join(results, "classify-paper")
    nll = final_key("classifier", "test_nll")
    if len(pairs(by_seed(paper, worse, nll), by_seed(paper, better, nll))[0]) >= 2:
        return paper
    return os.path.join(results, "classify")


def _capped(directory: str, head: str) -> bool:
    """Every run of head stopped at its epoch cap while still improving (best epoch = last)."""
    best = by_seed(directory, head, final_key("classifier", "best_epoch"))
    run = by_seed(directory, head, final_key("classifier", "epochs_run"))
    seeds = set(best) & set(run)
    return bool(seeds) and all(best[s] >= run[s] for s in seeds)


def table1_row(results: str, claim: str, worse: str, better: str, key: str, unit: str,
               tie: bool = False) -> Row:
    col = 0 if key == "test_nll" else 1
    paper = (f"MNIST, random splits, 100 runs: {worse} {TABLE1[worse][col]} vs {better} "
             f"{TABLE1[better][col]}{'%' if col else ''}")
    d = _classify_dir(results, worse, better)
    seeds, xa, xb = pairs(by_seed(d, worse, final_key("classifier", key)),
                          by_seed(d, better, final_key("classifier", key)))
    if len(seeds) < 2:
        return not_attempted(claim, paper, f"fewer than 2 paired seeds in {shown(d)}")
    ours = (f"Fashion-MNIST (not MNIST), the paper's conv net: {worse} {mean(xa):.4g}, {better} "
            f"{mean(xb):.4g} {unit} (means)")
    capped = [h for h in (worse, better) if _capped(d, h)]
    if capped:
        return not_attempted(claim, paper, f"undertrained: {', '.join(capped)} stopped at the "
                             "epoch cap with its best epoch the last in every seed; "
                             "`make reproduce PROFILE=classify-paper` trains to early stopping",
                             shown(d), ours)
    if tie:
        margin = ABS_TIE_MARGIN * mean(xa)
        return judged(claim, paper, ours, ct.equivalence(xa, xb, margin), shown(d))
    return judged(claim, paper, ours, ct.directional(xa, xb), shown(d))


def table5_rows(results: str) -> list[Row]:
    d = os.path.join(results, "nplm")
    ppl = final_key("nplm", "test_ppl")
    paper = {"softmax": 126.7, "spherical": 149.2, "taylor": 147.2, "softmax_abs": 128.2}
    rows = []
    for head in ("spherical", "taylor"):
        claim = f"softmax has lower PTB test ppl than {head} softmax (Table 5, feed-forward LM)"
        seeds, xa, xb = pairs(by_seed(d, head, ppl), by_seed(d, "softmax", ppl))
        ptxt = f"PTB, NPLM tuned per head: {head} {paper[head]} vs softmax {paper['softmax']}"
        if len(seeds) < 2:
            rows.append(not_attempted(claim, ptxt, f"{len(seeds)} seed in {shown(d)}; the "
                                      "paired test needs 2 (the nplm profile's seeds)", shown(d)))
            continue
        ours = f"PTB, NPLM 2 x 256, 1 epoch: {head} {mean(xa):.4g}, softmax {mean(xb):.4g} ppl"
        rows.append(judged(claim, ptxt, ours, ct.directional(xa, xb), shown(d)))
    return rows


def classes_row(results: str, table1: Row, table5: list[Row]) -> Row:
    """The discussion's claim: the spherical losses match or beat softmax at 10 classes and fall
    behind it as the classes grow (10000 words). Combined from Table 1's Taylor row and Table 5's
    rows: reproduced when softmax wins at 10000 classes (both Table 5 rows reproduced) and
    Taylor is not worse at 10 (Table 1 reproduced or not significant); contradicted when softmax
    loses at 10000; else undecided."""
    claim = "the spherical losses fall behind softmax as the number of classes grows (section 5)"
    paper = "MNIST/CIFAR-10 (10 classes): spherical ahead; CIFAR-100, PTB, 1B Word: behind"
    verdicts = [r.verdict for r in table5]
    if any(v.startswith("not attempted") for v in verdicts + [table1.verdict]):
        return not_attempted(claim, paper, "needs Table 1's Taylor row and both Table 5 rows "
                             "judged (above)")
    if any(v == "contradicted" for v in verdicts):
        v = "contradicted"
    elif all(v == "reproduced" for v in verdicts) and table1.verdict in ("reproduced",
                                                                        "not significant"):
        v = "reproduced"
    else:
        v = "undecided"
    return Row(claim, paper, f"10 classes (Table 1 row): {table1.verdict}; 10000 classes "
               f"(Table 5 rows): {', '.join(verdicts)}", "two directional tests, combined",
               verdict=v, source="the rows above")


def spherical_rows(results: str) -> list[Row]:
    taylor_nll = table1_row(results, "Taylor softmax has lower test NLL than softmax (Table 1)",
                            "softmax", "taylor", "test_nll", "nats")
    rows = [
        taylor_nll,
        table1_row(results, "Taylor softmax has lower test error than softmax (Table 1)",
                   "softmax", "taylor", "test_error_pct", "% error"),
        table1_row(results, "spherical softmax has lower test NLL than softmax (Table 1)",
                   "softmax", "spherical", "test_nll", "nats"),
        table1_row(results, "softmax on abs(z) (softmax_abs) performs as softmax (Table 1, a tie: "
                   f"margin {ABS_TIE_MARGIN:.0%} of softmax's NLL)", "softmax", "softmax_abs",
                   "test_nll", "nats", tie=True),
    ]
    t5 = table5_rows(results)
    rows += t5 + [classes_row(results, taylor_nll, t5)]
    for claim, table, why in (
            ("Taylor softmax has lower test error than softmax on CIFAR-10", "Table 3",
             "CIFAR-10 is not packaged for Debian and a 14-layer conv net needs a GPU"),
            ("softmax has lower test error than the spherical losses on CIFAR-100", "Table 4",
             "CIFAR-100 is not packaged for Debian"),
            ("softmax has lower ppl than the spherical losses on One Billion Word", "Table 6",
             "One Billion Word (0.8 G words) is not on this machine")):
        rows.append(not_attempted(claim, table, why))
    return rows


# Sun et al.'s robustness to k (Figure 2) as a tie: k = 10 and k = 50 within 1 point of test
# error of k = 20, stated in this file with the sparse profile, before its runs.
K_TIE_MARGIN = 1.0


def sparse_rows(results: str) -> list[Row]:
    """Sun et al. 2021 on the sparse profile's 100-class task (pipeline/profiles/sparse.toml),
    test error in percent, paired by seed."""
    d = os.path.join(results, "sparse")
    err = lambda head: by_seed(d, head, final_key("nplm", "test_error_pct"))  # noqa: E731
    where = "PTB next word among the 100 most frequent (100 classes), NPLM, 1 epoch: "
    paper = "text classification, 103-150 classes, BERT: "
    resume = "`make reproduce PROFILE=sparse`, ~35 min"
    rows = []

    def row(claim, theirs, worse, better, test):
        seeds, xa, xb = pairs(err(worse), err(better))
        if len(seeds) < 2:
            return not_attempted(claim, paper + theirs, f"fewer than 2 paired seeds in "
                                 f"results/sparse: {resume}",
                                 shown(d) if os.path.isdir(d) else "-")
        ours = f"{where}{worse} {mean(xa):.4g}%, {better} {mean(xb):.4g}% error (means)"
        return judged(claim, paper + theirs, ours, test(xa, xb), shown(d))

    rows.append(row("sparse softmax (k = 20) has lower test error than softmax with ~100 "
                    "classes (Table 1)", "F1 sparse (k = 20) above softmax on all four",
                    "softmax", "sparse_k_20", ct.directional))
    # "Breaks training" is against the model that trains: softmax (RCV1-v2's k = 100 fell to
    # macro F1 21.89 from softmax's 62.04, "the model does not converge properly"). That k = 20
    # beats k near M is another claim (k = 20 the best setting), its own row.
    rows.append(row("k near the number of classes breaks training: k = 97 of 100 has higher "
                    "test error than softmax (RCV1-v2: k = 100 of 103 does not converge)",
                    "RCV1-v2: macro F1 softmax 62.04, k = 100 21.89", "sparse_k_97", "softmax",
                    ct.directional))
    rows.append(row("k = 20 beats k near the number of classes (k = 97 of 100; Table 1: k = 20 "
                    "the best setting at ~100 classes)", "RCV1-v2: macro F1 k = 20 63.17, "
                    "k = 100 21.89", "sparse_k_97", "sparse_k_20", ct.directional))
    for k in (10, 50):
        rows.append(row(f"sparse softmax is robust to k: k = {k} performs as k = 20 (Figure 2, "
                        f"a tie: margin {K_TIE_MARGIN:g} point)", "Figure 2: F1 flat over k = "
                        "10-50", f"sparse_k_{k}", "sparse_k_20",
                        lambda a, b: ct.equivalence(a, b, K_TIE_MARGIN)))
    rows.append(not_attempted("BERT/UNILM-scale classification and generation (Tables 1, 3)",
                              "BERT-base, UNILM", "a pretrained transformer and a GPU"))
    return rows


def sections(results: str) -> list[tuple[str, list[Row]]]:
    return [("de Brebisson & Vincent 2016, the spherical loss family", spherical_rows(results)),
            ("Sun et al. 2021, sparse-softmax", sparse_rows(results))]

