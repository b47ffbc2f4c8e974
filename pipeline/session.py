"""The Spark session of a pipeline job, whether it runs under ``spark-submit`` or ``python -m``."""

from __future__ import annotations

import logging
import os
import sys

from pyspark.sql import SparkSession

import odradek.spark

__all__ = ["configure_logging", "job_session"]


def job_session(app_name: str, master: str | None) -> SparkSession:
    """A session with the ``odradek`` source registered.

    Under ``spark-submit`` (which starts the JVM first and hands the Python driver its
    gateway in ``PYSPARK_GATEWAY_PORT``) the master and settings come from spark-submit unless
    ``master`` is given. Under ``python -m`` the master is ``master`` (default ``local[*]``)
    and Spark's Python workers run this interpreter, so they import the same ``odradek``.
    """
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    elif "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.master("local[*]")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = builder.getOrCreate()
    odradek.spark.register(spark)
    return spark


def configure_logging() -> None:
    """INFO for the job's and the connector's loggers; py4j's chatter about its gateway
    connections stays at WARNING."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("py4j").setLevel(logging.WARNING)
