// The models a SemaCore program added, kept where SemaCore keeps them: `model.conf` in
// `$SEMA_ROOT`, else `~/.sema`. A program run after `addModel` in another process finds the
// model there, and SemaCore itself reads the same file.

import { closeSync, fstatSync, mkdirSync, openSync, readSync, renameSync, writeFileSync, constants } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";

/** A model as the file keeps it (SemaCore's `ModelProfile`). */
export interface ModelProfile {
  /** `modelName[provider]`. */
  name: string;
  provider: string;
  modelName: string;
  baseURL?: string;
  apiKey: string;
  maxTokens: number;
  contextLength: number;
}

export interface ModelFile {
  modelProfiles: ModelProfile[];
  modelPointers: { main: string; quick: string };
}

/** A larger file is not read: it is not one SemaCore or coder wrote. */
const MAX_BYTES = 1024 * 1024;

/** SemaCore's data folder: `$SEMA_ROOT`, else `~/.sema`. */
export function semaRoot(): string {
  const root = process.env.SEMA_ROOT;
  return root ? resolve(root) : join(homedir(), ".sema");
}

export function modelFilePath(): string {
  return join(semaRoot(), "model.conf");
}

/**
 * The models saved, or an empty list when there is no file. A file that cannot be used (not
 * a regular file, over 1 MiB, not JSON, entries of the wrong shape) is reported through
 * `warn` and what can be used of it is kept; it is never rewritten until a model changes.
 */
export function readModelFile(path: string, warn: (message: string) => void): ModelFile {
  const empty: ModelFile = { modelProfiles: [], modelPointers: { main: "", quick: "" } };
  let text: string;
  try {
    text = readBounded(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "ENOENT") warn(`${path} is not read: ${err instanceof Error ? err.message : String(err)}`);
    return empty;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    warn(`${path} is not JSON (${err instanceof Error ? err.message : String(err)}); no model is taken from it`);
    return empty;
  }
  const file = parsed as Partial<ModelFile> | null;
  const profiles = Array.isArray(file?.modelProfiles) ? file.modelProfiles : [];
  const modelProfiles: ModelProfile[] = [];
  for (const [index, entry] of profiles.entries()) {
    const profile = asProfile(entry);
    if (profile) modelProfiles.push(profile);
    else warn(`${path}: model ${index + 1} lacks provider, modelName or apiKey as text; it is left out`);
  }
  const pointers = file?.modelPointers;
  const pointer = (value: unknown) => (typeof value === "string" && modelProfiles.some((p) => p.name === value) ? value : "");
  return { modelProfiles, modelPointers: { main: pointer(pointers?.main), quick: pointer(pointers?.quick) } };
}

/** Writes the models whole (a new file renamed over the old), readable by the user only:
 * it holds API keys. */
export function writeModelFile(path: string, file: ModelFile): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const next = `${path}.${process.pid}.tmp`;
  writeFileSync(next, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  renameSync(next, path);
}

function readBounded(path: string): string {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new Error("not a regular file");
    if (stat.size > MAX_BYTES) throw new Error(`${stat.size} bytes, over the limit of ${MAX_BYTES}`);
    const buffer = new Uint8Array(stat.size);
    let read = 0;
    while (read < stat.size) {
      const n = readSync(fd, buffer, read, stat.size - read, read);
      if (n === 0) break;
      read += n;
    }
    return new TextDecoder().decode(buffer.subarray(0, read));
  } finally {
    closeSync(fd);
  }
}

function asProfile(entry: unknown): ModelProfile | undefined {
  const e = entry as Record<string, unknown> | null;
  if (!e || typeof e !== "object") return undefined;
  if (typeof e.provider !== "string" || typeof e.modelName !== "string" || typeof e.apiKey !== "string") return undefined;
  if (!e.provider || !e.modelName) return undefined;
  const number = (value: unknown) => (typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0);
  return {
    name: `${e.modelName}[${e.provider}]`,
    provider: e.provider,
    modelName: e.modelName,
    ...(typeof e.baseURL === "string" && e.baseURL ? { baseURL: e.baseURL } : {}),
    apiKey: e.apiKey,
    maxTokens: number(e.maxTokens),
    contextLength: number(e.contextLength),
  };
}
