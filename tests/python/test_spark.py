"""PySpark 4 in local[2]: `mapInArrow` over Parquet to Parquet gives the wheel's own output, and
each Python worker loads the model once, whatever number of tasks it runs."""

import json
import os
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import phiflow
import phiflow.spark
from conftest import MODELS_DIR, SECRET, rows_by_id

pyspark = pytest.importorskip("pyspark")


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("phiflow-test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.python.worker.reuse", "true")
        # Small Arrow batches, so each task runs several through one engine.
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "16")
        .config("spark.executorEnv.SERVICE_DEID_SECRET_KEY", SECRET)
        .getOrCreate()
    )
    yield session
    session.stop()


def test_map_in_arrow_matches_the_wheel_and_loads_once_per_worker(spark, corpus_parquet, direct, tmp_path):
    config = {"models_dir": MODELS_DIR, "method": "replace", "threads": 1}
    probes = tmp_path / "probes"
    probes.mkdir()
    deidentify = phiflow.spark.mapper(config, "text", "id")

    def probed(batches):
        # Each task records its worker's pid and how many models that process has loaded.
        yield from deidentify(batches)
        (probes / f"{os.getpid()}-{uuid.uuid4().hex}.json").write_text(
            json.dumps({"pid": os.getpid(), "models_loaded": phiflow.models_loaded()})
        )

    df = spark.read.parquet(str(corpus_parquet)).repartition(8)
    out_dir = tmp_path / "out"
    df.mapInArrow(probed, phiflow.spark.output_schema(df.schema)).write.parquet(str(out_dir))

    out = pq.read_table(out_dir)
    assert out.num_rows == direct.num_rows
    assert rows_by_id(out) == rows_by_id(direct)

    tasks = [json.loads(p.read_text()) for p in probes.iterdir()]
    pids = {t["pid"] for t in tasks}
    assert len(tasks) == 8, "one probe per partition"
    assert os.getpid() not in pids, "the driver de-identifies nothing"
    assert len(pids) < len(tasks), "workers were reused across tasks"
    assert all(t["models_loaded"] == 1 for t in tasks), tasks


def test_the_mapper_ships_only_its_config():
    from pyspark import cloudpickle

    shipped = cloudpickle.dumps(phiflow.spark.mapper({"models_dir": MODELS_DIR}, "text", "id"))
    assert len(shipped) < 20_000, "no model or engine in the closure"
