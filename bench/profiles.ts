/**
 * The requests the over-the-socket benchmark sends, field for field. `browser`
 * is what a signed-in browser sends when the application's page on
 * `https://app.example.test` loads its data from the server with credentials
 * (Chrome 131's fields, in its order); `api` is a command-line API client
 * signing in with HTTP Basic on every call. Node's client adds `Host` and
 * `Connection: keep-alive` to both.
 */
import { createHash } from "node:crypto";
import { Agent, request as httpRequest } from "node:http";

export const ORIGIN = "https://app.example.test";
export const PATH = "/staff/reports";

/** The API client's account: a long random key, checked as a password. */
export const API_USER = "report-bot";
export const API_KEY = "k5Qm2YbV0tXw9JrE3sLc7HuN1aPzGd8fKoRi4TyWqUe";
export const API_KEY_SHA256 = createHash("sha256").update(API_KEY).digest("base64url");

/** The browser's other cookies, sent beside the session cookie as sites accumulate them. */
const OTHER_COOKIES = "theme=dark; _pk_id.1.1fff=4b1c3c0e9a7d2f61.1764115200.";

export type Profile = "browser" | "api";

export function profileHeaders(profile: Profile, sessionCookie: string): Record<string, string> {
  if (profile === "api") {
    return {
      "user-agent": "report-sync/2.4.1 node/20",
      accept: "application/json",
      "accept-encoding": "gzip, br",
      authorization: `Basic ${Buffer.from(`${API_USER}:${API_KEY}`).toString("base64")}`,
    };
  }
  return {
    "sec-ch-ua": '"Chromium";v="131", "Not_A Brand";v="24"',
    "sec-ch-ua-mobile": "?0",
    "sec-ch-ua-platform": '"Linux"',
    "user-agent":
      "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    accept: "application/json, text/plain, */*",
    origin: ORIGIN,
    "sec-fetch-site": "cross-site",
    "sec-fetch-mode": "cors",
    "sec-fetch-dest": "empty",
    referer: `${ORIGIN}/reports`,
    "accept-encoding": "gzip, deflate, br, zstd",
    "accept-language": "en-GB,en;q=0.9,fr;q=0.8",
    cookie: sessionCookie === "" ? OTHER_COOKIES : `${OTHER_COOKIES}; ${sessionCookie}`,
  };
}

/** Signs in on a contender (`POST /sign-in`, same site) and answers its cookies as a browser sends them. */
export async function signInCookie(origin: string, name: string): Promise<string> {
  const signIn = await fetch(`${origin}/sign-in`, { method: "POST" });
  if (signIn.status !== 200) throw new Error(`${name}: sign-in answered ${signIn.status}`);
  return signIn.headers
    .getSetCookie()
    .map((line) => line.split(";")[0])
    .join("; ");
}

/** Sends `count` GETs of `PATH` one after another on one kept-alive connection; each must answer 200. */
export function sendInSequence(
  port: number,
  headers: Record<string, string>,
  count: number,
  name: string,
): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  return new Promise((resolve, reject) => {
    let left = count;
    const next = () => {
      if (left-- === 0) {
        agent.destroy();
        resolve();
        return;
      }
      const req = httpRequest({ host: "127.0.0.1", port, path: PATH, headers, agent }, (res) => {
        if (res.statusCode !== 200) reject(new Error(`${name}: ${res.statusCode}`));
        res.resume();
        res.on("end", next);
      });
      req.on("error", reject);
      req.end();
    };
    next();
  });
}
