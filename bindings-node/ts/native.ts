// The addon's surface. Its types are not kept here: @napi-rs/cli generates
// `native/index.d.ts` from the Rust exports (`src/lib.rs`, whose `ts_args_type`s name the
// types of `protocol.ts`) when it builds the addon, and this file takes them from there, so
// `npm run build:native` comes before `build:ts`. Only this file touches the addon;
// everything else goes through the classes built on it.

import type * as Addon from "../native/index";

export type NativeEngine = Addon.NativeEngine;

type NativeModule = typeof Addon;

let loaded: NativeModule | undefined;

/** The addon, loaded on first use (`CODER_NATIVE_PATH` overrides where from). */
export function native(): NativeModule {
  loaded ??= require(process.env.CODER_NATIVE_PATH ?? "../../native/index.js") as NativeModule;
  return loaded;
}
