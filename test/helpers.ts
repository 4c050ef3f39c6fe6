/** `Authorization` value for HTTP Basic, with UTF-8 credentials (RFC 7617 charset="UTF-8"). */
export function basicHeader(username: string, password: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(`${username}:${password}`)) {
    binary += String.fromCharCode(byte);
  }
  return `Basic ${btoa(binary)}`;
}

/** Resolves after a random delay of up to `maxMs` milliseconds. */
export function randomDelay(maxMs = 4): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * (maxMs + 1))));
}
