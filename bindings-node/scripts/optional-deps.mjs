// Lists every platform package (the directories of npm/) as an optional dependency of the
// main package, at the main package's version. The release workflow runs it just before
// publishing; the repository's package.json does not carry them, since `npm ci` cannot
// install from a lock that names packages not yet on the registry.

import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
const main = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const optional = {};
for (const key of readdirSync(join(root, "npm"), { withFileTypes: true })) {
  if (key.isDirectory()) {
    const platform = JSON.parse(readFileSync(join(root, "npm", key.name, "package.json"), "utf8"));
    if (platform.version !== main.version) {
      console.error(`error: ${platform.name} is at ${platform.version}, the main package at ${main.version}`);
      process.exit(1);
    }
    optional[platform.name] = main.version;
  }
}
main.optionalDependencies = optional;
writeFileSync(join(root, "package.json"), `${JSON.stringify(main, null, 2)}\n`);
console.log(Object.keys(optional).join("\n"));
