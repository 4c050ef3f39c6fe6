/**
 * People and guessers at the example's approval pages, over real sockets, each
 * from a loopback address of its own (127.0.0.0/8 all reaches the server), so
 * per-address budgets see distinct clients. Shared by the socket test and the
 * soak scenario that prints the figures.
 */
import { request as httpRequest } from "node:http";

export interface Reply {
  readonly status: number;
  readonly body: string;
  readonly headers: Record<string, string | string[] | undefined>;
}

/** One browser-like client: a cookie, a source address, same-origin form posts. */
export class Person {
  readonly #cookies = new Map<string, string>();
  constructor(
    readonly base: string,
    readonly address = "127.0.0.1",
  ) {}

  send(
    path: string,
    init: { method?: string; form?: Record<string, string>; headers?: Record<string, string> } = {},
  ): Promise<Reply> {
    const url = new URL(path, this.base);
    const body = init.form === undefined ? undefined : new URLSearchParams(init.form).toString();
    const headers: Record<string, string> = {
      accept: "text/html",
      ...(this.#cookies.size === 0
        ? {}
        : { cookie: [...this.#cookies].map(([k, v]) => `${k}=${v}`).join("; ") }),
      ...(body === undefined
        ? {}
        : {
            "content-type": "application/x-www-form-urlencoded",
            origin: url.origin,
            "sec-fetch-site": "same-origin",
          }),
      ...init.headers,
    };
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        url,
        {
          method: init.method ?? (body === undefined ? "GET" : "POST"),
          headers,
          localAddress: this.address,
          agent: false,
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => {
            text += chunk;
          });
          res.on("end", () => {
            for (const line of res.headers["set-cookie"] ?? []) {
              const pair = line.split(";")[0] as string;
              const at = pair.indexOf("=");
              const name = pair.slice(0, at);
              if (/max-age=0|expires=thu, 01 jan 1970/i.test(line)) this.#cookies.delete(name);
              else this.#cookies.set(name, pair.slice(at + 1));
            }
            resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers });
          });
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  }

  /** Signs in with the login form; throws unless it worked. */
  async signIn(username: string, password: string): Promise<void> {
    const page = await this.send("/login");
    const signedIn = await this.send("/login", {
      form: { _csrf: formToken(page.body), username, password },
    });
    if (signedIn.status !== 303 || String(signedIn.headers.location).includes("error"))
      throw new Error(`${username} could not sign in: ${signedIn.status}`);
  }

  /** Types a code in the enter-code form: the review page, or why not. */
  async review(code: string): Promise<Reply> {
    const page = await this.send("/device");
    return this.send("/device", { form: { _csrf: formToken(page.body), user_code: code } });
  }

  /** Presses Approve (or Deny) on a review page. */
  decide(reviewPage: string, action: "approve" | "deny"): Promise<Reply> {
    return this.send("/device/approve", {
      form: {
        _csrf: formToken(reviewPage),
        user_code: hidden(reviewPage, "user_code"),
        review: hidden(reviewPage, "review"),
        action,
      },
    });
  }
}

export function formToken(html: string): string {
  return hidden(html, "_csrf");
}

export function hidden(html: string, name: string): string {
  return new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? "";
}

/** The device authorization an agent starts: its user code and device code. */
export async function beginAgent(
  base: string,
  clientId = "demo-agent",
  secret = "demo-agent-secret",
  scope = "echo get_time",
): Promise<{ user_code: string; device_code: string }> {
  const answer = await fetch(`${base}/oauth/device_authorization`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ client_id: clientId, client_secret: secret, scope }).toString(),
  });
  if (answer.status !== 200) throw new Error(`device authorization: ${answer.status}`);
  return (await answer.json()) as { user_code: string; device_code: string };
}

/** One device-code poll of the token endpoint: its status and RFC 6749 body. */
export async function pollToken(
  base: string,
  deviceCode: string,
  clientId: string,
  secret: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const answer = await fetch(`${base}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "urn:ietf:params:oauth:grant-type:device_code",
      device_code: deviceCode,
      client_id: clientId,
      client_secret: secret,
    }).toString(),
  });
  return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
}

/** One poll of the token endpoint by the example's demo agent. */
export async function pollAgent(
  base: string,
  deviceCode: string,
  clientId = "demo-agent",
  secret = "demo-agent-secret",
): Promise<Record<string, unknown>> {
  return (await pollToken(base, deviceCode, clientId, secret)).body;
}

/** The outcome of `count` attacker accounts each typing `perAccount` wrong codes. */
export interface AttackFigures {
  readonly accounts: number;
  readonly entries: number;
  /** Entries looked up and found wrong (each a guess). */
  readonly guesses: number;
  /** Entries refused with 429 before any lookup. */
  readonly refused: number;
  readonly ms: number;
}

/** Attacker accounts `prefix0..`, each signing in from `addressOf(i)` and typing wrong codes. */
export async function attack(
  base: string,
  options: {
    readonly accounts: number;
    readonly perAccount: number;
    readonly password: string;
    readonly prefix?: string;
    readonly addressOf: (i: number) => string;
    readonly concurrency?: number;
  },
): Promise<AttackFigures> {
  const started = performance.now();
  let guesses = 0;
  let refused = 0;
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= options.accounts) return;
      const guesser = new Person(base, options.addressOf(i));
      await guesser.signIn(`${options.prefix ?? "mallory"}${i}`, options.password);
      for (let j = 0; j < options.perAccount; j++) {
        const answer = await guesser.review("BCDF-GHJK");
        if (answer.status === 429) refused++;
        else if (answer.status === 400) guesses++;
        else throw new Error(`unexpected ${answer.status}`);
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 8 }, worker));
  return {
    accounts: options.accounts,
    entries: options.accounts * options.perAccount,
    guesses,
    refused,
    ms: performance.now() - started,
  };
}
