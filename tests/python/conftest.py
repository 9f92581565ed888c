"""Shared fixtures of the wheel's tests: the repository's model, a generated corpus of clinical
notes (names, record numbers, dates, phones, addresses, non-ASCII text) and its Parquet file."""

import os
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
MODELS_DIR = str(ROOT / ".assets" / "models")
SECRET = "python-test-secret"

# Every engine in these tests (and every Spark worker and Ray actor they start) keys surrogates
# and date shifts alike, as a cluster must.
os.environ["SERVICE_DEID_SECRET_KEY"] = SECRET

FIRST = ["John", "Maria", "Wei", "Amara", "José", "Chloé", "Dmitri", "Aisha", "Liam", "Sofía"]
LAST = ["Smith", "García", "Chen", "Okafor", "Müller", "Dubois", "Ivanov", "Khan", "O'Brien", "Nakamura"]
CITIES = ["Boston", "Springfield", "Cambridge", "Worcester", "Lowell"]
STREETS = ["Main Street", "Elm Avenue", "Oak Road", "Beacon Street", "Harbor Way"]
TEMPLATES = [
    "Mr. {first} {last} (MRN {mrn}) was seen on {date} at {num} {street}, {city}. Call ({area}) 555-{tail}.",
    "Patient {first} {last}, DOB {date}, presents with chest pain. Contact: {email}.",
    "Follow-up for {first} {last} on {date}; daughter reachable at ({area}) 555-{tail}. Lives at {num} {street}.",
    "Discharge summary — {last}, {first}. MRN: {mrn}. Admitted {date} with pneumonia; improving. ☺",
    "No identifiers in this note: vitals stable, continue current medication.",
    "",
]


def make_note(rng: random.Random) -> str:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    return rng.choice(TEMPLATES).format(
        first=first,
        last=last,
        mrn=rng.randint(1_000_000, 9_999_999),
        date=f"20{rng.randint(10, 24)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        num=rng.randint(1, 999),
        street=rng.choice(STREETS),
        city=rng.choice(CITIES),
        area=rng.randint(201, 989),
        tail=f"{rng.randint(100, 199):04d}",
        email=f"{first.lower()}.{last.lower()}@example.org".replace("'", ""),
    )


def corpus_table(n: int, seed: int = 17) -> pa.Table:
    """`n` notes with ids 0..n-1 (every 37th text null: a bad row must not fail its batch)."""
    rng = random.Random(seed)
    texts = [None if i % 37 == 36 else make_note(rng) for i in range(n)]
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "text": pa.array(texts, pa.string()),
            "site": pa.array([f"site-{i % 3}" for i in range(n)], pa.string()),
        }
    )


@pytest.fixture(scope="session")
def corpus() -> pa.Table:
    return corpus_table(int(os.environ.get("PHIFLOW_TEST_NOTES", "240")))


@pytest.fixture(scope="session")
def corpus_parquet(corpus, tmp_path_factory) -> Path:
    """The corpus as several Parquet files (so engines split it into several tasks)."""
    d = tmp_path_factory.mktemp("corpus")
    per_file = max(1, corpus.num_rows // 6)
    for i, start in enumerate(range(0, corpus.num_rows, per_file)):
        pq.write_table(corpus.slice(start, per_file), d / f"part-{i}.parquet")
    return d


@pytest.fixture(scope="session")
def engine():
    import phiflow

    return phiflow.get_or_create({"models_dir": MODELS_DIR, "method": "replace"})


@pytest.fixture(scope="session")
def direct(engine, corpus) -> pa.Table:
    """The corpus through the wheel directly, keyed by id: what every engine must reproduce."""
    return engine.deidentify_batch(corpus, "text", "id")


def rows_by_id(table: pa.Table) -> list:
    """(id, text, deidentified text, spans, status, error) sorted by id, offsets as ints."""
    cols = ["id", "text", "deidentified_text", "spans", "status", "error"]
    rows = table.select(cols).to_pylist()
    return sorted(
        (
            (r["id"], r["text"], r["deidentified_text"], r["spans"], r["status"], r["error"])
            for r in rows
        ),
        key=lambda r: r[0],
    )
