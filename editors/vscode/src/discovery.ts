// Finding the `coder` binary: the `coder.serverPath` setting, else the binary bundled in the
// extension for this platform, else `PATH`. Each candidate is asked for `--version`, so
// another program that happens to be called `coder` is never started, and one too old for
// this extension is named with what to do. Nothing here touches `vscode`.

import { execFile } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

/** The oldest `coder` whose `lsp` this extension speaks to. */
export const MIN_SERVER_VERSION = "0.1.0";

export interface DiscoveryOptions {
  /** `coder.serverPath`, when set. */
  configured?: string;
  /** The extension's folder: a bundled binary is `bin/<platform>-<arch>/coder` under it. */
  extensionPath: string;
  /** `PATH` to search. */
  pathEnv?: string;
  platform?: NodeJS.Platform;
  arch?: string;
}

export type Discovery =
  | { found: true; path: string; version: string; source: "setting" | "bundled" | "path" }
  | { found: false; message: string };

/** A `coder --version` line: `coder 0.1.0`. */
const VERSION_LINE = /^coder (\d+)\.(\d+)\.(\d+)(?:[-+][\w.+-]*)?\s*$/;

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function versionOf(path: string): Promise<{ output: string } | { error: string }> {
  return new Promise((resolve) => {
    execFile(path, ["--version"], { timeout: 10_000, windowsHide: true }, (error, stdout) => {
      if (error) resolve({ error: error.message });
      else resolve({ output: stdout.trim() });
    });
  });
}

function atLeast(version: number[], minimum: string): boolean {
  const wanted = minimum.split(".").map(Number);
  for (let i = 0; i < 3; i++) {
    const have = version[i] ?? 0;
    const want = wanted[i] ?? 0;
    if (have !== want) return have > want;
  }
  return true;
}

/** What a candidate is: coder of a version this extension speaks to, or why not. */
async function check(path: string): Promise<{ ok: true; version: string } | { ok: false; why: string }> {
  const answer = await versionOf(path);
  if ("error" in answer) return { ok: false, why: `\`${path} --version\` failed: ${answer.error}` };
  const line = answer.output.split("\n")[0] ?? "";
  const match = VERSION_LINE.exec(line);
  if (!match) {
    return { ok: false, why: `\`${path}\` is not coder's agent: its --version printed "${line.slice(0, 80)}"` };
  }
  const version = [Number(match[1]), Number(match[2]), Number(match[3])];
  const text = version.join(".");
  if (!atLeast(version, MIN_SERVER_VERSION)) {
    return {
      ok: false,
      why: `\`${path}\` is coder ${text}; this extension needs ${MIN_SERVER_VERSION} or newer: update it`,
    };
  }
  return { ok: true, version: text };
}

const WHAT_TO_DO =
  "Set `coder.serverPath` to the coder binary, or install coder (`cargo install --path server/cli` in its repository) so that it is on PATH.";

export async function findServer(options: DiscoveryOptions): Promise<Discovery> {
  const name = (options.platform ?? process.platform) === "win32" ? "coder.exe" : "coder";
  if (options.configured) {
    // A path the person chose is the only candidate: never another binary behind their back.
    const path = options.configured;
    if (!executable(path)) {
      return { found: false, message: `\`coder.serverPath\` is ${path}, which is not an executable file. ${WHAT_TO_DO}` };
    }
    const checked = await check(path);
    if (!checked.ok) return { found: false, message: `\`coder.serverPath\`: ${checked.why}.` };
    return { found: true, path, version: checked.version, source: "setting" };
  }
  const refused: string[] = [];
  const bundled = join(
    options.extensionPath,
    "bin",
    `${options.platform ?? process.platform}-${options.arch ?? process.arch}`,
    name,
  );
  if (executable(bundled)) {
    const checked = await check(bundled);
    if (checked.ok) return { found: true, path: bundled, version: checked.version, source: "bundled" };
    refused.push(checked.why);
  }
  for (const dir of (options.pathEnv ?? process.env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const path = join(dir, name);
    if (!executable(path)) continue;
    const checked = await check(path);
    if (checked.ok) return { found: true, path, version: checked.version, source: "path" };
    refused.push(checked.why);
  }
  if (refused.length > 0) return { found: false, message: `coder was not found: ${refused.join("; ")}. ${WHAT_TO_DO}` };
  return { found: false, message: `coder was not found on PATH. ${WHAT_TO_DO}` };
}
