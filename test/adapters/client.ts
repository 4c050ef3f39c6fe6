/** Over-the-socket helpers for the adapter suite: fetch with a deadline, raw HTTP/1.1 requests. */
import { connect } from "node:net";

/** Every request fails the test instead of hanging. */
export const DEADLINE_MS = 8_000;

export interface Call {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: BodyInit;
}

export function call(base: string, path: string, init: Call = {}): Promise<Response> {
  const streamed = init.body instanceof ReadableStream;
  return fetch(`${base}${path}`, {
    method: init.method ?? "GET",
    headers: init.headers ?? {},
    redirect: "manual",
    signal: AbortSignal.timeout(DEADLINE_MS),
    ...(init.body === undefined ? {} : { body: init.body }),
    ...(streamed ? { duplex: "half" } : {}),
  } as RequestInit);
}

export interface RawAnswer {
  readonly status: number;
  readonly head: string;
}

/**
 * Sends one request exactly as written (`target` untouched: no client-side
 * normalization) and resolves with the status line once the head arrives.
 */
export function rawRequest(
  base: string,
  target: string,
  headers: Record<string, string> = {},
  method = "GET",
): Promise<RawAnswer> {
  const { hostname, port } = new URL(base);
  const lines = [`${method} ${target} HTTP/1.1`, "Connection: close"];
  if (!Object.keys(headers).some((name) => name.toLowerCase() === "host"))
    lines.push(`Host: ${hostname}:${port}`);
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  const message = `${lines.join("\r\n")}\r\n\r\n`;
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let data = "";
    let settled = false;
    const finish = (error?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const end = data.indexOf("\r\n\r\n");
      const status = Number(data.slice(9, 12));
      if (error !== undefined && end < 0) reject(error);
      else if (!Number.isInteger(status) || data.length < 12)
        reject(new Error(`no status line for ${JSON.stringify(target)}`));
      else resolve({ status, head: end < 0 ? data : data.slice(0, end) });
    };
    const timer = setTimeout(() => finish(new Error(`timed out: ${target}`)), DEADLINE_MS);
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => {
      data += chunk;
      if (data.includes("\r\n\r\n")) finish();
    });
    socket.on("error", (error) => finish(error));
    socket.on("close", () => finish(new Error(`connection closed: ${target}`)));
    socket.write(message, "latin1");
  });
}

/** The session cookie's `name=value` from a response, if it set one. */
export function cookiePair(response: Response, name: string): string | undefined {
  for (const line of response.headers.getSetCookie()) {
    const pair = line.split(";")[0] ?? "";
    if (pair.startsWith(`${name}=`) && pair.length > name.length + 1) return pair;
  }
  return undefined;
}

/** A session cookie and a CSRF token for it, from the chain's token endpoint. */
export async function csrfSession(
  base: string,
  cookieName: string,
): Promise<{ cookie: string; token: string }> {
  const response = await call(base, "/csrf");
  if (response.status !== 200) throw new Error(`/csrf answered ${response.status}`);
  const { token } = (await response.json()) as { token: string };
  const cookie = cookiePair(response, cookieName);
  if (cookie === undefined) throw new Error("/csrf set no session cookie");
  return { cookie, token };
}

/** A body that arrives in pieces, with pauses: no Content-Length, chunked on the wire. */
export function trickle(text: string, pieces = 4, pauseMs = 30): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  const size = Math.ceil(bytes.length / pieces);
  let offset = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (offset >= bytes.length) {
        controller.close();
        return;
      }
      if (offset > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
      controller.enqueue(bytes.slice(offset, offset + size));
      offset += size;
    },
  });
}
