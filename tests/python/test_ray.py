"""Ray Data, local: `map_batches` with an actor pool of two gives the wheel's own output, every
row once, each actor loading the model once; an actor killed mid-run is restarted and its
batches retried, and the output is still complete and unduplicated."""

import os
import sys

import pyarrow as pa
import pytest

import phiflow
import phiflow.ray
from conftest import MODELS_DIR, SECRET, rows_by_id

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.skipif(
    os.environ.get("PHIFLOW_TEST_RAY", "1") == "0", reason="PHIFLOW_TEST_RAY=0"
)

# Actors are built from this module's class: ship it by value (workers cannot import tests).
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

CONFIG = {"models_dir": MODELS_DIR, "method": "replace", "threads": 1}


@pytest.fixture(scope="module")
def ray_local():
    # Four logical CPUs on two cores: two for the actor pool, the rest for Ray Data's own
    # tasks (with two, the pool takes both and the input tasks never run).
    ray.init(
        num_cpus=4,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"SERVICE_DEID_SECRET_KEY": SECRET}},
    )
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    yield ray
    ray.shutdown()


class Probed(phiflow.ray.Deidentify):
    """The library's callable, plus the actor's pid and its process's model count per row; it
    kills its own process once, mid-run, when asked to (a marker file makes it only once)."""

    def __init__(self, kill_marker=None, **kwargs):
        super().__init__(**kwargs)
        self.kill_marker = kill_marker
        self.calls = 0

    def __call__(self, batch: pa.Table) -> pa.Table:
        self.calls += 1
        if self.kill_marker and self.calls == 2 and not os.path.exists(self.kill_marker):
            open(self.kill_marker, "w").close()
            os._exit(1)
        out = super().__call__(batch)
        n = out.num_rows
        out = out.append_column("pid", pa.array([os.getpid()] * n, pa.int64()))
        return out.append_column("models_loaded", pa.array([phiflow.models_loaded()] * n, pa.int64()))


def run(corpus, **probe):
    ds = ray.data.from_arrow(corpus).repartition(12)
    return ds.map_batches(
        Probed,
        fn_constructor_kwargs={"config": CONFIG, "id_column": "id", **probe},
        concurrency=2,
        num_cpus=1,
        batch_size=20,
        batch_format="pyarrow",
    ).to_arrow_refs()


def collect(refs) -> pa.Table:
    return pa.concat_tables(ray.get(refs))


def test_an_actor_pool_matches_the_wheel_and_loads_once_per_actor(ray_local, corpus, direct):
    out = collect(run(corpus))
    assert out.num_rows == corpus.num_rows
    assert rows_by_id(out) == rows_by_id(direct)
    per_pid = {}
    for pid, loaded in zip(out["pid"].to_pylist(), out["models_loaded"].to_pylist()):
        per_pid.setdefault(pid, set()).add(loaded)
    assert 1 <= len(per_pid) <= 2, per_pid
    assert all(v == {1} for v in per_pid.values()), per_pid
    assert os.getpid() not in per_pid


def test_a_killed_actor_still_gives_complete_unduplicated_output(ray_local, corpus, direct, tmp_path):
    marker = tmp_path / "killed-once"
    out = collect(run(corpus, kill_marker=str(marker)))
    assert marker.exists(), "an actor was killed mid-run"
    ids = out["id"].to_pylist()
    assert len(ids) == len(set(ids)) == corpus.num_rows
    assert rows_by_id(out) == rows_by_id(direct)
    assert len(set(out["pid"].to_pylist())) >= 2
