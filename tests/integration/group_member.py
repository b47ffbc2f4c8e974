"""A consumer group member run as its own process by the group tests.

``python -m tests.integration.group_member BOOTSTRAP GROUP TOPIC OUT [INSTANCE_ID]``: joins
GROUP, and for each polled batch appends ``partition offset value`` lines to OUT (flushed),
then commits the positions synchronously (commit after processing). Assignment changes are
appended as ``assigned p,p,...`` / ``revoked ...`` lines. Runs until killed; SIGTERM closes
the consumer (it leaves the group).
"""

from __future__ import annotations

import signal
import sys
import threading

from odradek import Consumer, TopicPartition


def main(argv: list[str]) -> None:
    bootstrap, group, topic, out_path = argv[:4]
    instance = argv[4] if len(argv) > 4 else None
    with open(out_path, "a", buffering=1) as out:

        class Listener:
            def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
                out.write(f"assigned {','.join(str(tp.partition) for tp in sorted(assigned))}\n")

            def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
                out.write(f"revoked {','.join(str(tp.partition) for tp in sorted(revoked))}\n")

        consumer = Consumer(
            bootstrap,
            group_id=group,
            group_instance_id=instance,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        consumer.subscribe([topic], Listener())
        # SIGTERM: a clean stop (a static member leaves with epoch -2 and keeps its slot). The
        # handler only sets a flag: an exception raised from it would land wherever the main
        # thread happens to be, inside the consumer's own calls (a CI run's member then never
        # finished closing)
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        try:
            while not stop.is_set():
                records = consumer.poll(timeout_ms=500)
                for r in records:
                    out.write(f"{r.partition} {r.offset} {r.value.decode() if r.value else ''}\n")
                if records:
                    consumer.commit()
        finally:
            consumer.close()


if __name__ == "__main__":
    main(sys.argv[1:])
