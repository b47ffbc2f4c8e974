// kafkajs against an odradek cluster's Kafka listeners: create a topic with its admin client,
// produce with gzip (kafkajs' built-in codec), idempotent, keys and headers, and print the
// topic's offsets as its admin client reads them, as one JSON line. (kafkajs' consumer always
// joins a group with the classic protocol: consume.js.)
// Usage: node produce.js BOOTSTRAP TOPIC COUNT
const { Kafka, CompressionTypes, logLevel } = require("kafkajs");

async function main() {
  const [bootstrap, topic, countText] = process.argv.slice(2);
  const count = Number(countText);
  const kafka = new Kafka({ brokers: bootstrap.split(","), clientId: "odradek-test", logLevel: logLevel.ERROR });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 3 }], waitForLeaders: true });
  await admin.disconnect();
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  const messages = [];
  for (let i = 0; i < count; i++) messages.push({ key: `k${i}`, value: `v${i}`, headers: { h: `x${i}` } });
  await producer.send({ topic, compression: CompressionTypes.GZIP, acks: -1, messages });
  await producer.disconnect();
  const offsets = await kafka.admin();
  await offsets.connect();
  const watermarks = await offsets.fetchTopicOffsets(topic);
  await offsets.disconnect();
  process.stdout.write(JSON.stringify({ watermarks }) + "\n");
}

main().catch((err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(1); });
