// Errors the SDK throws itself carry the engine's `code`, as the addon's errors do, so a
// caller branches on one property whatever layer refused.

import type { ErrorKind } from "./protocol";

/** The engine's error codes (`ErrorKind` in coder-protocol, generated): stable once
 * published; new ones may be added. */
export type ErrorCode = ErrorKind;

/** An `Error` (or `TypeError`, ...) with `message` whose `code` is `code`. */
export function coded<E extends Error>(
  code: ErrorCode,
  message: string,
  make: new (message: string, options?: ErrorOptions) => E = Error as never,
  cause?: unknown,
): E & { code: ErrorCode } {
  return Object.assign(new make(message, cause === undefined ? undefined : { cause }), { code });
}

/** The engine's code of `err`, when it has one. */
export function codeOf(err: unknown): ErrorCode | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? (code as ErrorCode) : undefined;
}
