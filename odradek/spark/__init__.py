"""``odradek.spark``: use an odradek topic in Spark as Spark's Kafka source is used.

::

    import odradek.spark
    odradek.spark.register(spark)
    df = (spark.read.format("odradek")
          .option("odradek.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "events")
          .load())

Options, schema and semantics are Spark's Kafka source's (``docs/spark.md``). Needs the
optional extra ``odradek[spark]`` (pyspark, pandas, pyarrow); the rest of the SDK never imports
this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from odradek.spark.options import OdradekSparkOptionError
from odradek.spark.reader import OdradekDataLossError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["OdradekDataLossError", "OdradekSparkOptionError", "register"]


def register(spark: SparkSession) -> None:
    """Register the ``odradek`` data source with ``spark``.

    Registrations belong to one session: sessions made with ``spark.newSession()`` need their
    own call.
    """
    from odradek.spark.source import OdradekDataSource

    spark.dataSource.register(OdradekDataSource)
