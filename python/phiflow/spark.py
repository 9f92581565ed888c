"""De-identification in Spark with ``DataFrame.mapInArrow``: each Python worker builds its
model once (:func:`phiflow.get_or_create`) and reuses it for every task it runs; nothing but the
small config dict travels from the driver.

    from phiflow import spark as pf
    config = {"models_dir": "/dbfs/models", "policy": "hipaa_safe_harbor"}
    out = df.mapInArrow(pf.mapper(config, "text", "id"), pf.output_schema(df.schema))
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, Optional

import pyarrow as pa

import phiflow


def output_schema(schema: "pyspark.sql.types.StructType") -> "pyspark.sql.types.StructType":  # noqa: F821
    """The Spark schema of :func:`mapper`'s output: the input's fields, then
    ``deidentified_text``, ``spans`` (array of structs; offsets as longs, Spark has no
    unsigned types), ``status`` and ``error``."""
    from pyspark.sql.types import (
        ArrayType,
        FloatType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    span = StructType(
        [StructField("label", StringType(), False), StructField("canonical_label", StringType(), False)]
        + [StructField(n, LongType(), False) for n in ("start", "end", "output_start", "output_end")]
        + [
            StructField("confidence", FloatType(), False),
            StructField("source", StringType(), False),
            StructField("action", StringType(), False),
        ]
    )
    return StructType(
        list(schema.fields)
        + [
            StructField("deidentified_text", StringType(), True),
            StructField("spans", ArrayType(span, False), True),
            StructField("status", StringType(), False),
            StructField("error", StringType(), True),
        ]
    )


def _signed(t: pa.DataType) -> pa.DataType:
    """`t` with every unsigned 64-bit integer made signed (nested lists and structs too)."""
    if pa.types.is_uint64(t):
        return pa.int64()
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_signed(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_signed(t.field(i).type)) for i in range(t.num_fields)])
    return t


def spark_compatible(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch with its span offsets as int64, the type Spark reads."""
    arrays, fields = [], []
    for field, column in zip(batch.schema, batch.columns):
        target = _signed(field.type)
        if target != field.type:
            column = column.cast(target)
            field = field.with_type(target)
        arrays.append(column)
        fields.append(field)
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields, metadata=batch.schema.metadata))


def mapper(
    config: Optional[Dict[str, Any]] = None,
    text_column: str = "text",
    id_column: Optional[str] = None,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The function for ``df.mapInArrow``: de-identifies each batch with the worker's
    Deidentifier for ``config`` (the constructor's keyword arguments)."""
    config = dict(config or {})

    def deidentify_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        d = phiflow.get_or_create(config)
        for batch in batches:
            yield spark_compatible(d.deidentify_batch(batch, text_column, id_column))

    return deidentify_partition
