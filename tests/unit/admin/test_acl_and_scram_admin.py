"""The ACL and SCRAM calls of the admin manager over in-memory stores (the ZooKeeper-backed
stores are exercised by tests/integration/security)."""

from dataclasses import dataclass, field

from node.admin.admin_manager import AdminManager
from node.admin.requests import (
    ElectLeadersResult,
    InvalidAcl,
    PartitionResult,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from odradek.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePattern,
    ResourceType,
)
from odradek.clock import ManualClock

READ = AclBinding(
    ResourcePattern(ResourceType.TOPIC, "t"),
    AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW),
)


@dataclass
class MemoryAcls:
    stored: list[AclBinding] = field(default_factory=list)

    def bindings(self):
        return list(self.stored)

    def create_acls(self, bindings):
        self.stored.extend(bindings)

    def delete_acls(self, filters):
        out = []
        for f in filters:
            gone = [b for b in self.stored if f.matches(b)]
            self.stored = [b for b in self.stored if b not in gone]
            out.append(gone)
        return out


@dataclass
class MemoryCredentials:
    stored: dict[str, dict[str, int]] = field(default_factory=dict)

    def users(self):
        return sorted(self.stored)

    def describe(self, user):
        return dict(self.stored.get(user, {}))

    def alter(self, user, upsert, delete):
        mine = {m: i for m, i in self.stored.get(user, {}).items() if m not in delete}
        mine.update({m: c.iterations for m, c in upsert.items()})
        self.stored[user] = mine


def manager(acls=None, credentials=None):
    return AdminManager(None, ManualClock(), acls=acls, credentials=credentials)


def test_acl_calls_without_an_authorizer_are_security_disabled():
    admin = manager()
    assert [r.error_code for r in admin.create_acls([READ, InvalidAcl("bad")])] == [54, 54]
    assert admin.describe_acls(AclBindingFilter()).error_code == 54
    assert [r.error_code for r in admin.delete_acls([AclBindingFilter()])] == [54]


def test_acls_are_created_described_and_deleted_per_filter():
    store = MemoryAcls()
    admin = manager(acls=store)
    created = admin.create_acls([InvalidAcl("unknown resource type 9"), READ])
    assert [(r.error_code, r.error_message) for r in created] == [
        (42, "unknown resource type 9"),
        (0, ""),
    ]
    assert store.stored == [READ]
    assert admin.describe_acls(AclBindingFilter(name="t")).acls == (READ,)
    assert admin.describe_acls(AclBindingFilter(name="u")).acls == ()
    assert admin.describe_acls(InvalidAcl("no type")).error_code == 42
    deleted = admin.delete_acls([AclBindingFilter(name="u"), InvalidAcl("x"), AclBindingFilter()])
    assert [(r.error_code, r.matching_acls) for r in deleted] == [
        (0, ()),
        (42, ()),
        (0, (READ,)),
    ]
    assert store.stored == []


def upsert(user, mechanism="SCRAM-SHA-256", iterations=4096, salt=b"salt"):
    return ScramCredentialUpsertion(user, mechanism, iterations, salt, b"p" * 32)


def test_scram_credentials_follow_kafkas_rules_per_user():
    store = MemoryCredentials({"carol": {"SCRAM-SHA-512": 8192}})
    admin = manager(credentials=store)
    results = admin.alter_user_scram_credentials(
        [
            ScramCredentialDeletion("carol", "SCRAM-SHA-512"),
            ScramCredentialDeletion("dave", "SCRAM-SHA-256"),
        ],
        [
            upsert("alice"),
            upsert("bob", mechanism="SCRAM-MD5"),
            upsert("erin", iterations=100),
            upsert("frank", salt=b""),
            upsert(""),
        ],
    )
    assert [(r.user, r.error_code) for r in results] == [
        ("carol", 0),
        ("dave", 91),  # RESOURCE_NOT_FOUND: nothing to delete
        ("alice", 0),
        ("bob", 33),  # UNSUPPORTED_SASL_MECHANISM
        ("erin", 93),  # UNACCEPTABLE_CREDENTIAL: iterations below 4096
        ("frank", 93),  # UNACCEPTABLE_CREDENTIAL: no salt
        ("", 42),  # INVALID_REQUEST: no user
    ]
    assert store.stored["alice"] == {"SCRAM-SHA-256": 4096}
    assert store.stored["carol"] == {}
    described = admin.describe_user_scram_credentials(["alice", "zed", "alice"])
    assert [(r.user, r.error_code) for r in described.results] == [("alice", 0), ("zed", 91)]
    assert [(i.mechanism, i.iterations) for i in described.results[0].credential_infos] == [
        ("SCRAM-SHA-256", 4096)
    ]
    # every user with a credential when none is named
    assert [r.user for r in admin.describe_user_scram_credentials().results] == ["alice"]


def test_scram_calls_without_a_store_are_unsupported():
    admin = manager()
    assert admin.describe_user_scram_credentials().error_code == 35
    [result] = admin.alter_user_scram_credentials([], [upsert("alice")])
    assert (result.user, result.error_code) == ("alice", 35)


def test_an_election_of_every_partition_leaves_out_those_not_needed():
    result = ElectLeadersResult(
        partitions=(
            PartitionResult("t", 0),
            PartitionResult("t", 1, 84),
            PartitionResult("t", 2, 80),
        )
    )
    assert [p.partition for p in result.needed()] == [0, 2]
