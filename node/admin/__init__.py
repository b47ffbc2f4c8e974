"""The admin room (Kafka's ``ZkAdminManager`` with the ACL and SCRAM admin): topics, configs,
elections, reassignments, ACLs, credentials and the node's own DescribeCluster / DescribeLogDirs
/ DescribeProducers as plain domain values (:mod:`node.admin.requests`), with Kafka's ACL checks
in front (:mod:`node.admin.authorization`); both front doors translate their wire to it.

:class:`~node.admin.admin_manager.AdminManager` is the entry point; it delegates the ACL and
SCRAM calls to :mod:`node.admin.security_admin` and the node-local ones to
:mod:`node.admin.local_admin`.
"""
