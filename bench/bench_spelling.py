"""Benchmark: "Did you mean" on the public collections: typos found, real words left alone.

Each collection of ``../shared/data`` (Cranfield, two SQuAD articles, the 27 HotpotQA
questions' paragraphs) becomes a brain, every document a ``sources`` row written as
``bench_ir.py`` writes them. Then, with ``spelling.suggest`` called as /-/research calls it
(the brain's FTS tables, one word at a time, and again with the rest of its question):

- typos: every distinct word of 5+ letters of the collection's questions that the brain's rows
  spell, with one typo made deterministically (seeded: a letter deleted, inserted,
  substituted, or two neighbours swapped, anywhere in the word). ``found`` is the share for
  which the original word is suggested back. A typo that is itself a word the brain holds
  or the English word list knows ("form" for "from") is a real-word error, which the rule
  never touches by design; those are counted apart (``real``) and left out of ``found``;
  ``found*`` counts them in (as misses). ``in q`` asks again with the rest of the word's
  question (its search words, as /-/research passes them). ``first`` is the found rate of
  typos in the first letter (one in ten typos, kept out of ``found``), which the rule looks for
  only when a letter was inserted or swapped there; ``two`` the found rate of words of 6+
  letters given a second typo. A suggestion of another spelling of the word's stem ("slab"
  for "slabs") counts as found: FTS5 searches them alike;
- real words: every distinct word of 3+ letters of the *other* collections' questions that this
  brain holds nowhere (correctly spelled: people's questions, names included). ``wrong`` is
  the share that gets a suggestion anyway; ``wrong (not in list)`` the same among those the
  English word list does not know (names, jargon), which only the edit and commonness limits
  protect.

Prints; never fails (the rule's targets: found >= 0.8, wrong <= 0.02).

    python bench/bench_spelling.py [--seed 30] [--limit N] [--smoke] [--short-word N]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import string
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import corpora

from datasette_dbrain_websearch import spelling
from datasette_dbrain_websearch.query_plan import plan_query
from datasette_dbrain_websearch.stemming import stem, tokens

HERE = Path(__file__).resolve().parent
NAMES = corpora.NAMES
TABLES = ["sources_fts"]
MIN_TYPO_LETTERS = 5
TWO_TYPO_LETTERS = 6  # words this long are also given a second typo (column "two")
KINDS = ("delete", "insert", "substitute", "swap")


def load(name: str) -> tuple[dict[str, dict], list[str]]:
    """A shared collection's documents and every question asked of it (``corpora``)."""
    found = corpora.load(name)
    return found.documents, [q.text for q in (*found.questions, *found.unanswerable)]


def typo(word: str, rng: random.Random, first: bool) -> tuple[str, str]:
    """(kind, the word with one typo): in its first letter when ``first``, else after it."""
    while True:
        kind = rng.choice(KINDS)
        at = 0 if first else rng.randrange(1, len(word))
        letter = rng.choice(string.ascii_lowercase)
        if kind == "delete":
            made = word[:at] + word[at + 1 :]
        elif kind == "insert":
            made = word[:at] + letter + word[at:]
        elif kind == "substitute":
            made = word[:at] + letter + word[at + 1 :]
        else:
            at = min(at, len(word) - 2)
            made = word[:at] + word[at + 1] + word[at] + word[at + 2 :]
        if made != word:
            return kind, made


@dataclass
class Tally:
    typos: int = 0
    real: int = 0  # typos the brain or the word list knows: never corrected, by design
    found: int = 0
    first: int = 0
    first_found: int = 0
    in_question: int = 0
    two: int = 0  # words of TWO_TYPO_LETTERS+ letters with two typos
    two_found: int = 0
    words: int = 0
    wrong: int = 0
    unlisted: int = 0
    unlisted_wrong: int = 0
    ms: list[float] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for name, value in vars(other).items():
            setattr(self, name, getattr(self, name) + value)


def ask(conn: sqlite3.Connection, words: list[str], tally: Tally) -> dict[str, str]:
    started = time.perf_counter()
    found = spelling.suggest(conn, TABLES, words)
    tally.ms.append((time.perf_counter() - started) * 1000)
    return {c.word: c.suggestion for c in found}


def same(suggestion: str | None, word: str) -> bool:
    """The word meant, or another spelling of its stem (FTS5 searches them alike)."""
    return suggestion is not None and stem(suggestion) == stem(word)


def question_words(questions: list[str]) -> list[str]:
    return list(dict.fromkeys(t for q in questions for t in tokens(q) if t.isalpha()))


def spelled_by(corpus: dict[str, dict]) -> set[str]:
    """The words a collection's documents spell (edited text: their spelling is right)."""
    return {t for d in corpus.values() for t in tokens(f"{d.get('title', '')} {d['text']}")}


def correct_words(collections: list[tuple[dict[str, dict], list[str]]]) -> list[str]:
    """The words of collections' questions that their own documents spell too (a question's
    typo, "ivolve", is not one of them)."""
    found: dict[str, None] = {}
    for corpus, questions in collections:
        spelled = spelled_by(corpus)
        found.update(dict.fromkeys(w for w in question_words(questions) if w in spelled))
    return list(found)


