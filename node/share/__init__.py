"""Share groups' partition-leader side (KIP-932): the share partitions, their records' states
and locks, share sessions, ShareFetch and ShareAcknowledge. The durable state lives with the
share coordinator (``node.share_coordinator``), reached through :mod:`node.share.persister`."""
