// Refuses to package a `.node` that is not a stripped release build.
//
//   node scripts/check-native.mjs <file.node>...
//
// Two checks, each reliable on its own terms:
// - The profile: the addon carries the text `coder-node-build-profile=release` or `=debug`
//   (src/lib.rs compiles in exactly one of them, chosen by `debug_assertions`, which the
//   release profile turns off). Looking for bytes works for every platform's binary format,
//   so the publish job can check the macOS and Windows binaries it cannot load. A file
//   carrying neither text is refused too: it is not this addon, or a build from before the
//   marker.
// - Stripping, for ELF (Linux) binaries: no `.symtab` and no `.debug_*` section, read from
//   the section headers rather than searched for as text, since the standard library's
//   backtrace code holds those section names as strings even in a stripped binary. Mach-O
//   and PE binaries are stripped by the same cargo profile (`release-node`, `strip =
//   "symbols"`) and only their profile is checked here.

import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const RELEASE = Buffer.from("coder-node-build-profile=release");
const DEBUG = Buffer.from("coder-node-build-profile=debug");

/** The section names of a 64-bit little-endian ELF file, or undefined for anything else. */
export function elfSectionNames(bytes) {
  const isElf = bytes.length > 64 && bytes.readUInt32BE(0) === 0x7f454c46;
  if (!isElf || bytes[4] !== 2 || bytes[5] !== 1) {
    return undefined;
  }
  const shoff = Number(bytes.readBigUInt64LE(0x28));
  const shentsize = bytes.readUInt16LE(0x3a);
  const shnum = bytes.readUInt16LE(0x3c);
  const shstrndx = bytes.readUInt16LE(0x3e);
  if (shoff === 0 || shnum === 0 || shoff + shnum * shentsize > bytes.length) {
    return [];
  }
  const header = (index) => shoff + index * shentsize;
  const strtab = Number(bytes.readBigUInt64LE(header(shstrndx) + 0x18));
  const names = [];
  for (let i = 0; i < shnum; i++) {
    const start = strtab + bytes.readUInt32LE(header(i));
    const end = bytes.indexOf(0, start);
    names.push(bytes.toString("latin1", start, end < 0 ? start : end));
  }
  return names;
}

/** What is wrong with `file` for publishing, one sentence each; empty when nothing is. */
export function problems(file) {
  let bytes;
  try {
    bytes = readFileSync(file);
  } catch (err) {
    return [`${file} cannot be read: ${err.message}`];
  }
  const found = [];
  if (bytes.includes(DEBUG)) {
    found.push(`${file} is a debug build (npm run build:native); package a release build (npm run build:native:dist)`);
  } else if (!bytes.includes(RELEASE)) {
    found.push(`${file} carries no build-profile marker: it is not a build of this addon's current source`);
  }
  const sections = elfSectionNames(bytes);
  const unstripped = (sections ?? []).filter((name) => name === ".symtab" || name.startsWith(".debug_"));
  if (unstripped.length > 0) {
    found.push(`${file} is not stripped (it has ${unstripped.join(", ")}); build it with the release-node profile`);
  }
  return found;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error("usage: node scripts/check-native.mjs <file.node>...");
    process.exit(2);
  }
  const found = files.flatMap(problems);
  for (const line of found) {
    console.error(`error: ${line}`);
  }
  process.exit(found.length > 0 ? 1 : 0);
}
