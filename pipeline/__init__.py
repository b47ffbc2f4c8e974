"""Runnable Spark pipeline jobs built on the odradek connector (``odradek.spark``)."""
