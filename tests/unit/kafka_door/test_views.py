"""The Kafka door's typed request views (node/kafka_door/views.py) are what the registry and
kio give: regenerated and compared, as the generated gRPC code is (genproto --check)."""

from __future__ import annotations

from node.kafka_door import views, views_gen


def test_the_checked_in_views_are_generated_from_the_registry() -> None:
    assert views_gen.main(["--check"]) == 0


def test_every_served_client_api_has_a_view() -> None:
    served = {key for key, _, _ in views_gen._served()}
    assert set(views.VIEWS) == served
    assert views.VIEWS[8] == "OffsetCommitRequestView"
