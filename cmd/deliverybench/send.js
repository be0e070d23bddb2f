// Sends pushes with web-push as a node application would: the library's
// defaults (aes128gcm, its TTL, node's global HTTPS agent), a fixed number
// of sends in flight. Run by deliverybench; the configuration file is its
// only argument, and it prints one JSON line with what happened.
'use strict';
const fs = require('fs');
const webpush = require('web-push');
const version = require('web-push/package.json').version;

const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
webpush.setVapidDetails(cfg.subject, cfg.publicKey, cfg.privateKey);

async function main() {
  let next = 0;
  let failed = 0;
  let firstError = '';
  async function worker() {
    for (let i = next++; i < cfg.n; i = next++) {
      const sub = cfg.subscriptions[i % cfg.subscriptions.length];
      try {
        await webpush.sendNotification(sub, cfg.payload);
      } catch (e) {
        failed++;
        if (!firstError) firstError = `${e.statusCode || ''} ${e.body || e.message}`;
      }
    }
  }
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: cfg.concurrency }, worker));
  const elapsedNs = Number(process.hrtime.bigint() - t0);
  const cpu = process.cpuUsage(cpu0);
  process.stdout.write(JSON.stringify({
    version, sent: cfg.n - failed, failed, firstError, elapsedNs,
    cpuMicros: cpu.user + cpu.system,
  }) + '\n');
}

main().catch((e) => {
  process.stderr.write(`${e.stack || e}\n`);
  process.exit(1);
});
