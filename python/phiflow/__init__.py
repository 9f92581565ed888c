"""phiflow for Python: the same de-identification core as the server, on Arrow data.

One :class:`Deidentifier` holds the model and a small tokio runtime; every call runs in Rust
with the GIL released. Settings come from the server's ``SERVICE_*`` environment variables,
then from the constructor's arguments. ONNX Runtime is the one of the installed ``onnxruntime``
(or ``onnxruntime-gpu``) package, never bundled.

Surrogates, hashes and date shifts are keyed by ``SERVICE_DEID_SECRET_KEY``: set the same key on
every worker (and the server), or each process draws its own random key and outputs differ.
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import threading
from typing import Any, Dict, Iterable, Iterator, Optional, Union

import pyarrow as pa

from . import _native

__all__ = [
    "Deidentifier",
    "get_or_create",
    "models_loaded",
    "ort_library",
    "output_schema",
]

_OPTION_NAMES = (
    "method",
    "policy",
    "confidence_threshold",
    "date_shift_days",
    "keep_mapping",
    "keep_year",
    "lang",
    "normalize_accents",
    "shift_dates",
    "use_safety_sweep",
    "use_smart_merging",
)


def _package_ort_library() -> Optional[str]:
    """``libonnxruntime.so`` of the installed ``onnxruntime`` package, found without importing
    it (its Python bindings are not needed), or None when no such package is installed."""
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        found = sorted(glob.glob(os.path.join(root, "capi", "libonnxruntime.so*")))
        # Prefer the versioned file (the unversioned name may be absent or a link to it).
        versioned = [f for f in found if ".so." in os.path.basename(f)]
        if versioned or found:
            return (versioned or found)[0]
    return None


# Public name; the constructor's `ort_library` argument shadows it there.
ort_library = _package_ort_library


def _threads(threads: Optional[int]) -> Optional[int]:
    """The explicit argument, else ``OMP_NUM_THREADS`` (which Spark and Ray set to the task's
    or actor's CPUs) unless ``SERVICE_ORT_THREADS`` chooses, else None (the library default:
    one per core)."""
    if threads is not None:
        return int(threads)
    if os.environ.get("SERVICE_ORT_THREADS"):
        return None
    omp = os.environ.get("OMP_NUM_THREADS", "").strip()
    if omp.isdigit() and int(omp) > 0:
        return int(omp)
    return None


def models_loaded() -> int:
    """Models this process has loaded (one per Deidentifier built)."""
    return _native.models_loaded()


def output_schema(schema: pa.Schema) -> pa.Schema:
    """The schema :meth:`Deidentifier.deidentify_batch` gives for an input schema: its fields,
    then ``deidentified_text``, ``spans`` (list of structs), ``status`` and ``error``."""
    return _native.output_schema(schema)


class Deidentifier:
    """The de-identification engine with its model loaded; safe to share between threads.

    Settings (``None`` keeps the ``SERVICE_*`` environment's value, else the server default):
    ``models_dir``, ``model`` (a model id in it), ``pipelines_dir`` (default: the definitions
    built into the wheel), ``ort_library`` (default: ``SERVICE_ORT_LIBRARY``, else the
    ``onnxruntime`` package's), ``threads`` (ONNX Runtime threads; default ``OMP_NUM_THREADS``),
    ``device`` (``cpu``/``cuda``), ``secret_key`` (default ``SERVICE_DEID_SECRET_KEY``).

    Options, as in ``POST /pii/deidentify``: ``method``, ``policy``, ``confidence_threshold``,
    ``date_shift_days``, ``keep_mapping``, ``keep_year``, ``lang``, ``normalize_accents``,
    ``shift_dates``, ``use_safety_sweep``, ``use_smart_merging``.
    """

    def __init__(
        self,
        models_dir: Optional[str] = None,
        model: Optional[str] = None,
        policy: Optional[str] = None,
        method: Optional[str] = None,
        *,
        threads: Optional[int] = None,
        pipelines_dir: Optional[str] = None,
        ort_library: Optional[str] = None,
        device: Optional[str] = None,
        cuda_device_id: Optional[int] = None,
        secret_key: Optional[str] = None,
        **options: Any,
    ) -> None:
        unknown = sorted(set(options) - set(_OPTION_NAMES))
        if unknown:
            raise TypeError(f"unknown options: {', '.join(unknown)}")
        opts = {k: v for k, v in options.items() if v is not None}
        if policy is not None:
            opts["policy"] = policy
        if method is not None:
            opts["method"] = method
        if ort_library is None and not os.environ.get("SERVICE_ORT_LIBRARY"):
            ort_library = _package_ort_library()
            if ort_library is None:
                raise RuntimeError(
                    "ONNX Runtime not found: pip install onnxruntime (or onnxruntime-gpu), "
                    "or set SERVICE_ORT_LIBRARY"
                )
        self._engine = _native.Engine(
            json.dumps(opts),
            models_dir=None if models_dir is None else os.fspath(models_dir),
            model=model,
            pipelines_dir=None if pipelines_dir is None else os.fspath(pipelines_dir),
            ort_library=ort_library,
            threads=_threads(threads),
            device=device,
            cuda_device_id=cuda_device_id,
            secret_key=secret_key,
        )

    @property
    def has_secret_key(self) -> bool:
        """Whether a key is set: without one, surrogates and date shifts differ per process."""
        return self._engine.has_secret_key

    @property
    def model_name(self) -> str:
        return self._engine.model_name

    def deidentify(self, text: str, id: Optional[str] = None) -> Dict[str, Any]:
        """One text: ``deidentified_text``, ``entities`` (code point offsets, as the HTTP
        route gives them), ``counts`` and ``shift_days``. ``id`` keys the date shift."""
        return json.loads(self._engine.deidentify(text, id))

    def deidentify_batch(
        self,
        batch: Union[pa.RecordBatch, pa.Table],
        text_column: str = "text",
        id_column: Optional[str] = None,
    ) -> Union[pa.RecordBatch, pa.Table]:
        """A record batch (text as Utf8, LargeUtf8 or Utf8View) with the added columns; a bad
        row gets ``status="error"`` and an error code, never an exception. A Table gives a
        Table (batch by batch)."""
        if isinstance(batch, pa.Table):
            out = [
                self._engine.deidentify_batch(b, text_column, id_column)
                for b in batch.to_batches()
            ]
            return pa.Table.from_batches(out, schema=output_schema(batch.schema))
        return self._engine.deidentify_batch(batch, text_column, id_column)

    def deidentify_stream(
        self,
        reader: Union[pa.RecordBatchReader, pa.Table, Iterable[pa.RecordBatch]],
        text_column: str = "text",
        id_column: Optional[str] = None,
    ) -> pa.RecordBatchReader:
        """A reader of de-identified batches, each read from the input when asked for: memory
        stays bounded by a batch. Takes anything with ``__arrow_c_stream__`` (a
        RecordBatchReader, a Table, a Dataset scanner's reader)."""
        if not hasattr(reader, "__arrow_c_stream__") and not isinstance(
            reader, pa.RecordBatchReader
        ):
            reader = _reader_of(iter(reader))
        return self._engine.deidentify_stream(reader, text_column, id_column)


def _reader_of(batches: Iterator[pa.RecordBatch]) -> pa.RecordBatchReader:
    """A RecordBatchReader over an iterator of batches (its schema from the first)."""
    try:
        first = next(batches)
    except StopIteration:
        raise ValueError("an empty iterator of batches has no schema") from None

    def chain() -> Iterator[pa.RecordBatch]:
        yield first
        yield from batches

    return pa.RecordBatchReader.from_batches(first.schema, chain())


_cache: Dict[str, Deidentifier] = {}
_cache_pid: Optional[int] = None
_cache_lock = threading.Lock()
# Engines inherited through a fork: never dropped there (their threads did not survive the fork,
# and dropping would wait for them).
_forked_away: list = []


def get_or_create(config: Optional[Dict[str, Any]] = None) -> Deidentifier:
    """The process's Deidentifier for ``config`` (the constructor's keyword arguments), built
    on first use: Spark tasks in one Python worker, or calls in one Ray actor, share one model.
    A forked child builds its own (a runtime does not survive a fork)."""
    global _cache_pid
    config = dict(config or {})
    key = json.dumps(config, sort_keys=True, default=str)
    with _cache_lock:
        if _cache_pid != os.getpid():
            _forked_away.extend(_cache.values())
            _cache.clear()
            _cache_pid = os.getpid()
        found = _cache.get(key)
        if found is None:
            found = Deidentifier(**config)
            _cache[key] = found
        return found
