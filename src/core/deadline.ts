/**
 * `promise`, or a rejection once `ms` have passed: a store that stalls fails
 * the call in bounded time, so the caller's fail-closed answer applies instead
 * of requests piling up behind it. The timer lives only while the call does.
 */
export function withDeadline<T>(promise: Promise<T> | T, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([Promise.resolve(promise), timeout]).finally(() => clearTimeout(timer));
}
