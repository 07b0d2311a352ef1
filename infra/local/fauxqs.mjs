// Starts the fauxqs SQS emulator on 127.0.0.1 (its CLI always binds 0.0.0.0).
// Usage: node fauxqs.mjs <port>
import { buildApp } from "fauxqs";

const port = Number(process.argv[2] ?? 4566);
const app = buildApp({ logger: false });
await app.listen({ port, host: "127.0.0.1" });
console.log(`fauxqs listening on http://127.0.0.1:${port}`);
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, () => app.close().finally(() => process.exit(0)));
}
