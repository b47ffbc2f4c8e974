// kafkajs' admin client against an odradek cluster's Kafka listeners: create a topic with a
// config, grow it to three partitions, describe its configs, delete it; print what it saw as
// one JSON line. Usage: node admin.js BOOTSTRAP TOPIC
const { Kafka, ConfigResourceTypes, logLevel } = require("kafkajs");

async function main() {
  const [bootstrap, topic] = process.argv.slice(2);
  const kafka = new Kafka({ brokers: bootstrap.split(","), clientId: "odradek-admin-test", logLevel: logLevel.ERROR });
  const admin = kafka.admin();
  await admin.connect();
  try {
    const created = await admin.createTopics({
      topics: [{ topic, numPartitions: 1, replicationFactor: 3, configEntries: [{ name: "retention.ms", value: "90000" }] }],
      waitForLeaders: true,
    });
    await admin.createPartitions({ topicPartitions: [{ topic, count: 3 }] });
    // the answering node's metadata learns of the new partitions a moment later
    let partitions = 0;
    for (const deadline = Date.now() + 30000; partitions < 3 && Date.now() < deadline; ) {
      const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
      partitions = metadata.topics[0].partitions.length;
      if (partitions < 3) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const described = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ["retention.ms"] }],
    });
    const retention = described.resources[0].configEntries.find((e) => e.configName === "retention.ms");
    await admin.deleteTopics({ topics: [topic], timeout: 30000 });
    const remaining = await admin.listTopics();
    process.stdout.write(JSON.stringify({
      created,
      partitions,
      retention: retention && retention.configValue,
      deleted: !remaining.includes(topic),
    }) + "\n");
  } finally {
    await admin.disconnect();
  }
}

main().catch((err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(1); });
