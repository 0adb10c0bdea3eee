// The Node half of the protocol's method table: every method a client can call on
// `coder lsp` (`ClientRequests` in ts/protocol.ts, generated from the Rust table) has its
// method on the SDK's `Engine`, so a method added to the table without its SDK side fails
// here. The names differ where the SDK reads better in-process; the map below is the one
// place that says so.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { Engine } from "coder-agent-engine";

const SDK = {
  "conversation/create": "createConversation",
  "conversation/send": "send",
  "conversation/steer": "steer",
  "conversation/withdraw": "withdrawInput",
  "conversation/list": "list",
  "conversation/history": "history",
  "conversation/destroy": "destroy",
  "conversation/interrupt": "interrupt",
  "conversation/setMode": "setMode",
  "conversation/setContext": "setContext",
  "conversation/compact": "compact",
  "conversation/archive": "archive",
  "conversation/command": "command",
  "conversation/points": "rewindPoints",
  "conversation/rewind": "rewind",
  "session/interrupt": "interruptSession",
  "session/list": "savedSessions",
  "session/resume": "resume",
  "session/fork": "fork",
  "session/subscribe": "subscribe",
  "rule/list": "rules",
  "permissions/list": "permissionRules",
  "permissions/remove": "removePermissionRule",
  "command/list": "commands",
  "skill/list": "skills",
  "workspace/completePaths": "completePaths",
};

/** The methods of the generated `ClientRequests` table. */
function tableMethods() {
  const source = readFileSync(new URL("../ts/protocol.ts", import.meta.url), "utf8");
  const start = source.indexOf("export type ClientRequests = {");
  assert.ok(start >= 0, "protocol.ts has the ClientRequests table");
  const block = source.slice(start, source.indexOf("\n};", start));
  return [...block.matchAll(/^\s*"([A-Za-z]+\/[A-Za-z]+)": \{ params/gm)].map((match) => match[1]);
}

test("every method of the protocol's table has its SDK method", () => {
  const methods = tableMethods();
  assert.ok(methods.length >= 20, `the table was read: ${methods}`);
  const missing = methods.filter((method) => !(method in SDK));
  assert.deepEqual(missing, [], "methods of the table with no SDK method in this map");
  const stale = Object.keys(SDK).filter((method) => !methods.includes(method));
  assert.deepEqual(stale, [], "methods in this map the table no longer has");
  for (const [method, name] of Object.entries(SDK)) {
    assert.equal(typeof Engine.prototype[name], "function", `${method}: Engine.${name} is not a method`);
  }
});
