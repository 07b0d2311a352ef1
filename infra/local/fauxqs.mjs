// Starts the fauxqs SQS emulator on 127.0.0.1 (its CLI always binds 0.0.0.0).
// Usage: node fauxqs.mjs <port> [state.json]
//
// fauxqs keeps everything in memory. With a state file (HERALD_DEV_DATA), this
// launcher keeps the queues and their messages across restarts: it loads the
// file at start, rewrites it every second while running and again on
// SIGTERM/SIGINT (so a clean stop loses nothing).
// A message that was in flight is restored invisible until its visibility
// deadline (the retry backoff the worker set survives), with its receive count,
// so maxReceiveCount still counts every receive. After SIGKILL the file is at
// most one second old.
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { buildApp } from "fauxqs";
// Not in fauxqs's export map, so imported by path (the version is pinned).
import { SqsStore } from "./node_modules/fauxqs/dist/sqs/sqsStore.js";

const port = Number(process.argv[2] ?? 4566);
const stateFile = process.argv[3];
const snapshotEveryMs = 1000;

const sqsStore = new SqsStore();
if (stateFile) {
  restore(sqsStore, stateFile, port);
}
const app = buildApp({ logger: false, stores: { sqsStore } });
await app.listen({ port, host: "127.0.0.1" });
console.log(`fauxqs listening on http://127.0.0.1:${port}` + (stateFile ? ` (state in ${stateFile})` : ""));

let timer;
if (stateFile) {
  timer = setInterval(() => save(sqsStore, stateFile), snapshotEveryMs);
}
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, async () => {
    // Save first: the runner stops its consumers before the emulators, so
    // the queues are final now, and the runner kills what is still running
    // 5 s after SIGTERM (a close can wait on open connections).
    if (stateFile) {
      clearInterval(timer);
      save(sqsStore, stateFile);
    }
    await Promise.race([app.close(), new Promise((resolve) => setTimeout(resolve, 2000))]);
    if (stateFile) {
      save(sqsStore, stateFile);
    }
    process.exit(0);
  });
}

function restore(store, file, port) {
  let state;
  try {
    state = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    if (err.code === "ENOENT") return;
    throw new Error(`fauxqs state ${file}: ${err.message}`);
  }
  if (state.version !== 1) {
    throw new Error(`fauxqs state ${file}: unknown version ${state.version}`);
  }
  let count = 0;
  for (const q of state.queues) {
    const region = q.arn.split(":")[3];
    // The URL carries the port, which is new each run; the ARN does not.
    const url = store.buildQueueUrl(q.name, String(port), `127.0.0.1:${port}`, region);
    const queue = store.createQueue(q.name, url, q.arn, q.attributes, q.tags);
    queue.createdTimestamp = q.createdTimestamp ?? queue.createdTimestamp;
    for (const msg of q.messages) {
      queue.enqueue(msg);
      count++;
    }
  }
  console.log(`fauxqs restored ${state.queues.length} queues, ${count} messages from ${file}`);
}

function save(store, file) {
  const queues = [];
  for (const q of store.listQueues()) {
    const { ready, delayed, inflight } = q.inspectMessages();
    const messages = [...ready, ...delayed];
    for (const entry of inflight) {
      // Invisible until the deadline the consumer set, as if still in flight.
      messages.push({ ...entry.message, delayUntil: entry.visibilityDeadline });
    }
    queues.push({
      name: q.name,
      arn: q.arn,
      createdTimestamp: q.createdTimestamp,
      attributes: q.attributes,
      tags: Object.fromEntries(q.tags),
      messages,
    });
  }
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, JSON.stringify({ version: 1, savedAt: new Date().toISOString(), queues }));
  renameSync(tmp, file);
}
