"""Share groups (KIP-932): membership, Kafka's simple share assignor and the group
coordinator's share group room (:mod:`.share_group`, :mod:`.simple_assignor`,
:mod:`.share_group_coordinator`)."""
