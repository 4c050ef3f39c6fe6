/** Stable codes of the set-up warnings: each names a mistake that silently weakens a protection. */
export type WarningCode =
  | "PORTCULLIS_NO_CLIENT_ADDRESS"
  | "PORTCULLIS_FORWARDED_HEADER_IGNORED"
  | "PORTCULLIS_BODY_ALREADY_READ"
  | "PORTCULLIS_SECURE_COOKIE_OVER_HTTP"
  | "PORTCULLIS_LATE_HEADER_DROPPED"
  | "PORTCULLIS_ROUTE_BEFORE_CHAIN";

export interface PortcullisWarning {
  readonly code: WarningCode;
  readonly message: string;
}

export type WarningListener = (warning: PortcullisWarning) => void;

const printToConsole: WarningListener = (warning) =>
  console.warn(`portcullis ${warning.code}: ${warning.message}`);

let listener: WarningListener = printToConsole;
const emitted = new Set<WarningCode>();

/**
 * Where set-up warnings go; `undefined` restores the default, `console.warn`.
 * Each code is reported once per process. Answers the listener it replaced.
 */
export function onWarning(next: WarningListener | undefined): WarningListener {
  const previous = listener;
  listener = next ?? printToConsole;
  return previous;
}

/** Reports `code` the first time it happens in this process; later calls do nothing. */
export function warnOnce(code: WarningCode, message: string): void {
  if (emitted.has(code)) return;
  emitted.add(code);
  try {
    listener({ code, message });
  } catch {
    // A failing logger must not change how a request is answered.
  }
}

/** Forgets which codes were reported, so a test can see a warning again. */
export function resetWarnings(): void {
  emitted.clear();
}
