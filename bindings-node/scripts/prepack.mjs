// `npm pack`/`npm publish`'s last check, run by the `prepack` scripts:
//
//   node scripts/prepack.mjs main                    (in bindings-node/)
//   node scripts/prepack.mjs platform <file.node>    (in npm/<platform>/)
//
// Both copy the project's LICENSE (MIT) into the package. The main package must have its
// compiled SDK and types; it ships no binary. A platform package must hold its binary,
// a stripped release build (scripts/check-native.mjs says how that is told).

import { copyFileSync, existsSync } from "node:fs";
import { join } from "node:path";

import { problems } from "./check-native.mjs";

const license = join(import.meta.dirname, "..", "..", "LICENSE");
const [kind, binary] = process.argv.slice(2);
const found = [];
if (kind === "main") {
  for (const file of ["dist/cjs/index.js", "dist/cjs/index.d.ts", "esm/index.mjs"]) {
    if (!existsSync(file)) {
      found.push(`${file} is missing: run npm run build first`);
    }
  }
} else if (kind === "platform" && binary) {
  found.push(...problems(binary));
} else {
  found.push("usage: node scripts/prepack.mjs main | platform <file.node>");
}
if (found.length > 0) {
  for (const line of found) {
    console.error(`error: ${line}`);
  }
  process.exit(1);
}
copyFileSync(license, "LICENSE");
