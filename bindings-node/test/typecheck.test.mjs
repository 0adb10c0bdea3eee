// A SemaCore 2 program written in TypeScript type-checks against the package as a program
// installs it, under `moduleResolution` `nodenext` and `bundler`.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";

const pkg = resolve(import.meta.dirname, "..");
const tsc = join(pkg, "node_modules/typescript/bin/tsc");

const settings = {
  nodenext: { module: "nodenext", moduleResolution: "nodenext" },
  bundler: { module: "esnext", moduleResolution: "bundler" },
};

for (const [name, resolution] of Object.entries(settings)) {
  test(`a SemaCore 2 program type-checks under moduleResolution ${name}`, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), "coder-tsc-"));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    mkdirSync(join(dir, "node_modules/@types"), { recursive: true });
    symlinkSync(pkg, join(dir, "node_modules/coder-agent-engine"), "dir");
    symlinkSync(join(pkg, "node_modules/@types/node"), join(dir, "node_modules/@types/node"), "dir");
    copyFileSync(join(import.meta.dirname, "fixtures/sema2-ts/run.ts"), join(dir, "run.ts"));
    copyFileSync(join(import.meta.dirname, "fixtures/sema2-ts/package.json"), join(dir, "package.json"));
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { ...resolution, target: "ES2022", strict: true, noEmit: true, types: ["node"], skipLibCheck: true },
        files: ["run.ts"],
      }),
    );
    const result = await promisify(execFile)(process.execPath, [tsc, "-p", dir]).catch((err) => err);
    assert.equal(result.code ?? 0, 0, `tsc failed:\n${result.stdout}${result.stderr}`);
  });
}

test("a type error in such a program is caught (the check is not vacuous)", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "coder-tsc-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, "node_modules/@types"), { recursive: true });
  symlinkSync(pkg, join(dir, "node_modules/coder-agent-engine"), "dir");
  symlinkSync(join(pkg, "node_modules/@types/node"), join(dir, "node_modules/@types/node"), "dir");
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  writeFileSync(
    join(dir, "bad.ts"),
    'import type { PermissionLevel } from "coder-agent-engine/types";\nexport const level: PermissionLevel = "Sometimes";\n',
  );
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: { ...settings.nodenext, strict: true, noEmit: true, types: ["node"], skipLibCheck: true },
      files: ["bad.ts"],
    }),
  );
  const result = await promisify(execFile)(process.execPath, [tsc, "-p", dir]).catch((err) => err);
  assert.notEqual(result.code ?? 0, 0);
  assert.match(result.stdout, /Sometimes/);
});
