"""A local three-node Kafka cluster (KRaft, combined roles): replicated topics, and a broker
killed in the middle of a stream loses no acknowledged write and duplicates none.

The cluster runs on its own ports ($RESHAPER_TEST_CLUSTER_PORT, default 39292: nodes on
39292, 39294 and 39296, controllers one above each; the start-failure test 100 above) and in a
temporary folder, beside the single broker the other tests use."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from infra.platform.broker import InfraError, KafkaBroker, KafkaCluster, _pid_alive, stop_nodes
from infra.platform.kafka_io import EventProducer
from infra.platform.settings import BrokerSettings, ClusterSettings, replication_for
from infra.platform.topics import Topics, ensure_topics

CLUSTER_PORT = int(os.environ.get("RESHAPER_TEST_CLUSTER_PORT", "39292"))


def test_cluster_nodes_never_share_a_port_and_vote_as_one_quorum(tmp_path):
    nodes = ClusterSettings(brokers=3, port=40000, home=tmp_path).nodes()
    ports = [p for n in nodes for p in (n.port, n.controller)]
    assert len(set(ports)) == 6
    assert [n.node_id for n in nodes] == [1, 2, 3]
    assert {n.quorum_voters for n in nodes} == {"1@127.0.0.1:40001,2@127.0.0.1:40003,3@127.0.0.1:40005"}
    assert {(n.replication_factor, n.min_insync_replicas) for n in nodes} == {(3, 2)}
    single = ClusterSettings(brokers=1, port=40000, home=tmp_path).nodes()
    assert len(single) == 1 and single[0].quorum_voters is None and single[0].replication_factor == 1
    assert replication_for(1) == (1, 1) and replication_for(2) == (2, 1) and replication_for(5) == (3, 2)


def running_for(home) -> list[int]:
    """Pids of the processes whose command line names `home` (a node's properties live there)."""
    pids = []
    for proc in os.scandir("/proc"):
        try:
            cmdline = open(f"/proc/{proc.name}/cmdline", "rb").read()
        except (OSError, ValueError):
            continue
        if proc.name.isdigit() and str(home).encode() in cmdline:
            pids.append(int(proc.name))
    return pids


def test_a_cluster_that_does_not_come_up_is_not_left_running(tmp_path):
    # ports of its own: a node just stopped may hold its port a moment, and the cluster below needs them
    cluster = KafkaCluster(ClusterSettings(brokers=3, port=CLUSTER_PORT + 100, home=tmp_path, start_timeout_s=0.5))
    with pytest.raises(InfraError, match="did not answer"):
        cluster.up()  # three JVMs cannot answer within half a second
    assert running_for(tmp_path) == [] and all(node.status().pid is None for node in cluster.nodes)


MAIN_THREAD_EXITS = """
import ctypes, threading, time
threading.Thread(target=time.sleep, args=(60,)).start()
time.sleep(0.2)
ctypes.CDLL(None).pthread_exit(None)  # as a JVM's main thread ends while its shutdown hooks run
"""


def test_a_process_whose_main_thread_ended_is_alive_while_another_thread_runs():
    proc = subprocess.Popen([sys.executable, "-c", MAIN_THREAD_EXITS])
    try:
        time.sleep(1.5)
        leader = open(f"/proc/{proc.pid}/stat").read().rsplit(")", 1)[1].split()[0]
        assert leader == "Z" and _pid_alive(proc.pid)  # a zombie main thread, the process not dead
        proc.kill()
        time.sleep(0.5)
        assert not _pid_alive(proc.pid)  # now a zombie child of ours: dead
    finally:
        proc.kill()
        proc.wait()


HANDOVER = """
import signal, subprocess, sys, time
def handover(*_):  # stopped: a new node takes its place and writes its pid, as a concurrent start would
    successor = subprocess.Popen(["sleep", "60"], start_new_session=True)
    open(sys.argv[1], "w").write(str(successor.pid))
    sys.exit(0)
signal.signal(signal.SIGTERM, handover)
time.sleep(60)
"""


def test_stopping_a_node_keeps_the_pid_file_of_one_started_meanwhile(tmp_path):
    node = KafkaBroker(BrokerSettings(port=CLUSTER_PORT + 200, home=tmp_path))
    stopped = subprocess.Popen([sys.executable, "-c", HANDOVER, str(node.pid_file)])
    node.pid_file.write_text(str(stopped.pid))
    time.sleep(0.5)  # its SIGTERM handler is set
    try:
        assert stop_nodes([node], timeout_s=10)
        stopped.wait(timeout=10)
        successor = node._read_pid()
        assert successor is not None and successor != stopped.pid  # still known, so it can be stopped
        assert stop_nodes([node], timeout_s=10) and not node.pid_file.exists()
    finally:
        if (pid := node._pid_in_file()) is not None:
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = KafkaCluster(ClusterSettings(brokers=3, port=CLUSTER_PORT, home=tmp_path_factory.mktemp("cluster")))
    cluster.up()
    yield cluster
    cluster.reset()


def _partitions(admin: AdminClient, topic: str):
    return admin.list_topics(topic, timeout=10).topics[topic].partitions


def _wait_isr(admin: AdminClient, topic: str, size: int, timeout_s: float = 90.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all(len(p.isrs) == size for p in _partitions(admin, topic).values()):
            return True
        time.sleep(0.5)
    return False


def test_topics_are_replicated_three_times_and_need_two_in_sync(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topics = Topics(prefix=f"rep-{uuid.uuid4().hex[:6]}.")
    ensure_topics(admin, topics.event_specs(replication=3))
    for partition in _partitions(admin, topics.rollouts).values():
        assert len(partition.replicas) == 3
    assert _wait_isr(admin, topics.rollouts, 3)
    from confluent_kafka.admin import ConfigResource

    (future,) = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topics.rollouts)]).values()
    assert future.result()["min.insync.replicas"].value == "2"


def test_a_leader_killed_mid_stream_loses_and_duplicates_nothing(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topic = Topics(prefix=f"kill-{uuid.uuid4().hex[:6]}.").rollouts
    ensure_topics(admin, [s for s in Topics(prefix=topic.removesuffix("rollouts")).event_specs(replication=3)
                          if s.name == topic])
    assert _wait_isr(admin, topic, 3)
    producer = EventProducer(cluster.bootstrap)
    for i in range(300):
        producer.send_raw(topic, f"k{i % 17}", f"event-{i}".encode())
    producer.flush()

    leader = _partitions(admin, topic)[0].leader
    victim = leader - 1  # node ids are 1..3 in order
    assert cluster.nodes[victim].kill()
    for i in range(300, 600):  # acks from the two in-sync replicas left
        producer.send_raw(topic, f"k{i % 17}", f"event-{i}".encode())
    producer.flush()  # raises DeliveryError on any refused or lost write
    assert producer.delivered == 600

    values = _read_all(cluster.bootstrap, topic)
    assert len(values) == 600 and set(values) == {f"event-{i}" for i in range(600)}

    cluster.start_node(victim)
    assert _wait_isr(admin, topic, 3), "the restarted node did not rejoin every partition's in-sync replicas"
    assert sorted(_read_all(cluster.bootstrap, topic)) == sorted(values)


def _read_all(bootstrap: str, topic: str) -> list[str]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions}
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        values, seen = [], {p: 0 for p in partitions}
        deadline = time.monotonic() + 60
        while any(seen[p] < ends[p] for p in partitions) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            values.append(msg.value().decode())
            seen[msg.partition()] = msg.offset() + 1
        return values
    finally:
        consumer.close()
