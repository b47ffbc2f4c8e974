"""What operators deploy parses, and has the parts a replicated log needs to survive a restart.

Neither Docker Compose nor a Kubernetes cluster is available to the tests, so the files are
checked as data: every document parses, the nodes keep their data on persistent volumes, a
StatefulSet gives each node a stable identity and its own claim, a headless service publishes
the pods, the disruption budget lets one node go at a time, and the probes ask the node's gRPC
health service.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"


def _documents(path: Path) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    assert docs, f"{path} holds no document"
    return docs


def _k8s() -> dict[tuple[str, str], dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for name in yaml.safe_load((DEPLOY / "k8s" / "kustomization.yaml").read_text())["resources"]:
        for doc in _documents(DEPLOY / "k8s" / name):
            found[(doc["kind"], doc["metadata"]["name"])] = doc
    return found


def test_compose_runs_zookeeper_and_three_nodes_on_named_volumes():
    (compose,) = _documents(DEPLOY / "compose" / "compose.yaml")
    services = compose["services"]
    nodes = sorted(name for name in services if name.startswith("node-"))
    assert nodes == ["node-1", "node-2", "node-3"]
    assert "zookeeper" in services
    ids = set()
    for name in [*nodes, "zookeeper"]:
        service = services[name]
        assert service["network_mode"] == "host"
        volume = service["volumes"][0].split(":")[0]
        assert volume in compose["volumes"], f"{name} keeps its data on {volume}, not a volume"
        if name != "zookeeper":
            ids.add(service["environment"]["ODRADEK_NODE_ID"])
            assert service["depends_on"]["zookeeper"]["condition"] == "service_healthy"
    assert len(ids) == 3  # every node its own id


def test_kubernetes_nodes_are_a_statefulset_with_claims_probes_and_a_budget():
    found = _k8s()
    nodes = found[("StatefulSet", "odradek")]
    spec = nodes["spec"]
    headless = found[("Service", spec["serviceName"])]
    assert headless["spec"]["clusterIP"] == "None"
    labels = spec["selector"]["matchLabels"]
    assert headless["spec"]["selector"] == labels
    assert spec["template"]["metadata"]["labels"] == labels
    claims = {c["metadata"]["name"] for c in spec["volumeClaimTemplates"]}
    (container,) = spec["template"]["spec"]["containers"]
    mounts = {m["name"] for m in container["volumeMounts"]}
    assert mounts <= claims and mounts, "the node's data must live on its own volume claim"
    port = container["ports"][0]["containerPort"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["grpc"]["port"] == port, f"{probe} must ask gRPC health"
    env = {e["name"]: e for e in container["env"]}
    assert "ODRADEK_NODE_ID" not in env  # taken from the pod's ordinal by the entrypoint
    assert "ODRADEK_ZOOKEEPER_CONNECT" in env

    budgets = [doc for (kind, _), doc in found.items() if kind == "PodDisruptionBudget"]
    (budget,) = budgets
    assert budget["spec"]["selector"]["matchLabels"] == labels
    assert budget["spec"]["maxUnavailable"] == 1

    zookeeper = found[("StatefulSet", "zookeeper")]
    assert zookeeper["spec"]["volumeClaimTemplates"]
    assert found[("Service", zookeeper["spec"]["serviceName"])]


@pytest.mark.parametrize(
    "path",
    [
        *sorted((DEPLOY / "k8s").glob("*.yaml")),
        DEPLOY / "compose" / "compose.yaml",
        DEPLOY / "compose" / "monitoring.yaml",
        DEPLOY / "prometheus" / "prometheus.yml",
        DEPLOY / "prometheus" / "alerts.yml",
        *sorted((DEPLOY / "grafana" / "provisioning").glob("*/*.yaml")),
    ],
    ids=lambda p: p.name,
)
def test_every_manifest_parses(path):
    for doc in _documents(path):
        assert isinstance(doc, dict)


def test_monitoring_mounts_what_exists_and_scrapes_the_nodes_metrics_ports():
    (compose,) = _documents(DEPLOY / "compose" / "compose.yaml")
    ports = {
        f"127.0.0.1:{s['environment']['ODRADEK_METRICS_PORT']}"
        for name, s in compose["services"].items()
        if name.startswith("node-")
    }
    (prometheus,) = _documents(DEPLOY / "prometheus" / "prometheus.yml")
    [job] = prometheus["scrape_configs"]
    assert set(job["static_configs"][0]["targets"]) == ports
    (monitoring,) = _documents(DEPLOY / "compose" / "monitoring.yaml")
    for service in monitoring["services"].values():
        for volume in service["volumes"]:
            source = volume.split(":")[0]
            if source.startswith("."):  # a bind mount, relative to the compose directory
                assert (DEPLOY / "compose" / source).exists(), source
            else:
                assert source in monitoring["volumes"]
