// kafkajs' transactional producer against an odradek cluster's Kafka listeners: one transaction
// committed, then one aborted, then one committed, each with COUNT records to partition 0 of
// TOPIC (an existing topic), values "<txn>-<i>"; prints {"ok": true} as one JSON line.
// Usage: node transaction.js BOOTSTRAP TOPIC TRANSACTIONAL_ID COUNT
const { Kafka, logLevel } = require("kafkajs");

async function main() {
  const [bootstrap, topic, transactionalId, countText] = process.argv.slice(2);
  const count = Number(countText);
  const kafka = new Kafka({ brokers: bootstrap.split(","), clientId: "odradek-test", logLevel: logLevel.ERROR });
  const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  for (const [name, outcome] of [["committed", "commit"], ["aborted", "abort"], ["last", "commit"]]) {
    const transaction = await producer.transaction();
    const messages = [];
    for (let i = 0; i < count; i++) messages.push({ value: `${name}-${i}`, partition: 0 });
    await transaction.send({ topic, acks: -1, messages });
    if (outcome === "commit") await transaction.commit();
    else await transaction.abort();
  }
  await producer.disconnect();
  process.stdout.write(JSON.stringify({ ok: true }) + "\n");
}

main().catch((err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(1); });
