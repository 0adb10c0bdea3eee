// `import` and `require` of the package give the same objects: every value export of the
// typed entry (the CommonJS build tsc writes from ts/index.ts, whose .d.ts is the typed
// entry) is named by the ES module entry, and no name is missing or extra.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

test("every value export is the same object through import and require", async () => {
  // Resolved through package.json's `exports`, as a user's `import`/`require` is.
  const cjs = require("coder-agent-engine");
  const esm = await import("coder-agent-engine");
  const cjsNames = Object.keys(cjs).filter((name) => name !== "__esModule").sort();
  const esmNames = Object.keys(esm).filter((name) => name !== "default").sort();
  assert.ok(cjsNames.includes("endsTask") && cjsNames.includes("TASK_END_EVENTS"), `${cjsNames}`);
  assert.deepEqual(esmNames, cjsNames, "esm/index.mjs names exactly the CommonJS value exports");
  for (const name of cjsNames) {
    assert.equal(esm[name], cjs[name], `${name} is one object both ways`);
  }
  assert.equal(esm.default, cjs);
});
