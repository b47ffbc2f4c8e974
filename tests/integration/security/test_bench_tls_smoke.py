"""The TLS benchmark still runs end to end and reports every figure (it asserts no speed)."""

from __future__ import annotations

import json

import pytest

from bench.tls import main


@pytest.mark.parametrize("client_auth", ["required", "requested"])
def test_tls_benchmark_prints_its_figures_as_one_json_line(
    tmp_path, capsys: pytest.CaptureFixture[str], client_auth: str
) -> None:
    figures = main(
        ["--records", "300", "--repeat", "1", "--dir", str(tmp_path), "--client-auth", client_auth]
    )
    assert figures["client_auth"] == client_auth
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(last) == figures
    for key in (
        "produce_plaintext_records_per_s",
        "produce_tls_records_per_s",
        "produce_tls_ratio",
        "consume_plaintext_records_per_s",
        "consume_tls_records_per_s",
        "consume_tls_ratio",
    ):
        value = figures[key]
        assert isinstance(value, int | float), key
        assert value > 0, key
    assert list(tmp_path.iterdir()) == []
