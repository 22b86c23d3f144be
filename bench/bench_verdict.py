"""Benchmark: does the verdict know what the brain holds?

Each shared collection (``corpora``: Cranfield, SQuAD, HotpotQA under ``../shared/data``)
becomes a brain of extracted ``sources`` rows, indexed for the semantic lane as a user indexes
one (``datasette dbrain-websearch index``). Each brain is then asked, through the research
pipeline as ``/-/research.json`` runs it:

- its own questions (in-domain: the brain holds their answer),
- the other collections' questions (out-of-domain: it does not),
- generated nonsense (seeded pseudo-words),

and the verdict is scored as a classifier: the share judged ``enough_evidence`` when the brain
holds the answer, the share judged so when it does not, nonsense judged ``no_evidence`` with no
rows, and balanced accuracy (enough vs not). The plugin's calibrated verdict is printed beside
dbrain's rule (its term coverage over the same rows), and so are the rows shown for questions
the brain cannot answer that hold none of the question's words.

``--fit`` refits the calibrated verdict's weights (``judge.Calibration``) on the same runs,
each brain's in- and out-of-domain questions weighing alike, and prints them; ``--no-semantic``
runs without the semantic lane (the lexical-only calibration). Prints; never fails.

    python bench/bench_verdict.py [--collections cranfield,squad,hotpotqa] [--fit]
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import random
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import corpora

from datasette_dbrain_websearch.config import Settings
from datasette_dbrain_websearch.config_keys import DEFAULT_EMBEDDING_MODEL
from datasette_dbrain_websearch.judge import (
    ENOUGH_EVIDENCE,
    NO_EVIDENCE,
    Evidence,
    RowScore,
    Rule,
    row_score,
)
from datasette_dbrain_websearch.options import checked_request
from datasette_dbrain_websearch.pipeline import run_pipeline
from datasette_dbrain_websearch.semantic_index import index_brain

NONSENSE = 40


def nonsense(count: int, seed: int = 7) -> list[str]:
    """Questions of one to three pronounceable words no language has ("plorfendish")."""
    rng = random.Random(seed)
    consonants, vowels = "bcdfghjklmnpqrstvwxz", "aeiouy"

    def word() -> str:
        body = "".join(
            rng.choice(consonants) + rng.choice(vowels) for _ in range(rng.randint(3, 5))
        )
        return body + rng.choice(["", "ish", "x", "th"])

    return [" ".join(word() for _ in range(rng.randint(1, 3))) for _ in range(count)]


@dataclass
class Asked:
    """One question's run: its set, the verdict, and what the fit and the report read."""

    label: str  # in | out | nonsense
    verdict: str
    dbrain_verdict: str
    rows: int
    wordless_rows: int  # rows shown that hold none of the question's words
    inputs: dict[str, Any]
    evidence: list[Evidence]


async def ask_all(
    brain: Path, index: Path | None, questions: list[tuple[str, str]], settings: Settings
) -> list[Asked]:
    conn, run = corpora.pipeline_run(brain, index, settings)
    dbrain_rule = Rule(replace(settings.judge, mode="dbrain"), "dbrain")
    asked = []
    for label, question in questions:
        request = checked_request(settings, question=question, answer=False)
        pack = (await run_pipeline(request, run)).to_json()
        evidence = [evidence_of(row) for row in pack["evidence"]]
        judged = pack["judge"]
        dbrain = dbrain_rule.verdict(
            evidence,
            judged["inputs"].get("exact_hits", 0),
            pack["query_plan"]["query_terms"],
            [],
        )
        asked.append(
            Asked(
                label,
                judged["verdict"],
                dbrain.verdict,
                len(pack["evidence"]),
                sum(1 for row in pack["evidence"] if not row["retrieval"]["matched_terms"]),
                judged["inputs"],
                evidence,
            )
        )
    conn.close()
    return asked


def evidence_of(row: dict[str, Any]) -> Evidence:
    cosine = next(
        (s["weight"] for s in row["retrieval"]["signals"] if s["name"] == "semantic_cosine"),
        None,
    )
    meaning = any(lane.get("dense_only") for lane in row["retrieval"]["lanes"])
    return Evidence(frozenset(row["retrieval"]["matched_terms"]), cosine, meaning)


def rates(asked: list[Asked], field: str) -> dict[str, float]:
    def share(label: str, test: Any) -> float:
        group = [a for a in asked if a.label == label]
        return sum(1 for a in group if test(a)) / len(group) if group else float("nan")

    enough_in = share("in", lambda a: getattr(a, field) == ENOUGH_EVIDENCE)
    enough_out = share("out", lambda a: getattr(a, field) == ENOUGH_EVIDENCE)
    none = share("nonsense", lambda a: getattr(a, field) == NO_EVIDENCE and a.rows == 0)
    return {
        "enough_in": enough_in,
        "enough_out": enough_out,
        "nonsense_none": none,
        "balanced": (enough_in + 1 - enough_out) / 2,
    }


def top_scores(asked: Asked, top_k: int) -> list[RowScore]:
    """The evidence scores of the top rows holding a word, as the judge computes them."""
    weights = asked.inputs.get("term_weights") or {}
    rows = asked.inputs.get("rows_in_brain") or 0
    matching = [e for e in asked.evidence if e.held and not e.meaning_only][:top_k]
    return [row_score(e, weights, rows) for e in matching]


def features(asked: Asked, top_k: int) -> list[tuple[float, float | None, float]]:
    """(weight share, cosine, rare words) of each of the top matching rows (``judge``)."""
    return [(f.weight, f.closeness, f.rare) for f in top_scores(asked, top_k)]


