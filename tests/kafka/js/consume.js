// kafkajs' consumer against an odradek cluster's Kafka listeners: it joins a consumer group
// (the classic protocol: JoinGroup, SyncGroup, Heartbeat, OffsetFetch, OffsetCommit), reads
// COUNT records of TOPIC from the beginning, commits, leaves, and prints them as one JSON line
// (key, value and header h of each, in the order read, with partition and offset).
// Usage: node consume.js BOOTSTRAP TOPIC GROUP COUNT
const { Kafka, logLevel } = require("kafkajs");

async function main() {
  const [bootstrap, topic, groupId, countText] = process.argv.slice(2);
  const count = Number(countText);
  const kafka = new Kafka({ brokers: bootstrap.split(","), clientId: "odradek-test", logLevel: logLevel.ERROR });
  const consumer = kafka.consumer({ groupId, heartbeatInterval: 500 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const read = [];
  let done;
  const all = new Promise((resolve) => { done = resolve; });
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      read.push({
        partition,
        offset: message.offset,
        key: message.key && message.key.toString(),
        value: message.value && message.value.toString(),
        h: message.headers && message.headers.h ? message.headers.h.toString() : null,
      });
      if (read.length >= count) done();
    },
  });
  const timeout = setTimeout(() => { process.stderr.write(`read ${read.length} of ${count}\n`); process.exit(1); }, 90000);
  await all;
  clearTimeout(timeout);
  await consumer.disconnect();  // commits what was read, then LeaveGroup
  const offsets = await kafka.admin();
  await offsets.connect();
  const committed = await offsets.fetchOffsets({ groupId, topics: [topic] });
  await offsets.disconnect();
  process.stdout.write(JSON.stringify({ read, committed }) + "\n");
}

main().catch((err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(1); });
