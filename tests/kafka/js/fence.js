// Two kafkajs transactional producers with one transactional id: the first sends in a
// transaction, the second connects (InitProducerId: the first's transaction is aborted and it
// is fenced) and commits a transaction of its own, then the first tries to commit. Prints
// {"first_commit": <the error's type, or "committed">} as one JSON line.
// Usage: node fence.js BOOTSTRAP TOPIC TRANSACTIONAL_ID
const { Kafka, logLevel } = require("kafkajs");

async function main() {
  const [bootstrap, topic, transactionalId] = process.argv.slice(2);
  const kafka = new Kafka({ brokers: bootstrap.split(","), clientId: "odradek-test", logLevel: logLevel.NOTHING });
  const options = { transactionalId, idempotent: true, maxInFlightRequests: 1 };
  const first = kafka.producer(options);
  await first.connect();
  const zombie = await first.transaction();
  await zombie.send({ topic, acks: -1, messages: [{ value: "zombie", partition: 0 }] });
  const second = kafka.producer(options);
  await second.connect();
  const winner = await second.transaction();
  await winner.send({ topic, acks: -1, messages: [{ value: "winner", partition: 0 }] });
  await winner.commit();
  await second.disconnect();
  let outcome = "committed";
  try {
    await zombie.commit();
  } catch (err) {
    outcome = err.type || err.name;
  }
  await first.disconnect();
  process.stdout.write(JSON.stringify({ first_commit: outcome }) + "\n");
}

main().catch((err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(1); });
