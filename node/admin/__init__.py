"""The admin room (Kafka's ``ZkAdminManager`` with the ACL and SCRAM admin): topics, configs,
elections, reassignments, ACLs and credentials as plain domain values; both front doors
translate their wire to it."""
