"""The wheel on its own: the server's output byte for byte, every Arrow string layout, streams,
tables, bad input as clear errors, and one model per process and config."""

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pyarrow as pa
import pytest

import phiflow
from conftest import MODELS_DIR, ROOT, SECRET, corpus_table

SPAN_FIELDS = ["label", "canonical_label", "start", "end", "output_start", "output_end", "source", "action"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`phiflow serve` from this checkout, on 127.0.0.1, with the wheel's settings: the same
    model, the same ONNX Runtime library, the same key."""
    binary = Path(os.environ.get("PHIFLOW_BIN", ROOT / "target" / "debug" / "phiflow"))
    assert binary.is_file(), f"{binary} missing: run `cargo build --bin phiflow` (scripts/test-python does)"
    port = free_port()
    env = dict(os.environ)
    env.update(
        SERVICE_HOST="127.0.0.1",
        SERVICE_PORT=str(port),
        SERVICE_MODELS_DIR=MODELS_DIR,
        SERVICE_ORT_LIBRARY=phiflow.ort_library(),
        SERVICE_DEID_SECRET_KEY=SECRET,
        SERVICE_DATA_DIR=str(tmp_path_factory.mktemp("server-data")),
        SERVICE_PIPELINES_DIR=str(ROOT / "pipelines"),
    )
    log = open(tmp_path_factory.mktemp("server-log") / "serve.log", "wb")
    proc = subprocess.Popen([str(binary), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while True:
        assert proc.poll() is None, "phiflow serve exited"
        try:
            with urllib.request.urlopen(f"{base}/readyz", timeout=2) as r:
                if r.status == 200:
                    break
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        assert time.time() < deadline, "phiflow serve never became ready"
        time.sleep(0.2)
    yield base
    proc.terminate()
    proc.wait(timeout=30)
    log.close()


def post(base: str, path: str, body: dict) -> dict:
    req = urllib.request.Request(
        base + path, data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        raise AssertionError(f"{path}: {e.code} {e.read()[:500]!r}") from None


# Without a row id, a random date shift is drawn per engine (per request on the server): fix it
# to compare. Surrogates are keyed by the shared secret.
@pytest.mark.parametrize(
    "options",
    [{"method": "replace"}, {"method": "shift_dates", "date_shift_days": -40}, {"policy": "hipaa_safe_harbor"}],
    ids=["replace", "shift_dates", "policy"],
)
def test_the_wheel_gives_the_server_output_byte_for_byte(server, corpus, options):
    d = phiflow.get_or_create({"models_dir": MODELS_DIR, **options})
    # The route refuses an empty text (422); every other note goes through both.
    notes = [t for t in corpus.column("text").to_pylist() if t][:60]
    batch = d.deidentify_batch(pa.record_batch({"text": pa.array(notes)}))
    found = 0
    for i, note in enumerate(notes):
        http = post(server, "/pii/deidentify", {"text": note, **options})
        one = d.deidentify(note)
        assert one["deidentified_text"] == http["deidentified_text"], f"note {i}"
        assert one["entities"] == http["entities"], f"note {i}"
        assert batch.column("deidentified_text")[i].as_py() == http["deidentified_text"]
        spans = batch.column("spans")[i].as_py()
        assert [{k: s[k] for k in SPAN_FIELDS} for s in spans] == [
            {k: e[k] for k in SPAN_FIELDS} for e in http["entities"]
        ], f"note {i}"
        found += len(spans)
    assert found > 50, "the corpus has identifiers to find"


def test_every_arrow_string_layout_gives_the_same_output(engine, corpus, direct):
    expected = direct.select(["deidentified_text", "spans", "status", "error"])
    for layout in [pa.string(), pa.large_string(), pa.string_view()]:
        table = corpus.set_column(1, "text", corpus.column("text").cast(layout))
        out = engine.deidentify_batch(table, "text", "id")
        assert out.schema.field("text").type == layout
        assert out.select(expected.column_names).equals(expected), str(layout)
    statuses = direct.column("status").to_pylist()
    assert statuses.count("error") == corpus.column("text").null_count > 0
    assert set(direct.filter(pa.compute.equal(direct["status"], "error"))["error"].to_pylist()) == {"null_text"}


def test_rows_are_keyed_by_their_id(engine):
    note = "Seen 2021-04-02 by Dr. Maria Chen."
    d = phiflow.get_or_create({"models_dir": MODELS_DIR, "method": "shift_dates"})
    batch = pa.record_batch({"id": ["patient-a", "patient-b"], "text": [note, note]})
    out = d.deidentify_batch(batch, id_column="id").column("deidentified_text").to_pylist()
    assert out == [d.deidentify(note, id="patient-a")["deidentified_text"], d.deidentify(note, id="patient-b")["deidentified_text"]]
    assert "2021-04-02" not in out[0]


def test_a_stream_gives_the_batches_one_by_one(engine, corpus, direct):
    reader = pa.RecordBatchReader.from_batches(corpus.schema, corpus.to_batches(max_chunksize=50))
    out = engine.deidentify_stream(reader, "text", "id")
    assert isinstance(out, pa.RecordBatchReader)
    assert out.schema == phiflow.output_schema(corpus.schema)
    batches = list(out)
    assert [b.num_rows for b in batches] == [b.num_rows for b in corpus.to_batches(max_chunksize=50)]
    assert pa.Table.from_batches(batches).equals(direct.combine_chunks())
    # A plain iterator of batches works too.
    again = engine.deidentify_stream(iter(corpus.to_batches(max_chunksize=100)), "text", "id").read_all()
    assert again.equals(direct.combine_chunks())


def test_bad_input_is_a_clear_error(engine):
    batch = pa.record_batch({"id": [1], "note": ["Jane"]})
    with pytest.raises(ValueError, match="column `text` is not in the input"):
        engine.deidentify_batch(batch)
    with pytest.raises(ValueError, match="expected text"):
        engine.deidentify_batch(batch, text_column="id")
    with pytest.raises(ValueError, match="column `text` is not in the input"):
        engine.deidentify_stream(pa.RecordBatchReader.from_batches(batch.schema, [batch]))
    clash = pa.record_batch({"text": ["x"], "status": ["y"]})
    with pytest.raises(ValueError, match="already has a column named `status`"):
        engine.deidentify_batch(clash)
    with pytest.raises(ValueError, match="policy"):
        phiflow.Deidentifier(models_dir=MODELS_DIR, policy="no-such-policy")
    with pytest.raises(RuntimeError, match="model"):
        phiflow.Deidentifier(models_dir=MODELS_DIR, model="nobody/nothing")
    with pytest.raises(TypeError, match="unknown options"):
        phiflow.Deidentifier(models_dir=MODELS_DIR, methd="replace")


def test_one_engine_per_process_and_config():
    config = {"models_dir": MODELS_DIR, "method": "mask"}
    before = phiflow.models_loaded()
    a = phiflow.get_or_create(config)
    assert phiflow.models_loaded() == before + 1
    assert phiflow.get_or_create(dict(config)) is a
    assert phiflow.models_loaded() == before + 1
    other = phiflow.get_or_create({**config, "method": "remove"})
    assert other is not a and phiflow.models_loaded() == before + 2


def test_threads_follow_omp_num_threads(monkeypatch):
    monkeypatch.delenv("SERVICE_ORT_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert phiflow._threads(None) == 1
    assert phiflow._threads(3) == 3
    monkeypatch.setenv("SERVICE_ORT_THREADS", "2")
    assert phiflow._threads(None) is None  # the environment's setting applies
    monkeypatch.delenv("OMP_NUM_THREADS")
    monkeypatch.delenv("SERVICE_ORT_THREADS")
    assert phiflow._threads(None) is None
    with pytest.raises(ValueError, match="threads"):
        phiflow.Deidentifier(models_dir=MODELS_DIR, threads=0)
    small = phiflow.Deidentifier(models_dir=MODELS_DIR, method="replace", threads=1)
    note = corpus_table(3).column("text")[0].as_py()
    assert small.deidentify(note) == phiflow.get_or_create({"models_dir": MODELS_DIR, "method": "replace"}).deidentify(note)


def test_onnx_runtime_comes_from_the_onnxruntime_package(engine):
    path = phiflow.ort_library()
    assert path is not None and "onnxruntime" in path and Path(path).is_file()
    with open(f"/proc/{os.getpid()}/maps") as maps:
        assert os.path.realpath(path) in maps.read(), "the package's library is the one loaded"
