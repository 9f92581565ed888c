"""De-identification in Ray Data with an actor pool: each actor builds its model once.

    import ray, phiflow.ray
    ds = ray.data.read_parquet("s3://notes/")
    out = ds.map_batches(
        phiflow.ray.Deidentify,
        fn_constructor_kwargs={"config": {"models_dir": "/models"}, "id_column": "id"},
        concurrency=4, num_cpus=2, batch_format="pyarrow", batch_size=256,
    )
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import pyarrow as pa

import phiflow


class Deidentify:
    """A callable class for ``Dataset.map_batches`` (``batch_format="pyarrow"``)."""

    def __init__(
        self,
        config: Optional[Dict[str, Any]] = None,
        text_column: str = "text",
        id_column: Optional[str] = None,
    ) -> None:
        self.engine = phiflow.get_or_create(config)
        self.text_column = text_column
        self.id_column = id_column

    def __call__(self, batch: pa.Table) -> pa.Table:
        return self.engine.deidentify_batch(batch, self.text_column, self.id_column)
