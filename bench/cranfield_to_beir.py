"""Turn the Cranfield collection's original files into the BEIR layout ``bench_ir.py`` reads.

Cranfield (1,400 aerodynamics abstracts, 225 questions, graded judgements) ships as
``cran.all.1400`` and ``cran.qry`` (records opened by ``.I <id>``, fields by ``.T`` title,
``.A`` authors, ``.B`` bibliography, ``.W`` text) and ``cranqrel`` (question number, document
number, code). Questions are judged by their position in ``cran.qry`` (1..225), not by their
``.I`` number. Codes run 1 (a complete answer) to 4 (minimum interest); -1 marks no relevance.
A code c becomes the gain 5 - c, so the best answers weigh most in nDCG.

    python bench/cranfield_to_beir.py CRANFIELD_DIR OUT_DIR
    DBRAIN_IR_DATA=OUT_DIR/.. python bench/bench_ir.py --collection <name of OUT_DIR>
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from pathlib import Path

FIELD = re.compile(r"^\.([TABW])\s*$")


def records(path: Path) -> list[dict[str, str]]:
    """The ``.I`` records of a Cranfield file, each field's lines joined by single spaces."""
    found: list[dict[str, str]] = []
    field = ""
    for line in path.read_text(encoding="latin-1").splitlines():
        if line.startswith(".I "):
            found.append({"I": line[3:].strip()})
            field = ""
        elif match := FIELD.match(line):
            field = match.group(1)
        elif found and field:
            found[-1][field] = f"{found[-1].get(field, '')} {line}".strip()
    return [{k: " ".join(v.split()) for k, v in r.items()} for r in found]


def tidy(text: str) -> str:
    """Cranfield spaces its full stops (``slipstream .``); join them back."""
    return re.sub(r"\s+([.,;:])", r"\1", text).strip()


def document(record: dict[str, str]) -> dict[str, str]:
    """A BEIR document; the abstract repeats the title first, which the text drops."""
    title = tidy(record.get("T", "")).rstrip(".")
    text = tidy(record.get("W", ""))
    if text.lower().startswith(title.lower()):
        text = text[len(title) :].lstrip(" .")
    return {"_id": record["I"], "title": title, "text": text}


def convert(source: Path, out: Path) -> tuple[int, int, int]:
    """Write corpus.jsonl.gz, queries.jsonl and qrels.tsv; (documents, questions, judgements)."""
    out.mkdir(parents=True, exist_ok=True)
    docs = [document(r) for r in records(source / "cran.all.1400")]
    with gzip.open(out / "corpus.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(d) + "\n" for d in docs)
    questions = records(source / "cran.qry")
    with (out / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for n, q in enumerate(questions, start=1):
            fh.write(json.dumps({"_id": str(n), "text": tidy(q.get("W", "")).rstrip(".")}) + "\n")
    judged = 0
    with (out / "qrels.tsv").open("w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for line in (source / "cranqrel").read_text().splitlines():
            question, doc, code = line.split()[:3]
            if 1 <= int(code) <= 4:
                fh.write(f"{question}\t{doc}\t{5 - int(code)}\n")
                judged += 1
    return len(docs), len(questions), judged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="holds cran.all.1400, cran.qry, cranqrel")
    parser.add_argument("out", type=Path, help="folder to write the BEIR layout into")
    args = parser.parse_args()
    docs, questions, judged = convert(args.source, args.out)
    print(f"{docs:,} documents, {questions} questions, {judged:,} judgements -> {args.out}")


if __name__ == "__main__":
    main()
