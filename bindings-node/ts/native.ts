// The addon's surface and the one place that loads it. Its types are not kept here:
// @napi-rs/cli generates `native/index.d.ts` from the Rust exports (`src/lib.rs`, whose
// `ts_args_type`s name the types of `protocol.ts`) when it builds the addon, and this file
// takes them from there, so `npm run build:native` comes before `build:ts`. Everything
// else goes through the classes built on it.
//
// The addon is loaded when this module is, so that `require("coder-agent-engine")` on a
// platform without a binary fails at once with an error naming the platform, rather than
// later with a confusing failure at the first call. It is looked for, in order:
//   1. `CODER_NATIVE_PATH`, when set (and then only there: an explicit path that does not
//      load is an error, never silently replaced by another binary);
//   2. the development build in this package's `native/` directory (`npm run build:native`);
//   3. the platform package, `coder-agent-engine-<platform>` (an optional dependency of the
//      published package; npm installs only the one whose `os`, `cpu` and `libc` match).

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

import type * as Addon from "../native/index";

export type NativeEngine = Addon.NativeEngine;

type NativeModule = typeof Addon;

/** The npm name of the main package; each platform package is this name plus its key. */
const PACKAGE_NAME = "coder-agent-engine";

/** The binary's base name (`napi.binaryName` in package.json). */
const BINARY_NAME = "coder";

/** The platforms a binary is published for, by key (see `platformKey`). */
export const PUBLISHED_PLATFORMS: readonly string[] = [
  "linux-x64-gnu",
  "linux-arm64-gnu",
  "linux-x64-musl",
  "linux-arm64-musl",
  "darwin-x64",
  "darwin-arm64",
  "win32-x64-msvc",
];

/**
 * Which C library this Linux process runs on. The `ldd` script names musl on musl
 * systems; when it cannot be read, Node's diagnostic report tells: it carries the glibc
 * version only on glibc, and lists the shared objects loaded, musl's among them on musl.
 */
function linuxLibc(): "gnu" | "musl" {
  try {
    if (readFileSync("/usr/bin/ldd", "utf8").includes("musl")) {
      return "musl";
    }
    return "gnu";
  } catch {
    // No readable `ldd`: ask the report below.
  }
  const report = process.report?.getReport() as
    | { header?: { glibcVersionRuntime?: string }; sharedObjects?: string[] }
    | undefined;
  if (report?.header?.glibcVersionRuntime) {
    return "gnu";
  }
  const musl = report?.sharedObjects?.some((file) => file.includes("musl")) ?? false;
  return musl ? "musl" : "gnu";
}

/** The platform's key, as napi-rs names it: `linux-x64-gnu`, `darwin-arm64`, `win32-x64-msvc`. */
export function platformKey(): string {
  const base = `${process.platform}-${process.arch}`;
  if (process.platform === "linux") {
    return `${base}-${linuxLibc()}`;
  }
  if (process.platform === "win32") {
    return `${base}-msvc`;
  }
  return base;
}

/** The platform in words for an error: `linux x64 (glibc)`. */
function platformWords(key: string): string {
  const libc = key.endsWith("-musl") ? " (musl)" : key.endsWith("-gnu") ? " (glibc)" : "";
  return `${process.platform} ${process.arch}${libc}`;
}

function reason(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  // Node's "Cannot find module" message goes on with the whole require stack: its first
  // line says all that matters here.
  return message.split("\n")[0] ?? message;
}

function load(): NativeModule {
  const key = platformKey();
  const explicit = process.env.CODER_NATIVE_PATH;
  const tried: string[] = [];
  if (explicit !== undefined && explicit !== "") {
    try {
      return require(explicit) as NativeModule;
    } catch (err) {
      tried.push(`CODER_NATIVE_PATH=${explicit}: ${reason(err)}`);
    }
  } else {
    // `dist/cjs/native.js` sits two directories below the package's root.
    const local = join(__dirname, "..", "..", "native", `${BINARY_NAME}.${key}.node`);
    if (existsSync(local)) {
      try {
        return require(local) as NativeModule;
      } catch (err) {
        tried.push(`${local}: ${reason(err)}`);
      }
    } else {
      tried.push(`${local}: no such file (the development build, npm run build:native)`);
    }
    const platformPackage = `${PACKAGE_NAME}-${key}`;
    try {
      return require(platformPackage) as NativeModule;
    } catch (err) {
      tried.push(`package ${platformPackage}: ${reason(err)}`);
    }
  }
  const published = PUBLISHED_PLATFORMS.includes(key)
    ? `Reinstall ${PACKAGE_NAME} without --no-optional (or --omit=optional) so that npm installs ${PACKAGE_NAME}-${key}.`
    : `No binary is published for ${key}; the published platforms are ${PUBLISHED_PLATFORMS.join(", ")}. Build one from source with npm run build:native.`;
  throw new Error(
    `${PACKAGE_NAME}: no native addon could be loaded for ${platformWords(key)}, platform key ${key}.\n` +
      `Looked for:\n${tried.map((line) => `  - ${line}`).join("\n")}\n${published}`,
  );
}

const loaded: NativeModule = load();

/** The addon, loaded when this module was. */
export function native(): NativeModule {
  return loaded;
}
