// Many idle engines in one Node process (see docs/benchmarks.md, "`bindings-node`: many
// engines in one process"): for each count, a fresh Node process creates that many
// engines, each on a workspace of its own, lets them settle, and reports its resident
// memory, its threads and its inotify instances; then it writes an `AGENTS.md` into every
// workspace and counts the engines that announced the change (`workspace_reloaded` of
// their rules) within 30 s: the engines still watched.
//
//   node bench/engines.mjs [counts...]   (default: 1 10 100 1000; after `npm run build`,
//                                         or the release addon of `npm run bench`)
//
// CODER_NATIVE_PATH runs the SDK over another build of the addon (an older one, for a
// before and after).

import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const SEEN_WITHIN_MS = 30000;

if (process.argv[2] === "--child") {
  await child(Number(process.argv[3]));
} else {
  const counts = process.argv.slice(2).map(Number);
  console.log("| engines | RSS | RSS per engine | threads | inotify instances | watched |");
  console.log("| --- | --- | --- | --- | --- | --- |");
  for (const count of counts.length ? counts : [1, 10, 100, 1000]) {
    const row = execFileSync(process.execPath, [import.meta.filename, "--child", String(count)], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
      maxBuffer: 1 << 20,
    });
    console.log(row.trim());
  }
}

async function child(count) {
  const { Engine } = await import("coder-agent-engine");
  const root = mkdtempSync(join(tmpdir(), "coder-engines-bench-"));
  const base = rss();
  const engines = [];
  try {
    for (let i = 0; i < count; i++) {
      const dir = join(root, `ws${i}`);
      mkdirSync(dir);
      const engine = Engine.create({
        workingDir: dir,
        // Never called: the engines stay idle.
        model: { provider: "openai", model: "mock", baseUrl: "http://127.0.0.1:9/v1", apiKey: "k" },
        saveSessions: false,
      });
      const seen = { rules: false };
      engine.onEvent((event) => {
        if (event.type === "workspace_reloaded" && event.what === "rules") seen.rules = true;
      });
      engines.push({ engine, dir, seen });
    }
    // Each session walks its workspace once at start, on a thread that ends; the counts
    // are taken once the thread count has stayed put for a second.
    let last = -1;
    while (threads() !== last) {
      last = threads();
      await sleep(1000);
    }
    globalThis.gc?.();
    const memory = rss();
    const threadCount = threads();
    const inotify = inotifyInstances();
    for (const { dir } of engines) writeFileSync(join(dir, "AGENTS.md"), "A rule.\n");
    const deadline = Date.now() + SEEN_WITHIN_MS;
    while (Date.now() < deadline && !engines.every(({ seen }) => seen.rules)) await sleep(50);
    const watched = engines.filter(({ seen }) => seen.rules).length;
    const perEngine = (memory - base) / count;
    console.log(
      `| ${count.toLocaleString("en")} | ${mib(memory)} | ${mib(perEngine)} | ${threadCount} | ${inotify} | ${watched.toLocaleString("en")} of ${count.toLocaleString("en")} |`,
    );
  } finally {
    await Promise.all(engines.map(({ engine }) => engine.dispose()));
    rmSync(root, { recursive: true, force: true });
  }
}

function rss() {
  return process.memoryUsage().rss;
}

function threads() {
  return readdirSync("/proc/self/task").length;
}

function inotifyInstances() {
  let found = 0;
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === "anon_inode:inotify") found++;
    } catch {
      // Closed meanwhile.
    }
  }
  return found;
}

function mib(bytes) {
  return `${(bytes / (1 << 20)).toFixed(1)} MiB`;
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
