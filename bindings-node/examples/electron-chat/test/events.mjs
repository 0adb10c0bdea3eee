// What the tests share: the engine's host as the app's main process makes it, against the
// scripted model, with every event it emits kept in order.

import { createRequire } from "node:module";
import { existsSync } from "node:fs";
import { join } from "node:path";

export { startMock, text, toolCall, workspace } from "../../../test/mock.mjs";

const require = createRequire(import.meta.url);
export const { ChatHost, EVENT_CHANNEL } = require("../host.js");

/** A host on `workingDir` talking to the mock at `url`; `events` holds what it emitted. */
export function host(t, url, workingDir, listener = () => {}) {
  const events = [];
  const chat = new ChatHost(
    { workingDir, model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" } },
    (event) => {
      events.push(event);
      listener(event);
    },
  );
  t.after(() => chat.dispose());
  /** Resolves with the first event from `from` on that passes `test`. */
  const until = (test, from = 0, ms = 15_000) =>
    new Promise((resolve, reject) => {
      const started = Date.now();
      const look = () => {
        const found = events.slice(from).find(test);
        if (found) return resolve(found);
        if (Date.now() - started > ms) return reject(new Error(`no such event within ${ms} ms`));
        setTimeout(look, 10);
      };
      look();
    });
  return { chat, events, until };
}

/** Where screenshots go: `CODER_ARTIFACTS_DIR`, else `artifacts/` beside the example. */
export function artifacts() {
  return process.env.CODER_ARTIFACTS_DIR ?? join(import.meta.dirname, "..", "artifacts");
}

export const exists = existsSync;
