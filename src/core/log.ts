/**
 * `console.error(prefix + what)` at most once every 10 s, counting what it
 * skipped: an outage reported on every request would flood the log.
 */
export function throttledConsole(what: string): (error: unknown) => void {
  let last = Number.NEGATIVE_INFINITY;
  let skipped = 0;
  return (error) => {
    const at = Date.now();
    if (at - last < 10_000) {
      skipped++;
      return;
    }
    const more = skipped > 0 ? ` (and ${skipped} more since the last report)` : "";
    last = at;
    skipped = 0;
    console.error(`portcullis: ${what}${more}`, error);
  };
}

/**
 * `console.warn(prefix + line)` at most once every 10 s, counting what it
 * skipped: for conditions that are no fault (a quota used up), one line with
 * no stack trace.
 */
export function throttledWarning(): (line: string) => void {
  let last = Number.NEGATIVE_INFINITY;
  let skipped = 0;
  return (line) => {
    const at = Date.now();
    if (at - last < 10_000) {
      skipped++;
      return;
    }
    const more = skipped > 0 ? ` (and ${skipped} more since the last warning)` : "";
    last = at;
    skipped = 0;
    console.warn(`portcullis: ${line}${more}`);
  };
}
