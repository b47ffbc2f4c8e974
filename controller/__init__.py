"""The ZooKeeper-backed controller (Kafka's ZooKeeper-mode controller); see docs/controller.md.

What a node uses:

- :class:`controller.registration.BrokerRegistration`: the node's ephemeral ``/brokers/ids/<id>``
  and its broker epoch;
- :class:`controller.controller.Controller` (with :class:`controller.config.ControllerConfig`):
  the node's controller candidate;
- :class:`controller.service.ControllerServicer`: the Controller gRPC service.

(The Admin service, Kafka's ``ZkAdminManager``, is the node's admin room, :mod:`node.admin`.)

The decisions are pure functions in :mod:`controller.assignment`, :mod:`controller.election`,
:mod:`controller.isr` and :mod:`controller.reassignment`; :mod:`controller.zk_data` holds the
znode paths and codecs.
"""
