"""The same notes through every surface, as rows/s and ratios to the CLI (issue 17's bench).

One Parquet file of N notes (the generator of benches/corpus.rs, ids `note-0000000`…) goes
through, in turn:
  cli    `phiflow batch deidentify` (release binary), Parquet → Parquet;
  wheel  `Deidentifier.deidentify_batch` over the file's record batches, Parquet → Parquet;
  spark  PySpark local[2], `mapInArrow` with `phiflow.spark.mapper`, Parquet → Parquet;
  http   `phiflow serve` (release binary), one `POST /pii/deidentify` per note from a
         thread-pool client with a fixed number of requests in flight.
Every figure is after start-up (model loads, JVM and Python workers excluded; Spark runs a
warm-up job first), reading and writing included. All use `method=replace`, the same key, the
same model and ONNX Runtime library, and the same rows per batch; the CLI, the wheel and the
server use one inference worker per core (their default), Spark one thread per task
(`spark.task.cpus=1`, two tasks at once). The de-identified text of every surface must equal
the CLI's, row by row (by id), or the bench fails.

Run through `scripts/bench-surfaces [ROWS]`, which builds the release artefacts first. Writes
target/bench-results/surfaces.json (PHIFLOW_BENCH_RESULTS: the folder).
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List

import pyarrow as pa
import pyarrow.parquet as pq

import phiflow
import phiflow.spark

ROOT = Path(__file__).resolve().parents[1]
MODELS_DIR = str(ROOT / ".assets" / "models")
SECRET = "surfaces-bench-secret"
TARGET_RATIO = 0.9  # issue 17: the wheel and Spark at least 0.9 of the CLI


def notes(count: int) -> List[str]:
    """benches/corpus.rs, line for line: the notes the Rust benches use."""
    first = ["John", "Aisha", "Maria", "Wei", "Fatima", "Carlos", "Emily", "Raj"]
    last = ["Smith", "Okafor", "Garcia", "Chen", "Haddad", "Alvarez", "Baker", "Patel"]
    cities = ["Boston", "Chicago", "Denver", "Seattle", "Austin", "Miami"]
    body = [
        "Patient presents for follow-up of type 2 diabetes and hypertension. ",
        "Blood pressure 132/84, heart rate 76, afebrile. Lungs clear to auscultation bilaterally. ",
        "Metformin 1000 mg twice daily continued; lisinopril increased to 20 mg daily. ",
        "HbA1c improved from 8.1 to 7.2 percent over three months. ",
        "Counseled on diet, exercise and home glucose monitoring. Return in three months. ",
    ]
    out = []
    for i in range(count):
        f, l, c = first[i % 8], last[(i * 3) % 8], cities[i % 6]
        note = (
            f"{f} {l} was seen on the ward. Contact: ({200 + (i * 37) % 700}) 555-01{i % 100:02}, "
            f"{f.lower()}.{l.lower()}@example.com. Lives at {10 + i} Oak Street, {c}. "
        )
        for k in range(2 + i % 5):
            note += body[(i + k) % len(body)]
        note += f"Discussed with Dr. {last[(i + 5) % 8]} by phone."
        out.append(note)
    return out


def write_input(path: Path, ids: List[str], texts: List[str], batch_rows: int) -> int:
    """The notes as one Parquet file in 16 equal row groups, or fewer of one batch each: Spark
    makes a task of each, two running at once, so the last two end together. Returns the rows
    per row group."""
    per_group = max(batch_rows, math.ceil(len(ids) / 16))
    table = pa.table({"id": pa.array(ids, pa.string()), "text": pa.array(texts, pa.string())})
    pq.write_table(table, path, row_group_size=per_group)
    return per_group


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process and all its descendants, reaped ones included:
    rows per CPU second compare surfaces even on a machine other work is loading."""
    tick = os.sysconf("SC_CLK_TCK")
    children: Dict[int, List[int]] = {}
    stats: Dict[int, List[str]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            raw = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        stats[int(d)] = fields
        children.setdefault(int(fields[1]), []).append(int(d))
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        if p in stats:
            f = stats[p]
            total += sum(int(x) for x in f[11:15]) / tick  # utime stime cutime cstime
        todo.extend(children.get(p, []))
    return total


def texts_by_id(table: pa.Table) -> Dict[str, str]:
    return dict(zip(table.column("id").to_pylist(), table.column("deidentified_text").to_pylist()))


def service_env(base: Dict[str, str]) -> Dict[str, str]:
    """What the CLI and the server run with: the wheel's model, library and key."""
    env = dict(base)
    env.update(
        SERVICE_MODELS_DIR=MODELS_DIR,
        SERVICE_ORT_LIBRARY=phiflow.ort_library(),
        SERVICE_DEID_SECRET_KEY=SECRET,
        SERVICE_PIPELINES_DIR=str(ROOT / "pipelines"),
        SERVICE_LOG="warn",
    )
    return env


def run_cli(binary: Path, src: Path, out: Path, batch_rows: int) -> dict:
    cpu = tree_cpu(os.getpid())
    started = time.perf_counter()
    done = subprocess.run(
        [str(binary), "batch", "deidentify", "--method", "replace", "--batch-rows", str(batch_rows),
         "--input", str(src), "--output", str(out)],
        cwd=ROOT, env=service_env(os.environ), capture_output=True, text=True,
    )
    wall = time.perf_counter() - started
    cpu = tree_cpu(os.getpid()) - cpu
    if done.returncode != 0:
        sys.exit(f"the CLI failed: {done.stderr.strip()[-2000:]}")
    summary = json.loads(done.stdout)
    return {
        "rows_per_s": summary["rows_per_second"],
        "seconds": summary["seconds"],
        "wall_seconds": wall,
        "cpu_seconds": cpu,  # start-up included
        "texts": texts_by_id(pq.read_table(out / "part-0-of-1.parquet", columns=["id", "deidentified_text"])),
    }


def run_wheel(src: Path, out: Path, batch_rows: int) -> dict:
    engine = phiflow.Deidentifier(models_dir=MODELS_DIR, method="replace", secret_key=SECRET)
    cpu = tree_cpu(os.getpid())
    started = time.perf_counter()
    reader = pq.ParquetFile(src)
    writer = None
    rows = 0
    for batch in reader.iter_batches(batch_size=batch_rows):
        done = engine.deidentify_batch(batch, "text", "id")
        if writer is None:
            writer = pq.ParquetWriter(out, done.schema)
        writer.write_batch(done)
        rows += done.num_rows
    writer.close()
    secs = time.perf_counter() - started
    cpu = tree_cpu(os.getpid()) - cpu
    del engine
    return {
        "rows_per_s": rows / secs,
        "seconds": secs,
        "cpu_seconds": cpu,
        "texts": texts_by_id(pq.read_table(out, columns=["id", "deidentified_text"])),
    }


def run_spark(src: Path, out: Path, batch_rows: int, row_groups: int) -> dict:
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SERVICE_DEID_SECRET_KEY"] = SECRET
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("phiflow-bench-surfaces")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(batch_rows))
        # One task per row group: the file's splits, no shuffle.
        .config("spark.sql.files.minPartitionNum", str(row_groups))
        .config("spark.sql.files.openCostInBytes", "1")
        .config("spark.executorEnv.SERVICE_DEID_SECRET_KEY", SECRET)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        config = {"models_dir": MODELS_DIR, "method": "replace", "threads": 1}
        deidentify = phiflow.spark.mapper(config, "text", "id")

        def warm(batches):
            phiflow.get_or_create(config)
            time.sleep(1)  # both tasks at once, so both workers start and load the model
            yield from batches

        spark.range(0, 2, 1, 2).mapInArrow(warm, "id long").collect()
        df = spark.read.parquet(str(src))
        tasks = df.rdd.getNumPartitions()
        cpu = tree_cpu(os.getpid())
        started = time.perf_counter()
        df.mapInArrow(deidentify, phiflow.spark.output_schema(df.schema)).write.mode("overwrite").parquet(str(out))
        secs = time.perf_counter() - started
        cpu = tree_cpu(os.getpid()) - cpu
    finally:
        spark.stop()
    table = pq.read_table(out, columns=["id", "deidentified_text"])
    return {
        "rows_per_s": table.num_rows / secs,
        "seconds": secs,
        "cpu_seconds": cpu,
        "tasks": tasks,
        "texts": texts_by_id(table),
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_http(binary: Path, ids: List[str], texts: List[str], concurrency: int, data_dir: Path) -> dict:
    port = free_port()
    env = service_env(os.environ)
    env.update(SERVICE_HOST="127.0.0.1", SERVICE_PORT=str(port), SERVICE_DATA_DIR=str(data_dir))
    log = open(data_dir / "serve.log", "wb")
    server = subprocess.Popen([str(binary), "serve"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 120
        while True:
            if server.poll() is not None:
                sys.exit(f"phiflow serve exited (log: {data_dir / 'serve.log'})")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                sys.exit("phiflow serve never became ready")
            time.sleep(0.2)

        local = threading.local()

        def post(text: str) -> str:
            conn = getattr(local, "conn", None)
            if conn is None:
                conn = local.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            body = json.dumps({"text": text, "method": "replace"})
            conn.request("POST", "/pii/deidentify", body, {"content-type": "application/json"})
            r = conn.getresponse()
            data = r.read()
            if r.status != 200:
                raise RuntimeError(f"POST /pii/deidentify: {r.status}")
            return json.loads(data)["deidentified_text"]

        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            list(pool.map(post, texts[: 2 * concurrency]))  # warm-up: connections and sessions
            cpu = tree_cpu(os.getpid())
            started = time.perf_counter()
            got = list(pool.map(post, texts))
            secs = time.perf_counter() - started
            cpu = tree_cpu(os.getpid()) - cpu  # the server's and the client's
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.close()
    return {"rows_per_s": len(texts) / secs, "seconds": secs, "cpu_seconds": cpu, "texts": dict(zip(ids, got))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rows", type=int, nargs="?", default=2000)
    ap.add_argument("--bin", type=Path, required=True, help="the release phiflow binary")
    ap.add_argument("--batch-rows", type=int, default=256)
    ap.add_argument("--http-concurrency", type=int, default=96, help="requests in flight (default: the CLI's 3 batches × 32 rows)")
    ap.add_argument("--surfaces", default="cli,wheel,spark,http")
    args = ap.parse_args()
    surfaces = args.surfaces.split(",")
    for name in ("OMP_NUM_THREADS", "SERVICE_ORT_THREADS", "SERVICE_INFER_WORKERS"):
        if os.environ.get(name):
            print(f"note: {name}={os.environ[name]} is set and shapes the threads", file=sys.stderr)

    ids = [f"note-{i:07}" for i in range(args.rows)]
    texts = notes(args.rows)
    tmp = Path(tempfile.mkdtemp(prefix="phiflow-bench-surfaces-"))
    try:
        src = tmp / "notes.parquet"
        per_group = write_input(src, ids, texts, args.batch_rows)
        groups = pq.ParquetFile(src).num_row_groups
        chars = sum(len(t) for t in texts)
        print(f"corpus: {args.rows} notes, {chars} chars, {groups} row groups of {per_group}; "
              f"{args.batch_rows} rows per batch; {os.cpu_count()} cores")
        results: Dict[str, dict] = {}
        if "cli" not in surfaces:
            sys.exit("the CLI is the reference: keep it in --surfaces")
        for name in surfaces:
            started = time.perf_counter()
            if name == "cli":
                r = run_cli(args.bin, src, tmp / "cli", args.batch_rows)
            elif name == "wheel":
                r = run_wheel(src, tmp / "wheel.parquet", args.batch_rows)
            elif name == "spark":
                r = run_spark(src, tmp / "spark", args.batch_rows, groups)
            elif name == "http":
                (tmp / "server").mkdir()
                r = run_http(args.bin, ids, texts, args.http_concurrency, tmp / "server")
            else:
                sys.exit(f"unknown surface {name}")
            r["total_seconds"] = time.perf_counter() - started
            results[name] = r
        cli = results["cli"]
        figures, failed = [], []
        for name, r in results.items():
            same = sum(1 for i in ids if r["texts"].get(i) == cli["texts"].get(i))
            ratio = r["rows_per_s"] / cli["rows_per_s"]
            extra = f", {r['tasks']} tasks" if "tasks" in r else ""
            per_cpu = len(ids) / r["cpu_seconds"] if r.get("cpu_seconds") else float("nan")
            cpu_note = " with its start-up" if name == "cli" else ""
            print(f"{name:6} {r['rows_per_s']:8.1f} rows/s  ratio to CLI {ratio:5.3f}  "
                  f"({r['seconds']:.1f} s timed, {r['total_seconds']:.1f} s with start-up{extra}; "
                  f"{per_cpu:.1f} rows per CPU second{cpu_note}); identical text {same}/{len(ids)}")
            if same != len(ids) or len(r["texts"]) != len(ids):
                failed.append(name)
            figures.append({"series": "throughput", "x": name, "value": round(r["rows_per_s"], 2), "unit": "rows/s"})
            if name != "cli":
                fig = {"series": "ratio to CLI", "x": name, "value": round(ratio, 3), "unit": "×"}
                if name in ("wheel", "spark"):
                    fig["target"] = {"min": TARGET_RATIO}
                figures.append(fig)
        report = {
            "bench": "surfaces",
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
            "profile": "release",
            "cores": os.cpu_count(),
            "source": "measured by scripts/bench-surfaces (benches/surfaces.py)",
            "knobs": {
                "rows": str(args.rows),
                "batch_rows": str(args.batch_rows),
                "http_concurrency": str(args.http_concurrency),
                "spark": "local[2], spark.task.cpus=1, threads=1",
                "method": "replace",
            },
            "figures": figures,
        }
        results_dir = Path(os.environ.get("PHIFLOW_BENCH_RESULTS", ROOT / "target" / "bench-results"))
        results_dir.mkdir(parents=True, exist_ok=True)
        (results_dir / "surfaces.json").write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {results_dir / 'surfaces.json'}")
        if failed:
            sys.exit(f"different de-identified text from the CLI's: {', '.join(failed)}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
