"""The Kafka-shaped tools of the command line against a real cluster: produce/consume with
Kafka's properties, headers and kcat's -f/-J, get-offsets, delete-records, leader-election and
reassign, each with its bad inputs (one line on stderr; exit 2 for usage, 1 otherwise)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from odradek import Admin, NewTopic
from tests.integration.helpers import partition_state, wait_for, wait_for_full_isr


def _cli(cluster, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "odradek", "--bootstrap-server", cluster.bootstrap_servers, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _one_line(r: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1, r.stderr
    for word in words:
        assert word in r.stderr, r.stderr


def test_produce_and_consume_with_kafkas_properties_headers_and_kcat_formats(make_cluster):
    cluster = make_cluster(1)
    with Admin(cluster.bootstrap_servers) as admin:
        assert admin.create_topics([NewTopic("p", 1, 1)])["p"] is None
    lines = "h1:a,h2:b\tk1\tv1\nh3:NULL\tNULL\tv2\n"
    r = _cli(
        cluster,
        "produce",
        "p",
        "--property",
        "parse.key=true",
        "--property",
        "parse.headers=true",
        "--property",
        "null.marker=NULL",
        "--producer-property",
        "linger.ms=0",
        "--producer-property",
        "acks=all",
        "-H",
        "src=cli",
        stdin=lines,
    )
    assert r.returncode == 0, r.stderr
    r = _cli(
        cluster,
        "consume",
        "p",
        "--property",
        "print.key=true",
        "--property",
        "print.headers=true",
        "--property",
        "print.offset=true",
        "--property",
        "key.separator= | ",
        "--consumer-property",
        "fetch.max.bytes=1048576",
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "Offset:0 | h1:a,h2:b,src:cli | k1 | v1",
        "Offset:1 | h3:null,src:cli | null | v2",
    ]
    r = _cli(cluster, "consume", "p", "-f", r"%t/%p@%o %k=%s (%S) [%h]\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "p/0@0 k1=v1 (2) [h1=a,h2=b,src=cli]",
        "p/0@1 =v2 (2) [h3=,src=cli]",
    ]
    r = _cli(cluster, "consume", "p", "-J", "--max-messages", "1")
    assert r.returncode == 0, r.stderr
    envelope = json.loads(r.stdout.splitlines()[0])
    assert envelope["key"] == "k1" and envelope["payload"] == "v1"
    assert envelope["headers"] == ["h1", "a", "h2", "b", "src", "cli"]
    assert (envelope["topic"], envelope["partition"], envelope["offset"]) == ("p", 0, 0)
    assert envelope["tstype"] == "create" and envelope["ts"] > 0

    # bad inputs: usage errors exit 2, input errors 1, each one line
    _one_line(
        _cli(cluster, "produce", "p", "--producer-property", "enable.idempotence=true"),
        2,
        "unknown producer property 'enable.idempotence'",
    )
    _one_line(
        _cli(cluster, "produce", "p", "--producer-property", "linger.ms=-5", stdin="x\n"),
        2,
        "--producer-property",
        "linger_ms",
    )
    _one_line(_cli(cluster, "produce", "p", "--property", "parse.keys=true"), 2, "parse.keys")
    _one_line(
        _cli(cluster, "produce", "p", "--property", "parse.key=true", stdin="no separator\n"),
        1,
        "INVALID_INPUT",
        "line 1 has no key separator",
    )
    _one_line(_cli(cluster, "consume", "p", "--consumer-property", "group.id=g"), 2, "group.id")
    _one_line(_cli(cluster, "consume", "p", "--property", "print.kye=true"), 2, "print.kye")
    _one_line(_cli(cluster, "consume", "p", "-f", "%x"), 2, "unknown format token '%x'")
    _one_line(_cli(cluster, "consume", "p", "-f", "%s", "-J"), 2, "not allowed with")


def test_consume_past_the_end_says_where_the_log_ends(make_cluster):
    cluster = make_cluster(1)
    with Admin(cluster.bootstrap_servers) as admin:
        assert admin.create_topics([NewTopic("short", 1, 1)])["short"] is None
    assert _cli(cluster, "produce", "short", stdin="a\nb\nc\n").returncode == 0
    r = _cli(cluster, "consume", "short", "--partition", "0", "--offset", "10")
    assert r.returncode == 0, r.stderr
    assert "offset 10 is past the end of short-0: its log ends at offset 3" in r.stderr
    assert "Processed a total of 0 messages" in r.stderr
    r = _cli(cluster, "consume", "short", "--partition", "0", "--offset", "3")
    assert "offset 3 is the end of short-0" in r.stderr
    r = _cli(cluster, "consume", "short", "--partition", "0", "--offset", "1")
    assert r.stdout.splitlines() == ["b", "c"] and "past the end" not in r.stderr


def test_get_offsets_and_delete_records(make_cluster, tmp_path: Path):
    cluster = make_cluster(1)
    with Admin(cluster.bootstrap_servers) as admin:
        assert admin.create_topics([NewTopic("g1", 2, 1), NewTopic("g2", 1, 1)]) == {
            "g1": None,
            "g2": None,
        }
    assert _cli(cluster, "produce", "g1", "--partition", "0", stdin="a\nb\nc\nd\n").returncode == 0
    assert _cli(cluster, "produce", "g2", stdin="x\n").returncode == 0
    r = _cli(cluster, "get-offsets", "--topic", "g.*")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["g1:0:4", "g1:1:0", "g2:0:1"]
    r = _cli(cluster, "get-offsets", "--topic", "g1", "--partitions", "0", "--time", "-2")
    assert r.stdout.splitlines() == ["g1:0:0"]
    r = _cli(cluster, "get-offsets", "--topic", "g1", "--time", "0", "--partitions", "0-1")
    assert r.stdout.splitlines() == ["g1:0:0"]  # partition 1 has no record at or after 0
    r = _cli(cluster, "get-offsets", "--topic", "g1", "--time", "99999999999999")
    assert r.returncode == 0 and r.stdout == ""
    # the record with the largest timestamp (KIP-734); none in an empty partition
    for spelling in ("max-timestamp", "-3"):
        r = _cli(
            cluster, "get-offsets", "--topic", "g[12]", "--partitions", "0-1", "--time", spelling
        )
        assert r.returncode == 0, r.stderr
        g1, g2 = r.stdout.splitlines()  # g1-1 has no record
        assert g1.startswith("g1:0:") and int(g1.rsplit(":", 1)[1]) in range(4)
        assert g2 == "g2:0:0"

    plan = tmp_path / "delete.json"
    plan.write_text(
        json.dumps(
            {
                "partitions": [
                    {"topic": "g1", "partition": 0, "offset": 2},
                    {"topic": "g2", "partition": 0, "offset": -1},
                    {"topic": "g1", "partition": 1, "offset": 5},
                ],
                "version": 1,
            }
        )
    )
    r = _cli(cluster, "delete-records", "--offset-json-file", str(plan))
    assert r.returncode == 1, r.stderr
    assert "partition: g1-0\tlow_watermark: 2" in r.stdout
    assert "partition: g2-0\tlow_watermark: 1" in r.stdout
    assert "partition: g1-1\terror: OFFSET_OUT_OF_RANGE" in r.stdout
    r = _cli(cluster, "get-offsets", "--topic", "g1", "--time", "earliest", "--partitions", "0")
    assert r.stdout.splitlines() == ["g1:0:2"]

    # bad inputs
    _one_line(_cli(cluster, "get-offsets", "--time", "soon"), 2, "--time")
    _one_line(_cli(cluster, "get-offsets", "--time", "-4"), 2, "-3")
    _one_line(_cli(cluster, "get-offsets", "--partitions", "3-1"), 2, "bad partition range")
    _one_line(_cli(cluster, "get-offsets", "--topic", "("), 2, "not a regular expression")
    _one_line(
        _cli(cluster, "get-offsets", "--topic", "nope"),
        1,
        "UNKNOWN_TOPIC_OR_PARTITION",
        "Could not match any topic-partitions",
    )
    _one_line(_cli(cluster, "delete-records"), 2, "--offset-json-file")
    _one_line(
        _cli(cluster, "delete-records", "--offset-json-file", str(tmp_path / "missing.json")),
        1,
        "INVALID_INPUT",
        "cannot read",
    )
    bad = tmp_path / "bad.json"
    for content, words in [
        ("{", "is not JSON"),
        ('{"partitions": []}', "expected"),
        ('{"partitions": [{"topic": "g1", "partition": 0}]}', "'offset'"),
        (
            '{"partitions": [{"topic": "g1", "partition": 0, "offset": 1},'
            '{"topic": "g1", "partition": 0, "offset": 2}]}',
            "duplicate",
        ),
    ]:
        bad.write_text(content)
        r = _cli(cluster, "delete-records", "--offset-json-file", str(bad))
        _one_line(r, 1, "INVALID_INPUT", words)


def test_leader_election_and_reassign(make_cluster, tmp_path: Path):
    cluster = make_cluster()
    admin = Admin(cluster.bootstrap_servers)
    assert admin.create_topics([NewTopic("le", assignments={0: [0, 1, 2], 1: [1, 2, 0]})]) == {
        "le": None
    }
    wait_for_full_isr(admin, "le", 2)
    cluster.node(0).stop()
    wait_for(lambda: partition_state(admin, "le").leader not in (-1, 0), "a new leader")
    cluster.node(0).start()
    wait_for_full_isr(admin, "le", 2)
    r = _cli(cluster, "leader-election", "--election-type", "PREFERRED", "--all-topic-partitions")
    assert r.returncode == 0, r.stderr
    assert "Successfully completed leader election (PREFERRED) for partitions le-0" in r.stdout
    assert "Valid replica already elected for partitions le-1" in r.stdout
    assert partition_state(admin, "le").leader == 0
    elect = tmp_path / "elect.json"
    elect.write_text(json.dumps({"partitions": [{"topic": "le", "partition": 1}]}))
    r = _cli(
        cluster,
        "leader-election",
        "--election-type",
        "preferred",
        "--path-to-json-file",
        str(elect),
    )
    assert r.returncode == 0 and "Valid replica already elected for partitions le-1" in r.stdout
    r = _cli(
        cluster,
        "leader-election",
        "--election-type",
        "unclean",
        "--topic",
        "le",
        "--partition",
        "7",
    )
    assert r.returncode == 1
    assert "Error completing leader election (UNCLEAN) for partition: le-7" in r.stdout
    assert "1 replica(s) could not be elected" in r.stderr
    _one_line(_cli(cluster, "leader-election", "--all-topic-partitions"), 2, "--election-type")
    _one_line(
        _cli(cluster, "leader-election", "--election-type", "sometimes", "--all-topic-partitions"),
        2,
        "PREFERRED or UNCLEAN",
    )
    _one_line(
        _cli(cluster, "leader-election", "--election-type", "preferred", "--topic", "le"),
        2,
        "--topic and --partition go together",
    )
    _one_line(
        _cli(
            cluster,
            "leader-election",
            "--election-type",
            "preferred",
            "--all-topic-partitions",
            "--topic",
            "le",
            "--partition",
            "0",
        ),
        2,
        "exactly one of",
    )

    # reassign: generate a plan over two brokers, execute it, verify it
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"topics": [{"topic": "le"}], "version": 1}))
    r = _cli(
        cluster,
        "reassign",
        "--generate",
        "--topics-to-move-json-file",
        str(topics),
        "--broker-list",
        "1,2",
    )
    assert r.returncode == 1  # replication factor 3 over two brokers
    _one_line(r, 1, "INVALID_REPLICATION_FACTOR")
    assert admin.create_topics([NewTopic("mv", assignments={0: [0, 1], 1: [1, 0]})]) == {"mv": None}
    wait_for_full_isr(admin, "mv", 2, rf=2)
    topics.write_text(json.dumps({"topics": [{"topic": "mv"}], "version": 1}))
    r = _cli(
        cluster,
        "reassign",
        "--generate",
        "--topics-to-move-json-file",
        str(topics),
        "--broker-list",
        "1,2",
    )
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0] == "Current partition replica assignment"
    current = json.loads(out[1])
    assert current["partitions"][0] == {
        "topic": "mv",
        "partition": 0,
        "replicas": [0, 1],
        "log_dirs": ["any", "any"],
    }
    assert out[3] == "Proposed partition reassignment configuration"
    proposed = json.loads(out[4])
    assert [sorted(p["replicas"]) for p in proposed["partitions"]] == [[1, 2], [1, 2]]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(proposed))
    r = _cli(cluster, "reassign", "--execute", "--reassignment-json-file", str(plan))
    assert r.returncode == 0, r.stderr
    assert "Save this to use as the --reassignment-json-file option during rollback" in r.stdout
    assert "Successfully started partition reassignments for mv-0,mv-1" in r.stdout

    def verified() -> bool:
        r = _cli(cluster, "reassign", "--verify", "--reassignment-json-file", str(plan))
        return r.returncode == 0 and r.stdout.count("is completed.") == 2

    wait_for(verified, "the reassignment to complete")
    assert sorted(partition_state(admin, "mv", 1).replicas) == [1, 2]
    r = _cli(cluster, "reassign", "--list")
    assert r.returncode == 0 and "No partition reassignments found." in r.stdout

    # bad inputs
    _one_line(_cli(cluster, "reassign", "--execute"), 2, "--reassignment-json-file")
    _one_line(_cli(cluster, "reassign", "--generate", "--broker-list", "1"), 2, "--generate needs")
    _one_line(
        _cli(cluster, "reassign", "--generate", "--broker-list", "1,1"), 2, "Duplicate broker"
    )
    _one_line(
        _cli(
            cluster,
            "reassign",
            "--execute",
            "--reassignment-json-file",
            str(plan),
            "--throttle",
            "1000",
        ),
        2,
        "--throttle is not supported",
    )
    bad = tmp_path / "bad-plan.json"
    for content, words in [
        ('{"partitions": [{"topic": "mv", "partition": 0, "replicas": [1, 1]}]}', "Duplicate"),
        ('{"partitions": [{"topic": "mv", "partition": 0}]}', "'replicas'"),
        (
            '{"partitions": [{"topic": "mv", "partition": 0, "replicas": [1], '
            '"log_dirs": ["/data"]}]}',
            "log_dirs",
        ),
    ]:
        bad.write_text(content)
        _one_line(
            _cli(cluster, "reassign", "--execute", "--reassignment-json-file", str(bad)),
            1,
            "INVALID_INPUT",
            words,
        )
    bad.write_text('{"partitions": [{"topic": "mv", "partition": 0, "replicas": [0, 9]}]}')
    r = _cli(cluster, "reassign", "--execute", "--reassignment-json-file", str(bad))
    assert r.returncode == 1 and "Error reassigning partition(s): mv-0" in r.stdout
    assert r.stderr.count("\n") == 1 and "INVALID_REPLICA_ASSIGNMENT" in r.stderr
    bad.write_text('{"partitions": [{"topic": "nope", "partition": 0, "replicas": [0]}]}')
    _one_line(
        _cli(cluster, "reassign", "--execute", "--reassignment-json-file", str(bad)),
        1,
        "UNKNOWN_TOPIC_OR_PARTITION",
    )
    admin.close()


def test_produce_below_min_isr_names_not_enough_replicas(make_cluster):
    # A new user's report: producing into a topic whose ISR is below min.insync.replicas said
    # nothing for two minutes, then REQUEST_TIMED_OUT. The tool warns at each retry with the
    # broker's error, and the final error names it.
    cluster = make_cluster(2, replica_lag_time_max_ms="2000")
    with Admin(cluster.bootstrap_servers) as admin:
        created = admin.create_topics([NewTopic("m", 1, 2, configs={"min.insync.replicas": "2"})])
        assert created["m"] is None
        wait_for_full_isr(admin, "m", 1, rf=2)
        leader = partition_state(admin, "m").leader
        cluster.node(1 - leader).kill()
        wait_for(lambda: partition_state(admin, "m").isr == (leader,), "the ISR to shrink")
    r = _cli(
        cluster,
        "produce",
        "m",
        "--producer-property",
        "delivery.timeout.ms=3000",
        "--producer-property",
        "request.timeout.ms=1000",
        stdin="a\n",
    )
    assert r.returncode == 1, r.stderr
    assert "NOT_ENOUGH_REPLICAS" in r.stderr.splitlines()[-1], r.stderr
    warnings = [x for x in r.stderr.splitlines() if x.startswith("odradek produce: warning: ")]
    assert warnings, r.stderr
    assert all("NOT_ENOUGH_REPLICAS" in w for w in warnings), warnings