def best_score(asked: Asked, top_k: int) -> float:
    """The best evidence score among the top matching rows."""
    return max((f.score for f in top_scores(asked, top_k)), default=0.0)


def sweep(runs: dict[str, list[Asked]], top_k: int) -> None:
    """Enough when it holds / when it does not, per brain, at other ``judge.min_score``."""
    print("min_score  " + "  ".join(f"{name:>18}" for name in runs))
    for needed in (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8):
        cells = []
        for asked in runs.values():
            scores = {
                label: [best_score(a, top_k) >= needed for a in asked if a.label == label]
                for label in ("in", "out")
            }
            share = {k: sum(v) / len(v) if v else 0.0 for k, v in scores.items()}
            cells.append(f"{share['in']:>9.2f} / {share['out']:.2f}")
        print(f"{needed:<11}" + "  ".join(f"{c:>18}" for c in cells))


def fit(runs: dict[str, list[Asked]], semantic: bool, top_k: int) -> list[float]:
    """Logistic weights (weight share, cosine, rare words, bias) for the best of the top rows,
    by gradient descent; each brain's in- and out-of-domain questions weigh alike."""
    import numpy as np

    xs, ys, ws = [], [], []
    for asked in runs.values():
        for label, y in (("in", 1.0), ("out", 0.0)):
            group = [a for a in asked if a.label == label and features(a, top_k)]
            for a in group:
                xs.append(features(a, top_k))
                ys.append(y)
                ws.append(1.0 / len(group))
    theta = np.zeros(4)
    y_arr, w_arr = np.array(ys), np.array(ws)
    for _ in range(4000):
        z_best = []
        grads = []
        for rows in xs:
            feats = np.array([[w, (c or 0.0) if semantic else 0.0, r, 1.0] for w, c, r in rows])
            z = feats @ theta
            i = int(np.argmax(z))
            z_best.append(z[i])
            grads.append(feats[i])
        p = 1 / (1 + np.exp(-np.array(z_best)))
        gradient = (np.array(grads).T @ ((p - y_arr) * w_arr)) / w_arr.sum() + 1e-3 * theta
        theta -= 2.0 * gradient
    return [round(float(t), 2) for t in theta]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collections", default=",".join(corpora.NAMES))
    parser.add_argument("--fit", action="store_true", help="refit the calibration and print it")
    parser.add_argument("--sweep", action="store_true", help="the rates at other min_score")
    parser.add_argument("--no-semantic", action="store_true", help="without the semantic lane")
    parser.add_argument("--limit-questions", type=int, default=0, help="at most N per set")
    parser.add_argument("--workdir", type=Path, help="keep the brains here (default: a temp dir)")
    args = parser.parse_args()
    names = [n for n in args.collections.split(",") if n]
    collections = {name: corpora.load(name) for name in names}
    settings = Settings.from_config({"semantic": {"model": ""}} if args.no_semantic else {})
    junk = nonsense(NONSENSE)

    def cut(items: list[str]) -> list[str]:
        return items[: args.limit_questions] if args.limit_questions else items

    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-verdict-"))
    work.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[Asked]] = {}
    started = time.perf_counter()
    for name, collection in collections.items():
        brain = work / f"{name}.db"
        index = None if args.no_semantic else work / f"{name}-index.db"
        if not brain.exists():
            corpora.build_brain(brain, name, collection.documents)
        if index is not None and not index.exists():
            index_brain(brain, index, DEFAULT_EMBEDDING_MODEL)
        others = [q.text for other, c in collections.items() if other != name for q in c.questions]
        questions = (
            [("in", q) for q in cut([q.text for q in collection.questions])]
            + [("out", q) for q in cut(others)]
            + [("nonsense", q) for q in cut(junk)]
        )
        runs[name] = asyncio.run(ask_all(brain, index, questions, settings))
    lane = "lexical only" if args.no_semantic else f"semantic lane on ({DEFAULT_EMBEDDING_MODEL})"
    print(
        f"verdict on {len(collections)} brains, {lane} "
        f"({platform.machine()}, Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version}; {time.perf_counter() - started:.0f} s)"
    )
    header = f"{'brain':<11}{'rule':<12}{'enough|holds':>13}{'enough|not':>12}"
    print(header + f"{'nonsense->none':>16}{'balanced':>10}{'wordless rows':>15}")
    everything: list[Asked] = []
    for name, asked in runs.items():
        everything += asked
        for rule, field in (("plugin", "verdict"), ("dbrain", "dbrain_verdict")):
            r = rates(asked, field)
            out = [a for a in asked if a.label != "in"]
            wordless = f"{sum(a.wordless_rows for a in out)}/{sum(a.rows for a in out)}"
            print(
                f"{name:<11}{rule:<12}{r['enough_in']:>13.2f}{r['enough_out']:>12.2f}"
                f"{r['nonsense_none']:>16.2f}{r['balanced']:>10.2f}"
                + (f"{wordless:>15}" if rule == "plugin" else "")
            )
    per_brain = {n: rates(a, "verdict") for n, a in runs.items()}
    mean = {
        k: sum(r[k] for r in per_brain.values()) / len(per_brain)
        for k in next(iter(per_brain.values()))
    }
    print(
        f"{'mean':<11}{'plugin':<12}{mean['enough_in']:>13.2f}{mean['enough_out']:>12.2f}"
        f"{mean['nonsense_none']:>16.2f}{mean['balanced']:>10.2f}"
    )
    if args.sweep:
        sweep(runs, settings.judge.top_k)
    if args.fit:
        top_k = settings.judge.top_k
        print(
            "fitted calibration (weight share, cosine, rare words, bias):",
            fit(runs, not args.no_semantic, top_k),
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
