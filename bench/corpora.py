"""The public collections under ``../shared/data`` as brains and questions, for the quality
benchmarks (``bench_verdict.py``, ``bench_ir.py``).

Each collection becomes a list of documents (id, title, text) and a list of questions with the
documents that answer them:

- ``cranfield``: 1,400 aerodynamics abstracts, 225 questions with graded judgements
  (``cran.all.1400``, ``cran.qry``, ``cranqrel``; a code c gains 5 - c, as in
  ``cranfield_to_beir.py``);
- ``squad``: the 87 paragraphs of two SQuAD 2.0 dev articles (titled by their article), and the
  293 answerable questions, each answered by its paragraph (``is_impossible`` questions are
  kept apart: asked of the same article, the brain does not hold their answer);
- ``hotpotqa``: the 27 HotpotQA questions' context paragraphs pooled (270, one per title), each
  question answered by its two supporting paragraphs.

The files are read where they lie (``DBRAIN_SHARED_DATA``, default ``../shared/data`` beside
the repository); nothing is copied into the repository or downloaded.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NAMES = ("cranfield", "squad", "hotpotqa")


def data_dir() -> Path:
    """Where the shared collections are (``DBRAIN_SHARED_DATA`` or ``../shared/data``)."""
    named = os.environ.get("DBRAIN_SHARED_DATA")
    return Path(named) if named else HERE.parent.parent / "shared" / "data"


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    gold: dict[str, int]  # document id -> gain (empty: the collection does not answer it)


@dataclass
class Collection:
    name: str
    documents: dict[str, dict[str, str]]  # id -> {"title", "text"}
    questions: list[Question]
    unanswerable: list[Question] = field(default_factory=list)  # same topic, no answer held


def _cranfield(folder: Path) -> Collection:
    from cranfield_to_beir import document, records, tidy

    docs = [document(r) for r in records(folder / "cran.all.1400")]
    documents = {d["_id"]: {"title": d["title"], "text": d["text"]} for d in docs}
    asked = [tidy(r.get("W", "")).rstrip(".") for r in records(folder / "cran.qry")]
    gold: dict[int, dict[str, int]] = {}
    for line in (folder / "cranqrel").read_text().split("\n"):
        parts = line.split()
        if len(parts) == 3 and 1 <= int(parts[2]) <= 4:
            gold.setdefault(int(parts[0]), {})[parts[1]] = 5 - int(parts[2])
    questions = [
        Question(str(n), text, gold[n]) for n, text in enumerate(asked, start=1) if n in gold
    ]
    return Collection("cranfield", documents, questions)


def _squad(folder: Path) -> Collection:
    data = json.loads((folder / "squad-v2-dev-2-articles.json").read_text())["data"]
    documents: dict[str, dict[str, str]] = {}
    questions: list[Question] = []
    unanswerable: list[Question] = []
    for article in data:
        title = article["title"].replace("_", " ")
        for n, paragraph in enumerate(article["paragraphs"], start=1):
            doc_id = f"{article['title']}-{n}"
            documents[doc_id] = {"title": title, "text": paragraph["context"]}
            for qa in paragraph["qas"]:
                if qa.get("is_impossible"):
                    unanswerable.append(Question(qa["id"], qa["question"], {}))
                else:
                    questions.append(Question(qa["id"], qa["question"], {doc_id: 1}))
    return Collection("squad", documents, questions, unanswerable)


def _hotpotqa(folder: Path) -> Collection:
    data = json.loads((folder / "hotpot-dev-distractor-27.json").read_text())
    documents: dict[str, dict[str, str]] = {}
    ids: dict[str, str] = {}
    questions: list[Question] = []
    for record in data:
        for title, sentences in record["context"]:
            if title not in ids:
                ids[title] = str(len(ids) + 1)
                documents[ids[title]] = {"title": title, "text": " ".join(sentences).strip()}
        gold = {ids[title]: 1 for title, _ in record["supporting_facts"] if title in ids}
        questions.append(Question(record["_id"], record["question"], gold))
    return Collection("hotpotqa", documents, questions)


LOADERS = {"cranfield": _cranfield, "squad": _squad, "hotpotqa": _hotpotqa}


def load(name: str, folder: Path | None = None) -> Collection:
    """One shared collection, read where it lies."""
    return LOADERS[name]((folder or data_dir()) / name)


def pipeline_run(brain: Path, index: Path | None, settings: Any) -> tuple[sqlite3.Connection, Any]:
    """A read-only connection to a built brain and the ``RunContext`` that runs the research
    pipeline over it in process, as ``/-/research.json`` does (the semantic lane where
    ``index`` holds its vectors). Close the connection when done."""
    from datasette_dbrain_websearch.pipeline import RunContext

    conn = sqlite3.connect(f"file:{brain}?mode=ro", uri=True, check_same_thread=False)

    async def execute(fn: Any) -> Any:
        return fn(conn)

    semantic = str(index) if index else None
    return conn, RunContext(execute, brain.stem, settings, lambda k, i: "", semantic_index=semantic)


def doc_url(name: str, doc_id: str) -> str:
    return f"https://{name}.collection.org/d/{doc_id}"


def build_brain(path: Path, name: str, documents: dict[str, dict[str, str]]) -> dict[str, str]:
    """Every document as an extracted ``sources`` row with its FTS row, as dbrain stores an
    extracted link; returns document id by source key."""
    from datasette_dbrain_websearch.fts_rows import SOURCES_FTS_INSERT, source_fts_row
    from datasette_dbrain_websearch.schema import create_brain_schema
    from datasette_dbrain_websearch.urls import normalize_url

    conn = sqlite3.connect(path)
    create_brain_schema(conn)
    now = "2026-01-01T00:00:00Z"
    rows = []
    ids: dict[str, str] = {}
    for n, (doc_id, doc) in enumerate(documents.items(), start=1):
        url = normalize_url(doc_url(name, doc_id))
        ids[url.source_key] = doc_id
        rows.append(
            {
                "id": n,
                "source_key": url.source_key,
                "canonical_url": url.canonical_url,
                "normalized_url": url.normalized_url,
                "source_type": url.source_type,
                "domain": url.domain,
                "note_path": url.note_path,
                "title": doc.get("title", ""),
                "extracted_text": doc.get("text", ""),
                "extract_status": "ok",
                "created_at": now,
                "updated_at": now,
                "extracted_at": now,
            }
        )
    columns = list(rows[0])
    conn.executemany(
        f"insert into sources ({', '.join(columns)}) values ({', '.join('?' for _ in columns)})",
        [[r[c] for c in columns] for r in rows],
    )
    conn.executemany(SOURCES_FTS_INSERT, [source_fts_row(r) for r in rows])
    conn.commit()
    conn.close()
    return ids
