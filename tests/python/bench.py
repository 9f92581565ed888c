"""Rows/s of the wheel and of Spark local[2] over N generated notes, as ratios to the core's Rust
batch path (`cargo bench --bench core_batch`) on the same Parquet file, same batch size, same model.

Run after scripts/test-python (its venv has the wheel, pyspark):
    .assets/python/venv/bin/python tests/python/bench.py [N=2000]
PHIFLOW_WHEEL_PROFILE=release compares release builds (default: dev, as scripts/test-python
builds the wheel; the Rust side is then built with `--profile dev` too).
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).parent))
from conftest import MODELS_DIR, ROOT, corpus_table  # noqa: E402

import phiflow  # noqa: E402
import phiflow.spark  # noqa: E402

ROWS_PER_BATCH = 256


def core(path: Path) -> dict:
    profile = [] if os.environ.get("PHIFLOW_WHEEL_PROFILE") == "release" else ["--profile", "dev"]
    env = dict(os.environ, PHIFLOW_BATCH_BENCH_PARQUET=str(path), PHIFLOW_BATCH_BENCH_ROWS=str(ROWS_PER_BATCH))
    env.setdefault("SERVICE_ORT_LIBRARY", phiflow.ort_library())
    env.setdefault("SERVICE_MODELS_DIR", MODELS_DIR)
    out = subprocess.run(
        ["cargo", "bench", "--locked", *profile, "--bench", "core_batch"],
        cwd=ROOT, env=env, check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def wheel(path: Path) -> dict:
    d = phiflow.Deidentifier(models_dir=MODELS_DIR, method="replace")
    batches = pq.read_table(path).to_batches(max_chunksize=ROWS_PER_BATCH)
    started = time.perf_counter()
    rows = sum(d.deidentify_batch(b, "text", "id").num_rows for b in batches)
    secs = time.perf_counter() - started
    return {"surface": "wheel", "rows": rows, "seconds": secs, "rows_per_s": rows / secs}


def spark(path: Path) -> dict:
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    s = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(ROWS_PER_BATCH))
        .getOrCreate()
    )
    df = s.read.parquet(str(path)).repartition(2)
    df.count()
    config = {"models_dir": MODELS_DIR, "method": "replace", "threads": 1}
    started = time.perf_counter()
    df.mapInArrow(phiflow.spark.mapper(config, "text", "id"), phiflow.spark.output_schema(df.schema)).write.format(
        "noop"
    ).mode("overwrite").save()
    secs = time.perf_counter() - started
    rows = df.count()
    s.stop()
    return {"surface": "spark_local2", "rows": rows, "seconds": secs, "rows_per_s": rows / secs}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "notes.parquet"
        table = corpus_table(n, seed=99)
        pq.write_table(table, path)
        mb = sum(len(t or "") for t in table.column("text").to_pylist()) / 1e6
        print(json.dumps({"notes": n, "text_mb": round(mb, 3), "rows_per_batch": ROWS_PER_BATCH}))
        ref = core(path)
        print(json.dumps(ref))
        for run in (wheel, spark):
            r = run(path)
            r["ratio_to_core"] = round(r["rows_per_s"] / ref["rows_per_s"], 3)
            print(json.dumps(r))


if __name__ == "__main__":
    main()
