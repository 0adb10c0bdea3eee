// A seeded fuzz test of the SDK's entry points, as a hostile or careless program would call
// them: every method of `Engine` with arguments of every JavaScript kind (wrong types,
// `NaN`, `BigInt`, symbols, functions, proxies that throw, circular and deeply nested
// objects, strings of a megabyte, lone surrogates, NUL). Each call must return or throw an
// `Error`, never end the process; afterwards the engine still serves a task and the
// process's memory is bounded. The seed is printed; `CODER_FUZZ_SEED=<n>` replays a run.
// Not fuzzed: `setModel` and `checkModel` (a valid-looking model would send requests to a
// real provider's endpoint), `dispose` (ended once, at the end).

import { test } from "node:test";
import assert from "node:assert/strict";

import { Engine } from "coder-agent-engine";
import { startMock, text, workspace } from "./mock.mjs";

const CALLS = 3000;

/** mulberry32: small, seeded, the same everywhere. */
function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    below: (n) => Math.floor(next() * n),
    pick: (items) => items[Math.floor(next() * items.length)],
    chance: (oneIn) => Math.floor(next() * oneIn) === 0,
  };
}

/** Strings from a fixed palette: none starts with `!` (a person's shell command) or is a
 * slash command that reaches outside the session. */
const STRINGS = [
  "",
  "x",
  "hello",
  "\u0000",
  "\ud800",
  "\u202e",
  "/help",
  "/mode plan",
  "/nonsense",
  "@a.txt",
  "@../../etc/passwd",
  "0192f0c4-0000-7000-8000-000000000000",
  "allow_once",
  "deny",
  "plan",
  "yolo",
  "text",
  "image",
  "x".repeat(1 << 20),
];

function value(r, depth = 0) {
  const kinds = [
    () => undefined,
    () => null,
    () => r.pick([true, false]),
    () => r.pick([0, -1, 1, 3.5, NaN, Infinity, -Infinity, 1e308, 2 ** 53 + 1, -0]),
    () => BigInt(r.below(1000)),
    () => r.pick(STRINGS),
    () => Symbol("s"),
    () => () => {},
    () => new Date(0),
    () => Buffer.from("buf"),
    () => new Proxy({}, { get() { throw new Error("a hostile getter"); }, ownKeys() { throw new Error("hostile keys"); } }),
    () => { const o = { a: 1 }; o.self = o; return o; },
    () => { let o = {}; for (let i = 0; i < 2000; i++) o = { o }; return o; },
    () => ({ toJSON() { throw new Error("a hostile toJSON"); } }),
    () => depth < 3 ? Array.from({ length: r.below(4) }, () => value(r, depth + 1)) : [],
    () => depth < 3 ? Object.fromEntries(Array.from({ length: r.below(4) }, () => [r.pick(KEYS), value(r, depth + 1)])) : {},
    () => ({ type: r.pick(["text", "image", "nope"]), text: r.pick(STRINGS), data: r.pick(STRINGS), mediaType: r.pick(STRINGS) }),
    () => ({ decision: r.pick(["allow_once", "allow_always", "deny", "start_editing", 7]), message: value(r, depth + 1) }),
    () => ({ optionId: r.pick(["allow_once", "allow_always", "deny", "refuse", "nope", 7]), message: value(r, depth + 1) }),
  ];
  return r.pick(kinds)();
}

const KEYS = ["type", "text", "mode", "baseInstructions", "decision", "message", "model", "provider", "__proto__", "constructor", "x".repeat(300)];

/** The methods fuzzed, with how many arguments each takes at most. */
const METHODS = [
  ["savedSessions", 0], ["resume", 1], ["createConversation", 1], ["send", 2], ["list", 0],
  ["commands", 0], ["completePaths", 2], ["skills", 0], ["history", 2], ["messages", 1],
  ["destroy", 1], ["compact", 1], ["command", 2], ["archive", 1], ["interrupt", 1],
  ["interruptSession", 0], ["respondPermission", 2], ["respondToPlanExit", 2], ["setMode", 2],
  ["rules", 0], ["runningTask", 0], ["onEvent", 1],
];

test("every SDK method with hostile arguments throws an Error or returns; the engine goes on", async (t) => {
  const seed = Number(process.env.CODER_FUZZ_SEED ?? 0x5dc0de);
  console.log(`fuzz seed ${seed} (replay with CODER_FUZZ_SEED=${seed})`);
  const r = rng(seed);
  const { url } = await startMock(t, Array.from({ length: 400 }, () => text("ok")));
  const model = { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" };
  const engine = Engine.create({ workingDir: workspace(), model, saveSessions: false });
  t.after(() => engine.dispose());
  const rssBefore = process.memoryUsage().rss;
  let returned = 0;
  const codes = new Map();
  const conversations = [engine.rootConversation];
  for (let i = 0; i < CALLS; i++) {
    const [method, most] = r.pick(METHODS);
    const args = Array.from({ length: r.below(most + 1) }, () =>
      // Half the calls name a conversation that exists where one is asked for.
      r.chance(2) && conversations.length ? r.pick(conversations) : value(r),
    );
    try {
      const result = engine[method](...args);
      if (method === "createConversation" && typeof result === "string") conversations.push(result);
      if (method === "onEvent" && typeof result === "function") result();
      returned++;
    } catch (err) {
      assert.ok(err instanceof Error, `${method} threw a ${typeof err}: ${String(err)}`);
      assert.ok(err.message.length > 0, `${method} threw an Error without a message`);
      const code = err.code ?? err.constructor.name;
      codes.set(code, (codes.get(code) ?? 0) + 1);
    }
    // Engine.create with hostile options, now and then: it throws or makes an engine.
    if (r.chance(100)) {
      try {
        const other = Engine.create(value(r));
        await other.dispose();
      } catch (err) {
        assert.ok(err instanceof Error, `Engine.create threw a ${typeof err}`);
      }
    }
  }
  console.log(`${returned} calls returned; thrown: ${JSON.stringify(Object.fromEntries(codes))}`);
  assert.ok(returned > 100 && codes.size > 1);

  // The engine goes on: tasks the fuzz started are interrupted, then one more runs.
  engine.interruptSession();
  const fresh = engine.createConversation({});
  const done = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no task_complete within 30 s")), 30_000);
    const off = engine.onEvent((event) => {
      if (event.type === "task_complete" && event.conversationId === fresh) {
        clearTimeout(timer);
        off();
        resolve(event);
      }
    });
  });
  engine.send(fresh, "still there?");
  const end = await done;
  assert.equal(end.error, undefined, JSON.stringify(end));
  const grown = (process.memoryUsage().rss - rssBefore) / 2 ** 20;
  assert.ok(grown < 800, `the process grew by ${grown.toFixed(0)} MB`);
});
