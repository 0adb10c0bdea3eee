// Many idle `SemaSession`s of one `SemaCore` in one Node process (see docs/benchmarks.md,
// "`bindings-node`: SemaCore 2's session pool"): for each count, a fresh Node process opens
// that many sessions on one workspace, lets them settle, and reports its resident memory
// and its threads, against the same process with one session.
//
//   node bench/sessions.mjs [counts...]   (default: 1 1000; after `npm run build`)

import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// SemaCore's model file (`model.conf`) goes to a folder of this run, never the real home's.
if (process.env.SEMA_ROOT === undefined) {
  process.env.SEMA_ROOT = mkdtempSync(join(tmpdir(), "coder-sema-"));
  const root = process.env.SEMA_ROOT;
  process.once("exit", () => rmSync(root, { recursive: true, force: true }));
}

if (process.argv[2] === "--child") {
  await child(Number(process.argv[3]));
} else {
  const counts = process.argv.slice(2).map(Number);
  console.log("| sessions | RSS | RSS per session | threads | ratio to one session |");
  console.log("| --- | --- | --- | --- | --- |");
  let one;
  for (const count of counts.length ? counts : [1, 1000]) {
    const out = execFileSync(process.execPath, [import.meta.filename, "--child", String(count)], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
    });
    const { rss, base, threads } = JSON.parse(out);
    one ??= rss;
    console.log(
      `| ${count.toLocaleString("en")} | ${mib(rss)} | ${mib((rss - base) / count)} | ${threads} | ${(rss / one).toFixed(2)} |`,
    );
  }
}

async function child(count) {
  const { SemaCore } = await import("coder-agent-engine");
  const dir = mkdtempSync(join(tmpdir(), "coder-sessions-bench-"));
  const core = new SemaCore({ workingDir: dir, logLevel: "none", saveSessions: false });
  try {
    // Never called: the sessions stay idle.
    await core.addModel(
      { provider: "openai", modelName: "mock", baseURL: "http://127.0.0.1:9/v1", apiKey: "k", maxTokens: 1024, contextLength: 32000 },
      true,
    );
    const base = rss();
    for (let i = 0; i < count; i++) {
      const result = await core.createSession({});
      if (!result.ok) throw new Error(result.error);
    }
    // Each session walks its workspace once at start, on a thread that ends; the counts
    // are taken once the thread count has stayed put for a second.
    let last = -1;
    while (threads() !== last) {
      last = threads();
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    process.stdout.write(JSON.stringify({ rss: rss(), base, threads: threads(), sessions: core.listSessions().length }));
  } finally {
    await core.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
}

function rss() {
  return process.memoryUsage().rss;
}

function threads() {
  const status = readFileSync("/proc/self/status", "utf8");
  return Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 0);
}

function mib(bytes) {
  return `${(bytes / (1 << 20)).toFixed(1)} MiB`;
}
