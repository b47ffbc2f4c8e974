"""The deployment files name only node settings that exist.

A misspelt ``ODRADEK_*`` variable in the compose file or the Kubernetes manifests would make
every node refuse to start (``unknown node config``); this finds it without a container.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from node.config import OTHER_TOOLS_VARIABLES, config_from_properties, properties_from_env

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"
FILES = [
    DEPLOY / "compose" / "compose.yaml",
    DEPLOY / "k8s" / "odradek.yaml",
    DEPLOY / "docker" / "node.Dockerfile",
]
# a valid value for each kind of setting, by the end of its variable's name
SAMPLE_VALUES = {
    "_KAFKA_LISTEN_ADDRESS": "127.0.0.1:19092",  # before _ADDRESS: a port of its own
    "_ADDRESS": "127.0.0.1:9092",
    "_CONNECT": "127.0.0.1:2181/odradek",
    "_DIRS": "/var/lib/odradek/data",
    "_RACK": "r1",
}


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(DEPLOY)))
def test_every_node_variable_is_a_node_setting(path):
    names = set(re.findall(r"\bODRADEK_[A-Z_]+\b", path.read_text())) - OTHER_TOOLS_VARIABLES
    assert names, f"{path} sets no node variables"
    env = {
        "ODRADEK_NODE_ID": "1",
        "ODRADEK_LOG_DIRS": "/data",
        "ODRADEK_ZOOKEEPER_CONNECT": "127.0.0.1:2181",
    }
    for name in names:
        suffix = next((s for s in SAMPLE_VALUES if name.endswith(s)), None)
        env[name] = SAMPLE_VALUES[suffix] if suffix else "2"
    config = config_from_properties(properties_from_env(env))  # raises on an unknown name
    assert config.node_id >= 0
