"""The node's Prometheus endpoint: per-request counts (:mod:`node.metrics.request_metrics`)
and the gauges read from the node's state at scrape time (:mod:`node.metrics.endpoint`)."""
