"""The TLS deployment files (deploy/compose/tls.yaml over compose.yaml, the deploy/k8s-tls
overlay over deploy/k8s) give every node a configuration it accepts, with mutual TLS on its
listener, TLS to ZooKeeper and secure znode ACLs, on files of the mounted certificates that
scripts/dev-certs.sh makes; and ZooKeeper gets its TLS port. No container needed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from node.config import NodeConfig, config_from_properties, properties_from_env

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"
DEV_CERTS = {"ca.crt", "zookeeper.pem", "zk-client.pem", "node-1.pem", "node-2.pem", "node-3.pem"}


def _defaults(value: str) -> str:
    """Compose's ``${NAME:-default}`` → the default."""
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", value)


def _node(env: dict[str, str]) -> NodeConfig:
    env = {k: v for k, v in env.items() if k.startswith("ODRADEK_")}
    env.setdefault("ODRADEK_NODE_ID", "1")
    env.setdefault("ODRADEK_LOG_DIRS", "/var/lib/odradek/data")
    return config_from_properties(properties_from_env(env))


def _assert_tls(config: NodeConfig) -> None:
    assert config.protocol_map[config.inter_broker_listener] == "SSL"
    ssl = config.ssl_for(config.inter_broker_listener)
    assert ssl.client_auth == "required"
    assert ssl.keystore_location and ssl.truststore_location
    zk = config.zookeeper
    assert zk.ssl_client_enable and zk.set_acl and zk.is_secure
    assert config.zookeeper_connect.split("/")[0].endswith(":2182")


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def test_compose_tls_nodes_accept_their_settings() -> None:
    base = _load(DEPLOY / "compose" / "compose.yaml")["services"]
    tls = _load(DEPLOY / "compose" / "tls.yaml")["services"]
    for name in ("node-1", "node-2", "node-3"):
        env = {k: _defaults(str(v)) for k, v in base[name]["environment"].items()}
        env.update({k: _defaults(str(v)) for k, v in tls[name]["environment"].items()})
        config = _node(env)
        _assert_tls(config)
        assert config.ssl.keystore_location == f"/etc/odradek/certs/{name}.pem"
        mounted = {Path(p).name for p in _paths(config)}
        assert mounted <= DEV_CERTS, mounted - DEV_CERTS
        (volume,) = tls[name]["volumes"]
        assert volume.endswith(":/etc/odradek/certs:ro")
    zookeeper = tls["zookeeper"]["environment"]
    assert zookeeper["ZOO_SECURE_CLIENT_PORT"] == "2182"
    assert Path(zookeeper["ZOO_SSL_KEYSTORE_LOCATION"]).name in DEV_CERTS


def _paths(config: NodeConfig) -> list[str]:
    zk = config.zookeeper
    return [
        p
        for p in (
            config.ssl.keystore_location,
            config.ssl.truststore_location,
            zk.ssl_keystore_location,
            zk.ssl_truststore_location,
        )
        if p
    ]


def _k8s_env(items: list[dict[str, Any]]) -> dict[str, str]:
    env = {}
    for item in items:
        if "value" in item:
            value = str(item["value"]).replace("$(POD_NAME)", "odradek-1")
            env[item["name"]] = value.replace("$(POD_NAMESPACE)", "default")
    return env


def test_the_k8s_tls_overlay_gives_nodes_and_zookeeper_tls() -> None:
    (base,) = [
        d
        for d in yaml.safe_load_all((DEPLOY / "k8s" / "odradek.yaml").read_text())
        if d["kind"] == "StatefulSet"
    ]
    patch = _load(DEPLOY / "k8s-tls" / "odradek-tls.yaml")
    (container,) = base["spec"]["template"]["spec"]["containers"]
    (patched,) = patch["spec"]["template"]["spec"]["containers"]
    env = _k8s_env(container["env"])
    env.update(_k8s_env(patched["env"]))
    config = _node(env)
    _assert_tls(config)
    # the kubelet's gRPC probe cannot speak TLS: the entrypoint's health check does
    for probe in ("readinessProbe", "livenessProbe"):
        assert patched[probe]["grpc"] is None
        assert patched[probe]["exec"]["command"] == ["odradek-node", "health"]
    (volume,) = patch["spec"]["template"]["spec"]["volumes"]
    assert volume["secret"]["secretName"] == "odradek-tls"
    kustomization = _load(DEPLOY / "k8s-tls" / "kustomization.yaml")
    assert kustomization["resources"] == ["../k8s"]
    zookeeper_file = (DEPLOY / "k8s-tls" / "zookeeper-tls.yaml").read_text()
    zookeeper = list(yaml.safe_load_all(zookeeper_file))
    (statefulset,) = [d for d in zookeeper if d["kind"] == "StatefulSet"]
    (zk,) = statefulset["spec"]["template"]["spec"]["containers"]
    assert {e["name"] for e in zk["env"]} >= {
        "ZOO_SECURE_CLIENT_PORT",
        "ZOO_SSL_KEYSTORE_LOCATION",
        "ZOO_SSL_TRUSTSTORE_LOCATION",
    }
