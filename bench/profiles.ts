/**
 * The requests the over-the-socket benchmark sends, field for field. `browser`
 * is what a signed-in browser sends when the application's page on
 * `https://app.example.test` loads its data from the server with credentials
 * (Chrome 131's fields, in its order); `api` is a command-line API client
 * signing in with HTTP Basic on every call. Node's client adds `Host` and
 * `Connection: keep-alive` to both.
 */
import { createHash } from "node:crypto";

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