def measure(
    name: str,
    conn: sqlite3.Connection,
    spelled: set[str],
    questions: list[str],
    others: list[str],
    seed: int,
    limit: int,
) -> Tally:
    english = spelling.english_words() or frozenset()
    tally = Tally()
    rng = random.Random(f"{seed}:{name}")
    again = random.Random(f"{seed}:{name}:again")
    asked = {w: q for q in questions for w in plan_query(q).search_words}
    typed = [w for w in question_words(questions) if len(w) >= MIN_TYPO_LETTERS and w in spelled]
    for n, word in enumerate(typed[:limit] if limit else typed):
        first = n % 10 == 0  # one typo in ten in the first letter, reported apart
        _, made = typo(word, rng, first)
        if made in english or not spelling.unknown_words(conn, TABLES, [made]):
            tally.real += 1
            continue
        fixes = ask(conn, [made], tally)
        hit = same(fixes.get(made), word)
        if first:
            tally.first += 1
            tally.first_found += hit
            continue
        tally.typos += 1
        tally.found += hit
        if not hit and len(tally.examples) < 3:
            tally.examples.append(f"{made}->{fixes.get(made, '-')} (meant {word})")
        if len(word) >= TWO_TYPO_LETTERS:  # the same word with a second typo
            _, twice = typo(made, again, False)
            if twice not in english and spelling.unknown_words(conn, TABLES, [twice]):
                tally.two += 1
                tally.two_found += same(ask(conn, [twice], tally).get(twice), word)
        if word in asked:
            words = [made if w == word else w for w in plan_query(asked[word]).search_words]
            tally.in_question += same(ask(conn, words, tally).get(made), word)
        else:
            tally.in_question += hit
    absent = spelling.unknown_words(conn, TABLES, others)
    for word in absent[:limit] if limit else absent:
        tally.words += 1
        listed = word in english
        fixes = ask(conn, [word], tally)
        tally.wrong += bool(fixes)
        if not listed:
            tally.unlisted += 1
            tally.unlisted_wrong += bool(fixes)
        if fixes and len(tally.examples) < 6:
            tally.examples.append(f"{word}->{fixes[word]} (a real word)")
    return tally


def rate(n: int, of: int) -> str:
    return f"{n / of:.3f}" if of else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--limit", type=int, default=0, help="words of each kind per collection")
    parser.add_argument("--smoke", action="store_true", help="a quick run: --limit 40")
    parser.add_argument(
        "--short-word",
        type=int,
        default=spelling.SHORT_WORD,
        help="longest word allowed one edit only (to measure the limit)",
    )
    parser.add_argument("--collections", nargs="*", default=list(NAMES), choices=NAMES)
    args = parser.parse_args()
    limit = 40 if args.smoke and not args.limit else args.limit
    spelling.SHORT_WORD = args.short_word
    folder = corpora.data_dir()
    if not folder.is_dir():
        sys.exit(f"No shared collections at {folder} (set DBRAIN_SHARED_DATA).")
    loaded = {name: load(name) for name in NAMES}
    if spelling.english_words() is None:
        sys.exit("No English word list: install the package (pip install -e .).")
    print(
        f"did you mean: seed {args.seed}, one edit up to {args.short_word} letters; typos of "
        f"{MIN_TYPO_LETTERS}+ letter question words, "
        f"real words of the other collections' questions "
        f"(SQLite {sqlite3.sqlite_version}, Python {sys.version.split()[0]})"
    )
    header = (
        f"{'collection':11}{'docs':>6}{'typos':>7}{'found':>7}{'found*':>8}{'in q':>7}"
        f"{'first':>7}{'two':>7}{'real':>6}{'words':>7}{'wrong':>7}{'unlisted':>9}{'wrong':>7}"
        f"{'p50 ms':>8}"
    )
    total = Tally()
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.collections:
            corpus, questions = loaded[name]
            path = Path(tmp) / f"{name}.db"
            corpora.build_brain(path, name, corpus)
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            spelled = spelled_by(corpus)
            others = correct_words([loaded[o] for o in NAMES if o != name])
            tally = measure(name, conn, spelled, questions, others, args.seed, limit)
            conn.close()
            total.add(tally)
            lines.append(row(name, len(corpus), tally))
            for example in tally.examples:
                lines.append(f"    {example}")
    print(header)
    print("\n".join(lines))
    print(row("overall", 0, total))


def row(name: str, docs: int, t: Tally) -> str:
    return (
        f"{name:11}{docs or '':>6}{t.typos:>7}{rate(t.found, t.typos):>7}"
        f"{rate(t.found, t.typos + t.real):>8}{rate(t.in_question, t.typos):>7}"
        f"{rate(t.first_found, t.first):>7}{rate(t.two_found, t.two):>7}{t.real:>6}"
        f"{t.words:>7}{rate(t.wrong, t.words):>7}"
        f"{t.unlisted:>9}{rate(t.unlisted_wrong, t.unlisted):>7}"
        f"{statistics.median(t.ms) if t.ms else 0:>8.2f}"
    )


if __name__ == "__main__":
    main()
